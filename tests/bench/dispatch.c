/*
 * bench_dispatch - what the dispatch engine delivers, next to what
 * PostgreSQL alone can do with the same SQL.
 *
 * Setup (tests/integration/dispatch_harness.h): a fresh database (64
 * vshards), stellar-sim at BENCH_LEDGER_MS (100) ledgers with room for
 * thousands of transactions per ledger, BENCH_SIGNERS (1000) funded signers
 * whose seeds are in the keys file, outboxd with BENCH_WORKERS (4) workers.
 * Phases, each printing one JSON line:
 *
 *	latency     BENCH_OFFERED ops/s (500) enqueued one per transaction at a
 *	            steady pace for BENCH_SECONDS (10) by BENCH_ENQUEUERS (4)
 *	            processes; enqueue-to-send is attempts.submitted_at (the
 *	            write-ahead commit, made right before the send) minus
 *	            ops.created_at (the enqueue transaction's start), p50/p99
 *	            over every op of the phase.
 *	throughput  BENCH_OPS (20000) ops enqueued for a held user, then the
 *	            hold is released at once; confirmed ops per second over the
 *	            10%..90% span of their confirmed_at (start-up and tail out).
 *	pg_limit    outboxd stopped; pgbench runs the SQL the worker runs per op
 *	            (enqueue, claim, attempt_record, op_confirm) with 8 clients,
 *	            each on its own vshard lease and BENCH_GROUP (20) signers,
 *	            for BENCH_SECONDS, twice: one op and one commit per
 *	            statement (single_commit_ops_per_s), and each statement for
 *	            BENCH_GROUP ops in one transaction (pg_limit_ops_per_s: the
 *	            best grouping a dispatcher could reach, what outboxd's group
 *	            commit is measured against).
 *
 * The last line is the summary: confirmed_ops_per_s, pg_limit_ops_per_s,
 * ratio_to_pg_limit, enqueue_to_send_p50_ms, enqueue_to_send_p99_ms. Never
 * asserts on timings (a Check suite only so that setup failures stop it
 * cleanly). Run: OUTBOX_BUILD_DIR=<build> OUTBOX_PG_BASE=... ./bench_dispatch
 */
#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/vshard.h"
#include "tests/integration/dispatch_harness.h"
#include "tests/support/pgtest.h"

#include <sys/wait.h>

#define BENCH_ENQUEUERS 4  /* latency phase: paced enqueuer processes */
#define BENCH_GROUP     20 /* pg_limit grouped: ops per transaction */

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : def;
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

static void phase_latency(struct fixture *f, long offered, long seconds, double *p50, double *p99)
{
	const int n_enq = BENCH_ENQUEUERS;
	long n = offered * seconds;
	double t0 = now_s() + 0.2;
	pid_t pid[BENCH_ENQUEUERS];
	int st;

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
	*p50 = scalar_f(f->c, "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM (SELECT "
			      "extract(epoch FROM a.submitted_at - o.created_at) * 1000 AS ms FROM "
			      "outbox.ops o JOIN outbox.attempts a ON a.op_id = o.id AND "
			      "a.attempt_no = 1 AND a.bump_no = 0 WHERE o.user_id = 'lat') s");
	*p99 = scalar_f(f->c,
			"SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FROM (SELECT "
			"extract(epoch FROM a.submitted_at - o.created_at) * 1000 AS ms FROM "
			"outbox.ops o JOIN outbox.attempts a ON a.op_id = o.id AND "
			"a.attempt_no = 1 AND a.bump_no = 0 WHERE o.user_id = 'lat') s");
	printf("{\"bench\":\"dispatch\",\"phase\":\"latency\",\"offered_ops_per_s\":%ld,"
	       "\"enqueuers\":%d,\"achieved_offer_ops_per_s\":%.1f,\"ops\":%ld,\"enqueue_to_send_"
	       "p50_ms\":%.2f,"
	       "\"enqueue_to_send_p99_ms\":%.2f}\n",
	       offered, n_enq, (double)n / took, n, *p50, *p99);
	fflush(stdout);
}

