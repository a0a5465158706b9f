/* check_console_chart.c - the web console's ring of samples, its rates and
 * latency windows (ops/gateway/console_chart.h): order across every fill
 * level and wrap, restarts counted as nothing, the base of the rates "now". */
#include "ops/gateway/console_chart.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

static struct chart_sample at(int64_t mono_ms)
{
	struct chart_sample s = {.wall_ms = (uint64_t)mono_ms + 1000000, .mono_ms = mono_ms};

	s.confirmed = (uint64_t)mono_ms * 2;
	s.lat[1][3] = (uint64_t)mono_ms;
	return s;
}

/* After every number of pushes up to three wraps: the newest CHART_SAMPLES, oldest first. */
START_TEST(test_ring_keeps_the_newest_in_order)
{
	for (unsigned pushes = 0; pushes <= 3 * CHART_SAMPLES + 1; pushes++) {
		struct chart_ring *r = calloc(1, sizeof(*r));
		unsigned keep = pushes < CHART_SAMPLES ? pushes : CHART_SAMPLES;

		ck_assert_ptr_nonnull(r);
		for (unsigned i = 0; i < pushes; i++) {
			struct chart_sample s = at((int64_t)i * 10);
			chart_push(r, &s);
		}
		ck_assert_uint_eq(r->n, keep);
		if (!pushes)
			ck_assert_ptr_null(chart_newest(r));
		else
			ck_assert_int_eq(chart_newest(r)->mono_ms, (int64_t)(pushes - 1) * 10);
		for (unsigned i = 0; i < keep; i++) {
			const struct chart_sample *s = chart_nth(r, i);
			int64_t want = (int64_t)(pushes - keep + i) * 10;

			ck_assert_int_eq(s->mono_ms, want);
			ck_assert_uint_eq(s->confirmed, (uint64_t)want * 2);
			ck_assert_uint_eq(s->lat[1][3], (uint64_t)want);
		}
		free(r);
	}
}
END_TEST

START_TEST(test_rate)
{
	ck_assert_double_eq(chart_rate(0, 10, 1000), 10.0);
	ck_assert_double_eq(chart_rate(100, 112, 4000), 3.0);
	ck_assert_double_eq(chart_rate(7, 7, 5000), 0.0);
	/* a restarted process: the sum went down, the interval counts nothing */
	ck_assert_double_eq(chart_rate(10, 5, 1000), 0.0);
	/* no time, or time backwards: nothing, never a division by zero */
	ck_assert_double_eq(chart_rate(0, 1, 0), 0.0);
	ck_assert_double_eq(chart_rate(0, 1, -5), 0.0);
	ck_assert_double_eq(chart_rate(0, UINT64_MAX, 1000), (double)UINT64_MAX * 1000.0 / 1000.0);
	/* over a grid: finite and never negative */
	for (uint64_t a = 0; a < 6; a++)
		for (uint64_t b = 0; b < 6; b++)
			for (int64_t ms = -3; ms < 4; ms++) {
				double v = chart_rate(a, b, ms);

				ck_assert(isfinite(v) && v >= 0);
				ck_assert((v > 0) == (ms > 0 && b > a));
			}
}
END_TEST

START_TEST(test_window)
{
	uint64_t a[SHM_HIST_BUCKETS], b[SHM_HIST_BUCKETS], w[SHM_HIST_BUCKETS];

	for (unsigned k = 0; k < SHM_HIST_BUCKETS; k++) {
		a[k] = 10 * k;
		b[k] = k % 3 ? 10 * k + k : 10 * k - (k ? 1 : 0); /* every third went down */
	}
	chart_window(a, b, w);
	for (unsigned k = 0; k < SHM_HIST_BUCKETS; k++)
		ck_assert_uint_eq(w[k], k % 3 ? k : 0);
	chart_window(b, b, w);
	for (unsigned k = 0; k < SHM_HIST_BUCKETS; k++)
		ck_assert_uint_eq(w[k], 0);
}
END_TEST

/* The newest sample at least min_ms old; never one younger, NULL when there is none. */
START_TEST(test_rate_base)
{
	struct chart_ring *r = calloc(1, sizeof(*r));
	const int64_t min = 1000;

	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_null(chart_rate_base(r, 50000, min));
	for (int64_t t = 0; t <= 10000; t += CHART_SAMPLE_MS) {
		struct chart_sample s = at(t);
		chart_push(r, &s);
	}
	ck_assert_ptr_null(chart_rate_base(r, 999, min));
	ck_assert_int_eq(chart_rate_base(r, 1000, min)->mono_ms, 0);
	ck_assert_int_eq(chart_rate_base(r, 10500, min)->mono_ms, 5000);
	ck_assert_int_eq(chart_rate_base(r, 10999, min)->mono_ms, 5000);
	ck_assert_int_eq(chart_rate_base(r, 11000, min)->mono_ms, 10000);
	ck_assert_int_eq(chart_rate_base(r, 99000, min)->mono_ms, 10000);
	for (int64_t now = 0; now < 20000; now += 37) {
		const struct chart_sample *s = chart_rate_base(r, now, min);

		if (s) {
			ck_assert_int_ge(now - s->mono_ms, min);
			for (unsigned i = 0; i < r->n; i++) /* no newer one qualifies */
				ck_assert(chart_nth(r, i)->mono_ms <= s->mono_ms ||
					  now - chart_nth(r, i)->mono_ms < min);
		} else {
			ck_assert_int_lt(now - chart_nth(r, 0)->mono_ms, min);
		}
	}
	free(r);
}
END_TEST

static Suite *console_chart_suite(void)
{
	Suite *s = suite_create("console_chart");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_ring_keeps_the_newest_in_order);
	tcase_add_test(tc, test_rate);
	tcase_add_test(tc, test_window);
	tcase_add_test(tc, test_rate_base);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(console_chart_suite)
