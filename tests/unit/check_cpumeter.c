/*
 * check_cpumeter.c - the benchmarks' CPU meter: which class a process's
 * time goes to (cpumeter_classify), over every combination of what the
 * sampler can know of a process, against the rules cpumeter.h states; and
 * the name a backend's time is reported under (cpumeter_conn_name), the
 * table of those names (cpumeter_conn_slot) and the order they are
 * reported in (cpumeter_conn_growth).
 */
#include "tests/bench/cpumeter.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

enum { SELF = 100, POSTMASTER = 200, OUTBOXD = 300, SIM = 400, BENCH = 500, OTHER = 900 };

static const struct cpumeter_rules rules = {
	.postmaster = POSTMASTER,
	.self = SELF,
	.n_groups = 3,
	.group = {OUTBOXD, SIM, BENCH},
	.group_class = {CM_OUTBOXD, CM_SIM, CM_BENCH},
};

/* Every process the sampler can describe: bit i of k sets one fact. */
static struct cpumeter_proc nth(unsigned k)
{
	static const pid_t pids[] = {SELF, POSTMASTER, 1234};
	static const pid_t ppids[] = {1, POSTMASTER, OUTBOXD};
	static const pid_t pgrps[] = {OUTBOXD, SIM, BENCH, OTHER};
	struct cpumeter_proc p;

	p.pid = pids[k % 3];
	k /= 3;
	p.ppid = ppids[k % 3];
	k /= 3;
	p.pgrp = pgrps[k % 4];
	k /= 4;
	p.pg_backend = k & 1;
	p.pg_our_db = k & 2;
	p.pg_no_db = k & 4;
	p.pg_observer = k & 8;
	return p;
}

#define N_PROCS (3 * 3 * 4 * 16)

START_TEST(test_cpumeter_never_counts_itself)
{
	for (unsigned k = 0; k < N_PROCS; k++) {
		struct cpumeter_proc p = nth(k);

		if (p.pid == SELF)
			ck_assert_int_eq(cpumeter_classify(&rules, &p), CM_NONE);
	}
}
END_TEST

START_TEST(test_cpumeter_backends_by_database)
{
	for (unsigned k = 0; k < N_PROCS; k++) {
		struct cpumeter_proc p = nth(k);
		enum cpumeter_class c = cpumeter_classify(&rules, &p);

		if (p.pid == SELF || p.pid == POSTMASTER || !p.pg_backend)
			continue;  /* the postmaster is never listed as a backend */
		if (p.pg_observer) /* the benchmark's own connection, whatever else */
			ck_assert_int_eq(c, CM_PG_OBSERVER);
		else if (p.pg_our_db)
			ck_assert_int_eq(c, CM_PG);
		else if (p.ppid == POSTMASTER && !p.pg_no_db) /* another database's */
			ck_assert_int_eq(c, CM_NONE);
		else if (p.ppid == POSTMASTER) /* WAL writer, checkpointer... */
			ck_assert_int_eq(c, CM_PG_SERVER);
	}
}
END_TEST

START_TEST(test_cpumeter_server_processes)
{
	for (unsigned k = 0; k < N_PROCS; k++) {
		struct cpumeter_proc p = nth(k);
		enum cpumeter_class c = cpumeter_classify(&rules, &p);

		if (p.pid == SELF || p.pg_observer || p.pg_our_db)
			continue;
		if (p.pid == POSTMASTER)
			ck_assert_int_eq(c, CM_PG_SERVER);
		else if (p.ppid == POSTMASTER && !p.pg_backend) /* not listed (yet): unknown */
			ck_assert_int_eq(c, CM_NONE);
		/* only the postmaster and the server processes it lists are the server's */
		if (c == CM_PG_SERVER)
			ck_assert(p.pid == POSTMASTER ||
				  (p.ppid == POSTMASTER && p.pg_backend && p.pg_no_db));
	}
}
END_TEST

START_TEST(test_cpumeter_groups)
{
	for (unsigned k = 0; k < N_PROCS; k++) {
		struct cpumeter_proc p = nth(k);
		enum cpumeter_class c = cpumeter_classify(&rules, &p);

		if (p.pid == SELF || p.pg_observer || p.pg_our_db || p.pid == POSTMASTER ||
		    p.ppid == POSTMASTER)
			continue;
		/* anything else counts by its process group, or not at all */
		switch (p.pgrp) {
		case OUTBOXD:
			ck_assert_int_eq(c, CM_OUTBOXD);
			break;
		case SIM:
			ck_assert_int_eq(c, CM_SIM);
			break;
		case BENCH:
			ck_assert_int_eq(c, CM_BENCH);
			break;
		default:
			ck_assert_int_eq(c, CM_NONE);
		}
	}
}
END_TEST

/* Without a known postmaster (0 or -1) no process is the server's. */
START_TEST(test_cpumeter_unknown_postmaster)
{
	struct cpumeter_rules r = rules;

	for (pid_t pm = -1; pm <= 0; pm++) {
		r.postmaster = pm;
		for (unsigned k = 0; k < N_PROCS; k++) {
			struct cpumeter_proc p = nth(k);

			p.ppid = p.ppid == POSTMASTER ? pm : p.ppid;
			ck_assert_int_ne(cpumeter_classify(&r, &p), CM_PG_SERVER);
		}
	}
}
END_TEST

