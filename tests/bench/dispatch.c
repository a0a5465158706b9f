/*
 * bench_dispatch - what the dispatch engine delivers, what every process of
 * the run spends on it, next to the minimal durable outbox and a peer
 * (graphile-worker) on the same PostgreSQL and cores.
 *
 * Setup (tests/integration/dispatch_harness.h): a fresh database (64
 * vshards), stellar-sim at BENCH_LEDGER_MS (100) ledgers with room for
 * thousands of transactions per ledger, BENCH_SIGNERS (1000) funded signers
 * whose seeds are in the keys file, outboxd with BENCH_WORKERS (4) workers.
 * CPU is read from /proc for every process of the run (tests/bench/
 * cpumeter.h) and divided by the ops of the phase; PostgreSQL's time by
 * statement or function comes from tests/bench/stmtstats.h. Phases, each
 * printing one JSON line:
 *
 *	latency     BENCH_OFFERED ops/s (500) enqueued one per transaction at a
 *	            steady pace for BENCH_SECONDS (10) by BENCH_ENQUEUERS (4)
 *	            processes; enqueue-to-send is attempts.submitted_at (the
 *	            write-ahead commit, made right before the send) minus
 *	            ops.created_at (the enqueue transaction's start), p50/p99
 *	            over every op of the phase; CPU per op covers enqueue and
 *	            dispatch.
 *	latency_steps  with BENCH_TRACE=1 (outboxd at OUTBOX_LOG_LEVEL=debug,
 *	            which costs the other phases some CPU): the latency phase's
 *	            enqueue-to-send split into its parts, from the workers'
 *	            `op N sent` lines (worker/trace.h), p50/p99 of each.
 *	enqueue     BENCH_OPS (20000) ops enqueued for a held user, 500 per
 *	            transaction: CPU per enqueue.
 *	throughput  the hold is released at once; confirmed ops per second over
 *	            the 10%..90% span of their confirmed_at (start-up and tail
 *	            out); CPU per confirmed op from release to the last op.
 *	breakdown   outboxd stopped (so every backend published its counters):
 *	            PostgreSQL's time by statement or function over the
 *	            throughput phase, per confirmed op. With
 *	            BENCH_BREAKDOWN=latency, over the latency phase instead, per
 *	            op enqueued, and the run ends there (its summary has the
 *	            latency phase's figures only).
 *	writes      the row versions the run wrote per op enqueued, by table
 *	            (inserts, updates, HOT updates, deletes), and the
 *	            MultiXacts the server created per op.
 *	minimal     the minimal durable outbox, pgbench with 8 clients for
 *	            BENCH_SECONDS, per batch of BENCH_MINIMAL_BATCH (50) ops:
 *	            one INSERT statement, one UPDATE to in-flight writing a 1 KB
 *	            envelope, one UPDATE to done with one event row per op, each
 *	            its own transaction (minimal_outbox_ops_per_s).
 *	peer        graphile-worker (tests/bench/graphile/) in a database of its
 *	            own, once per mode: jobs/s and CPU per job (adding included).
 *
 * The last line is the summary (tests/README.md lists its fields). Never
 * asserts on timings (a Check suite only so that setup failures stop it
 * cleanly). Run: OUTBOX_BUILD_DIR=<build> OUTBOX_PG_BASE=... ./bench_dispatch
 */
#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/vshard.h"
#include "tests/bench/cpumeter.h"
#include "tests/bench/stmtstats.h"
#include "tests/integration/dispatch_harness.h"
#include "tests/support/pgtest.h"

#include <math.h>
#include <sys/wait.h>

#define BENCH_ENQUEUERS 4  /* latency phase: paced enqueuer processes */
#define MINIMAL_CLIENTS 8  /* minimal outbox: pgbench clients */
#define BREAKDOWN_TOP   30 /* breakdown: entries printed */

#ifndef BENCH_GRAPHILE_DIR
#define BENCH_GRAPHILE_DIR "tests/bench/graphile"
#endif

static struct cpumeter *meter;

/* An integer knob in [min, max]; stops the run naming it otherwise. */
static long env_long(const char *name, long def, long min, long max)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	ck_assert_msg(!*end && n >= min && n <= max, "%s: '%.40s' is not an integer in %ld..%ld",
		      name, v, min, max);
	return n;
}

static double now_s(void)
{
	return (double)ph_now_ms() / 1000.0;
}

static double scalar_f(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	double v = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		v = strtod(PQgetvalue(r, 0, 0), NULL);
	PQclear(r);
	return v;
}

