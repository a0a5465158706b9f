/*
 * check_row_rules.c - the row rules of outbox.ops, attempts, events and lanes
 * (schema/0021_row_rules.sql) against a real PostgreSQL: every rule broken
 * alone fails with SQLSTATE 23514 naming the constraint it replaced and its
 * column; NULL passes where a CHECK passed it; each table carries exactly
 * its one rules constraint and a real write that breaks a rule is refused;
 * and each pattern written without a bounded repetition accepts exactly the
 * strings the regular expression it replaced accepted, over a corpus built
 * from every ASCII character at the edges of every length that matters.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/pgtest.h"
#include "tests/support/check_main.h"

static struct pgtest_db db;
static PGconn *conn;

static void setup(void)
{
	pgtest_setup(&db, 1);
	conn = pgtest_connect(&db);
}

static void teardown(void)
{
	PQfinish(conn);
	pgtest_teardown(&db);
}

#define H64 "repeat('a', 64)"

/*
 * A valid row of each table as JSON; a case changes one or two columns
 * (SQL expressions) and calls the table's rules function on the row that
 * jsonb_populate_record makes of it (columns not named are NULL).
 */
struct table_rules {
	const char *fn, *table, *row;
};

struct broken {
	int table; /* index into tables[] */
	const char *col, *value, *constraint, *column;
	const char *col2, *value2; /* a second column changed with it, or NULL */
};

static const struct table_rules tables[] = {
	{"ops_rules", "ops",
	 "{\"kind\": \"DEPOSIT\", \"priority\": 1, \"status\": \"PENDING\", \"vshard\": 0, "
	 "\"attempts\": 0, \"fee_bumps\": 0, \"attempts_base\": 0}"},
	{"attempts_rules", "attempts",
	 "{\"attempt_no\": 1, \"bump_no\": 0, \"tx_hash\": \""
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"inner_tx_hash\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"outcome\": \"LIVE\", \"fee\": 100, "
	 "\"max_time\": 2000000000, \"source_sequence\": 1}"},
	{"events_rules", "events",
	 "{\"op_id\": 1, \"seq\": 1, \"type\": \"ENQUEUED\", \"to_status\": \"PENDING\", "
	 "\"body\": {}}"},
	{"lanes_rules", "lanes",
	 "{\"pending_best\": 1, \"next_due\": \"2026-01-01T00:00:00Z\", \"in_flight\": 0, "
	 "\"recheck_s\": 1, \"vshard\": 0}"},
};

