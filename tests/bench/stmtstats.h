/*
 * stmtstats - where PostgreSQL's time went, by statement or by function,
 * between two points of a benchmark run, in the benchmark's database.
 *
 * The source is pg_stat_statements when the server preloads it (the
 * extension is created in the benchmark's database, with track = all so
 * statements nested in functions count too), else pg_stat_user_functions
 * with track_functions = 'pl'. Both are set with ALTER DATABASE, so only
 * sessions opened afterwards use them: prepare before launching outboxd.
 * Counters are copied into a table of the benchmark's database at begin and
 * subtracted at end. PostgreSQL publishes a busy backend's counters at most
 * once a second, an idle one's within about ten seconds, and all of them
 * when it exits: take the end after the measured processes disconnected.
 */
#ifndef OUTBOX_TESTS_BENCH_STMTSTATS_H
#define OUTBOX_TESTS_BENCH_STMTSTATS_H

#include <jansson.h>
#include <libpq-fe.h>

/* Configures the database; the source's name ("pg_stat_statements" or
 * "pg_stat_user_functions"), or NULL with a message on stderr. */
const char *stmtstats_prepare(PGconn *c);
/* Snapshots the counters; 0 or -1 (message on stderr). */
int stmtstats_begin(PGconn *c, const char *source);
/*
 * The top entries since begin, by time, each divided by ops: a new JSON
 * array of {"what", "calls_per_op", "ms_per_op"} (for functions ms_per_op
 * is self time and "total_ms_per_op" includes callees; for statements it
 * is execution time, and with track = all a function's statement and the
 * statements nested in it both count: "toplevel" tells them apart, and
 * "rows_per_call" is what pg_stat_statements counts as rows; one text at
 * any ARRAY[$1,..] length is one entry). NULL on failure.
 */
json_t *stmtstats_end(PGconn *c, const char *source, double ops, int top);

#endif