/* Prints a JSON object as one line and frees it. */
static void print_line(json_t *o)
{
	char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));

	ck_assert_ptr_nonnull(t);
	printf("%s\n", t);
	fflush(stdout);
	free(t);
	json_decref(o);
}

/* CPU per class, the machine's CPU, wall time and load at one instant. */
struct cpu_mark {
	double ms[CM_NCLASS], machine_ms, at_s, load;
	struct cpumeter_conns conns; /* CM_PG by connection (cpumeter_read_conns) */
	double conn_ms[CPUMETER_CONNS];
};

static void cpu_mark(struct cpu_mark *m)
{
	ck_assert_msg(cpumeter_read(meter, m->ms) == 0, "the CPU meter failed");
	cpumeter_read_conns(meter, &m->conns, m->conn_ms);
	m->machine_ms = cpumeter_machine_ms();
	m->at_s = now_s();
	m->load = cpumeter_loadavg();
}

static const char *const class_field[CM_NCLASS] = {
	[CM_PG] = "pg_cpu_ms_per_op",
	[CM_PG_OBSERVER] = "pg_observer_cpu_ms_per_op",
	[CM_PG_SERVER] = "pg_server_cpu_ms_per_op",
	[CM_OUTBOXD] = "outboxd_cpu_ms_per_op",
	[CM_SIM] = "sim_cpu_ms_per_op",
	[CM_BENCH] = "bench_cpu_ms_per_op",
};

static double per_op(const struct cpu_mark *a, const struct cpu_mark *b, int cls, double ops)
{
	return ops > 0 ? (b->ms[cls] - a->ms[cls]) / ops : 0;
}

/* Every class together: the run's CPU per op. */
static double run_per_op(const struct cpu_mark *a, const struct cpu_mark *b, double ops)
{
	double sum = 0;

	for (int k = 0; k < CM_NCLASS; k++)
		sum += per_op(a, b, k, ops);
	return sum;
}

/*
 * PostgreSQL's CPU between a and b per op, by connection: where the
 * backends' time went (claims on a worker's control connection, attempt
 * rows on its write-ahead one, landings on its data ones, seals on its
 * relay's...), largest first.
 */
static json_t *conn_fields(const struct cpu_mark *a, const struct cpu_mark *b, double ops)
{
	json_t *o = json_object();
	int order[CPUMETER_CONNS];
	double grew[CPUMETER_CONNS];
	int n = cpumeter_conn_growth(a->conn_ms, a->conns.n, b->conn_ms, b->conns.n, order, grew);

	for (int i = 0; i < n && ops > 0; i++)
		json_object_set_new(o, b->conns.name[order[i]], json_real(grew[i] / ops));
	return o;
}

/*
 * Adds the CPU spent between a and b, per op, to o: one field per class,
 * their total, the machine's (every process, other users' too), the cores
 * the machine kept busy, and the load average at the end.
 */
static void cpu_fields(json_t *o, const struct cpu_mark *a, const struct cpu_mark *b, double ops)
{
	double wall_ms = (b->at_s - a->at_s) * 1000.0;

	for (int k = 0; k < CM_NCLASS; k++)
		json_object_set_new(o, class_field[k], json_real((b->ms[k] - a->ms[k]) / ops));
	json_object_set_new(o, "pg_cpu_ms_per_op_by_connection", conn_fields(a, b, ops));
	json_object_set_new(o, "run_cpu_ms_per_op", json_real(run_per_op(a, b, ops)));
	json_object_set_new(o, "machine_cpu_ms_per_op",
			    json_real((b->machine_ms - a->machine_ms) / ops));
	json_object_set_new(o, "machine_busy_cores",
			    json_real(wall_ms > 0 ? (b->machine_ms - a->machine_ms) / wall_ms : 0));
	json_object_set_new(o, "loadavg_1m", json_real(b->load));
}

/*
 * One enqueuer: every k-th op of the paced schedule, on its own connection
 * (one connection cannot offer 500 commits/s on a loaded 2-core machine).
 */
static void enqueuer(struct fixture *f, int k, int n_enq, long n, long offered, double t0)
{
	char rec[32];

	f->c = pgtest_connect(&f->db);
	for (long i = k; i < n; i += n_enq) {
		double due = t0 + (double)i / (double)offered, wait = due - now_s();
		if (wait > 0)
			ph_sleep_ms((unsigned)(wait * 1000));
		snprintf(rec, sizeof(rec), "lat%ld", i);
		enqueue(f, "DEPOSIT", "lat", rec, (int)(i % f->n_signers),
			f->signer[(i + 1) % f->n_signers], "10", NULL);
	}
	PQfinish(f->c);
	_exit(0);
}