static double phase_throughput(struct fixture *f, long n)
{
	char user[16], rec[32];

	pgtest_exec(f->c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) VALUES "
			  "('tp', 'bench', 'bench')");
	for (long i = 0; i < n; i += 500) {
		pgtest_exec(f->c, "BEGIN");
		for (long k = i; k < i + 500 && k < n; k++) {
			snprintf(user, sizeof(user), "tp");
			snprintf(rec, sizeof(rec), "tp%ld", k);
			enqueue(f, "DEPOSIT", user, rec, (int)(k % f->n_signers),
				f->signer[(k + 3) % f->n_signers], "10", NULL);
		}
		pgtest_exec(f->c, "COMMIT");
	}
	double t0 = now_s();
	pgtest_exec(f->c, "DELETE FROM outbox.user_holds WHERE user_id = 'tp'");
	ck_assert(wait_terminal(f, 600000));
	double wall = now_s() - t0;
	double span =
		scalar_f(f->c, "SELECT extract(epoch FROM percentile_disc(0.9) WITHIN GROUP "
			       "(ORDER BY confirmed_at) - percentile_disc(0.1) WITHIN GROUP "
			       "(ORDER BY confirmed_at)) FROM outbox.ops WHERE user_id = 'tp'");
	long confirmed =
		(long)pgtest_scalar(f->c, "SELECT count(*) FROM outbox.ops WHERE user_id = "
					  "'tp' AND status = 'CONFIRMED'");
	double rate = span > 0 ? 0.8 * (double)confirmed / span : 0;
	printf("{\"bench\":\"dispatch\",\"phase\":\"throughput\",\"ops\":%ld,\"confirmed\":%ld,"
	       "\"wall_s\":%.2f,\"confirmed_ops_per_s\":%.1f,\"wall_ops_per_s\":%.1f}\n",
	       n, confirmed, wall, rate, (double)confirmed / wall);
	fflush(stdout);
	return rate;
}

/*
 * Per pgbench client: vshard = client id with a lease held by that client,
 * and BENCH_GROUP signers on that vshard (one op in flight per signer, so a
 * grouped claim can take BENCH_GROUP ops at once).
 */
static void pg_limit_setup(struct fixture *f, int clients)
{
	char sql[1024], acct[57];
	uint32_t n = 900000;

	pgtest_exec(f->c, "CREATE TABLE bench_clients (client_id int PRIMARY KEY, vshard int, "
			  "owner text, epoch bigint)");
	pgtest_exec(f->c, "CREATE TABLE bench_signers (client_id int, k int, signer text, "
			  "PRIMARY KEY (client_id, k))");
	for (int c = 0; c < clients; c++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO bench_clients SELECT %d, %d, 'pgbench/%d/1', "
			 "outbox.lease_acquire('pgbench/%d/1', %d, 3600000)",
			 c, c, c, c, c);
		pgtest_exec(f->c, sql);
		for (int k = 0; k < BENCH_GROUP; k++) {
			do
				pgtest_account(n++, acct);
			while (outbox_vshard_of(acct, 56, f->vshards) != c);
			snprintf(sql, sizeof(sql),
				 "INSERT INTO bench_signers VALUES (%d, %d, '%s')", c, k, acct);
			pgtest_exec(f->c, sql);
		}
	}
	ck_assert_int_eq(pgtest_scalar(f->c,
				       "SELECT count(*) FROM bench_clients WHERE epoch IS NOT "
				       "NULL"),
			 clients);
}

/*
 * The worker's SQL per op, one commit per statement: enqueue, claim,
 * attempt_record, op_confirm, each for one op.
 */
