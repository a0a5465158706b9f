/*
 * check_pgq.c - the non-blocking libpq queue (common/pgq.h)
 * against a real PostgreSQL: group commit of queued batchable commands
 * (one transaction, one result per callback, parameters that need quoting
 * arrive intact, NULL stays NULL), a failing statement inside a batch (the
 * batch rolls back and every command is re-sent alone, so each callback
 * sees only its own verdict), a callback that sends while a batch is being
 * delivered (the rest of the batch is never sent twice), no batching on an
 * idle connection; merged commands (pgq_send_merge) go out as one call of
 * their set form with every value intact and in order, a failing one is
 * re-sent command by command, and only neighbours merge; and a connect to a server that never answers does not
 * block the event loop and gives up at the deadline; an outage is logged
 * once per episode (a warning when it begins, a line when it ends), and a
 * task due meanwhile waits for the next connect try (pgq_due_wait_ms); what
 * the server says to an idle session comes out as a log line, never raw;
 * a connection we close ourselves (an orderly shutdown) is no warning.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tests/support/check_main.h"
#include "tests/support/pgtest.h"
#include "common/pgq.h"
#include "common/clock.h"
#include "common/shm/layout.h"
#include "common/shm/stats.h"

static struct pgtest_db db;
static PGconn *c;
static struct pgq q;
static struct shm_stats_block *blk; /* q.stats: the metrics */
static int ep = -1;

struct call {
	int done;
	ExecStatusType st;
	char sqlstate[6];
	char value[64];
	int resend_k; /* > 0: send an insert of this key from the callback */
};

static int pending;

static void on_result(PGresult *res, void *arg)
{
	struct call *k = arg;

	k->done++;
	pending--;
	k->st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	snprintf(k->sqlstate, sizeof(k->sqlstate), "%s", pgq_sqlstate(res));
	if (res && pgq_ok(res) && PQntuples(res) == 1)
		snprintf(k->value, sizeof(k->value), "%s", PQgetvalue(res, 0, 0));
	if (k->resend_k > 0) {
		static struct call extra;
		char key[16];
		const char *p[2] = {key, "from a callback"};

		snprintf(key, sizeof(key), "%d", k->resend_k);
		k->resend_k = 0;
		pending++;
		ck_assert_int_eq(pgq_send_batch(&q,
						"INSERT INTO t VALUES ($1::int, $2) RETURNING k", 2,
						p, on_result, &extra),
				 0);
	}
}

static void run(int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;

	while (pending > 0 && mono_ms() < end) {
		struct epoll_event evs[4];
		int n;

		pgq_tick(&q, mono_ms());
		n = epoll_wait(ep, evs, 4, 20);
		for (int i = 0; i < n; i++)
			pgq_on_ready(&q, evs[i].events);
	}
	ck_assert_int_eq(pending, 0);
}

static int ups, downs;

static void on_connect(bool up, void *arg)
{
	(void)arg;
	if (up)
		ups++;
	else
		downs++;
}

/* Drive a non-blocking connect through epoll; returns the longest pgq_tick in ms. */
static int64_t pump_until_connected(struct pgq *x, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms, longest = 0;

	while (!pgq_connected(x) && mono_ms() < end) {
		struct epoll_event evs[4];
		int64_t t0 = mono_ms();
		int n;

		pgq_tick(x, t0);
		if (mono_ms() - t0 > longest)
			longest = mono_ms() - t0;
		n = epoll_wait(ep, evs, 4, 20);
		for (int i = 0; i < n; i++)
			pgq_on_ready(x, evs[i].events);
	}
	return longest;
}

static void setup(void)
{
	pgtest_setup_empty(&db);
	c = pgtest_connect(&db);
	pgtest_exec(c, "CREATE TABLE t (k int PRIMARY KEY, v text)");
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(pgq_init(&q, db.conninfo, "check_pgq", ep, 7, NULL, on_connect, NULL), 0);
	blk = calloc(1, sizeof(*blk));
	ck_assert_ptr_nonnull(blk);
	q.stats = blk;
	ups = downs = 0;
	pump_until_connected(&q, 5000);
	ck_assert(pgq_connected(&q));
	ck_assert_int_eq(ups, 1);
	pending = 0;
}

static void teardown(void)
{
	pgq_release(&q);
	free(blk);
	close(ep);
	PQfinish(c);
	pgtest_teardown(&db);
}

