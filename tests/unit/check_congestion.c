/*
 * check_congestion.c - the oracle's pure rules driven by scripted sample
 * sequences: hysteresis, the dwell, a single noisy sample that must not flap
 * the level, capacity usage and spread, and fee clamping by bound.
 */
#include "oracle/congestion.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

#define L FEE_CONGESTION_LOW
#define E FEE_CONGESTION_ELEVATED
#define H FEE_CONGESTION_HIGH
#define S FEE_CONGESTION_SEVERE

struct step {
	uint64_t t_ms;
	uint32_t usage_ppm;
	uint32_t spread_milli;
	enum fee_congestion want;
};

static void run(const struct step *steps, size_t n, uint64_t dwell_ms)
{
	struct congestion_params p;
	struct congestion_state st;

	congestion_params_default(&p, dwell_ms);
	congestion_init(&st);
	for (size_t i = 0; i < n; i++) {
		struct congestion_sample s = {steps[i].usage_ppm, steps[i].spread_milli,
					      steps[i].t_ms};
		enum fee_congestion got = congestion_update(&st, &p, &s);

		ck_assert_msg(got == steps[i].want,
			      "step %zu (t=%llu usage=%u spread=%u): got %d want %d", i,
			      (unsigned long long)steps[i].t_ms, steps[i].usage_ppm,
			      steps[i].spread_milli, got, steps[i].want);
	}
}

#define RUN(steps, dwell) run(steps, sizeof(steps) / sizeof(steps[0]), dwell)

START_TEST(test_congestion_first_sample_sets_level)
{
	static const struct step a[] = {{0, 960000, 1000, S}};
	static const struct step b[] = {{0, 100000, 1000, L}, {5000, 100000, 1000, L}};

	RUN(a, 30000);
	RUN(b, 30000);
}
END_TEST

START_TEST(test_congestion_single_noisy_sample_does_not_flap)
{
	/* One severe sample, one high sample, among quiet ones, 5 s apart. */
	static const struct step a[] = {
		{0, 100000, 1000, L},     {5000, 990000, 30000, L}, {10000, 100000, 1000, L},
		{15000, 100000, 1000, L}, {20000, 850000, 1000, L}, {25000, 100000, 1000, L},
		{60000, 100000, 1000, L}, {65000, 990000, 1000, L}, {100000, 100000, 1000, L},
	};
	/* And the mirror image: one quiet sample while severe. */
	static const struct step b[] = {
		{0, 990000, 1000, S},     {5000, 0, 1000, S},  {10000, 990000, 1000, S},
		{45000, 990000, 1000, S}, {50000, 0, 1000, S}, {55000, 990000, 1000, S},
	};

	RUN(a, 30000);
	RUN(b, 30000);
}
END_TEST

START_TEST(test_congestion_dwell_respected)
{
	/* Sustained high from t=10 s: published at the first sample >= 40 s. */
	static const struct step a[] = {
		{0, 100000, 1000, L},
		{10000, 850000, 1000, L},
		{20000, 850000, 1000, L},
		{39999, 850000, 1000, L},
		{40000, 850000, 1000, H},
		{45000, 850000, 1000, H},
		/* and back down: below 0.70 for 30 s, from t=50 s */
		{50000, 100000, 1000, H},
		{79000, 100000, 1000, H},
		{80000, 100000, 1000, L},
	};

	RUN(a, 30000);
}
END_TEST

START_TEST(test_congestion_dwell_restarts_on_interruption)
{
	/* high from 0 to 25 s, a quiet sample at 25 s, high again: the dwell restarts at 30 s. */
	static const struct step a[] = {
		{0, 100000, 1000, L},     {1, 850000, 1000, L},     {20000, 850000, 1000, L},
		{25000, 100000, 1000, L}, {30000, 850000, 1000, L}, {59999, 850000, 1000, L},
		{60000, 850000, 1000, H},
	};

	RUN(a, 30000);
}
END_TEST

START_TEST(test_congestion_hysteresis)
{
	/* dwell 0: only hysteresis acts. */
	static const struct step a[] = {
		{0, 0, 1000, L},       {1, 490000, 1000, L}, /* below 0.50: still low */
		{2, 500000, 1000, E},                        /* up threshold */
		{3, 410000, 1000, E}, /* between 0.40 and 0.50: stays elevated */
		{4, 399999, 1000, L}, /* below 0.40: low */
		{5, 800000, 1000, H},  {6, 710000, 1000, H}, /* above 0.70: stays high */
		{7, 690000, 1000, E},                        /* below 0.70, above 0.40: elevated */
		{8, 950000, 1000, S},  {9, 860000, 1000, S}, /* above 0.85 */
		{10, 840000, 1000, H}, {11, 0, 1000, L},
	};

	RUN(a, 0);
}
END_TEST

START_TEST(test_congestion_spread_alone)
{
	static const struct step a[] = {
		{0, 0, 1000, L},  {1, 0, 1999, L}, {2, 0, 2000, E},  {3, 0, 1600, E},
		{4, 0, 1499, L},  {5, 0, 5000, H}, {6, 0, 20000, S}, {7, 0, 15000, S},
		{8, 0, 14999, H}, {9, 0, 4000, H}, {10, 0, 3999, E}, {11, 0, 1000, L},
	};

	RUN(a, 0);
}
END_TEST

