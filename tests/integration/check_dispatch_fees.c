/*
 * check_dispatch_fees.c - the worker's fee paths end to end: outboxd
 * (2 workers) + stellar-sim + a fresh migrated database.
 *
 *  - CRITICAL bids the aggressive fee under congestion, NORMAL the
 *    recommended one (common/fee_policy.c through worker/build.c);
 *  - OUTBOX_MAX_ABS_FEE caps a bid, the capped op still submits and
 *    confirms, and outbox_max_fee_hit_total counts it;
 *  - a fee bump of an envelope still sitting in the queue bids at least 10x
 *    its per-operation rate (replace-by-fee: common/stellar/README.md, Queue
 *    rules; worker/follow.c try_bump), and when OUTBOX_MAX_ABS_FEE is below that
 *    10x minimum the worker waits for the queue to drop the envelope and
 *    only then sends a milder bump;
 *  - a bump bids at least what the market recommends now, when that is more
 *    than the first bid compounded (fee_policy_bump_bid).
 *
 * The sim runs with an hour-long ledger clock and the tests close ledgers
 * through /debug/close. That is what makes the fee assertions exact: the
 * oracle's getFeeStats window only moves when a ledger closes, so the
 * snapshot the test reads is the one the worker bids from, and a queued
 * envelope stays queued (and provably not included) until the test says so.
 * Fees are read from the outside: outboxctl fee/stats and the envelopes
 * recorded in outbox.attempts, decoded here (inclusion fee = fee minus the
 * Soroban resource fee: common/stellar/README.md, Fees).
 */
/* (the build links by these includes; dispatch_harness.h needs them) */
#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/stellar/xdr.h"
#include "tests/integration/dispatch_harness.h"
#include "tests/support/pgtest.h"
#include "tests/support/check_main.h"

/* Manual ledgers: the clock never closes one within a test. */
#define SIM_MANUAL "--ledger-ms 3600000 --vault-contract " PH_CONTRACT

