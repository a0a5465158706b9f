/*
 * check_enqueue.c - the enqueue contract against a real PostgreSQL, through
 * the C client (common/enqueue.h): atomic with the caller's transaction,
 * idempotent under concurrency, conflicts refused, every bad input refused
 * with the field named and nothing written, vshard identical in C and SQL.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/enqueue.h"
#include "common/vshard.h"
#include "tests/support/pgtest.h"

/* StrKey test vectors (common/stellar/README.md, Test vectors). */
#define G1 "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
#define G2 "GA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQHES5"
#define G3 "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH"
#define C2 "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"
#define S1 "SBU2RRGLXH3E5CQHTD3ODLDF2BWDCYUSSBLLZ5GNW7JXHDIYKXZWHOKR"
/* G1 with its last character changed: checksum no longer matches */
#define G1_BADCRC "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGA"
/* version byte 55, not an account's: must be rejected */
#define G_BADVER "G47QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVP2I"
#define I128_MAX "170141183460469231731687303715884105727"

#define PAY(acct, amount) "{\"account\": \"" acct "\", \"amount\": \"" amount "\"}"
#define REF(acct, amount, conv, leg)                                                               \
	"{\"account\": \"" acct "\", \"amount\": \"" amount "\", \"conversion_id\": \"" conv       \
	"\", \"leg\": \"" leg "\"}"

static struct pgtest_db db;

static void setup(void)
{
	pgtest_setup(&db, 0);
}

static void teardown(void)
{
	pgtest_teardown(&db);
}

static int enq(PGconn *c, const char *kind, const char *user, const char *brid, const char *signer,
	       const char *payload, const char *prio, struct outbox_enqueued *out,
	       struct outbox_error *err)
{
	struct outbox_intent in = {kind, user, brid, signer, payload, prio};

	return outbox_enqueue(c, &in, out, err);
}

static long long count_rows(PGconn *c)
{
	return pgtest_scalar(c, "SELECT (SELECT count(*) FROM outbox.ops) * 1000000 + "
				"(SELECT count(*) FROM outbox.events)");
}

START_TEST(test_creates_op_and_event)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	char sql[512];

	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w-17", G1, PAY(G2, "2500000"), NULL, &out, &err),
			 0);
	ck_assert(out.created);
	ck_assert_int_gt(out.id, 0);
	ck_assert_str_eq(out.idempotency_key, "WITHDRAW:u1:w-17");
	ck_assert_str_eq(out.status, "PENDING");
	ck_assert_str_eq(out.priority, "CRITICAL");

	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM outbox.ops WHERE id = %lld AND kind = 'WITHDRAW' "
		 "AND user_id = 'u1' AND business_record_id = 'w-17' AND signer = '%s' "
		 "AND vshard = %d AND priority = 0 AND status = 'PENDING' AND attempts = 0 "
		 "AND fee_bumps = 0 AND payload = '%s'::jsonb AND next_attempt_at = created_at "
		 "AND confirmed_at IS NULL AND tx_hash IS NULL",
		 (long long)out.id, G1, outbox_vshard_of(G1, strlen(G1), 64), PAY(G2, "2500000"));
	ck_assert_int_eq(pgtest_scalar(c, sql), 1);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM outbox.events WHERE op_id = %lld AND seq = 1 "
		 "AND type = 'ENQUEUED' AND from_status IS NULL AND to_status = 'PENDING' "
		 "AND chain_seq IS NULL AND body->>'idempotency_key' = 'WITHDRAW:u1:w-17' "
		 "AND body->>'priority' = 'CRITICAL'",
		 (long long)out.id);
	ck_assert_int_eq(pgtest_scalar(c, sql), 1);
	ck_assert_int_eq(count_rows(c), 1000001);
	PQfinish(c);
}
END_TEST

START_TEST(test_default_and_explicit_priorities)
{
	static const struct {
		const char *kind, *payload, *prio, *want;
		int rank;
	} cases[] = {
		{"WITHDRAW", PAY(G2, "1"), NULL, "CRITICAL", 0},
		{"DEPOSIT", PAY(G2, "1"), NULL, "NORMAL", 1},
		{"REFERRAL_REWARD", REF(G2, "1", "conv-1", "referrer"), NULL, "NORMAL", 1},
		{"REBALANCE", "{\"amount\": \"1\"}", NULL, "LOW", 2},
		{"DEPOSIT", PAY(G2, "2"), "CRITICAL", "CRITICAL", 0},
		{"WITHDRAW", PAY(G2, "2"), "LOW", "LOW", 2},
		{"REBALANCE", "{\"amount\": \"2\"}", "NORMAL", "NORMAL", 1},
	};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	char brid[32], sql[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(brid, sizeof(brid), "r%zu", i);
		ck_assert_msg(enq(c, cases[i].kind, "u1",
				  strcmp(cases[i].kind, "REFERRAL_REWARD") ? brid : NULL, G1,
				  cases[i].payload, cases[i].prio, &out, &err) == 0,
			      "case %zu: %s", i, err.msg);
		ck_assert_str_eq(out.priority, cases[i].want);
		snprintf(sql, sizeof(sql), "SELECT priority FROM outbox.ops WHERE id = %lld",
			 (long long)out.id);
		ck_assert_int_eq(pgtest_scalar(c, sql), cases[i].rank);
	}
	PQfinish(c);
}
END_TEST