START_TEST(test_congestion_mixed_rise_takes_level_that_held)
{
	/* Alternating high/severe for 30 s while low: moves to high, then waits for severe. */
	static const struct step a[] = {
		{0, 0, 1000, L},          {1000, 850000, 1000, L},  {6000, 990000, 1000, L},
		{11000, 850000, 1000, L}, {16000, 990000, 1000, L}, {21000, 850000, 1000, L},
		{26000, 990000, 1000, L}, {31000, 990000, 1000, H}, {36000, 990000, 1000, H},
		{60999, 990000, 1000, H}, {61000, 990000, 1000, S},
	};

	RUN(a, 30000);
}
END_TEST

START_TEST(test_congestion_direction_change_resets)
{
	/* At high: a fall pending, then a rise candidate: the fall is forgotten. */
	static const struct step a[] = {
		{0, 850000, 1000, H},     {1000, 0, 1000, H},  {20000, 0, 1000, H},
		{25000, 990000, 1000, H}, {31000, 0, 1000, H}, {60000, 0, 1000, H},
		{61000, 0, 1000, L},
	};

	RUN(a, 30000);
}
END_TEST

START_TEST(test_congestion_seed_and_clock_backwards)
{
	struct congestion_params p;
	struct congestion_state st;
	struct congestion_sample s = {0, 1000, 100000};

	congestion_params_default(&p, 30000);
	congestion_seed(&st, FEE_CONGESTION_HIGH);
	ck_assert_int_eq(congestion_update(&st, &p, &s), H); /* quiet: pending fall */
	s.now_ms = 50000;                                    /* clock went backwards */
	ck_assert_int_eq(congestion_update(&st, &p, &s), H);
	s.now_ms = 130000;
	ck_assert_int_eq(congestion_update(&st, &p, &s), L);
	congestion_seed(&st, (enum fee_congestion)7);
	ck_assert_int_eq(st.level, S);
}
END_TEST

START_TEST(test_congestion_signals)
{
	ck_assert_uint_eq(congestion_usage_ppm(0, 0, 2000), 0);
	ck_assert_uint_eq(congestion_usage_ppm(1000, 10, 2000), 50000);
	ck_assert_uint_eq(congestion_usage_ppm(19000, 10, 2000), 950000);
	ck_assert_uint_eq(congestion_usage_ppm(50000, 10, 2000), 1000000);
	ck_assert_uint_eq(congestion_usage_ppm(UINT64_MAX, 1, 1), 1000000);
	ck_assert_uint_eq(congestion_usage_ppm(5, 1, 0), 0);

	ck_assert_uint_eq(congestion_spread_milli(0, 0), 1000);
	ck_assert_uint_eq(congestion_spread_milli(100, 100), 1000);
	ck_assert_uint_eq(congestion_spread_milli(100, 200), 2000);
	ck_assert_uint_eq(congestion_spread_milli(100, 2000), 20000);
	ck_assert_uint_eq(congestion_spread_milli(0, 100), 100000);
	ck_assert_uint_eq(congestion_spread_milli(1, UINT64_MAX), 4000000000u);
}
END_TEST

START_TEST(test_fee_clamp_bounds)
{
	enum fee_clamp w;

	ck_assert_uint_eq(fee_clamp(150, 100, 10000000, &w), 150);
	ck_assert_int_eq(w, FEE_CLAMP_NONE);
	ck_assert_uint_eq(fee_clamp(150, 200, 10000000, &w), 200);
	ck_assert_int_eq(w, FEE_CLAMP_MIN);
	ck_assert_uint_eq(fee_clamp(20000000, 100, 10000000, &w), 10000000);
	ck_assert_int_eq(w, FEE_CLAMP_MAX);
	/* an empty window (all zero) ends at the floor even with a tiny MIN */
	ck_assert_uint_eq(fee_clamp(0, 1, 10000000, &w), 100);
	ck_assert_int_eq(w, FEE_CLAMP_FLOOR);
	ck_assert_uint_eq(fee_clamp(0, 100, 10000000, &w), 100);
	ck_assert_int_eq(w, FEE_CLAMP_MIN);
	/* a MAX below the floor still floors at 100 */
	ck_assert_uint_eq(fee_clamp(500, 10, 50, &w), 100);
	ck_assert_int_eq(w, FEE_CLAMP_FLOOR);
	ck_assert_uint_eq(fee_clamp(UINT64_MAX, 100, 4294967295u, &w), 4294967295u);
	ck_assert_int_eq(w, FEE_CLAMP_MAX);
}
END_TEST

static Suite *congestion_suite(void)
{
	Suite *s = suite_create("congestion");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_congestion_first_sample_sets_level);
	tcase_add_test(tc, test_congestion_single_noisy_sample_does_not_flap);
	tcase_add_test(tc, test_congestion_dwell_respected);
	tcase_add_test(tc, test_congestion_dwell_restarts_on_interruption);
	tcase_add_test(tc, test_congestion_hysteresis);
	tcase_add_test(tc, test_congestion_spread_alone);
	tcase_add_test(tc, test_congestion_mixed_rise_takes_level_that_held);
	tcase_add_test(tc, test_congestion_direction_change_resets);
	tcase_add_test(tc, test_congestion_seed_and_clock_backwards);
	tcase_add_test(tc, test_congestion_signals);
	tcase_add_test(tc, test_fee_clamp_bounds);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(congestion_suite)
