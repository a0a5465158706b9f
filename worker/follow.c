/*
 * follow.c - after the write-ahead row: send, re-send, fee-bump, and follow
 * the inner transaction until common/fate.c can say what became of it.
 *
 * Each poll (every WORKER_FOLLOW_MIN_MS, growing to WORKER_FOLLOW_MAX_MS)
 * asks one question and folds the answer into j->facts:
 *
 *	getLedgerEntries(signer)   when the deadline may have passed, when a
 *	                           re-send said txBAD_SEQ or txTOO_LATE, and
 *	                           every WORKER_ACCOUNT_MS anyway;
 *	getTransaction(each hash)  a lookup round over every envelope, once the
 *	                           sequence number is known to be consumed;
 *	getTransaction(inner hash) otherwise (the RPC finds a fee bump by its
 *	                           inner hash too), unless the ledger
 *	                           follower's hints cover every ledger the
 *	                           transaction can land in (hints_cover): a
 *	                           landing comes as a hint, and NOT_FOUND
 *	                           decides nothing anyway.
 *
 * and fate_decide() says what to do:
 *
 *	LANDED    settle the op with what the ledger shows (job_settle);
 *	CONSUMED  look every envelope up until one is found, or HELD;
 *	HELD      hold the op for an operator (job_hold);
 *	DEAD      record the proof, then retry or fail the op (job_expire);
 *	UNKNOWN   re-send the current envelope every WORKER_RESEND_MS while it
 *	          can still land, fee-bump it after OUTBOX_SUBMITTED_TIMEOUT_MS.
 *
 * What sendTransaction answers never decides a fate: a refusal only changes
 * what is sent next (nothing, a fee bump, the previous envelope) and may ask
 * for an account read.
 */
#include "worker/worker.h"

#include "common/clock.h"
#include "common/crashpoint.h"
#include "common/fee_policy.h"
#include "common/log.h"
#include "common/stellar/classify.h"
#include "common/stellar/xdr.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void decide(struct job *j);

static void schedule(struct job *j, int64_t in_ms)
{
	job_due(j, mono_ms() + in_ms);
}

static void next_poll(struct job *j)
{
	j->poll_ms = j->poll_ms ? j->poll_ms * 3 / 2 : WORKER_FOLLOW_MIN_MS;
	if (j->poll_ms > WORKER_FOLLOW_MAX_MS)
		j->poll_ms = WORKER_FOLLOW_MAX_MS;
	schedule(j, j->poll_ms);
}

/* The envelope to (re)send: the newest one recorded and not refused, or -1. */
static int current(const struct job *j)
{
	for (int i = j->n_env - 1; i >= 0; i--)
		if (j->env[i].recorded && !j->env[i].refused)
			return i;
	return -1;
}

static uint32_t deadline(const struct job *j)
{
	return fate_deadline(&j->tx, &j->facts);
}

/* Worth sending: it may still land and a node may still take it. */
static bool can_send(const struct job *j)
{
	uint32_t d = deadline(j);

	return !j->too_late && !j->consumed && current(j) >= 0 &&
	       (!d || j->w->chain_ledger + 1 < d);
}

/* ---- sending ---- */

static void refused(struct job *j, int idx, const struct tx_result *tr)
{
	struct outcome o = classify_send(RPC_SEND_ERROR, tr);
	int32_t code = tr ? (tr->code == TX_FEE_BUMP_INNER_FAILED ? tr->inner_code : tr->code) : 0;

	snprintf(j->refusal, sizeof(j->refusal), "%s", o.reason ? o.reason : "ERROR");
	log_info("op %lld: envelope %.12s refused: %s", (long long)j->op_id, j->env[idx].hash,
		 j->refusal);
	if (code == TX_BAD_SEQ || code == TX_TOO_LATE) {
		/* what a re-send of a landed transaction answers: look, decide nothing */
		j->want_account = true;
		j->too_late |= code == TX_TOO_LATE;
		j->env[idx].refused = true;
		return;
	}
	if (o.action == OUTCOME_BUMP_FEE || o.action == OUTCOME_TRANSIENT ||
	    o.action == OUTCOME_WAIT || o.action == OUTCOME_FUND) {
		if (idx > 0 && o.action == OUTCOME_BUMP_FEE)
			j->env[idx].refused = true; /* back to the previous envelope */
		return;
	}
	j->env[idx].refused = true;
	if (idx == 0)
		j->refusal_final = o.action == OUTCOME_FINAL;
}