static const char pg_script_single[] =
	"\\set n random(1, 2000000000)\n"
	"SELECT (outbox.enqueue('DEPOSIT', 'pgb' || :client_id, 'r' || :n || '_' || "
	"txid_current(), s.signer, jsonb_build_object('account', s.signer, 'amount', '10'))).id "
	"FROM bench_signers s WHERE s.client_id = :client_id AND s.k = 0;\n"
	"SELECT c.op_id AS op FROM bench_clients b, LATERAL outbox.claim(b.owner, "
	"ARRAY[b.vshard], ARRAY[b.epoch], 1, 1) c WHERE b.client_id = :client_id \\gset\n"
	"SELECT outbox.attempt_record(b.owner, b.vshard, b.epoch, :op, 1, 0, "
	"encode(sha256(('h' || :op)::bytea), 'hex'), encode(sha256(('h' || :op)::bytea), "
	"'hex'), 'AAAAAgAAAAA=', s.signer, 1, 2000000000, 100) FROM bench_clients b JOIN "
	"bench_signers s ON s.client_id = b.client_id AND s.k = 0 WHERE b.client_id = "
	":client_id;\n"
	"SELECT outbox.op_confirm(b.owner, b.vshard, b.epoch, :op, encode(sha256(('h' || "
	":op)::bytea), 'hex'), 1, 100) FROM bench_clients b WHERE b.client_id = "
	":client_id;\n";

/*
 * The same SQL per op, grouped as well as a dispatcher can group it: each
 * statement runs for BENCH_GROUP ops in one transaction (the enqueues too,
 * as an application enqueuing in bulk would), so commits, WAL flushes and
 * the NOTIFY lock of op_confirm are shared by the group.
 */
static const char pg_script_grouped[] =
	"\\set n random(1, 2000000000)\n"
	"SELECT count(outbox.enqueue('DEPOSIT', 'pgb' || :client_id, 'r' || :n || '_' || s.k || "
	"'_' || txid_current(), s.signer, jsonb_build_object('account', s.signer, 'amount', "
	"'10'))) FROM bench_signers s WHERE s.client_id = :client_id;\n"
	"SELECT coalesce(string_agg(c.op_id::text, ','), '') AS ids FROM bench_clients b, "
	"LATERAL outbox.claim(b.owner, ARRAY[b.vshard], ARRAY[b.epoch], 1, 1000) c WHERE "
	"b.client_id = :client_id \\gset\n"
	"SELECT count(outbox.attempt_record(b.owner, b.vshard, b.epoch, o.id, 1, 0, "
	"encode(sha256(('h' || o.id)::bytea), 'hex'), encode(sha256(('h' || o.id)::bytea), "
	"'hex'), 'AAAAAgAAAAA=', o.signer, 1, 2000000000, 100)) FROM bench_clients b JOIN "
	"outbox.ops o ON o.id = ANY (ARRAY[:ids]::bigint[]) WHERE b.client_id = :client_id;\n"
	"SELECT count(outbox.op_confirm(b.owner, b.vshard, b.epoch, o.id, encode(sha256(('h' || "
	"o.id)::bytea), 'hex'), 1, 100)) FROM bench_clients b JOIN outbox.ops o ON o.id = ANY "
	"(ARRAY[:ids]::bigint[]) WHERE b.client_id = :client_id;\n";

