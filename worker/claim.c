/*
 * claim.c - claim ready ops from the lanes of our reconciled vshards.
 *
 * One claim in flight at a time. outbox.claim picks lanes by their best
 * pending priority (a CRITICAL op never waits behind NORMAL or LOW work) and
 * never looks at ops queued behind a signer that already has a transaction
 * in flight (the lane's in_flight reservation). The batch is bounded by
 * OUTBOX_BATCH_SIZE and by the free slots of the global in-flight cap
 * (common/shm/inflight.h); a row that loses the race for a global slot is
 * given back at once with claim_release.
 *
 * When to claim: at start of a vshard, after every job ends (its signer's
 * lane may hold more), on a CRITICAL NOTIFY or a doorbell, on the sweep
 * timer (OUTBOX_DISPATCH_INTERVAL_MS), and every WORKER_LANE_POLL_MS while
 * busy (a claim found work within WORKER_BUSY_MS): NORMAL and LOW work has
 * no NOTIFY (it would serialize every enqueue commit on PostgreSQL's
 * notify lock), so a busy worker polls, while an idle PostgreSQL sees one
 * cheap query per sweep and worker. Claims run on the control connection,
 * never queued behind job writes. bench_dispatch measured enqueue-to-claim
 * p50/p99 of 10/28 ms with a 5 ms busy poll (the enqueue's own commit is
 * part of that), against 10/83 ms (p99 639 ms once the sweep was the only
 * trigger left) when only a claim that found rows re-polled.
 */
#include "worker/worker.h"

#include "common/log.h"
#include "common/shm/inflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	K_OP,
	K_VSHARD,
	K_SIGNER,
	K_KIND,
	K_PRIO,
	K_KEY,
	K_ACCOUNT,
	K_AMOUNT,
	K_ATT,
	K_BUMPS,
	K_CREATED
};

static void on_release(PGresult *res, void *arg)
{
	(void)arg;
	if (res && !pgq_ok(res))
		log_warn("claim_release: %s", PQresultErrorMessage(res));
}

/* A claimed op we will not work on: its reservation (and its claim stamp) go back. */
static void give_back(struct worker *w, int v, const char *signer, const char *op_id)
{
	char vs[16], es[24], ids[32];
	const char *p[6] = {w->owner, vs, es, signer, "1", ids};

	snprintf(vs, sizeof(vs), "%d", v);
	snprintf(es, sizeof(es), "%lld", (long long)w->leases[v].epoch);
	snprintf(ids, sizeof(ids), "{%s}", op_id);
	pgq_send_batch(
		worker_pg(w, v),
		"SELECT outbox.claim_release($1, $2::int, $3::bigint, $4, $5::int, $6::bigint[])",
		6, p, on_release, NULL);
}

static bool take_row(struct worker *w, const PGresult *res, int r)
{
	int v = atoi(PQgetvalue(res, r, K_VSHARD));
	enum op_kind kind;
	enum op_priority prio;
	struct signer *s;
	struct job *j;

	if (v < 0 || v >= w->nvshards || !w->leases[v].epoch)
		return false;
	if (!w->leases[v].reconciled) {
		/*
		 * A resync began while the claim ran (on connection 0): the
		 * reconcile may already have read the lanes, so hand the
		 * reservation back on v's connection, behind the reconcile.
		 */
		give_back(w, v, PQgetvalue(res, r, K_SIGNER), PQgetvalue(res, r, K_OP));
		return false;
	}
	if (inflight_try_acquire(w->ctx->seg, w->ctx->index, w->cfg->global_max_in_flight)) {
		stats_counter_add(w->stats, MET_INFLIGHT_DENIED, 1);
		give_back(w, v, PQgetvalue(res, r, K_SIGNER), PQgetvalue(res, r, K_OP));
		return false;
	}
	s = signers_get(w, PQgetvalue(res, r, K_SIGNER));
	j = s ? job_new(w, v) : NULL;
	if (!j || op_kind_parse(PQgetvalue(res, r, K_KIND), &kind) ||
	    (prio = (enum op_priority)atoi(PQgetvalue(res, r, K_PRIO))) >= OP_PRIO_COUNT) {
		inflight_release(w->ctx->seg, w->ctx->index);
		give_back(w, v, PQgetvalue(res, r, K_SIGNER), PQgetvalue(res, r, K_OP));
		if (j)
			job_finish(j);
		return false;
	}
	w->inflight++;
	j->holds_slot = true;
	j->op_id = strtoll(PQgetvalue(res, r, K_OP), NULL, 10);
	j->signer = s;
	j->kind = kind;
	j->prio = prio;
	snprintf(j->key, sizeof(j->key), "%s", PQgetvalue(res, r, K_KEY));
	snprintf(j->account, sizeof(j->account), "%s", PQgetvalue(res, r, K_ACCOUNT));
	snprintf(j->amount, sizeof(j->amount), "%s", PQgetvalue(res, r, K_AMOUNT));
	j->attempts = atoi(PQgetvalue(res, r, K_ATT));
	j->fee_bumps = atoi(PQgetvalue(res, r, K_BUMPS));
	j->created_ms = strtoll(PQgetvalue(res, r, K_CREATED), NULL, 10);
	j->claimed_ms = pgq_now_ms();
	j->st = J_NEW;
	stats_counter_add(w->stats, MET_CLAIMS, 1);
	stats_hist_observe(w->stats, MET_ENQUEUE_TO_CLAIM_MS,
			   (uint64_t)((int64_t)shm_realtime_ms() - j->created_ms));
	return true;
}