START_TEST(test_same_key_returns_existing)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued a, b;
	PGconn *c = pgtest_connect(&db);

	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "d1", G1, PAY(G2, "10"), NULL, &a, &err), 0);
	/* Same content, keys of the JSON in another order: the same intent. */
	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "d1", G1,
			     "{\"amount\":\"10\",   \"account\":\"" G2 "\"}", NULL, &b, &err),
			 0);
	ck_assert(a.created);
	ck_assert(!b.created);
	ck_assert_int_eq(a.id, b.id);
	ck_assert_str_eq(b.idempotency_key, "DEPOSIT:u1:d1");
	ck_assert_str_eq(b.status, "PENDING");
	ck_assert_str_eq(b.priority, "NORMAL");
	/* A later priority does not re-prioritize an existing op: it is returned as is. */
	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "d1", G1, PAY(G2, "10"), "CRITICAL", &b, &err), 0);
	ck_assert(!b.created);
	ck_assert_str_eq(b.priority, "NORMAL");
	/* The returned status is the op's current one. */
	pgtest_exec(c, "UPDATE outbox.ops SET status = 'SUBMITTED'");
	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "d1", G1, PAY(G2, "10"), NULL, &b, &err), 0);
	ck_assert_str_eq(b.status, "SUBMITTED");
	ck_assert_int_eq(count_rows(c), 1000001);
	PQfinish(c);
}
END_TEST

START_TEST(test_same_key_other_content_conflicts)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);

	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "100"), NULL, &out, &err), 0);

	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "200"), NULL, &out, &err),
			 OUTBOX_ECONFLICT);
	ck_assert_str_eq(err.field, "payload.amount");
	ck_assert_msg(strstr(err.msg, "'WITHDRAW:u1:w1'") && strstr(err.msg, "payload.amount"),
		      "%s", err.msg);

	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G3, PAY(G2, "100"), NULL, &out, &err),
			 OUTBOX_ECONFLICT);
	ck_assert_str_eq(err.field, "signer");

	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G3, PAY(G1, "7"), NULL, &out, &err),
			 OUTBOX_ECONFLICT);
	ck_assert_msg(strstr(err.msg, "signer, payload.account, payload.amount"), "%s", err.msg);

	/* Inside a transaction the conflict aborts it; nothing of it remains. */
	pgtest_exec(c, "BEGIN");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "999"), NULL, &out, &err),
			 OUTBOX_ECONFLICT);
	ck_assert_int_eq(PQtransactionStatus(c), PQTRANS_INERROR);
	pgtest_exec(c, "ROLLBACK");

	ck_assert_int_eq(count_rows(c), 1000001);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT (payload->>'amount')::bigint FROM outbox.ops"),
			 100);
	PQfinish(c);
}
END_TEST

START_TEST(test_referral_record_id)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued a, b;
	PGconn *c = pgtest_connect(&db);

	ck_assert_int_eq(enq(c, "REFERRAL_REWARD", "u1", NULL, G1,
			     REF(G2, "5", "conv-9", "referrer"), NULL, &a, &err),
			 0);
	ck_assert_str_eq(a.idempotency_key, "REFERRAL_REWARD:u1:conv-9:referrer");
	/* Passing the derived id explicitly is the same intent. */
	ck_assert_int_eq(enq(c, "REFERRAL_REWARD", "u1", "conv-9:referrer", G1,
			     REF(G2, "5", "conv-9", "referrer"), NULL, &b, &err),
			 0);
	ck_assert(!b.created);
	ck_assert_int_eq(a.id, b.id);
	/* The other leg of the same conversion is another op. */
	ck_assert_int_eq(enq(c, "REFERRAL_REWARD", "u1", NULL, G1,
			     REF(G2, "5", "conv-9", "referee"), NULL, &b, &err),
			 0);
	ck_assert(b.created);
	ck_assert_int_ne(a.id, b.id);
	PQfinish(c);
}
END_TEST

/* The business row and the intent commit or roll back together. */
START_TEST(test_atomic_with_business_row)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	PGconn *other = pgtest_connect(&db);

	pgtest_exec(c, "CREATE TABLE withdrawals (id text PRIMARY KEY, amount bigint)");

	pgtest_exec(c, "BEGIN");
	pgtest_exec(c, "INSERT INTO withdrawals VALUES ('w1', 100)");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "100"), NULL, &out, &err), 0);
	ck_assert_int_eq(PQtransactionStatus(c), PQTRANS_INTRANS); /* no COMMIT of its own */
	ck_assert_int_eq(count_rows(other), 0);                    /* not visible before COMMIT */
	pgtest_exec(c, "ROLLBACK");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM withdrawals"), 0);
	ck_assert_int_eq(count_rows(c), 0);

	pgtest_exec(c, "BEGIN");
	pgtest_exec(c, "INSERT INTO withdrawals VALUES ('w1', 100)");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "100"), NULL, &out, &err), 0);
	ck_assert(out.created);
	pgtest_exec(c, "COMMIT");
	ck_assert_int_eq(pgtest_scalar(other, "SELECT count(*) FROM withdrawals"), 1);
	ck_assert_int_eq(count_rows(other), 1000001);

	/* A failed enqueue poisons the transaction: the business row goes too. */
	pgtest_exec(c, "BEGIN");
	pgtest_exec(c, "INSERT INTO withdrawals VALUES ('w2', 5)");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w2", G1, PAY(G2, "0"), NULL, &out, &err),
			 OUTBOX_EINVAL);
	pgtest_exec(c, "ROLLBACK");
	ck_assert_int_eq(pgtest_scalar(other, "SELECT count(*) FROM withdrawals"), 1);
	ck_assert_int_eq(count_rows(other), 1000001);
	PQfinish(other);
	PQfinish(c);
}
END_TEST

