/*
 * build.c - a claimed op becomes a signed envelope with a committed attempt
 * row:
 *
 *	fee policy (LOW may be deferred: job_defer, done)
 *	-> the signer's sequence number (cached; getLedgerEntries when unknown)
 *	-> simulate -> build with the simulation and bounds -> sign
 *	-> attempt_record, COMMITTED before a byte goes out -> follow.c
 *
 * A failure before the attempt row exists leaves no envelope anywhere, so
 * the op goes back to PENDING with backoff (the try counts) or, after
 * OUTBOX_MAX_ATTEMPTS tries, FAILED.
 *
 * Bounds: maxTime is horizon_s() past the chain's clock (the newest close
 * time known, or ours if that is later): long enough for every fee bump
 * (one each OUTBOX_SUBMITTED_TIMEOUT_MS, at most OUTBOX_FEE_BUMP_MAX_ATTEMPTS)
 * and a last chance after the last one, since a bump only wraps the same
 * inner transaction and so ends with it. The price of a long horizon: a
 * transaction that never lands is proven dead only after it. maxLedger is chosen so it
 * never ends the transaction's validity before maxTime does (close times
 * rise at least one second per ledger): the ledger bound exists so that its
 * death can be proven by comparing ledger numbers alone (common/fate.h).
 * sent_after is the newest ledger known to have closed before it exists.
 */
#include "worker/worker.h"

#include "common/clock.h"
#include "common/crashpoint.h"
#include "common/fee_policy.h"
#include "common/log.h"
#include "common/stellar/classify.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The debug line of a new inner transaction about to go out (trace.h). */
static void trace_sent(const struct job *j)
{
	struct send_split s;

	send_split(&s, &j->marks, wall_us() - j->created_us);
	log_detail(LOG_LVL_DEBUG, "op %lld sent",
		   "op_id=%lld priority=%s attempt=%d total_us=%lld before_claim_us=%lld "
		   "claim_us=%lld queued_us=%lld prepare_us=%lld simulate_us=%lld sign_us=%lld "
		   "write_us=%lld",
		   (long long)j->op_id, (long long)j->op_id, op_priority_name(j->prio),
		   j->attempt_no, (long long)s.total_us, (long long)s.before_claim_us,
		   (long long)s.claim_us, (long long)s.queued_us, (long long)s.prepare_us,
		   (long long)s.simulate_us, (long long)s.sign_us, (long long)s.write_us);
}

static void on_recorded(PGresult *res, void *arg)
{
	struct job *j = arg;
	const char *col;

	if (job_gone(j))
		return;
	j->marks.rec_done = mono_us();
	if (res)
		stats_hist_observe(j->w->stats, MET_ATTEMPT_WRITE_MS,
				   (uint64_t)(j->marks.rec_done - j->marks.rec_sent) / 1000);
	if (!pgq_ok(res)) {
		col = res ? PQresultErrorField(res, PG_DIAG_COLUMN_NAME) : NULL;
		if (!strcmp(pgq_sqlstate(res), "OB409") && col && !strcmp(col, "source_sequence")) {
			/* our idea of the signer's sequence number is stale: read it again */
			j->signer->seq_valid = false;
			log_warn("op %lld: %s", (long long)j->op_id, PQresultErrorMessage(res));
			j->attempt_no = 0;
			job_retry(j, -1, "sequence number bound to another transaction", true);
			return;
		}
		leases_write_failed(j->w, j->vshard, res, "attempt_record");
		return;
	}
	if (!strcmp(PQgetvalue(res, 0, 0), "GONE")) {
		/* cancelled or held under our claim: the database gave the claim back */
		log_info("op %lld: no longer PENDING, nothing sent", (long long)j->op_id);
		job_drop(j);
		return;
	}
	CRASHPOINT("after_attempt_commit");
	/* The row is durable: from here on this envelope may be out there. */
	j->env[0].recorded = true;
	stats_counter_add(j->w->stats, MET_ATTEMPTS_RECORDED, 1);
	if (j->max_fee_hit) {
		stats_counter_add(j->w->stats, MET_MAX_FEE_HIT, 1);
		stats_family_add(j->w->stats, FAM_MAX_FEE_HIT, j->prio, 0, 0, 1);
	}
	if (j->aggressive)
		stats_counter_add(j->w->stats, MET_AGGRESSIVE_FEE_USED, 1);
	trace_sent(j);
	follow_start(j, true);
}

/*
 * attempt_record's set form (schema/0026_job_writes_at_once.sql): the
 * write-ahead rows of jobs that queue behind each other go out as one
 * attempts_record statement, or alone if it refuses (a fee bump, an op
 * cancelled under the claim, a refusal). Its one answer, RECORDED, is what
 * each command's on_recorded reads: GONE only ever comes from the single
 * statement.
 */
static const struct pgq_merge record_merge = {
	.fn = "outbox.attempts_record",
	.types = {"text[]", "integer[]", "bigint[]", "bigint[]", "integer[]", "integer[]", "text[]",
		  "text[]", "text[]", "text[]", "bigint[]", "bigint[]", "bigint[]", "integer[]",
		  "integer[]"},
};

