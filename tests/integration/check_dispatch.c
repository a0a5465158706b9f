/*
 * check_dispatch.c - the dispatch engine end to end: outboxd (2 workers) +
 * stellar-sim (fast ledgers, --debug) + a fresh migrated database.
 *
 * Ops are enqueued with outbox.enqueue over several signers whose keys the
 * test generates (keys file mode 0600) and whose accounts it funds through
 * /debug/accounts. Every check reads the outcome from the outside: the ops'
 * status in PostgreSQL and stellar-sim's /debug/executions (successful
 * executions per op_ref, and the most transactions any account ever had
 * in flight at once). And the oracle's vacuum of outbox.lanes.
 */
/* (the build links by these includes; dispatch_harness.h needs them) */
#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "tests/integration/dispatch_harness.h"
#include "tests/support/pgtest.h"
#include "tests/support/check_main.h"

#define N_SIGNERS 4

START_TEST(test_dispatch_all_confirmed_exactly_once)
{
	struct fixture f;
	char user[32], rec[32];

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	for (int i = 0; i < 40; i++) {
		snprintf(user, sizeof(user), "u%d", i % 7);
		snprintf(rec, sizeof(rec), "r%d", i);
		enqueue(&f, i % 3 ? "DEPOSIT" : "REBALANCE", user, rec, i % N_SIGNERS,
			i % 3 ? f.signer[(i + 1) % N_SIGNERS] : NULL, "1000", NULL);
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open: %lld",
		      pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status IN "
					 "('PENDING','SUBMITTED')"));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 40);
	check_exactly_once(&f);
	ck_assert(!ph_log_contains(&f.h, " total_us=")); /* the trace is a debug line */
	/* every confirmed op has exactly one CONFIRMED attempt, the one it names */
	ck_assert_int_eq(pgtest_scalar(f.c,
				       "SELECT count(*) FROM outbox.ops o JOIN outbox.attempts a "
				       "ON a.op_id = o.id AND a.tx_hash = o.tx_hash "
				       "WHERE a.outcome = 'CONFIRMED'"),
			 40);
	/* drain: SIGTERM -> exit 0, and every lease is released for a peer to take at once */
	ph_stop_clean(&f.h);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.shard_leases WHERE "
					    "expires_at > now()"),
			 0);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.shard_leases"), 8);
	stop(&f);
}
END_TEST

START_TEST(test_dispatch_overdraft_fails_with_code)
{
	struct fixture f;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	char poor[57];

	/* an address with no balance at all: the withdrawal traps on chain */
	pgtest_account(77, poor);
	enqueue(&f, "WITHDRAW", "poor", "w1", 0, poor, "5000", NULL);
	enqueue(&f, "DEPOSIT", "rich", "d1", 0, f.signer[2], "7000", NULL);
	ck_assert(wait_terminal(&f, 30000));
	PGresult *r =
		PQexec(f.c, "SELECT status, last_error, (SELECT result_code FROM "
			    "outbox.attempts a WHERE a.op_id = o.id AND a.outcome = 'FAILED') "
			    "FROM outbox.ops o WHERE kind = 'WITHDRAW'");
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), "FAILED");
	ck_assert_msg(strstr(PQgetvalue(r, 0, 2), "TRAPPED") ||
			      strstr(PQgetvalue(r, 0, 2), "txFAILED"),
		      "result code '%s'", PQgetvalue(r, 0, 2));
	PQclear(r);
	ck_assert_int_eq(pgtest_scalar(f.c,
				       "SELECT count(*) FROM outbox.ops WHERE kind = 'DEPOSIT' "
				       "AND status = 'CONFIRMED'"),
			 1);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* A CRITICAL op enqueued after a NORMAL/LOW backlog on the same signer goes first. */
