/*
 * reconcile.c - adopt a vshard's SUBMITTED ops before claiming anything.
 *
 * reconcile_list (fenced) returns the LIVE attempts of the vshard's SUBMITTED
 * ops and resets the lanes' reservations to what is SUBMITTED, so whatever a
 * predecessor (a crashed worker, a dead instance, or ourselves before a lost
 * connection) left behind is accounted for. Each op becomes a follow-only
 * job over its attempt rows: it re-sends the same envelopes and ends the op
 * exactly as follow.c does (confirm, fail, or prove expiry and hand the op
 * back to PENDING). Besides reconcile_list it reads, per op, the highest
 * bump number recorded (outbox.attempts, a plain read), so a later fee
 * bump never reuses one. Ops without a LIVE attempt (their predecessor died
 * between attempt_decide and op_retry_later) go back to PENDING at once.
 */
#include "worker/worker.h"

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
};

enum { C_OP, C_SIGNER, C_HASH, C_INNER, C_BUMP, C_ENV, C_SEQ, C_MAXT, C_FEE, C_ATT, C_MAXBUMP };

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

static void adopt_row(struct worker *w, int v, const PGresult *res, int r)
{
	int64_t op = strtoll(PQgetvalue(res, r, C_OP), NULL, 10);
	struct job *j = job_for(w, v, op);
	int bump = atoi(PQgetvalue(res, r, C_BUMP));
	char *b64;

	if (!j) {
		struct signer *s = signers_get(w, PQgetvalue(res, r, C_SIGNER));
		if (!s || !(j = job_new(w, v)))
			return;
		j->op_id = op;
		j->signer = s;
		s->seq_valid = false;
		j->reconciled = true;
		j->st = J_FOLLOW;
		j->first_sent_ms = pgq_now_ms();
		j->due_ms = 0;
		if (inflight_try_acquire(w->ctx->seg, w->ctx->index,
					 w->cfg->global_max_in_flight) == 0) {
			j->holds_slot = true;
			w->inflight++;
		}
	}
	if (PQgetisnull(res, r, C_HASH)) {
		j->n_live = -1; /* no live attempt: back to PENDING */
		return;
	}
	if (j->n_live < 0 || j->n_live > WORKER_MAX_BUMPS || bump > WORKER_MAX_BUMPS)
		return;
	b64 = strdup(PQgetvalue(res, r, C_ENV));
	if (!b64)
		return;
	j->attempt_no = atoi(PQgetvalue(res, r, C_ATT));
	j->attempts = j->attempt_no;
	j->seq = strtoll(PQgetvalue(res, r, C_SEQ), NULL, 10);
	j->max_time = strtoll(PQgetvalue(res, r, C_MAXT), NULL, 10);
	snprintf(j->live_hash[j->n_live], 65, "%s", PQgetvalue(res, r, C_HASH));
	j->live_b64[j->n_live] = b64;
	if (bump == 0) {
		snprintf(j->inner_hash, 65, "%s", PQgetvalue(res, r, C_INNER));
		j->inner_b64 = b64;
		inner_fees(j, b64);
	}
	if (!j->cur_b64 || bump >= j->cur_bump) {
		j->cur_bump = bump;
		j->cur_b64 = b64;
		j->last_fee = strtoll(PQgetvalue(res, r, C_FEE), NULL, 10);
	}
	/* every bump number ever used, rejected ones included (a plain read of
	 * outbox.attempts), so the next bump's number is new */
	j->bump_no = atoi(PQgetvalue(res, r, C_MAXBUMP));
	j->n_live++;
}

static void on_list(PGresult *res, void *arg)
{
	struct rec_ctx *c = arg;
	struct worker *w = c->w;
	int v = c->vshard, n;

	w->leases[v].reconciling = false;
	if (c->gen != w->leases[v].gen || !w->leases[v].epoch) {
		free(c);
		return;
	}
	free(c);
	if (!pgq_ok(res)) {
		if (res && !strcmp(pgq_sqlstate(res), "OB403"))
			leases_lost(w, v, "reconcile fenced out");
		else if (res)
			log_err("vshard %d: reconcile_list: %s", v, PQresultErrorMessage(res));
		return; /* not reconciled: retried by the next acquire round */
	}
	n = PQntuples(res);
	for (int r = 0; r < n; r++)
		adopt_row(w, v, res, r);
	for (struct job *j = w->jobs, *next; j; j = next) {
		next = j->next;
		if (j->vshard != v || !j->reconciled || j->busy || j->st != J_FOLLOW)
			continue;
		if (j->n_live < 0) {
			j->n_live = 0;
			job_retry_later(j, 0, "recovered without a live attempt", false);
		} else if (j->n_live == 0 || !j->inner_b64) {
			leases_resync(w, v, "reconcile: attempt rows without an inner tx");
			return;
		}
	}
	if (n)
		log_info("vshard %d: reconciled, %d live attempt rows adopted", v, n);
	w->leases[v].reconciled = true;
	worker_schedule_claim(w, 0);
}

void reconcile_start(struct worker *w, int v)
{
	struct rec_ctx *c = malloc(sizeof(*c));
	char vs[16], es[24];
	const char *p[3] = {w->owner, vs, es};

	if (!c)
		return;
	*c = (struct rec_ctx){w, v, w->leases[v].gen};
	snprintf(vs, sizeof(vs), "%d", v);
	snprintf(es, sizeof(es), "%lld", (long long)w->leases[v].epoch);
	if (pgq_send(worker_pg(w, v),
		     "SELECT r.op_id, r.signer, r.tx_hash, r.inner_tx_hash, r.bump_no, "
		     "r.envelope_xdr, r.source_sequence, r.max_time, r.fee, r.attempt_no, "
		     "(SELECT max(x.bump_no) FROM outbox.attempts x WHERE x.op_id = r.op_id AND "
		     "x.attempt_no = r.attempt_no) "
		     "FROM outbox.reconcile_list($1, $2::int, $3::bigint) r ORDER BY r.op_id, "
		     "r.bump_no",
		     3, p, on_list, c)) {
		free(c);
		return;
	}
	w->leases[v].reconciling = true;
}
