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

void fee_policy_decide(struct fee_decision *out, const struct fee_policy_params *p,
		       const struct fee_policy_in *in)
{
	uint64_t base, cap;
	bool capped = false;

	memset(out, 0, sizeof(*out));
	if (low_must_defer(p, in, &out->defer_ms)) {
		out->defer = true;
		return;
	}
	base = in->view->recommended;
	if (in->priority == OP_PRIO_CRITICAL && in->view->congestion >= FEE_CONGESTION_ELEVATED &&
	    in->view->aggressive > base) {
		base = in->view->aggressive;
		out->aggressive = true;
	}
	if (base < FEE_POLICY_MIN_FEE)
		base = FEE_POLICY_MIN_FEE;
	cap = p->max_abs_fee < FEE_POLICY_MIN_FEE ? FEE_POLICY_MIN_FEE : p->max_abs_fee;
	out->fee = fee_for_step(base, p->bump_milli, in->step, cap, &capped);
	out->max_fee_hit = capped;
}
