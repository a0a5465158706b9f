/* check_pace.c - the token bucket's promise (common/pace.h): never more than
 * burst + rate * t over any interval, the rate in the long run, fractional
 * rates, clocks that go back, no overflow. */
#include "common/pace.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"
#include "tests/support/splitmix.h"

START_TEST(test_pace_worked_example)
{
	struct pace p = {0};

	/* 10 a second, 2 at once: starts full */
	ck_assert_int_eq(pace_refill(&p, 5000000, 10000, 2), 2);
	ck_assert_int_eq(pace_spend(&p, 3), 2);
	ck_assert_int_eq(pace_spend(&p, 1), 0);
	ck_assert_int_eq(pace_wait_us(&p, 10000), 100000);
	ck_assert_int_eq(pace_refill(&p, 5050000, 10000, 2), 0); /* half a unit */
	ck_assert_int_eq(pace_wait_us(&p, 10000), 50000);
	ck_assert_int_eq(pace_refill(&p, 5100000, 10000, 2), 1);
	ck_assert_int_eq(pace_wait_us(&p, 10000), 0);
	ck_assert_int_eq(pace_refill(&p, 9000000, 10000, 2), 2); /* capped at the burst */
	ck_assert_int_eq(pace_spend(&p, -4), 0);
	ck_assert_int_eq(pace_spend(&p, 1), 1);
	/* a clock that goes back adds nothing, and the next refill counts from the later time */
	ck_assert_int_eq(pace_refill(&p, 1000000, 10000, 2), 1);
	ck_assert_int_eq(pace_refill(&p, 9000000, 10000, 2), 1);
	ck_assert_int_eq(pace_refill(&p, 9100000, 10000, 2), 2);
}
END_TEST

/*
 * Random runs: random rates (fractions of a unit a second to a million),
 * bursts, gaps (some of them backwards) and demands. For every pair of
 * calls i < j, what was granted after call i up to call j is at most what
 * the bucket could hold at i (burst) plus the rate times the time between
 * them on the latest clock seen.
 */
START_TEST(test_pace_never_more_than_promised)
{
	enum { RUNS = 3000, CALLS = 120 };
	uint64_t seed = 7;

	for (int run = 0; run < RUNS; run++) {
		struct pace p = {0};
		int64_t rate_milli = 1 + (int64_t)(next_rand(&seed) % 1000000000ULL);
		int64_t burst = 1 + (int64_t)(next_rand(&seed) % 50);
		int64_t t[CALLS], got[CALLS], now = (int64_t)(next_rand(&seed) % 1000000000ULL);
		int64_t latest = now;

		if (run % 3 == 0)
			rate_milli = 1 + rate_milli % 5000; /* below 5 a second */
		for (int i = 0; i < CALLS; i++) {
			uint64_t r = next_rand(&seed);
			int64_t gap = (int64_t)(r % 200000);

			now += r % 17 == 0 ? -gap : gap;
			if (now > latest || i == 0)
				latest = now;
			t[i] = latest;
			(void)pace_refill(&p, now, rate_milli, burst);
			got[i] = pace_spend(&p, (int64_t)((r >> 20) % (uint64_t)(burst + 3)));
			if (got[i] < 0 || p.micro < 0 || p.micro > burst * PACE_UNIT)
				ck_abort_msg("run %d call %d: got %lld, holding %lld millionths",
					     run, i, (long long)got[i], (long long)p.micro);
		}
		for (int i = 0; i < CALLS; i++) {
			int64_t sum = 0;

			for (int j = i + 1; j < CALLS; j++) {
				int64_t allowed = burst + (t[j] - t[i]) * rate_milli / 1000000000LL;

				sum += got[j];
				if (sum >
				    allowed) /* (ck_assert per pair costs a message to Check) */
					ck_abort_msg(
						"run %d: %lld granted in %lld us at %lld milli/s, "
						"burst %lld",
						run, (long long)sum, (long long)(t[j] - t[i]),
						(long long)rate_milli, (long long)burst);
			}
		}
	}
}
END_TEST

/* A caller that comes back when pace_wait_us says so gets the rate. */
static int64_t greedy(int64_t rate_milli, int64_t burst, int64_t seconds)
{
	struct pace p = {0};
	int64_t now = 123, end = now + seconds * 1000000, total = 0;

	while (now <= end) {
		(void)pace_refill(&p, now, rate_milli, burst);
		total += pace_spend(&p, burst);
		now += pace_wait_us(&p, rate_milli) + 1;
	}
	return total;
}

START_TEST(test_pace_long_run_rate)
{
	/* 300 a second shared by 4 workers: 75 each */
	int64_t got = greedy(300000 / 4, 4, 1000);

	ck_assert_int_ge(got, 74000);
	ck_assert_int_le(got, 75000 + 4);
	/* a quarter of a unit a second */
	got = greedy(250, 1, 400);
	ck_assert_int_ge(got, 99);
	ck_assert_int_le(got, 101);
	/* a quarter a second asked for every microsecond: the fractions add up */
	{
		struct pace p = {0};
		int64_t total = 0;

		(void)pace_refill(&p, 0, 250, 1);
		total += pace_spend(&p, 1);
		for (int64_t t = 1; t <= 40000000; t += 3) {
			(void)pace_refill(&p, t, 250, 1);
			total += pace_spend(&p, 1);
		}
		ck_assert_int_ge(total, 10);
		ck_assert_int_le(total, 11);
	}
	/* a million a second */
	got = greedy(1000000000, 50000, 5);
	ck_assert_int_ge(got, 4990000);
	ck_assert_int_le(got, 5050000);
}
END_TEST

START_TEST(test_pace_no_overflow)
{
	struct pace p = {0};

	ck_assert_int_eq(pace_refill(&p, 0, 1000000000, 1000000), 1000000);
	ck_assert_int_eq(pace_spend(&p, 1000000), 1000000);
	ck_assert_int_eq(pace_refill(&p, INT64_MAX / 2, 1000000000, 1000000), 1000000);
	ck_assert_int_eq(pace_spend(&p, 1000000), 1000000);
	ck_assert_int_eq(pace_refill(&p, INT64_MAX / 2 + 999, 1000000000, 1000000), 999);
	/* nonsense rates and bursts act as the smallest */
	p = (struct pace){0};
	ck_assert_int_eq(pace_refill(&p, 0, 0, 0), 1);
	ck_assert_int_eq(pace_spend(&p, 5), 1);
	ck_assert_int_eq(pace_wait_us(&p, 0), 1000000000);
}
END_TEST

static Suite *pace_suite(void)
{
	Suite *s = suite_create("pace");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pace_worked_example);
	tcase_add_test(tc, test_pace_never_more_than_promised);
	tcase_add_test(tc, test_pace_long_run_rate);
	tcase_add_test(tc, test_pace_no_overflow);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(pace_suite)
