/*
 * check_send_trace.c - worker/trace.c: an op's path to its send, split into
 * parts that are never negative and add up to the total, checked on a worked
 * example and on random marks (some running backwards, as marks of a step
 * that was skipped or clocks that disagree would) and random ages.
 */
#include "worker/trace.h"

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include "tests/support/check_main.h"
#include "tests/support/splitmix.h"

static int64_t sum_parts(const struct send_split *s)
{
	return s->before_claim_us + s->claim_us + s->queued_us + s->prepare_us + s->simulate_us +
	       s->sign_us + s->write_us;
}

START_TEST(test_worked_example)
{
	/* enqueued at 0 (age 31 200 us at the send); the claim went out at 18 000 */
	struct send_marks m = {.claim_sent = 1018000,
			       .claimed = 1022100,
			       .build = 1022200,
			       .sim_sent = 1022300,
			       .sim_done = 1029100,
			       .rec_sent = 1029300,
			       .rec_done = 1031200};
	struct send_split s;

	send_split(&s, &m, 31200);
	ck_assert_int_eq(s.total_us, 31200);
	ck_assert_int_eq(s.before_claim_us, 18000);
	ck_assert_int_eq(s.claim_us, 4100);
	ck_assert_int_eq(s.queued_us, 100);
	ck_assert_int_eq(s.prepare_us, 100);
	ck_assert_int_eq(s.simulate_us, 6800);
	ck_assert_int_eq(s.sign_us, 200);
	ck_assert_int_eq(s.write_us, 1900);
}
END_TEST

/* The database's clock behind this host's: the steps alone exceed the age. */
START_TEST(test_age_shorter_than_the_steps)
{
	struct send_marks m = {100, 200, 300, 400, 500, 600, 700};
	struct send_split s;

	send_split(&s, &m, 250);
	ck_assert_int_eq(s.before_claim_us, 0);
	ck_assert_int_eq(s.total_us, 600);
	send_split(&s, &m, -5000);
	ck_assert_int_eq(s.before_claim_us, 0);
	ck_assert_int_eq(s.total_us, 600);
}
END_TEST

/* One Check assertion per condition costs a message to Check's parent: 2.4
 * million of them took 8 s under ASan. Checked plainly, failed by name. */
#define MUST(cond)                                                                                 \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg("mark set %d: %s", n, #cond);                                 \
	} while (0)

START_TEST(test_random_marks)
{
	uint64_t rng = 0x5eed;

	for (int n = 0; n < 200000; n++) {
		int64_t v[7], t = (int64_t)(next_rand(&rng) % 1000000000u);
		bool monotone = true;
		for (int i = 0; i < 7; i++) {
			uint64_t r = next_rand(&rng);
			/* one step in eight runs backwards */
			int64_t d = (int64_t)(r % 50000u) - ((r >> 32) % 8 == 0 ? 60000 : 0);
			if (d < 0)
				monotone = false;
			v[i] = t = t + d;
		}
		struct send_marks m = {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
		int64_t age = (int64_t)(next_rand(&rng) % 400000u) - 50000;
		struct send_split s;

		send_split(&s, &m, age);
		MUST(s.before_claim_us >= 0);
		MUST(s.claim_us >= 0);
		MUST(s.queued_us >= 0);
		MUST(s.prepare_us >= 0);
		MUST(s.simulate_us >= 0);
		MUST(s.sign_us >= 0);
		MUST(s.write_us >= 0);
		MUST(sum_parts(&s) == s.total_us);
		MUST(s.total_us >= age);
		if (monotone) {
			MUST(s.claim_us == v[1] - v[0]);
			MUST(s.write_us == v[6] - v[5]);
			MUST(s.total_us - s.before_claim_us == v[6] - v[0]);
			if (age >= v[6] - v[0])
				MUST(s.total_us == age);
		}
	}
}
END_TEST

static Suite *send_trace_suite(void)
{
	Suite *s = suite_create("send_trace");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60); /* randomized runs, under ASan in CI on a busy machine */
	tcase_add_test(tc, test_worked_example);
	tcase_add_test(tc, test_age_shorter_than_the_steps);
	tcase_add_test(tc, test_random_marks);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(send_trace_suite)
