/*
 * check_exactly_once.c - the exactly-once rule (common/fate.h) end to end,
 * in the situations where an RPC's silence or a re-send's refusal looks like
 * proof and is not: outboxd + stellar-sim + PostgreSQL, each test ending
 * with the executions-by-op_ref check (every op that ran executed exactly
 * once, nothing else executed, at most one transaction pending per account).
 *
 *	outage beyond retention: the process group frozen (SIGSTOP) while its
 *	    transactions land, more ledgers close than the RPC retains, then
 *	    SIGCONT: the ops are HELD ("executed, outcome unknown"), never paid
 *	    again; an operator resolves them and the signers carry on;
 *	admin retry of an op that failed on chain: it runs once more, with
 *	    attempt number 2, and the signer's later ops are not stuck;
 *	cancel racing a claim: the claim is given back without a resync;
 *	an RPC that lags the chain by 3 and 10 ledgers, under load with fee
 *	    bumps; two RPC nodes at random (1 and 9 ledgers behind); a worker
 *	    SIGKILLed at each crash point while the RPC lags.
 */
/* (the build links by these includes; dispatch_harness.h needs them) */
#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "tests/integration/dispatch_harness.h"
#include "tests/support/pgtest.h"
#include "tests/support/check_main.h"

static long long count(struct fixture *f, const char *sql)
{
	return pgtest_scalar(f->c, sql);
}

/* Wait until sql returns want (deadline timeout_ms); false on timeout. */
static bool wait_for(struct fixture *f, const char *sql, long long want, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	do {
		if (count(f, sql) == want)
			return true;
		ph_sleep_ms(50);
	} while (ph_now_ms() < end);
	return false;
}

static long long sim_state_int(struct fixture *f, const char *key)
{
	json_t *st = sim_get(f, "/debug/state");
	long long v = json_integer_value(json_object_get(st, key));

	json_decref(st);
	return v;
}

/* Close ledgers every 100 ms until no op is PENDING or SUBMITTED (manual-close sims). */
static bool close_until_terminal(struct fixture *f, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	do {
		if (count(f, "SELECT count(*) FROM outbox.ops WHERE status IN "
			     "('PENDING','SUBMITTED')") == 0)
			return true;
		ph_sim_post(&f->h, "/debug/close", "{\"ledgers\": 1}");
		ph_sleep_ms(100);
	} while (ph_now_ms() < end);
	return false;
}

/*
 * An outage longer than the RPC's retention: ops SUBMITTED, the whole
 * process group frozen while their transactions land, then more ledgers than
 * the RPC retains. Afterwards no RPC answer shows the transactions
 * (NOT_FOUND, outside retention) and a re-send answers txBAD_SEQ; only the
 * signers' sequence numbers show they ran. A dispatcher that took txTOO_LATE,
 * txBAD_SEQ or NOT_FOUND for proof of death would build a new transaction for
 * every one of these ops and pay each twice; the ops must be HELD instead.
 */
