/*
 * check_archive.c - schema/0013_archive.sql: terminal ops leave outbox.ops
 * (into outbox.ops_archive and outbox.events_archive), so the table and its
 * indexes stay bounded under churn; only CONFIRMED, FAILED and CANCELLED ops
 * older than the retention whose events are all published move; an
 * archived op's key still answers that op (never a second one), also when
 * the enqueue races the archive run; the admin API still shows it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/enqueue.h"
#include "tests/support/check_main.h"
#include "tests/support/pgtest.h"

#define G1          "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
#define G2          "GA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQHES5"
#define PAY(amount) "{\"account\": \"" G2 "\", \"amount\": \"" amount "\"}"

static struct pgtest_db db;

static void setup(void)
{
	pgtest_setup(&db, 0);
}

static void teardown(void)
{
	pgtest_teardown(&db);
}

static long long enq(PGconn *c, const char *user, const char *brid, const char *payload,
		     int *created)
{
	struct outbox_intent in = {"DEPOSIT", user, brid, G1, payload, NULL};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;

	ck_assert_msg(outbox_enqueue(c, &in, &out, &err) == 0, "enqueue %s:%s: %s", user, brid,
		      err.msg);
	if (created)
		*created = out.created;
	return out.id;
}

/*
 * What the dispatcher and the relay would have done, by hand: status to
 * the terminal one (through legal moves), every event of those ops sealed
 * (a link of chain vshard:0, chain_seq = id) and published (the chain's
 * cursor past them), updated_at back by age.
 */
static void finish(PGconn *c, const char *where, const char *status, const char *age)
{
	char sql[640];

	if (!strcmp(status, "CONFIRMED")) {
		snprintf(sql, sizeof(sql), "UPDATE outbox.ops SET status = 'SUBMITTED' WHERE %s",
			 where);
		pgtest_exec(c, sql);
	}
	snprintf(sql, sizeof(sql),
		 "UPDATE outbox.ops SET status = '%s', confirmed_at = CASE '%s' WHEN 'CONFIRMED'"
		 " THEN now() END, hold_reason = CASE '%s' WHEN 'HELD' THEN 'test' END WHERE %s",
		 status, status, status, where);
	pgtest_exec(c, sql);
	snprintf(sql, sizeof(sql),
		 "UPDATE outbox.events SET chain = 'vshard:0', chain_seq = id,"
		 " chain_prev = decode(repeat('00', 32), 'hex'),"
		 " chain_hash = sha256(id::text::bytea)"
		 " WHERE chain_seq IS NULL AND op_id IN (SELECT id FROM outbox.ops WHERE %s)",
		 where);
	pgtest_exec(c, sql);
	/* the chain's head and published cursor past every link (schema/0028) */
	pgtest_exec(c, "INSERT INTO outbox.chain_heads AS h (chain, seq, hash, published_seq) "
		       "SELECT 'vshard:0', max(chain_seq), decode(repeat('00', 32), 'hex'), "
		       "max(chain_seq) FROM outbox.events WHERE chain = 'vshard:0' "
		       "ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, "
		       "published_seq = excluded.seq");
	snprintf(sql, sizeof(sql),
		 "UPDATE outbox.ops SET updated_at = now() - interval '%s' WHERE %s", age, where);
	pgtest_exec(c, sql);
}

static long long archive_all(PGconn *c)
{
	long long n, total = 0;

	while ((n = pgtest_scalar(c, "SELECT outbox.archive_terminal('1 hour', 100)")) > 0)
		total += n;
	return total;
}

