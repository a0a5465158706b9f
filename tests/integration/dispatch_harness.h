/*
 * dispatch_harness.h - what the dispatch integration suites share: a fresh
 * database, stellar-sim with funded signer accounts, a keys file of
 * generated seeds (mode 0600), outboxd with the dispatch settings, enqueue
 * through outbox.enqueue, and the exactly-once verdict read from outside
 * (op status in PostgreSQL, stellar-sim's /debug/executions).
 */
#ifndef OUTBOX_TESTS_DISPATCH_HARNESS_H
#define OUTBOX_TESTS_DISPATCH_HARNESS_H

#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "tests/support/proc_harness.h"
#include "tests/support/pgtest.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DH_MAX_SIGNERS 1024

struct fixture {
	struct proc_harness h;
	struct pgtest_db db;
	PGconn *c;
	int n_signers;
	int workers; /* OUTBOX_WORKERS, 0 = 2 */
	int vshards; /* OUTBOX_VSHARDS, 0 = 8 */
	char signer[DH_MAX_SIGNERS][57];
};

static inline void write_keys(struct fixture *f)
{
	FILE *k = fopen(f->h.keys, "w");

	ck_assert_ptr_nonnull(k);
	for (int i = 0; i < f->n_signers; i++) {
		uint8_t seed[32];
		char s[STRKEY_BUF];
		struct stellar_keypair kp;

		randombytes_buf(seed, sizeof(seed));
		strkey_encode(STRKEY_SEED, seed, 32, s);
		ck_assert_int_eq(stellar_keypair_from_seed(&kp, seed, NULL), 0);
		stellar_keypair_address(&kp, f->signer[i]);
		stellar_keypair_release(&kp);
		fprintf(k, "%s\n", s);
		sodium_memzero(seed, sizeof(seed));
	}
	fclose(k);
	ck_assert_int_eq(chmod(f->h.keys, 0600), 0);
}

/* Create (or reset) every signer's account in the sim, through a file (any size). */
static inline void fund(struct fixture *f)
{
	char path[200], cmd[600];
	FILE *o;

	snprintf(path, sizeof(path), "%s/accounts.json", f->h.dir);
	o = fopen(path, "w");
	ck_assert_ptr_nonnull(o);
	fprintf(o, "{\"accounts\": [");
	for (int i = 0; i < f->n_signers; i++)
		fprintf(o, "%s{\"id\": \"%s\", \"seq\": \"%d\", \"balance\": \"1000000000000\"}",
			i ? "," : "", f->signer[i], 1000 * (i + 1));
	fprintf(o, "]}");
	fclose(o);
	snprintf(cmd, sizeof(cmd),
		 "curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "
		 "--data @%s http://127.0.0.1:%d/debug/accounts",
		 path, f->h.sim_port);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* Database, sim and funded accounts; outboxd not yet. */
static inline void prepare(struct fixture *f, const char *sim_args)
{
	if (!f->n_signers)
		f->n_signers = 4;
	pgtest_setup(&f->db, f->vshards ? f->vshards : 8);
	f->c = pgtest_connect(&f->db);
	ph_setup(&f->h, "disp");
	write_keys(f);
	ph_start_sim(&f->h, sim_args);
	fund(f);
}

/* Start outboxd for harness h (f->h, or a second instance sharing f's sim and database). */
static inline void launch_as(struct fixture *f, struct proc_harness *h,
			     const char *const *env_extra)
{
	static char url[2200], workers[32], vshards[32];
	const char *env[24];
	int n = 0;

	snprintf(url, sizeof(url), "OUTBOX_DATABASE_URL=%s", f->db.conninfo);
	snprintf(workers, sizeof(workers), "OUTBOX_WORKERS=%d", f->workers ? f->workers : 2);
	env[n++] = url;
	snprintf(vshards, sizeof(vshards), "OUTBOX_VSHARDS=%d", f->vshards ? f->vshards : 8);
	env[n++] = vshards;
	env[n++] = workers;
	env[n++] = "OUTBOX_DISPATCH_INTERVAL_MS=200";
	env[n++] = "OUTBOX_BACKOFF_BASE_MS=100";
	env[n++] = "OUTBOX_BACKOFF_MAX_MS=1000";
	for (; env_extra && *env_extra && n < 23; env_extra++)
		env[n++] = *env_extra;
	env[n] = NULL;
	h->sim_port = f->h.sim_port;
	ph_start_outboxd(h, env);
}

static inline void launch(struct fixture *f, const char *const *env_extra)
{
	launch_as(f, &f->h, env_extra);
}

static inline void start(struct fixture *f, const char *sim_args, const char *const *env_extra)
{
	prepare(f, sim_args);
	launch(f, env_extra);
}

/* One TCase per test, named for CK_RUN_CASE=<name>, with its own timeout. */
static inline void dh_add_case(Suite *s, const char *name, const TTest *t, int timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, timeout_s);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

static inline void stop(struct fixture *f)
{
	PQfinish(f->c);
	ph_teardown(&f->h);
	pgtest_teardown(&f->db);
}

static inline void enqueue(struct fixture *f, const char *kind, const char *user, const char *rec,
			   int signer, const char *account, const char *amount, const char *prio)
{
	char payload[256];
	const char *p[6];
	PGresult *r;

	if (account)
		snprintf(payload, sizeof(payload), "{\"account\": \"%s\", \"amount\": \"%s\"}",
			 account, amount);
	else
		snprintf(payload, sizeof(payload), "{\"amount\": \"%s\"}", amount);
	p[0] = kind, p[1] = user, p[2] = rec, p[3] = f->signer[signer], p[4] = payload, p[5] = prio;
	r = PQexecParams(f->c, "SELECT * FROM outbox.enqueue($1, $2, $3, $4, $5::jsonb, $6)", 6,
			 NULL, p, NULL, NULL, 0);
	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "enqueue: %s", PQerrorMessage(f->c));
	PQclear(r);
}