/* A sim debug endpoint's JSON answer (GET when body is NULL). */
static json_t *sim_json(struct fixture *f, const char *path, const char *body)
{
	char cmd[1024];
	json_t *j;
	json_error_t e;
	FILE *p;

	if (body)
		snprintf(cmd, sizeof(cmd),
			 "curl -fsS -X POST -H 'Content-Type: application/json' --data '%s' "
			 "http://127.0.0.1:%d%s",
			 body, f->h.sim_port, path);
	else
		snprintf(cmd, sizeof(cmd), "curl -fsS http://127.0.0.1:%d%s", f->h.sim_port, path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	j = json_loadf(p, 0, &e);
	pclose(p);
	ck_assert_msg(j != NULL, "%s: %s", path, e.text);
	return j;
}

/* Close n ledgers now; returns the latest ledger. */
static long long close_ledgers(struct fixture *f, int n)
{
	char body[64];
	json_t *j;
	long long latest;

	snprintf(body, sizeof(body), "{\"ledgers\": %d}", n);
	j = sim_json(f, "/debug/close", body);
	latest = ph_int(j, "latest_ledger");
	json_decref(j);
	ck_assert_int_gt(latest, 0);
	return latest;
}

static int level_of(json_t *fee)
{
	const char *l = json_string_value(json_object_get(fee, "congestionLevel"));

	if (!l)
		return -1;
	return !strcmp(l, "severe") ? 3 : !strcmp(l, "high") ? 2 : !strcmp(l, "elevated") ? 1 : 0;
}

/* The published snapshot once it covers ledger `ledger` (and is fresh). */
static json_t *fee_at_ledger(struct fixture *f, long long ledger)
{
	uint64_t end = ph_now_ms() + 15000;

	do {
		json_t *fee = ph_ctl(&f->h, "fee", NULL);

		if (fee && ph_int(fee, "latestLedger") == ledger &&
		    !json_is_true(json_object_get(fee, "stale")))
			return fee;
		json_decref(fee);
		ph_sleep_ms(50);
	} while (ph_now_ms() < end);
	ck_abort_msg("no fresh fee snapshot of ledger %lld", ledger);
	return NULL;
}

/*
 * Wait until both workers have read snapshot `fee` (their per-iteration fee
 * gauges): a claim from then on bids from exactly these numbers.
 */
static void workers_see(struct fixture *f, json_t *fee)
{
	uint64_t end = ph_now_ms() + 10000;
	int seen;

	do {
		json_t *s = ph_ctl(&f->h, "stats", NULL);

		seen = 0;
		for (int i = 0; s && i < 2; i++) {
			json_t *g = json_object_get(ph_proc(s, "worker", i), "gauges");

			seen += ph_int(g, "outbox_fee_recommended_stroops") ==
					ph_int(fee, "recommendedBaseFee") &&
				ph_int(g, "outbox_fee_aggressive_stroops") ==
					ph_int(fee, "aggressiveBaseFee") &&
				ph_int(g, "outbox_fee_congestion_level") == level_of(fee);
		}
		json_decref(s);
		if (seen == 2)
			return;
		ph_sleep_ms(50);
	} while (ph_now_ms() < end);
	ck_abort_msg("the workers never read the congested snapshot");
}

/*
 * Congest the Soroban lane: 20 background bids per ledger against a
 * capacity of 10 surge-price every ledger, and the sim raises the bids by the
 * base fee per loaded ledger, so each ledger clears one base fee higher than
 * the one before. Over the 4-ledger fee window p70 is the third ledger's
 * clearing price and p95 the fourth's: recommended < aggressive. The oracle
 * is told a ledger holds 10 transactions, so usage is 1.0 (severe).
 * Returns the snapshot the worker will bid from (frozen until the next close).
 */
static json_t *congest(struct fixture *f)
{
	json_t *fee;
	long long latest;

	ph_sim_post(&f->h, "/debug/faults", "{\"background_fee_load\": 20}");
	latest = close_ledgers(f, 8);
	fee = fee_at_ledger(f, latest);
	ck_assert_msg(level_of(fee) >= 1, "congestion %s under load",
		      json_string_value(json_object_get(fee, "congestionLevel")));
	workers_see(f, fee);
	return fee;
}

static const char *const congested_env[] = {"FEE_ORACLE_DWELL_MS=0", "FEE_ORACLE_LEDGER_MAX_TX=10",
					    NULL};

struct attempt_fee {
	long long fee;      /* outbox.attempts.fee: the envelope's max fee */
	long long incl;     /* that minus the Soroban resource fee */
	long long resource; /* the inner tx's resource fee */
	bool bump;
};

/* Decode an attempt's envelope; the recorded fee must be the envelope's. */
static void attempt_fee_of(const char *fee_col, const char *b64, struct attempt_fee *out)
{
	struct xdr_envelope env;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t *raw = NULL;
	size_t raw_len = 0;

	ck_assert_msg(xdr_envelope_decode_b64(&env, b64, strlen(b64), &raw, &raw_len, &err) == 0,
		      "recorded envelope does not decode: %s", err.msg);
	out->bump = env.type == ENVELOPE_TYPE_TX_FEE_BUMP;
	out->fee = out->bump ? env.bump.fee : (long long)env.tx.fee;
	ck_assert_msg(env.tx.has_soroban, "a vault call without Soroban data");
	out->resource = env.tx.soroban.resource_fee;
	out->incl = out->fee - out->resource;
	ck_assert_msg(atoll(fee_col) == out->fee, "attempts.fee %s, envelope fee %lld", fee_col,
		      out->fee);
	free(raw);
}

/* The first attempt (attempt_no 1, bump_no 0) of the op of `kind`; waits for it. */
static void first_attempt(struct fixture *f, const char *kind, struct attempt_fee *out)
{
	const char *p[1] = {kind};
	uint64_t end = ph_now_ms() + 20000;
	PGresult *r;

	for (;;) {
		r = PQexecParams(f->c,
				 "SELECT a.fee, a.envelope_xdr FROM outbox.attempts a JOIN "
				 "outbox.ops o ON o.id = a.op_id WHERE o.kind = $1 AND "
				 "a.attempt_no = 1 AND a.bump_no = 0",
				 1, NULL, p, NULL, NULL, 0);
		ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
		if (PQntuples(r) == 1)
			break;
		PQclear(r);
		ck_assert_msg(ph_now_ms() < end, "no attempt recorded for the %s op", kind);
		ph_sleep_ms(50);
	}
	attempt_fee_of(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), out);
	PQclear(r);
}