START_TEST(test_outage_beyond_retention_holds_never_repays)
{
	struct fixture f;
	char user[16], rec[16], sql[256];

	memset(&f, 0, sizeof(f));
	f.n_signers = 8;
	start(&f, "--ledger-ms 3600000 --retention-ledgers 4 --vault-contract " PH_CONTRACT, NULL);
	for (int i = 0; i < 8; i++) {
		snprintf(user, sizeof(user), "u%d", i);
		snprintf(rec, sizeof(rec), "d%d", i);
		enqueue(&f, "DEPOSIT", user, rec, i, f.signer[(i + 1) % 8], "1000", NULL);
	}
	/* every envelope recorded and queued in the network */
	ck_assert_msg(wait_for(&f, "SELECT count(*) FROM outbox.attempts", 8, 60000),
		      "attempts: %lld", count(&f, "SELECT count(*) FROM outbox.attempts"));
	uint64_t end = ph_now_ms() + 30000;
	while (sim_state_int(&f, "queue_size") < 8 && ph_now_ms() < end)
		ph_sleep_ms(50);
	ck_assert_int_eq(sim_state_int(&f, "queue_size"), 8);

	ck_assert_int_eq(kill(-f.h.sup_pid, SIGSTOP), 0);
	ph_sim_post(&f.h, "/debug/close", "{\"ledgers\": 1}");  /* they land */
	ph_sim_post(&f.h, "/debug/close", "{\"ledgers\": 10}"); /* and fall out of retention */
	ck_assert_int_eq(kill(-f.h.sup_pid, SIGCONT), 0);

	ck_assert_msg(
		wait_for(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'HELD'", 8, 60000),
		"held: %lld", count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'HELD'"));
	check_executions(&f, true);
	/* never a second transaction, held for the right reason, every envelope LANDED */
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.attempts WHERE bump_no = 0"), 8);
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE hold_reason = "
				   "'executed, outcome unknown'"),
			 8);
	ck_assert_int_eq(
		count(&f, "SELECT count(*) FROM outbox.attempts WHERE outcome <> 'LANDED'"), 0);
	ck_assert_int_eq(counter_sum(&f, "outbox_ops_held_total"), 8);
	/* stays held: nothing more is sent for them */
	long long sends = counter_sum(&f, "outbox_sends_total");
	ph_sleep_ms(2500);
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'HELD'"), 8);
	ck_assert_int_eq(counter_sum(&f, "outbox_sends_total"), sends);

	/* an operator checks the chain and resolves them; the signers carry on */
	for (int i = 0; i < 8; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT outbox.admin_resolve(id, 'CONFIRMED', 'ops@example', 'ledger "
			 "explorer') FROM outbox.ops WHERE idempotency_key = 'DEPOSIT:u%d:d%d'",
			 i, i);
		pgtest_exec(f.c, sql);
	}
	for (int i = 0; i < 8; i++) {
		snprintf(user, sizeof(user), "u%d", i);
		snprintf(rec, sizeof(rec), "e%d", i);
		enqueue(&f, "DEPOSIT", user, rec, i, f.signer[(i + 1) % 8], "1000", NULL);
	}
	ck_assert_msg(close_until_terminal(&f, 60000), "ops still open after the outage");
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 16);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * A withdrawal fails on chain (the user has no balance), the customer's
 * deposit confirms, an operator retries the withdrawal: it runs once more
 * with attempt number 2 (the retry budget restarts, attempt numbers do
 * not), and three later deposits of the same signer confirm. A retry that
 * reused attempt number 1 would collide with the failed attempt's row and
 * wedge the signer.
 */
