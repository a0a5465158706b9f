/*
 * claim.c - claim ready ops from the lanes of our reconciled vshards.
 *
 * One regular claim in flight at a time. outbox.claim picks lanes by their best
 * pending priority (a CRITICAL op never waits behind NORMAL or LOW work) and
 * never looks at ops queued behind a signer that already has a transaction
 * in flight (the lane's in_flight reservation). The batch is bounded by
 * OUTBOX_BATCH_SIZE and by the free slots of the global in-flight cap
 * (common/shm/inflight.h); a row that loses the race for a global slot is
 * given back at once with claim_release.
 *
 * A claim's rows are taken only for vshards whose lease generation is the
 * one the claim was sent under: a resync (or a lost lease) between sending
 * it and reading its answer may have reset the lanes before the claim
 * committed, or after, so its reservations are of unknown standing and the
 * vshard is reconciled again (after the claim, so the reset counts it).
 *
 * When to claim: at start of a vshard, after every job ends (its signer's
 * lane may hold more), on a CRITICAL NOTIFY or a NEW_OP hint (the oracle's
 * lane watcher, oracle/lane_watch.h, saw a lane signal or a due lane in one
 * of our vshards), on the sweep timer (OUTBOX_DISPATCH_INTERVAL_MS), and
 * again WORKER_LANE_POLL_MS after a claim that filled its batch (more may be
 * ready). NORMAL and LOW work has no NOTIFY (it would serialize every
 * enqueue commit on PostgreSQL's notify lock); one watcher per instance
 * looks for it instead of every worker polling (schema/
 * 0030_lanes_waiting.sql has the figures). Claims run on the control
 * connection, never queued behind job writes.
 *
 * While the watcher is silent (no WATCHING word within WORKER_WATCHED_MS:
 * the oracle restarting, its database connection down), a busy worker
 * polls as it did before the watcher: every WORKER_LANE_POLL_MS until
 * WORKER_BUSY_MS after the last claim that found work, through empty
 * claims too. An empty poll is read only: outbox.claim asks claim_ready
 * first and returns before any lock (schema/0027_claim_probe_first.sql); a
 * claim that takes rows takes the plainly takeable lanes in one statement
 * (schema/0029_claim_by_set.sql).
 *
 * A CRITICAL NOTIFY starts a CRITICAL-only claim (outbox.claim's
 * max_priority 0, schema/0024_claim_fence_once.sql) on the express
 * connection, at once, whether or not the regular claim is on the wire: on
 * a backlog the regular claim takes tens of milliseconds, and the op would
 * wait for it and then for the next one; and an idle regular claim, started
 * for the NOTIFY, would take a batch of NORMAL and LOW lanes with the
 * CRITICAL op, which then waits for the whole batch's statement (a CRITICAL
 * op's enqueue -> claim p99 on a backlog: see worker/README.md). At most one
 * claim of each kind is in flight; they skip each other's locked lanes, and
 * each records the lease generations it was sent under
 * (lease.claim_gen[kind]).
 *
 * OUTBOX_NORMAL_LOW_MAX_RATE caps the NORMAL and LOW ops the instance's
 * workers claim, each its even share (a token bucket, common/pace.h, with
 * 50 ms of the share as its burst): a regular claim takes at most the whole
 * tokens held, and with none held it goes out CRITICAL-only (max_priority
 * 0: the CRITICAL ops no NOTIFY announced, a retry come due or one whose
 * signer just came free, are never paced) and the next regular claim is
 * scheduled for when a token is there. The cap acts at the claim, not
 * later: an op not claimed holds no lane, so a CRITICAL op of the same
 * signer is never queued behind a paced one. Only a claim sent under the
 * cap spends tokens, so a change of the cap (SIGHUP) counts from the next
 * claim.
 */
#include "worker/worker.h"

#include "common/clock.h"
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
	K_CREATED,
	K_BASE,
	K_SEQ_HIGH
};

/*
 * A job for row r of a claim of kind k; false when the row is not taken
 * (its vshard is resynced).
 */