/*
 * Eight processes, each with its own connection, enqueue the same key at
 * the same moment (released together through a pipe), each holding its
 * transaction open a little so the others queue on the unique index.
 */
START_TEST(test_concurrent_same_key)
{
	enum { N = 8 };
	int go[2], res[2];
	long long ids[N];
	int created = 0;
	pid_t pids[N];
	PGconn *c;

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(res), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct outbox_error err = OUTBOX_ERROR_INIT;
			struct outbox_enqueued out = {0};
			PGconn *mine = PQconnectdb(db.conninfo);
			long long rec[2] = {-1, 0};
			char b;

			close(go[1]);
			if (PQstatus(mine) == CONNECTION_OK) {
				PQclear(PQexec(mine, "BEGIN"));
				if (read(go[0], &b, 1) < 0) /* EOF when the parent closes go[1] */
					_exit(3);
				if (enq(mine, "WITHDRAW", "u1", "race", G1, PAY(G2, "42"), NULL,
					&out, &err) == 0) {
					PQclear(PQexec(mine, "SELECT pg_sleep(0.05)"));
					PGresult *r = PQexec(mine, "COMMIT");
					if (PQresultStatus(r) == PGRES_COMMAND_OK)
						rec[0] = out.id, rec[1] = out.created;
					PQclear(r);
				} else {
					fprintf(stderr, "child %d: %s\n", i, err.msg);
				}
			}
			if (write(res[1], rec, sizeof(rec)) != sizeof(rec))
				_exit(2);
			PQfinish(mine);
			_exit(0);
		}
	}
	close(go[0]);
	close(res[1]);
	usleep(300 * 1000); /* let every child connect and BEGIN */
	close(go[1]);
	for (int i = 0; i < N; i++) {
		long long rec[2];
		int status;

		ck_assert_int_eq(read(res[0], rec, sizeof(rec)), sizeof(rec));
		ck_assert_msg(rec[0] > 0, "an enqueue failed");
		ids[i] = rec[0];
		created += (int)rec[1];
		ck_assert_int_gt(waitpid(pids[i], &status, 0), 0);
	}
	close(res[0]);
	ck_assert_int_eq(created, 1);
	for (int i = 1; i < N; i++)
		ck_assert_int_eq(ids[i], ids[0]);
	c = pgtest_connect(&db);
	ck_assert_int_eq(count_rows(c), 1000001);
	PQfinish(c);
}
END_TEST

START_TEST(test_amount_edges_accepted)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);

	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "a", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	ck_assert_msg(enq(c, "DEPOSIT", "u1", "b", G1, PAY(G2, I128_MAX), NULL, &out, &err) == 0,
		      "%s", err.msg);
	ck_assert_msg(enq(c, "DEPOSIT", "u1", "c", G3, PAY(G3, "10"), "LOW", &out, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops"), 3);
	PQfinish(c);
}
END_TEST

/* vshard in C == vshard in SQL, for many signers and counts. */
START_TEST(test_vshard_c_equals_sql)
{
	static const int counts[] = {1, 2, 7, 64, 1000, 4096};
	PGconn *c = pgtest_connect(&db);
	char signer[57], n[16];
	const char *params[2] = {signer, n};

	for (uint32_t i = 0; i < 500; i++) {
		pgtest_account(i, signer);
		for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
			PGresult *r;

			snprintf(n, sizeof(n), "%d", counts[k]);
			r = PQexecParams(c, "SELECT outbox.vshard_of($1, $2::int)", 2, NULL, params,
					 NULL, NULL, 0);
			ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
			ck_assert_int_eq(atoi(PQgetvalue(r, 0, 0)),
					 outbox_vshard_of(signer, strlen(signer), counts[k]));
			PQclear(r);
		}
	}
	PQfinish(c);
}
END_TEST

/* The vshard an enqueue stores uses the deployment's count (here 16). */
START_TEST(test_enqueue_uses_deployment_vshards)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	static struct pgtest_db db16;
	PGconn *c;
	char signer[57], brid[16], payload[128], sql[128];

	pgtest_setup(&db16, 16);
	c = pgtest_connect(&db16);
	for (uint32_t i = 0; i < 40; i++) {
		pgtest_account(1000 + i, signer);
		snprintf(brid, sizeof(brid), "d%u", i);
		snprintf(payload, sizeof(payload), "{\"account\":\"%s\",\"amount\":\"1\"}", signer);
		ck_assert_msg(enq(c, "DEPOSIT", "u1", brid, signer, payload, NULL, &out, &err) == 0,
			      "%s", err.msg);
		snprintf(sql, sizeof(sql), "SELECT vshard FROM outbox.ops WHERE id = %lld",
			 (long long)out.id);
		ck_assert_int_eq(pgtest_scalar(c, sql),
				 outbox_vshard_of(signer, strlen(signer), 16));
	}
	PQfinish(c);
	pgtest_teardown(&db16);
}
END_TEST

