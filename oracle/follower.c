/*
 * follower.c - see follower.h.
 */
#include "oracle/follower.h"

#include "common/backoff.h"
#include "common/log.h"
#include "common/shm/doorbell.h"
#include "common/shm/layout.h"
#include "common/shm/spsc_ring.h"
#include "common/shm/stats.h"
#include "common/stellar/txresult.h"

#include <errno.h>
#include <stdint.h>
#include <libpq-fe.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#define FOLLOWER_IDLE_MS   250 /* poll for new ledgers this often when caught up */
#define FOLLOWER_PAGE      200
#define FOLLOWER_HASHES    FOLLOWER_PAGE
#define FOLLOWER_PG_MAX_MS 5000

struct follower {
	struct child_ctx *ctx;
	struct rpc_client *rpc;
	int ep;
	PGconn *pg;
	int pg_fd;
	uint32_t pg_failures;
	int64_t pg_retry_ms;
	bool query_busy, rpc_busy, started;
	uint32_t start_ledger;
	char cursor[RPC_CURSOR_MAX];
	int64_t next_ms;
	struct spsc_ring rings[SHM_MAX_WORKERS];
	bool ring_ok[SHM_MAX_WORKERS];
	/* hashes of the page waiting for attempt_lookup */
	char hashes[FOLLOWER_HASHES][65];
	uint32_t ledgers[FOLLOWER_HASHES];
	uint64_t aux[FOLLOWER_HASHES]; /* SHM_HINT_AUX(status, fee charged) */
	size_t n_hashes;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct follower *follower_new(struct child_ctx *ctx, struct rpc_client *rpc, int ep)
{
	struct follower *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->ctx = ctx;
	f->rpc = rpc;
	f->ep = ep;
	f->pg_fd = -1;
	for (uint32_t w = 0; w < (uint32_t)ctx->cfg->workers && w < SHM_MAX_WORKERS; w++)
		f->ring_ok[w] =
			spsc_ring_attach(&f->rings[w], ctx->seg, SHM_PRODUCER_ORACLE, w) == 0;
	return f;
}

static void pg_drop(struct follower *f, const char *why)
{
	if (f->pg) {
		log_warn("follower: postgresql: %s", why);
		if (f->pg_fd >= 0)
			epoll_ctl(f->ep, EPOLL_CTL_DEL, f->pg_fd, NULL);
		PQfinish(f->pg);
	}
	f->pg = NULL;
	f->pg_fd = -1;
	f->query_busy = false;
	f->pg_failures++;
	f->pg_retry_ms = now_ms() +
			 (int64_t)backoff_full_jitter_ms(f->pg_failures, 200, FOLLOWER_PG_MAX_MS,
							 randombytes_random()) +
			 1;
}

static bool pg_ready(struct follower *f)
{
	const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
	const char *vals[] = {f->ctx->cfg->database_url, "3", "outboxd-follower", NULL};
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = FOLLOWER_EV_TAG};

	if (f->pg)
		return true;
	if (now_ms() < f->pg_retry_ms)
		return false;
	f->pg = PQconnectdbParams(keys, vals, 1);
	if (!f->pg || PQstatus(f->pg) != CONNECTION_OK || PQsetnonblocking(f->pg, 1) != 0) {
		pg_drop(f, f->pg ? PQerrorMessage(f->pg) : "out of memory");
		return false;
	}
	f->pg_fd = PQsocket(f->pg);
	if (epoll_ctl(f->ep, EPOLL_CTL_ADD, f->pg_fd, &ev) < 0) {
		pg_drop(f, "epoll");
		return false;
	}
	f->pg_failures = 0;
	return true;
}

static void hint(struct follower *f, const char *hash, uint32_t ledger, uint64_t aux, int vshard,
		 int64_t op_id)
{
	struct shm_hint h = {
		.type = SHM_HINT_TX_LANDED, .ledger = ledger, .aux = aux, .op_id = (uint64_t)op_id};
	uint32_t w = (uint32_t)vshard % (uint32_t)f->ctx->cfg->workers;
	struct shm_stats_block *st = shm_stats_block(f->ctx->seg, f->ctx->proc);

	if (w >= SHM_MAX_WORKERS || !f->ring_ok[w] ||
	    sodium_hex2bin(h.tx_hash, 32, hash, 64, NULL, NULL, NULL))
		return;
	if (spsc_ring_push(&f->rings[w], &h)) {
		if (st)
			stats_counter_add(st, MET_HINTS_DROPPED, 1);
		return;
	}
	if (st)
		stats_counter_add(st, MET_HINTS_SENT, 1);
	if (w < f->ctx->doorbells->n)
		doorbell_ring(shm_doorbell_get(f->ctx->seg, w), f->ctx->doorbells->fd[w]);
}

