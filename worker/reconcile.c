/*
 * reconcile.c - adopt a vshard's SUBMITTED ops before claiming anything.
 *
 * reconcile_list (fenced) returns the LIVE attempts of the vshard's
 * SUBMITTED ops and resets the lanes' reservations to what is SUBMITTED, so
 * whatever a predecessor (a crashed worker, a dead instance, or ourselves
 * before a lost connection) left behind is accounted for. Each op becomes a
 * follow-only job over its attempt rows (follow.c): it reads the signer's
 * account first, re-sends the same envelopes while they can land, and ends
 * the op exactly as a job that sent them would. The adopted job knows
 * nothing of what the predecessor saw: every fact is learnt again from the
 * RPC, which is why the fate rule uses only chain facts.
 *
 * Ops without a LIVE attempt (their predecessor died between attempt_decide
 * and the op's final write) go back to PENDING at once: their transaction
 * is proven dead.
 *
 * A reconcile whose vshard was abandoned while it ran (a resync, a claim
 * that raced it) is discarded and started again, so that the lanes it
 * resets are read after every claim that could have touched them.
 */
#include "worker/worker.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/inflight.h"
#include "common/stellar/xdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec_ctx {
	struct worker *w;
	int vshard;
	uint32_t gen;
	uint32_t seq; /* the lease's rec_seq when it started */
	int barriers; /* connections still running what was queued before the list */
	bool lost;    /* one of them was lost meanwhile */
};

enum {
	C_OP,
	C_SIGNER,
	C_HASH,
	C_INNER,
	C_BUMP,
	C_ENV,
	C_SEQ,
	C_MAXT,
	C_FEE,
	C_ATT,
	C_MAXLEDGER,
	C_SENTAFTER,
	C_BASE,
	C_KIND,
	C_ATTEMPTS,
	C_MAXBUMP,
	C_PRIO,   /* the op's priority and creation time (ms): only metrics' labels */
	C_CREATED /* and outbox_op_latency_seconds read them */
};

static struct job *job_for(struct worker *w, int v, int64_t op)
{
	for (struct job *j = w->jobs; j; j = j->next)
		if (j->vshard == v && j->op_id == op && !j->abandoned)
			return j;
	return NULL;
}

static void inner_fees(struct job *j, const char *b64)
{
	struct xdr_envelope env;
	uint8_t *raw = NULL;
	size_t len;

	if (!xdr_envelope_decode_b64(&env, b64, strlen(b64), &raw, &len, NULL)) {
		j->inner_fee = env.tx.fee;
		j->resource_fee = env.tx.has_soroban ? env.tx.soroban.resource_fee : 0;
	}
	free(raw);
}

static struct job *adopt_op(struct worker *w, int v, const PGresult *res, int r)
{
	struct signer *s = signers_get(w, PQgetvalue(res, r, C_SIGNER));
	struct job *j = s ? job_new(w, v) : NULL;

	if (!j)
		return NULL;
	j->op_id = strtoll(PQgetvalue(res, r, C_OP), NULL, 10);
	j->signer = s;
	j->adopted = true;
	j->attempt_no = -1; /* filled by the rows; -1 = no LIVE attempt */
	j->attempts = atoi(PQgetvalue(res, r, C_ATTEMPTS));
	j->attempts_base = atoi(PQgetvalue(res, r, C_BASE));
	if (op_kind_parse(PQgetvalue(res, r, C_KIND), &j->kind))
		j->kind = OP_KIND_COUNT;
	j->prio = (enum op_priority)atoi(PQgetvalue(res, r, C_PRIO));
	j->created_ms = strtoll(PQgetvalue(res, r, C_CREATED), NULL, 10);
	s->seq_valid = false;
	j->st = J_FOLLOWING;
	if (inflight_try_acquire(w->ctx->seg, w->ctx->index, w->cfg->global_max_in_flight) == 0) {
		j->holds_slot = true;
		w->inflight++;
	}
	return j;
}