/* The metrics (MET_PG_*) say what the queue's own counters say. */
static void metrics_match(void)
{
	ck_assert_uint_eq(stats_counter_read(blk, MET_PG_BATCHES), q.batches);
	ck_assert_uint_eq(stats_counter_read(blk, MET_PG_MERGED), q.merged);
	ck_assert_uint_eq(stats_counter_read(blk, MET_PG_BATCH_RETRIES), q.batch_retries);
}

/* Occupy the wire so the next commands queue up behind it. */
static void busy_wire(struct call *k)
{
	pending++;
	ck_assert_int_eq(pgq_send(&q, "SELECT pg_sleep(0.2)", 0, NULL, on_result, k), 0);
}

static int insert(int key, const char *v, struct call *k)
{
	char ks[16];
	const char *p[2] = {ks, v};

	snprintf(ks, sizeof(ks), "%d", key);
	pending++;
	return pgq_send_batch(&q,
			      "INSERT INTO t VALUES ($1::int, $2) RETURNING k::text || ':' || v", 2,
			      p, on_result, k);
}

/* Key i + 1 holds vals[i] (NULL as NULL) and, if ordered, was inserted i + 1-th (column o). */
static void stored_as_sent(const char *const *vals, int n, bool ordered)
{
	for (int i = 0; i < n; i++) {
		char sql[96];
		PGresult *r;

		snprintf(sql, sizeof(sql), "SELECT v, %s FROM t WHERE k = %d", ordered ? "o" : "0",
			 i + 1);
		r = PQexec(c, sql);
		ck_assert_int_eq(PQntuples(r), 1);
		if (vals[i])
			ck_assert_str_eq(PQgetvalue(r, 0, 0), vals[i]);
		else
			ck_assert(PQgetisnull(r, 0, 0));
		if (ordered)
			ck_assert_int_eq(atoi(PQgetvalue(r, 0, 1)), i + 1);
		PQclear(r);
	}
}

START_TEST(test_queued_commands_share_one_commit)
{
	static const char *vals[10] = {
		"plain",   "it's",       "a\\b",   "$1 $2", "'; DROP TABLE t; --",
		"ünïcødé", "two\nlines", "\"dq\"", "E'x'",  NULL};
	struct call sleep = {0}, k[10];
	char want[64];

	memset(k, 0, sizeof(k));
	busy_wire(&sleep);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(insert(i + 1, vals[i], &k[i]), 0);
	run(5000);
	ck_assert_uint_eq(q.batches, 1);
	ck_assert_uint_eq(q.batched, 10);
	ck_assert_uint_eq(q.batch_retries, 0);
	metrics_match();
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(k[i].done, 1);
		ck_assert_int_eq(k[i].st, PGRES_TUPLES_OK);
		if (vals[i]) {
			snprintf(want, sizeof(want), "%d:%s", i + 1, vals[i]);
			ck_assert_str_eq(k[i].value, want);
		}
	}
	/* every value stored as sent; one transaction for all ten */
	stored_as_sent(vals, 10, false);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(DISTINCT xmin::text) FROM t"), 1);
}
END_TEST

/*
 * Five inserts of keys 1..5 as "new" met key 3 already there: the batch
 * rolled back once and each went alone, the third refused (ok: what the
 * others' own statements return), in four transactions, not one.
 */
static void resent_alone(const struct call *k, ExecStatusType ok)
{
	ck_assert_uint_eq(q.batch_retries, 1);
	metrics_match();
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(k[i].done, 1);
		ck_assert_int_eq(k[i].st, i == 2 ? PGRES_FATAL_ERROR : ok);
		if (i == 2)
			ck_assert_str_eq(k[i].sqlstate, "23505");
	}
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t WHERE v = 'new'"), 4);
	ck_assert_int_eq(
		pgtest_scalar(c, "SELECT count(DISTINCT xmin::text) FROM t WHERE v = 'new'"), 4);
}

START_TEST(test_failing_statement_resends_each_alone)
{
	struct call sleep = {0}, k[5];

	memset(k, 0, sizeof(k));
	pgtest_exec(c, "INSERT INTO t VALUES (3, 'already here')");
	busy_wire(&sleep);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(insert(i + 1, "new", &k[i]), 0);
	run(5000);
	ck_assert_uint_eq(q.batches, 1);
	resent_alone(k, PGRES_TUPLES_OK);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t WHERE v = 'already here'"), 1);
}
END_TEST