/* Clear the load and close a ledger every 200 ms until no op is open. */
static void land_all(struct fixture *f, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	ph_sim_post(&f->h, "/debug/faults", "{}");
	while (pgtest_scalar(f->c, "SELECT count(*) FROM outbox.ops WHERE status IN "
				   "('PENDING','SUBMITTED')") > 0) {
		ck_assert_msg(ph_now_ms() < end, "ops still open after %u ms of ledgers",
			      timeout_ms);
		close_ledgers(f, 1);
		ph_sleep_ms(200);
	}
}

/*
 * Under congestion >= elevated a CRITICAL op (WITHDRAW) bids the aggressive
 * fee and a NORMAL one (DEPOSIT) the recommended one. The snapshot is frozen
 * (no ledger closes between the read and the claims), so both are exact;
 * recommended < aggressive by construction, so a CRITICAL op that bid the
 * recommended fee fails the first assertion.
 */
START_TEST(test_critical_bids_aggressive)
{
	struct fixture f;
	struct attempt_fee crit, norm;
	long long rec, agg;
	json_t *fee;

	memset(&f, 0, sizeof(f));
	start(&f, SIM_MANUAL " --ledger-capacity 10 --fee-window-soroban 4", congested_env);
	fee = congest(&f);
	rec = ph_int(fee, "recommendedBaseFee");
	agg = ph_int(fee, "aggressiveBaseFee");
	json_decref(fee);
	ck_assert_msg(rec > 100 && agg > rec,
		      "no fee spread to tell the bids apart: p70 %lld p95 %lld", rec, agg);
	enqueue(&f, "WITHDRAW", "c", "crit1", 2, f.signer[2], "1", NULL);
	enqueue(&f, "DEPOSIT", "n", "norm1", 1, f.signer[1], "10", NULL);
	first_attempt(&f, "WITHDRAW", &crit);
	first_attempt(&f, "DEPOSIT", &norm);
	/* the snapshot did not move under the claims (no ledger closed) */
	fee = ph_ctl(&f.h, "fee", NULL);
	ck_assert_ptr_nonnull(fee);
	ck_assert_int_eq(ph_int(fee, "recommendedBaseFee"), rec);
	ck_assert_int_eq(ph_int(fee, "aggressiveBaseFee"), agg);
	json_decref(fee);
	ck_assert_msg(!crit.bump && !norm.bump, "a first attempt is a fee bump");
	ck_assert_msg(crit.incl >= agg, "CRITICAL bid %lld, aggressive %lld (recommended %lld)",
		      crit.incl, agg, rec);
	ck_assert_msg(norm.incl == rec, "NORMAL bid %lld, recommended %lld", norm.incl, rec);
	ck_assert_int_lt(norm.incl, crit.incl);
	land_all(&f, 30000);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 2);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/*
 * OUTBOX_MAX_ABS_FEE below what a CRITICAL op would bid under congestion: the
 * op is still sent, at exactly the cap, confirms, and the worker counts
 * outbox_max_fee_hit_total.
 */