/*
 * Wait up to ms for one outbox_wake notification on l; returns its payload
 * as an integer, or -1 when none came.
 */
static int wait_wake(PGconn *l, int ms)
{
	struct pollfd p = {PQsocket(l), POLLIN, 0};
	PGnotify *n;
	int v;

	for (;;) {
		ck_assert_int_eq(PQconsumeInput(l), 1);
		if ((n = PQnotifies(l))) {
			ck_assert_str_eq(n->relname, "outbox_wake");
			v = atoi(n->extra);
			PQfreemem(n);
			return v;
		}
		/* Any traffic restarts the wait; a listener gets only notifications. */
		if (poll(&p, 1, ms) <= 0)
			return -1;
	}
}

/* schema/0003_wakeup.sql: CRITICAL work notifies outbox_wake at commit. */
START_TEST(test_wakeup_for_critical_work)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	PGconn *l = pgtest_connect(&db);
	int shard = outbox_vshard_of(G1, strlen(G1), 64);

	ck_assert_int_ne(shard, outbox_vshard_of(G3, strlen(G3), 64));
	pgtest_exec(l, "LISTEN outbox_wake");

	pgtest_exec(c, "BEGIN");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	ck_assert_int_eq(wait_wake(l, 300), -1); /* nothing before COMMIT */
	pgtest_exec(c, "COMMIT");
	ck_assert_int_eq(wait_wake(l, 5000), shard);

	/* An idempotent repeat creates nothing and wakes no one. */
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w1", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	ck_assert(!out.created);
	/* NORMAL and LOW work is left to the sweep. */
	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "d1", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	ck_assert_int_eq(
		enq(c, "REBALANCE", "u1", "b1", G1, "{\"amount\": \"1\"}", NULL, &out, &err), 0);
	ck_assert_int_eq(wait_wake(l, 500), -1);
	/* Priority decides, not kind; the payload is the op's own vshard. */
	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "d2", G3, PAY(G2, "1"), "CRITICAL", &out, &err),
			 0);
	ck_assert_int_eq(wait_wake(l, 5000), outbox_vshard_of(G3, strlen(G3), 64));

	/* A rolled-back enqueue wakes no one. */
	pgtest_exec(c, "BEGIN");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "w2", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	pgtest_exec(c, "ROLLBACK");
	ck_assert_int_eq(wait_wake(l, 500), -1);

	/* A FAILED CRITICAL op retried to PENDING wakes; a backoff requeue does not. */
	pgtest_exec(c, "UPDATE outbox.ops SET status = 'FAILED' WHERE business_record_id = 'w1'");
	ck_assert_int_eq(wait_wake(l, 300), -1);
	pgtest_exec(c, "UPDATE outbox.ops SET status = 'PENDING' WHERE business_record_id = 'w1'");
	ck_assert_int_eq(wait_wake(l, 5000), shard);
	pgtest_exec(c,
		    "UPDATE outbox.ops SET status = 'SUBMITTED' WHERE business_record_id = 'w1'");
	pgtest_exec(
		c, "UPDATE outbox.ops SET status = 'PENDING', "
		   "next_attempt_at = now() + interval '1 minute' WHERE business_record_id = 'w1'");
	ck_assert_int_eq(wait_wake(l, 500), -1);
	PQfinish(l);
	PQfinish(c);
}
END_TEST

/*
 * Under REPEATABLE READ a racing enqueue of the same key whose row this
 * snapshot cannot see is a serialization failure (OUTBOX_EDB, SQLSTATE
 * 40001): the caller retries the transaction, never gets a second op.
 */