START_TEST(test_send_from_callback_never_resends_the_batch)
{
	struct call sleep = {0}, k[4];

	memset(k, 0, sizeof(k));
	k[0].resend_k = 100; /* the first callback sends while 3 results are still due */
	busy_wire(&sleep);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(insert(i + 1, "x", &k[i]), 0);
	run(5000);
	ck_assert_uint_eq(q.batch_retries, 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(k[i].done, 1);
		ck_assert_int_eq(k[i].st, PGRES_TUPLES_OK);
	}
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t"), 5);
}
END_TEST

START_TEST(test_idle_connection_sends_alone)
{
	struct call k[3];

	memset(k, 0, sizeof(k));
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(insert(i + 1, "idle", &k[i]), 0);
		run(5000);
	}
	ck_assert_uint_eq(q.batches, 0);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(DISTINCT xmin::text) FROM t"), 3);
}
END_TEST

/*
 * Merging: the set form of "INSERT INTO t VALUES ($1, $2)". It counts its
 * calls in t_calls, so a test sees how many statements the commands became.
 */
static const struct pgq_merge insert_merge = {.fn = "t_insert_all",
					      .types = {"integer[]", "text[]"}};

static void create_set_form(void)
{
	pgtest_exec(c, "CREATE TABLE t_calls (n int)");
	/* unnest WITH ORDINALITY adds a column: t gets it as a third */
	pgtest_exec(c, "ALTER TABLE t ADD COLUMN o bigint");
	pgtest_exec(c, "CREATE FUNCTION t_insert_all(ks int[], vs text[]) RETURNS void "
		       "LANGUAGE sql AS $$ INSERT INTO t_calls VALUES (cardinality(ks)); "
		       "INSERT INTO t SELECT * FROM unnest(ks, vs) WITH ORDINALITY u (k, v, o) "
		       "ORDER BY o $$");
}

static int insert_merged(int key, const char *v, struct call *k)
{
	char ks[16];
	const char *p[2] = {ks, v};

	snprintf(ks, sizeof(ks), "%d", key);
	pending++;
	return pgq_send_merge(&q, &insert_merge, "INSERT INTO t VALUES ($1::int, $2)", 2, p,
			      on_result, k);
}

START_TEST(test_merged_commands_are_one_statement)
{
	static const char *vals[6] = {"plain", "it's", "a\\b", "'; DROP TABLE t; --", "E'x'", NULL};
	struct call sleep = {0}, k[6];

	memset(k, 0, sizeof(k));
	create_set_form();
	busy_wire(&sleep);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(insert_merged(i + 1, vals[i], &k[i]), 0);
	run(5000);
	ck_assert_uint_eq(q.batches, 1);
	ck_assert_uint_eq(q.merged, 6);
	metrics_match();
	ck_assert_uint_eq(q.batch_retries, 0);
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(k[i].done, 1);
		ck_assert_int_eq(k[i].st, PGRES_TUPLES_OK);
	}
	/* one call of the set form, every value as sent, in queue order */
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t_calls"), 1);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT n FROM t_calls"), 6);
	stored_as_sent(vals, 6, true);
}
END_TEST

START_TEST(test_merged_failure_resends_each_alone)
{
	struct call sleep = {0}, k[5];

	memset(k, 0, sizeof(k));
	create_set_form();
	pgtest_exec(c, "INSERT INTO t VALUES (3, 'already here')");
	busy_wire(&sleep);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(insert_merged(i + 1, "new", &k[i]), 0);
	run(5000);
	/* the set form's call rolled back; each went alone with its own statement */
	resent_alone(k, PGRES_COMMAND_OK);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t_calls"), 0);
}
END_TEST

/* Only neighbours merge: a plain command between two runs splits them. */
START_TEST(test_merge_runs_split_by_other_commands)
{
	struct call sleep = {0}, k[5];

	memset(k, 0, sizeof(k));
	create_set_form();
	busy_wire(&sleep);
	ck_assert_int_eq(insert_merged(1, "a", &k[0]), 0);
	ck_assert_int_eq(insert_merged(2, "b", &k[1]), 0);
	ck_assert_int_eq(insert(3, "plain", &k[2]), 0);
	ck_assert_int_eq(insert_merged(4, "c", &k[3]), 0);
	ck_assert_int_eq(insert_merged(5, "d", &k[4]), 0);
	run(5000);
	ck_assert_uint_eq(q.batches, 1);
	ck_assert_uint_eq(q.merged, 4);
	metrics_match();
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(k[i].done, 1);
		ck_assert_int_eq(k[i].st,
				 PGRES_TUPLES_OK); /* two SELECTs and an INSERT RETURNING */
	}
	ck_assert_str_eq(k[2].value, "3:plain");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t_calls WHERE n = 2"), 2);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM t"), 5);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(DISTINCT xmin::text) FROM t"), 1);
	/* a descriptor without a type for a parameter is refused */
	{
		static const struct pgq_merge half = {.fn = "t_insert_all", .types = {"integer[]"}};
		const char *p[2] = {"9", "x"};

		ck_assert_int_eq(pgq_send_merge(&q, &half, "INSERT INTO t VALUES ($1::int, $2)", 2,
						p, on_result, &k[0]),
				 -EINVAL);
	}
}
END_TEST