static bool take_row(struct worker *w, const PGresult *res, int r, enum claim_kind k)
{
	int v = atoi(PQgetvalue(res, r, K_VSHARD));
	struct signer *s;
	struct job *j;

	if (v < 0 || v >= w->nvshards || !w->leases[v].epoch)
		return false;
	if (w->leases[v].gen != w->leases[v].claim_gen[k]) {
		if (!w->leases[v].claim_resynced[k]) /* once per vshard and claim */
			leases_resync(w, v, "a claim raced a reconcile");
		w->leases[v].claim_resynced[k] = true;
		return false;
	}
	s = signers_get(w, PQgetvalue(res, r, K_SIGNER));
	j = s ? job_new(w, v) : NULL;
	if (!j) {
		leases_resync(w, v, "out of memory for a claimed op");
		return false;
	}
	j->op_id = strtoll(PQgetvalue(res, r, K_OP), NULL, 10);
	j->signer = s;
	if (inflight_try_acquire(w->ctx->seg, w->ctx->index, w->cfg->global_max_in_flight)) {
		stats_counter_add(w->stats, MET_INFLIGHT_DENIED, 1);
		job_give_back(j);
		return false;
	}
	w->inflight++;
	j->holds_slot = true;
	if (op_kind_parse(PQgetvalue(res, r, K_KIND), &j->kind) ||
	    (j->prio = (enum op_priority)atoi(PQgetvalue(res, r, K_PRIO))) >= OP_PRIO_COUNT) {
		job_give_back(j);
		return false;
	}
	snprintf(j->key, sizeof(j->key), "%s", PQgetvalue(res, r, K_KEY));
	snprintf(j->account, sizeof(j->account), "%s", PQgetvalue(res, r, K_ACCOUNT));
	snprintf(j->amount, sizeof(j->amount), "%s", PQgetvalue(res, r, K_AMOUNT));
	j->attempts = atoi(PQgetvalue(res, r, K_ATT));
	j->attempts_base = atoi(PQgetvalue(res, r, K_BASE));
	j->seq_high = PQgetisnull(res, r, K_SEQ_HIGH)
			      ? -1
			      : strtoll(PQgetvalue(res, r, K_SEQ_HIGH), NULL, 10);
	j->created_us = strtoll(PQgetvalue(res, r, K_CREATED), NULL, 10);
	j->created_ms = j->created_us / 1000;
	j->marks = (struct send_marks){.claim_sent = w->claim_sent_us[k], .claimed = mono_us()};
	j->claimed_ms = j->marks.claimed / 1000;
	j->st = J_CLAIMED;
	stats_counter_add(w->stats, MET_CLAIMS, 1);
	stats_hist_observe(w->stats, MET_ENQUEUE_TO_CLAIM_MS,
			   (uint64_t)((int64_t)wall_ms() - j->created_ms));
	/*
	 * A CRITICAL op builds now rather than at the loop's next jobs_tick:
	 * on a backlog the rest of this turn (RPC answers, other statements'
	 * results) can take milliseconds. Nothing it does depends on the
	 * rows after it.
	 */
	if (j->prio == OP_PRIO_CRITICAL)
		build_start(j);
	else if (k == CLAIM_ALL && w->claim_budget)
		(void)pace_spend(&w->pace, 1);
	return true;
}

/* The pace's share of this worker: thousandths of an op a second, and its burst. */
static int64_t pace_rate_milli(const struct worker *w)
{
	int64_t r = w->cfg->normal_low_max_rate * 1000 / w->cfg->workers;

	return r > 0 ? r : 1;
}

static int64_t pace_burst(const struct worker *w)
{
	int64_t b = w->cfg->normal_low_max_rate / w->cfg->workers / 20;

	return b > 0 ? b : 1;
}

/* Rows of a claim of kind k; false when it failed (logged, leases handled). */
static bool claimed(struct worker *w, PGresult *res, enum claim_kind k)
{
	int n;

	if (!res)
		return false;
	stats_hist_observe(w->stats, MET_CLAIM_MS,
			   (uint64_t)(mono_us() - w->claim_sent_us[k]) / 1000);
	if (!pgq_ok(res)) {
		log_warn("claim: %s %s", pgq_sqlstate(res), PQresultErrorMessage(res));
		if (!strcmp(pgq_sqlstate(res), "OB403"))
			for (int v = 0; v < w->nvshards; v++)
				if (w->leases[v].epoch)
					leases_resync(w, v, "claim fenced out");
		return false;
	}
	n = PQntuples(res);
	for (int r = 0; r < n; r++)
		(void)take_row(w, res, r, k);
	if (n > 0)
		w->last_found_ms = mono_ms();
	return true;
}

