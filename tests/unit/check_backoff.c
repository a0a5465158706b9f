/* check_backoff.c - full-jitter bounds, growth, cap and overflow safety. */
#include "common/backoff.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"
#include "tests/support/splitmix.h"

START_TEST(test_backoff_ceiling_doubles_then_caps)
{
	ck_assert_uint_eq(backoff_ceiling_ms(0, 1000, 60000), 1000);
	ck_assert_uint_eq(backoff_ceiling_ms(1, 1000, 60000), 1000);
	ck_assert_uint_eq(backoff_ceiling_ms(2, 1000, 60000), 2000);
	ck_assert_uint_eq(backoff_ceiling_ms(3, 1000, 60000), 4000);
	ck_assert_uint_eq(backoff_ceiling_ms(6, 1000, 60000), 32000);
	ck_assert_uint_eq(backoff_ceiling_ms(7, 1000, 60000), 60000);
	ck_assert_uint_eq(backoff_ceiling_ms(UINT32_MAX, 1000, 60000), 60000);
	/* base above max: max wins */
	ck_assert_uint_eq(backoff_ceiling_ms(1, 90000, 60000), 60000);
	/* no overflow near the top of the range */
	ck_assert_uint_eq(backoff_ceiling_ms(200, UINT64_MAX / 3, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_eq(backoff_ceiling_ms(64, 1, UINT64_MAX), 1ULL << 63);
	ck_assert_uint_eq(backoff_ceiling_ms(65, 1, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_eq(backoff_ceiling_ms(5, 0, 60000), 0);
}
END_TEST

/* Over many random draws every delay is within [0, ceiling], the draws cover
 * the whole range (low and high deciles both seen), and the mean is near the
 * middle, as a uniform draw must be. */
START_TEST(test_backoff_full_jitter_bounds_and_spread)
{
	uint64_t seed = 42;

	for (uint32_t n = 1; n <= 12; n++) {
		uint64_t ceil = backoff_ceiling_ms(n, 100, 30000);
		double sum = 0;
		int low = 0, high = 0;
		const int draws = 20000;

		for (int i = 0; i < draws; i++) {
			uint64_t d = backoff_full_jitter_ms(n, 100, 30000, next_rand(&seed));
			ck_assert_uint_le(d, ceil);
			sum += (double)d;
			low += d < ceil / 10;
			high += d > ceil - ceil / 10;
		}
		ck_assert_msg(low > draws / 20 && high > draws / 20, "n=%u low=%d high=%d", n, low,
			      high);
		double mean = sum / draws;
		ck_assert_msg(mean > ceil * 0.45 && mean < ceil * 0.55, "n=%u mean=%f ceil=%lu", n,
			      mean, (unsigned long)ceil);
	}
}
END_TEST

START_TEST(test_backoff_jitter_edges)
{
	ck_assert_uint_eq(backoff_full_jitter_ms(3, 0, 0, 12345), 0);
	ck_assert_uint_eq(backoff_full_jitter_ms(1, 1000, 60000, 0), 0);
	ck_assert_uint_eq(backoff_full_jitter_ms(1, 1000, 60000, 1000), 1000);
	ck_assert_uint_eq(backoff_full_jitter_ms(1, 1000, 60000, 1001), 0);
	ck_assert_uint_eq(backoff_full_jitter_ms(99, 1, UINT64_MAX, UINT64_MAX), UINT64_MAX);
}
END_TEST

static Suite *backoff_suite(void)
{
	Suite *s = suite_create("backoff");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_backoff_ceiling_doubles_then_caps);
	tcase_add_test(tc, test_backoff_full_jitter_bounds_and_spread);
	tcase_add_test(tc, test_backoff_jitter_edges);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(backoff_suite)