static void record(struct job *j)
{
	struct worker *w = j->w;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char id[24], an[16], seq[24], mt[24], fee[24], ml[16], sa[16];
	char *b64 = NULL;
	const char *p[12];

	if (signers_sign(w, j->signer, &j->tb, &err) || txbuild_to_b64(&j->tb, &b64)) {
		log_err("op %lld: sign: %s", (long long)j->op_id, err.msg);
		job_retry(j, -1, err.msg[0] ? err.msg : "sign failed", true);
		return;
	}
	sodium_bin2hex(j->inner_hash, sizeof(j->inner_hash), j->tb.hash, 32);
	j->inner_fee = j->tb.env.tx.fee;
	j->resource_fee = j->tb.env.tx.has_soroban ? j->tb.env.tx.soroban.resource_fee : 0;
	j->env[0] = (struct envelope){.b64 = b64, .fee = j->inner_fee};
	memcpy(j->env[0].hash, j->inner_hash, 65);
	j->n_env = 1;
	tx_index_add(j, j->env[0].hash);
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(an, sizeof(an), "%d", j->attempt_no);
	snprintf(seq, sizeof(seq), "%lld", (long long)j->tx.seq);
	snprintf(mt, sizeof(mt), "%lld", (long long)j->tx.max_time);
	snprintf(fee, sizeof(fee), "%lld", (long long)j->inner_fee);
	snprintf(ml, sizeof(ml), "%u", j->tx.max_ledger);
	snprintf(sa, sizeof(sa), "%u", j->tx.sent_after);
	p[0] = id, p[1] = an, p[2] = "0", p[3] = j->inner_hash, p[4] = j->inner_hash, p[5] = b64,
	p[6] = j->signer->id, p[7] = seq, p[8] = mt, p[9] = fee;
	p[10] = j->tx.max_ledger ? ml : NULL;
	p[11] = j->tx.sent_after ? sa : NULL;
	j->st = J_RECORDING;
	j->marks.rec_sent = mono_us();
	if (job_sql_ahead(
		    j, &record_merge,
		    "SELECT outbox.attempt_record($1, $2::int, $3::bigint, $4::bigint, $5::int, "
		    "$6::int, $7, $8, $9, $10, $11::bigint, $12::bigint, $13::bigint, $14::int, "
		    "$15::int)",
		    12, p, on_recorded))
		leases_resync(w, j->vshard, "postgresql unavailable");
}

/* Seconds of validity a transaction gets (see the top of this file), at most a day. */
static int64_t horizon_s(const struct outbox_config *c)
{
	int64_t per_bump = (c->submitted_timeout_ms + 999) / 1000;
	int64_t h = per_bump * (c->fee_bump_max_attempts + 1) + WORKER_MIN_HORIZON_S;

	return h > 86400 ? 86400 : h;
}

/* The inner transaction's sequence number and bounds, from the chain's clock. */
static void choose_bounds(struct job *j)
{
	struct worker *w = j->w;
	int64_t now_s = (int64_t)(wall_ms() / 1000);
	const struct chain_mark *m = w->n_marks ? &w->marks[w->n_marks - 1] : NULL;
	int64_t close = m ? m->close : 0, span;

	j->tx.max_time = (close > now_s ? close : now_s) + horizon_s(w->cfg);
	/* measured from the newest close time known (of a ledger <= chain_ledger): never shorter */
	span = j->tx.max_time - (close ? close : now_s);
	if (span > 86400)
		span = 86400;
	j->tx.sent_after = w->chain_ledger;
	j->tx.max_ledger = w->chain_ledger ? w->chain_ledger + 1 + (uint32_t)span : 0;
}

static void source_of(struct job *j, struct txbuild_source *src)
{
	*src = (struct txbuild_source){.account = j->signer->id,
				       .seq_num = j->tx.seq,
				       .fee = (uint32_t)j->build_fee,
				       .max_time = (uint64_t)j->tx.max_time,
				       .max_ledger = j->tx.max_ledger};
}

static void on_simulated(struct rpc_result *r, void *arg)
{
	struct job *j = arg;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src;

	if (job_gone(j))
		return;
	j->marks.sim_done = mono_us();
	stats_hist_observe(j->w->stats, MET_SIMULATE_MS,
			   (uint64_t)(j->marks.sim_done - j->marks.sim_sent) / 1000);
	if (r->status != RPC_OK) {
		job_retry(j, -1, r->err.msg, true);
		return;
	}
	worker_saw_ledger(j->w, r->u.simulate.latest_ledger, 0);
	if (r->u.simulate.error) {
		struct outcome o = classify_simulate_error(r->u.simulate.error);
		char msg[300];
		snprintf(msg, sizeof(msg), "simulate: %.250s", r->u.simulate.error);
		if (o.action == OUTCOME_FINAL)
			job_fail(j, msg, o.reason);
		else
			job_retry(j, -1, msg, true);
		return;
	}
	struct txbuild_sim sim = {.transaction_data = r->u.simulate.transaction_data,
				  .auth = (const char *const *)r->u.simulate.auth,
				  .n_auth = r->u.simulate.n_auth};
	choose_bounds(j);
	source_of(j, &src);
	if (executor_build(j, &src, &sim, &err)) {
		job_fail(j, err.msg, "BUILD");
		return;
	}
	record(j);
}

