/*
 * check_due.c - worker/due.c, the jobs by due time, against a plain list:
 * random due times set, moved, dropped and popped, including a job set due
 * again in the tick that ran it (it waits for the next tick).
 */
#include "worker/worker.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"
#include "tests/support/splitmix.h"

#define N_JOBS 200

/* Every parent's due time <= its children's, and every job knows its place. */
static void check_heap(const struct worker *w)
{
	for (size_t i = 0; i < w->n_due; i++) {
		ck_assert_uint_eq(w->due[i]->due_at, i + 1);
		if (i)
			ck_assert_int_le(w->due[(i - 1) / 2]->due_ms, w->due[i]->due_ms);
	}
}

/* The smallest due time among the jobs in the heap, INT64_MAX if none. */
static int64_t min_due(const struct job *jobs)
{
	int64_t best = INT64_MAX;

	for (int i = 0; i < N_JOBS; i++)
		if (jobs[i].due_at && jobs[i].due_ms < best)
			best = jobs[i].due_ms;
	return best;
}

START_TEST(test_due_matches_a_list)
{
	struct worker w = {0};
	struct job *jobs = calloc(N_JOBS, sizeof(*jobs));
	uint64_t rs = 42;
	int64_t now = 1000;

	ck_assert_ptr_nonnull(jobs);
	ck_assert_int_eq(due_reserve(&w, N_JOBS), 0);
	ck_assert_uint_ge(w.cap_due, N_JOBS);
	ck_assert_int_eq(due_next(&w), INT64_MAX);
	for (int i = 0; i < N_JOBS; i++)
		jobs[i].w = &w;
	for (int step = 0; step < 200000; step++) {
		struct job *j = &jobs[next_rand(&rs) % N_JOBS];
		uint64_t r = next_rand(&rs) % 10;

		if (r < 5) {
			due_set(j, now - 50 + (int64_t)(next_rand(&rs) % 200));
		} else if (r < 6) {
			due_drop(j);
			ck_assert_uint_eq(j->due_at, 0);
		} else if (r < 9) {
			/* a tick: pops come out in due order, each job at most once */
			int64_t last = INT64_MIN, want;
			struct job *p;
			w.tick_no++;
			for (;;) {
				bool blocked = w.n_due && w.due[0]->due_ms <= now &&
					       w.due[0]->tick_no == w.tick_no;
				want = min_due(jobs);
				if (blocked || want > now)
					want = INT64_MAX;
				p = due_pop(&w, now);
				if (!p) {
					ck_assert_int_eq(want, INT64_MAX);
					break;
				}
				ck_assert_int_eq(p->due_ms, want);
				ck_assert_int_ge(p->due_ms, last);
				ck_assert_uint_eq(p->due_at, 0);
				ck_assert_uint_ne(p->tick_no, w.tick_no);
				last = p->due_ms;
				p->tick_no = w.tick_no;
				/* a third come back due at once: not again in this tick */
				if (next_rand(&rs) % 3 == 0)
					due_set(p, now);
			}
		} else {
			now += (int64_t)(next_rand(&rs) % 20);
		}
		if (step % 97 == 0)
			check_heap(&w);
		ck_assert_int_eq(due_next(&w), min_due(jobs));
	}
	check_heap(&w);
	due_free(&w);
	free(jobs);
}
END_TEST

/* Room grows by doubling from 64 and never shrinks; a smaller ask changes nothing. */
START_TEST(test_due_reserve)
{
	struct worker w = {0};

	ck_assert_int_eq(due_reserve(&w, 1), 0);
	ck_assert_uint_eq(w.cap_due, 64);
	ck_assert_int_eq(due_reserve(&w, 65), 0);
	ck_assert_uint_eq(w.cap_due, 128);
	ck_assert_int_eq(due_reserve(&w, 3), 0);
	ck_assert_uint_eq(w.cap_due, 128);
	due_free(&w);
	ck_assert_ptr_null(w.due);
}
END_TEST

static Suite *due_suite(void)
{
	Suite *s = suite_create("due");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60); /* randomized runs, under ASan in CI on a busy machine */
	tcase_add_test(tc, test_due_matches_a_list);
	tcase_add_test(tc, test_due_reserve);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(due_suite)
