/*
 * check_lifecycle.c - every (from, to) pair of the state machine against an
 * expectation written here independently of the table in lifecycle.c.
 */
#include "common/lifecycle.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

struct move {
	const char *from, *to, *event;
};

/* The legal moves, spelled out by name (the diagram in common/lifecycle.h). */
static const struct move legal[] = {
	{"PENDING", "SUBMITTED", "SUBMITTED"},    {"PENDING", "PENDING", "DEFERRED"},
	{"PENDING", "FAILED", "FAILED"},          {"PENDING", "CANCELLED", "CANCELLED"},
	{"SUBMITTED", "SUBMITTED", "FEE_BUMPED"}, {"SUBMITTED", "CONFIRMED", "CONFIRMED"},
	{"SUBMITTED", "FAILED", "FAILED"},        {"SUBMITTED", "PENDING", "RETRY_SCHEDULED"},
	{"FAILED", "PENDING", "ADMIN_RETRY"},     {"PENDING", "HELD", "HELD"},
	{"SUBMITTED", "HELD", "HELD"},            {"FAILED", "HELD", "HELD"},
	{"CANCELLED", "HELD", "HELD"},            {"HELD", "CONFIRMED", "RESOLVED"},
	{"HELD", "FAILED", "RESOLVED"},           {"HELD", "PENDING", "ADMIN_RETRY"},
};

static const struct move *find_legal(const char *from, const char *to)
{
	for (size_t i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
		if (!strcmp(legal[i].from, from) && !strcmp(legal[i].to, to))
			return &legal[i];
	return NULL;
}

/* Loop test: _i enumerates all 36 (from, to) pairs. */
START_TEST(test_lifecycle_every_pair)
{
	enum op_status from = (enum op_status)(_i / OP_STATUS_COUNT);
	enum op_status to = (enum op_status)(_i % OP_STATUS_COUNT);
	const struct move *m = find_legal(op_status_name(from), op_status_name(to));
	enum op_event ev = op_transition(from, to);

	if (m) {
		ck_assert_msg(ev != OP_EV_NONE, "%s -> %s should be legal", m->from, m->to);
		ck_assert_str_eq(op_event_name(ev), m->event);
		ck_assert(op_transition_allowed(from, to));
	} else {
		ck_assert_msg(ev == OP_EV_NONE, "%s -> %s should be illegal, got %s",
			      op_status_name(from), op_status_name(to), op_event_name(ev));
		ck_assert(!op_transition_allowed(from, to));
	}
}
END_TEST

START_TEST(test_lifecycle_terminal_states_have_no_exit)
{
	for (int to = 0; to < OP_STATUS_COUNT; to++) {
		ck_assert(!op_transition_allowed(OP_CONFIRMED, (enum op_status)to));
		/* CANCELLED leaves only to HELD (an envelope of it landed after all). */
		ck_assert_int_eq(op_transition_allowed(OP_CANCELLED, (enum op_status)to),
				 to == OP_HELD);
		/* FAILED leaves only through an admin retry, or to HELD likewise. */
		ck_assert_int_eq(op_transition_allowed(OP_FAILED, (enum op_status)to),
				 to == OP_PENDING || to == OP_HELD);
		/* HELD never goes back to the network by itself, and never to CANCELLED. */
		ck_assert(!op_transition_allowed(OP_HELD, OP_SUBMITTED));
		ck_assert(!op_transition_allowed(OP_HELD, OP_CANCELLED));
	}
	ck_assert(op_status_is_terminal(OP_CONFIRMED));
	ck_assert(op_status_is_terminal(OP_CANCELLED));
	ck_assert(op_status_is_terminal(OP_FAILED));
	ck_assert(!op_status_is_terminal(OP_PENDING));
	ck_assert(!op_status_is_terminal(OP_SUBMITTED));
	ck_assert(!op_status_is_terminal(OP_HELD));
}
END_TEST

START_TEST(test_lifecycle_submitted_never_cancelled)
{
	/* An envelope may be on its way: cancelling would hide a live payment. */
	ck_assert(!op_transition_allowed(OP_SUBMITTED, OP_CANCELLED));
	/* Confirmation only follows a submission. */
	ck_assert(!op_transition_allowed(OP_PENDING, OP_CONFIRMED));
}
END_TEST

START_TEST(test_lifecycle_names_roundtrip_and_bounds)
{
	enum op_status s;

	for (int i = 0; i < OP_STATUS_COUNT; i++) {
		ck_assert_int_eq(op_status_parse(op_status_name((enum op_status)i), &s), 0);
		ck_assert_int_eq(s, i);
	}
	ck_assert_int_eq(op_status_parse("pending", &s), -1);
	ck_assert_int_eq(op_status_parse("", &s), -1);
	ck_assert_ptr_null(op_status_name(OP_STATUS_COUNT));
	ck_assert_ptr_null(op_status_name((enum op_status) - 1));
	ck_assert_ptr_null(op_event_name(OP_EV_COUNT));
	ck_assert_int_eq(op_transition(OP_STATUS_COUNT, OP_PENDING), OP_EV_NONE);
	ck_assert_int_eq(op_transition(OP_PENDING, (enum op_status)99), OP_EV_NONE);
}
END_TEST

static Suite *lifecycle_suite(void)
{
	Suite *s = suite_create("lifecycle");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_lifecycle_every_pair, 0, OP_STATUS_COUNT * OP_STATUS_COUNT);
	tcase_add_test(tc, test_lifecycle_terminal_states_have_no_exit);
	tcase_add_test(tc, test_lifecycle_submitted_never_cancelled);
	tcase_add_test(tc, test_lifecycle_names_roundtrip_and_bounds);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(lifecycle_suite)