static double latency_pct(struct fixture *f, double q)
{
	char sql[512];

	snprintf(sql, sizeof(sql),
		 "SELECT percentile_cont(%g) WITHIN GROUP (ORDER BY ms) FROM (SELECT "
		 "extract(epoch FROM a.submitted_at - o.created_at) * 1000 AS ms FROM "
		 "outbox.ops o JOIN outbox.attempts a ON a.op_id = o.id AND "
		 "a.attempt_no = 1 AND a.bump_no = 0 WHERE o.user_id = 'lat') s",
		 q);
	return scalar_f(f->c, sql);
}

static void phase_latency(struct fixture *f, long offered, long seconds, double *p50, double *p99)
{
	const int n_enq = BENCH_ENQUEUERS;
	long n = offered * seconds;
	double t0 = now_s() + 0.2;
	pid_t pid[BENCH_ENQUEUERS];
	struct cpu_mark c0, c1;
	int st;

	cpu_mark(&c0);
	fflush(NULL);
	for (int k = 0; k < n_enq; k++) {
		pid[k] = fork();
		ck_assert_int_ge(pid[k], 0);
		if (pid[k] == 0)
			enqueuer(f, k, n_enq, n, offered, t0);
	}
	for (int k = 0; k < n_enq; k++) {
		ck_assert_int_eq(waitpid(pid[k], &st, 0), pid[k]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "enqueuer %d failed", k);
	}
	double took = now_s() - t0;
	ck_assert(wait_terminal(f, 120000));
	cpu_mark(&c1);
	*p50 = latency_pct(f, 0.5);
	*p99 = latency_pct(f, 0.99);
	json_t *o =
		json_pack("{s:s, s:s, s:I, s:i, s:f, s:I, s:f, s:f}", "bench", "dispatch", "phase",
			  "latency", "offered_ops_per_s", (json_int_t)offered, "enqueuers", n_enq,
			  "achieved_offer_ops_per_s", (double)n / took, "ops", (json_int_t)n,
			  "enqueue_to_send_p50_ms", *p50, "enqueue_to_send_p99_ms", *p99);
	cpu_fields(o, &c0, &c1, (double)n);
	print_line(o);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* Nearest rank q of the sorted v[0..n) (microseconds), in ms; 0 when empty. */
static double rank_ms(const long long *v, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);

	return n ? (double)v[k ? k - 1 : 0] / 1000.0 : 0;
}

/*
 * latency_steps: the trace lines (worker/trace.h) of the latency phase's ops
 * (user 'lat'), their first transaction's: p50/p99 of each part, in ms.
 */
static void phase_latency_steps(struct fixture *f)
{
	static const char *const parts[] = {"total",   "before_claim", "claim", "queued",
					    "prepare", "simulate",     "sign",  "write"};
	enum { NP = sizeof(parts) / sizeof(parts[0]) };
	PGresult *r = PQexec(f->c, "SELECT id FROM outbox.ops WHERE user_id = 'lat' ORDER BY id");
	size_t n_ids, n = 0;
	long long *ids, *v[NP];
	char *line = NULL, key[32];
	size_t cap = 0;
	FILE *log = fopen(f->h.log, "r");

	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	ck_assert_ptr_nonnull(log);
	n_ids = (size_t)PQntuples(r);
	ids = calloc(n_ids + 1, sizeof(*ids));
	ck_assert_ptr_nonnull(ids);
	for (int k = 0; k < NP; k++) {
		v[k] = calloc(n_ids + 1, sizeof(long long));
		ck_assert_ptr_nonnull(v[k]);
	}
	for (size_t i = 0; i < n_ids; i++)
		ids[i] = atoll(PQgetvalue(r, (int)i, 0));
	PQclear(r);
	while (getline(&line, &cap, log) > 0 && n < n_ids) {
		const char *m = strstr(line, "msg=\"op "), *at;
		long long id;
		if (!m || sscanf(m, "msg=\"op %lld sent\"", &id) != 1 ||
		    !strstr(line, " attempt=1 ") || !bsearch(&id, ids, n_ids, sizeof(*ids), cmp_ll))
			continue;
		for (int k = 0; k < NP; k++) {
			snprintf(key, sizeof(key), " %s_us=", parts[k]);
			at = strstr(line, key);
			v[k][n] = at ? atoll(at + strlen(key)) : 0;
		}
		n++;
	}
	fclose(log);
	free(line);
	json_t *o = json_pack("{s:s, s:s, s:I, s:I}", "bench", "dispatch", "phase", "latency_steps",
			      "ops", (json_int_t)n_ids, "traced", (json_int_t)n);
	for (int k = 0; k < NP; k++) {
		qsort(v[k], n, sizeof(*v[k]), cmp_ll);
		double p50 = rank_ms(v[k], n, 0.5), p99 = rank_ms(v[k], n, 0.99);
		snprintf(key, sizeof(key), "%s_ms", parts[k]);
		json_object_set_new(o, key, json_pack("{s:f, s:f}", "p50", p50, "p99", p99));
		free(v[k]);
	}
	free(ids);
	print_line(o);
}