static void on_claim(PGresult *res, void *arg)
{
	struct worker *w = arg;

	w->claiming = false;
	if (!claimed(w, res, CLAIM_ALL)) {
		if (res)
			worker_schedule_claim(w, w->cfg->dispatch_interval_ms);
		return;
	}
	if (w->claim_again) {
		worker_schedule_claim(w, 0);
	} else if (PQntuples(res) >= w->claim_batch) {
		worker_schedule_claim(w, WORKER_LANE_POLL_MS); /* a full batch: more may be ready */
	} else if (w->claim_paced) {
		stats_counter_add(w->stats, MET_CLAIMS_PACED, 1);
		worker_schedule_claim(w, pace_wait_us(&w->pace, pace_rate_milli(w)) / 1000 + 1);
	} else if (!hints_watched(w) &&
		   (PQntuples(res) > 0 || mono_ms() - w->last_found_ms < WORKER_BUSY_MS)) {
		stats_counter_add(w->stats, MET_CLAIM_POLLS, 1);
		worker_schedule_claim(w, WORKER_LANE_POLL_MS);
	}
	w->claim_again = false;
}

static void on_claim_critical(PGresult *res, void *arg)
{
	struct worker *w = arg;
	bool again = w->urgent_again; /* a NOTIFY came while it ran: its op may be newer */

	w->urgent_claiming = w->urgent_again = false;
	if (claimed(w, res, CLAIM_CRITICAL) && again)
		claim_critical(w);
}

/*
 * Send a claim of kind k on q: the reconciled vshards' "{v,...}" and
 * "{epoch,...}", each lease's generation recorded for the answer. 0 when
 * sent; -1 when there is nothing to claim from or it cannot be sent.
 */
static int send_claim(struct worker *w, enum claim_kind k, struct pgq *q, pgq_cb cb)
{
	size_t cap = (size_t)w->nvshards * 24 + 4, a = 1, b = 1;
	char vs[cap], es[cap], pam[16], bat[16];
	const char *p[6] = {w->owner, vs, es, pam, bat, k == CLAIM_CRITICAL ? "0" : "2"};
	bool budget = false, paced = false;
	int64_t room = w->cfg->global_max_in_flight - inflight_total(w->ctx->seg);
	int64_t batch = w->cfg->batch_size;

	if (room <= 0) {
		stats_counter_add(w->stats, MET_INFLIGHT_DENIED, 1);
		return -1; /* a finishing job schedules the next claim */
	}
	if (batch > room)
		batch = room;
	if (k == CLAIM_ALL && w->cfg->normal_low_max_rate > 0) {
		int64_t held = pace_refill(&w->pace, mono_us(), pace_rate_milli(w), pace_burst(w));

		if (held < 1) {
			p[5] = "0"; /* CRITICAL only until a token is there */
			paced = true;
		} else {
			budget = true;
			if (batch > held)
				batch = held;
		}
	}
	vs[0] = es[0] = '{';
	for (int v = 0; v < w->nvshards; v++) {
		if (!w->leases[v].epoch || !w->leases[v].reconciled)
			continue;
		a += (size_t)snprintf(vs + a, cap - a, "%s%d", a > 1 ? "," : "", v);
		b += (size_t)snprintf(es + b, cap - b, "%s%lld", b > 1 ? "," : "",
				      (long long)w->leases[v].epoch);
		w->leases[v].claim_gen[k] = w->leases[v].gen;
		w->leases[v].claim_resynced[k] = false;
	}
	if (a == 1)
		return -1;
	snprintf(vs + a, cap - a, "}");
	snprintf(es + b, cap - b, "}");
	snprintf(pam, sizeof(pam), "%lld", (long long)w->cfg->per_account_max_in_flight);
	snprintf(bat, sizeof(bat), "%lld", (long long)batch);
	if (k == CLAIM_ALL) {
		w->claim_batch = batch;
		w->claim_budget = budget;
		w->claim_paced = paced;
	}
	w->claim_sent_us[k] = mono_us();
	return pgq_send(
		q,
		"SELECT op_id, vshard, signer, kind, priority, idempotency_key, "
		"payload->>'account', payload->>'amount', attempts, fee_bumps, "
		"(extract(epoch from created_at) * 1000000)::bigint, attempts_base, seq_high "
		"FROM outbox.claim($1, $2::int[], $3::bigint[], $4::int, $5::int, $6::int)",
		6, p, cb, w);
}

void claim_tick(struct worker *w)
{
	if (w->claiming || !w->pg_up || w->loop.draining)
		return;
	w->claiming = send_claim(w, CLAIM_ALL, &w->pg[0], on_claim) == 0;
}

void claim_critical(struct worker *w)
{
	if (w->urgent_claiming) {
		w->urgent_again = true;
		return;
	}
	if (!w->pg_up || w->loop.draining)
		return;
	w->urgent_claiming =
		send_claim(w, CLAIM_CRITICAL, &w->pg[WORKER_PG_EXPRESS], on_claim_critical) == 0;
	if (w->urgent_claiming)
		stats_counter_add(w->stats, MET_CRITICAL_CLAIMS, 1);
}
