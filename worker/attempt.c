/*
 * attempt.c - jobs and the per-attempt pipeline.
 *
 * A job is one claimed op (or one adopted by reconcile). For a claimed op:
 *
 *	fee policy (LOW may be deferred: op_defer, done)
 *	-> account sequence (cached per signer; getLedgerEntries when unknown)
 *	-> simulate -> build with the simulation -> sign
 *	-> attempt_record (COMMITTED before a byte goes out)
 *	-> executors send -> follow.c
 *
 * A failure before the attempt row exists leaves no envelope anywhere, so
 * the op simply goes back to PENDING with backoff (op_retry_later, counting
 * the try) or, after OUTBOX_MAX_ATTEMPTS tries, FAILED.
 */
#include "worker/worker.h"

#include "common/backoff.h"
#include "common/crashpoint.h"
#include "common/fee_policy.h"
#include "common/log.h"
#include "common/shm/inflight.h"
#include "common/stellar/classify.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex32(const uint8_t h[32], char out[65])
{
	sodium_bin2hex(out, 65, h, 32);
}

struct job *job_new(struct worker *w, int vshard)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->w = w;
	j->vshard = vshard;
	j->lease_gen = w->leases[vshard].gen;
	txbuild_init(&j->tb);
	j->next = w->jobs;
	if (w->jobs)
		w->jobs->prev = j;
	w->jobs = j;
	w->n_jobs++;
	return j;
}

static void job_free(struct job *j)
{
	struct worker *w = j->w;

	if (j->prev)
		j->prev->next = j->next;
	else
		w->jobs = j->next;
	if (j->next)
		j->next->prev = j->prev;
	w->n_jobs--;
	if (j->holds_slot) {
		inflight_release(w->ctx->seg, w->ctx->index);
		w->inflight--;
	}
	for (int i = 0; i < j->n_live; i++)
		free(j->live_b64[i]);
	if (j->n_live == 0)
		free(j->cur_b64);
	txbuild_release(&j->tb);
	free(j);
}

void job_finish(struct job *j)
{
	struct worker *w = j->w;

	job_free(j);
	worker_schedule_claim(w, 0);
}

void job_abandon_vshard(struct worker *w, int vshard)
{
	struct job *j = w->jobs, *next;

	w->leases[vshard].gen++;
	for (; j; j = next) {
		next = j->next;
		if (j->vshard != vshard)
			continue;
		if (j->busy)
			j->abandoned = true;
		else
			job_free(j);
	}
}

/* Called first thing in every callback of a job: it is no longer busy. */
bool job_gone(struct job *j)
{
	j->busy = false;
	if (j->abandoned || j->lease_gen != j->w->leases[j->vshard].gen) {
		job_free(j);
		return true;
	}
	return false;
}

int job_sql(struct job *j, const char *sql, int n, const char *const *params, pgq_cb cb)
{
	struct worker *w = j->w;
	char vs[16], es[24];
	const char *p[PGQ_MAX_PARAMS];
	int rc;

	if (n + 3 > PGQ_MAX_PARAMS)
		return -EINVAL;
	snprintf(vs, sizeof(vs), "%d", j->vshard);
	snprintf(es, sizeof(es), "%lld", (long long)w->leases[j->vshard].epoch);
	p[0] = w->owner;
	p[1] = vs;
	p[2] = es;
	for (int i = 0; i < n; i++)
		p[3 + i] = params[i];
	rc = pgq_send_batch(worker_pg(w, j->vshard), sql, n + 3, p, cb, j);
	if (rc == 0)
		j->busy = true;
	return rc;
}

/* A terminal or parking write finished: the job is done either way. */
static void on_final(PGresult *res, void *arg)
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

static void sql_or_resync(struct job *j, const char *sql, int n, const char *const *p, pgq_cb cb)
{
	if (job_sql(j, sql, n, p, cb))
		leases_resync(j->w, j->vshard, "postgresql unavailable");
}

void job_fail(struct job *j, const char *error, const char *code, const char *landed_hash)
{
	char id[24];
	const char *p[4] = {id, error, code, landed_hash};

	log_info("op %lld FAILED: %s (%s)", (long long)j->op_id, error, code ? code : "-");
	stats_counter_add(j->w->stats, MET_OPS_FAILED, 1);
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	sql_or_resync(j, "SELECT outbox.op_fail($1, $2::int, $3::bigint, $4::bigint, $5, $6, $7)",
		      4, p, on_final);
}

/*
 * Back to PENDING. count: this try built no attempt row, so the database
 * counts it here; tries made so far decide FAILED at OUTBOX_MAX_ATTEMPTS.
 */