START_TEST(test_max_abs_fee_caps_the_bid)
{
	struct fixture f;
	const char *env[] = {"FEE_ORACLE_DWELL_MS=0", "FEE_ORACLE_LEDGER_MAX_TX=10",
			     "OUTBOX_MAX_ABS_FEE=300", NULL};
	struct attempt_fee crit;
	long long agg;
	json_t *fee, *s;

	memset(&f, 0, sizeof(f));
	start(&f, SIM_MANUAL " --ledger-capacity 10 --fee-window-soroban 4", env);
	fee = congest(&f);
	agg = ph_int(fee, "aggressiveBaseFee");
	json_decref(fee);
	ck_assert_msg(agg > 300, "aggressive fee %lld does not exceed the cap", agg);
	s = ph_ctl(&f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(ph_int(json_object_get(s, "totals"), "outbox_max_fee_hit_total"), 0);
	json_decref(s);
	enqueue(&f, "WITHDRAW", "c", "capped1", 2, f.signer[2], "1", NULL);
	first_attempt(&f, "WITHDRAW", &crit);
	ck_assert_msg(crit.incl == 300, "capped bid %lld, cap 300, aggressive %lld", crit.incl,
		      agg);
	land_all(&f, 30000);
	ck_assert_int_eq(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					    "'CONFIRMED'"),
			 1);
	s = ph_ctl(&f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_ge(ph_int(json_object_get(s, "totals"), "outbox_max_fee_hit_total"), 1);
	json_decref(s);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

static long long sim_latest(struct fixture *f)
{
	json_t *st = sim_json(f, "/debug/state", NULL);
	long long l = ph_int(st, "latest_ledger");

	json_decref(st);
	return l;
}

static long long max_fee_hits(struct fixture *f)
{
	json_t *s = ph_ctl(&f->h, "stats", NULL);
	long long n;

	ck_assert_ptr_nonnull(s);
	n = ph_int(json_object_get(s, "totals"), "outbox_max_fee_hit_total");
	json_decref(s);
	return n;
}

static long long bumps(struct fixture *f)
{
	return pgtest_scalar(f->c, "SELECT count(*) FROM outbox.attempts WHERE bump_no > 0");
}

/*
 * One DEPOSIT whose first envelope reaches the queue and is then left out of
 * a surge-priced ledger (4 background bids of 200+ against a capacity of 2
 * outbid its 100): still queued, not included. Returns the ledger it was
 * sent in; *inner is its first attempt.
 */
static long long queue_and_outbid(struct fixture *f, struct attempt_fee *inner)
{
	uint64_t end = ph_now_ms() + 10000;
	long long sent_ledger;
	json_t *st;

	enqueue(f, "DEPOSIT", "q", "queued1", 1, f->signer[1], "10", NULL);
	first_attempt(f, "DEPOSIT", inner);
	for (;;) {
		st = sim_json(f, "/debug/state", NULL);
		sent_ledger = ph_int(st, "latest_ledger");
		if (ph_int(st, "queue_size") == 1)
			break;
		json_decref(st);
		ck_assert_msg(ph_now_ms() < end, "the first envelope never reached the queue");
		ph_sleep_ms(20);
	}
	json_decref(st);
	ph_sim_post(&f->h, "/debug/faults", "{\"background_fee_load\": 4}");
	ck_assert_int_eq(close_ledgers(f, 1), sent_ledger + 1);
	st = sim_json(f, "/debug/state", NULL);
	ck_assert_int_eq(ph_int(st, "queue_size"), 1);
	json_decref(st);
	ck_assert_int_eq(pgtest_scalar(f->c, "SELECT count(*) FROM outbox.ops WHERE status = "
					     "'SUBMITTED'"),
			 1);
	return sent_ledger;
}

/* The first fee bump's attempt row (recorded before it is sent); waits for it. */
static void first_bump(struct fixture *f, const struct attempt_fee *inner, struct attempt_fee *bump)
{
	uint64_t end = ph_now_ms() + 20000;
	PGresult *r;

	for (;;) {
		r = PQexec(f->c, "SELECT fee, envelope_xdr FROM outbox.attempts WHERE bump_no = 1");
		ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
		if (PQntuples(r) == 1)
			break;
		PQclear(r);
		ck_assert_msg(ph_now_ms() < end, "no fee bump of the queued envelope");
		ph_sleep_ms(50);
	}
	attempt_fee_of(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), bump);
	PQclear(r);
	ck_assert(bump->bump);
	ck_assert_int_eq(bump->resource, inner->resource);
}

/* Land everything; the op is CONFIRMED once, by a bump of its one inner tx. */
static void confirmed_by_bump(struct fixture *f)
{
	PGresult *r;

	land_all(f, 30000);
	r = PQexec(f->c, "SELECT o.status, a.bump_no FROM outbox.ops o JOIN outbox.attempts a "
			 "ON a.tx_hash = o.tx_hash");
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), "CONFIRMED");
	ck_assert_msg(atoi(PQgetvalue(r, 0, 1)) >= 1, "confirmed by bump %s", PQgetvalue(r, 0, 1));
	PQclear(r);
	ck_assert_int_eq(pgtest_scalar(f->c, "SELECT count(DISTINCT inner_tx_hash) FROM "
					     "outbox.attempts"),
			 1);
	check_exactly_once(f);
}

