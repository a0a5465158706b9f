/*
 * bench_enqueue - what the enqueue contract costs, and what waking a
 * dispatcher costs on top of it.
 *
 * Creates its own database from OUTBOX_PG_BASE (tests/support/pgtest.h),
 * runs every measurement, drops it. For each (rows per transaction 1|100,
 * client connections 1|8 as forked processes) it measures, close together
 * in time:
 *	target=plain    INSERT of the same row into a bare table (no index,
 *	                constraint or trigger): the floor
 *	target=enqueue  outbox.enqueue() through the C client, once per wake-up
 *	                variant:
 *	  none      no NOTIFY at all (dispatchers only sweep)
 *	  per_txn   NOTIFY outbox_wake '' on every insert; PostgreSQL folds
 *	            identical notifications of a transaction, so one per txn
 *	  per_stmt  NOTIFY outbox_wake '<vshard>' per enqueue statement
 *	            (folded only per distinct vshard)
 *	  critical  NOTIFY outbox_wake '<vshard>' only for CRITICAL ops
 *	  migration the trigger schema/0003_wakeup.sql installs, as shipped
 * The order of the variants rotates from round to round, and autovacuum is
 * off for the benchmark's tables (each measurement starts from TRUNCATE).
 * A listener process LISTENs throughout and counts what arrives, as the
 * gateway would. The workload rotates DEPOSIT, WITHDRAW, DEPOSIT, REBALANCE
 * over 256 signers (so 1 in 4 ops is CRITICAL).
 *
 * Every measurement also reads, from /proc (tests/bench/cpumeter.h), the
 * CPU of the database's backends (the clients' and the listener's) per row:
 * pg_cpu_ms_per_row.
 *
 * Output: one JSON line per measurement, one with the server's durability
 * settings, and a summary line for the case the targets name (8
 * connections, one row per transaction, the migration's trigger): the
 * medians over rounds of the plain and enqueue rates, enqueue_vs_plain,
 * and pg_cpu_ms_per_enqueue beside pg_cpu_ms_per_plain_insert. Never
 * asserts on timings.
 * Environment: OUTBOX_PG_BASE, BENCH_SECONDS (per measurement, default 3),
 * BENCH_ROUNDS (default 1): repeat the whole matrix, interleaved, so a
 * shared machine's noise shows as spread between rounds (compare medians).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/enqueue.h"
#include "common/vshard.h"
#include "tests/bench/cpumeter.h"
#include "tests/support/pgtest.h"

#define NSIGNERS 256
#define MAXCONNS 8

static struct pgtest_db db;
static char signers[NSIGNERS][57];
static _Atomic long *notified; /* shared with the listener process */
static int run_no, round_no;
static struct cpumeter *meter;

#define MAXROUNDS 20

/* The summary's case, per round: rows/s and PostgreSQL ms per row. */
static double sum_plain[MAXROUNDS], sum_plain_cpu[MAXROUNDS];
static double sum_enq[MAXROUNDS], sum_enq_cpu[MAXROUNDS];

struct variant {
	const char *name;
	const char *install; /* SQL run before the measurement; NULL = as migrated */
};

#define DROP_WAKE "DROP TRIGGER IF EXISTS ops_wake ON outbox.ops;"
#define ROW_TRIGGER(when, fn)                                                                      \
	DROP_WAKE "CREATE TRIGGER ops_wake AFTER INSERT ON outbox.ops FOR EACH ROW " when          \
		  " EXECUTE FUNCTION bench." fn "();"

static const struct variant variants[] = {
	{"none", DROP_WAKE},
	{"per_txn", ROW_TRIGGER("", "wake_txn")},
	{"per_stmt", ROW_TRIGGER("", "wake_shard")},
	{"critical", ROW_TRIGGER("WHEN (NEW.priority = 0)", "wake_shard")},
	{"migration", NULL},
};