START_TEST(test_repeatable_read_race_is_retryable)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *a = pgtest_connect(&db);
	PGconn *b = pgtest_connect(&db);

	pgtest_exec(a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
	pgtest_exec(a, "SELECT count(*) FROM outbox.ops"); /* take the snapshot */
	ck_assert_int_eq(enq(b, "WITHDRAW", "u1", "rr", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	ck_assert_int_eq(enq(a, "WITHDRAW", "u1", "rr", G1, PAY(G2, "1"), NULL, &out, &err),
			 OUTBOX_EDB);
	ck_assert_msg(strstr(err.msg, "40001"), "%s", err.msg);
	pgtest_exec(a, "ROLLBACK");
	ck_assert_int_eq(enq(a, "WITHDRAW", "u1", "rr", G1, PAY(G2, "1"), NULL, &out, &err), 0);
	ck_assert(!out.created);
	ck_assert_int_eq(count_rows(a), 1000001);
	PQfinish(b);
	PQfinish(a);
}
END_TEST

/* SQLSTATE and column of a failing statement ("" when it succeeded). */
static void fails_with(PGconn *c, const char *sql, const char *state, const char *column)
{
	PGresult *r = PQexec(c, sql);
	const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	const char *col = PQresultErrorField(r, PG_DIAG_COLUMN_NAME);

	ck_assert_msg(st && !strcmp(st, state), "%s: SQLSTATE %s, want %s", sql, st ? st : "none",
		      state);
	ck_assert_msg(col && !strcmp(col, column), "%s: column %s, want %s", sql,
		      col ? col : "none", column);
	PQclear(r);
}

/*
 * schema/0005_hot_path.sql: the op's identity columns are checked by a
 * BEFORE INSERT trigger (the CHECK constraints it replaced ran on every
 * update) and frozen after enqueue. A direct INSERT that breaks a rule fails
 * with check_violation naming the column; changing an identity column of an
 * existing op fails with OB409; the dispatcher's own updates go through.
 */
START_TEST(test_identity_checked_on_insert_frozen_after)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	char sql[600];
	static const struct {
		const char *key, *user, *brid, *signer, *payload, *column;
	} bad[] = {
		{"DEPOSIT:u:1", "u\x01", "1", G1, "{}", "user_id"},
		{"DEPOSIT:a:b:1", "a:b", "1", G1, "{}", "user_id"},
		{"DEPOSIT:u:\t", "u", "\t", G1, "{}", "business_record_id"},
		{"DEPOSIT:u:1", "u", "1", "GSHORT", "{}", "signer"},
		{"DEPOSIT:u:1", "u", "1",
		 "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGz", "{}", "signer"},
		{"DEPOSIT:u:1", "u", "1",
		 "XA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ", "{}", "signer"},
		{"DEPOSIT:u:1", "u", "1", G1 "A", "{}", "signer"},
		{"DEPOSIT:u:1", "u", "1", G1, "{}", "vshard"},
		{"DEPOSIT:u:1", "u", "1", G1, "[1]", "payload"},
		{"DEPOSIT:u:2", "u", "1", G1, "{}", "idempotency_key"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO outbox.ops (idempotency_key, kind, priority, user_id, "
			 "business_record_id, signer, vshard, payload) VALUES ('%s', 'DEPOSIT', 1, "
			 "'%s', '%s', '%s', (outbox.vshard_of('%s') + %d) %% 64, '%s')",
			 bad[i].key, bad[i].user, bad[i].brid, bad[i].signer, bad[i].signer,
			 !strcmp(bad[i].column, "vshard"), bad[i].payload);
		fails_with(c, sql, "23514", bad[i].column);
	}
	ck_assert_int_eq(count_rows(c), 0);

	ck_assert_int_eq(enq(c, "DEPOSIT", "u1", "r1", G1, PAY(G2, "5"), NULL, &out, &err), 0);
	snprintf(sql, sizeof(sql),
		 "UPDATE outbox.ops SET payload = '" PAY(G2, "500") "' WHERE id = %lld",
		 (long long)out.id);
	fails_with(c, sql, "OB409", "payload");
	snprintf(sql, sizeof(sql), "UPDATE outbox.ops SET signer = '%s' WHERE id = %lld", G2,
		 (long long)out.id);
	fails_with(c, sql, "OB409", "signer");
	snprintf(sql, sizeof(sql), "UPDATE outbox.ops SET user_id = 'u2' WHERE id = %lld",
		 (long long)out.id);
	fails_with(c, sql, "OB409", "user_id");
	/* setting a column to its own value is no change; status updates pass */
	snprintf(sql, sizeof(sql),
		 "UPDATE outbox.ops SET signer = signer, status = 'SUBMITTED', attempts = 1 "
		 "WHERE id = %lld",
		 (long long)out.id);
	pgtest_exec(c, sql);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM outbox.ops WHERE id = %lld AND payload = '" PAY(
			 G2, "5") "' AND status = 'SUBMITTED'",
		 (long long)out.id);
	ck_assert_int_eq(pgtest_scalar(c, sql), 1);
	PQfinish(c);
}
END_TEST

/*
 * schema/0012_enqueue_fast.sql decides a valid intent with cheap predicates
 * and keeps 0002's functions for the error. Each predicate must accept
 * exactly what its 0002 counterpart accepts: compared here over every
 * one-character change (and truncation, extension) of 100 generated
 * accounts and of the test vectors, over amount edges, and for the rewritten
 * CHECK on events.type, over the edges of its regular expression.
 */
