/*
 * hints.c - what other roles tell the worker through the shared-memory
 * rings: work to claim (NEW_OP: claim now) and that its lanes are watched
 * (WATCHING), from the oracle's lane watcher (oracle/lane_watch.h), and
 * landed hashes from the oracle's ledger follower (oracle/follower.c), which
 * reads every closed ledger anyway.
 *
 * A landed hash one of our jobs follows settles that job at once (a SUCCESS
 * needs nothing else: the ledger is closed and the hash is one of the job's
 * envelopes; a FAILED one is looked up for its result code). A landed hash
 * no job follows goes to outbox.attempt_landed, whatever state its attempt
 * is in: the op may have been held for exactly that answer (it resolves),
 * or it had moved on (proven dead, superseded: the alarm that must never
 * ring while common/fate.h holds, recorded and logged loudly).
 */
#include "worker/worker.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/layout.h"
#include "common/shm/spsc_ring.h"
#include "common/stellar/classify.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct late {
	struct worker *w;
	char hash[65];
	uint32_t ledger;
	uint64_t aux;
};

static void on_late_recorded(PGresult *res, void *arg)
{
	struct late *l = arg;

	if (res && pgq_ok(res) && PQntuples(res) == 1) {
		const char *what = PQgetvalue(res, 0, 0);
		if (!strcmp(what, "ALARM")) {
			stats_counter_add(l->w->stats, MET_LANDED_LATE, 1);
			log_err("ALARM: tx %s landed in ledger %u after outboxd had decided it "
				"could "
				"not; its op is recorded as HELD (or CONFIRMED twice)",
				l->hash, l->ledger);
		} else if (!strcmp(what, "RESOLVED")) {
			log_info("tx %.12s landed in ledger %u: its held op is resolved", l->hash,
				 l->ledger);
		}
	} else if (res && strcmp(pgq_sqlstate(res), "OB403")) {
		log_warn("attempt_landed %.12s: %s", l->hash, PQresultErrorMessage(res));
	}
	free(l);
}

/* Let PostgreSQL settle a landing no job follows (code: a failure's result code, or NULL). */
static void late_record(struct late *l, const char *code)
{
	struct worker *w = l->w;
	size_t cap = (size_t)w->nvshards * 24 + 4;
	char *vs = malloc(cap), *es = malloc(cap), led[16], fee[24];
	const char *p[7] = {w->owner, vs, es, l->hash, led, fee, code};

	snprintf(led, sizeof(led), "%u", l->ledger);
	snprintf(fee, sizeof(fee), "%llu", (unsigned long long)SHM_HINT_AUX_FEE(l->aux));
	if (!vs || !es || !leases_arrays(w, vs, es, cap) || !w->pg_up ||
	    pgq_send(&w->pg[0],
		     "SELECT outbox.attempt_landed($1, $2::int[], $3::bigint[], $4, $5::int, "
		     "$6::bigint, $7)",
		     7, p, on_late_recorded, l))
		free(l);
	free(vs);
	free(es);
}

/* A failed landing's result code, looked up: then settle it. */
static void on_late_get(struct rpc_result *r, void *arg)
{
	struct late *l = arg;
	struct tx_result tr;
	bool ok = r->status == RPC_OK && r->u.get_tx.result_xdr &&
		  !tx_result_decode_b64(&tr, r->u.get_tx.result_xdr, NULL);
	struct outcome o = classify_get(RPC_TX_FAILED, ok ? &tr : NULL);
	char code[64];

	snprintf(code, sizeof(code), "%s", o.reason ? o.reason : "txFAILED");
	late_record(l, code);
}

/*
 * No job follows tx_hash: let PostgreSQL settle it. A success needs nothing
 * more than the hint (the ledger is closed); a failure's result code comes
 * from a lookup.
 */