#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static const char bench_setup_sql[] =
	"CREATE SCHEMA bench;"
	"CREATE FUNCTION bench.wake_txn() RETURNS trigger LANGUAGE plpgsql AS $$"
	" BEGIN PERFORM pg_notify('outbox_wake', ''); RETURN NULL; END $$;"
	"CREATE FUNCTION bench.wake_shard() RETURNS trigger LANGUAGE plpgsql AS $$"
	" BEGIN PERFORM pg_notify('outbox_wake', NEW.vshard::text); RETURN NULL; END $$;"
	"CREATE TABLE bench.plain (id bigserial, idempotency_key text, kind text,"
	" priority smallint, status text, user_id text, business_record_id text, signer text,"
	" vshard integer, payload jsonb, created_at timestamptz DEFAULT now());"
	/* No autovacuum kicking in during the next measurement: tables are truncated anyway. */
	"ALTER TABLE bench.plain SET (autovacuum_enabled = off);"
	"ALTER TABLE outbox.ops SET (autovacuum_enabled = off);"
	"ALTER TABLE outbox.events SET (autovacuum_enabled = off);"
	/* Save the migration's wake-up trigger so the last variant can restore it. */
	"CREATE TABLE bench.saved AS SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger"
	" WHERE tgrelid = 'outbox.ops'::regclass AND tgname = 'ops_wake';";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int exec_ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

	if (!ok)
		fprintf(stderr, "bench_enqueue: %.120s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	return ok ? 0 : -1;
}

/* The listener: LISTEN and count notifications until killed. */
static void listen_forever(void)
{
	PGconn *c = PQconnectdb(db.conninfo);
	struct pollfd p;

	if (PQstatus(c) != CONNECTION_OK || exec_ok(c, "LISTEN outbox_wake"))
		_exit(1);
	p.fd = PQsocket(c);
	p.events = POLLIN;
	for (;;) {
		PGnotify *n;

		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			_exit(1);
		if (!PQconsumeInput(c))
			_exit(1);
		while ((n = PQnotifies(c))) {
			atomic_fetch_add(notified, 1);
			PQfreemem(n);
		}
	}
}

static const char *const kinds[4] = {"DEPOSIT", "WITHDRAW", "DEPOSIT", "REBALANCE"};

/* One row of the workload: the i-th of worker w in this run. */
static int one_row(PGconn *c, int plain, int w, long i, struct outbox_error *err)
{
	const char *kind = kinds[i % 4];
	const char *signer = signers[(i * 7 + w) % NSIGNERS];
	char user[32], brid[48], payload[128], key[128], shard[16], prio[4];
	struct outbox_intent in;
	struct outbox_enqueued out;

	snprintf(user, sizeof(user), "bench%d", w);
	snprintf(brid, sizeof(brid), "r%d-%ld", run_no, i);
	if (i % 4 == 3)
		snprintf(payload, sizeof(payload), "{\"amount\": \"1000\"}");
	else
		snprintf(payload, sizeof(payload), "{\"account\": \"%s\", \"amount\": \"1000\"}",
			 signers[(i + 1) % NSIGNERS]);
	if (!plain) {
		in = (struct outbox_intent){kind, user, brid, signer, payload, NULL};
		return outbox_enqueue(c, &in, &out, err);
	}
	{
		const char *params[8] = {key, kind, prio, user, brid, signer, shard, payload};
		PGresult *r;
		int rc = 0;

		snprintf(key, sizeof(key), "%s:%s:%s", kind, user, brid);
		snprintf(prio, sizeof(prio), "%d", i % 4 == 1 ? 0 : i % 4 == 3 ? 2 : 1);
		snprintf(shard, sizeof(shard), "%d", outbox_vshard_of(signer, 56, 64));
		r = PQexecParams(
			c,
			"INSERT INTO bench.plain (idempotency_key, kind, priority, status, user_id,"
			" business_record_id, signer, vshard, payload)"
			" VALUES ($1, $2, $3, 'PENDING', $4, $5, $6, $7, $8)",
			8, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			rc = outbox_error_set(err, OUTBOX_EDB, "", "%s", PQresultErrorMessage(r));
		PQclear(r);
		return rc;
	}
}

/*
 * A worker process: connect, wait for go, run transactions for secs, report,
 * then keep its connection until fin closes, so that the CPU meter reads
 * its backend alive.
 */
static void worker(int w, int plain, int batch, double secs, int go_fd, int res_fd, int fin_fd)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = PQconnectdb(db.conninfo);
	double rec[2] = {-1, 0}, t0;
	long i = 0;
	char b;

	if (PQstatus(c) != CONNECTION_OK)
		goto out;
	if (read(go_fd, &b, 1) < 0)
		goto out;
	t0 = now_s();
	while (now_s() - t0 < secs) {
		if (exec_ok(c, "BEGIN"))
			goto out;
		for (int k = 0; k < batch; k++, i++)
			if (one_row(c, plain, w, i, &err)) {
				fprintf(stderr, "bench_enqueue: %s\n", err.msg);
				goto out;
			}
		if (exec_ok(c, "COMMIT"))
			goto out;
	}
	rec[0] = (double)i;
	rec[1] = now_s() - t0;
out:
	if (write(res_fd, rec, sizeof(rec)) != sizeof(rec))
		_exit(2);
	if (read(fin_fd, &b, 1) < 0) /* EOF when the meter has read */
		_exit(2);
	PQfinish(c);
	_exit(rec[0] < 0);
}