/*
 * The first envelope is queued and outbid; no further ledger closes, so it
 * is still in the queue when OUTBOX_SUBMITTED_TIMEOUT_MS runs out. The bump
 * must displace it: per operation at least 10x the queued rate, i.e.
 * outerIncl x 1 >= 10 x innerIncl x 2 (a bump counts 2 ops). The sim refuses
 * anything less, so a milder bump would also never land before the drop.
 */
START_TEST(test_bump_while_queued_bids_10x)
{
	struct fixture f;
	/* long enough that the surge-priced ledger closes before the bump */
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=3000", NULL};
	struct attempt_fee inner, bump;
	long long sent_ledger;

	memset(&f, 0, sizeof(f));
	start(&f, SIM_MANUAL " --ledger-capacity 2", env);
	sent_ledger = queue_and_outbid(&f, &inner);
	first_bump(&f, &inner, &bump);
	/* no ledger closed since: the first envelope was queued the whole time */
	ck_assert_int_eq(sim_latest(&f), sent_ledger + 1);
	ck_assert_msg(bump.incl >= 10 * inner.incl * 2,
		      "bump of a queued tx bids inclusion %lld over 2 ops; the queued one %lld "
		      "over 1 op needs >= %lld",
		      bump.incl, inner.incl, 20 * inner.incl);
	confirmed_by_bump(&f);
	stop(&f);
}
END_TEST

/*
 * The same queued envelope, but OUTBOX_MAX_ABS_FEE (1000) is below the 10x
 * replace-by-fee minimum (2000 for a queued 100): the worker may not send a
 * bump the queue refuses, so it counts outbox_max_fee_hit_total and waits.
 * Only once the queue has dropped the envelope (4 ledgers after it was sent:
 * common/stellar/README.md, Queue rules) does a milder bump follow, within the
 * cap and satisfying rules 1 and 2 (>= 2x the inner rate), and it lands.
 */
START_TEST(test_bump_capped_waits_for_queue_drop)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=3000", "OUTBOX_MAX_ABS_FEE=1000", NULL};
	struct attempt_fee inner, bump;
	long long sent_ledger;
	uint64_t end;

	memset(&f, 0, sizeof(f));
	start(&f, SIM_MANUAL " --ledger-capacity 2", env);
	sent_ledger = queue_and_outbid(&f, &inner);
	ck_assert_int_eq(max_fee_hits(&f), 0); /* the first bid was under the cap */
	/* past the timeout the 10x bump is due, and blocked by the cap */
	end = ph_now_ms() + 20000;
	while (max_fee_hits(&f) == 0) {
		ck_assert_msg(bumps(&f) == 0, "a bump was sent while the envelope was queued "
					      "and the 10x bid exceeds the cap");
		ck_assert_msg(ph_now_ms() < end, "the capped bump was never considered");
		ph_sleep_ms(50);
	}
	ph_sleep_ms(500);
	ck_assert_msg(bumps(&f) == 0, "a bump was sent before the queue dropped the envelope");
	/* 3 more ledgers: the 4th since the send drops the envelope from the queue */
	ck_assert_int_eq(close_ledgers(&f, 3), sent_ledger + 4);
	ck_assert_msg(bumps(&f) == 0, "a bump was sent before the queue dropped the envelope");
	first_bump(&f, &inner, &bump);
	ck_assert_msg(bump.incl >= 2 * inner.incl && bump.incl <= 1000,
		      "bump after the drop bids %lld (inner %lld, cap 1000)", bump.incl,
		      inner.incl);
	confirmed_by_bump(&f);
	stop(&f);
}
END_TEST

