/*
 * check_fee_policy.c - the fee policy over every priority, congestion level,
 * staleness, escalation step and deferral budget: each decision is checked
 * against the rules of fee_policy.h, with the compounding recomputed here in
 * exact 128-bit arithmetic rather than through feemath.
 */
#include "common/fee_policy.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

static const enum fee_congestion levels[] = {FEE_CONGESTION_LOW, FEE_CONGESTION_ELEVATED,
					     FEE_CONGESTION_HIGH, FEE_CONGESTION_SEVERE};

/* Reference: ceil-compounded base * m^n with the cap, and whether the cap bound it. */
static uint64_t ref_bid(uint64_t base, uint32_t milli, uint32_t n, uint64_t cap, bool *hit)
{
	unsigned __int128 f = base;

	*hit = false;
	if (f > cap) {
		*hit = true;
		return cap;
	}
	for (uint32_t i = 0; i < n && f < cap; i++) {
		f = (f * milli + 999) / 1000;
		if (f > cap) {
			*hit = true;
			return cap;
		}
	}
	return (uint64_t)f;
}

/*
 * The exhaustive loop makes ~750k decisions: a Check assertion per field
 * would dominate the run time (each one marks a point through a pipe), so
 * a failure is reported with the whole input instead.
 */
#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(                                                              \
				"%s fails for prio %d congestion %d rec %llu agg %llu cap %llu "   \
				"mult %u step %u spent %lld: defer %d/%lld fee %llu agg %d hit "   \
				"%d",                                                              \
				#cond, pr, (int)levels[li], (unsigned long long)recs[ri],          \
				(unsigned long long)aggs[ai], (unsigned long long)caps[ci],        \
				mults[mi], step, (long long)spent[si], d.defer,                    \
				(long long)d.defer_ms, (unsigned long long)d.fee, d.aggressive,    \
				d.max_fee_hit);                                                    \
	} while (0)

static void view_make(struct fee_view *v, uint64_t rec, uint64_t agg, enum fee_congestion c)
{
	v->recommended = rec;
	v->aggressive = agg;
	v->congestion = c;
	v->stale = false;
	v->none = false;
	v->age_ms = 5;
}

START_TEST(test_fee_policy_exhaustive)
{
	static const uint64_t recs[] = {0, 1, 100, 250, 1000, 99999, 5000000, 10000000, UINT64_MAX};
	static const uint64_t aggs[] = {0, 100, 400, 20000, 10000001, UINT64_MAX};
	static const uint64_t caps[] = {100, 1000, 10000000};
	static const uint32_t mults[] = {1001, 1500, 2000, 100000};
	static const int64_t spent[] = {0, 1, 29999, 30000, 590000, 599999, 600000, 700000};
	enum { NR = 9, NA = 6, NC = 3, NM = 4, NS = 8, NSTEP = 12 };
	const size_t total = (size_t)OP_PRIO_COUNT * 4 * NR * NA * NC * NM * NSTEP * NS;
	struct fee_policy_params p = {.low_defer_ms = 30000, .low_max_defer_ms = 600000};

	for (size_t idx = 0; idx < total; idx++) {
		size_t x = idx;
		size_t si = x % NS;
		x /= NS;
		uint32_t step = (uint32_t)(x % NSTEP);
		x /= NSTEP;
		size_t mi = x % NM;
		x /= NM;
		size_t ci = x % NC;
		x /= NC;
		size_t ai = x % NA;
		x /= NA;
		size_t ri = x % NR;
		x /= NR;
		size_t li = x % 4;
		int pr = (int)(x / 4);
		struct fee_view v;
		struct fee_decision d;

		view_make(&v, recs[ri], aggs[ai], levels[li]);
		p.max_abs_fee = caps[ci];
		p.bump_milli = mults[mi];
		struct fee_policy_in in = {.priority = (enum op_priority)pr,
					   .view = &v,
					   .step = step,
					   .deferred_ms = spent[si]};
		fee_policy_decide(&d, &p, &in);

		bool want_defer = pr == OP_PRIO_LOW && levels[li] >= FEE_CONGESTION_HIGH &&
				  spent[si] < p.low_max_defer_ms;
		EXPECT(d.defer == want_defer);
		if (d.defer) {
			int64_t left = p.low_max_defer_ms - spent[si];
			EXPECT(d.defer_ms > 0 && d.defer_ms <= p.low_defer_ms);
			EXPECT(spent[si] + d.defer_ms <= p.low_max_defer_ms);
			EXPECT(d.defer_ms == (left < p.low_defer_ms ? left : p.low_defer_ms));
			continue;
		}
		bool want_agg = pr == OP_PRIO_CRITICAL && levels[li] >= FEE_CONGESTION_ELEVATED &&
				aggs[ai] > recs[ri];
		EXPECT(d.aggressive == want_agg);
		uint64_t base = want_agg ? aggs[ai] : recs[ri];
		if (base < FEE_POLICY_MIN_FEE)
			base = FEE_POLICY_MIN_FEE;
		bool hit;
		uint64_t want = ref_bid(base, mults[mi], step, caps[ci], &hit);
		EXPECT(d.fee == want && d.max_fee_hit == hit);
		EXPECT(d.fee >= FEE_POLICY_MIN_FEE && d.fee <= caps[ci]);
	}
	ck_assert_uint_gt(total, 100000);
}
END_TEST