static void late_landing(struct worker *w, const char *tx_hash, uint32_t ledger, uint64_t aux)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct late *l = calloc(1, sizeof(*l));
	struct rpc_request req = {.method = RPC_GET_TRANSACTION};

	if (!l)
		return;
	*l = (struct late){.w = w, .ledger = ledger, .aux = aux};
	memcpy(l->hash, tx_hash, 65);
	if (SHM_HINT_AUX_STATUS(aux) == SHM_HINT_LANDED_SUCCESS) {
		late_record(l, NULL);
		return;
	}
	req.hash = l->hash;
	if (rpc_call_start(w->rpc, &req, on_late_get, l, &err))
		free(l);
}

void hint_landed(struct worker *w, const char *tx_hash, uint32_t ledger, uint64_t aux,
		 int64_t op_id)
{
	struct job *j = tx_index_find(w, tx_hash);

	if (!ledger)
		return;
	if (!j || j->st == J_FINISHING) {
		/* reconcile adopts what is still LIVE; the database settles the rest */
		if (op_id > 0)
			late_landing(w, tx_hash, ledger, aux);
		return;
	}
	if (j->landed.hash[0])
		return;
	memcpy(j->landed.hash, tx_hash, 65);
	j->landed.ledger = ledger;
	j->landed.fee_charged = (int64_t)SHM_HINT_AUX_FEE(aux);
	j->landed.success = SHM_HINT_AUX_STATUS(aux) == SHM_HINT_LANDED_SUCCESS;
	j->landed.need_result = !j->landed.success;
	j->facts.found = true;
	j->facts.found_success = j->landed.success;
	j->facts.found_ledger = ledger;
	job_due(j, 0);
}

/*
 * The follower's word: every landed hash of ours in ledgers from..to is in
 * the ring before it. Hints popped by a predecessor of this process are not
 * ours to know, so this process's coverage starts after the first word it
 * reads; `from` only grows (a hint the follower lost, a restart at the tip).
 */
static void followed(struct worker *w, uint32_t from, uint32_t to)
{
	if (!w->followed_ms)
		w->followed_from = to + 1;
	if (from > w->followed_from)
		w->followed_from = from;
	if (to > w->followed_to)
		w->followed_to = to;
	w->followed_ms = mono_ms();
}

bool hints_cover(const struct worker *w, uint32_t sent_after)
{
	return sent_after && w->followed_ms && w->followed_from <= sent_after + 1 &&
	       mono_ms() - w->followed_ms <= WORKER_FOLLOWED_MS;
}

bool hints_watched(const struct worker *w)
{
	return w->watched_ms && mono_ms() - w->watched_ms <= WORKER_WATCHED_MS;
}

bool hints_waiting(const struct worker *w)
{
	for (int pr = 0; pr < SHM_N_PRODUCERS; pr++)
		if (w->ring_ok[pr] && spsc_ring_fill(w->rings[pr].r) > 0)
			return true;
	return false;
}

void hints_read(struct worker *w)
{
	struct shm_hint h[32];
	char hex[65];
	unsigned n;

	for (int pr = 0; pr < SHM_N_PRODUCERS; pr++) {
		if (!w->ring_ok[pr])
			continue;
		while ((n = spsc_ring_pop_batch(&w->rings[pr], h, 32)) > 0) {
			for (unsigned i = 0; i < n; i++) {
				if (h[i].type != SHM_HINT_FOLLOWED)
					stats_counter_add(w->stats, MET_HINTS_RECEIVED, 1);
				if (h[i].type == SHM_HINT_NEW_OP) {
					worker_schedule_claim(w, 0);
				} else if (h[i].type == SHM_HINT_TX_LANDED) {
					sodium_bin2hex(hex, sizeof(hex), h[i].tx_hash, 32);
					hint_landed(w, hex, h[i].ledger, h[i].aux,
						    (int64_t)h[i].op_id);
				} else if (h[i].type == SHM_HINT_FOLLOWED) {
					followed(w, (uint32_t)h[i].aux, h[i].ledger);
				} else if (h[i].type == SHM_HINT_WATCHING) {
					w->watched_ms = mono_ms();
				}
			}
		}
	}
}