/* What moves and what stays. */
START_TEST(test_only_old_published_terminal_ops_move)
{
	PGconn *c = pgtest_connect(&db);
	long long id;

	for (int i = 0; i < 9; i++) {
		char brid[16];

		snprintf(brid, sizeof(brid), "r%d", i);
		enq(c, "u1", brid, PAY("5"), NULL);
	}
	finish(c, "business_record_id = 'r0'", "CONFIRMED", "2 hours");
	finish(c, "business_record_id = 'r1'", "FAILED", "2 hours");
	finish(c, "business_record_id = 'r2'", "CANCELLED", "2 hours");
	finish(c, "business_record_id = 'r3'", "HELD", "2 days");          /* never */
	finish(c, "business_record_id = 'r4'", "PENDING", "2 days");       /* never */
	finish(c, "business_record_id = 'r5'", "SUBMITTED", "2 days");     /* never */
	finish(c, "business_record_id = 'r6'", "CONFIRMED", "30 minutes"); /* too young */
	finish(c, "business_record_id = 'r7'", "CANCELLED", "2 hours");
	/* r7 has an event Kafka has not acknowledged */
	pgtest_exec(c, "INSERT INTO outbox.events (op_id, seq, type) SELECT id, 9, 'NOTE'"
		       " FROM outbox.ops WHERE business_record_id = 'r7'");
	/* r8: FAILED, old, published: moves */
	finish(c, "business_record_id = 'r8'", "FAILED", "3 days");
	/* r9: its event is sealed on a chain whose cursor is behind it (schema/0028) */
	enq(c, "u1", "r9", PAY("5"), NULL);
	finish(c, "business_record_id = 'r9'", "CONFIRMED", "2 hours");
	pgtest_exec(c, "INSERT INTO outbox.chain_heads (chain, seq, hash) SELECT 'vshard:1', "
		       "max(e.chain_seq), decode(repeat('00', 32), 'hex') FROM outbox.events e "
		       "JOIN outbox.ops o ON o.id = e.op_id WHERE o.business_record_id = 'r9'");
	pgtest_exec(c, "UPDATE outbox.events SET chain = 'vshard:1' WHERE op_id IN (SELECT id "
		       "FROM outbox.ops WHERE business_record_id = 'r9')");

	ck_assert_int_eq(archive_all(c), 4);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops WHERE"
					  " business_record_id IN ('r0', 'r1', 'r2', 'r8')"),
			 0);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops"), 6);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops_archive"), 4);
	/* attempts and events went with them; the chains are still whole in events_all */
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events e WHERE NOT EXISTS"
					  " (SELECT 1 FROM outbox.ops o WHERE o.id = e.op_id)"),
			 0);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_archive"), 4);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_all"), 11);
	/* the retention cannot be shorter than an hour, the batch is bounded */
	{
		PGresult *r = PQexec(c, "SELECT outbox.archive_terminal('59 minutes', 10)");

		ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "OB422");
		PQclear(r);
		r = PQexec(c, "SELECT outbox.archive_terminal('1 day', 0)");
		ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "OB422");
		PQclear(r);
	}
	/* the admin API (and outboxctl ops show) still finds an archived op */
	id = pgtest_scalar(c, "SELECT id FROM outbox.ops_archive WHERE status = 'CONFIRMED'");
	{
		char sql[256];

		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM outbox.api_op(NULL, 'test', '{}', %lld) WHERE"
			 " http = 200 AND body->>'archived' = 'true' AND body->'op'->>'status' ="
			 " 'CONFIRMED' AND jsonb_array_length(body->'events') = 1",
			 id);
		ck_assert_int_eq(pgtest_scalar(c, sql), 1);
	}
	/* ... and so does outboxctl ops show, which says it is archived */
	{
		char cmd[sizeof(db.conninfo) + 4096 + 64], out[8192];
		const char *build = getenv("OUTBOX_BUILD_DIR");
		size_t n;
		FILE *p;

		ck_assert_ptr_nonnull(build);
		ck_assert_int_lt(
			snprintf(cmd, sizeof(cmd),
				 "OUTBOX_DATABASE_URL='%s' %.4096s/outboxctl ops show %lld 2>&1",
				 db.conninfo, build, id),
			(int)sizeof(cmd));
		p = popen(cmd, "r");
		ck_assert_ptr_nonnull(p);
		n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = '\0';
		ck_assert_int_eq(pclose(p), 0);
		ck_assert_msg(strstr(out, "archived") && strstr(out, "CONFIRMED"), "%s", out);
	}
	/* once the cursor of r9's chain passes its event, it moves too */
	pgtest_exec(c,
		    "UPDATE outbox.chain_heads SET published_seq = seq WHERE chain = 'vshard:1'");
	ck_assert_int_eq(archive_all(c), 1);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_archive WHERE "
					  "chain = 'vshard:1' AND published_at IS NOT NULL"),
			 1);
	PQfinish(c);
}
END_TEST