static void on_sent(struct rpc_result *r, void *arg)
{
	struct job *j = arg;
	int idx = j->sending;

	if (job_gone(j))
		return;
	CRASHPOINT("after_send");
	if (r->status != RPC_OK) {
		next_poll(j); /* it may or may not have arrived: follow */
		return;
	}
	worker_saw_ledger(j->w, r->u.send.latest_ledger, r->u.send.latest_ledger_close_time);
	if (!j->sent_ledger)
		j->sent_ledger = r->u.send.latest_ledger;
	if (r->u.send.status == RPC_SEND_ERROR) {
		struct tx_result tr;
		bool ok = r->u.send.error_result_xdr &&
			  !tx_result_decode_b64(&tr, r->u.send.error_result_xdr, NULL);
		refused(j, idx, ok ? &tr : NULL);
		schedule(j, 0); /* look at once */
		return;
	}
	next_poll(j);
}

static void send(struct job *j)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int64_t now = mono_ms();
	int idx = current(j);

	if (idx < 0) {
		next_poll(j);
		return;
	}
	j->last_sent_ms = now;
	if (!j->first_sent_ms) {
		j->first_sent_ms = now;
		if (j->created_ms && !j->adopted && j->attempt_no == 1 && idx == 0)
			stats_hist_observe(j->w->stats, MET_ENQUEUE_TO_SEND_MS,
					   (uint64_t)((int64_t)wall_ms() - j->created_ms));
		if (j->claimed_ms && !j->adopted && idx == 0)
			stats_hfamily_observe(j->w->stats, HFAM_DISPATCH, j->prio, 0, 0,
					      (uint64_t)(now - j->claimed_ms));
	}
	if (executor_send(j, j->env[idx].b64, on_sent, &err)) {
		log_warn("op %lld: send: %s", (long long)j->op_id, err.msg);
		next_poll(j);
		return;
	}
	stats_counter_add(j->w->stats, MET_SENDS, 1);
	j->sending = idx;
	j->busy = true;
}

void follow_start(struct job *j, bool send_now)
{
	j->st = J_FOLLOWING;
	j->poll_ms = 0;
	if (!j->last_acct_ms)
		j->last_acct_ms = send_now ? mono_ms() : 1;
	if (send_now)
		send(j);
	else
		schedule(j, 0);
}

/* ---- fee bumps ---- */

static void on_bump_recorded(PGresult *res, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	if (!pgq_ok(res)) {
		leases_write_failed(j->w, j->vshard, res, "attempt_record (fee bump)");
		return;
	}
	CRASHPOINT("after_bump_commit"); /* the bump's row is committed, not sent */
	j->env[j->n_env - 1].recorded = true;
	j->last_bump_ms = mono_ms();
	j->sent_ledger = 0;
	stats_counter_add(j->w->stats, MET_FEE_BUMPS, 1);
	stats_family_add(j->w->stats, FAM_FEE_BUMPS, j->kind, 0, 0, 1);
	send(j);
}

/* The outer fee of the next bump; false when none may be sent now. */
static bool bump_fee(struct job *j, int64_t *fee)
{
	const struct outbox_config *cfg = j->w->cfg;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int cur = current(j) < 0 ? 0 : current(j);
	struct fee_bump_inner in = {
		.fee = j->inner_fee, .resource_fee = j->resource_fee, .n_ops = 1};
	struct fee_bump_queued q = {.incl = j->env[cur].fee - j->resource_fee,
				    .n_ops = cur > 0 ? 2u : 1u};
	bool queued = j->sent_ledger && j->w->chain_ledger < j->sent_ledger + WORKER_QUEUE_LEDGERS;
	int64_t min_fee, want, cap = cfg->max_abs_fee + j->resource_fee;
	struct fee_policy_params pp = {.max_abs_fee = (uint64_t)cfg->max_abs_fee,
				       .bump_milli = cfg->fee_bump_multiplier_milli};
	bool capped = false;

	if (txbuild_fee_bump_min_fee(&in, FEE_POLICY_MIN_FEE, queued ? &q : NULL, &min_fee, &err))
		return false;
	/* A fee bump pays for two operations (its own and the inner one). */
	want = (int64_t)fee_policy_bump_bid(&pp, j->prio, &j->w->fees,
					    (uint64_t)(j->inner_fee - j->resource_fee),
					    (uint32_t)j->n_env, &capped) *
		       2 +
	       j->resource_fee;
	if (want < min_fee)
		want = min_fee;
	if (want > cap) {
		stats_counter_add(j->w->stats, MET_MAX_FEE_HIT, 1);
		stats_family_add(j->w->stats, FAM_MAX_FEE_HIT, j->prio, 0, 0, 1);
		if (min_fee > cap)
			return false; /* wait for the queue to drop it: the milder rules apply */
		want = cap;
	}
	*fee = want;
	return true;
}