START_TEST(test_admin_retry_after_failure_on_chain)
{
	struct fixture f;
	char poor[57], rec[16];

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	pgtest_account(91, poor);
	enqueue(&f, "WITHDRAW", "cust", "wd-1", 0, poor, "5000", NULL);
	ck_assert(wait_terminal(&f, 30000));
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'FAILED'"), 1);
	enqueue(&f, "DEPOSIT", "cust", "dep-1", 0, poor, "7000", NULL);
	ck_assert(wait_terminal(&f, 30000));
	pgtest_exec(f.c, "SELECT outbox.admin_retry(id, 'ops@example') FROM outbox.ops "
			 "WHERE kind = 'WITHDRAW'");
	for (int i = 0; i < 3; i++) {
		snprintf(rec, sizeof(rec), "dep-%d", i + 2);
		enqueue(&f, "DEPOSIT", "cust", rec, 0, poor, "10", NULL);
	}
	ck_assert_msg(wait_terminal(&f, 60000), "ops still open after the admin retry");
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 5);
	ck_assert_int_eq(count(&f,
			       "SELECT a.attempt_no FROM outbox.attempts a JOIN outbox.ops o ON "
			       "o.id = a.op_id WHERE o.kind = 'WITHDRAW' AND a.outcome = "
			       "'CONFIRMED'"),
			 2);
	ck_assert_int_eq(counter_sum(&f, "outbox_vshard_resyncs_total"), 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * An operator cancels an op while a worker is preparing it (simulation
 * delayed): the worker's next write learns it and the claim goes back in the
 * same statement; no vshard is resynced and the signer's next op runs.
 */
START_TEST(test_cancel_racing_a_claim)
{
	struct fixture f;

	memset(&f, 0, sizeof(f));
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"method\": \"simulateTransaction\", \"delay_ms\": 1500}");
	enqueue(&f, "DEPOSIT", "u", "c1", 0, f.signer[1], "10", "CRITICAL");
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "SELECT coalesce((SELECT in_flight FROM outbox.lanes WHERE signer = '%s'), -1)",
		 f.signer[0]);
	ck_assert_msg(wait_for(&f, sql, 1, 30000), "never claimed");
	pgtest_exec(f.c, "SELECT outbox.admin_cancel(id, 'ops@example') FROM outbox.ops");
	ck_assert_msg(wait_for(&f, sql, 0, 30000), "the claim was never given back");
	ph_sim_post(&f.h, "/debug/faults", "{}");
	enqueue(&f, "DEPOSIT", "u", "c2", 0, f.signer[1], "10", "CRITICAL");
	ck_assert(wait_terminal(&f, 30000));
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CANCELLED'"),
			 1);
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 1);
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.attempts a JOIN outbox.ops o ON "
				   "o.id = a.op_id WHERE o.status = 'CANCELLED'"),
			 0);
	ck_assert_int_eq(counter_sum(&f, "outbox_vshard_resyncs_total"), 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* n ops over the fixture's signers, each signer paying another. */
static void enqueue_batch(struct fixture *f, const char *tag, int n)
{
	char user[32], rec[32];

	for (int i = 0; i < n; i++) {
		snprintf(user, sizeof(user), "%s%d", tag, i % 7);
		snprintf(rec, sizeof(rec), "%s-%d", tag, i);
		enqueue(f, i % 4 ? "DEPOSIT" : "WITHDRAW", user, rec, i % f->n_signers,
			f->signer[(i + 1) % f->n_signers], i % 4 ? "100" : "1", NULL);
	}
}

/*
 * The RPC answering getTransaction and getLedgerEntries lags the chain by
 * 3, then 10 ledgers (sendTransaction is current: a re-send of a landed
 * transaction answers txBAD_SEQ while the lagging view still says NOT_FOUND
 * and shows the old sequence number). A small ledger keeps transactions
 * queued past OUTBOX_SUBMITTED_TIMEOUT_MS, so fee bumps go out too.
 */
START_TEST(test_ingest_lag_under_load_with_fee_bumps)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=1000", "OUTBOX_MAX_ATTEMPTS=30", NULL};

	memset(&f, 0, sizeof(f));
	f.n_signers = 8;
	start(&f, "--ledger-ms 300 --ledger-capacity 3 --vault-contract " PH_CONTRACT, env);
	ph_sim_post(&f.h, "/debug/faults", "{\"ingest_lag_ledgers\": 3}");
	enqueue_batch(&f, "lag3", 24);
	ck_assert_msg(wait_terminal(&f, 120000), "ops still open with a 3-ledger lag");
	ph_sim_post(&f.h, "/debug/faults", "{\"ingest_lag_ledgers\": 10}");
	enqueue_batch(&f, "lag10", 24);
	ck_assert_msg(wait_terminal(&f, 150000), "ops still open with a 10-ledger lag");
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 48);
	ck_assert_int_gt(count(&f, "SELECT count(*) FROM outbox.attempts WHERE bump_no > 0"), 0);
	ck_assert_int_gt(counter_sum(&f, "outbox_account_reads_total"), 0);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * The write-ahead sessions alone, killed again and again under load (the
 * server ends them; every other connection stays up; a small ledger keeps
 * transactions queued past the 1 s submitted timeout, so fee bumps go out
 * too): each
 * loss drops the worker's vshards, which it acquires again with new epochs
 * (schema/0031) and reconciles after its write-ahead and express queues
 * (reconcile.c). Every op ends CONFIRMED once; none is left SUBMITTED with
 * no job following it.
 */
START_TEST(test_write_ahead_sessions_killed_under_load)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=1000", "OUTBOX_MAX_ATTEMPTS=30", NULL};
	long long kills = 0;

	memset(&f, 0, sizeof(f));
	f.n_signers = 8;
	start(&f, "--ledger-ms 300 --ledger-capacity 3 --vault-contract " PH_CONTRACT, env);
	json_decref(ph_wait_all_running(&f.h, 3, 20000));
	enqueue_batch(&f, "ahead", 32);
	for (int round = 0; round < 12; round++) {
		ph_sleep_ms(400);
		kills += count(&f, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
				   "WHERE application_name = 'outboxd-worker/ahead'");
	}
	ck_assert_int_gt(kills, 0);
	ck_assert_msg(wait_terminal(&f, 150000),
		      "ops still open after the write-ahead sessions died");
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 32);
	/* the workers re-acquired their vshards with new epochs */
	ck_assert_int_gt(count(&f, "SELECT max(epoch) FROM outbox.shard_leases"), 1);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* Two RPC nodes behind a load balancer, 1 and 9 ledgers behind, answering at random. */