/* An archived op's key answers that op; other content is still a conflict. */
START_TEST(test_archived_key_answers_archived_op)
{
	struct outbox_intent in = {"DEPOSIT", "u1", "w1", G1, PAY("7"), NULL};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_enqueued out;
	PGconn *c = pgtest_connect(&db);
	long long id = enq(c, "u1", "w1", PAY("7"), NULL);
	int created = 1;

	finish(c, "true", "CONFIRMED", "8 days");
	ck_assert_int_eq(archive_all(c), 1);
	ck_assert_int_eq(enq(c, "u1", "w1", PAY("7"), &created), id);
	ck_assert(!created);
	ck_assert_int_eq(outbox_enqueue(c, &in, &out, &err), 0);
	ck_assert_str_eq(out.status, "CONFIRMED");
	in.payload_json = PAY("8");
	ck_assert_int_eq(outbox_enqueue(c, &in, &out, &err), OUTBOX_ECONFLICT);
	ck_assert_str_eq(err.field, "payload.amount");
	/* ... also under REPEATABLE READ */
	pgtest_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ");
	ck_assert_int_eq(enq(c, "u1", "w1", PAY("7"), &created), id);
	pgtest_exec(c, "COMMIT");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops"), 0);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events"), 0);
	PQfinish(c);
}
END_TEST

/* Wait (generously) until pid waits for a lock. */
static void wait_blocked(PGconn *c, int pid)
{
	char sql[160];

	snprintf(
		sql, sizeof(sql),
		"SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND wait_event_type = 'Lock'",
		pid);
	for (int i = 0; i < 6000 && pgtest_scalar(c, sql) == 0; i++)
		usleep(10 * 1000);
	ck_assert_msg(pgtest_scalar(c, sql) == 1, "backend %d never waited for the lock", pid);
}

/*
 * The race: an archive run has deleted the op row (not committed yet) when
 * an enqueue of the same key arrives. The enqueue's insert waits for the
 * run; once it commits, the enqueue must answer the archived op and leave
 * no second one behind.
 */