/*
 * A fee bump wraps the same inner transaction (same sequence number, so at
 * most one of them executes); its number is new even when earlier bumps were
 * refused, so (op, attempt, bump) stays unique.
 */
static bool try_bump(struct job *j)
{
	struct worker *w = j->w;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char *b64 = NULL;
	int64_t fee;
	int k = j->n_env;

	j->last_bump_ms = mono_ms();
	if (j->bump_high >= w->cfg->fee_bump_max_attempts || k > WORKER_MAX_BUMPS ||
	    !bump_fee(j, &fee))
		return false;
	if (txbuild_fee_bump(&j->tb, j->env[0].b64, j->signer->id, fee, FEE_POLICY_MIN_FEE, &err) ||
	    signers_sign(w, j->signer, &j->tb, &err) || txbuild_to_b64(&j->tb, &b64)) {
		log_warn("op %lld: fee bump: %s", (long long)j->op_id, err.msg);
		free(b64);
		return false;
	}
	j->env[k] = (struct envelope){.b64 = b64, .fee = fee, .bump_no = ++j->bump_high};
	sodium_bin2hex(j->env[k].hash, 65, j->tb.hash, 32);
	j->n_env++; /* not sendable until its row commits (recorded) */
	tx_index_add(j, j->env[k].hash);

	char id[24], an[16], bn[16], seq[24], mt[24], fs[24], ml[16], sa[16];
	const char *p[12] = {id,
			     an,
			     bn,
			     j->env[k].hash,
			     j->inner_hash,
			     b64,
			     j->signer->id,
			     seq,
			     mt,
			     fs,
			     j->tx.max_ledger ? ml : NULL,
			     j->tx.sent_after ? sa : NULL};
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(an, sizeof(an), "%d", j->attempt_no);
	snprintf(bn, sizeof(bn), "%d", j->env[k].bump_no);
	snprintf(seq, sizeof(seq), "%lld", (long long)j->tx.seq);
	snprintf(mt, sizeof(mt), "%lld", (long long)j->tx.max_time);
	snprintf(fs, sizeof(fs), "%lld", (long long)fee);
	snprintf(ml, sizeof(ml), "%u", j->tx.max_ledger);
	snprintf(sa, sizeof(sa), "%u", j->tx.sent_after);
	log_info("op %lld: fee bump %d, fee %lld", (long long)j->op_id, j->env[k].bump_no,
		 (long long)fee);
	if (job_sql_ahead(
		    j, NULL,
		    "SELECT outbox.attempt_record($1, $2::int, $3::bigint, $4::bigint, $5::int, "
		    "$6::int, $7, $8, $9, $10, $11::bigint, $12::bigint, $13::bigint, $14::int, "
		    "$15::int)",
		    12, p, on_bump_recorded))
		leases_resync(w, j->vshard, "postgresql unavailable");
	return true;
}

/* ---- what the ledgers show ---- */

static int env_index(const struct job *j, const char *hash)
{
	for (int i = 0; i < j->n_env; i++)
		if (j->env[i].recorded && !strcmp(j->env[i].hash, hash))
			return i;
	return -1;
}

/*
 * A getTransaction answer found `queried` in a ledger. The envelope it shows
 * says which one landed; an RPC answer is hostile input, so its inner hash
 * must be ours. A fee bump outboxd did not sign (anyone may wrap a signed
 * transaction) is recorded against the inner attempt, its hash kept as
 * `via`. False when the answer is not about our transaction.
 */