START_TEST(test_fast_checks_equal_full_checks)
{
	PGconn *c = pgtest_connect(&db);
	char key[57], sql[160];

	pgtest_exec(c, "CREATE TEMP TABLE k (s text)");
	for (uint32_t i = 0; i < 100; i++) {
		pgtest_account(i * 7919u, key);
		snprintf(sql, sizeof(sql), "INSERT INTO k VALUES ('%s')", key);
		pgtest_exec(c, sql);
	}
	pgtest_exec(c, "INSERT INTO k VALUES ('" G1 "'), ('" G2 "'), ('" G3 "'), ('" C2 "'),"
		       " ('" S1 "'), ('" G1_BADCRC "'), ('" G_BADVER "')");
	pgtest_exec(c, "CREATE TEMP TABLE t AS"
		       " SELECT overlay(k.s placing ch from p for 1) AS s FROM k,"
		       " generate_series(1, 56) p,"
		       " unnest(string_to_array('ABGQZ2357a0= ', NULL)) ch"
		       " UNION ALL SELECT left(k.s, n) FROM k, generate_series(0, 55) n"
		       " UNION ALL SELECT k.s || 'A' FROM k UNION ALL SELECT lower(k.s) FROM k"
		       " UNION ALL SELECT NULL");
	/* The set holds valid keys (each one unchanged) and many near misses. */
	ck_assert_int_ge(pgtest_scalar(c, "SELECT count(*) FROM t"
					  " WHERE outbox.account_strkey_problem(s) IS NULL"),
			 103);
	ck_assert_int_ge(pgtest_scalar(c, "SELECT count(*) FROM t"
					  " WHERE outbox.account_strkey_problem(s) IS NOT NULL"),
			 50000);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t WHERE"
					  " outbox.account_strkey_valid(s) IS DISTINCT FROM"
					  " (outbox.account_strkey_problem(s) IS NULL)"),
			 0);

	ck_assert_int_eq(
		pgtest_scalar(c,
			      "SELECT count(*) FROM unnest(ARRAY[NULL, '', '0', '00', '01', '1',"
			      " '9', '10', '-1', '+1', '1.0', ' 1', '1 ', '1e5', 'x', '١',"
			      " '170141183460469231731687303715884105727',"
			      " '170141183460469231731687303715884105728',"
			      " '170141183460469231731687303715884105726',"
			      " '099999999999999999999999999999999999999',"
			      " repeat('9', 38), repeat('9', 39), repeat('1', 39), repeat('1', 40),"
			      " '1' || repeat('0', 39), '0' || repeat('9', 38)]) a"
			      " WHERE outbox.amount_valid(a) IS DISTINCT FROM"
			      " (outbox.amount_problem(a) IS NULL)"),
		0);

	/* events.type: the rewritten CHECK accepts what '^[A-Z][A-Z_]{0,47}$' did. */
	pgtest_exec(c,
		    "SELECT outbox.enqueue('DEPOSIT', 'u1', 'r1', '" G1 "', '" PAY(G2, "5") "')");
	pgtest_exec(c, "CREATE FUNCTION pg_temp.accepts(t text, n integer) RETURNS boolean"
		       " LANGUAGE plpgsql AS $$ BEGIN INSERT INTO outbox.events (op_id, seq, type)"
		       " SELECT min(id), n, t FROM outbox.ops; RETURN true;"
		       " EXCEPTION WHEN check_violation THEN RETURN false; END $$");
	ck_assert_int_eq(
		pgtest_scalar(c, "SELECT count(*) FROM unnest(ARRAY['A', 'ENQUEUED', 'A_B', 'A_',"
				 " 'Z', repeat('A', 48), repeat('A', 49), 'A' || repeat('_', 47),"
				 " 'A' || repeat('_', 48), '', '_A', 'a', 'Aa', 'A1', 'A B', 'É',"
				 " 'AÉ', 'A-B']) WITH ORDINALITY x(t, n)"
				 " WHERE pg_temp.accepts(t, 100 + n::integer)"
				 " IS DISTINCT FROM (t ~ '^[A-Z][A-Z_]{0,47}$')"),
		0);
	PQfinish(c);
}
END_TEST

/* ---- bad input: OUTBOX_EINVAL naming the field, nothing written ---- */