static const struct broken broken[] = {
	{0, "kind", "'BOGUS'", "ops_kind_check", "kind", NULL, NULL},
	{0, "priority", "3", "ops_priority_check", "priority", NULL, NULL},
	{0, "priority", "-1", "ops_priority_check", "priority", NULL, NULL},
	{0, "status", "'DONE'", "ops_status_check", "status", NULL, NULL},
	{0, "vshard", "4096", "ops_vshard_check", "vshard", NULL, NULL},
	{0, "vshard", "-1", "ops_vshard_check", "vshard", NULL, NULL},
	{0, "attempts", "-1", "ops_attempts_check", "attempts", NULL, NULL},
	{0, "fee_bumps", "-1", "ops_fee_bumps_check", "fee_bumps", NULL, NULL},
	{0, "attempts_base", "-1", "ops_attempts_base_check", "attempts_base", NULL, NULL},
	{0, "confirmed_at", "now()", "ops_check", "confirmed_at", NULL, NULL},
	{0, "last_error", "repeat('x', 2001)", "ops_last_error_check", "last_error", NULL, NULL},
	{0, "hold_reason", "repeat('x', 2001)", "ops_hold_reason_check", "hold_reason", NULL, NULL},
	{0, "tx_hash", "repeat('A', 64)", "ops_tx_hash_check", "tx_hash", NULL, NULL},
	{0, "tx_hash", "repeat('a', 63)", "ops_tx_hash_check", "tx_hash", NULL, NULL},
	{1, "attempt_no", "0", "attempts_attempt_no_check", "attempt_no", NULL, NULL},
	{1, "bump_no", "-1", "attempts_bump_no_check", "bump_no", NULL, NULL},
	{1, "inner_tx_hash", "repeat('b', 64)", "attempts_check", "inner_tx_hash", NULL, NULL},
	{1, "decided_at", "now()", "attempts_check1", "decided_at", NULL, NULL},
	{1, "outcome", "'CONFIRMED'", "attempts_check1", "decided_at", NULL, NULL},
	{1, "fee", "0", "attempts_fee_check", "fee", NULL, NULL},
	{1, "landed_ledger", "0", "attempts_landed_ledger_check", "landed_ledger", NULL, NULL},
	{1, "max_ledger", "0", "attempts_max_ledger_check", "max_ledger", NULL, NULL},
	{1, "max_time", "0", "attempts_max_time_check", "max_time", NULL, NULL},
	{1, "outcome", "'BOGUS'", "attempts_outcome_check", "outcome", "decided_at", "now()"},
	{1, "proof", "'[]'::jsonb", "attempts_proof_check", "proof", NULL, NULL},
	{1, "result_code", "''", "attempts_result_code_check", "result_code", NULL, NULL},
	{1, "result_code", "repeat('x', 65)", "attempts_result_code_check", "result_code", NULL,
	 NULL},
	{1, "sent_after_ledger", "-1", "attempts_sent_after_ledger_check", "sent_after_ledger",
	 NULL, NULL},
	{1, "source_sequence", "0", "attempts_source_sequence_check", "source_sequence", NULL,
	 NULL},
	{2, "body", "'[]'::jsonb", "events_body_check", "body", NULL, NULL},
	{2, "chain", "'vshard:12345'", "events_chain_check", "chain", NULL, NULL},
	{2, "chain", "'fee'", "events_chain_check", "chain", NULL, NULL},
	{2, "chain_hash", "'\\x00'::bytea", "events_chain_hash_check", "chain_hash", NULL, NULL},
	{2, "chain_prev", "'\\x00'::bytea", "events_chain_prev_check", "chain_prev", NULL, NULL},
	{2, "chain_seq", "0", "events_chain_seq_check", "chain_seq", NULL, NULL},
	{2, "from_status", "'DONE'", "events_from_status_check", "from_status", NULL, NULL},
	{2, "op_id", "NULL::bigint", "events_op_or_chain", "op_id", NULL, NULL},
	{2, "chain_seq", "1", "events_sealed", "chain_seq", NULL, NULL},
	{2, "seq", "0", "events_seq_check", "seq", NULL, NULL},
	{2, "to_status", "'DONE'", "events_to_status_check", "to_status", NULL, NULL},
	{2, "type", "'enqueued'", "events_type_check", "type", NULL, NULL},
	{2, "type", "repeat('A', 49)", "events_type_check", "type", NULL, NULL},
	{3, "pending_best", "NULL::smallint", "lanes_check", "next_due", NULL, NULL},
	{3, "in_flight", "-1", "lanes_in_flight_check", "in_flight", NULL, NULL},
	{3, "pending_best", "3", "lanes_pending_best_check", "pending_best", NULL, NULL},
	{3, "recheck_s", "0", "lanes_recheck_s_check", "recheck_s", NULL, NULL},
	{3, "recheck_s", "31", "lanes_recheck_s_check", "recheck_s", NULL, NULL},
	{3, "vshard", "4096", "lanes_vshard_check", "vshard", NULL, NULL},
};

/*
 * "SELECT outbox.<fn>(<the valid row with col = value (and col2 = value2)>)";
 * value may be "$1", a parameter.
 */
static void call_sql(char *sql, size_t n, int t, const char *col, const char *value,
		     const char *col2, const char *value2)
{
	size_t k = (size_t)snprintf(sql, n,
				    "SELECT outbox.%s(jsonb_populate_record(NULL::outbox.%s, '%s'",
				    tables[t].fn, tables[t].table, tables[t].row);

	if (col)
		k += (size_t)snprintf(sql + k, n - k, " || jsonb_build_object('%s', %s)", col,
				      value);
	if (col2)
		k += (size_t)snprintf(sql + k, n - k, " || jsonb_build_object('%s', %s)", col2,
				      value2);
	snprintf(sql + k, n - k, "))");
}

START_TEST(test_every_rule_names_its_constraint)
{
	char sql[2048];

	for (int t = 0; t < 4; t++) {
		call_sql(sql, sizeof(sql), t, NULL, NULL, NULL, NULL);
		pgtest_exec(conn, sql);
	}
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		const struct broken *b = &broken[i];
		PGresult *r;
		const char *st, *con, *col;

		call_sql(sql, sizeof(sql), b->table, b->col, b->value, b->col2, b->value2);
		r = PQexec(conn, sql);
		st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		con = PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME);
		col = PQresultErrorField(r, PG_DIAG_COLUMN_NAME);
		ck_assert_msg(st && !strcmp(st, "23514") && con && !strcmp(con, b->constraint) &&
				      col && !strcmp(col, b->column),
			      "%s: expected 23514 %s on %s, got %s %s on %s: %s", sql,
			      b->constraint, b->column, st ? st : "success", con ? con : "-",
			      col ? col : "-", PQresultErrorMessage(r));
		PQclear(r);
	}
}
END_TEST

