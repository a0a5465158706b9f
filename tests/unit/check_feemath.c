/* check_feemath.c - multiplier parsing, compounding, the cap, overflow. */
#include "common/feemath.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

START_TEST(test_feemath_multiplier_parse)
{
	uint32_t m;

	ck_assert_int_eq(fee_multiplier_parse("2", &m), 0);
	ck_assert_uint_eq(m, 2000);
	ck_assert_int_eq(fee_multiplier_parse("1.5", &m), 0);
	ck_assert_uint_eq(m, 1500);
	ck_assert_int_eq(fee_multiplier_parse("1.125", &m), 0);
	ck_assert_uint_eq(m, 1125);
	ck_assert_int_eq(fee_multiplier_parse("100", &m), 0);
	ck_assert_uint_eq(m, 100000);
	ck_assert_int_eq(fee_multiplier_parse("1.001", &m), 0);
	ck_assert_uint_eq(m, 1001);
	/* not above 1, too many decimals, junk, out of range */
	const char *bad[] = {"1",
			     "1.0",
			     "1.000",
			     "0.5",
			     "1.0001",
			     "100.001",
			     "101",
			     "2x",
			     "",
			     "-2",
			     "+2",
			     ".5",
			     "2.",
			     "1e1",
			     " 2",
			     "2 ",
			     "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(fee_multiplier_parse(bad[i], &m) < 0, "'%s' accepted", bad[i]);
	ck_assert_int_lt(fee_multiplier_parse(NULL, &m), 0);
}
END_TEST

START_TEST(test_feemath_compounding)
{
	bool capped;

	ck_assert_uint_eq(fee_for_step(100, 2000, 0, 1000000, &capped), 100);
	ck_assert(!capped);
	ck_assert_uint_eq(fee_for_step(100, 2000, 1, 1000000, &capped), 200);
	ck_assert_uint_eq(fee_for_step(100, 2000, 3, 1000000, &capped), 800);
	ck_assert(!capped);
	/* rounding up at every step: 100 -> 150 -> 225 -> 338 (337.5) -> 507 */
	ck_assert_uint_eq(fee_for_step(100, 1500, 3, 1000000, &capped), 338);
	ck_assert_uint_eq(fee_for_step(100, 1500, 4, 1000000, &capped), 507);
	/* a tiny multiplier still strictly increases each step */
	uint64_t prev = 1;
	for (uint32_t n = 1; n < 50; n++) {
		uint64_t f = fee_for_step(1, 1001, n, UINT64_MAX, &capped);
		ck_assert_uint_gt(f, prev);
		prev = f;
	}
}
END_TEST

START_TEST(test_feemath_cap_edges)
{
	bool capped;

	/* exactly at the cap is not "capped" */
	ck_assert_uint_eq(fee_for_step(500, 2000, 1, 1000, &capped), 1000);
	ck_assert(!capped);
	ck_assert_uint_eq(fee_for_step(501, 2000, 1, 1000, &capped), 1000);
	ck_assert(capped);
	/* base above the cap */
	ck_assert_uint_eq(fee_for_step(5000, 2000, 0, 1000, &capped), 1000);
	ck_assert(capped);
	ck_assert_uint_eq(fee_for_step(1000, 2000, 0, 1000, &capped), 1000);
	ck_assert(!capped);
	/* huge step counts terminate and stay capped */
	ck_assert_uint_eq(fee_for_step(100, 2000, UINT32_MAX, 10000000, &capped), 10000000);
	ck_assert(capped);
	/* overflow: the exact product exceeds 64 bits */
	ck_assert_uint_eq(fee_scale_up(UINT64_MAX, 100000, UINT64_MAX, &capped), UINT64_MAX);
	ck_assert(capped);
	capped = false;
	ck_assert_uint_eq(fee_scale_up(UINT64_MAX / 2, 2000, UINT64_MAX, &capped), UINT64_MAX - 1);
	ck_assert(!capped);
	ck_assert_uint_eq(fee_for_step(UINT64_MAX - 1, 1001, 5, UINT64_MAX, &capped), UINT64_MAX);
	ck_assert(capped);
	/* zero fee stays zero (no bid from nothing) */
	ck_assert_uint_eq(fee_for_step(0, 2000, UINT32_MAX, 1000, &capped), 0);
}
END_TEST

static Suite *feemath_suite(void)
{
	Suite *s = suite_create("feemath");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_feemath_multiplier_parse);
	tcase_add_test(tc, test_feemath_compounding);
	tcase_add_test(tc, test_feemath_cap_edges);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(feemath_suite)