static bool note_landing(struct job *j, const struct rpc_get_tx *g, const char *queried)
{
	struct landing *l = &j->landed;
	struct tx_result tr;
	bool ok = g->result_xdr && !tx_result_decode_b64(&tr, g->result_xdr, NULL);

	memset(l, 0, sizeof(*l));
	snprintf(l->hash, sizeof(l->hash), "%s",
		 env_index(j, queried) >= 0 ? queried : j->inner_hash);
	if (g->envelope_xdr) {
		struct xdr_envelope env;
		uint8_t *raw = NULL, outer[32], inner[32];
		size_t len;
		char hex[65];
		bool mine = !xdr_envelope_decode_b64(&env, g->envelope_xdr, strlen(g->envelope_xdr),
						     &raw, &len, NULL) &&
			    !xdr_envelope_inner_hash(&env, j->w->network_id, inner) &&
			    !xdr_envelope_hash(&env, j->w->network_id, outer);
		free(raw);
		if (mine)
			sodium_bin2hex(hex, sizeof(hex), inner, 32);
		if (!mine || strcmp(hex, j->inner_hash)) {
			log_err("op %lld: the RPC answered %.12s with an envelope that is not ours",
				(long long)j->op_id, queried);
			return false;
		}
		sodium_bin2hex(hex, sizeof(hex), outer, 32);
		if (env_index(j, hex) >= 0)
			memcpy(l->hash, hex, 65);
		else
			memcpy(l->via, hex, 65), memcpy(l->hash, j->inner_hash, 65);
	}
	l->ledger = g->ledger;
	l->fee_charged = ok ? tr.fee_charged : 0;
	l->success = g->status == RPC_TX_SUCCESS;
	if (!l->success) {
		struct outcome o = classify_get(RPC_TX_FAILED, ok ? &tr : NULL);
		snprintf(l->code, sizeof(l->code), "%s", o.reason ? o.reason : "txFAILED");
		l->retryable = o.action == OUTCOME_RESIMULATE || o.action == OUTCOME_RESTORE ||
			       o.action == OUTCOME_REBUILD;
	}
	j->facts.found = true;
	j->facts.found_success = l->success;
	j->facts.found_ledger = l->ledger;
	return true;
}

static void on_get(struct rpc_result *r, void *arg)
{
	struct job *j = arg;
	const struct rpc_get_tx *g = &r->u.get_tx;
	char queried[65];

	if (job_gone(j))
		return;
	if (r->status != RPC_OK) {
		next_poll(j);
		return;
	}
	worker_saw_ledger(j->w, g->latest_ledger, g->latest_ledger_close_time);
	snprintf(queried, sizeof(queried), "%s",
		 j->landed.need_result ? j->landed.hash
		 : j->consumed         ? j->env[j->lookup_i].hash
				       : j->inner_hash);
	if (g->status != RPC_TX_NOT_FOUND) {
		if (!note_landing(j, g, queried)) {
			next_poll(j);
			return;
		}
	} else if (j->consumed && !j->landed.need_result) {
		/* a round: the ledgers every envelope was looked up in, together */
		if (!j->lookup_i || g->oldest_ledger > j->round_oldest)
			j->round_oldest = g->oldest_ledger;
		if (!j->lookup_i || g->latest_ledger < j->round_latest)
			j->round_latest = g->latest_ledger;
		if (++j->lookup_i < j->n_env) {
			schedule(j, 0);
			return;
		}
		j->facts.have_nf = true;
		j->facts.nf_oldest = j->round_oldest;
		j->facts.nf_latest = j->round_latest;
		j->lookup_i = 0;
	}
	decide(j);
}

static void on_account(struct rpc_result *r, void *arg)
{
	struct job *j = arg;
	const struct rpc_account *a = &r->u.account;

	if (job_gone(j))
		return;
	if (r->status != RPC_OK) {
		next_poll(j);
		return;
	}
	stats_counter_add(j->w->stats, MET_ACCOUNT_READS, 1);
	worker_saw_ledger(j->w, a->latest_ledger, 0);
	j->last_acct_ms = mono_ms();
	j->want_account = false;
	if (!fate_note_account(&j->facts, !a->found, a->seq_num, a->latest_ledger))
		log_err("op %lld: the RPC's account reads contradict each other (sequence %lld at "
			"ledger %u after %lld at %u): keeping the newest",
			(long long)j->op_id, (long long)a->seq_num, a->latest_ledger,
			(long long)j->facts.acct_seq, j->facts.acct_ledger);
	decide(j);
}

/* ---- deciding ---- */

