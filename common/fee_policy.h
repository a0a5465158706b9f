/*
 * fee_policy.h - the inclusion-fee bid for one attempt (pure, no I/O).
 *
 * Input: the op's priority, the fee view (common/fee_view.h: a stale or
 * missing snapshot already reads as the default fee at low congestion), the
 * escalation step and how long the op has been deferred so far. Output:
 * either "defer by N ms" (LOW only) or a bid.
 *
 *   NORMAL    recommended fee.
 *   LOW       recommended fee; deferred by low_defer_ms while congestion >=
 *             HIGH, but the total deferral never exceeds low_max_defer_ms:
 *             the last step is shortened to fit, and once the budget is spent
 *             LOW submits whatever the congestion.
 *   CRITICAL  aggressive fee when congestion >= ELEVATED, else recommended;
 *             never deferred.
 *
 * The bid then compounds by the bump multiplier once per step (the caller
 * passes step = attempts already made + fee bumps already made) and is capped
 * at max_abs_fee. A capped bid still submits (a CRITICAL op at the cap is
 * sent at the cap, never held back); max_fee_hit tells the caller to count
 * outbox_max_fee_hit_total. A bid is never 0: a 0 fee from a hostile or empty
 * view reads as 100 stroops (the network minimum base fee).
 */
#ifndef OUTBOX_COMMON_FEE_POLICY_H
#define OUTBOX_COMMON_FEE_POLICY_H

#include "common/fee_view.h"
#include "common/priority.h"

#include <stdbool.h>
#include <stdint.h>

#define FEE_POLICY_MIN_FEE 100u

struct fee_policy_params {
	uint64_t max_abs_fee;     /* OUTBOX_MAX_ABS_FEE, >= 1 */
	uint32_t bump_milli;      /* OUTBOX_FEE_BUMP_MULTIPLIER in thousandths */
	int64_t low_defer_ms;     /* OUTBOX_LOW_DEFER_MS */
	int64_t low_max_defer_ms; /* OUTBOX_LOW_MAX_DEFER_MS */
};

struct fee_policy_in {
	enum op_priority priority;
	const struct fee_view *view;
	uint32_t step;       /* 0 for the first submission of the op */
	int64_t deferred_ms; /* total LOW deferral already spent (>= 0) */
};

struct fee_decision {
	bool defer;       /* LOW under congestion: do not submit now */
	int64_t defer_ms; /* > 0 when defer */
	uint64_t fee;     /* the bid when !defer, FEE_POLICY_MIN_FEE..max_abs_fee */
	bool aggressive;  /* the aggressive fee was the base */
	bool max_fee_hit; /* the cap bound the bid */
};

/* Decide; never fails (out-of-range priorities are treated as NORMAL). */
void fee_policy_decide(struct fee_decision *out, const struct fee_policy_params *p,
		       const struct fee_policy_in *in);

/*
 * The inclusion bid per operation for fee bump n (>= 1) of an envelope
 * whose first bid was first_bid: the larger of
 *   - first_bid compounded n times by the bump multiplier, and
 *   - what fee_policy_decide bids a fresh op of this priority now (step 0,
 *     never deferred: the envelope is already out),
 * capped at max_abs_fee. The second term is why a bump follows the market:
 * compounding from a bid made before a fee spike can stay below what the
 * spike's ledgers accept for every bump, so an op would wait out the whole
 * spike while each bump still "escalates". *max_fee_hit as in decide.
 */
uint64_t fee_policy_bump_bid(const struct fee_policy_params *p, enum op_priority priority,
			     const struct fee_view *view, uint64_t first_bid, uint32_t n,
			     bool *max_fee_hit);

#endif