/*
 * A server that accepts TCP but never answers (a listening socket nobody
 * accepts from): connecting never blocks the loop, gives up at
 * PGQ_CONNECT_TIMEOUT_MS with on_connect(false), and sends fail fast.
 */
START_TEST(test_connect_never_blocks_the_loop)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	char conninfo[128];
	struct pgq mute;
	int64_t t0, longest;

	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(ls, 8), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &len), 0);
	snprintf(conninfo, sizeof(conninfo), "host=127.0.0.1 port=%d dbname=x user=x",
		 ntohs(a.sin_port));
	ck_assert_int_eq(pgq_init(&mute, conninfo, "check_pgq", ep, 9, NULL, on_connect, NULL), 0);
	downs = 0;
	t0 = mono_ms();
	longest = pump_until_connected(&mute, PGQ_CONNECT_TIMEOUT_MS - 500);
	ck_assert(!pgq_connected(&mute));
	ck_assert_int_lt(longest, 100); /* no call waited on the server */
	ck_assert_int_eq(pgq_send(&mute, "SELECT 1", 0, NULL, on_result, NULL), -ENOTCONN);
	ck_assert_int_eq(downs, 0); /* still trying */
	pump_until_connected(&mute, 2000);
	ck_assert_int_eq(downs, 1); /* gave up at the deadline */
	ck_assert_int_ge(mono_ms() - t0, PGQ_CONNECT_TIMEOUT_MS);
	pgq_release(&mute);
	close(ls);
}
END_TEST