/* Runs one pgbench script; confirmed ops per second over its duration. */
static double pgbench_ops(struct fixture *f, const char *name, const char *script_text, int clients,
			  long seconds)
{
	char script[256], cmd[3000], line[512];
	long long before, done;
	double t0, took;
	FILE *o, *p;

	snprintf(script, sizeof(script), "%s/%s.sql", f->h.dir, name);
	o = fopen(script, "w");
	ck_assert_ptr_nonnull(o);
	fputs(script_text, o);
	fclose(o);
	before = pgtest_scalar(f->c, "SELECT count(*) FROM outbox.ops WHERE user_id LIKE 'pgb%' "
				     "AND status = 'CONFIRMED'");
	snprintf(cmd, sizeof(cmd), "pgbench -n -c %d -j 2 -T %ld -f %s '%s' 2>&1", clients, seconds,
		 script, f->db.conninfo);
	t0 = now_s();
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "ERROR") || strstr(line, "error"))
			fprintf(stderr, "pgbench: %s", line);
	ck_assert_int_eq(pclose(p), 0);
	took = now_s() - t0;
	done = pgtest_scalar(f->c, "SELECT count(*) FROM outbox.ops WHERE user_id LIKE 'pgb%' AND "
				   "status = 'CONFIRMED'") -
	       before;
	ck_assert_int_gt(done, 0);
	/* the connection set-up is inside `took`: a slight underestimate of PostgreSQL */
	return (double)done / took;
}

static double phase_pg_limit(struct fixture *f, long seconds)
{
	const int clients = 8;
	double single, grouped;

	pg_limit_setup(f, clients);
	single = pgbench_ops(f, "single", pg_script_single, clients, seconds);
	grouped = pgbench_ops(f, "grouped", pg_script_grouped, clients, seconds);
	printf("{\"bench\":\"dispatch\",\"phase\":\"pg_limit\",\"clients\":%d,\"seconds\":%ld,"
	       "\"group\":%d,\"single_commit_ops_per_s\":%.1f,\"pg_limit_ops_per_s\":%.1f}\n",
	       clients, seconds, BENCH_GROUP, single, grouped);
	fflush(stdout);
	return grouped;
}

START_TEST(bench_dispatch)
{
	static struct fixture f;
	long seconds = env_long("BENCH_SECONDS", 10), offered = env_long("BENCH_OFFERED", 500);
	long ops = env_long("BENCH_OPS", 20000), ledger_ms = env_long("BENCH_LEDGER_MS", 100);
	char sim[256];
	const char *env[] = {"OUTBOX_GLOBAL_MAX_IN_FLIGHT=5000", "OUTBOX_BATCH_SIZE=500",
			     "OUTBOX_LOG_LEVEL=warn", NULL};
	double p50, p99;

	memset(&f, 0, sizeof(f));
	f.n_signers = (int)env_long("BENCH_SIGNERS", 1000);
	if (f.n_signers > DH_MAX_SIGNERS)
		f.n_signers = DH_MAX_SIGNERS;
	f.workers = (int)env_long("BENCH_WORKERS", 4);
	f.vshards = 64;
	snprintf(sim, sizeof(sim),
		 "--ledger-ms %ld --ledger-capacity 20000 --queue-capacity 40000 --vault-contract "
		 "%s",
		 ledger_ms, PH_CONTRACT);
	prepare(&f, sim);
	launch(&f, env);
	json_decref(ph_wait_all_running(&f.h, f.workers + 1, 20000));
	phase_latency(&f, offered, seconds, &p50, &p99);
	double rate = phase_throughput(&f, ops);
	check_exactly_once(&f);
	kill(-f.h.sup_pid, SIGTERM);
	ph_wait_exit(f.h.sup_pid, 15000, NULL);
	f.h.sup_pid = 0;
	double limit = phase_pg_limit(&f, seconds);
	printf("{\"bench\":\"dispatch\",\"summary\":true,\"signers\":%d,\"workers\":%d,"
	       "\"ledger_ms\":%ld,\"offered_ops_per_s\":%ld,\"confirmed_ops_per_s\":%.1f,"
	       "\"pg_limit_ops_per_s\":%.1f,\"ratio_to_pg_limit\":%.3f,"
	       "\"enqueue_to_send_p50_ms\":%.2f,\"enqueue_to_send_p99_ms\":%.2f}\n",
	       f.n_signers, f.workers, ledger_ms, offered, rate, limit,
	       limit > 0 ? rate / limit : 0, p50, p99);
	fflush(stdout);
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
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
