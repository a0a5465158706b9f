/*
 * check_publish_window.c - a chain's published cursor moves only over links
 * acknowledged with every link before them, whatever order the reports
 * come in: every order of every outcome of up to 7 links, takes between
 * any two reports; links produced out of order; links after a failure.
 */
#include "common/publish_window.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

#define MAXN 7

/*
 * Every take must continue where the last one ended, over acknowledged
 * links only. (Plain tests, not ck_assert: each passing ck_assert costs a
 * write to Check's parent, and these run millions of times.)
 */
static void take_checked(struct publish_window *w, const int *acked, int64_t base, int64_t *next)
{
	int64_t from, to;

	if (!pw_take(w, &from, &to))
		return;
	if (from != *next || to < from)
		ck_abort_msg("took [%lld, %lld], expected to start at %lld", (long long)from,
			     (long long)to, (long long)*next);
	for (int64_t s = from; s <= to; s++)
		if (acked[s - base] != 1)
			ck_abort_msg("link %lld handed out unacknowledged", (long long)s);
	*next = to + 1;
}

/* The next permutation of p[0..n) in lexicographic order; false after the last. */
static bool next_perm(int *p, int n)
{
	int i = n - 2, j = n - 1;

	while (i >= 0 && p[i] >= p[i + 1])
		i--;
	if (i < 0)
		return false;
	while (p[j] <= p[i])
		j--;
	int t = p[i];
	p[i] = p[j];
	p[j] = t;
	for (int a = i + 1, b = n - 1; a < b; a++, b--)
		t = p[a], p[a] = p[b], p[b] = t;
	return true;
}

/*
 * n links produced from base, reported in the order perm with outcomes
 * bits (bit i set: link i failed), a take after the reports that mask
 * `takes` selects and one at the end. The links handed out are exactly the
 * longest prefix of acknowledged links.
 */
static void run_case(int n, const int *perm, unsigned bits, unsigned takes, int64_t base)
{
	struct publish_window w = {0};
	int acked[MAXN] = {0}, prefix = 0;
	int64_t next = base;

	for (int i = 0; i < n; i++)
		if (pw_produced(&w, base + i) != 0)
			ck_abort_msg("link %d refused", i);
	for (int k = 0; k < n; k++) {
		int i = perm[k];
		bool ok = !(bits >> i & 1);

		pw_acked(&w, base + i, ok);
		acked[i] = ok ? 1 : 2;
		if (takes >> k & 1)
			take_checked(&w, acked, base, &next);
	}
	take_checked(&w, acked, base, &next);
	while (prefix < n && !(bits >> prefix & 1))
		prefix++;
	if (next - base != prefix || pw_held(&w) != (size_t)(n - prefix))
		ck_abort_msg(
			"n %d, failed mask %#x: %lld handed out and %zu held, expected %d and %d",
			n, bits, (long long)(next - base), pw_held(&w), prefix, n - prefix);
	pw_free(&w);
}

START_TEST(test_every_order_and_outcome)
{
	for (int n = 1; n <= MAXN; n++) {
		int perm[MAXN];

		for (int i = 0; i < n; i++)
			perm[i] = i;
		do {
			for (unsigned bits = 0; bits < 1u << n; bits++) {
				/* takes after no report, after each one, and after every other */
				run_case(n, perm, bits, 0, 1);
				run_case(n, perm, bits, ~0u, 1000000007);
				run_case(n, perm, bits, 0x55, 42);
			}
		} while (next_perm(perm, n));
	}
}
END_TEST

/* Produce and report interleaved, over a long run: the window grows and compacts. */
START_TEST(test_long_run_interleaved)
{
	struct publish_window w = {0};
	int64_t produced = 100, next = 100, from, to;
	uint64_t s = 7;

	for (int round = 0; round < 2000; round++) {
		int64_t batch = (int64_t)(s % 300) + 1, first = produced;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		for (int64_t i = 0; i < batch; i++)
			ck_assert_int_eq(pw_produced(&w, produced++), 0);
		/* acknowledged back to front: nothing moves until the first link's report */
		for (int64_t i = batch - 1; i >= 1; i--)
			pw_acked(&w, first + i, true);
		ck_assert(!pw_take(&w, &from, &to) || to < first);
		pw_acked(&w, first, true);
		ck_assert(pw_take(&w, &from, &to));
		ck_assert_int_eq(from, next);
		ck_assert_int_eq(to, produced - 1);
		next = to + 1;
		ck_assert_uint_eq(pw_held(&w), 0);
	}
	pw_free(&w);
}
END_TEST

/* A link out of order stops the window; a reset starts it again anywhere. */
START_TEST(test_out_of_order_stops_until_reset)
{
	struct publish_window w = {0};
	int64_t from, to;

	ck_assert_int_eq(pw_produced(&w, 5), 0);
	ck_assert_int_eq(pw_produced(&w, 6), 0);
	ck_assert_int_eq(pw_produced(&w, 8), -EINVAL); /* 7 skipped */
	pw_acked(&w, 5, true);
	pw_acked(&w, 6, true);
	pw_acked(&w, 8, true); /* never held */
	ck_assert(pw_take(&w, &from, &to));
	ck_assert_int_eq(from, 5);
	ck_assert_int_eq(to, 6);
	ck_assert_int_eq(pw_produced(&w, 7), 0); /* stopped: ignored */
	pw_acked(&w, 7, true);
	ck_assert(!pw_take(&w, &from, &to));
	pw_reset(&w);
	ck_assert_int_eq(pw_produced(&w, 3), 0); /* a resend starts at the cursor */
	pw_acked(&w, 3, true);
	ck_assert(pw_take(&w, &from, &to));
	ck_assert_int_eq(from, 3);
	ck_assert_int_eq(to, 3);
	/* anchored after a take: the next link must follow it */
	ck_assert_int_eq(pw_produced(&w, 3), -EINVAL);
	pw_free(&w);
}
END_TEST

/* A failed report: the acknowledged links before it move, nothing after it. */
START_TEST(test_failure_holds_what_follows)
{
	struct publish_window w = {0};
	int64_t from, to;

	for (int64_t s = 1; s <= 4; s++)
		ck_assert_int_eq(pw_produced(&w, s), 0);
	pw_acked(&w, 2, false);
	pw_acked(&w, 2, true); /* a second report for a link changes nothing */
	pw_acked(&w, 1, true);
	pw_acked(&w, 3, true);
	pw_acked(&w, 4, true);
	ck_assert_int_eq(pw_produced(&w, 5), 0); /* stopped: not held */
	ck_assert(pw_take(&w, &from, &to));
	ck_assert_int_eq(from, 1);
	ck_assert_int_eq(to, 1);
	ck_assert(!pw_take(&w, &from, &to));
	ck_assert_uint_eq(pw_held(&w), 3);
	pw_acked(&w, 0, true);  /* before the window */
	pw_acked(&w, 99, true); /* past it */
	ck_assert(!pw_take(&w, &from, &to));
	pw_free(&w);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("publish_window");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_order_and_outcome);
	tcase_add_test(tc, test_long_run_interleaved);
	tcase_add_test(tc, test_out_of_order_stops_until_reset);
	tcase_add_test(tc, test_failure_holds_what_follows);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(suite)