static size_t index_of(const struct follower *f, const char *hash)
{
	for (size_t i = 0; i < f->n_hashes; i++)
		if (!strcmp(f->hashes[i], hash))
			return i;
	return SIZE_MAX;
}

static void lookup_done(struct follower *f, PGresult *r)
{
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_warn("follower: attempt_lookup: %s", PQresultErrorMessage(r));
		return;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		const char *h = PQgetvalue(r, i, 0);
		size_t k = index_of(f, h);
		if (k != SIZE_MAX)
			hint(f, h, f->ledgers[k], f->aux[k], atoi(PQgetvalue(r, i, 2)),
			     strtoll(PQgetvalue(r, i, 1), NULL, 10));
	}
}

void follower_on_ready(struct follower *f, uint32_t events)
{
	PGresult *r;

	if (!f->pg)
		return;
	if (!PQconsumeInput(f->pg)) {
		pg_drop(f, PQerrorMessage(f->pg));
		return;
	}
	while (f->query_busy && !PQisBusy(f->pg)) {
		r = PQgetResult(f->pg);
		if (!r) {
			f->query_busy = false;
			f->n_hashes = 0;
			break;
		}
		lookup_done(f, r);
		PQclear(r);
	}
	(void)events;
}

/* Ask PostgreSQL which of the page's hashes are ours. */
static void lookup(struct follower *f)
{
	size_t cap = f->n_hashes * 68 + 4, o = 0;
	char *arr;
	const char *p[1];

	if (!f->n_hashes || !pg_ready(f))
		return; /* kept; retried next tick */
	arr = malloc(cap);
	if (!arr)
		return;
	arr[o++] = '{';
	for (size_t i = 0; i < f->n_hashes; i++)
		o += (size_t)snprintf(arr + o, cap - o, "%s%s", i ? "," : "", f->hashes[i]);
	snprintf(arr + o, cap - o, "}");
	p[0] = arr;
	if (!PQsendQueryParams(
		    f->pg, "SELECT tx_hash, op_id, vshard FROM outbox.attempt_lookup($1::text[])",
		    1, NULL, p, NULL, NULL, 0)) {
		pg_drop(f, PQerrorMessage(f->pg));
	} else {
		f->query_busy = true;
		PQflush(f->pg);
	}
	free(arr);
}

static void on_page(struct rpc_result *r, void *arg)
{
	struct follower *f = arg;

	f->rpc_busy = false;
	f->next_ms = now_ms() + FOLLOWER_IDLE_MS;
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
	}
	if (g->cursor[0])
		snprintf(f->cursor, sizeof(f->cursor), "%s", g->cursor);
	if (g->n_txs >= FOLLOWER_PAGE)
		f->next_ms = now_ms(); /* more to read */
	lookup(f);
}

static void on_health(struct rpc_result *r, void *arg)
{
	struct follower *f = arg;

	f->rpc_busy = false;
	f->next_ms = now_ms() + FOLLOWER_IDLE_MS;
	if (r->status == RPC_OK && r->u.health.latest_ledger) {
		f->start_ledger = r->u.health.latest_ledger;
		f->started = true;
	}
}

void follower_tick(struct follower *f)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_HEALTH};
	rpc_done_fn cb = on_health;

	if (f->n_hashes && !f->query_busy)
		lookup(f);
	if (f->rpc_busy || f->query_busy || f->n_hashes || now_ms() < f->next_ms)
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
		f->next_ms = now_ms() + FOLLOWER_IDLE_MS;
}

int follower_timeout_ms(const struct follower *f)
{
	int64_t t = f->next_ms - now_ms();

	if (f->n_hashes && !f->query_busy)
		t = f->pg_retry_ms - now_ms();
	return t < 0 ? 0 : t > 1000 ? 1000 : (int)t;
}

void follower_free(struct follower *f)
{
	if (!f)
		return;
	if (f->pg) {
		if (f->pg_fd >= 0)
			epoll_ctl(f->ep, EPOLL_CTL_DEL, f->pg_fd, NULL);
		PQfinish(f->pg);
	}
	free(f);
}
