/* check_priority.c - dispatch order: priority, then age, then id; no starvation. */
#include "common/priority.h"

#include <check.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

START_TEST(test_priority_defaults_by_kind)
{
	ck_assert_int_eq(op_kind_default_priority(OP_KIND_WITHDRAW), OP_PRIO_CRITICAL);
	ck_assert_int_eq(op_kind_default_priority(OP_KIND_DEPOSIT), OP_PRIO_NORMAL);
	ck_assert_int_eq(op_kind_default_priority(OP_KIND_REFERRAL_REWARD), OP_PRIO_NORMAL);
	ck_assert_int_eq(op_kind_default_priority(OP_KIND_REBALANCE), OP_PRIO_LOW);
}
END_TEST

START_TEST(test_priority_names)
{
	enum op_priority p;
	enum op_kind k;

	ck_assert_int_eq(op_priority_parse("CRITICAL", &p), 0);
	ck_assert_int_eq(p, OP_PRIO_CRITICAL);
	ck_assert_int_eq(op_priority_parse("LOW", &p), 0);
	ck_assert_int_eq(p, OP_PRIO_LOW);
	ck_assert_int_eq(op_priority_parse("critical", &p), -1);
	ck_assert_int_eq(op_priority_parse("URGENT", &p), -1);
	ck_assert_int_eq(op_kind_parse("REFERRAL_REWARD", &k), 0);
	ck_assert_int_eq(k, OP_KIND_REFERRAL_REWARD);
	ck_assert_int_eq(op_kind_parse("TRANSFER", &k), -1);
	ck_assert_str_eq(op_kind_name(OP_KIND_WITHDRAW), "WITHDRAW");
	ck_assert_ptr_null(op_kind_name(OP_KIND_COUNT));
	ck_assert_ptr_null(op_priority_name(OP_PRIO_COUNT));
}
END_TEST

START_TEST(test_priority_order_rules)
{
	struct op_order_key crit_new = {OP_PRIO_CRITICAL, 5000, 9};
	struct op_order_key norm_old = {OP_PRIO_NORMAL, 1, 1};
	struct op_order_key norm_older = {OP_PRIO_NORMAL, 0, 2};
	struct op_order_key norm_same_time_lower_id = {OP_PRIO_NORMAL, 1, 0};
	struct op_order_key low_oldest = {OP_PRIO_LOW, -100, 0};

	ck_assert_int_lt(op_order_cmp(&crit_new, &norm_old), 0);
	ck_assert_int_gt(op_order_cmp(&norm_old, &crit_new), 0);
	ck_assert_int_lt(op_order_cmp(&norm_older, &norm_old), 0);
	ck_assert_int_lt(op_order_cmp(&norm_same_time_lower_id, &norm_old), 0);
	ck_assert_int_lt(op_order_cmp(&norm_old, &low_oldest), 0);
	ck_assert_int_eq(op_order_cmp(&norm_old, &norm_old), 0);
}
END_TEST

/*
 * The starvation case: one CRITICAL op enqueued after 100 000 NORMAL and LOW
 * ops, all older than it, sorts first; and the rest keep NORMAL before LOW,
 * each in creation order.
 */
START_TEST(test_priority_critical_after_100k_sorts_first)
{
	const int n = 100000;
	struct op_order_key *ops = calloc((size_t)n + 1, sizeof(*ops));

	ck_assert_ptr_nonnull(ops);
	srand(12345);
	for (int i = 0; i < n; i++) {
		ops[i].priority = (rand() & 1) ? OP_PRIO_NORMAL : OP_PRIO_LOW;
		ops[i].created_us = 1000 + i;
		ops[i].id = i + 1;
	}
	ops[n] = (struct op_order_key){OP_PRIO_CRITICAL, 1000 + n + 1, n + 1};
	qsort(ops, (size_t)n + 1, sizeof(*ops), op_order_qsort_cmp);

	ck_assert_int_eq(ops[0].priority, OP_PRIO_CRITICAL);
	ck_assert_int_eq(ops[0].id, n + 1);
	for (int i = 1; i < n; i++) {
		ck_assert_int_le(ops[i].priority, ops[i + 1].priority);
		if (ops[i].priority == ops[i + 1].priority)
			ck_assert_int_lt(ops[i].created_us, ops[i + 1].created_us);
	}
	free(ops);
}
END_TEST

static Suite *priority_suite(void)
{
	Suite *s = suite_create("priority");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_priority_defaults_by_kind);
	tcase_add_test(tc, test_priority_names);
	tcase_add_test(tc, test_priority_order_rules);
	tcase_add_test(tc, test_priority_critical_after_100k_sorts_first);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(priority_suite)