static uint32_t u32_or_0(const PGresult *res, int r, int c)
{
	return PQgetisnull(res, r, c) ? 0 : (uint32_t)strtoul(PQgetvalue(res, r, c), NULL, 10);
}

/* One LIVE attempt row (inner first, then its bumps) of the job's op. */
static void adopt_row(struct job *j, const PGresult *res, int r)
{
	int bump = atoi(PQgetvalue(res, r, C_BUMP));
	struct envelope *e;

	if (j->n_env > WORKER_MAX_BUMPS || (bump == 0) != (j->n_env == 0))
		return; /* checked after the rows: an adopted job without its inner is resynced */
	e = &j->env[j->n_env];
	*e = (struct envelope){.b64 = strdup(PQgetvalue(res, r, C_ENV)),
			       .fee = strtoll(PQgetvalue(res, r, C_FEE), NULL, 10),
			       .bump_no = bump,
			       .recorded = true};
	if (!e->b64)
		return;
	snprintf(e->hash, sizeof(e->hash), "%s", PQgetvalue(res, r, C_HASH));
	j->n_env++;
	tx_index_add(j, e->hash);
	if (bump == 0) {
		j->attempt_no = atoi(PQgetvalue(res, r, C_ATT));
		j->attempts = j->attempt_no;
		j->tx = (struct fate_tx){.seq = strtoll(PQgetvalue(res, r, C_SEQ), NULL, 10),
					 .max_time = strtoll(PQgetvalue(res, r, C_MAXT), NULL, 10),
					 .max_ledger = u32_or_0(res, r, C_MAXLEDGER),
					 .sent_after = u32_or_0(res, r, C_SENTAFTER)};
		snprintf(j->inner_hash, sizeof(j->inner_hash), "%s", PQgetvalue(res, r, C_INNER));
		inner_fees(j, e->b64);
	}
	/* every bump number ever used, refused ones included, so the next one is new */
	j->bump_high = atoi(PQgetvalue(res, r, C_MAXBUMP));
}

/* Start following (or hand back) what was adopted. False: the rows were inconsistent. */
static bool start_adopted(struct worker *w, int v)
{
	for (struct job *j = w->jobs, *next; j; j = next) {
		next = j->next;
		if (j->vshard != v || !j->adopted || j->busy || j->st != J_FOLLOWING ||
		    j->first_sent_ms)
			continue;
		if (j->attempt_no < 0) {
			j->attempt_no = j->attempts; /* its last attempt, proven dead, was a try */
			job_retry(j, 0, "recovered without a live attempt", false);
			continue;
		}
		if (!j->n_env || j->kind == OP_KIND_COUNT)
			return false;
		j->first_sent_ms = mono_ms(); /* its bump timer starts now */
		follow_start(j, false);
	}
	return true;
}

static void on_list(PGresult *res, void *arg)
{
	struct rec_ctx *c = arg;
	struct worker *w = c->w;
	int v = c->vshard, n;
	bool stale = c->gen != w->leases[v].gen;
	bool superseded = c->seq != w->leases[v].rec_seq;

	free(c);
	/*
	 * A newer reconcile started meanwhile (a lost connection cleared the
	 * flag while this list waited on a data connection): it owns the flag,
	 * and its list reads after this one. Acting on this answer would clear
	 * the flag under it, start a third reconcile whose lane reset could run
	 * after claims resumed, and adopt the same rows twice.
	 */
	if (superseded)
		return;
	w->leases[v].reconciling = false;
	if (!w->leases[v].epoch)
		return;
	if (stale) {
		reconcile_start(w, v);
		return;
	}
	if (!pgq_ok(res)) {
		if (res && !strcmp(pgq_sqlstate(res), "OB403"))
			leases_lost(w, v, "reconcile fenced out");
		else if (res)
			log_err("vshard %d: reconcile_list: %s", v, PQresultErrorMessage(res));
		return; /* not reconciled: retried by the next acquire round */
	}
	n = PQntuples(res);
	for (int r = 0; r < n; r++) {
		int64_t op = strtoll(PQgetvalue(res, r, C_OP), NULL, 10);
		struct job *j = job_for(w, v, op);

		if (!j && !(j = adopt_op(w, v, res, r)))
			continue;
		if (!PQgetisnull(res, r, C_HASH))
			adopt_row(j, res, r);
	}
	if (!start_adopted(w, v)) {
		leases_resync(w, v, "reconcile: attempt rows without an inner transaction");
		return;
	}
	if (n)
		log_info("vshard %d: reconciled, %d attempt rows adopted", v, n);
	w->leases[v].reconciled = true;
	worker_schedule_claim(w, 0);
}