static void on_claim(PGresult *res, void *arg)
{
	struct worker *w = arg;
	int n;

	w->claiming = false;
	if (!res)
		return;
	if (!pgq_ok(res)) {
		log_warn("claim: %s %s", pgq_sqlstate(res), PQresultErrorMessage(res));
		if (!strcmp(pgq_sqlstate(res), "OB403"))
			for (int v = 0; v < w->nvshards; v++)
				if (w->leases[v].epoch)
					leases_resync(w, v, "claim fenced out");
		worker_schedule_claim(w, w->cfg->dispatch_interval_ms);
		return;
	}
	n = PQntuples(res);
	for (int r = 0; r < n; r++)
		(void)take_row(w, res, r);
	if (n > 0)
		w->last_found_ms = pgq_now_ms();
	if (w->claim_again)
		worker_schedule_claim(w, 0);
	else if (n > 0 || pgq_now_ms() - w->last_found_ms < WORKER_BUSY_MS)
		worker_schedule_claim(w, WORKER_LANE_POLL_MS);
	w->claim_again = false;
}

void claim_tick(struct worker *w)
{
	size_t cap = (size_t)w->nvshards * 24 + 4, a = 1, b = 1;
	char vs[cap], es[cap], pam[16], bat[16];
	const char *p[5] = {w->owner, vs, es, pam, bat};
	int64_t room = w->cfg->global_max_in_flight - inflight_total(w->ctx->seg);
	int64_t batch = w->cfg->batch_size;

	if (w->claiming || !w->pg_up || w->draining)
		return;
	if (room <= 0) {
		stats_counter_add(w->stats, MET_INFLIGHT_DENIED, 1);
		return; /* a finishing job schedules the next claim */
	}
	if (batch > room)
		batch = room;
	vs[0] = es[0] = '{';
	for (int v = 0; v < w->nvshards; v++) {
		if (!w->leases[v].epoch || !w->leases[v].reconciled)
			continue;
		a += (size_t)snprintf(vs + a, cap - a, "%s%d", a > 1 ? "," : "", v);
		b += (size_t)snprintf(es + b, cap - b, "%s%lld", b > 1 ? "," : "",
				      (long long)w->leases[v].epoch);
	}
	if (a == 1)
		return;
	snprintf(vs + a, cap - a, "}");
	snprintf(es + b, cap - b, "}");
	snprintf(pam, sizeof(pam), "%lld", (long long)w->cfg->per_account_max_in_flight);
	snprintf(bat, sizeof(bat), "%lld", (long long)batch);
	if (pgq_send(&w->pg[0],
		     "SELECT op_id, vshard, signer, kind, priority, idempotency_key, "
		     "payload->>'account', payload->>'amount', attempts, fee_bumps, "
		     "(extract(epoch from created_at) * 1000)::bigint "
		     "FROM outbox.claim($1, $2::int[], $3::bigint[], $4::int, $5::int)",
		     5, p, on_claim, w) == 0)
		w->claiming = true;
}
