/*
 * job.c - a job's life: created by a claim (claim.c) or by reconcile
 * (reconcile.c), driven by jobs_tick, ended by exactly one final write about
 * its op, or dropped when its vshard is abandoned.
 *
 * Every write is fenced (job_sql, worker.h) and goes through the vshard's
 * data connection, an attempt row through the write-ahead connection, a
 * CRITICAL op's through the express connection. A final write that
 * commits ends the job (on_finished); one that fails leaves the op as
 * PostgreSQL has it and the vshard is reconciled again, because only
 * PostgreSQL knows what happened (leases_write_failed).
 */
#include "worker/worker.h"

#include "common/backoff.h"
#include "common/clock.h"
#include "common/crashpoint.h"
#include "common/log.h"
#include "common/shm/inflight.h"

#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct job *job_new(struct worker *w, int vshard)
{
	struct job *j;

	if (due_reserve(w, w->n_jobs + 1))
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->w = w;
	j->vshard = vshard;
	j->lease_gen = w->leases[vshard].gen;
	j->seq_high = -1; /* j->tb: calloc left it as txbuild_init would */
	j->next = w->jobs;
	if (w->jobs)
		w->jobs->prev = j;
	w->jobs = j;
	w->n_jobs++;
	job_due(j, 0);
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
	due_drop(j);
	tx_index_drop_job(j);
	if (j->holds_slot) {
		inflight_release(w->ctx->seg, w->ctx->index);
		w->inflight--;
	}
	for (int i = 0; i < j->n_env; i++)
		free(j->env[i].b64);
	txbuild_dispose(&j->tb);
	free(j);
}

/* The job is over: its signer's lane may hold more work. */
static void job_end(struct job *j)
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

bool job_gone(struct job *j)
{
	j->busy = false;
	if (j->abandoned || j->lease_gen != j->w->leases[j->vshard].gen) {
		job_free(j);
		return true;
	}
	job_due(j, j->due_ms); /* idle again: its due time counts */
	return false;
}

/* $1..$3 (owner, vshard, epoch), then the statement's own, on q. */
static int send_fenced(struct job *j, struct pgq *q, const struct pgq_merge *m, const char *sql,
		       int n, const char *const *params, pgq_cb cb)
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
	rc = m ? pgq_send_merge(q, m, sql, n + 3, p, cb, j)
	       : pgq_send_batch(q, sql, n + 3, p, cb, j);
	if (rc == 0)
		j->busy = true;
	return rc;
}

struct pgq *job_ahead_pg(struct job *j)
{
	return &j->w->pg[j->prio == OP_PRIO_CRITICAL ? WORKER_PG_EXPRESS : WORKER_PG_AHEAD];
}

int job_sql_merge(struct job *j, const struct pgq_merge *m, const char *sql, int n,
		  const char *const *params, pgq_cb cb)
{
	struct pgq *q = j->prio == OP_PRIO_CRITICAL ? &j->w->pg[WORKER_PG_EXPRESS]
						    : worker_pg(j->w, j->vshard);

	return send_fenced(j, q, m, sql, n, params, cb);
}

int job_sql(struct job *j, const char *sql, int n, const char *const *params, pgq_cb cb)
{
	return job_sql_merge(j, NULL, sql, n, params, cb);
}

int job_sql_ahead(struct job *j, const struct pgq_merge *m, const char *sql, int n,
		  const char *const *params, pgq_cb cb)
{
	return send_fenced(j, job_ahead_pg(j), m, sql, n, params, cb);
}

static void on_finished(PGresult *res, void *arg)
{
	struct job *j = arg;

	if (job_gone(j))
		return;
	if (!pgq_ok(res)) {
		leases_write_failed(j->w, j->vshard, res, "final write");
		return;
	}
	job_end(j);
}

/* The op's final write (m: its set form, or NULL); the job ends when it commits. */
static void finish_merge(struct job *j, const struct pgq_merge *m, const char *sql, int n,
			 const char *const *p)
{
	j->st = J_FINISHING;
	if (job_sql_merge(j, m, sql, n, p, on_finished))
		leases_resync(j->w, j->vshard, "postgresql unavailable");
}

static void finish(struct job *j, const char *sql, int n, const char *const *p)
{
	finish_merge(j, NULL, sql, n, p);
}

/* outbox_ops_total{kind, priority, outcome} (labels of an unknown kind are dropped) */
static void count_outcome(struct job *j, enum shm_outcome o)
{
	stats_family_add(j->w->stats, FAM_OPS, j->kind, j->prio, o, 1);
}

int job_tries(const struct job *j)
{
	return (j->attempt_no ? j->attempt_no : j->attempts + 1) - j->attempts_base;
}

void job_defer(struct job *j, int64_t delay_ms)
{
	char id[24], ms[24];
	const char *p[2] = {id, ms};

	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(ms, sizeof(ms), "%lld", (long long)delay_ms);
	stats_counter_add(j->w->stats, MET_OPS_DEFERRED, 1);
	finish(j, "SELECT outbox.op_defer($1, $2::int, $3::bigint, $4::bigint, $5::int)", 2, p);
}