/* What a CHECK let through because its expression was NULL still passes. */
START_TEST(test_nulls_pass_as_they_did)
{
	static const char *const rows[] = {"ops", "attempts", "events", "lanes"};
	char sql[256];

	/*
	 * All NULL passes (NOT NULL refuses such a row, not these rules), but
	 * for an event: events_op_or_chain wants an op or a chain.
	 */
	for (int i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		snprintf(sql, sizeof(sql), "SELECT outbox.%s_rules(NULL::outbox.%s)", rows[i],
			 rows[i]);
		pgtest_exec(conn, sql);
	}
	pgtest_exec(conn, "SELECT outbox.events_rules(jsonb_populate_record(NULL::outbox.events, "
			  "'{\"seq\": 1, \"op_id\": 1, \"type\": \"X\", \"body\": {}}'))");
	/* an event of no op on a named chain, sealed */
	pgtest_exec(conn,
		    "SELECT outbox.events_rules(jsonb_populate_record(NULL::outbox.events, "
		    "jsonb_build_object('type', 'FEE_SNAPSHOT', 'body', '{}'::jsonb, 'chain', "
		    "'oracle:a-B_9', 'chain_seq', 1, 'chain_prev', sha256('a'), 'chain_hash', "
		    "sha256('b'))))");
	pgtest_exec(conn,
		    "SELECT outbox.ops_rules(jsonb_populate_record(NULL::outbox.ops, "
		    "jsonb_build_object('kind', 'DEPOSIT', 'priority', 0, 'status', 'CONFIRMED', "
		    "'vshard', 4095, 'attempts', 1, 'fee_bumps', 1, 'attempts_base', 1, "
		    "'confirmed_at', now(), 'last_error', repeat('x', 2000), 'hold_reason', '', "
		    "'tx_hash', repeat('0123456789abcdef', 4))))");
}
END_TEST

static void refused(const char *sql, const char *constraint)
{
	PGresult *r = PQexec(conn, sql);
	const char *con = PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME);

	ck_assert_msg(con && !strcmp(con, constraint), "%s: expected %s, got %s", sql, constraint,
		      PQresultErrorMessage(r));
	PQclear(r);
}

/* The tables carry these rules and nothing else, and enforce them on write. */
START_TEST(test_tables_enforce_their_rules)
{
	char acct[57], sql[1024];

	ck_assert_int_eq(pgtest_scalar(conn,
				       "SELECT count(*) FROM pg_constraint WHERE contype = "
				       "'c' AND conrelid IN ('outbox.ops'::regclass, "
				       "'outbox.attempts'::regclass, 'outbox.events'::regclass, "
				       "'outbox.lanes'::regclass)"),
			 4);
	ck_assert_int_eq(pgtest_scalar(conn, "SELECT count(*) FROM pg_constraint WHERE contype = "
					     "'c' AND conname IN ('ops_rules', 'attempts_rules', "
					     "'events_rules', 'lanes_rules') AND convalidated"),
			 4);
	pgtest_account(1, acct);
	snprintf(sql, sizeof(sql),
		 "SELECT outbox.enqueue('DEPOSIT', 'u1', 'b1', '%s', '{\"account\": \"%s\", "
		 "\"amount\": \"5\"}', 'NORMAL')",
		 acct, acct);
	pgtest_exec(conn, sql);
	refused("UPDATE outbox.ops SET attempts = -1", "ops_attempts_check");
	refused("UPDATE outbox.ops SET tx_hash = upper(repeat('ab', 32))", "ops_tx_hash_check");
	refused("INSERT INTO outbox.lanes (signer, vshard, in_flight) VALUES ('x', 0, -1)",
		"lanes_in_flight_check");
	refused("INSERT INTO outbox.events (op_id, seq, type, body) SELECT id, 9, 'X', '[]' FROM "
		"outbox.ops",
		"events_body_check");
	snprintf(sql, sizeof(sql),
		 "INSERT INTO outbox.attempts (op_id, attempt_no, tx_hash, inner_tx_hash, "
		 "envelope_xdr, source_account, source_sequence, max_time, fee) SELECT id, 1, %s, "
		 "%s, 'AAAA', '%s', 1, 2000000000, 0 FROM outbox.ops",
		 H64, H64, acct);
	refused(sql, "attempts_fee_check");
}
END_TEST