struct throughput {
	double rate;
	long confirmed;
	struct cpu_mark enq0, enq1, t0, t1;
	json_t *rpc; /* stellar-sim's request counts by method: at t0, then per op */
};

/*
 * RPC calls per op by method between two reads of stellar-sim's
 * /debug/requests (every client: workers, oracle), plus their "total".
 */
static json_t *rpc_per_op(json_t *before, json_t *after, double ops)
{
	json_t *o = json_object(), *v;
	const char *m;
	double total = 0;

	json_object_foreach(after, m, v)
	{
		double d = (double)(json_integer_value(v) -
				    json_integer_value(json_object_get(before, m)));
		total += d;
		if (d > 0)
			json_object_set_new(o, m, json_real(d / ops));
	}
	json_object_set_new(o, "total", json_real(total / ops));
	return o;
}

static void enqueue_backlog(struct fixture *f, long n, struct throughput *t)
{
	char rec[32];

	pgtest_exec(f->c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) VALUES "
			  "('tp', 'bench', 'bench')");
	cpu_mark(&t->enq0);
	for (long i = 0; i < n; i += 500) {
		pgtest_exec(f->c, "BEGIN");
		for (long k = i; k < i + 500 && k < n; k++) {
			snprintf(rec, sizeof(rec), "tp%ld", k);
			enqueue(f, "DEPOSIT", "tp", rec, (int)(k % f->n_signers),
				f->signer[(k + 3) % f->n_signers], "10", NULL);
		}
		pgtest_exec(f->c, "COMMIT");
	}
	cpu_mark(&t->enq1);
	/* the bench's own connection enqueued: its backend's time is the enqueue's */
	json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:f}", "bench", "dispatch", "phase", "enqueue",
			      "ops", (json_int_t)n, "rows_per_txn", 500, "pg_cpu_ms_per_enqueue",
			      per_op(&t->enq0, &t->enq1, CM_PG_OBSERVER, (double)n));
	cpu_fields(o, &t->enq0, &t->enq1, (double)n);
	print_line(o);
}

static void phase_throughput(struct fixture *f, long n, const char *source, struct throughput *t)
{
	enqueue_backlog(f, n, t);
	if (source)
		ck_assert_int_eq(stmtstats_begin(f->c, source), 0);
	t->rpc = sim_get(f, "/debug/requests");
	cpu_mark(&t->t0);
	pgtest_exec(f->c, "DELETE FROM outbox.user_holds WHERE user_id = 'tp'");
	ck_assert(wait_terminal(f, 600000));
	cpu_mark(&t->t1);
	json_t *rpc1 = sim_get(f, "/debug/requests");
	double span =
		scalar_f(f->c, "SELECT extract(epoch FROM percentile_disc(0.9) WITHIN GROUP "
			       "(ORDER BY confirmed_at) - percentile_disc(0.1) WITHIN GROUP "
			       "(ORDER BY confirmed_at)) FROM outbox.ops WHERE user_id = 'tp'");
	t->confirmed = (long)pgtest_scalar(f->c, "SELECT count(*) FROM outbox.ops WHERE user_id = "
						 "'tp' AND status = 'CONFIRMED'");
	ck_assert_int_gt(t->confirmed, 0);
	t->rate = span > 0 ? 0.8 * (double)t->confirmed / span : 0;
	json_t *rpc0 = t->rpc;
	t->rpc = rpc_per_op(rpc0, rpc1, (double)t->confirmed);
	json_decref(rpc0);
	json_decref(rpc1);
	double wall = t->t1.at_s - t->t0.at_s;
	json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:f, s:f}", "bench", "dispatch", "phase",
			      "throughput", "ops", (json_int_t)n, "confirmed",
			      (json_int_t)t->confirmed, "wall_s", wall, "confirmed_ops_per_s",
			      t->rate, "wall_ops_per_s", (double)t->confirmed / wall);
	cpu_fields(o, &t->t0, &t->t1, (double)t->confirmed);
	json_object_set(o, "rpc_calls_per_op", t->rpc);
	print_line(o);
}

static void stop_outboxd(struct fixture *f)
{
	kill(-f->h.sup_pid, SIGTERM);
	ph_wait_exit(f->h.sup_pid, 15000, NULL);
	f->h.sup_pid = 0;
}