/* Run fn with stderr (where the log goes) in a file; the file's text in out. */
static void capture_log(void (*fn)(void *), void *arg, char *out, size_t cap)
{
	char path[] = "/tmp/check_pgq_log.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(saved, 0);
	unlink(path);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	fn(arg);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	n = pread(fd, out, cap - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
}

static int count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Retry a refused connect until at least 4 attempts failed. */
static void refused_episode(void *arg)
{
	struct pgq *x = arg;
	int64_t end = mono_ms() + 20000;

	while (x->failures < 4 && mono_ms() < end) {
		struct epoll_event evs[4];
		int n;

		pgq_tick(x, mono_ms());
		n = epoll_wait(ep, evs, 4, 20);
		for (int i = 0; i < n; i++)
			pgq_on_ready(x, evs[i].events);
	}
}

/* The server ends our session; a statement notices, the queue reconnects. */
static void lost_episode(void *arg)
{
	static struct call k;

	(void)arg;
	pgtest_exec(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		       "WHERE application_name = 'check_pgq'");
	pending++;
	ck_assert_int_eq(pgq_send(&q, "SELECT 1", 0, NULL, on_result, &k), 0);
	run(5000);
	pump_until_connected(&q, 10000);
}

/* Send sql alone with parameter v; run it to its end. */
static void alone(const char *sql, const char *v, struct call *k)
{
	memset(k, 0, sizeof(*k));
	pending++;
	ck_assert_int_eq(pgq_send(&q, sql, v ? 1 : 0, &v, on_result, k), 0);
	run(5000);
	ck_assert_int_eq(k->done, 1);
}

/* The names and texts (their first 16 characters) of the session's prepared statements. */
#define LIST_PREPARED                                                                              \
	"SELECT string_agg(name || '=' || left(statement, 16), ';' ORDER BY name) FROM "           \
	"pg_prepared_statements"

/*
 * A command sent alone runs prepared: each text is prepared once per
 * session, on its first send, and runs as that statement afterwards. A text
 * the server refuses to prepare gives its command the error the statement
 * would have raised, and is not kept; a reconnect prepares again; texts
 * past PGQ_PREPARED_MAX are sent unnamed.
 */
START_TEST(test_alone_commands_run_prepared)
{
	const char *sel = "SELECT $1::int + 1";
	char sql[64];
	struct call k;

	for (int i = 0; i < 3; i++) {
		char v[8];

		snprintf(v, sizeof(v), "%d", i);
		alone(sel, v, &k);
		ck_assert_int_eq(k.st, PGRES_TUPLES_OK);
		ck_assert_int_eq(atoi(k.value), i + 1);
	}
	ck_assert_int_eq(q.n_prepared, 1);
	alone("SELECT no_such_function($1)", "x", &k);
	ck_assert_int_eq(k.st, PGRES_FATAL_ERROR);
	ck_assert_str_eq(k.sqlstate, "42883");
	ck_assert_int_eq(q.n_prepared, 1);
	alone(LIST_PREPARED, NULL, &k);
	ck_assert_str_eq(k.value, "pgq0=SELECT $1::int +;pgq1=SELECT string_ag");

	/* A new session: the list starts again, the text is prepared again. */
	lost_episode(NULL);
	ck_assert_int_eq(q.n_prepared, 0);
	alone(sel, "41", &k);
	ck_assert_str_eq(k.value, "42");
	ck_assert_int_eq(q.n_prepared, 1);

	/* Past the list's capacity, texts go unnamed and still run. */
	for (int i = 1; i <= PGQ_PREPARED_MAX + 2; i++) {
		snprintf(sql, sizeof(sql), "SELECT $1::int + %d", i);
		alone(sql, "1", &k);
		ck_assert_int_eq(k.st, PGRES_TUPLES_OK);
		ck_assert_int_eq(atoi(k.value), i + 1);
	}
	ck_assert_int_eq(q.n_prepared, PGQ_PREPARED_MAX);
}
END_TEST

/*
 * A server that is down for a while, or refuses every connect, is one
 * episode: one warning when it begins (the retries are debug lines) and one
 * line when a connect ends it, not a warning per attempt per connection.
 */
START_TEST(test_outage_logs_once_per_episode)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	char conninfo[128], text[16384];
	struct pgq refused;
	int64_t now;

	/* a port nothing listens on: bound, never listened to */
	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &len), 0);
	snprintf(conninfo, sizeof(conninfo), "host=127.0.0.1 port=%d dbname=x user=x",
		 ntohs(a.sin_port));
	ck_assert_int_eq(pgq_init(&refused, conninfo, "check_pgq", ep, 9, NULL, NULL, NULL), 0);
	capture_log(refused_episode, &refused, text, sizeof(text));
	ck_assert_uint_ge(refused.failures, 4);
	ck_assert_msg(count(text, "connect failed") == 1, "want one warning, got:\n%s", text);
	/* a periodic task due while the database is down sleeps until the next try */
	now = mono_ms();
	ck_assert(!pgq_connected(&refused));
	ck_assert_int_eq(pgq_due_wait_ms(&refused, now - 1, now, 600000),
			 pgq_timeout_ms(&refused, now));
	ck_assert_int_eq(pgq_due_wait_ms(&refused, now + 500, now, 600000), 500);
	ck_assert_int_eq(pgq_due_wait_ms(&q, now - 1, now, 1000), 0); /* up and due: at once */
	ck_assert_int_eq(pgq_due_wait_ms(&q, now + 5000, now, 1000), 1000);
	pgq_release(&refused);
	close(ls);

	capture_log(lost_episode, NULL, text, sizeof(text));
	ck_assert(pgq_connected(&q));
	ck_assert_msg(count(text, "connection lost") == 1, "want one warning, got:\n%s", text);
	ck_assert_msg(count(text, "connected again after 1 failed attempts") == 1,
		      "want the episode's end, got:\n%s", text);
}
END_TEST

static void release_it(void *arg)
{
	pgq_release(arg);
}

/* The value libpq holds for keyword kw on conn ("" when unset). */
static void conn_option(PGconn *conn, const char *kw, char *out, size_t n)
{
	PQconninfoOption *opts = PQconninfo(conn);

	ck_assert_ptr_nonnull(opts);
	out[0] = '\0';
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, kw) && o->val)
			snprintf(out, n, "%s", o->val);
	PQconninfoFree(opts);
}

/*
 * A session to a server gone silent must not last the kernel's retransmits:
 * every pgq connection asks for TCP keepalives and a user timeout, and a
 * value the conninfo sets itself wins over pgq's.
 */