static const struct bad_case {
	const char *name, *kind, *user, *brid, *signer, *payload, *prio, *field;
} bad[] = {
	{"unknown kind", "TRANSFER", "u1", "r1", G1, PAY(G2, "1"), NULL, "kind"},
	{"lower-case kind", "withdraw", "u1", "r1", G1, PAY(G2, "1"), NULL, "kind"},
	{"missing kind", NULL, "u1", "r1", G1, PAY(G2, "1"), NULL, "kind"},
	{"unknown priority", "WITHDRAW", "u1", "r1", G1, PAY(G2, "1"), "URGENT", "priority"},
	{"lower-case priority", "WITHDRAW", "u1", "r1", G1, PAY(G2, "1"), "low", "priority"},
	{"short signer", "WITHDRAW", "u1", "r1", "GA7QYNF7", PAY(G2, "1"), NULL, "signer"},
	{"long signer", "WITHDRAW", "u1", "r1", G1 "A", PAY(G2, "1"), NULL, "signer"},
	{"lower-case signer", "WITHDRAW", "u1", "r1",
	 "ga7qynf7sowq3glr2bgmzehxavirza4kvwltjjfc7mgxua74p7ujvsgz", PAY(G2, "1"), NULL, "signer"},
	{"signer with '0'", "WITHDRAW", "u1", "r1",
	 "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSG0", PAY(G2, "1"), NULL, "signer"},
	{"signer checksum", "WITHDRAW", "u1", "r1", G1_BADCRC, PAY(G2, "1"), NULL, "signer"},
	{"signer version byte", "WITHDRAW", "u1", "r1", G_BADVER, PAY(G2, "1"), NULL, "signer"},
	{"secret seed as signer", "WITHDRAW", "u1", "r1", S1, PAY(G2, "1"), NULL, "signer"},
	{"contract as signer", "WITHDRAW", "u1", "r1", C2, PAY(G2, "1"), NULL, "signer"},
	{"missing signer", "WITHDRAW", "u1", "r1", NULL, PAY(G2, "1"), NULL, "signer"},
	{"account checksum", "DEPOSIT", "u1", "r1", G1, PAY(G1_BADCRC, "1"), NULL,
	 "payload.account"},
	{"contract as account", "DEPOSIT", "u1", "r1", G1, PAY(C2, "1"), NULL, "payload.account"},
	{"seed as account", "WITHDRAW", "u1", "r1", G1, PAY(S1, "1"), NULL, "payload.account"},
	{"account version byte", "DEPOSIT", "u1", "r1", G1, PAY(G_BADVER, "1"), NULL,
	 "payload.account"},
	{"referral account checksum", "REFERRAL_REWARD", "u1", NULL, G1,
	 REF(G1_BADCRC, "5", "c1", "referrer"), NULL, "payload.account"},
	{"amount 39 nines", "WITHDRAW", "u1", "r1", G1,
	 PAY(G2, "999999999999999999999999999999999999999"), NULL, "payload.amount"},
	{"amount 0", "WITHDRAW", "u1", "r1", G1, PAY(G2, "0"), NULL, "payload.amount"},
	{"amount negative", "WITHDRAW", "u1", "r1", G1, PAY(G2, "-5"), NULL, "payload.amount"},
	{"amount plus sign", "WITHDRAW", "u1", "r1", G1, PAY(G2, "+5"), NULL, "payload.amount"},
	{"amount leading zero", "WITHDRAW", "u1", "r1", G1, PAY(G2, "0100"), NULL,
	 "payload.amount"},
	{"amount i128 max + 1", "WITHDRAW", "u1", "r1", G1,
	 PAY(G2, "170141183460469231731687303715884105728"), NULL, "payload.amount"},
	{"amount 40 digits", "WITHDRAW", "u1", "r1", G1,
	 PAY(G2, "1000000000000000000000000000000000000000"), NULL, "payload.amount"},
	{"amount decimal point", "WITHDRAW", "u1", "r1", G1, PAY(G2, "1.5"), NULL,
	 "payload.amount"},
	{"amount exponent", "WITHDRAW", "u1", "r1", G1, PAY(G2, "1e3"), NULL, "payload.amount"},
	{"amount space", "WITHDRAW", "u1", "r1", G1, PAY(G2, " 1"), NULL, "payload.amount"},
	{"amount empty", "WITHDRAW", "u1", "r1", G1, PAY(G2, ""), NULL, "payload.amount"},
	{"amount as number", "WITHDRAW", "u1", "r1", G1, "{\"account\": \"" G2 "\", \"amount\": 5}",
	 NULL, "payload.amount"},
	{"amount null", "WITHDRAW", "u1", "r1", G1, "{\"account\": \"" G2 "\", \"amount\": null}",
	 NULL, "payload.amount"},
	{"missing amount", "WITHDRAW", "u1", "r1", G1, "{\"account\": \"" G2 "\"}", NULL,
	 "payload.amount"},
	{"missing account", "DEPOSIT", "u1", "r1", G1, "{\"amount\": \"5\"}", NULL,
	 "payload.account"},
	{"unknown field", "DEPOSIT", "u1", "r1", G1,
	 "{\"account\": \"" G2 "\", \"amount\": \"5\", \"memo\": \"x\"}", NULL, "payload.memo"},
	{"account in a rebalance", "REBALANCE", "u1", "r1", G1, PAY(G2, "5"), NULL,
	 "payload.account"},
	{"payload array", "DEPOSIT", "u1", "r1", G1, "[1, 2]", NULL, "payload"},
	{"payload string", "DEPOSIT", "u1", "r1", G1, "\"x\"", NULL, "payload"},
	{"payload not JSON", "DEPOSIT", "u1", "r1", G1, "{\"account\": ", NULL, "payload"},
	{"missing payload", "DEPOSIT", "u1", "r1", G1, NULL, NULL, "payload"},
	{"':' in user_id", "DEPOSIT", "u:1", "r1", G1, PAY(G2, "5"), NULL, "user_id"},
	{"empty user_id", "DEPOSIT", "", "r1", G1, PAY(G2, "5"), NULL, "user_id"},
	{"missing user_id", "DEPOSIT", NULL, "r1", G1, PAY(G2, "5"), NULL, "user_id"},
	{"129-char user_id", "DEPOSIT",
	 "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"
	 "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu",
	 "r1", G1, PAY(G2, "5"), NULL, "user_id"},
	{"newline in user_id", "DEPOSIT", "u\n1", "r1", G1, PAY(G2, "5"), NULL, "user_id"},
	{"invalid UTF-8 in user_id", "DEPOSIT",
	 "u\xff"
	 "1",
	 "r1", G1, PAY(G2, "5"), NULL, "user_id"},
	{"overlong UTF-8 in business_record_id", "DEPOSIT", "u1", "r\xc0\xaf", G1, PAY(G2, "5"),
	 NULL, "business_record_id"},
	{"UTF-8 surrogate in payload", "DEPOSIT", "u1", "r1", G1,
	 "{\"account\": \"" G2 "\", \"amount\": \"5\", \"x\": \"\xed\xa0\x80\"}", NULL, "payload"},
	{"missing business_record_id", "DEPOSIT", "u1", NULL, G1, PAY(G2, "5"), NULL,
	 "business_record_id"},
	{"empty business_record_id", "DEPOSIT", "u1", "", G1, PAY(G2, "5"), NULL,
	 "business_record_id"},
	{"referral record id mismatch", "REFERRAL_REWARD", "u1", "conv-1:referee", G1,
	 REF(G2, "5", "conv-1", "referrer"), NULL, "business_record_id"},
	{"':' in conversion_id", "REFERRAL_REWARD", "u1", NULL, G1, REF(G2, "5", "c:1", "referrer"),
	 NULL, "payload.conversion_id"},
	{"missing leg", "REFERRAL_REWARD", "u1", NULL, G1,
	 "{\"account\": \"" G2 "\", \"amount\": \"5\", \"conversion_id\": \"c1\"}", NULL,
	 "payload.leg"},
	{"empty leg", "REFERRAL_REWARD", "u1", NULL, G1, REF(G2, "5", "c1", ""), NULL,
	 "payload.leg"},
};