/* Waits (generously) until only the bench's own connection serves the database. */
static void wait_backends_gone(struct fixture *f)
{
	uint64_t end = ph_now_ms() + 60000;

	while (pgtest_scalar(f->c, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
				   "current_database() AND pid <> pg_backend_pid()") > 0)
		ck_assert_msg(ph_now_ms() < end, "outboxd's backends still connected after 60 s");
}

/* ops: the phase's confirmed ops (throughput) or ops enqueued (latency). */
static void phase_breakdown(struct fixture *f, const char *source, const char *of, long ops)
{
	json_t *top;

	wait_backends_gone(f);
	top = stmtstats_end(f->c, source, (double)ops, BREAKDOWN_TOP);
	ck_assert_msg(top != NULL, "the statement breakdown failed");
	print_line(json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}", "bench", "dispatch", "phase",
			     "breakdown", "of", of, "source", source,
			     !strcmp(of, "latency") ? "ops" : "confirmed", (json_int_t)ops, "top",
			     top));
}

/* The server's MultiXact offset pages zeroed so far (2 048 MultiXacts a page). */
static double multixact_pages(struct fixture *f)
{
	return scalar_f(f->c, "SELECT coalesce(sum(blks_zeroed), 0)::float8 FROM pg_stat_slru "
			      "WHERE name = 'MultiXactOffset'");
}

/*
 * writes: the row versions the whole run wrote (every phase so far), per op
 * enqueued, by table: inserts, updates and how many of those were HOT (the
 * new version on the same page, no new index entry), deletes; and the
 * MultiXacts the server created meanwhile (row locks of one row by several
 * transactions at once; the whole server's, so other databases' too). Read
 * once outboxd has stopped: its backends flushed their counters as they
 * exited.
 */
static void phase_writes(struct fixture *f, double mx_pages0)
{
	PGresult *r = PQexec(f->c, "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, "
				   "n_tup_del FROM pg_stat_user_tables WHERE schemaname = 'outbox' "
				   "AND n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY relname");
	double ops = 0;
	json_t *t = json_object();

	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "table writes: %s",
		      PQerrorMessage(f->c));
	for (int i = 0; i < PQntuples(r); i++)
		if (!strcmp(PQgetvalue(r, i, 0), "ops"))
			ops = atof(PQgetvalue(r, i, 1));
	ck_assert_msg(ops > 0, "table writes: no op was inserted");
	for (int i = 0; i < PQntuples(r); i++)
		json_object_set_new(t, PQgetvalue(r, i, 0),
				    json_pack("{s:f, s:f, s:f, s:f}", "ins",
					      atof(PQgetvalue(r, i, 1)) / ops, "upd",
					      atof(PQgetvalue(r, i, 2)) / ops, "hot_upd",
					      atof(PQgetvalue(r, i, 3)) / ops, "del",
					      atof(PQgetvalue(r, i, 4)) / ops));
	PQclear(r);
	print_line(json_pack("{s:s, s:s, s:f, s:o, s:f}", "bench", "dispatch", "phase", "writes",
			     "ops", ops, "per_op", t, "server_multixacts_per_op",
			     (multixact_pages(f) - mx_pages0) * 2048.0 / ops));
}

/* BENCH_BREAKDOWN: which phase the breakdown covers; stops the run naming a bad value. */
static bool breakdown_of_latency(void)
{
	const char *v = getenv("BENCH_BREAKDOWN");

	if (!v || !*v || !strcmp(v, "throughput"))
		return false;
	ck_assert_msg(!strcmp(v, "latency"),
		      "BENCH_BREAKDOWN: '%.40s' is not \"throughput\" or \"latency\"", v);
	return true;
}
/*
 * The minimal durable outbox: what any outbox must write per op, grouped as
 * a dispatcher groups it. An op is inserted, moved to in-flight with the
 * ~1 KB envelope it is sent with (written before the send, so a crash
 * cannot lose what was sent), then marked done with one event row. One
 * partial index finds both the pending ops to claim and the in-flight ones
 * a restarted dispatcher must resolve. Each pgbench client is a dispatcher
 * of its own ops (no contention between clients), and each statement is its
 * own transaction, for a batch of ops.
 */
static const char minimal_setup_sql[] =
	"CREATE TABLE mini_ops (id bigserial PRIMARY KEY, client int NOT NULL, status smallint NOT "
	"NULL DEFAULT 0, payload jsonb NOT NULL, envelope text, created_at timestamptz NOT NULL "
	"DEFAULT now(), sent_at timestamptz, done_at timestamptz);"
	"CREATE INDEX mini_ops_open ON mini_ops (client, status, id) WHERE status < 2;"
	"CREATE TABLE mini_events (id bigserial PRIMARY KEY, op_id bigint NOT NULL, kind text NOT "
	"NULL, at timestamptz NOT NULL DEFAULT now());";