START_TEST(test_enqueue_racing_archive_run)
{
	PGconn *a = pgtest_connect(&db), *b = pgtest_connect(&db), *w = pgtest_connect(&db);
	long long id = enq(a, "u1", "race", PAY("9"), NULL);
	PGresult *r;

	finish(a, "true", "CANCELLED", "2 hours");
	pgtest_exec(a, "BEGIN");
	ck_assert_int_eq(pgtest_scalar(a, "SELECT outbox.archive_terminal('1 hour', 10)"), 1);
	ck_assert(PQsendQuery(b,
			      "SELECT id, created FROM outbox.enqueue('DEPOSIT', 'u1', 'race', '" G1
			      "', '" PAY("9") "')"));
	wait_blocked(w, PQbackendPID(b)); /* w: a's transaction would see one snapshot */
	pgtest_exec(a, "COMMIT");
	r = PQgetResult(b);
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	ck_assert_int_eq(atoll(PQgetvalue(r, 0, 0)), id);
	ck_assert_str_eq(PQgetvalue(r, 0, 1), "f");
	PQclear(r);
	while ((r = PQgetResult(b)))
		PQclear(r);
	ck_assert_int_eq(pgtest_scalar(a, "SELECT count(*) FROM outbox.ops"), 0);
	ck_assert_int_eq(pgtest_scalar(a, "SELECT count(*) FROM outbox.events"), 0);

	/* REPEATABLE READ whose snapshot predates a run: 40001, then the retry answers. */
	id = enq(a, "u1", "race2", PAY("9"), NULL);
	finish(a, "business_record_id = 'race2'", "FAILED", "2 hours");
	pgtest_exec(b, "BEGIN ISOLATION LEVEL REPEATABLE READ");
	ck_assert_int_eq(pgtest_scalar(b, "SELECT count(*) FROM outbox.ops"), 1);
	ck_assert_int_eq(archive_all(a), 1);
	r = PQexec(b, "SELECT id FROM outbox.enqueue('DEPOSIT', 'u1', 'race2', '" G1
		      "', '" PAY("9") "')");
	ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "40001");
	PQclear(r);
	pgtest_exec(b, "ROLLBACK");
	ck_assert_int_eq(enq(b, "u1", "race2", PAY("9"), NULL), id);
	ck_assert_int_eq(pgtest_scalar(a, "SELECT count(*) FROM outbox.ops"), 0);
	PQfinish(a);
	PQfinish(b);
	PQfinish(w);
}
END_TEST

static long long ops_bytes(PGconn *c)
{
	pgtest_exec(c, "VACUUM outbox.ops, outbox.events, outbox.attempts");
	return pgtest_scalar(c, "SELECT pg_total_relation_size('outbox.ops')"
				" + pg_total_relation_size('outbox.events')");
}

/*
 * Steady churn: every round enqueues 400 ops and finishes them; with the
 * archive the live tables hold only what is not yet archivable, and their
 * size (heap and every index) stops growing after the first rounds.
 * Without it they would be ten times the size of one round by the end.
 */
START_TEST(test_churn_stays_bounded)
{
	PGconn *c = pgtest_connect(&db);
	long long after[10];
	char brid[32];

	enq(c, "held", "h1", PAY("1"), NULL);
	finish(c, "user_id = 'held'", "HELD", "30 days");
	for (int round = 0; round < 10; round++) {
		pgtest_exec(c, "BEGIN");
		for (int i = 0; i < 400; i++) {
			snprintf(brid, sizeof(brid), "r%02d-%04d", round, i);
			enq(c, "u1", brid, PAY("3"), NULL);
		}
		pgtest_exec(c, "COMMIT");
		/* (earlier rounds' ops are archived: these are this round's) */
		finish(c, "user_id = 'u1' AND id % 3 = 0", "CONFIRMED", "2 hours");
		finish(c, "user_id = 'u1' AND id % 3 = 1", "FAILED", "2 hours");
		finish(c, "user_id = 'u1' AND id % 3 = 2", "CANCELLED", "2 hours");
		ck_assert_int_eq(archive_all(c), 400);
		ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops"), 1);
		after[round] = ops_bytes(c);
	}
	fprintf(stderr, "check_archive: outbox.ops + events bytes after each round:");
	for (int i = 0; i < 10; i++)
		fprintf(stderr, " %lld", after[i]);
	fprintf(stderr, "\n");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops_archive"), 4000);
	ck_assert_msg(after[9] <= after[2] + after[2] / 2,
		      "ops + events grew from %lld bytes (round 3) to %lld (round 10)", after[2],
		      after[9]);
	PQfinish(c);
}
END_TEST

static Suite *archive_suite(void)
{
	Suite *s = suite_create("archive");
	TCase *tc = tcase_create("archive");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_only_old_published_terminal_ops_move);
	tcase_add_test(tc, test_archived_key_answers_archived_op);
	tcase_add_test(tc, test_enqueue_racing_archive_run);
	tcase_add_test(tc, test_churn_stays_bounded);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(archive_suite)