/*
 * Run one measurement; returns rows per second (or -1), printing a line,
 * and PostgreSQL's CPU per row in *pg_ms.
 */
static double measure(PGconn *admin, const char *target, const char *wake, int batch, int conns,
		      double secs, double plain_rate, double *pg_ms)
{
	int go[2], res[2], fin[2], failed = 0;
	double rows = 0, elapsed = 0, rate, cpu0[CM_NCLASS], cpu1[CM_NCLASS];
	long n0, n1;
	pid_t pids[MAXCONNS];

	if (exec_ok(admin, "TRUNCATE outbox.ops, outbox.events, outbox.attempts, bench.plain") ||
	    exec_ok(admin, "CHECKPOINT"))
		return -1;
	run_no++;
	if (pipe(go) || pipe(res) || pipe(fin))
		return -1;
	for (int w = 0; w < conns; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			close(go[1]);
			close(res[0]);
			close(fin[1]);
			worker(w, !strcmp(target, "plain"), batch, secs, go[0], res[1], fin[0]);
		}
	}
	close(go[0]);
	close(res[1]);
	close(fin[0]);
	usleep(300 * 1000); /* connections up */
	n0 = atomic_load(notified);
	if (cpumeter_read(meter, cpu0))
		failed = 1;
	close(go[1]);
	for (int w = 0; w < conns; w++) {
		double rec[2];

		if (read(res[0], rec, sizeof(rec)) != sizeof(rec) || rec[0] < 0)
			failed = 1;
		else {
			rows += rec[0];
			elapsed = rec[1] > elapsed ? rec[1] : elapsed;
		}
	}
	close(res[0]);
	if (cpumeter_read(meter, cpu1)) /* every client idle, none gone */
		failed = 1;
	close(fin[1]);
	for (int w = 0; w < conns; w++)
		waitpid(pids[w], NULL, 0);
	usleep(200 * 1000); /* let the listener drain */
	n1 = atomic_load(notified);
	if (failed || elapsed <= 0)
		return -1;
	rate = rows / elapsed;
	*pg_ms = (cpu1[CM_PG] - cpu0[CM_PG]) / rows;
	printf("{\"bench\":\"enqueue\",\"round\":%d,\"target\":\"%s\",\"wake\":\"%s\","
	       "\"rows_per_txn\":%d,"
	       "\"conns\":%d,\"seconds\":%.2f,\"rows\":%.0f,\"rows_per_s\":%.0f,"
	       "\"txn_per_s\":%.0f,\"notifications\":%ld",
	       round_no, target, wake, batch, conns, elapsed, rows, rate, rate / batch, n1 - n0);
	if (plain_rate > 0)
		printf(",\"vs_plain\":%.3f", rate / plain_rate);
	printf(",\"pg_cpu_ms_per_row\":%.4f,\"client_cpu_ms_per_row\":%.4f}\n", *pg_ms,
	       (cpu1[CM_BENCH] - cpu0[CM_BENCH]) / rows);
	fflush(stdout);
	return rate;
}

