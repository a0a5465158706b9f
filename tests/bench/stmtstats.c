/* stmtstats - see stmtstats.h. */
#include "tests/bench/stmtstats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

	if (!ok)
		fprintf(stderr, "stmtstats: %.100s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	return ok ? 0 : -1;
}

static int is_statements(const char *source)
{
	return !strcmp(source, "pg_stat_statements");
}

const char *stmtstats_prepare(PGconn *c)
{
	PGresult *r = PQexec(c, "SELECT current_setting('shared_preload_libraries') ~ "
				"'pg_stat_statements'");
	int preloaded = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
			PQgetvalue(r, 0, 0)[0] == 't';

	PQclear(r);
	if (run(c, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_functions = pl', "
		   "current_database()); END $$"))
		return NULL;
	if (!preloaded)
		return "pg_stat_user_functions";
	if (run(c, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements") ||
	    run(c, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET pg_stat_statements.track "
		   "= %L', current_database(), 'all'); END $$"))
		return NULL;
	return "pg_stat_statements";
}

/* key, label, calls, ms (and total ms for functions) of the current counters */
static const char *counters_sql(const char *source)
{
	/* statements of one text at any array length (the set forms' ARRAY[$1,..]
	 * literals make one entry per length) are one entry */
	if (is_statements(source))
		return "SELECT toplevel::text || ':' || w AS k, w AS what, sum(calls) AS calls, "
		       "sum(total_exec_time) AS ms, sum(total_exec_time) AS total_ms, sum(rows) "
		       "AS rows, toplevel FROM (SELECT *, "
		       "left(regexp_replace(regexp_replace(query, "
		       "'\\s+', ' ', 'g'), 'ARRAY\\[[$0-9, ]+\\]', 'ARRAY[..]', 'g'), 200) AS w "
		       "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE "
		       "datname = current_database())) s GROUP BY toplevel, w";
	return "SELECT funcid::text AS k, schemaname || '.' || funcname AS what, calls, "
	       "self_time AS ms, total_time AS total_ms, 0::bigint AS rows, NULL::boolean AS "
	       "toplevel "
	       "FROM pg_stat_user_functions";
}

int stmtstats_begin(PGconn *c, const char *source)
{
	char sql[1024];

	snprintf(sql, sizeof(sql),
		 "SET client_min_messages = warning; SELECT pg_stat_clear_snapshot(); "
		 "DROP TABLE IF EXISTS bench_stat0; CREATE TABLE bench_stat0 AS %s; "
		 "RESET client_min_messages",
		 counters_sql(source));
	return run(c, sql);
}

json_t *stmtstats_end(PGconn *c, const char *source, double ops, int top)
{
	char sql[2048];
	PGresult *r;
	json_t *a;

	if (run(c, "SELECT pg_stat_clear_snapshot()"))
		return NULL;
	snprintf(sql, sizeof(sql),
		 "SELECT n.what, n.calls - coalesce(b.calls, 0), n.ms - coalesce(b.ms, 0), "
		 "n.total_ms - coalesce(b.total_ms, 0), n.rows - coalesce(b.rows, 0), n.toplevel "
		 "FROM (%s) n LEFT JOIN bench_stat0 b "
		 "USING (k) WHERE n.calls > coalesce(b.calls, 0) ORDER BY 3 DESC LIMIT %d",
		 counters_sql(source), top);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "stmtstats: %s", PQresultErrorMessage(r));
		PQclear(r);
		return NULL;
	}
	a = json_array();
	for (int i = 0; i < PQntuples(r); i++) {
		double calls = strtod(PQgetvalue(r, i, 1), NULL);
		double ms = strtod(PQgetvalue(r, i, 2), NULL);
		double total = strtod(PQgetvalue(r, i, 3), NULL);
		json_t *o = json_pack("{s:s, s:f, s:f}", "what", PQgetvalue(r, i, 0),
				      "calls_per_op", calls / ops, "ms_per_op", ms / ops);

		if (!is_statements(source))
			json_object_set_new(o, "total_ms_per_op", json_real(total / ops));
		else { /* rows returned or written per call: a claim's batch, say */
			json_object_set_new(o, "rows_per_call",
					    json_real(strtod(PQgetvalue(r, i, 4), NULL) / calls));
			json_object_set_new(o, "toplevel",
					    json_boolean(PQgetvalue(r, i, 5)[0] == 't'));
		}
		json_array_append_new(a, o);
	}
	PQclear(r);
	return a;
}