START_TEST(test_connections_notice_a_silent_server)
{
	struct pgq x;
	char v[64], conninfo[2300];

	conn_option(q.conn, "keepalives", v, sizeof(v));
	ck_assert_str_eq(v, "1");
	conn_option(q.conn, "keepalives_idle", v, sizeof(v));
	ck_assert_str_eq(v, PGQ_KEEPALIVE_IDLE_S);
	conn_option(q.conn, "keepalives_count", v, sizeof(v));
	ck_assert_str_eq(v, "3");
	conn_option(q.conn, "tcp_user_timeout", v, sizeof(v));
	ck_assert_str_eq(v, PGQ_TCP_USER_TIMEOUT_MS);
	conn_option(q.conn, "application_name", v, sizeof(v));
	ck_assert_str_eq(v, "check_pgq");

	snprintf(conninfo, sizeof(conninfo), "%s keepalives_idle=42", db.conninfo);
	ck_assert_int_eq(pgq_init(&x, conninfo, "check_pgq", ep, 9, NULL, NULL, NULL), 0);
	pump_until_connected(&x, 5000);
	ck_assert(pgq_connected(&x));
	conn_option(x.conn, "keepalives_idle", v, sizeof(v));
	ck_assert_str_eq(v, "42");
	conn_option(x.conn, "tcp_user_timeout", v, sizeof(v));
	ck_assert_str_eq(v, PGQ_TCP_USER_TIMEOUT_MS);
	pgq_release(&x);
}
END_TEST

/* Closing our own connection (every role's orderly shutdown) warns of nothing. */
START_TEST(test_release_is_no_warning)
{
	struct pgq x;
	char text[4096];

	ck_assert_int_eq(pgq_init(&x, db.conninfo, "check_pgq", ep, 9, NULL, NULL, NULL), 0);
	pump_until_connected(&x, 5000);
	ck_assert(pgq_connected(&x));
	capture_log(release_it, &x, text, sizeof(text));
	ck_assert_msg(count(text, "level=warn") == 0 && count(text, "connection lost") == 0,
		      "want no warning, got:\n%s", text);
}
END_TEST

/* The server ends our idle session; the loop only listens until the queue notices. */
static void terminated_while_idle(void *arg)
{
	int64_t end = mono_ms() + 10000;

	(void)arg;
	pgtest_exec(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		       "WHERE application_name = 'check_pgq'");
	while (downs == 0 && mono_ms() < end) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, 20);

		for (int i = 0; i < n; i++)
			pgq_on_ready(&q, evs[i].events);
	}
}

/*
 * What the server says to an idle session (the FATAL of a shutdown or a
 * terminate) reaches libpq's notice processor, whose default writes it raw
 * on stderr: it must come out as one of our log lines instead.
 */
START_TEST(test_server_messages_go_through_the_log)
{
	char text[16384];
	const char *line, *eol;

	capture_log(terminated_while_idle, NULL, text, sizeof(text));
	ck_assert_int_eq(downs, 1);
	line = strstr(text, "msg=\"postgresql says FATAL:");
	ck_assert_msg(line && count(text, "terminating connection") == 1,
		      "want the server's FATAL as one log line, got:\n%s", text);
	/* an info line: the connection's loss right after it is the episode's warning */
	while (line > text && line[-1] != '\n')
		line--;
	eol = strchr(line, '\n');
	ck_assert_msg(eol && memmem(line, (size_t)(eol - line), "level=info", 10),
		      "want the FATAL at level info, got:\n%s", text);
	ck_assert_msg(count(text, "\nFATAL:") == 0 && strncmp(text, "FATAL:", 6) != 0,
		      "a raw libpq line reached stderr:\n%s", text);
}
END_TEST

static Suite *pgq_suite(void)
{
	Suite *s = suite_create("pgq");
	TCase *tc = tcase_create("batch");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_queued_commands_share_one_commit);
	tcase_add_test(tc, test_failing_statement_resends_each_alone);
	tcase_add_test(tc, test_send_from_callback_never_resends_the_batch);
	tcase_add_test(tc, test_idle_connection_sends_alone);
	tcase_add_test(tc, test_merged_commands_are_one_statement);
	tcase_add_test(tc, test_merged_failure_resends_each_alone);
	tcase_add_test(tc, test_merge_runs_split_by_other_commands);
	tcase_add_test(tc, test_alone_commands_run_prepared);
	tcase_add_test(tc, test_connect_never_blocks_the_loop);
	tcase_add_test(tc, test_outage_logs_once_per_episode);
	tcase_add_test(tc, test_release_is_no_warning);
	tcase_add_test(tc, test_connections_notice_a_silent_server);
	tcase_add_test(tc, test_server_messages_go_through_the_log);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(pgq_suite)
