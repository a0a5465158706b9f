/*
 * check_top_view.c - the pure part of `outboxctl top` (ops/top_view.h):
 * rates that survive restarts, the sparkline's scale and alignment, and
 * frames that fit any window, with synthetic ctl_stats_collect documents.
 */
#include "ops/top_view.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

START_TEST(test_rate)
{
	ck_assert(top_rate(10, 30, 2.0) == 10.0);
	ck_assert(top_rate(10, 10, 1.0) == 0.0);
	/* a restarted process starts a fresh counter block: no negative rate */
	ck_assert(top_rate(500, 3, 1.0) == 0.0);
	ck_assert(top_rate(1, 5, 0.0) == 0.0);
	ck_assert(top_rate(1, 5, -1.0) == 0.0);
}
END_TEST

START_TEST(test_sparkline_ascii)
{
	struct top_history h = {0};
	char buf[64];
	double max;

	top_sparkline(buf, sizeof(buf), &h, 5, false, &max);
	ck_assert_str_eq(buf, "     "); /* no history: blank, full width */
	ck_assert(max == 0.0);
	top_history_push(&h, 0);
	top_history_push(&h, 7);
	top_history_push(&h, 14);
	top_sparkline(buf, sizeof(buf), &h, 5, false, &max);
	/* newest last, scaled to the maximum shown */
	ck_assert_str_eq(buf, "   =#"); /* 7/14 of 7 levels rounds to level 4 */
	ck_assert(max == 14.0);
	top_sparkline(buf, sizeof(buf), &h, 2, false, &max);
	ck_assert_str_eq(buf, "=#");
}
END_TEST

START_TEST(test_sparkline_wraps_and_utf8)
{
	struct top_history h = {0};
	char buf[TOP_HISTORY * 3 + 1];
	double max;

	for (int i = 0; i < TOP_HISTORY + 10; i++)
		top_history_push(&h, i < TOP_HISTORY ? 1 : 2);
	ck_assert_uint_eq(h.n, TOP_HISTORY);
	top_sparkline(buf, sizeof(buf), &h, 10, true, &max);
	ck_assert(max == 2.0);
	ck_assert_int_eq(top_columns(buf), 10);
	ck_assert_str_eq(buf, "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588");
	/* a width beyond the history is capped, never overruns */
	top_sparkline(buf, sizeof(buf), &h, 10000, true, &max);
	ck_assert_int_eq(top_columns(buf), TOP_HISTORY);
	/* a short buffer is cut at a character boundary */
	top_sparkline(buf, 8, &h, 10, true, &max);
	ck_assert_int_eq(top_columns(buf), 2);
	ck_assert_uint_eq(strlen(buf), 6);
}
END_TEST

/* A stats document like ctl_stats_collect's, with n workers. */
static json_t *doc(int n_workers, long long confirmed, const char *worker0_state, int pid_base)
{
	json_t *procs = json_array();

	json_array_append_new(procs, json_pack("{s:s, s:i, s:i, s:s, s:i, s:i, s:{}, s:{}}", "role",
					       "supervisor", "index", 0, "pid", 100, "state",
					       "running", "heartbeat_age_ms", 5, "restarts", 0,
					       "counters", "gauges"));
	for (int i = 0; i < n_workers; i++)
		json_array_append_new(
			procs, json_pack("{s:s, s:i, s:i, s:s, s:i, s:i, s:{s:I, s:I}, s:{s:i}}",
					 "role", "worker", "index", i, "pid", pid_base + i, "state",
					 i == 0 ? worker0_state : "running", "heartbeat_age_ms", 7,
					 "restarts", i == 0 ? 2 : 0, "counters",
					 "outbox_ops_confirmed_total", (json_int_t)confirmed,
					 "outbox_claims_total", (json_int_t)confirmed, "gauges",
					 "outbox_inflight", 3));
	return json_pack(
		"{s:s, s:s, s:i, s:b, s:o, s:{s:I, s:I, s:I}, s:{s:b, s:b, s:i, "
		"s:i, s:s, s:f, s:i, s:i}}",
		"instance", "demo", "segment", "/outboxd-demo", "supervisor_heartbeat_age_ms", 5,
		"supervisor_alive", 1, "processes", procs, "totals", "outbox_ops_confirmed_total",
		(json_int_t)(confirmed * n_workers), "outbox_ops_held_total", (json_int_t)0,
		"outbox_events_sealed_total", (json_int_t)0, "fee", "published", 1, "stale", 0,
		"recommendedBaseFee", 100, "aggressiveBaseFee", 150, "congestionLevel", "LOW",
		"ledgerCapacityUsage", 0.25, "latestLedger", 77, "ageMs", 40);
}

static const char *find(const struct top_frame *f, const char *needle, int *at)
{
	for (int i = 0; i < f->n; i++)
		if (strstr(f->line[i], needle)) {
			if (at)
				*at = i;
			return f->line[i];
		}
	return NULL;
}

