/*
 * follower.c - see follower.h.
 */
#include "oracle/follower.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/pgq.h"
#include "common/shm/hint_out.h"
#include "common/shm/layout.h"
#include "common/stellar/txresult.h"
#include "common/vshard.h"

#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOLLOWER_IDLE_MS 250 /* poll for new ledgers this often when caught up */
#define FOLLOWER_PAGE    200
#define FOLLOWER_HASHES  FOLLOWER_PAGE

struct follower {
	struct child_ctx *ctx;
	struct rpc_client *rpc;
	struct pgq pg;
	bool query_busy, rpc_busy, started;
	uint32_t start_ledger;
	char cursor[RPC_CURSOR_MAX];
	int64_t next_ms;
	struct hint_out out; /* the oracle's rings (the lane watcher pushes through them too) */
	/* hashes of the page waiting for attempt_lookup */
	char hashes[FOLLOWER_HASHES][65];
	uint32_t ledgers[FOLLOWER_HASHES];
	uint64_t aux[FOLLOWER_HASHES]; /* SHM_HINT_AUX(status, fee charged) */
	size_t n_hashes;
	/*
	 * Coverage: every transaction of ledgers covered_from[w]..covered_to
	 * that is ours and worker w's has been hinted to w. The page waiting
	 * extends it to page_to (page_last: its newest transaction's ledger).
	 * A hint lost to w (full ring, failed lookup, restart at the tip)
	 * moves covered_from[w] past it.
	 */
	uint32_t covered_to, page_to, page_last;
	uint32_t covered_from[SHM_MAX_WORKERS];
};

struct follower *follower_new(struct child_ctx *ctx, struct rpc_client *rpc, int ep, uint64_t tag)
{
	struct follower *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (pgq_init(&f->pg, ctx->cfg->database_url, "outboxd-follower", ep, tag, NULL, NULL, f)) {
		free(f);
		return NULL;
	}
	f->ctx = ctx;
	f->rpc = rpc;
	hint_out_attach(&f->out, ctx->seg, ctx->doorbells, shm_stats_block(ctx->seg, ctx->proc),
			SHM_PRODUCER_ORACLE, (uint32_t)ctx->cfg->workers);
	return f;
}

/* Hints to worker w of ledgers up to `ledger` may be lost: its coverage starts after it. */
static void lost(struct follower *f, int w, uint32_t ledger)
{
	if (w >= 0 && w < SHM_MAX_WORKERS && f->covered_from[w] <= ledger)
		f->covered_from[w] = ledger + 1;
}

static void lost_all(struct follower *f, uint32_t ledger)
{
	for (int w = 0; w < SHM_MAX_WORKERS; w++)
		lost(f, w, ledger);
}

/*
 * The page is done (its hints pushed): tell every worker which ledgers are
 * covered, so it need not look its transactions up itself (worker/follow.c).
 * No doorbell: the worker reads its rings every turn, and nothing waits on
 * this record.
 */
static void covered(struct follower *f)
{
	if (f->page_to > f->covered_to)
		f->covered_to = f->page_to;
	for (int w = 0; w < (int)f->ctx->cfg->workers && w < SHM_MAX_WORKERS; w++) {
		struct shm_hint h = {.type = SHM_HINT_FOLLOWED,
				     .ledger = f->covered_to,
				     .aux = f->covered_from[w]};
		struct spsc_ring *r = hint_out_ring(&f->out, w);

		if (r && f->covered_from[w] && f->covered_from[w] <= f->covered_to)
			spsc_ring_push(r, &h);
	}
}

static void hint(struct follower *f, const char *hash, uint32_t ledger, uint64_t aux, int vshard,
		 int64_t op_id)
{
	struct shm_hint h = {
		.type = SHM_HINT_TX_LANDED, .ledger = ledger, .aux = aux, .op_id = (uint64_t)op_id};
	int w = outbox_vshard_owner(vshard, (int)f->ctx->cfg->workers);

	if (!hint_out_ring(&f->out, w) || sodium_hex2bin(h.tx_hash, 32, hash, 64, NULL, NULL, NULL))
		return;
	if (hint_out_send(&f->out, w, &h, true))
		lost(f, w, ledger);
}

int follower_push_soft(struct follower *f, int w, const struct shm_hint *h, bool ring)
{
	struct spsc_ring *r = hint_out_ring(&f->out, w);

	if (!r)
		return -EINVAL;
	if (spsc_ring_fill(r->r) > r->mask / 4)
		return -ENOSPC;
	return hint_out_send(&f->out, w, h, ring) ? -ENOSPC : 0;
}

static size_t index_of(const struct follower *f, const char *hash)
{
	for (size_t i = 0; i < f->n_hashes; i++)
		if (!strcmp(f->hashes[i], hash))
			return i;
	return SIZE_MAX;
}

/*
 * The page's lookup answered: hint what is ours and go on to the next page.
 * NULL (the connection was lost): the page stays and is asked again.
 */
static void lookup_done(PGresult *r, void *arg)
{
	struct follower *f = arg;

	f->query_busy = false;
	if (!r)
		return;
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_warn("follower: attempt_lookup: %s", PQresultErrorMessage(r));
		f->n_hashes = 0;
		lost_all(f, f->page_last > f->page_to ? f->page_last : f->page_to);
		return;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		const char *h = PQgetvalue(r, i, 0);
		size_t k = index_of(f, h);
		if (k != SIZE_MAX)
			hint(f, h, f->ledgers[k], f->aux[k], atoi(PQgetvalue(r, i, 2)),
			     strtoll(PQgetvalue(r, i, 1), NULL, 10));
	}
	f->n_hashes = 0;
	covered(f);
}

