/*
 * fee_policy.c - see fee_policy.h.
 */
#include "common/fee_policy.h"

#include "common/feemath.h"

#include <string.h>

static bool low_must_defer(const struct fee_policy_params *p, const struct fee_policy_in *in,
			   int64_t *defer_ms)
{
	int64_t left;

	if (in->priority != OP_PRIO_LOW || in->view->congestion < FEE_CONGESTION_HIGH)
		return false;
	if (p->low_defer_ms <= 0 || in->deferred_ms < 0)
		return false;
	left = p->low_max_defer_ms - in->deferred_ms;
	if (left <= 0)
		return false;
	*defer_ms = p->low_defer_ms < left ? p->low_defer_ms : left;
	return true;
}

/* The step-0 bid of a priority under view, before the cap. */
static uint64_t base_bid(enum op_priority priority, const struct fee_view *view, bool *aggressive)
{
	uint64_t base = view->recommended;

	*aggressive = false;
	if (priority == OP_PRIO_CRITICAL && view->congestion >= FEE_CONGESTION_ELEVATED &&
	    view->aggressive > base) {
		base = view->aggressive;
		*aggressive = true;
	}
	return base < FEE_POLICY_MIN_FEE ? FEE_POLICY_MIN_FEE : base;
}

static uint64_t cap_of(const struct fee_policy_params *p)
{
	return p->max_abs_fee < FEE_POLICY_MIN_FEE ? FEE_POLICY_MIN_FEE : p->max_abs_fee;
}

void fee_policy_decide(struct fee_decision *out, const struct fee_policy_params *p,
		       const struct fee_policy_in *in)
{
	bool capped = false;
	uint64_t base;

	memset(out, 0, sizeof(*out));
	if (low_must_defer(p, in, &out->defer_ms)) {
		out->defer = true;
		return;
	}
	base = base_bid(in->priority, in->view, &out->aggressive);
	out->fee = fee_for_step(base, p->bump_milli, in->step, cap_of(p), &capped);
	out->max_fee_hit = capped;
}

uint64_t fee_policy_bump_bid(const struct fee_policy_params *p, enum op_priority priority,
			     const struct fee_view *view, uint64_t first_bid, uint32_t n,
			     bool *max_fee_hit)
{
	uint64_t cap = cap_of(p), compounded, market;
	bool c_capped = false, m_capped = false, aggressive;

	if (first_bid < FEE_POLICY_MIN_FEE)
		first_bid = FEE_POLICY_MIN_FEE;
	compounded = fee_for_step(first_bid, p->bump_milli, n, cap, &c_capped);
	market = fee_for_step(base_bid(priority, view, &aggressive), p->bump_milli, 0, cap,
			      &m_capped);
	*max_fee_hit = market > compounded ? m_capped : c_capped;
	return market > compounded ? market : compounded;
}