void job_retry_later(struct job *j, int64_t delay_ms, const char *error, bool count)
{
	const struct outbox_config *cfg = j->w->cfg;
	int tries = j->reconciled ? j->attempt_no : j->attempts + 1; /* this try included */
	char id[24], d[24];
	const char *p[4] = {id, d, error, count ? "true" : "false"};

	if (tries >= cfg->max_attempts) {
		char msg[300];
		snprintf(msg, sizeof(msg), "gave up after %d attempts: %s", tries, error);
		job_fail(j, msg, NULL, NULL);
		return;
	}
	if (delay_ms < 0)
		delay_ms = (int64_t)backoff_full_jitter_ms(
			(uint32_t)(tries ? tries : 1), (uint64_t)cfg->backoff_base_ms,
			(uint64_t)cfg->backoff_max_ms,
			((uint64_t)randombytes_random() << 32) | randombytes_random());
	stats_counter_add(j->w->stats, MET_OPS_RETRIED, 1);
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(d, sizeof(d), "%lld", (long long)delay_ms);
	sql_or_resync(
		j,
		"SELECT outbox.op_retry_later($1, $2::int, $3::bigint, $4::bigint, $5::int, $6, "
		"$7::boolean)",
		4, p, on_final);
}

static void send_now(struct job *j);

static void on_recorded(PGresult *res, void *arg)
{
	struct job *j = arg;
	char *b64;

	if (job_gone(j))
		return;
	if (!pgq_ok(res)) {
		leases_write_failed(j->w, j->vshard, res, "attempt_record");
		return;
	}
	CRASHPOINT("after_attempt_commit");
	/* The row is durable: from here on this envelope may be out there. */
	b64 = j->cur_b64;
	j->live_b64[0] = b64;
	memcpy(j->live_hash[0], j->inner_hash, 65);
	j->inner_b64 = b64;
	j->n_live = 1;
	j->bump_no = 0;
	j->st = J_FOLLOW;
	stats_counter_add(j->w->stats, MET_ATTEMPTS_RECORDED, 1);
	if (j->max_fee_hit)
		stats_counter_add(j->w->stats, MET_MAX_FEE_HIT, 1);
	send_now(j);
}

static void record(struct job *j)
{
	struct worker *w = j->w;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char id[24], an[16], seq[24], mt[24], fee[24];
	char *b64 = NULL;
	const char *p[10];

	if (signers_sign(w, j->signer, &j->tb, &err) || txbuild_to_b64(&j->tb, &b64)) {
		log_err("op %lld: sign: %s", (long long)j->op_id, err.msg);
		job_retry_later(j, -1, err.msg[0] ? err.msg : "sign failed", true);
		return;
	}
	hex32(j->tb.hash, j->inner_hash);
	j->cur_b64 = b64;
	j->inner_fee = j->tb.env.tx.fee;
	j->resource_fee = j->tb.env.tx.has_soroban ? j->tb.env.tx.soroban.resource_fee : 0;
	j->last_fee = j->inner_fee;
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(an, sizeof(an), "%d", j->attempt_no);
	snprintf(seq, sizeof(seq), "%lld", (long long)j->seq);
	snprintf(mt, sizeof(mt), "%lld", (long long)j->max_time);
	snprintf(fee, sizeof(fee), "%lld", (long long)j->inner_fee);
	p[0] = id, p[1] = an, p[2] = "0", p[3] = j->inner_hash, p[4] = j->inner_hash, p[5] = b64,
	p[6] = j->signer->id, p[7] = seq, p[8] = mt, p[9] = fee;
	if (job_sql(j,
		    "SELECT outbox.attempt_record($1, $2::int, $3::bigint, $4::bigint, $5::int, "
		    "$6::int, $7, $8, $9, $10, $11::bigint, $12::bigint, $13::bigint)",
		    10, p, on_recorded)) {
		free(b64);
		j->cur_b64 = NULL;
		leases_resync(w, j->vshard, "postgresql unavailable");
	}
}

static int source_of(struct job *j, struct txbuild_source *src)
{
	struct worker *w = j->w;
	int64_t now_s = (int64_t)(shm_realtime_ms() / 1000);
	/*
	 * The chain's clock: the snapshot (this iteration's copy: a callback
	 * may run while we are offline) or a newer close time an RPC answer
	 * reported, never behind our own clock.
	 */
	int64_t close = (int64_t)w->fees.close_time;

	if (w->seen_close_time > close)
		close = w->seen_close_time;

	if (close < now_s)
		close = now_s;
	j->max_time = close + WORKER_MIN_HORIZON_S;
	*src = (struct txbuild_source){.account = j->signer->id,
				       .seq_num = j->seq,
				       .fee = (uint32_t)j->build_fee,
				       .max_time = (uint64_t)j->max_time};
	return 0;
}

static void on_simulated(struct rpc_result *r, void *arg)
{
	struct job *j = arg;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src;

	if (job_gone(j))
		return;
	if (r->status != RPC_OK) {
		job_retry_later(j, -1, r->err.msg, true);
		return;
	}
	if (r->u.simulate.error) {
		struct outcome o = classify_simulate_error(r->u.simulate.error);
		char msg[300];
		snprintf(msg, sizeof(msg), "simulate: %.250s", r->u.simulate.error);
		if (o.action == OUTCOME_FINAL)
			job_fail(j, msg, o.reason, NULL);
		else
			job_retry_later(j, -1, msg, true);
		return;
	}
	struct txbuild_sim sim = {.transaction_data = r->u.simulate.transaction_data,
				  .auth = (const char *const *)r->u.simulate.auth,
				  .n_auth = r->u.simulate.n_auth};
	source_of(j, &src);
	if (executor_build(j, &src, &sim, &err)) {
		job_fail(j, err.msg, "BUILD", NULL);
		return;
	}
	record(j);
}