/*
 * The corpus: every ASCII character but NUL, and a few multibyte ones, put
 * at the start, middle and end of a valid string of each length around the
 * limits. Each rule is applied through the function that owns it and
 * compared with the regular expression it replaced; the answer is the
 * number of strings on which they disagree, and the first few of them.
 */
static const char *const corpus_fn =
	"CREATE FUNCTION pg_temp.corpus(valid text[]) RETURNS SETOF text LANGUAGE sql AS $$ "
	"WITH ch AS (SELECT chr(c) AS c FROM generate_series(1, 127) c "
	"  UNION ALL SELECT x FROM unnest(ARRAY['é', 'ß', '٣', 'Ａ', '０']) x), "
	"v AS (SELECT unnest(valid) AS v) "
	"SELECT v FROM v UNION ALL SELECT NULL UNION ALL SELECT '' "
	"UNION ALL SELECT left(v, n) FROM v, generate_series(0, 70) n "
	"UNION ALL SELECT v || c FROM v, ch UNION ALL SELECT c || v FROM v, ch "
	"UNION ALL SELECT overlay(v placing c from p for 1) FROM v, ch, "
	"  generate_series(1, 70) p WHERE p <= length(v) "
	"UNION ALL SELECT left(v, length(v) - 1) || c FROM v, ch $$";

static const char *const judge_fn =
	"CREATE FUNCTION pg_temp.disagree(call text, pattern text, valid text[], "
	"  null_passes boolean) RETURNS text LANGUAGE plpgsql AS $$ "
	"DECLARE s text; got boolean; want boolean; n integer := 0; first text := ''; "
	"BEGIN FOR s IN SELECT * FROM pg_temp.corpus(valid) LOOP "
	"  BEGIN EXECUTE call USING s; got := true; "
	"  EXCEPTION WHEN check_violation OR SQLSTATE 'OB422' THEN got := false; END; "
	"  want := CASE WHEN s IS NULL THEN null_passes ELSE s ~ pattern END; "
	"  IF got IS DISTINCT FROM want THEN n := n + 1; "
	"    IF n <= 5 THEN first := first || ' ' || quote_nullable(s); END IF; END IF; "
	"END LOOP; RETURN n || first; END $$";

static void same_as(const char *call, const char *pattern, const char *valid, int null_passes)
{
	char sql[2048];
	PGresult *r;

	snprintf(sql, sizeof(sql), "SELECT pg_temp.disagree($1, $2, '%s', %s)", valid,
		 null_passes ? "true" : "false");
	{
		const char *p[2] = {call, pattern};
		r = PQexecParams(conn, sql, 2, NULL, p, NULL, NULL, 0);
	}
	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
	ck_assert_msg(!strcmp(PQgetvalue(r, 0, 0), "0"),
		      "%s and %s disagree (how many, then the first): %s", call, pattern,
		      PQgetvalue(r, 0, 0));
	PQclear(r);
}

START_TEST(test_patterns_accept_what_the_regexes_accepted)
{
	char call[1024];

	pgtest_exec(conn, corpus_fn);
	pgtest_exec(conn, judge_fn);
	call_sql(call, sizeof(call), 0, "tx_hash", "$1::text", NULL, NULL);
	same_as(call, "^[0-9a-f]{64}$",
		"{0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}", 1);
	same_as("SELECT outbox.check_hash('h', $1)", "^[0-9a-f]{64}$",
		"{fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210}", 0);
	/* 0009's rule: 1..64 characters and the pattern */
	call_sql(call, sizeof(call), 2, "chain", "$1::text", NULL, NULL);
	same_as(call, "^(vshard:[0-9]{1,4}|oracle:[A-Za-z0-9_-]{1,32})$",
		"{vshard:0,vshard:4095,vshard:12,oracle:a,oracle:Zz09_-abcdefghijklmnopqrstuvw,"
		"oracle:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef}",
		1);
}
END_TEST

static Suite *row_rules_suite(void)
{
	Suite *s = suite_create("row_rules");
	TCase *t = tcase_create("rules");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_every_rule_names_its_constraint);
	tcase_add_test(t, test_nulls_pass_as_they_did);
	tcase_add_test(t, test_tables_enforce_their_rules);
	tcase_add_test(t, test_patterns_accept_what_the_regexes_accepted);
	suite_add_tcase(s, t);
	return s;
}

OUTBOX_CHECK_MAIN(row_rules_suite)