static void simulate(struct job *j)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src;
	char *b64 = NULL;
	int64_t base = j->signer->seq;

	/* what outboxd recorded wins over a node that has not seen it yet */
	if (j->seq_high > base)
		base = j->seq_high;
	j->tx = (struct fate_tx){.seq = base + 1};
	choose_bounds(j);
	source_of(j, &src);
	if (executor_build(j, &src, NULL, &err) || txbuild_to_b64(&j->tb, &b64)) {
		job_fail(j, err.msg[0] ? err.msg : "build failed", "BUILD");
		return;
	}
	struct rpc_request req = {.method = RPC_SIMULATE_TRANSACTION, .transaction = b64};
	j->marks.sim_sent = mono_us();
	if (rpc_call_start(j->w->rpc, &req, on_simulated, j, &err))
		job_retry(j, -1, err.msg, true);
	else
		j->busy = true;
	free(b64);
}

/*
 * The account's sequence number past anything outboxd recorded: someone
 * else uses the signer (precondition P1 of common/fate.h). Never a reason
 * to guess: the op is held, loudly, until an operator acknowledges it
 * (admin_retry records the acknowledgement).
 */
static bool sequence_alarm(struct job *j, int64_t seq, uint32_t ledger)
{
	char detail[200];

	if (j->seq_high < 0 || seq <= j->seq_high)
		return false;
	stats_counter_add(j->w->stats, MET_SEQ_ALARMS, 1);
	log_err("signer %s: sequence number %lld (ledger %u) is past the highest outboxd recorded "
		"(%lld): another party uses the account",
		j->signer->id, (long long)seq, ledger, (long long)j->seq_high);
	snprintf(detail, sizeof(detail),
		 "{\"account_seq\": %lld, \"recorded_high\": %lld, \"as_of_ledger\": %u}",
		 (long long)seq, (long long)j->seq_high, ledger);
	job_hold(j, fate_why_name(FATE_WHY_SEQ_MOVED_PAST), detail);
	return true;
}

static void on_account(struct rpc_result *r, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	if (r->status != RPC_OK) {
		job_retry(j, -1, r->err.msg, true);
		return;
	}
	worker_saw_ledger(j->w, r->u.account.latest_ledger, 0);
	if (!r->u.account.found) {
		job_retry(j, -1, "signer account not found", true);
		return;
	}
	if (sequence_alarm(j, r->u.account.seq_num, r->u.account.latest_ledger))
		return;
	j->signer->seq = r->u.account.seq_num;
	j->signer->seq_valid = true;
	simulate(j);
}

void build_start(struct job *j)
{
	struct worker *w = j->w;
	struct fee_policy_params pp = {.max_abs_fee = (uint64_t)w->cfg->max_abs_fee,
				       .bump_milli = w->cfg->fee_bump_multiplier_milli,
				       .low_defer_ms = w->cfg->low_defer_ms,
				       .low_max_defer_ms = w->cfg->low_max_defer_ms};
	/*
	 * The op's age stands for the deferral it has had: an upper bound (a
	 * backlog counts too) that keeps "never deferred beyond
	 * OUTBOX_LOW_MAX_DEFER_MS after enqueue" true without another column.
	 */
	int64_t age = (int64_t)wall_ms() - j->created_ms;
	struct fee_policy_in in = {.priority = j->prio,
				   .view = &w->fees,
				   .step = (uint32_t)j->attempts,
				   .deferred_ms = age > 0 ? age : 0};
	struct fee_decision d;

	j->st = J_BUILDING;
	j->marks.build = mono_us();
	fee_policy_decide(&d, &pp, &in);
	if (d.defer) {
		job_defer(j, d.defer_ms);
		return;
	}
	j->build_fee = (int64_t)(d.fee > UINT32_MAX / 2 ? UINT32_MAX / 2 : d.fee);
	j->max_fee_hit = d.max_fee_hit;
	j->aggressive = d.aggressive;
	j->attempt_no = j->attempts + 1;
	if (j->signer->key < 0) {
		j->attempt_no = 0;
		job_retry(j, -1, "no key for the signer in OUTBOX_SIGNER_KEYS_FILE", true);
		return;
	}
	if (j->signer->seq_valid) {
		simulate(j);
		return;
	}
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_ACCOUNT};
	memcpy(req.account, j->signer->pub, 32);
	if (rpc_call_start(w->rpc, &req, on_account, j, &err))
		job_retry(j, -1, err.msg, true);
	else
		j->busy = true;
}