START_TEST(test_frame_content)
{
	json_t *a = doc(2, 100, "running", 200), *b = doc(2, 150, "running", 200);
	struct top_history h = {0};
	struct top_queue q = {.known = true, .pending = {1, 20, 300}, .submitted = {0, 2, 4}};
	struct top_input in = {.prev = a,
			       .cur = b,
			       .dt_s = 2.0,
			       .confirmed = &h,
			       .queue = &q,
			       .clock = "12:00:00",
			       .cols = 160,
			       .rows = 40};
	struct top_frame *f = calloc(1, sizeof(*f));
	const char *l;
	int at;

	top_history_push(&h, 50);
	top_render(f, &in);
	ck_assert_ptr_nonnull(find(f, "outboxd demo", NULL));
	ck_assert_ptr_nonnull(find(f, "recommended 100  aggressive 150", NULL));
	ck_assert_ptr_nonnull(find(f, "CRITICAL 1/0  NORMAL 20/2  LOW 300/4", NULL));
	/* (150-100)*2 workers over 2 s */
	ck_assert_ptr_nonnull(find(f, "confirmed 50.0", NULL));
	l = find(f, "worker       0      200", &at);
	ck_assert_msg(l != NULL, "no row for worker 0");
	ck_assert_ptr_nonnull(strstr(l, "25.0")); /* its own confirmations per second */
	ck_assert(!f->alert[at]);
	ck_assert_str_eq(f->line[f->n - 1], "q quit");
	ck_assert_ptr_null(find(f, "!", NULL)); /* nothing to alert on */
	json_decref(a);
	json_decref(b);
	free(f);
}
END_TEST

START_TEST(test_frame_alerts_and_restart)
{
	/* worker 0 restarted (new pid) and is not running yet */
	json_t *a = doc(2, 100, "running", 200), *b = doc(2, 5, "starting", 300);
	struct top_queue q = {.known = false, .error = "cannot connect: refused"};
	struct top_input in = {.prev = a,
			       .cur = b,
			       .dt_s = 1.0,
			       .queue = &q,
			       .clock = "12:00:00",
			       .cols = 120,
			       .rows = 40};
	struct top_frame *f = calloc(1, sizeof(*f));
	const char *l;
	int at;

	json_object_set_new(json_object_get(b, "totals"), "outbox_ops_held_total", json_integer(3));
	json_object_set_new(b, "supervisor_alive", json_false());
	top_render(f, &in);
	l = find(f, "worker       0      300", &at);
	ck_assert_msg(l != NULL, "no row for the restarted worker 0");
	ck_assert(f->alert[at]);
	ck_assert_ptr_nonnull(strstr(l, " - ")); /* no rate across a restart */
	ck_assert_ptr_nonnull(find(f, "! 3 ops held", &at));
	ck_assert(f->alert[at]);
	ck_assert_ptr_nonnull(find(f, "! supervisor not running", NULL));
	ck_assert_ptr_nonnull(find(f, "queue    unknown: cannot connect: refused", NULL));
	/* totals went down (restart): the rate is 0, not negative */
	ck_assert_ptr_nonnull(find(f, "confirmed 0.0", NULL));
	json_decref(a);
	json_decref(b);
	free(f);
}
END_TEST

/* Every window size: no line wider than the window, never more lines than rows. */
START_TEST(test_frame_fits_any_window)
{
	json_t *a = doc(40, 10, "running", 200), *b = doc(40, 20, "running", 200);
	struct top_history h = {0};
	struct top_frame *f = calloc(1, sizeof(*f));

	for (int i = 0; i < 300; i++)
		top_history_push(&h, i % 17);
	for (int rows = 1; rows <= 60; rows++)
		for (int cols = 1; cols <= 200; cols += 3) {
			struct top_input in = {.prev = a,
					       .cur = b,
					       .dt_s = 1.0,
					       .confirmed = &h,
					       .clock = "12:00:00",
					       .cols = cols,
					       .rows = rows,
					       .utf8 = (cols % 2) == 0};

			top_render(f, &in);
			ck_assert_int_le(f->n, rows < 1 ? 1 : rows);
			ck_assert_int_ge(f->n, 1);
			for (int i = 0; i < f->n; i++)
				ck_assert_msg(top_columns(f->line[i]) <= cols,
					      "%dx%d: line %d has %d columns", rows, cols, i,
					      top_columns(f->line[i]));
			ck_assert_msg(strncmp(f->line[f->n - 1], "q quit", (size_t)cols) == 0 ||
					      cols < 1,
				      "%dx%d: the last line is not the key hint", rows, cols);
			if (rows >= 20 && rows < 50 && cols >= 60)
				ck_assert_ptr_nonnull(find(f, "more processes", NULL));
		}
	json_decref(a);
	json_decref(b);
	free(f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("top_view");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_rate);
	tcase_add_test(tc, test_sparkline_ascii);
	tcase_add_test(tc, test_sparkline_wraps_and_utf8);
	tcase_add_test(tc, test_frame_content);
	tcase_add_test(tc, test_frame_alerts_and_restart);
	tcase_add_test(tc, test_frame_fits_any_window);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(suite)