/* LOW under sustained congestion: deferral steps add up to exactly the budget, then it submits. */
START_TEST(test_fee_policy_low_budget)
{
	static const int64_t steps[] = {1, 7000, 30000, 600000, 900000};
	static const int64_t budgets[] = {0, 1, 30000, 65000, 600000};

	for (size_t i = 0; i < 5; i++)
		for (size_t j = 0; j < 5; j++) {
			struct fee_policy_params p = {.max_abs_fee = 10000000,
						      .bump_milli = 2000,
						      .low_defer_ms = steps[i],
						      .low_max_defer_ms = budgets[j]};
			struct fee_view v;
			struct fee_decision d;
			int64_t spent = 0;
			int rounds = 0;

			view_make(&v, 300, 900, FEE_CONGESTION_SEVERE);
			for (;;) {
				struct fee_policy_in in = {
					.priority = OP_PRIO_LOW, .view = &v, .deferred_ms = spent};
				fee_policy_decide(&d, &p, &in);
				if (!d.defer)
					break;
				spent += d.defer_ms;
				if (++rounds > 1000000)
					ck_abort_msg("deferral never ends");
			}
			ck_assert_int_eq(spent, budgets[j]);
			ck_assert_uint_eq(d.fee, 300);
			ck_assert(!d.aggressive);
		}
}
END_TEST

/* A stale view (already mapped by fee_view_eval) never defers LOW nor goes aggressive. */
START_TEST(test_fee_policy_stale_view)
{
	struct fee_snapshot s = {.recommended_base_fee = 5000,
				 .aggressive_base_fee = 90000,
				 .congestion = FEE_CONGESTION_SEVERE,
				 .sampled_at_ms = 1000,
				 .ttl_ms = 2000};
	struct fee_policy_params p = {.max_abs_fee = 10000000,
				      .bump_milli = 2000,
				      .low_defer_ms = 30000,
				      .low_max_defer_ms = 600000};
	struct fee_view v;
	struct fee_decision d;

	fee_view_eval(&v, &s, 1000 + 2000 + FEE_VIEW_GRACE_MS + 1, 123);
	ck_assert(v.stale);
	for (int pr = 0; pr < OP_PRIO_COUNT; pr++) {
		struct fee_policy_in in = {.priority = (enum op_priority)pr, .view = &v};
		fee_policy_decide(&d, &p, &in);
		ck_assert(!d.defer);
		ck_assert(!d.aggressive);
		ck_assert_uint_eq(d.fee, 123);
	}
	fee_view_eval(&v, &s, 1500, 123);
	struct fee_policy_in crit = {.priority = OP_PRIO_CRITICAL, .view = &v, .step = 1};
	fee_policy_decide(&d, &p, &crit);
	ck_assert(d.aggressive);
	ck_assert_uint_eq(d.fee, 180000);
}
END_TEST

/*
 * Fee bumps: every priority, congestion, view, first bid, cap, multiplier
 * and bump number. The bid is the larger of the compounded first bid and
 * the market's step-0 bid (both through the reference), so it never falls
 * below either, never passes the cap, never decreases from bump to bump
 * under one view, and follows a market that rose above the compounding.
 */