START_TEST(test_dispatch_critical_first)
{
	struct fixture f;
	char rec[16];

	memset(&f, 0, sizeof(f));
	prepare(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT);
	for (int i = 0; i < 12; i++) {
		snprintf(rec, sizeof(rec), "b%d", i);
		enqueue(&f, i % 4 ? "DEPOSIT" : "REBALANCE", "backlog", rec, 0,
			i % 4 ? f.signer[1] : NULL, "10", NULL);
	}
	enqueue(&f, "WITHDRAW", "vip", "w1", 0, f.signer[2], "10", NULL);
	launch(&f, NULL);
	ck_assert(wait_terminal(&f, 60000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 13);
	/* the withdrawal was the first transaction of its signer: the lowest sequence */
	ck_assert_int_eq(
		pgtest_scalar(f.c, "SELECT count(*) FROM outbox.attempts a JOIN outbox.ops o "
				   "ON o.id = a.op_id WHERE a.outcome = 'CONFIRMED' AND "
				   "o.kind <> 'WITHDRAW' AND a.source_sequence < (SELECT "
				   "a2.source_sequence FROM outbox.attempts a2 JOIN outbox.ops o2 "
				   "ON o2.id = a2.op_id WHERE o2.kind = 'WITHDRAW' AND "
				   "a2.outcome = 'CONFIRMED')"),
		0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * The trace of an op's path to its send (worker/trace.h): with
 * OUTBOX_LOG_LEVEL=debug every op, CRITICAL or not, leaves exactly one
 * `op N sent` line for its one transaction, with its priority and attempt,
 * parts that are never negative and add up to total_us, and a simulation
 * and a write-ahead commit that took time. (all_confirmed_exactly_once runs
 * at the default level, where no such line is written.)
 */
static void check_trace_line(struct fixture *f, long long id, const char *prio)
{
	static const char *const keys[] = {
		" before_claim_us=", " claim_us=", " queued_us=", " prepare_us=",
		" simulate_us=",     " sign_us=",  " write_us="};
	char needle[64], want[80];
	const char *log = ph_log_text(&f->h), *line, *end, *at;
	long long total, part, sum = 0, v[7];

	snprintf(needle, sizeof(needle), "msg=\"op %lld sent\"", id);
	line = strstr(log, needle);
	ck_assert_msg(line, "no trace line for op %lld", id);
	ck_assert_msg(!strstr(line + 1, needle), "two trace lines for op %lld", id);
	end = strchr(line, '\n');
	ck_assert_ptr_nonnull(end);
	snprintf(want, sizeof(want), " op_id=%lld priority=%s attempt=1 ", id, prio);
	at = strstr(line, want);
	ck_assert_msg(at && at < end, "op %lld: %.*s", id, (int)(end - line), line);
	at = strstr(line, " total_us=");
	ck_assert_msg(at && at < end, "op %lld: no total_us", id);
	ck_assert_int_eq(sscanf(at + 10, "%lld", &total), 1);
	for (int k = 0; k < 7; k++) {
		at = strstr(line, keys[k]);
		ck_assert_msg(at && at < end, "op %lld: no%s", id, keys[k]);
		ck_assert_int_eq(sscanf(at + strlen(keys[k]), "%lld", &part), 1);
		ck_assert_int_ge(part, 0);
		v[k] = part;
		sum += part;
	}
	ck_assert_int_eq(sum, total);
	ck_assert_int_gt(v[4], 0); /* simulate */
	ck_assert_int_gt(v[6], 0); /* write-ahead commit */
}

START_TEST(test_dispatch_send_trace)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_LOG_LEVEL=debug", NULL};
	char rec[16];
	PGresult *r;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	for (int i = 0; i < 8; i++) {
		snprintf(rec, sizeof(rec), "t%d", i);
		enqueue(&f, i % 4 ? "DEPOSIT" : "WITHDRAW", "tracer", rec, i % N_SIGNERS,
			f.signer[(i + 1) % N_SIGNERS], "10", i % 4 ? NULL : "CRITICAL");
	}
	ck_assert(wait_terminal(&f, 60000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED' AND attempts = 1"),
			 8);
	r = PQexec(f.c, "SELECT id, CASE priority WHEN 0 THEN 'CRITICAL' WHEN 1 THEN 'NORMAL' "
			"ELSE 'LOW' END FROM outbox.ops ORDER BY id");
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	ck_assert_int_eq(PQntuples(r), 8);
	for (int i = 0; i < 8; i++)
		check_trace_line(&f, atoll(PQgetvalue(r, i, 0)), PQgetvalue(r, i, 1));
	PQclear(r);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * OUTBOX_NORMAL_LOW_MAX_RATE=5 over 2 workers: 40 NORMAL ops enqueued at
 * once on three signers are claimed at 5 a second at most (each worker's
 * bucket holds one op at once, so at most 2 + 5 t ops in t seconds): their
 * last write-ahead row commits at least (40 - 2) / 5 = 7.6 s after the
 * first enqueue, however fast the machine (unpaced, three signers at 150 ms
 * ledgers take about two seconds). Workers said so in
 * outbox_claims_paced_total. Two CRITICAL ops enqueued behind them are not
 * paced, one on a signer of its own and one on a signer the NORMAL ops
 * keep busy (claimed when its signer comes free, by a claim that has no
 * token for NORMAL work): both attempts commit before the NORMAL ops are
 * through. Every op confirmed once.
 */
START_TEST(test_dispatch_normal_low_paced)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_NORMAL_LOW_MAX_RATE=5", NULL};
	long long span_ms, crit_before;
	char rec[16];
	json_t *s;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	json_decref(ph_wait_all_running(&f.h, 3, 20000));
	pgtest_exec(f.c, "BEGIN");
	for (int i = 0; i < 40; i++) {
		snprintf(rec, sizeof(rec), "p%d", i);
		enqueue(&f, "DEPOSIT", "paced", rec, i % 3, f.signer[3], "10", NULL);
	}
	pgtest_exec(f.c, "COMMIT");
	enqueue(&f, "WITHDRAW", "urgent", "w1", 3, f.signer[0], "10", NULL);
	enqueue(&f, "WITHDRAW", "urgent", "w2", 0, f.signer[1], "10", NULL);
	ck_assert(wait_terminal(&f, 120000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED' AND attempts = 1"),
			 42);
	span_ms =
		pgtest_scalar(f.c, "SELECT (extract(epoch FROM max(a.submitted_at) - "
				   "min(o.created_at)) * 1000)::bigint FROM outbox.ops o JOIN "
				   "outbox.attempts a ON a.op_id = o.id WHERE o.kind = 'DEPOSIT'");
	ck_assert_msg(span_ms >= 7600, "40 ops at 5 a second were sent within %lld ms", span_ms);
	crit_before = pgtest_scalar(
		f.c,
		"SELECT count(*) FROM outbox.attempts a JOIN outbox.ops o ON o.id = a.op_id "
		"WHERE o.kind = 'WITHDRAW' AND a.submitted_at < (SELECT max(x.submitted_at) FROM "
		"outbox.attempts x JOIN outbox.ops y ON y.id = x.op_id WHERE y.kind = 'DEPOSIT')");
	ck_assert_msg(crit_before == 2,
		      "%lld of 2 CRITICAL ops went out before the paced NORMAL ops", crit_before);
	s = ph_ctl(&f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_gt(ph_counter(ph_proc(s, "worker", 0), "outbox_claims_paced_total") +
				 ph_counter(ph_proc(s, "worker", 1), "outbox_claims_paced_total"),
			 0);
	json_decref(s);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * The wake-up paths, with the sweep pushed out to 60 s and the workers idle
 * (past any start-up claim, so none polls): a NORMAL op, which has no
 * NOTIFY, is found by the oracle's lane watcher, whose NEW_OP hint makes the
 * owning worker claim it (the test waits 30 s at most, half the sweep);
 * then a CRITICAL op's NOTIFY outbox_wake (and the watcher) make the owning
 * worker claim at once: its write-ahead attempt commits within a second of
 * its enqueue (milliseconds when the machine is not loaded), and exactly one
 * CRITICAL-only claim was sent for it, by the owner (every worker hears the
 * NOTIFY; its payload names the vshard).
 * The watcher runs with OUTBOX_LANE_WATCH_MS at its maximum, 40: it never
 * looks sooner than 40 ms after its last answer, so however slow the
 * machine it looked at most once per 40 ms of the run, even in the 2 s
 * after a look woke a worker (at the default 5 ms, such a window alone
 * holds hundreds of looks).
 */
START_TEST(test_dispatch_idle_worker_woken)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_DISPATCH_INTERVAL_MS=60000", "OUTBOX_LANE_WATCH_MS=40", NULL};
	json_t *s;
	long long ms, t0 = (long long)ph_now_ms(), looks, took;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	json_decref(ph_wait_all_running(&f.h, 3, 20000));
	ph_sleep_ms(3000); /* idle: past the busy poll of any start-up claim */
	enqueue(&f, "DEPOSIT", "n", "d1", 1, f.signer[1], "10", NULL);
	ck_assert_msg(wait_terminal(&f, 30000), "an idle worker was not woken for a NORMAL op");
	ph_sleep_ms(1500); /* within the busy window the wake opened */
	s = ph_ctl(&f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	looks = ph_counter(ph_proc(s, "oracle", 0), "outbox_lane_watch_looks_total");
	ck_assert_int_gt(looks, 0);
	took = (long long)ph_now_ms() - t0;
	ck_assert_msg(looks <= took / 40 + 2, "%lld looks in %lld ms with OUTBOX_LANE_WATCH_MS=40",
		      looks, took);
	ck_assert_int_gt(ph_counter(ph_proc(s, "oracle", 0), "outbox_lane_watch_wakes_total"), 0);
	for (int i = 0; i < 2; i++) /* the watcher was heard: no worker polled by itself */
		ck_assert_int_eq(ph_counter(ph_proc(s, "worker", i), "outbox_claim_polls_total"),
				 0);
	json_decref(s);
	enqueue(&f, "WITHDRAW", "c", "w1", 2, f.signer[2], "1", NULL);
	ck_assert(wait_terminal(&f, 30000));
	ms = pgtest_scalar(f.c,
			   "SELECT (extract(epoch FROM a.submitted_at - o.created_at) * "
			   "1000)::bigint FROM outbox.ops o JOIN outbox.attempts a ON a.op_id = "
			   "o.id WHERE o.kind = 'WITHDRAW'");
	ck_assert_msg(ms >= 0 && ms < 1000, "CRITICAL enqueue-to-attempt took %lld ms", ms);
	/* every worker heard the NOTIFY; only the vshard's owner claimed for it */
	s = ph_ctl(&f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(
		ph_counter(ph_proc(s, "worker", 0), "outbox_critical_claims_total") +
			ph_counter(ph_proc(s, "worker", 1), "outbox_critical_claims_total"),
		1);
	json_decref(s);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 2);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * The lane watcher silent: the oracle stopped (SIGSTOP; the heartbeat
 * timeout pushed out, so the supervisor leaves it be), so no WATCHING word
 * reaches the worker, and a busy worker polls its lanes by itself again
 * (worker/claim.c). One worker, the sweep at 60 s: a CRITICAL op's NOTIFY
 * makes the worker claim, and the NORMAL ops enqueued behind it on other
 * signers, which have no NOTIFY and no watcher now, are found by its polls:
 * every op confirmed well before a sweep, and outbox_claim_polls_total
 * counts the polls.
 */
START_TEST(test_dispatch_silent_watcher_workers_poll)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_DISPATCH_INTERVAL_MS=60000",
			     "OUTBOX_HEARTBEAT_TIMEOUT_MS=600000", NULL};
	json_t *s;
	long long oracle;
	char rec[16];

	memset(&f, 0, sizeof(f));
	f.workers = 1;
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	s = ph_wait_all_running(&f.h, 2, 20000);
	oracle = ph_int(ph_proc(s, "oracle", 0), "pid");
	json_decref(s);
	ck_assert_int_gt(oracle, 1);
	ck_assert_int_eq(kill((pid_t)oracle, SIGSTOP), 0);
	ph_sleep_ms(5000); /* past WORKER_WATCHED_MS (3 s) and any start-up claim's busy poll */
	enqueue(&f, "WITHDRAW", "c", "w1", 0, f.signer[0], "1", NULL);
	for (int i = 0; i < 6; i++) {
		snprintf(rec, sizeof(rec), "q%d", i);
		enqueue(&f, "DEPOSIT", "n", rec, 1 + i % 3, f.signer[1 + i % 3], "10", NULL);
	}
	ck_assert_msg(wait_terminal(&f, 30000), "NORMAL ops waited for the sweep");
	s = ph_ctl(&f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_gt(ph_counter(ph_proc(s, "worker", 0), "outbox_claim_polls_total"), 0);
	json_decref(s);
	ck_assert_int_eq(kill((pid_t)oracle, SIGCONT), 0);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 7);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* Send answers TRY_AGAIN_LATER, 5xx and garbage at random: every op still confirmed once. */
START_TEST(test_dispatch_transient_faults)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_MAX_ATTEMPTS=30", NULL};
	char rec[16];

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"*\", \"http_5xx_rate\": 0.2, \"garbage_rate\": 0.1}");
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"sendTransaction\", \"try_again_later_rate\": 0.4, "
		    "\"http_5xx_rate\": 0.2}");
	for (int i = 0; i < 16; i++) {
		snprintf(rec, sizeof(rec), "t%d", i);
		enqueue(&f, "DEPOSIT", "flaky", rec, i % N_SIGNERS, f.signer[0], "10", NULL);
	}
	ck_assert_msg(wait_terminal(&f, 90000), "ops still open under faults");
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 16);
	ck_assert_int_gt(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.events WHERE type = "
					    "'RETRY_SCHEDULED'"),
			 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* A held user's ops are skipped (neither failed nor blocking others) and resume on release. */
START_TEST(test_dispatch_held_user)
{
	struct fixture f;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	pgtest_exec(f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) "
			 "VALUES ('frozen', 'compliance review', 'test')");
	enqueue(&f, "DEPOSIT", "frozen", "h1", 0, f.signer[1], "10", NULL);
	enqueue(&f, "WITHDRAW", "frozen", "h2", 0, f.signer[1], "1", NULL);
	enqueue(&f, "DEPOSIT", "free", "f1", 0, f.signer[1], "10", NULL);
	enqueue(&f, "DEPOSIT", "free", "f2", 1, f.signer[1], "10", NULL);
	uint64_t end = ph_now_ms() + 30000;
	while (pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE user_id = 'free' AND "
				  "status = 'CONFIRMED'") < 2 &&
	       ph_now_ms() < end)
		ph_sleep_ms(100);
	ph_sleep_ms(1500); /* several sweeps */
	ck_assert_int_eq(pgtest_scalar(f.c,
				       "SELECT count(*) FROM outbox.ops WHERE user_id = 'free' "
				       "AND status = 'CONFIRMED'"),
			 2);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE user_id = "
					    "'frozen' AND status = 'PENDING' AND attempts = 0"),
			 2);
	pgtest_exec(f.c, "DELETE FROM outbox.user_holds WHERE user_id = 'frozen'");
	ck_assert(wait_terminal(&f, 30000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 4);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * Every send is black-holed (answered PENDING, never included) until the
 * first transaction is proven expired; only then may a new one be built,
 * and the op executes exactly once. Fee bumps of the black-holed tx are
 * recorded before they are sent and expire with it.
 */
START_TEST(test_dispatch_blackhole_expiry)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=2000", NULL};

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 250 --vault-contract " PH_CONTRACT, env);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"sendTransaction\", \"blackhole_rate\": 1}");
	enqueue(&f, "WITHDRAW", "bh", "x1", 0, f.signer[1], "10", NULL);
	uint64_t end = ph_now_ms() + 80000;
	while (pgtest_scalar(f.c, "SELECT count(*) FROM outbox.attempts WHERE outcome = 'EXPIRED' "
				  "AND bump_no = 0") == 0 &&
	       ph_now_ms() < end) {
		/* never a second inner tx while the first could land */
		ck_assert_int_le(pgtest_scalar(f.c, "SELECT count(DISTINCT inner_tx_hash) FROM "
						    "outbox.attempts"),
				 1);
		ph_sleep_ms(200);
	}
	ck_assert_msg(ph_now_ms() < end, "the black-holed tx was never proven expired");
	ph_sim_post(&f.h, "/debug/faults", "{}");
	ck_assert(wait_terminal(&f, 30000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 1);
	ck_assert_int_ge(
		pgtest_scalar(f.c, "SELECT count(*) FROM outbox.attempts WHERE bump_no > 0"), 1);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.attempts WHERE outcome = "
					    "'LIVE'"),
			 0);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(DISTINCT inner_tx_hash) FROM "
					    "outbox.attempts"),
			 2);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * The first envelope is lost by the network (black hole) while the signer's
 * queue slot stays free; past OUTBOX_SUBMITTED_TIMEOUT_MS the worker wraps
 * the SAME inner tx in a fee bump, which lands: confirmed by the bump.
 */
