/*
 * pgtest.h - fresh, migrated PostgreSQL databases for integration tests and
 * benchmarks.
 *
 * Typical use in a Check suite (each test gets its own database):
 *
 *	static struct pgtest_db db;
 *	static void setup(void)    { pgtest_setup(&db, 0); }
 *	static void teardown(void) { pgtest_teardown(&db); }
 *	...
 *	tcase_add_checked_fixture(tc, setup, teardown);
 *	...
 *	PGconn *c = pgtest_connect(&db);     // ck_abort()s on failure
 *	pgtest_exec(c, "BEGIN");
 *	...
 *	PQfinish(c);
 *
 * Where the server is: OUTBOX_PG_BASE, a libpq conninfo string or URI
 * without a database name (ops/test.sh exports it); default
 * "host=127.0.0.1 port=5432 user=postgres". The role must be allowed to
 * CREATE DATABASE.
 *
 * Each database is named outboxd_pgtest_<pid>_<n>, created empty, then
 * brought up to every embedded migration (common/migrate.h) with the given
 * vshard count (0 = the default 64). db->conninfo is a complete conninfo
 * string for it: pass it to PQconnectdb, or export it as
 * OUTBOX_DATABASE_URL to a child process (outboxd, outboxctl).
 * pgtest_teardown() drops it WITH (FORCE), so connections a test leaked do
 * not keep it alive. Check _exit()s a forked test on a failed assertion
 * before its teardown runs, so a failing test leaks its database; every
 * create first drops outboxd_pgtest_<pid>_* databases whose pid no longer
 * runs on this host (so the server must be this host's, as ops/test.sh
 * arranges; never point OUTBOX_PG_BASE at a server shared with other hosts'
 * test runs).
 *
 * The pgtest_db_* functions return 0 or a negative OUTBOX_E* code with err
 * filled, for programs that are not Check suites (tests/bench); the
 * pgtest_setup/teardown/connect/exec helpers ck_abort_msg() instead.
 */
#ifndef OUTBOX_TESTS_PGTEST_H
#define OUTBOX_TESTS_PGTEST_H

#include <libpq-fe.h>
#include <stdint.h>

#include "common/error.h"

#define PGTEST_BASE_DEFAULT "host=127.0.0.1 port=5432 user=postgres"

struct pgtest_db {
	char name[64];       /* database name, "" when none */
	char conninfo[2048]; /* conninfo of that database */
	char admin[2048];    /* conninfo of the maintenance database "postgres" */
};

/* Create an empty database (no migrations); 0 or OUTBOX_E*. */
int pgtest_db_create_empty(struct pgtest_db *db, struct outbox_error *err);
/* Create a database and apply every migration with vshards (0 = default). */
int pgtest_db_create(struct pgtest_db *db, int vshards, struct outbox_error *err);
/* Drop it (WITH (FORCE)); harmless when db->name is "". */
int pgtest_db_drop(struct pgtest_db *db, struct outbox_error *err);

/* Check-suite helpers: same as above, but ck_abort_msg() on failure. */
void pgtest_setup(struct pgtest_db *db, int vshards);
void pgtest_setup_empty(struct pgtest_db *db);
void pgtest_teardown(struct pgtest_db *db);
PGconn *pgtest_connect(const struct pgtest_db *db);
/* Run sql (no parameters) and ck_abort_msg() unless it succeeds. */
void pgtest_exec(PGconn *conn, const char *sql);
/* Run sql; return the first column of the first row as an integer. */
long long pgtest_scalar(PGconn *conn, const char *sql);
/*
 * Shared buffers (hit, read, dirtied, written) of an EXPLAIN (ANALYZE,
 * BUFFERS) result's top node, whose counters include everything a function
 * ran; rows (may be NULL) its actual rows, -1 when not shown. Clears r.
 */
long long pgtest_explain_buffers(PGresult *r, int *rows);

/*
 * A valid account strkey (G..., 56 chars and a NUL) for test account n: the
 * key bytes are SHA-256 of n's four big-endian bytes, so the same n always
 * gives the same account and different n different ones.
 */
void pgtest_account(uint32_t n, char out[57]);

#endif
