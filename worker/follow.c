/*
 * follow.c - after a send: follow the transaction to its end.
 *
 * The job polls getTransaction for its inner hash (stellar-sim and the RPC
 * find a fee bump by its inner hash too) with a growing interval, re-sends
 * the same envelope every WORKER_RESEND_MS while it is unknown (harmless:
 * the same hash can execute at most once), and
 *
 *	SUCCESS   -> op_confirm with the landed attempt's hash;
 *	FAILED    -> op_fail with the result code (the attempt is FAILED);
 *	NOT_FOUND and a closed ledger's close time is past max_time (and the
 *	          RPC's retention reaches back over the whole validity window)
 *	          -> attempt_decide EXPIRED, then op_retry_later: only now may a
 *	          new transaction be built for the op;
 *	NOT_FOUND past OUTBOX_SUBMITTED_TIMEOUT_MS -> a fee bump around the same
 *	          inner tx (attempt_record bump_no > 0 first, then send), at most
 *	          OUTBOX_FEE_BUMP_MAX_ATTEMPTS of them. While the last envelope may
 *	          still sit in the queue (fewer than WORKER_QUEUE_LEDGERS ledgers
 *	          since it was sent) the bump must bid 10x to displace it; after
 *	          that the milder rules 1 and 2 apply (stellar-protocol.md 4.3, 4.7).
 *
 * A send answered ERROR is not trusted on its own (a resend of a tx that
 * already landed says txBAD_SEQ): the job asks getTransaction first, and
 * only a NOT_FOUND lets it decide the envelope REJECTED.
 */
#include "worker/worker.h"

#include "common/crashpoint.h"
#include "common/fee_policy.h"
#include "common/feemath.h"
#include "common/log.h"
#include "common/stellar/classify.h"
#include "common/shm/layout.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void follow_after_send(struct job *j, struct rpc_result *r);
void job_resend(struct job *j);

static void schedule(struct job *j, int64_t in_ms)
{
	j->due_ms = pgq_now_ms() + in_ms;
}

static void next_poll(struct job *j)
{
	j->poll_ms = j->poll_ms ? j->poll_ms * 3 / 2 : WORKER_FOLLOW_MIN_MS;
	if (j->poll_ms > WORKER_FOLLOW_MAX_MS)
		j->poll_ms = WORKER_FOLLOW_MAX_MS;
	schedule(j, j->poll_ms);
}

void follow_after_send(struct job *j, struct rpc_result *r)
{
	if (r->status != RPC_OK) {
		next_poll(j); /* the envelope may or may not have arrived: follow */
		return;
	}
	worker_saw_close_time(j->w, r->u.send.latest_ledger_close_time);
	if (!j->sent_ledger)
		j->sent_ledger = r->u.send.latest_ledger;
	if (r->u.send.status == RPC_SEND_ERROR) {
		struct tx_result tr;
		struct outbox_error err = OUTBOX_ERROR_INIT;
		bool ok = r->u.send.error_result_xdr &&
			  !tx_result_decode_b64(&tr, r->u.send.error_result_xdr, &err);
		struct outcome o = classify_send(RPC_SEND_ERROR, ok ? &tr : NULL);
		j->err_pending = true;
		j->err_action = (int)o.action;
		snprintf(j->err_code, sizeof(j->err_code), "%s", o.reason ? o.reason : "ERROR");
		log_info("op %lld: send answered ERROR %s", (long long)j->op_id,
			 o.reason ? o.reason : "?");
		schedule(j, 0); /* check getTransaction before deciding anything */
		return;
	}
	j->poll_ms = 0;
	next_poll(j);
}

/* ---- finalizing ---- */

static void on_done(PGresult *res, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	if (!pgq_ok(res)) {
		leases_write_failed(j->w, j->vshard, res, "finalize");
		return;
	}
	job_finish(j);
}