START_TEST(test_fee_policy_bump_bid)
{
	static const uint64_t recs[] = {0, 100, 250, 1700, 99999, 10000000, UINT64_MAX};
	static const uint64_t aggs[] = {0, 100, 3400, 20000, UINT64_MAX};
	static const uint64_t firsts[] = {0, 1, 100, 200, 1700, 5000000, UINT64_MAX};
	static const uint64_t caps[] = {100, 1000, 100000, 10000000};
	static const uint32_t mults[] = {1001, 2000, 10000};
	size_t n_checked = 0;

	enum { NL = 4, NR = 7, NA = 5, NF = 7, NC = 4, NM = 3 };
	const size_t total = (size_t)OP_PRIO_COUNT * NL * NR * NA * NF * NC * NM;

	for (size_t idx = 0; idx < total; idx++) {
		size_t x = idx;
		size_t mi = x % NM, ci = (x /= NM) % NC, fi = (x /= NC) % NF, ai = (x /= NF) % NA;
		size_t ri = (x /= NA) % NR, li = (x /= NR) % NL;
		int pr = (int)(x / NL);
		struct fee_policy_params p = {.max_abs_fee = caps[ci], .bump_milli = mults[mi]};
		struct fee_view v;
		uint64_t prev = 0, base, first = firsts[fi] < 100 ? 100 : firsts[fi];
		bool agg_used;

		view_make(&v, recs[ri], aggs[ai], levels[li]);
		agg_used = pr == OP_PRIO_CRITICAL && levels[li] >= FEE_CONGESTION_ELEVATED &&
			   aggs[ai] > recs[ri];
		base = agg_used ? aggs[ai] : recs[ri];
		base = base < 100 ? 100 : base;
		for (uint32_t n = 1; n <= 8; n++) {
			bool hit, c_hit, m_hit;
			uint64_t bid = fee_policy_bump_bid(&p, (enum op_priority)pr, &v, firsts[fi],
							   n, &hit);
			uint64_t c = ref_bid(first, mults[mi], n, caps[ci] < 100 ? 100 : caps[ci],
					     &c_hit);
			uint64_t m = ref_bid(base, mults[mi], 0, caps[ci] < 100 ? 100 : caps[ci],
					     &m_hit);

			if (bid != (m > c ? m : c) || hit != (m > c ? m_hit : c_hit) ||
			    bid < prev || bid > (caps[ci] < 100 ? 100 : caps[ci]) || bid < 100)
				ck_abort_msg("bump %u prio %d congestion %d rec %llu agg %llu "
					     "first %llu cap "
					     "%llu mult %u: bid %llu hit %d (compounded %llu "
					     "market %llu, "
					     "previous bump %llu)",
					     n, pr, (int)levels[li], (unsigned long long)recs[ri],
					     (unsigned long long)aggs[ai],
					     (unsigned long long)firsts[fi],
					     (unsigned long long)caps[ci], mults[mi],
					     (unsigned long long)bid, hit, (unsigned long long)c,
					     (unsigned long long)m, (unsigned long long)prev);
			prev = bid;
			n_checked++;
		}
	}
	ck_assert_uint_eq(n_checked, (size_t)OP_PRIO_COUNT * 4 * 7 * 5 * 7 * 4 * 3 * 8);
}
END_TEST

/* The case that motivated the market term: a spike from 100 to 1700 stroops. */
START_TEST(test_fee_policy_bump_follows_spike)
{
	struct fee_policy_params p = {.max_abs_fee = 10000000, .bump_milli = 2000};
	struct fee_view v;
	bool hit;

	view_make(&v, 1700, 3400, FEE_CONGESTION_SEVERE);
	/* compounding alone: 200, 400, 800 - all below what the ledgers take */
	ck_assert_uint_eq(fee_policy_bump_bid(&p, OP_PRIO_NORMAL, &v, 100, 1, &hit), 1700);
	ck_assert_uint_eq(fee_policy_bump_bid(&p, OP_PRIO_CRITICAL, &v, 100, 1, &hit), 3400);
	ck_assert_uint_eq(fee_policy_bump_bid(&p, OP_PRIO_CRITICAL, &v, 100, 6, &hit), 6400);
	ck_assert(!hit);
	/* a calm market: pure escalation */
	view_make(&v, 100, 100, FEE_CONGESTION_LOW);
	ck_assert_uint_eq(fee_policy_bump_bid(&p, OP_PRIO_LOW, &v, 100, 3, &hit), 800);
}
END_TEST

static Suite *fee_policy_suite(void)
{
	Suite *s = suite_create("fee_policy");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fee_policy_exhaustive);
	tcase_add_test(tc, test_fee_policy_low_budget);
	tcase_add_test(tc, test_fee_policy_stale_view);
	tcase_add_test(tc, test_fee_policy_bump_bid);
	tcase_add_test(tc, test_fee_policy_bump_follows_spike);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(fee_policy_suite)