START_TEST(test_two_rpc_views_at_random)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=1500", "OUTBOX_MAX_ATTEMPTS=30", NULL};

	memset(&f, 0, sizeof(f));
	f.n_signers = 6;
	start(&f, "--ledger-ms 200 --ledger-capacity 4 --vault-contract " PH_CONTRACT, env);
	ph_sim_post(&f.h, "/debug/faults",
		    "{\"ingest_lag_ledgers\": 1, \"ingest_lag_alt_ledgers\": 9}");
	enqueue_batch(&f, "lb", 36);
	ck_assert_msg(wait_terminal(&f, 150000), "ops still open behind two views");
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 36);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* kill -9 a worker at a crash point while the RPC lags 5 ledgers: still once each. */
static void crash_with_lag(const char *point)
{
	struct fixture f;
	char cp[64], once[200];
	const char *env[3] = {cp, once, NULL};
	const char *file = once + strlen("CRASHPOINT_ONCE_FILE=");

	memset(&f, 0, sizeof(f));
	snprintf(cp, sizeof(cp), "CRASHPOINT=%s", point);
	snprintf(once, sizeof(once), "CRASHPOINT_ONCE_FILE=/tmp/crash_lag_%d_%s", (int)getpid(),
		 point);
	unlink(file);
	start(&f, "--ledger-ms 200 --vault-contract " PH_CONTRACT, env);
	ph_sim_post(&f.h, "/debug/faults", "{\"ingest_lag_ledgers\": 5}");
	enqueue_batch(&f, "crash", 8);
	ck_assert_msg(wait_terminal(&f, 120000), "ops still open after a crash at %s", point);
	ck_assert_msg(access(file, F_OK) == 0, "crash point %s never reached", point);
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 8);
	check_exactly_once(&f);
	unlink(file);
	stop(&f);
}

START_TEST(test_crash_after_attempt_commit_with_lag)
{
	crash_with_lag("after_attempt_commit");
}
END_TEST

START_TEST(test_crash_after_send_with_lag)
{
	crash_with_lag("after_send");
}
END_TEST

START_TEST(test_crash_after_confirm_seen_with_lag)
{
	crash_with_lag("after_confirm_seen");
}
END_TEST

/*
 * A worker killed right after a fee bump's attempt row committed, before
 * the bump went out: the new worker adopts the op with both envelopes (the
 * inner transaction and its bump, one sequence number) and ends it exactly
 * once. A small ledger keeps transactions queued past the 1 s submitted
 * timeout, so bumps go out.
 */
START_TEST(test_crash_after_bump_commit)
{
	struct fixture f;
	const char *env[] = {"CRASHPOINT=after_bump_commit", NULL,
			     "OUTBOX_SUBMITTED_TIMEOUT_MS=1000", "OUTBOX_MAX_ATTEMPTS=30", NULL};
	char once[200];
	const char *file = once + strlen("CRASHPOINT_ONCE_FILE=");

	snprintf(once, sizeof(once), "CRASHPOINT_ONCE_FILE=/tmp/crash_bump_%d", (int)getpid());
	env[1] = once;
	unlink(file);
	memset(&f, 0, sizeof(f));
	f.n_signers = 8;
	start(&f, "--ledger-ms 300 --ledger-capacity 3 --vault-contract " PH_CONTRACT, env);
	enqueue_batch(&f, "bump", 32);
	ck_assert_msg(wait_terminal(&f, 150000), "ops still open after a crash after a bump");
	ck_assert_msg(access(file, F_OK) == 0, "no fee bump reached the crash point");
	ck_assert_int_eq(count(&f, "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'"),
			 32);
	ck_assert_int_gt(count(&f, "SELECT count(*) FROM outbox.attempts WHERE bump_no > 0"), 0);
	check_exactly_once(&f);
	unlink(file);
	stop(&f);
}
END_TEST

static Suite *exactly_once_suite(void)
{
	Suite *s = suite_create("exactly_once");

	dh_add_case(s, "outage_beyond_retention", test_outage_beyond_retention_holds_never_repays,
		    180);
	dh_add_case(s, "admin_retry_after_failure", test_admin_retry_after_failure_on_chain, 120);
	dh_add_case(s, "cancel_racing_claim", test_cancel_racing_a_claim, 120);
	dh_add_case(s, "ingest_lag_with_fee_bumps", test_ingest_lag_under_load_with_fee_bumps, 300);
	dh_add_case(s, "two_rpc_views", test_two_rpc_views_at_random, 200);
	dh_add_case(s, "write_ahead_sessions_killed", test_write_ahead_sessions_killed_under_load,
		    250);
	dh_add_case(s, "crash_after_attempt_commit_lag", test_crash_after_attempt_commit_with_lag,
		    150);
	dh_add_case(s, "crash_after_send_lag", test_crash_after_send_with_lag, 150);
	dh_add_case(s, "crash_after_confirm_seen_lag", test_crash_after_confirm_seen_with_lag, 150);
	dh_add_case(s, "crash_after_bump_commit", test_crash_after_bump_commit, 200);
	return s;
}

OUTBOX_CHECK_MAIN(exactly_once_suite)