static const char *landed_hash(struct job *j, const struct rpc_get_tx *g)
{
	if (g->envelope_xdr)
		for (int i = 0; i < j->n_live; i++)
			if (j->live_b64[i] && !strcmp(j->live_b64[i], g->envelope_xdr))
				return j->live_hash[i];
	for (int i = 0; i < j->n_live; i++)
		if (!strcmp(j->live_hash[i], g->tx_hash))
			return j->live_hash[i];
	return j->inner_hash;
}

static void confirm_with(struct job *j, const char *hash, uint32_t ledger, int64_t fee_charged)
{
	char id[24], led[16], fee[24];
	const char *p[4] = {id, hash, led, fee};

	j->signer->seq = j->seq; /* consumed */
	j->signer->seq_valid = true;
	CRASHPOINT("after_confirm_seen");
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(led, sizeof(led), "%u", ledger);
	snprintf(fee, sizeof(fee), "%lld", (long long)fee_charged);
	stats_counter_add(j->w->stats, MET_OPS_CONFIRMED, 1);
	if (job_sql(j,
		    "SELECT outbox.op_confirm($1, $2::int, $3::bigint, $4::bigint, $5, $6::int, "
		    "$7::bigint)",
		    4, p, on_done))
		leases_resync(j->w, j->vshard, "postgresql unavailable");
}

static void confirm(struct job *j, const struct rpc_get_tx *g)
{
	struct tx_result tr;

	memset(&tr, 0, sizeof(tr));
	if (g->result_xdr)
		tx_result_decode_b64(&tr, g->result_xdr, NULL);
	confirm_with(j, landed_hash(j, g), g->ledger, tr.fee_charged);
}

static void failed_on_chain(struct job *j, const struct rpc_get_tx *g)
{
	struct tx_result tr;
	struct outcome o;
	bool ok = g->result_xdr && !tx_result_decode_b64(&tr, g->result_xdr, NULL);

	o = classify_get(RPC_TX_FAILED, ok ? &tr : NULL);
	j->signer->seq = j->seq;
	j->signer->seq_valid = true;
	job_fail(j, "failed on chain", o.reason ? o.reason : "txFAILED", landed_hash(j, g));
}

/* attempt_decide, then continue with next(j). */
struct decide_ctx {
	void (*next)(struct job *j);
};

static void after_expired(struct job *j)
{
	job_retry_later(j, 0, "transaction expired unexecuted", false);
}

static void after_rejected_retry(struct job *j)
{
	job_retry_later(j, -1, "transaction rejected at submission", false);
}

static void after_rejected_final(struct job *j)
{
	job_fail(j, "rejected at submission", j->err_code[0] ? j->err_code : "ERROR", NULL);
}

static void after_bump_rejected(struct job *j)
{
	/* Back to the previous envelope; a later bump may bid again. */
	free(j->live_b64[j->n_live - 1]);
	j->live_b64[j->n_live - 1] = NULL;
	j->n_live--;
	j->cur_b64 = j->live_b64[j->n_live - 1];
	j->last_bump_ms = pgq_now_ms();
	next_poll(j);
}

static void on_decided(PGresult *res, void *arg)
{
	struct job *j = arg;
	void (*next)(struct job *) = j->decide_next;

	j->decide_next = NULL;
	if (job_gone(j))
		return;
	if (!pgq_ok(res) || !next) {
		leases_write_failed(j->w, j->vshard, res, "attempt_decide");
		return;
	}
	next(j);
}

static void decide(struct job *j, const char *hash, const char *outcome, const char *code,
		   void (*next)(struct job *))
{
	const char *p[3] = {hash, outcome, code};

	j->decide_next = next;
	if (job_sql(j, "SELECT outbox.attempt_decide($1, $2::int, $3::bigint, $4, $5, $6)", 3, p,
		    on_decided))
		leases_resync(j->w, j->vshard, "postgresql unavailable");
}