static const char minimal_script[] =
	"INSERT INTO mini_ops (client, payload) SELECT :client_id, jsonb_build_object('account', "
	"'GBENCH' || i, 'amount', '10') FROM generate_series(1, :batch) i;\n"
	"UPDATE mini_ops o SET status = 1, sent_at = now(), envelope = repeat(md5(o.id::text), 32) "
	"FROM (SELECT id FROM mini_ops WHERE client = :client_id AND status = 0 ORDER BY id LIMIT "
	":batch FOR UPDATE SKIP LOCKED) c WHERE o.id = c.id;\n"
	"WITH d AS (UPDATE mini_ops SET status = 2, done_at = now() WHERE client = :client_id AND "
	"status = 1 RETURNING id) INSERT INTO mini_events (op_id, kind) SELECT id, 'done' FROM "
	"d;\n";

static double phase_minimal(struct fixture *f, long seconds, long batch)
{
	char script[256], cmd[3000], line[512];
	struct cpu_mark c0, c1;
	FILE *o, *p;

	pgtest_exec(f->c, minimal_setup_sql);
	snprintf(script, sizeof(script), "%s/minimal.sql", f->h.dir);
	o = fopen(script, "w");
	ck_assert_ptr_nonnull(o);
	fputs(minimal_script, o);
	fclose(o);
	snprintf(cmd, sizeof(cmd), "pgbench -n -c %d -j 2 -T %ld -D batch=%ld -f %s '%s' 2>&1",
		 MINIMAL_CLIENTS, seconds, batch, script, f->db.conninfo);
	cpu_mark(&c0);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "ERROR") || strstr(line, "error"))
			fprintf(stderr, "pgbench: %s", line);
	ck_assert_msg(pclose(p) == 0, "pgbench failed: %s", cmd);
	cpu_mark(&c1);
	/* the connection set-up is inside the span: a slight underestimate */
	double done = scalar_f(f->c, "SELECT count(*) FROM mini_ops WHERE status = 2");
	double events = scalar_f(f->c, "SELECT count(*) FROM mini_events");
	ck_assert_msg(done > 0 && events == done, "minimal outbox: %.0f done, %.0f events", done,
		      events);
	double rate = done / (c1.at_s - c0.at_s);
	json_t *j = json_pack("{s:s, s:s, s:i, s:I, s:I, s:f, s:f}", "bench", "dispatch", "phase",
			      "minimal", "clients", MINIMAL_CLIENTS, "batch", (json_int_t)batch,
			      "seconds", (json_int_t)seconds, "ops", done,
			      "minimal_outbox_ops_per_s", rate);
	cpu_fields(j, &c0, &c1, done);
	print_line(j);
	return rate;
}

/* The libpq PG* variables node-postgres reads, for the database db. */
static void peer_env(PGconn *c, const struct pgtest_db *db)
{
	setenv("PGHOST", PQhost(c), 1);
	setenv("PGPORT", PQport(c), 1);
	setenv("PGUSER", PQuser(c), 1);
	if (PQpass(c) && *PQpass(c))
		setenv("PGPASSWORD", PQpass(c), 1);
	setenv("PGDATABASE", db->name, 1);
}

/*
 * One mode of the peer: its bench.js run alone (migrating on the first
 * run, adding its jobs in bulk, completing them), its line printed with
 * the CPU of that run per job added. The jobs/s, or -1 on failure.
 */
static double peer_mode(const char *dir, const char *mode)
{
	char cmd[1200], line[1024] = "";
	struct cpu_mark c0, c1;
	json_t *j = NULL;
	double jobs, rate;
	FILE *p;

	setenv("BENCH_PEER_MODES", mode, 1);
	snprintf(cmd, sizeof(cmd), "node '%s/bench.js'", dir);
	cpu_mark(&c0);
	fflush(NULL);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p))
		if (!j)
			j = json_loads(line, 0, NULL);
	int st = pclose(p);
	cpu_mark(&c1);
	jobs = json_number_value(json_object_get(j, "jobs"));
	rate = json_number_value(json_object_get(j, "jobs_per_s"));
	if (st != 0 || jobs <= 0 || rate <= 0) {
		fprintf(stderr, "bench_dispatch: peer: '%s' (mode %s) failed, status %d\n", cmd,
			mode, st);
		json_decref(j);
		return -1;
	}
	json_object_set_new(j, "pg_cpu_ms_per_job", json_real(per_op(&c0, &c1, CM_PG, jobs)));
	json_object_set_new(j, "node_cpu_ms_per_job", json_real(per_op(&c0, &c1, CM_BENCH, jobs)));
	cpu_fields(j, &c0, &c1, jobs);
	print_line(j);
	return rate;
}