/*
 * The write-ahead and express connections have run the vshard's attempt
 * rows and CRITICAL writes sent before (ok), or one was lost first (the
 * worker starts over from the database): read.
 */
static void send_list(struct rec_ctx *c, bool ok)
{
	struct worker *w = c->w;
	int v = c->vshard;
	char vs[16], es[24];
	const char *p[3] = {w->owner, vs, es};

	/* a restart or a newer reconcile took over meanwhile */
	if (c->seq != w->leases[v].rec_seq || !w->leases[v].reconciling || !w->leases[v].epoch) {
		free(c);
		return;
	}
	if (!ok) {
		free(c);
		w->leases[v].reconciling = false; /* the next lease turn tries again */
		return;
	}
	snprintf(vs, sizeof(vs), "%d", v);
	snprintf(es, sizeof(es), "%lld", (long long)w->leases[v].epoch);
	if (pgq_send(worker_pg(w, v),
		     "SELECT r.op_id, r.signer, r.tx_hash, r.inner_tx_hash, r.bump_no, "
		     "r.envelope_xdr, r.source_sequence, r.max_time, r.fee, r.attempt_no, "
		     "r.max_ledger, r.sent_after_ledger, r.attempts_base, r.kind, r.attempts, "
		     "(SELECT max(x.bump_no) FROM outbox.attempts x WHERE x.op_id = r.op_id AND "
		     "x.attempt_no = r.attempt_no), o.priority, "
		     "(extract(epoch FROM o.created_at) * 1000)::bigint "
		     "FROM outbox.reconcile_list($1, $2::int, $3::bigint) r "
		     "JOIN outbox.ops o ON o.id = r.op_id ORDER BY r.op_id, r.bump_no",
		     3, p, on_list, c)) {
		free(c);
		w->leases[v].reconciling = false; /* the next lease turn tries again */
	}
}

/*
 * The list is read on the vshard's data connection, after its writes
 * queued there; attempt rows go through the write-ahead connection and
 * CRITICAL writes through the express connection, so it waits for those
 * first (worker.h, WORKER_PG_CONNS): an attempt row committed after the
 * read would be an op in flight no job follows.
 */
static void barrier_done(struct rec_ctx *c, bool ok)
{
	if (!ok)
		c->lost = true;
	if (--c->barriers == 0)
		send_list(c, !c->lost);
}

static void on_barrier_ran(PGresult *res, void *arg)
{
	barrier_done(arg, res != NULL);
}

void reconcile_start(struct worker *w, int v)
{
	const int conns[] = {WORKER_PG_AHEAD, WORKER_PG_EXPRESS};
	struct rec_ctx *c;

	if (w->leases[v].reconciling || !w->leases[v].epoch || !w->pg_up)
		return;
	c = malloc(sizeof(*c));
	if (!c)
		return;
	*c = (struct rec_ctx){w, v, w->leases[v].gen, ++w->leases[v].rec_seq, 1, false};
	w->leases[v].reconciling = true;
	for (size_t k = 0; k < sizeof(conns) / sizeof(conns[0]); k++) {
		struct pgq *q = &w->pg[conns[k]];
		if (!pgq_pending(q))
			continue;
		/* pgq_send: a barrier, after everything queued there */
		c->barriers++;
		if (pgq_send(q, "SELECT 1", 0, NULL, on_barrier_ran, c))
			barrier_done(c, false);
	}
	barrier_done(c, true); /* the start's own count: the list goes when none is left */
}