static void rejected(struct job *j)
{
	enum outcome_action a = (enum outcome_action)j->err_action;

	j->err_pending = false;
	if (a == OUTCOME_TRANSIENT || a == OUTCOME_WAIT || a == OUTCOME_PENDING) {
		next_poll(j);
		return;
	}
	if (j->n_live > 1 && !strcmp(j->cur_b64, j->live_b64[j->n_live - 1]) && j->bump_no > 0) {
		decide(j, j->live_hash[j->n_live - 1], "REJECTED", j->err_code,
		       after_bump_rejected);
		return;
	}
	if (j->n_live > 1 && a != OUTCOME_REFETCH_SEQ) {
		next_poll(j); /* a bump may still be queued: wait for expiry */
		return;
	}
	if (a == OUTCOME_REFETCH_SEQ)
		j->signer->seq_valid = false;
	decide(j, j->inner_hash, "REJECTED", j->err_code,
	       a == OUTCOME_FINAL ? after_rejected_final : after_rejected_retry);
}

/* ---- fee bumps ---- */

static void on_bump_recorded(PGresult *res, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	if (!pgq_ok(res)) {
		leases_write_failed(j->w, j->vshard, res, "attempt_record (bump)");
		return;
	}
	j->n_live++;
	j->cur_b64 = j->live_b64[j->n_live - 1];
	j->last_bump_ms = pgq_now_ms();
	j->sent_ledger = 0;
	stats_counter_add(j->w->stats, MET_FEE_BUMPS, 1);
	job_resend(j);
}

static bool try_bump(struct job *j, uint32_t latest_ledger)
{
	struct worker *w = j->w;
	const struct outbox_config *cfg = w->cfg;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct fee_bump_inner in = {
		.fee = j->inner_fee, .resource_fee = j->resource_fee, .n_ops = 1};
	struct fee_bump_queued q = {.incl = j->last_fee - j->resource_fee,
				    .n_ops = j->n_live > 1 ? 2u : 1u};
	bool queued = j->sent_ledger && latest_ledger < j->sent_ledger + WORKER_QUEUE_LEDGERS;
	int64_t min_fee, want, cap = cfg->max_abs_fee + j->resource_fee;
	bool capped = false;
	char *b64 = NULL;

	/* bump_no counts every bump ever recorded for this inner tx (rejected ones
	 * too), so a new one never reuses a number: (op, attempt, bump) is unique. */
	if (j->bump_no >= cfg->fee_bump_max_attempts || j->n_live > WORKER_MAX_BUMPS)
		return false;
	if (txbuild_fee_bump_min_fee(&in, FEE_POLICY_MIN_FEE, queued ? &q : NULL, &min_fee, &err))
		return false;
	want = (int64_t)fee_for_step((uint64_t)(j->inner_fee - j->resource_fee) * 2,
				     cfg->fee_bump_multiplier_milli, (uint32_t)j->n_live,
				     (uint64_t)cfg->max_abs_fee, &capped) +
	       j->resource_fee;
	if (want < min_fee)
		want = min_fee;
	if (want > cap) {
		stats_counter_add(w->stats, MET_MAX_FEE_HIT, 1);
		if (min_fee > cap) {
			j->last_bump_ms = pgq_now_ms(); /* wait for the queue drop: milder rules */
			return false;
		}
		want = cap;
	}
	if (txbuild_fee_bump(&j->tb, j->inner_b64, j->signer->id, want, FEE_POLICY_MIN_FEE, &err) ||
	    signers_sign(w, j->signer, &j->tb, &err) || txbuild_to_b64(&j->tb, &b64)) {
		log_warn("op %lld: fee bump: %s", (long long)j->op_id, err.msg);
		j->last_bump_ms = pgq_now_ms();
		return false;
	}
	int k = j->n_live;
	sodium_bin2hex(j->live_hash[k], 65, j->tb.hash, 32);
	j->live_b64[k] = b64;
	j->last_fee = want;
	j->bump_no++;
	char id[24], an[16], bn[16], seq[24], mt[24], fee[24];
	const char *p[10] = {id,  an, bn, j->live_hash[k], j->inner_hash, b64, j->signer->id,
			     seq, mt, fee};
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(an, sizeof(an), "%d", j->attempt_no);
	snprintf(bn, sizeof(bn), "%d", j->bump_no);
	snprintf(seq, sizeof(seq), "%lld", (long long)j->seq);
	snprintf(mt, sizeof(mt), "%lld", (long long)j->max_time);
	snprintf(fee, sizeof(fee), "%lld", (long long)want);
	log_info("op %lld: fee bump %d, fee %lld", (long long)j->op_id, k, (long long)want);
	if (job_sql(j,
		    "SELECT outbox.attempt_record($1, $2::int, $3::bigint, $4::bigint, $5::int, "
		    "$6::int, $7, $8, $9, $10, $11::bigint, $12::bigint, $13::bigint)",
		    10, p, on_bump_recorded)) {
		free(b64);
		j->live_b64[k] = NULL;
		leases_resync(w, j->vshard, "postgresql unavailable");
	}
	return true;
}