/* Every connection outboxd names, and names that are not its own. */
START_TEST(test_cpumeter_conn_names)
{
	static const char *const cases[][2] = {
		{"outboxd-worker/control", "worker/control"},
		{"outboxd-worker/data1", "worker/data"},
		{"outboxd-worker/data3", "worker/data"},
		{"outboxd-worker/data", "worker/data"}, /* no number: its own name */
		{"outboxd-worker/datax", "worker/datax"},
		{"outboxd-worker/ahead", "worker/ahead"},
		{"outboxd-worker/express", "worker/express"},
		{"outboxd-worker-0", "worker/relay"},
		{"outboxd-worker-12", "worker/relay"},
		{"outboxd-worker-", "worker-"},
		{"outboxd-worker-1a", "worker-1a"},
		{"outboxd-oracle", "oracle"},
		{"outboxd-lane-watch", "lane-watch"},
		{"outboxd-follower", "follower"},
		{"outboxd-archiver", "archiver"},
		{"outboxd-lanes-vacuum", "lanes-vacuum"},
		{"outboxd-gateway", "gateway"},
		{"outboxd-gateway-api", "gateway"},
		{"outboxd-", "other"},
		{"outboxd", "other"},
		{"pgbench", "other"},
		{"psql", "other"},
		{"", "unnamed"},
	};
	char out[CPUMETER_CONN_NAME];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cpumeter_conn_name(cases[i][0], out, sizeof(out));
		ck_assert_msg(!strcmp(out, cases[i][1]), "%s: got %s, want %s", cases[i][0], out,
			      cases[i][1]);
	}
	cpumeter_conn_name(NULL, out, sizeof(out));
	ck_assert_str_eq(out, "unnamed");
	/* bounded: a long name is cut, never overrun */
	char small[6] = "xxxxx";
	cpumeter_conn_name("outboxd-lanes-vacuum", small, sizeof(small));
	ck_assert_str_eq(small, "lanes");
	cpumeter_conn_name("outboxd-oracle", small, 0);
	ck_assert_str_eq(small, "lanes");
}
END_TEST

/* Names past the table's room go to "other", which always has a slot. */
START_TEST(test_cpumeter_conn_slots)
{
	struct cpumeter_conns t = {0};
	char name[CPUMETER_CONN_NAME];

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		ck_assert_int_eq(cpumeter_conn_slot(&t, name),
				 i < CPUMETER_CONNS - 1 ? i : CPUMETER_CONNS - 1);
	}
	ck_assert_int_eq(t.n, CPUMETER_CONNS);
	ck_assert_str_eq(t.name[CPUMETER_CONNS - 1], "other");
	ck_assert_int_eq(cpumeter_conn_slot(&t, "other"), CPUMETER_CONNS - 1);
	for (int i = 0; i < 20; i++) { /* a name keeps its slot */
		snprintf(name, sizeof(name), "c%d", i);
		ck_assert_int_eq(cpumeter_conn_slot(&t, name),
				 i < CPUMETER_CONNS - 1 ? i : CPUMETER_CONNS - 1);
		ck_assert_int_eq(t.n, CPUMETER_CONNS);
	}

	/* "other" seen first: the names still get the rest of the room */
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(cpumeter_conn_slot(&t, "other"), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		ck_assert_int_eq(cpumeter_conn_slot(&t, name), i < CPUMETER_CONNS - 2 ? i + 1 : 0);
	}
	ck_assert_int_le(t.n, CPUMETER_CONNS);

	/* a table this function did not build (full, no "other") */
	memset(&t, 0, sizeof(t));
	t.n = CPUMETER_CONNS;
	for (int i = 0; i < CPUMETER_CONNS; i++)
		snprintf(t.name[i], sizeof(t.name[i]), "x%d", i);
	ck_assert_int_eq(cpumeter_conn_slot(&t, "y"), -1);
	ck_assert_int_eq(cpumeter_conn_slot(&t, "x3"), 3);
}
END_TEST

/* Largest growth first; a slot that did not grow, or shrank, is left out. */
START_TEST(test_cpumeter_conn_growth)
{
	const double a[] = {1, 2, 3, 7};
	const double b[] = {1, 5, 2.5, 10, 4, 0};
	int order[CPUMETER_CONNS];
	double grew[CPUMETER_CONNS];
	int n = cpumeter_conn_growth(a, 4, b, 6, order, grew);

	/* slot 0 did not grow, 2 shrank, 5 is new with nothing */
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(order[0], 4); /* new, 4 */
	ck_assert_int_eq(order[1], 1); /* +3 */
	ck_assert_int_eq(order[2], 3); /* +3, after 1: ties keep slot order */
	ck_assert(grew[0] == 4 && grew[1] == 3 && grew[2] == 3);
	ck_assert_int_eq(cpumeter_conn_growth(a, 4, b, 0, order, grew), 0);
	ck_assert_int_eq(cpumeter_conn_growth(NULL, 0, b, 2, order, grew), 2);
	ck_assert(order[0] == 1 && grew[0] == 5 && order[1] == 0 && grew[1] == 1);
}
END_TEST

static Suite *cpumeter_suite(void)
{
	Suite *s = suite_create("cpumeter");
	TCase *tc = tcase_create("classify");

	tcase_add_test(tc, test_cpumeter_never_counts_itself);
	tcase_add_test(tc, test_cpumeter_backends_by_database);
	tcase_add_test(tc, test_cpumeter_server_processes);
	tcase_add_test(tc, test_cpumeter_groups);
	tcase_add_test(tc, test_cpumeter_unknown_postmaster);
	tcase_add_test(tc, test_cpumeter_conn_names);
	tcase_add_test(tc, test_cpumeter_conn_slots);
	tcase_add_test(tc, test_cpumeter_conn_growth);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(cpumeter_suite)