void job_fail(struct job *j, const char *error, const char *code)
{
	char id[24];
	const char *p[3] = {id, error, code};

	log_info("op %lld FAILED: %s (%s)", (long long)j->op_id, error, code ? code : "-");
	stats_counter_add(j->w->stats, MET_OPS_FAILED, 1);
	count_outcome(j, SHM_OUTCOME_FAILED);
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	finish(j, "SELECT outbox.op_fail($1, $2::int, $3::bigint, $4::bigint, $5, $6)", 3, p);
}

static int64_t backoff_ms(const struct job *j)
{
	const struct outbox_config *cfg = j->w->cfg;
	int tries = job_tries(j);

	return (int64_t)backoff_full_jitter_ms(
		(uint32_t)(tries > 0 ? tries : 1), (uint64_t)cfg->backoff_base_ms,
		(uint64_t)cfg->backoff_max_ms,
		((uint64_t)randombytes_random() << 32) | randombytes_random());
}

/*
 * count: this try made no attempt row, so the database counts it here (an
 * attempt row counts itself: ops.attempts = its attempt_no).
 */
void job_retry(struct job *j, int64_t delay_ms, const char *error, bool count)
{
	char id[24], d[24];
	const char *p[4] = {id, d, error, count ? "true" : "false"};
	int tries = job_tries(j);

	if (tries >= j->w->cfg->max_attempts) {
		char msg[300];
		snprintf(msg, sizeof(msg), "gave up after %d attempts: %s", tries, error);
		job_fail(j, msg, NULL);
		return;
	}
	if (delay_ms < 0)
		delay_ms = backoff_ms(j);
	stats_counter_add(j->w->stats, MET_OPS_RETRIED, 1);
	count_outcome(j, SHM_OUTCOME_RETRY);
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(d, sizeof(d), "%lld", (long long)delay_ms);
	finish(j,
	       "SELECT outbox.op_retry_later($1, $2::int, $3::bigint, $4::bigint, $5::int, $6, "
	       "$7::boolean)",
	       4, p);
}

/*
 * op_landed's set form (schema/0026_job_writes_at_once.sql): a ledger lands
 * many ops at once, and their op_landed commands queued behind each other
 * go out as one ops_landed statement, or alone if it refuses.
 */
static const struct pgq_merge landed_merge = {
	.fn = "outbox.ops_landed",
	.types = {"text[]", "integer[]", "bigint[]", "bigint[]", "text[]", "integer[]", "bigint[]",
		  "text[]", "text[]", "integer[]", "text[]"},
};

/*
 * One of its envelopes is in a ledger: the sequence number is consumed
 * whatever the result. A failure the classifier calls retryable (simulate
 * again, restore) sends the op back to PENDING for a new transaction with
 * the next sequence number, within the retry budget.
 */
void job_settle(struct job *j, const char *code, bool retryable)
{
	const struct landing *l = &j->landed;
	char id[24], led[16], fee[24], delay[24], err[128];
	const char *p[8] = {id,   l->hash, l->ledger ? led : NULL,   fee, code,
			    NULL, NULL,    l->via[0] ? l->via : NULL};

	j->signer->seq = j->tx.seq;
	j->signer->seq_valid = true;
	CRASHPOINT("after_confirm_seen");
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	snprintf(led, sizeof(led), "%u", l->ledger);
	snprintf(fee, sizeof(fee), "%lld", (long long)l->fee_charged);
	if (!code) {
		stats_counter_add(j->w->stats, MET_OPS_CONFIRMED, 1);
		count_outcome(j, SHM_OUTCOME_CONFIRMED);
		if (j->created_ms > 0)
			stats_hfamily_observe(j->w->stats, HFAM_OP_LATENCY, j->kind, j->prio, 0,
					      (uint64_t)((int64_t)wall_ms() - j->created_ms));
	} else {
		snprintf(err, sizeof(err), "failed on chain: %s", code);
		p[5] = err;
		if (retryable && job_tries(j) < j->w->cfg->max_attempts) {
			snprintf(delay, sizeof(delay), "%lld", (long long)backoff_ms(j));
			p[6] = delay;
			stats_counter_add(j->w->stats, MET_OPS_RETRIED, 1);
			count_outcome(j, SHM_OUTCOME_RETRY);
		} else {
			stats_counter_add(j->w->stats, MET_OPS_FAILED, 1);
			count_outcome(j, SHM_OUTCOME_FAILED);
		}
		log_info("op %lld: tx %.12s failed on chain: %s%s", (long long)j->op_id, l->hash,
			 code, p[6] ? " (retryable: a new transaction follows)" : "");
	}
	finish_merge(j, &landed_merge,
		     "SELECT outbox.op_landed($1, $2::int, $3::bigint, $4::bigint, $5, $6::int, "
		     "$7::bigint, $8, $9, $10::int, $11)",
		     8, p);
}