/*
 * A bump follows the market: the envelope waits in the queue (its 10x
 * replacement is above OUTBOX_MAX_ABS_FEE 1900) while loaded ledgers push
 * the recommended fee R above twice the first bid. When the queue drops
 * it, the bump bids at least R per operation (fee_policy_bump_bid), not the
 * first bid compounded once (2 x 100), which ledgers clearing near R would
 * leave out for as long as the spike lasts.
 */
START_TEST(test_bump_follows_market)
{
	struct fixture f;
	const char *env[] = {"OUTBOX_SUBMITTED_TIMEOUT_MS=3000", "OUTBOX_MAX_ABS_FEE=1900",
			     "FEE_ORACLE_DWELL_MS=0", NULL};
	struct attempt_fee inner, bump;
	long long sent_ledger, r;
	json_t *fee;

	memset(&f, 0, sizeof(f));
	start(&f, SIM_MANUAL " --ledger-capacity 2", env);
	sent_ledger = queue_and_outbid(&f, &inner);
	ck_assert_int_eq(close_ledgers(&f, 2), sent_ledger + 3);
	fee = fee_at_ledger(&f, sent_ledger + 3);
	workers_see(&f, fee);
	r = ph_int(fee, "recommendedBaseFee");
	json_decref(fee);
	printf("{\"test\":\"bump_follows_market\",\"first_bid\":%lld,\"recommended\":%lld}\n",
	       inner.incl, r);
	ck_assert_msg(r > 2 * inner.incl,
		      "the loaded ledgers did not lift the recommended fee (%lld) above twice "
		      "the first bid (%lld): this test proves nothing",
		      r, inner.incl);
	ck_assert_msg(bumps(&f) == 0, "a bump was sent while the envelope was queued");
	/* the 4th ledger since the send drops the envelope; the fee only rises meanwhile */
	ck_assert_int_eq(close_ledgers(&f, 1), sent_ledger + 4);
	first_bump(&f, &inner, &bump);
	ck_assert_msg(bump.incl >= 2 * r,
		      "the bump bids %lld over 2 ops while the market recommends %lld per op",
		      bump.incl, r);
	confirmed_by_bump(&f);
	stop(&f);
}
END_TEST

/* One case per test, named after it: CK_RUN_CASE=<name> runs one. */
#define CASE_TIMEOUT_S 120

static Suite *dispatch_fees_suite(void)
{
	Suite *s = suite_create("dispatch_fees");

	dh_add_case(s, "critical_bids_aggressive", test_critical_bids_aggressive, CASE_TIMEOUT_S);
	dh_add_case(s, "max_abs_fee_cap", test_max_abs_fee_caps_the_bid, CASE_TIMEOUT_S);
	dh_add_case(s, "bump_while_queued_10x", test_bump_while_queued_bids_10x, CASE_TIMEOUT_S);
	dh_add_case(s, "bump_capped_waits_for_drop", test_bump_capped_waits_for_queue_drop,
		    CASE_TIMEOUT_S);
	dh_add_case(s, "bump_follows_market", test_bump_follows_market, CASE_TIMEOUT_S);
	return s;
}

OUTBOX_CHECK_MAIN(dispatch_fees_suite)