START_TEST(test_dispatch_fee_bump_lands)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=1000", NULL};

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 1000 --vault-contract " PH_CONTRACT, env);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"sendTransaction\", \"blackhole_rate\": 1}");
	enqueue(&f, "DEPOSIT", "bump", "y1", 0, f.signer[1], "10", NULL);
	uint64_t end = ph_now_ms() + 20000;
	while (pgtest_scalar(f.c, "SELECT count(*) FROM outbox.attempts") == 0 && ph_now_ms() < end)
		ph_sleep_ms(20);
	ph_sleep_ms(100);
	ph_sim_post(&f.h, "/debug/faults", "{}");
	ck_assert(wait_terminal(&f, 30000));
	PGresult *r =
		PQexec(f.c, "SELECT o.status, a.bump_no FROM outbox.ops o JOIN outbox.attempts a "
			    "ON a.tx_hash = o.tx_hash");
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), "CONFIRMED");
	ck_assert_msg(atoi(PQgetvalue(r, 0, 1)) >= 1, "confirmed by bump %s", PQgetvalue(r, 0, 1));
	PQclear(r);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(DISTINCT inner_tx_hash) FROM "
					    "outbox.attempts"),
			 1);
	ck_assert_int_gt(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.events WHERE type = "
					    "'FEE_BUMPED'"),
			 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * getTransaction answers 503 to everyone: the workers cannot follow their
 * own transactions, so every confirmation comes from the oracle's ledger
 * follower (getTransactions per closed ledger -> attempt_lookup -> a
 * TX_LANDED hint in the owning worker's ring).
 */
START_TEST(test_dispatch_follower_confirms)
{
	struct fixture f;
	char rec[16];

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"getTransaction\", \"http_5xx_rate\": 1}");
	for (int i = 0; i < 8; i++) {
		snprintf(rec, sizeof(rec), "l%d", i);
		enqueue(&f, "DEPOSIT", "led", rec, i % N_SIGNERS, f.signer[0], "10", NULL);
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open without getTransaction");
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 8);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* stellar-sim's count of requests of one method so far (GET /debug/requests). */
static long long sim_requests(struct fixture *f, const char *method)
{
	json_t *r = sim_get(f, "/debug/requests");
	long long n = json_integer_value(json_object_get(r, method));

	json_decref(r);
	return n;
}

/* Waits (generously) until the follower has read n more pages: its hints cover ledgers. */
static void wait_follower_pages(struct fixture *f, long long n)
{
	long long until = sim_requests(f, "getTransactions") + n;
	uint64_t end = ph_now_ms() + 30000;

	while (sim_requests(f, "getTransactions") < until)
		ck_assert_msg(ph_now_ms() < end, "the follower reads no ledgers");
}

/*
 * With the ledger follower keeping up, a worker asks no getTransaction of
 * its own: every landing comes as a hint (ledgers of 1 s, so a poll, the
 * first 150 ms after the send, would come before most of them). The
 * follower's words are at most 2 s old while it runs; a starved oracle
 * may let a job or two poll, hence "at most 2" for 8 ops (before the
 * follower's coverage: at least one poll per op).
 */
START_TEST(test_dispatch_follower_spares_lookups)
{
	struct fixture f;
	char rec[16];
	long long before;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 1000 --vault-contract " PH_CONTRACT, NULL);
	json_decref(ph_wait_all_running(&f.h, 3, 20000));
	wait_follower_pages(&f, 3);
	before = sim_requests(&f, "getTransaction");
	for (int i = 0; i < 8; i++) {
		snprintf(rec, sizeof(rec), "s%d", i);
		enqueue(&f, "DEPOSIT", "spare", rec, i % N_SIGNERS, f.signer[i % N_SIGNERS], "10",
			NULL);
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open");
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 8);
	ck_assert_int_le(sim_requests(&f, "getTransaction") - before, 2);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * The follower cannot read ledgers (getTransactions answers 503): its
 * hints cover nothing, and the workers follow their transactions with
 * getTransaction themselves (without them, each op would wait for an
 * account read, WORKER_ACCOUNT_MS after its send, to find it).
 */
START_TEST(test_dispatch_no_follower_workers_poll)
{
	struct fixture f;
	char rec[16];

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"getTransactions\", \"http_5xx_rate\": 1}");
	for (int i = 0; i < 8; i++) {
		snprintf(rec, sizeof(rec), "p%d", i);
		enqueue(&f, "DEPOSIT", "poll", rec, i % N_SIGNERS, f.signer[i % N_SIGNERS], "10",
			NULL);
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open without the follower");
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 8);
	ck_assert_int_ge(sim_requests(&f, "getTransaction"), 8);
	/* found by those lookups, not by an account read after WORKER_ACCOUNT_MS (one per signer) */
	ck_assert_int_lt(sim_requests(&f, "getLedgerEntries"), 8);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * A respawned worker takes its dead predecessor's leases at once (it
 * releases them on the dead pid's behalf) instead of waiting a lease TTL
 * (10 s): worker 0's vshards change owner within 5 s of the SIGKILL.
 */
START_TEST(test_dispatch_respawn_takes_leases_at_once)
{
	struct fixture f;
	char q[300];
	json_t *s;
	long long pid;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	s = ph_wait_all_running(&f.h, 3, 10000);
	pid = ph_int(ph_proc(s, "worker", 0), "pid");
	json_decref(s);
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM outbox.shard_leases WHERE expires_at > now() AND owner = "
		 "'%s/0/%lld'",
		 f.h.instance, pid);
	uint64_t end = ph_now_ms() + 10000;
	while (pgtest_scalar(f.c, q) < 4 && ph_now_ms() < end)
		ph_sleep_ms(20);
	ck_assert_int_eq(pgtest_scalar(f.c, q), 4);
	ck_assert_int_eq(kill((pid_t)pid, SIGKILL), 0);
	uint64_t killed = ph_now_ms();
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM outbox.shard_leases WHERE expires_at > now() AND vshard %% "
		 "2 = 0 "
		 "AND epoch = 2 AND split_part(owner, '/', 1) = '%s' AND owner <> '%s/0/%lld'",
		 f.h.instance, f.h.instance, pid);
	while (pgtest_scalar(f.c, q) < 4 && ph_now_ms() < killed + 9000)
		ph_sleep_ms(20);
	ck_assert_msg(pgtest_scalar(f.c, q) == 4, "vshards not retaken in %llu ms",
		      (unsigned long long)(ph_now_ms() - killed));
	ck_assert_msg(ph_now_ms() - killed < 5000, "retaken only after %llu ms",
		      (unsigned long long)(ph_now_ms() - killed));
	enqueue(&f, "DEPOSIT", "after", "a1", 0, f.signer[1], "10", "CRITICAL");
	enqueue(&f, "DEPOSIT", "after", "a2", 1, f.signer[1], "10", NULL);
	ck_assert(wait_terminal(&f, 30000));
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * Congestion from the fee oracle (background load in the sim, the oracle
 * told the ledger holds 10 transactions): a LOW op is deferred in
 * OUTBOX_LOW_DEFER_MS steps while congestion >= high, but never longer than
 * OUTBOX_LOW_MAX_DEFER_MS in total, then submitted anyway; NORMAL and
 * CRITICAL are never deferred. (Which fee CRITICAL bids is proven end to end
 * by check_dispatch_fees.c. Here the 30 background bids fit the 60-tx
 * ledger, so every included tx pays the base fee and p70 = p95; that suite
 * closes surge-priced ledgers that clear at different prices instead.)
 */
START_TEST(test_dispatch_low_deferral_under_congestion)
{
	struct fixture f;
	const char *env[] = {"FEE_ORACLE_DWELL_MS=0",        "FEE_ORACLE_LEDGER_MAX_TX=10",
			     "FEE_ORACLE_POLL_MS=200",       "OUTBOX_LOW_DEFER_MS=1000",
			     "OUTBOX_LOW_MAX_DEFER_MS=4000", NULL};
	int level = -1;

	memset(&f, 0, sizeof(f));
	start(&f,
	      "--ledger-ms 250 --ledger-capacity 60 --fee-window-soroban 4 "
	      "--vault-contract " PH_CONTRACT,
	      env);
	ph_sim_post(&f.h, "/debug/faults", "{\"background_fee_load\": 30}");
	uint64_t end = ph_now_ms() + 30000;
	while (level < 2 && ph_now_ms() < end) {
		json_t *fee = ph_ctl(&f.h, "fee", NULL);
		const char *l =
			fee ? json_string_value(json_object_get(fee, "congestionLevel")) : NULL;
		level = !l ? -1 : !strcmp(l, "severe") ? 3 : !strcmp(l, "high") ? 2 : 0;
		json_decref(fee);
		ph_sleep_ms(100);
	}
	ck_assert_msg(level >= 2, "congestion never reached high");
	enqueue(&f, "REBALANCE", "ops", "low1", 0, NULL, "10", NULL);
	enqueue(&f, "DEPOSIT", "n", "norm1", 1, f.signer[1], "10", NULL);
	enqueue(&f, "WITHDRAW", "c", "crit1", 2, f.signer[2], "1", NULL);
	ck_assert(wait_terminal(&f, 60000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 3);
	/* LOW: deferred several times, submitted once its total deferral reached the cap */
	ck_assert_int_ge(pgtest_scalar(f.c,
				       "SELECT count(*) FROM outbox.events e JOIN outbox.ops o "
				       "ON o.id = e.op_id WHERE o.kind = 'REBALANCE' AND "
				       "e.type = 'DEFERRED'"),
			 2);
	long long waited =
		pgtest_scalar(f.c, "SELECT (extract(epoch FROM min(a.submitted_at) - "
				   "o.created_at) * 1000)::bigint FROM outbox.ops o JOIN "
				   "outbox.attempts a ON a.op_id = o.id WHERE o.kind = "
				   "'REBALANCE' GROUP BY o.created_at");
	ck_assert_msg(waited >= 3900 && waited < 9000, "LOW waited %lld ms", waited);
	ck_assert_int_eq(pgtest_scalar(f.c,
				       "SELECT count(*) FROM outbox.events e JOIN outbox.ops o "
				       "ON o.id = e.op_id WHERE o.kind <> 'REBALANCE' AND "
				       "e.type = 'DEFERRED'"),
			 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * OUTBOX_GLOBAL_MAX_IN_FLIGHT=1 across two workers: claimed ops beyond the
 * cap are given back (claim_release) and wait; no two transactions are ever
 * in flight at once (their attempt intervals never overlap), and every op
 * still ends CONFIRMED exactly once.
 */
START_TEST(test_dispatch_global_cap)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_GLOBAL_MAX_IN_FLIGHT=1", NULL};
	char rec[16];

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 100 --vault-contract " PH_CONTRACT, env);
	for (int i = 0; i < 8; i++) {
		snprintf(rec, sizeof(rec), "g%d", i);
		enqueue(&f, "DEPOSIT", "cap", rec, i % N_SIGNERS, f.signer[0], "10", NULL);
	}
	ck_assert(wait_terminal(&f, 60000));
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 8);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.attempts a JOIN "
					    "outbox.attempts b ON a.id < b.id AND a.submitted_at < "
					    "b.decided_at AND b.submitted_at < a.decided_at"),
			 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * kill -9 a worker at a crash point; the op still executes once and ends
 * CONFIRMED. Without crash points compiled in (OUTBOX_CRASHPOINTS=OFF, the
 * default) nothing would crash and the case would prove nothing: it fails.
 */
static void crash_at(const char *point)
{
	struct fixture f;
	char cp[64], once[200];
	const char *env[3] = {cp, once, NULL};

#ifndef WITH_CRASHPOINTS
	ck_abort_msg("crash point %s: this build has no crash points; configure with "
		     "-DOUTBOX_CRASHPOINTS=ON (ops/test.sh does)",
		     point);
#endif
	memset(&f, 0, sizeof(f));
	snprintf(cp, sizeof(cp), "CRASHPOINT=%s", point);
	snprintf(once, sizeof(once), "CRASHPOINT_ONCE_FILE=/tmp/crash_%d_%s", (int)getpid(), point);
	unlink(once + strlen("CRASHPOINT_ONCE_FILE="));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	for (int i = 0; i < 6; i++) {
		char rec[16];
		snprintf(rec, sizeof(rec), "c%d", i);
		enqueue(&f, "DEPOSIT", "crash", rec, i % N_SIGNERS, f.signer[0], "100", "CRITICAL");
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open after a crash at %s", point);
	ck_assert_msg(access(once + strlen("CRASHPOINT_ONCE_FILE="), F_OK) == 0,
		      "crash point %s never reached", point);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 6);
	check_exactly_once(&f);
	unlink(once + strlen("CRASHPOINT_ONCE_FILE="));
	stop(&f);
}

START_TEST(test_dispatch_crash_after_attempt_commit)
{
	crash_at("after_attempt_commit");
}
END_TEST

START_TEST(test_dispatch_crash_after_send)
{
	crash_at("after_send");
}
END_TEST

START_TEST(test_dispatch_crash_after_confirm_seen)
{
	crash_at("after_confirm_seen");
}
END_TEST

/*
 * The oracle vacuums outbox.lanes every LANES_VACUUM_PERIOD_MS
 * (oracle/lanes_vacuum.h): the claims' and settles' dead row versions go
 * between autovacuum's visits (the test server may not run autovacuum at all).
 */
START_TEST(test_dispatch_lanes_vacuumed)
{
	struct fixture f;
	char rec[32];
	long long dead = -1;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	for (int i = 0; i < 40; i++) {
		snprintf(rec, sizeof(rec), "v%d", i);
		enqueue(&f, "DEPOSIT", "u1", rec, i % N_SIGNERS, f.signer[(i + 1) % N_SIGNERS],
			"1000", NULL);
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open");
	ck_assert_int_gt(pgtest_scalar(f.c, "SELECT n_tup_upd FROM pg_stat_user_tables "
					    "WHERE relid = 'outbox.lanes'::regclass"),
			 40);
	/* the updates are over: the next vacuum leaves no dead version behind */
	for (int i = 0; i < 300 && dead != 0; i++) {
		ph_sleep_ms(100);
		dead = pgtest_scalar(f.c, "SELECT CASE WHEN vacuum_count > 0 AND last_vacuum > "
					  "(SELECT max(updated_at) FROM outbox.ops) "
					  "THEN n_dead_tup ELSE -1 END FROM pg_stat_user_tables "
					  "WHERE relid = 'outbox.lanes'::regclass");
	}
	ck_assert_msg(dead == 0, "outbox.lanes not vacuumed after the ops ended (%lld dead)", dead);
	ck_assert_msg(!ph_log_contains(&f.h, "lanes vacuum:"), "the lanes vacuum complained:\n%s",
		      ph_log_text(&f.h));
	stop(&f);
}
END_TEST

/* One case per test, named after it: CK_RUN_CASE=<name> runs one. */
#define CASE_TIMEOUT_S 150

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");

	dh_add_case(s, "all_confirmed_exactly_once", test_dispatch_all_confirmed_exactly_once,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "overdraft_fails_with_code", test_dispatch_overdraft_fails_with_code,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "critical_first", test_dispatch_critical_first, CASE_TIMEOUT_S);
	dh_add_case(s, "send_trace", test_dispatch_send_trace, CASE_TIMEOUT_S);
	dh_add_case(s, "idle_worker_woken", test_dispatch_idle_worker_woken, CASE_TIMEOUT_S);
	dh_add_case(s, "normal_low_paced", test_dispatch_normal_low_paced, CASE_TIMEOUT_S);
	dh_add_case(s, "silent_watcher_workers_poll", test_dispatch_silent_watcher_workers_poll,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "transient_faults", test_dispatch_transient_faults, CASE_TIMEOUT_S);
	dh_add_case(s, "held_user", test_dispatch_held_user, CASE_TIMEOUT_S);
	dh_add_case(s, "blackhole_expiry", test_dispatch_blackhole_expiry, CASE_TIMEOUT_S);
	dh_add_case(s, "fee_bump_lands", test_dispatch_fee_bump_lands, CASE_TIMEOUT_S);
	dh_add_case(s, "follower_confirms", test_dispatch_follower_confirms, CASE_TIMEOUT_S);
	dh_add_case(s, "follower_spares_lookups", test_dispatch_follower_spares_lookups,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "no_follower_workers_poll", test_dispatch_no_follower_workers_poll,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "respawn_takes_leases", test_dispatch_respawn_takes_leases_at_once,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "low_deferral", test_dispatch_low_deferral_under_congestion, CASE_TIMEOUT_S);
	dh_add_case(s, "global_cap", test_dispatch_global_cap, CASE_TIMEOUT_S);
	dh_add_case(s, "crash_after_attempt_commit", test_dispatch_crash_after_attempt_commit,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "crash_after_send", test_dispatch_crash_after_send, CASE_TIMEOUT_S);
	dh_add_case(s, "lanes_vacuumed", test_dispatch_lanes_vacuumed, CASE_TIMEOUT_S);
	dh_add_case(s, "crash_after_confirm_seen", test_dispatch_crash_after_confirm_seen,
		    CASE_TIMEOUT_S);
	return s;
}

OUTBOX_CHECK_MAIN(dispatch_suite)