static void simulate(struct job *j)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src;
	char *b64 = NULL;

	j->seq = j->signer->seq + 1;
	source_of(j, &src);
	if (executor_build(j, &src, NULL, &err) || txbuild_to_b64(&j->tb, &b64)) {
		job_fail(j, err.msg[0] ? err.msg : "build failed", "BUILD", NULL);
		return;
	}
	struct rpc_request req = {.method = RPC_SIMULATE_TRANSACTION, .transaction = b64};
	if (rpc_call_start(j->w->rpc, &req, on_simulated, j, &err))
		job_retry_later(j, -1, err.msg, true);
	else
		j->busy = true;
	free(b64);
}

static void on_account(struct rpc_result *r, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	if (r->status != RPC_OK) {
		job_retry_later(j, -1, r->err.msg, true);
		return;
	}
	if (!r->u.account.found) {
		job_retry_later(j, -1, "signer account not found", true);
		return;
	}
	j->signer->seq = r->u.account.seq_num;
	j->signer->seq_valid = true;
	simulate(j);
}

static void on_deferred(PGresult *res, void *arg)
{
	on_final(res, arg);
}

void job_start(struct job *j)
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
	int64_t age = (int64_t)shm_realtime_ms() - j->created_ms;
	struct fee_policy_in in = {.priority = j->prio,
				   .view = &w->fees,
				   .step = (uint32_t)j->attempts,
				   .deferred_ms = age > 0 ? age : 0};
	struct fee_decision d;

	fee_policy_decide(&d, &pp, &in);
	if (d.defer) {
		char id[24], ms[24];
		const char *p[2] = {id, ms};
		snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
		snprintf(ms, sizeof(ms), "%lld", (long long)d.defer_ms);
		stats_counter_add(w->stats, MET_OPS_DEFERRED, 1);
		sql_or_resync(
			j, "SELECT outbox.op_defer($1, $2::int, $3::bigint, $4::bigint, $5::int)",
			2, p, on_deferred);
		return;
	}
	j->build_fee = (int64_t)(d.fee > UINT32_MAX / 2 ? UINT32_MAX / 2 : d.fee);
	j->max_fee_hit = d.max_fee_hit;
	j->attempt_no = j->attempts + 1;
	if (j->signer->key < 0) {
		job_retry_later(j, -1, "no key for the signer in OUTBOX_SIGNER_KEYS_FILE", true);
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
		job_retry_later(j, -1, err.msg, true);
	else
		j->busy = true;
}

/* ---- sending (shared with follow.c through follow_after_send) ---- */

void follow_after_send(struct job *j, struct rpc_result *r);

static void on_sent(struct rpc_result *r, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	CRASHPOINT("after_send");
	follow_after_send(j, r);
}

static void send_now(struct job *j)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int64_t now = pgq_now_ms();

	j->last_sent_ms = now;
	if (!j->first_sent_ms) {
		j->first_sent_ms = now;
		if (j->created_ms && j->bump_no == 0 && j->attempt_no == 1)
			stats_hist_observe(j->w->stats, MET_ENQUEUE_TO_SEND_MS,
					   (uint64_t)((int64_t)shm_realtime_ms() - j->created_ms));
	}
	if (!j->claimed_ms)
		j->claimed_ms = now;
	if (executor_send(j, j->cur_b64, on_sent, &err)) {
		log_warn("op %lld: send: %s", (long long)j->op_id, err.msg);
		j->due_ms = now + WORKER_FOLLOW_MIN_MS;
		return;
	}
	stats_counter_add(j->w->stats, MET_SENDS, 1);
	j->busy = true;
}

void job_resend(struct job *j);
void job_resend(struct job *j)
{
	send_now(j);
}

void jobs_tick(struct worker *w, int64_t now)
{
	struct job *j, *next;

	for (j = w->jobs; j; j = next) {
		next = j->next;
		if (j->busy || j->abandoned)
			continue;
		if (j->st == J_NEW) {
			/*
			 * Backpressure: an envelope is built (its maxTime fixed)
			 * before its attempt row commits, so it must not wait
			 * behind a long queue of writes; a claim of hundreds of
			 * ops starts them as the queue drains.
			 */
			if (now < j->due_ms)
				continue;
			if (pgq_pending(worker_pg(w, j->vshard)) >= WORKER_PG_QUEUE_MAX) {
				j->due_ms = now + WORKER_PG_QUEUE_WAIT_MS;
				continue;
			}
			j->st = J_FOLLOW; /* job_start decides what follows */
			j->n_live = 0;
			job_start(j);
			continue;
		}
		if (j->st == J_FOLLOW && j->n_live > 0 && now >= j->due_ms)
			follow_poll(j);
	}
}