static void print_settings(PGconn *c)
{
	PGresult *r = PQexec(c, "SELECT current_setting('server_version'),"
				" current_setting('synchronous_commit'), current_setting('fsync'),"
				" (SELECT count(*) FROM pg_trigger WHERE tgname = 'ops_wake'),"
				" (SELECT string_agg(def, '') FROM bench.saved)");

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		printf("{\"bench\":\"enqueue\",\"server_version\":\"%s\","
		       "\"synchronous_commit\":\"%s\",\"fsync\":\"%s\",\"cpus\":%ld,"
		       "\"migration_trigger\":\"%s\"}\n",
		       PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
		       sysconf(_SC_NPROCESSORS_ONLN),
		       PQgetisnull(r, 0, 4) ? "none" : PQgetvalue(r, 0, 4));
	PQclear(r);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The targets' case over every round: medians, and their ratio. */
static void print_summary(int rounds)
{
	double plain = median(sum_plain, rounds), enq = median(sum_enq, rounds);

	printf("{\"bench\":\"enqueue\",\"summary\":true,\"rounds\":%d,\"rows_per_txn\":1,"
	       "\"conns\":%d,\"wake\":\"migration\",\"plain_rows_per_s\":%.0f,"
	       "\"enqueue_rows_per_s\":%.0f,\"enqueue_vs_plain\":%.3f,"
	       "\"pg_cpu_ms_per_enqueue\":%.4f,\"pg_cpu_ms_per_plain_insert\":%.4f,"
	       "\"loadavg_1m\":%.2f}\n",
	       rounds, MAXCONNS, plain, enq, plain > 0 ? enq / plain : 0,
	       median(sum_enq_cpu, rounds), median(sum_plain_cpu, rounds), cpumeter_loadavg());
	fflush(stdout);
}

static void quiet(void *arg, const char *message)
{
}

static int restore_migration_trigger(PGconn *c)
{
	PGresult *r = PQexec(c, "SELECT def FROM bench.saved");
	int rc = 0;

	if (exec_ok(c, DROP_WAKE))
		rc = -1;
	else if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		rc = exec_ok(c, PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

int main(void)
{
	static const int batches[] = {1, 100}, connss[] = {1, MAXCONNS};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const char *s = getenv("BENCH_SECONDS"), *r = getenv("BENCH_ROUNDS");
	double secs = s ? atof(s) : 3.0;
	int rounds = r ? atoi(r) : 1;
	PGconn *admin = NULL;
	pid_t listener;
	int rc = 1;

	if (secs <= 0 || secs > 60) {
		fprintf(stderr, "bench_enqueue: BENCH_SECONDS: '%s' is not in (0, 60]\n", s);
		return 2;
	}
	if (rounds < 1 || rounds > MAXROUNDS) {
		fprintf(stderr, "bench_enqueue: BENCH_ROUNDS: '%s' is not in 1..20\n", r);
		return 2;
	}
	for (uint32_t i = 0; i < NSIGNERS; i++)
		pgtest_account(i, signers[i]);
	notified = mmap(NULL, sizeof(*notified), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			-1, 0);
	if (notified == MAP_FAILED)
		return 1;
	if (pgtest_db_create(&db, 0, &err)) {
		fprintf(stderr, "bench_enqueue: %s\n", err.msg);
		return 1;
	}
	admin = PQconnectdb(db.conninfo);
	if (PQstatus(admin) != CONNECTION_OK)
		goto done;
	PQsetNoticeProcessor(admin, quiet, NULL); /* "trigger ... does not exist, skipping" */
	if (exec_ok(admin, bench_setup_sql))
		goto done;
	print_settings(admin);
	fflush(stdout);
	if (!(meter = cpumeter_start(db.admin, db.name)))
		goto done;
	cpumeter_track_group(meter, getpgrp(), CM_BENCH);
	cpumeter_observer(meter, PQbackendPID(admin));
	listener = fork();
	if (listener == 0)
		listen_forever();
	for (round_no = 1; round_no <= rounds; round_no++)
		for (size_t b = 0; b < 2; b++)
			for (size_t k = 0; k < 2; k++) {
				/* the summary's case: one row per transaction, 8 connections */
				int summed = batches[b] == 1 && connss[k] == MAXCONNS;
				double plain_cpu, cpu,
					plain = measure(admin, "plain", "none", batches[b],
							connss[k], secs, 0, &plain_cpu);

				if (plain < 0)
					goto stop;
				if (summed) {
					sum_plain[round_no - 1] = plain;
					sum_plain_cpu[round_no - 1] = plain_cpu;
				}
				/* Rotate the order each round so no variant always runs first. */
				for (size_t j = 0; j < NVARIANTS; j++) {
					size_t v = (j + (size_t)round_no - 1) % NVARIANTS;

					if (variants[v].install
						    ? exec_ok(admin, variants[v].install)
						    : restore_migration_trigger(admin))
						goto stop;
					double rate =
						measure(admin, "enqueue", variants[v].name,
							batches[b], connss[k], secs, plain, &cpu);

					if (rate < 0)
						goto stop;
					if (summed && !variants[v].install) {
						sum_enq[round_no - 1] = rate;
						sum_enq_cpu[round_no - 1] = cpu;
					}
				}
			}
	print_summary(rounds);
	rc = 0;
stop:
	kill(listener, SIGTERM);
	waitpid(listener, NULL, 0);
done:
	cpumeter_stop(meter);
	PQfinish(admin);
	if (pgtest_db_drop(&db, &err))
		fprintf(stderr, "bench_enqueue: %s\n", err.msg);
	return rc;
}