/*
 * graphile-worker on the same server, in a database of its own, measured
 * with a meter of its own (its backends are that database's). Returns the
 * better jobs/s of its modes (BENCH_PEER_MODES, default per_job,batched;
 * none skips it), or -1 when the peer did not run (the reason on stderr and in a line):
 * the rest of the run stays valid.
 */
static double phase_peer(struct fixture *f)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const char *dir = getenv("BENCH_GRAPHILE_DIR"), *m = getenv("BENCH_PEER_MODES");
	struct cpumeter *outer = meter;
	char path[1100], modes[64], *save = NULL;
	struct pgtest_db db;
	double best = -1;

	dir = dir && *dir ? dir : BENCH_GRAPHILE_DIR;
	snprintf(modes, sizeof(modes), "%s", m && *m ? m : "per_job,batched");
	if (!strcmp(modes, "none")) { /* outboxd's figures alone, e.g. for A/B pairs */
		print_line(json_pack("{s:s, s:s, s:s}", "bench", "dispatch", "phase", "peer",
				     "skipped", "BENCH_PEER_MODES=none"));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/node_modules/graphile-worker/package.json", dir);
	if (access(path, R_OK)) {
		fprintf(stderr,
			"bench_dispatch: peer: %s missing: run ops/lib/prepare.d/"
			"bench_graphile.sh (npm ci in %s)\n",
			path, dir);
		print_line(json_pack("{s:s, s:s, s:s}", "bench", "dispatch", "phase", "peer",
				     "error", "graphile-worker is not installed"));
		return -1;
	}
	ck_assert_msg(pgtest_db_create_empty(&db, &err) == 0, "peer database: %s", err.msg);
	peer_env(f->c, &db);
	meter = cpumeter_start(db.admin, db.name);
	ck_assert_ptr_nonnull(meter);
	cpumeter_track_group(meter, getpgrp(), CM_BENCH);
	for (char *mode = strtok_r(modes, ",", &save); mode; mode = strtok_r(NULL, ",", &save)) {
		double rate = peer_mode(dir, mode);

		best = rate > best ? rate : best;
	}
	cpumeter_stop(meter);
	meter = outer;
	ck_assert_msg(pgtest_db_drop(&db, &err) == 0, "peer database: %s", err.msg);
	return best;
}