void job_hold(struct job *j, const char *reason, const char *detail_json)
{
	char id[24];
	const char *p[3] = {id, reason, detail_json};

	j->signer->seq_valid = false;
	log_warn("op %lld HELD for an operator: %s %s", (long long)j->op_id, reason, detail_json);
	stats_counter_add(j->w->stats, MET_OPS_HELD, 1);
	snprintf(id, sizeof(id), "%lld", (long long)j->op_id);
	finish(j, "SELECT outbox.op_hold($1, $2::int, $3::bigint, $4::bigint, $5, $6::jsonb)", 3,
	       p);
}

static void on_expired(PGresult *res, void *arg)
{
	struct job *j = arg;
	char msg[160];

	if (job_gone(j))
		return;
	if (!pgq_ok(res)) {
		leases_write_failed(j->w, j->vshard, res, "attempt_decide");
		return;
	}
	if (j->refusal_final) {
		snprintf(msg, sizeof(msg), "refused at submission (%s); proven unexecuted",
			 j->refusal);
		job_fail(j, msg, j->refusal);
		return;
	}
	snprintf(msg, sizeof(msg), "transaction expired unexecuted%s%s",
		 j->refusal[0] ? " after " : "", j->refusal);
	job_retry(j, j->refusal[0] ? -1 : 0, msg, false);
}

void job_expire(struct job *j, const struct fate_verdict *v)
{
	char proof[160];
	const char *p[3] = {j->inner_hash, j->refusal[0] ? j->refusal : NULL, proof};

	snprintf(proof, sizeof(proof),
		 "{\"account_seq\": %lld, \"as_of_ledger\": %u, \"deadline_ledger\": %u}",
		 (long long)j->facts.acct_seq, j->facts.acct_ledger, v->deadline);
	/* nothing of ours is in flight for the signer: this is its sequence number */
	j->signer->seq = j->facts.acct_seq;
	j->signer->seq_valid = true;
	stats_counter_add(j->w->stats, MET_EXPIRED, 1);
	log_info(
		"op %lld: tx %.12s proven dead: sequence %lld unused as of ledger %u (deadline %u)",
		(long long)j->op_id, j->inner_hash, (long long)j->facts.acct_seq,
		j->facts.acct_ledger, v->deadline);
	j->st = J_FINISHING;
	if (job_sql(j,
		    "SELECT outbox.attempt_decide($1, $2::int, $3::bigint, $4, 'EXPIRED', $5, "
		    "$6::jsonb)",
		    3, p, on_expired))
		leases_resync(j->w, j->vshard, "postgresql unavailable");
}

static void on_given_back(PGresult *res, void *arg)
{
	(void)arg;
	if (res && !pgq_ok(res))
		log_warn("claim_release: %s", PQresultErrorMessage(res));
}

void job_give_back(struct job *j)
{
	struct worker *w = j->w;
	char vs[16], es[24], ids[32];
	const char *p[6] = {w->owner, vs, es, j->signer ? j->signer->id : "", "1", ids};

	snprintf(vs, sizeof(vs), "%d", j->vshard);
	snprintf(es, sizeof(es), "%lld", (long long)w->leases[j->vshard].epoch);
	snprintf(ids, sizeof(ids), "{%lld}", (long long)j->op_id);
	/* on the vshard's connection, so it runs after any write of the vshard already queued */
	pgq_send_batch(
		worker_pg(w, j->vshard),
		"SELECT outbox.claim_release($1, $2::int, $3::bigint, $4, $5::int, $6::bigint[])",
		6, p, on_given_back, NULL);
	job_end(j);
}

void job_drop(struct job *j)
{
	job_end(j);
}

/*
 * Run the idle jobs that are due, each at most once: due.c hands them out
 * in due order. A busy one is left out (job_gone puts it back); a run one
 * comes back through its step's job_due().
 */
void jobs_tick(struct worker *w, int64_t now)
{
	struct job *j;

	w->tick_no++;
	while ((j = due_pop(w, now))) {
		if (j->busy || j->abandoned)
			continue;
		j->tick_no = w->tick_no;
		if (j->st == J_CLAIMED) {
			/*
			 * Backpressure: an envelope's bounds are fixed when it is
			 * built, before its attempt row commits, so it must not
			 * wait behind a long queue of attempt rows; a claim of
			 * hundreds of ops starts them as the queue drains. A
			 * CRITICAL op's take the express connection: it never
			 * waits.
			 */
			if (j->prio != OP_PRIO_CRITICAL &&
			    pgq_pending(job_ahead_pg(j)) >= WORKER_PG_QUEUE_MAX) {
				job_due(j, now + WORKER_PG_QUEUE_WAIT_MS);
				continue;
			}
			build_start(j);
		} else if (j->st == J_FOLLOWING) {
			follow_poll(j);
		} else {
			job_due(j, j->due_ms); /* nothing to run in this state: as before */
		}
	}
}
