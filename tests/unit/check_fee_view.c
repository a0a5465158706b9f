/*
 * check_fee_view.c - the reader-side fallback: fresh, at the TTL, within
 * the grace second, past it, never published, sampled in the future.
 */
#include "common/fee_view.h"

#include <check.h>
#include <stdlib.h>

static struct fee_snapshot snap(uint64_t sampled_at_ms, uint32_t ttl_ms)
{
	struct fee_snapshot s = {0};

	s.recommended_base_fee = 250;
	s.aggressive_base_fee = 900;
	s.congestion = FEE_CONGESTION_HIGH;
	s.sampled_at_ms = sampled_at_ms;
	s.ttl_ms = ttl_ms;
	s.latest_ledger_close_time = 1700000123;
	return s;
}

START_TEST(test_fee_view_fresh_and_grace)
{
	struct fee_snapshot s = snap(1000000, 15000);
	struct fee_view v;

	fee_view_eval(&v, &s, 1000000, 100);
	ck_assert(!v.stale && !v.none);
	ck_assert_uint_eq(v.recommended, 250);
	ck_assert_uint_eq(v.aggressive, 900);
	ck_assert_int_eq(v.congestion, FEE_CONGESTION_HIGH);
	ck_assert_uint_eq(v.age_ms, 0);

	fee_view_eval(&v, &s, 1000000 + 15000 + FEE_VIEW_GRACE_MS, 100); /* last good ms */
	ck_assert(!v.stale);
	ck_assert_uint_eq(v.age_ms, 16000);

	fee_view_eval(&v, &s, 1000000 + 15000 + FEE_VIEW_GRACE_MS + 1, 123);
	ck_assert(v.stale && !v.none);
	ck_assert_uint_eq(v.recommended, 123);
	ck_assert_uint_eq(v.aggressive, 123);
	ck_assert_int_eq(v.congestion, FEE_CONGESTION_LOW);
	ck_assert_uint_eq(v.age_ms, 16001);
	ck_assert_uint_eq(v.close_time, 1700000123); /* kept for time bounds */

	fee_view_eval(&v, &s, 1000000 + 600000, 123); /* the staleness keeps growing */
	ck_assert_uint_eq(v.age_ms, 600000);
}
END_TEST

START_TEST(test_fee_view_none_and_future)
{
	struct fee_snapshot s = snap(2000000, 15000);
	struct fee_view v;

	fee_view_eval(&v, NULL, 5, 100);
	ck_assert(v.none && v.stale);
	ck_assert_uint_eq(v.recommended, 100);
	ck_assert_uint_eq(v.age_ms, UINT64_MAX);
	ck_assert_uint_eq(v.close_time, 0);

	fee_view_eval(&v, &s, 1990000, 100); /* reader's clock behind the oracle's */
	ck_assert(!v.stale);
	ck_assert_uint_eq(v.age_ms, 0);

	s.congestion = 99; /* out-of-range level from a corrupt slot is capped */
	fee_view_eval(&v, &s, 2000000, 100);
	ck_assert_int_eq(v.congestion, FEE_CONGESTION_SEVERE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fee_view");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_fee_view_fresh_and_grace);
	tcase_add_test(tc, test_fee_view_none_and_future);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