static void hold(struct job *j, const struct fate_verdict *v)
{
	char detail[400];

	snprintf(detail, sizeof(detail),
		 "{\"why\": \"%s\", \"tx_hash\": \"%s\", \"source_sequence\": %lld, "
		 "\"account_seq\": %lld, \"as_of_ledger\": %u, \"sent_after_ledger\": %u, "
		 "\"lookups_oldest\": %u, \"lookups_latest\": %u, \"alarm\": %s}",
		 fate_why_name(v->why), j->inner_hash, (long long)j->tx.seq,
		 (long long)j->facts.acct_seq, j->facts.acct_ledger, j->tx.sent_after,
		 j->facts.nf_oldest, j->facts.nf_latest, v->alarm ? "true" : "false");
	job_hold(j,
		 v->why == FATE_WHY_OUTSIDE_RETENTION ? "executed, outcome unknown"
						      : fate_why_name(v->why),
		 detail);
}

/* Nothing decided: keep the envelope in front of the network. */
static void unknown(struct job *j)
{
	int64_t now = mono_ms();
	int64_t since = j->last_bump_ms > j->first_sent_ms ? j->last_bump_ms : j->first_sent_ms;

	if (can_send(j) && j->first_sent_ms && now - since > j->w->cfg->submitted_timeout_ms &&
	    try_bump(j))
		return;
	if (can_send(j) && now - j->last_sent_ms >= WORKER_RESEND_MS) {
		send(j);
		return;
	}
	next_poll(j);
}

static void decide(struct job *j)
{
	struct fate_verdict v;

	/* the first ledger known to have closed after max_time (close time max_time + 1 or later) */
	fate_note_close(&j->facts, &j->tx, worker_first_ledger_after(j->w, j->tx.max_time),
			j->tx.max_time + 1);
	v = fate_decide(&j->tx, &j->facts);
	if (v.alarm && !j->alarmed) {
		j->alarmed = true;
		stats_counter_add(j->w->stats, MET_SEQ_ALARMS, 1);
		log_err("op %lld: signer %s's sequence number %lld is past this transaction's "
			"%lld: "
			"another party uses the account",
			(long long)j->op_id, j->signer->id, (long long)j->facts.acct_seq,
			(long long)j->tx.seq);
	}
	switch (v.fate) {
	case FATE_LANDED:
		if (j->landed.need_result) {
			next_poll(j); /* a hint said FAILED: the result code comes from a lookup */
			return;
		}
		job_settle(j, j->landed.success ? NULL : j->landed.code, j->landed.retryable);
		return;
	case FATE_CONSUMED:
		if (!j->consumed) {
			log_info("op %lld: tx %.12s consumed its sequence number: looking it up",
				 (long long)j->op_id, j->inner_hash);
			j->consumed = true;
			j->lookup_i = 0;
			schedule(j, 0);
			return;
		}
		next_poll(j); /* the lookups lag the consuming ledger: another round */
		return;
	case FATE_HELD:
		hold(j, &v);
		return;
	case FATE_DEAD:
		job_expire(j, &v);
		return;
	case FATE_UNKNOWN:
		break;
	}
	unknown(j);
}

static bool want_account(const struct job *j, int64_t now)
{
	uint32_t d = deadline(j);

	return j->want_account || (d && j->w->chain_ledger >= d && j->facts.acct_ledger < d) ||
	       now - j->last_acct_ms >= WORKER_ACCOUNT_MS;
}

void follow_poll(struct job *j)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_TRANSACTION, .hash = j->inner_hash};
	rpc_done_fn cb = on_get;

	if (j->landed.hash[0] && !j->landed.need_result) {
		decide(j); /* the ledger follower saw it land */
		return;
	}
	if (j->landed.need_result)
		req.hash = j->landed.hash;
	else if (j->consumed)
		req.hash = j->env[j->lookup_i].hash;
	else if (want_account(j, mono_ms())) {
		req = (struct rpc_request){.method = RPC_GET_ACCOUNT};
		memcpy(req.account, j->signer->pub, 32);
		cb = on_account;
	} else if (hints_cover(j->w, j->tx.sent_after)) {
		decide(j); /* a landing would have been hinted: getTransaction would say NOT_FOUND */
		return;
	}
	if (rpc_call_start(j->w->rpc, &req, cb, j, &err)) {
		next_poll(j);
		return;
	}
	j->busy = true;
}