START_TEST(bench_dispatch)
{
	static struct fixture f;
	static struct throughput t;
	long seconds = env_long("BENCH_SECONDS", 10, 1, 600);
	long offered = env_long("BENCH_OFFERED", 500, 1, 20000);
	long ops = env_long("BENCH_OPS", 20000, 100, 1000000);
	long ledger_ms = env_long("BENCH_LEDGER_MS", 100, 10, 10000);
	long batch = env_long("BENCH_MINIMAL_BATCH", 50, 1, 10000);
	char sim[256];
	bool trace = env_long("BENCH_TRACE", 0, 0, 1) == 1;
	const char *env[] = {"OUTBOX_GLOBAL_MAX_IN_FLIGHT=5000", "OUTBOX_BATCH_SIZE=500",
			     trace ? "OUTBOX_LOG_LEVEL=debug" : "OUTBOX_LOG_LEVEL=warn", NULL};
	double p50, p99, load0 = cpumeter_loadavg();
	bool of_latency = breakdown_of_latency();

	memset(&f, 0, sizeof(f));
	f.n_signers = (int)env_long("BENCH_SIGNERS", 1000, 1, DH_MAX_SIGNERS);
	f.workers = (int)env_long("BENCH_WORKERS", 4, 1, 64);
	f.vshards = 64;
	snprintf(sim, sizeof(sim),
		 "--ledger-ms %ld --ledger-capacity 20000 --queue-capacity 40000 --vault-contract "
		 "%s",
		 ledger_ms, PH_CONTRACT);
	prepare(&f, sim);
	/* outboxd inherits OUTBOX_KAFKA_BROKERS: with it, every worker runs the event relay */
	const char *brokers = getenv("OUTBOX_KAFKA_BROKERS");
	bool relay_on = brokers && *brokers;
	char autovacuum[8] = "?";
	PGresult *av = PQexec(f.c, "SHOW autovacuum");
	if (PQresultStatus(av) == PGRES_TUPLES_OK && PQntuples(av) == 1)
		snprintf(autovacuum, sizeof(autovacuum), "%s", PQgetvalue(av, 0, 0));
	PQclear(av);
	double mx_pages0 = multixact_pages(&f);
	const char *source = stmtstats_prepare(f.c); /* before outboxd connects */
	ck_assert_msg(source != NULL, "the statement breakdown cannot be configured");
	meter = cpumeter_start(f.db.admin, f.db.name);
	ck_assert_msg(meter != NULL, "the CPU meter cannot start");
	cpumeter_track_group(meter, f.h.sim_pid, CM_SIM);
	cpumeter_track_group(meter, getpgrp(), CM_BENCH);
	cpumeter_observer(meter, PQbackendPID(f.c));
	launch(&f, env);
	cpumeter_track_group(meter, f.h.sup_pid, CM_OUTBOXD);
	json_decref(ph_wait_all_running(&f.h, f.workers + 1, 20000));
	if (of_latency) {
		ck_assert_int_eq(stmtstats_begin(f.c, source), 0);
		phase_latency(&f, offered, seconds, &p50, &p99);
		if (trace)
			phase_latency_steps(&f);
		check_exactly_once(&f);
		stop_outboxd(&f);
		phase_breakdown(&f, source, "latency", offered * seconds);
		phase_writes(&f, mx_pages0);
		print_line(json_pack("{s:s, s:b, s:s, s:I, s:f, s:f, s:s}", "bench", "dispatch",
				     "summary", 1, "breakdown_of", "latency", "offered_ops_per_s",
				     (json_int_t)offered, "enqueue_to_send_p50_ms", p50,
				     "enqueue_to_send_p99_ms", p99, "breakdown_source", source));
		cpumeter_stop(meter);
		stop(&f);
		return;
	}
	phase_latency(&f, offered, seconds, &p50, &p99);
	if (trace)
		phase_latency_steps(&f);
	phase_throughput(&f, ops, source, &t);
	check_exactly_once(&f);
	stop_outboxd(&f);
	phase_breakdown(&f, source, "throughput", t.confirmed);
	phase_writes(&f, mx_pages0);
	double minimal = phase_minimal(&f, seconds, batch);
	double peer = phase_peer(&f);
	double n = (double)t.confirmed;
	json_t *o = json_pack("{s:s, s:b, s:i, s:i, s:I, s:I, s:f, s:f, s:f}", "bench", "dispatch",
			      "summary", 1, "signers", f.n_signers, "workers", f.workers,
			      "ledger_ms", (json_int_t)ledger_ms, "offered_ops_per_s",
			      (json_int_t)offered, "confirmed_ops_per_s", t.rate,
			      "enqueue_to_send_p50_ms", p50, "enqueue_to_send_p99_ms", p99);
	json_object_set_new(o, "pg_cpu_ms_per_op", json_real(per_op(&t.t0, &t.t1, CM_PG, n)));
	json_object_set_new(o, "pg_cpu_ms_per_enqueue",
			    json_real(per_op(&t.enq0, &t.enq1, CM_PG_OBSERVER, (double)ops)));
	json_object_set_new(o, "outboxd_cpu_ms_per_op",
			    json_real(per_op(&t.t0, &t.t1, CM_OUTBOXD, n)));
	json_object_set_new(o, "sim_cpu_ms_per_op", json_real(per_op(&t.t0, &t.t1, CM_SIM, n)));
	json_object_set_new(o, "rpc_calls_per_op", t.rpc);
	json_object_set_new(o, "pg_server_cpu_ms_per_op",
			    json_real(per_op(&t.t0, &t.t1, CM_PG_SERVER, n)));
	json_object_set_new(o, "run_cpu_ms_per_op", json_real(run_per_op(&t.t0, &t.t1, n)));
	json_object_set_new(o, "minimal_outbox_ops_per_s", json_real(minimal));
	json_object_set_new(o, "ratio_to_minimal", json_real(minimal > 0 ? t.rate / minimal : 0));
	json_object_set_new(o, "peer_graphile_jobs_per_s",
			    peer > 0 ? json_real(peer) : json_null());
	json_object_set_new(o, "breakdown_source", json_string(source));
	/* two settings that move every figure above: say which the run had */
	json_object_set_new(o, "event_relay", json_boolean(relay_on));
	json_object_set_new(o, "pg_autovacuum", json_string(autovacuum));
	json_object_set_new(o, "loadavg_1m_start", json_real(load0));
	json_object_set_new(o, "loadavg_1m_end", json_real(cpumeter_loadavg()));
	print_line(o);
	cpumeter_stop(meter);
	stop(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bench_dispatch");
	TCase *tc = tcase_create("bench");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, bench_dispatch);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL); /* failures name their cause */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