/*
 * Wait until no op is PENDING or SUBMITTED; false on timeout. Each look is
 * one probe of each status's partial index: a count over the table was a
 * sequential scan of every op ten times a second, CPU the benchmarks'
 * observer took from the run it measured.
 */
static inline int wait_terminal(struct fixture *f, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;
	int done = 0;

	pgtest_exec(f->c, "SET enable_seqscan = off");
	do {
		if (pgtest_scalar(f->c, "SELECT (EXISTS (SELECT 1 FROM outbox.ops WHERE status = "
					"'PENDING') OR EXISTS (SELECT 1 FROM outbox.ops WHERE "
					"status = 'SUBMITTED'))::int") == 0) {
			done = 1;
			break;
		}
		ph_sleep_ms(100);
	} while (ph_now_ms() < end);
	pgtest_exec(f->c, "RESET enable_seqscan");
	return done;
}

/* GET path from the sim as JSON (a new reference). */
static inline json_t *sim_get(struct fixture *f, const char *path)
{
	char cmd[256];
	FILE *p;
	json_t *j;
	json_error_t e;

	snprintf(cmd, sizeof(cmd), "curl -fsS http://127.0.0.1:%d%s", f->h.sim_port, path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	j = json_loadf(p, 0, &e);
	pclose(p);
	ck_assert_msg(j != NULL, "%s: %s", path, e.text);
	return j;
}

static inline json_t *executions(struct fixture *f)
{
	return sim_get(f, "/debug/executions");
}

/*
 * From the outside: every op that ran executed exactly once - CONFIRMED ops,
 * and HELD ones when held_ran (held because their transaction consumed its
 * sequence number) - no other op executed, nothing else executed, and no
 * account ever had two transactions pending at once.
 */
static inline void check_executions(struct fixture *f, bool held_ran)
{
	json_t *ex = executions(f), *by = json_object_get(ex, "by_ref"),
	       *mp = json_object_get(ex, "max_pending_per_account"), *v;
	PGresult *r = PQexec(f->c, "SELECT idempotency_key, status FROM outbox.ops");
	const char *k;
	int ran = 0;

	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	for (int i = 0; i < PQntuples(r); i++) {
		uint8_t ref[32];
		char hex[65];
		json_t *n;
		const char *st = PQgetvalue(r, i, 1);

		idempotency_op_ref(PQgetvalue(r, i, 0), ref);
		sodium_bin2hex(hex, sizeof(hex), ref, 32);
		n = json_object_get(by, hex);
		if (!strcmp(st, "CONFIRMED") || (held_ran && !strcmp(st, "HELD"))) {
			ran++;
			ck_assert_msg(n && json_integer_value(n) == 1,
				      "%s (%s) executed %lld times", PQgetvalue(r, i, 0), st,
				      n ? json_integer_value(n) : 0);
		} else {
			ck_assert_msg(!n || json_integer_value(n) == 0, "%s (%s) executed",
				      PQgetvalue(r, i, 0), st);
		}
	}
	ck_assert_int_eq((int)json_object_size(by), ran);
	json_object_foreach(mp, k, v) ck_assert_msg(
		json_integer_value(v) <= 1, "%s had %lld pending", k, json_integer_value(v));
	PQclear(r);
	json_decref(ex);
}

/* Every CONFIRMED op executed exactly once, no other op executed, <= 1 pending per account. */
static inline void check_exactly_once(struct fixture *f)
{
	check_executions(f, false);
}

/* A counter summed over every process of the instance (outboxctl stats). */
static inline long long counter_sum(struct fixture *f, const char *name)
{
	json_t *s = ph_ctl(&f->h, "stats", NULL), *row;
	long long n = 0;
	size_t i;

	ck_assert_ptr_nonnull(s);
	json_array_foreach(json_object_get(s, "processes"), i, row) n += ph_counter(row, name);
	json_decref(s);
	return n;
}

#endif