START_TEST(test_bad_input)
{
	const struct bad_case *b = &bad[_i];
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	char prefix[80];
	long long before = count_rows(c);
	int rc;

	pgtest_exec(c, "BEGIN");
	rc = enq(c, b->kind, b->user, b->brid, b->signer, b->payload, b->prio, &out, &err);
	ck_assert_msg(rc == OUTBOX_EINVAL, "%s: rc %d (%s)", b->name, rc, err.msg);
	ck_assert_msg(!strcmp(err.field, b->field), "%s: field '%s', expected '%s' (%s)", b->name,
		      err.field, b->field, err.msg);
	snprintf(prefix, sizeof(prefix), "%s: ", b->field);
	ck_assert_msg(!strncmp(err.msg, prefix, strlen(prefix)), "%s: message '%s'", b->name,
		      err.msg);
	ck_assert_msg(!strchr(err.msg, '\n'), "%s: multi-line message", b->name);
	pgtest_exec(c, "ROLLBACK");
	ck_assert_int_eq(count_rows(c), before);
	PQfinish(c);
}
END_TEST

/* Messages quote the value, but never more than 80 characters of it. */
START_TEST(test_error_quotes_bounded_value)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	char user[200];

	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "r1", G1_BADCRC, PAY(G2, "1"), NULL, &out, &err),
			 OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "signer: '" G1_BADCRC "' has a bad checksum");
	ck_assert_int_eq(enq(c, "WITHDRAW", "u1", "r1", G1, PAY(G2, "0100"), NULL, &out, &err),
			 OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "payload.amount: '0100' has a leading zero");

	memset(user, 'x', sizeof(user) - 1);
	user[sizeof(user) - 1] = '\0';
	ck_assert_int_eq(enq(c, "WITHDRAW", user, "r1", G1, PAY(G2, "1"), NULL, &out, &err),
			 OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, "user_id");
	ck_assert_msg(strstr(err.msg, "...' is longer than 128 characters"), "%s", err.msg);
	ck_assert_int_lt(strlen(err.msg), 160);
	PQfinish(c);
}
END_TEST

/* The SQL function itself raises OB422 with COLUMN, for non-C clients. */
START_TEST(test_sql_error_fields)
{
	PGconn *c = pgtest_connect(&db);
	PGresult *r = PQexec(c, "SELECT * FROM outbox.enqueue('DEPOSIT', 'u1', 'r1', '" G1 "', "
				"'{\"account\": \"" G2 "\", \"amount\": \"-1\"}')");

	ck_assert_int_eq(PQresultStatus(r), PGRES_FATAL_ERROR);
	ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "OB422");
	ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_COLUMN_NAME), "payload.amount");
	PQclear(r);
	PQfinish(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("enqueue");
	TCase *tc = tcase_create("contract");
	TCase *bad_tc = tcase_create("bad_input");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_creates_op_and_event);
	tcase_add_test(tc, test_default_and_explicit_priorities);
	tcase_add_test(tc, test_same_key_returns_existing);
	tcase_add_test(tc, test_same_key_other_content_conflicts);
	tcase_add_test(tc, test_referral_record_id);
	tcase_add_test(tc, test_atomic_with_business_row);
	tcase_add_test(tc, test_concurrent_same_key);
	tcase_add_test(tc, test_amount_edges_accepted);
	tcase_add_test(tc, test_vshard_c_equals_sql);
	tcase_add_test(tc, test_enqueue_uses_deployment_vshards);
	tcase_add_test(tc, test_error_quotes_bounded_value);
	tcase_add_test(tc, test_sql_error_fields);
	tcase_add_test(tc, test_wakeup_for_critical_work);
	tcase_add_test(tc, test_repeatable_read_race_is_retryable);
	tcase_add_test(tc, test_identity_checked_on_insert_frozen_after);
	tcase_add_test(tc, test_fast_checks_equal_full_checks);
	suite_add_tcase(s, tc);

	/* One database for all bad inputs: each case proves it wrote nothing. */
	tcase_add_unchecked_fixture(bad_tc, setup, teardown);
	tcase_set_timeout(bad_tc, 60);
	tcase_add_loop_test(bad_tc, test_bad_input, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	suite_add_tcase(s, bad_tc);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