void follower_on_ready(struct follower *f, uint32_t events)
{
	pgq_on_ready(&f->pg, events);
}

/* Ask PostgreSQL which of the page's hashes are ours. */
static void lookup(struct follower *f)
{
	size_t cap = f->n_hashes * 68 + 4, o = 0;
	char *arr;
	const char *p[1];

	if (!f->n_hashes || !pgq_connected(&f->pg))
		return; /* kept; retried next tick */
	arr = malloc(cap);
	if (!arr)
		return;
	arr[o++] = '{';
	for (size_t i = 0; i < f->n_hashes; i++)
		o += (size_t)snprintf(arr + o, cap - o, "%s%s", i ? "," : "", f->hashes[i]);
	snprintf(arr + o, cap - o, "}");
	p[0] = arr;
	if (pgq_send(&f->pg, "SELECT tx_hash, op_id, vshard FROM outbox.attempt_lookup($1::text[])",
		     1, p, lookup_done, f) == 0)
		f->query_busy = true;
	free(arr);
}

static void on_page(struct rpc_result *r, void *arg)
{
	struct follower *f = arg;

	f->rpc_busy = false;
	f->next_ms = mono_ms() + FOLLOWER_IDLE_MS;
	if (r->status != RPC_OK) {
		if (r->status != RPC_E_CANCELLED)
			log_debug("follower: getTransactions: %s", r->err.msg);
		/* Outside the retention window (or a bad cursor): restart at the tip. */
		if (r->status == RPC_E_JSONRPC) {
			f->started = false;
			f->cursor[0] = '\0';
		}
		return;
	}
	const struct rpc_get_txs *g = &r->u.get_txs;
	f->page_last = 0;
	for (size_t i = 0; i < g->n_txs && f->n_hashes < FOLLOWER_HASHES; i++) {
		const struct rpc_tx_info *t = &g->txs[i];
		struct tx_result tr = {0};
		if (t->result_xdr)
			tx_result_decode_b64(&tr, t->result_xdr, NULL);
		snprintf(f->hashes[f->n_hashes], 65, "%s", t->tx_hash);
		f->ledgers[f->n_hashes] = t->ledger;
		f->aux[f->n_hashes++] =
			SHM_HINT_AUX(t->status == RPC_TX_SUCCESS ? SHM_HINT_LANDED_SUCCESS
								 : SHM_HINT_LANDED_FAILED,
				     tr.fee_charged > 0 ? (uint64_t)tr.fee_charged : 0);
		if (t->ledger > f->page_last)
			f->page_last = t->ledger;
	}
	if (g->cursor[0])
		snprintf(f->cursor, sizeof(f->cursor), "%s", g->cursor);
	/* a short page read everything up to the node's latest ledger; a full one, short of its last */
	f->page_to = g->n_txs < FOLLOWER_PAGE ? g->latest_ledger
		     : f->page_last           ? f->page_last - 1
					      : 0;
	if (g->n_txs >= FOLLOWER_PAGE)
		f->next_ms = mono_ms(); /* more to read */
	if (f->n_hashes)
		lookup(f);
	else
		covered(f);
}

static void on_health(struct rpc_result *r, void *arg)
{
	struct follower *f = arg;

	f->rpc_busy = false;
	f->next_ms = mono_ms() + FOLLOWER_IDLE_MS;
	if (r->status == RPC_OK && r->u.health.latest_ledger) {
		f->start_ledger = r->u.health.latest_ledger;
		f->started = true;
		/* ledgers before the start (a restart at the tip skips some) are not followed */
		lost_all(f, f->start_ledger - 1);
		if (f->covered_to < f->start_ledger - 1)
			f->covered_to = f->start_ledger - 1;
	}
}

void follower_tick(struct follower *f)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_HEALTH};
	rpc_done_fn cb = on_health;

	/*
	 * Connect when a page waits for its lookup, and go on driving a connect
	 * under way (pgq_tick gives up at its deadline); an idle follower holds
	 * no connection attempt open.
	 */
	if (f->n_hashes || f->pg.conn)
		pgq_tick(&f->pg, mono_ms());
	if (f->n_hashes && !f->query_busy)
		lookup(f);
	if (f->rpc_busy || f->query_busy || f->n_hashes || mono_ms() < f->next_ms)
		return;
	if (f->started) {
		req = (struct rpc_request){.method = RPC_GET_TRANSACTIONS,
					   .start_ledger = f->start_ledger,
					   .cursor = f->cursor[0] ? f->cursor : NULL,
					   .limit = FOLLOWER_PAGE};
		cb = on_page;
	}
	if (rpc_call_start(f->rpc, &req, cb, f, &err) == 0)
		f->rpc_busy = true;
	else
		f->next_ms = mono_ms() + FOLLOWER_IDLE_MS;
}

int follower_timeout_ms(const struct follower *f)
{
	int64_t t = f->next_ms - mono_ms();

	/*
	 * A call in flight ends with an event on its fd (the RPC client's or
	 * the connection's): until then there is nothing to do, even when the
	 * next page is due (the oracle's loop would spin for a slow answer).
	 */
	if (f->rpc_busy || f->query_busy)
		t = 1000;
	/* a waiting page: its lookup goes out at once, or pgq_tick (re)connects */
	if (f->n_hashes && !f->query_busy)
		t = pgq_connected(&f->pg) ? 0 : FOLLOWER_IDLE_MS;
	return t < 0 ? 0 : t > 1000 ? 1000 : (int)t;
}

void follower_free(struct follower *f)
{
	if (!f)
		return;
	pgq_release(&f->pg);
	free(f);
}