/* ---- polling ---- */

static void on_get(struct rpc_result *r, void *arg)
{
	struct job *j = arg;
	int64_t now;

	if (job_gone(j))
		return;
	if (r->status != RPC_OK) {
		j->follow_errors++;
		next_poll(j);
		return;
	}
	const struct rpc_get_tx *g = &r->u.get_tx;
	worker_saw_close_time(j->w, g->latest_ledger_close_time);
	if (g->status == RPC_TX_SUCCESS) {
		confirm(j, g);
		return;
	}
	if (g->status == RPC_TX_FAILED) {
		failed_on_chain(j, g);
		return;
	}
	if (j->err_pending) {
		rejected(j);
		return;
	}
	/* NOT_FOUND. Expired for sure: a closed ledger is past max_time, and the
	 * RPC remembers ledgers from before the tx could first have landed. */
	if (g->latest_ledger_close_time > j->max_time && g->oldest_ledger_close_time >= 0 &&
	    g->oldest_ledger_close_time <= j->max_time - WORKER_MIN_HORIZON_S) {
		stats_counter_add(j->w->stats, MET_EXPIRED, 1);
		log_info("op %lld: tx %.12s expired unexecuted", (long long)j->op_id,
			 j->inner_hash);
		decide(j, j->inner_hash, "EXPIRED", NULL, after_expired);
		return;
	}
	now = pgq_now_ms();
	int64_t since = j->last_bump_ms > j->first_sent_ms ? j->last_bump_ms : j->first_sent_ms;
	if (j->first_sent_ms && now - since > j->w->cfg->submitted_timeout_ms &&
	    try_bump(j, g->latest_ledger))
		return;
	if (now - j->last_sent_ms >= WORKER_RESEND_MS) {
		job_resend(j);
		return;
	}
	next_poll(j);
}

void follow_poll(struct job *j)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_TRANSACTION, .hash = j->inner_hash};

	if (j->hint_success) {
		confirm_with(j, j->hint_hash, j->hint_ledger, j->hint_fee);
		return;
	}
	if (rpc_call_start(j->w->rpc, &req, on_get, j, &err)) {
		next_poll(j);
		return;
	}
	j->busy = true;
}

/*
 * The ledger follower (oracle/follower.h) saw tx_hash applied. A SUCCESS is
 * confirmed from the hint (the ledger is closed; the hash is one of this
 * job's live envelopes, so it is this op's one execution); a FAILED one is
 * polled at once for its result code.
 */
void follow_hint(struct worker *w, const char *tx_hash, uint32_t ledger, uint64_t aux)
{
	for (struct job *j = w->jobs; j; j = j->next) {
		if (j->abandoned)
			continue;
		for (int i = 0; i < j->n_live; i++) {
			if (strcmp(j->live_hash[i], tx_hash))
				continue;
			if (SHM_HINT_AUX_STATUS(aux) == SHM_HINT_LANDED_SUCCESS && ledger) {
				j->hint_success = true;
				memcpy(j->hint_hash, j->live_hash[i], 65);
				j->hint_ledger = ledger;
				j->hint_fee = (int64_t)SHM_HINT_AUX_FEE(aux);
			}
			j->due_ms = 0;
			return;
		}
	}
}
