/*
 * chain.c - chain state: initialisation, accounts, in-flight bookkeeping,
 * bans, queue membership, and the read-only RPC answers (getHealth,
 * getLatestLedger, getTransaction(s), getLedgerEntries facts).
 * Admission is in submit.c, ledger close in close.c, fee stats in
 * feestats.c, debug endpoints in debug.c.
 */
#include "tests/stellar-sim/chain_state.h"
#include "tests/stellar-sim/xdrenc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct chain g_chain;

const struct sim_config *chain_config(void)
{
	return &g_chain.cfg;
}

struct ledger *chain_ledger(uint32_t seq)
{
	struct ledger *l;

	if (seq < g_chain.genesis || seq > g_chain.latest)
		return NULL;
	l = &g_chain.ring[seq % g_chain.ring_size];
	return l->seq == seq ? l : NULL;
}

struct account *chain_account_get(const uint8_t key[32], bool create)
{
	struct table_node *n = table_find(&g_chain.accounts, key);
	struct account *a;

	if (n)
		return table_entry(n, struct account, node);
	if (!create)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	memcpy(a->node.key, key, 32);
	if (table_insert(&g_chain.accounts, &a->node) < 0) {
		free(a);
		return NULL;
	}
	return a;
}

void inflight_add(const struct sim_tx *tx)
{
	struct table_node *n = table_find(&g_chain.inflight, tx->inner_hash);
	struct inflight *f;
	struct account *a;

	if (n) {
		table_entry(n, struct inflight, node)->envelopes++;
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return;
	memcpy(f->node.key, tx->inner_hash, 32);
	memcpy(f->source, tx->source, 32);
	f->envelopes = 1;
	if (table_insert(&g_chain.inflight, &f->node) < 0) {
		free(f);
		return;
	}
	a = chain_account_get(tx->source, false);
	if (a && ++a->in_flight > a->max_in_flight)
		a->max_in_flight = a->in_flight;
}

static void inflight_end(struct inflight *f)
{
	struct account *a = chain_account_get(f->source, false);

	if (a && a->in_flight)
		a->in_flight--;
	table_remove(&g_chain.inflight, &f->node);
	free(f);
}

void inflight_drop(const struct sim_tx *tx)
{
	struct table_node *n = table_find(&g_chain.inflight, tx->inner_hash);
	struct inflight *f;

	if (!n)
		return;
	f = table_entry(n, struct inflight, node);
	if (--f->envelopes == 0)
		inflight_end(f);
}

void inflight_applied(const struct sim_tx *tx)
{
	struct table_node *n = table_find(&g_chain.inflight, tx->inner_hash);

	if (n)
		inflight_end(table_entry(n, struct inflight, node));
}

bool ban_active(const uint8_t hash[32])
{
	struct table_node *n = table_find(&g_chain.bans, hash);

	return n && table_entry(n, struct ban, node)->until > g_chain.latest;
}

void ban_add(const uint8_t hash[32])
{
	struct table_node *n = table_find(&g_chain.bans, hash);
	struct ban *b;

	if (n) {
		table_entry(n, struct ban, node)->until = g_chain.latest + g_chain.cfg.ban_ledgers;
		return;
	}
	if (g_chain.n_bans == g_chain.bans_cap) {
		size_t cap = g_chain.bans_cap ? 2 * g_chain.bans_cap : 256, i;
		struct ban **nf = malloc(cap * sizeof(*nf));

		if (!nf)
			return;
		for (i = 0; i < g_chain.n_bans; i++)
			nf[i] = g_chain.ban_fifo[(g_chain.ban_head + i) % g_chain.bans_cap];
		free(g_chain.ban_fifo);
		g_chain.ban_fifo = nf;
		g_chain.ban_head = 0;
		g_chain.bans_cap = cap;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	memcpy(b->node.key, hash, 32);
	b->until = g_chain.latest + g_chain.cfg.ban_ledgers;
	if (table_insert(&g_chain.bans, &b->node) < 0) {
		free(b);
		return;
	}
	g_chain.ban_fifo[(g_chain.ban_head + g_chain.n_bans) % g_chain.bans_cap] = b;
	g_chain.n_bans++;
}

/* Bans are queued in the order they were set; a renewed one is re-checked. */
void ban_expire(void)
{
	while (g_chain.n_bans) {
		struct ban *b = g_chain.ban_fifo[g_chain.ban_head];

		if (b->until > g_chain.latest)
			break;
		g_chain.ban_head = (g_chain.ban_head + 1) % g_chain.bans_cap;
		g_chain.n_bans--;
		table_remove(&g_chain.bans, &b->node);
		free(b);
	}
}

static int push(struct sim_tx ***arr, size_t *n, size_t *cap, struct sim_tx *tx)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		struct sim_tx **na = realloc(*arr, nc * sizeof(*na));

		if (!na)
			return -ENOMEM;
		*arr = na;
		*cap = nc;
	}
	(*arr)[(*n)++] = tx;
	return 0;
}

int queue_push(struct sim_tx *tx)
{
	memcpy(tx->qnode.key, tx->hash, 32);
	if (push(&g_chain.queue, &g_chain.n_queue, &g_chain.queue_cap, tx) < 0)
		return -ENOMEM;
	if (table_insert(&g_chain.queued, &tx->qnode) < 0) {
		g_chain.n_queue--;
		return -ENOMEM;
	}
	return 0;
}

void queue_remove_at(size_t i)
{
	struct sim_tx *tx = g_chain.queue[i];
	struct account *a = chain_account_get(tx->source, false);

	if (a && a->pending == tx)
		a->pending = NULL;
	table_remove(&g_chain.queued, &tx->qnode);
	g_chain.queue[i] = g_chain.queue[--g_chain.n_queue];
}

int holes_push(struct sim_tx *tx)
{
	memcpy(tx->qnode.key, tx->hash, 32);
	if (push(&g_chain.holes, &g_chain.n_holes, &g_chain.holes_cap, tx) < 0)
		return -ENOMEM;
	if (table_insert(&g_chain.queued, &tx->qnode) < 0) {
		g_chain.n_holes--;
		return -ENOMEM;
	}
	return 0;
}

/* The four TransactionMeta answers, encoded once and shared. */
static int init_tx_meta(void)
{
	int soroban, success;

	for (soroban = 0; soroban < 2; soroban++) {
		for (success = 0; success < 2; success++) {
			char *b64 = enc_tx_meta(soroban, success);

			g_chain.tx_meta[soroban][success] = b64 ? json_string_nocheck(b64) : NULL;
			free(b64);
			if (!g_chain.tx_meta[soroban][success])
				return -ENOMEM;
		}
	}
	return 0;
}

static void init_genesis(void)
{
	struct ledger *g = &g_chain.ring[g_chain.genesis % g_chain.ring_size];
	struct enc_ledger e = {.seq = g_chain.genesis,
			       .close_time = sim_wall_s(),
			       .base_fee = g_chain.cfg.base_fee,
			       .max_tx_set_size = g_chain.cfg.ledger_capacity};

	enc_ledger_hash(&e);
	g->seq = e.seq;
	g->close_time = e.close_time;
	memcpy(g->hash, e.hash, 32);
}

int chain_init(const struct sim_config *cfg)
{
	size_t ring;

	memset(&g_chain, 0, sizeof(g_chain));
	pthread_mutex_init(&g_chain.lock, NULL);
	g_chain.cfg = *cfg;
	if (!g_chain.cfg.queue_capacity)
		g_chain.cfg.queue_capacity = 2 * cfg->ledger_capacity;
	if (table_init(&g_chain.accounts) || table_init(&g_chain.queued) ||
	    table_init(&g_chain.bans) || table_init(&g_chain.inflight) ||
	    table_init(&g_chain.txs) || table_init(&g_chain.txs_inner) ||
	    table_init(&g_chain.execs))
		return -ENOMEM;
	/* every window (retention, fee stats) behind the oldest possible view */
	ring = cfg->retention_ledgers;
	if (ring < cfg->fee_window_classic)
		ring = cfg->fee_window_classic;
	if (ring < cfg->fee_window_soroban)
		ring = cfg->fee_window_soroban;
	g_chain.ring_size = ring + VIEW_MAX_LAG + 1;
	g_chain.ring = calloc(g_chain.ring_size, sizeof(*g_chain.ring));
	if (!g_chain.ring || init_tx_meta() < 0)
		return -ENOMEM;
	g_chain.genesis = g_chain.latest = cfg->start_ledger;
	init_genesis();
	{
		struct account *v = chain_account_get(cfg->vault_contract, true);

		if (!v)
			return -ENOMEM;
		v->is_contract = true;
		v->balance = cfg->vault_reserve;
	}
	return 0;
}

void chain_view(unsigned lag, uint32_t *seq, uint64_t *close_time)
{
	pthread_mutex_lock(&g_chain.lock);
	*seq = chain_view_ledger(lag);
	*close_time = chain_ledger(*seq)->close_time;
	pthread_mutex_unlock(&g_chain.lock);
}

void chain_latest(uint32_t *seq, uint64_t *close_time)
{
	chain_view(0, seq, close_time);
}

static json_t *str_u64(uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	return json_string(b);
}

/*
 * latestLedger/oldestLedger of a view and their close times (strings for
 * getHealth and getTransaction, numbers for getTransactions), under the lock.
 */
static void put_window(json_t *o, uint32_t view, bool string_times)
{
	uint32_t oldest = chain_view_oldest(view);
	struct ledger *lo = chain_ledger(oldest), *la = chain_ledger(view);

	json_object_set_new(o, "latestLedger", json_integer(view));
	json_object_set_new(
		o, string_times ? "latestLedgerCloseTime" : "latestLedgerCloseTimestamp",
		string_times ? str_u64(la->close_time) : json_integer((json_int_t)la->close_time));
	json_object_set_new(o, "oldestLedger", json_integer(oldest));
	json_object_set_new(o,
			    string_times ? "oldestLedgerCloseTime" : "oldestLedgerCloseTimestamp",
			    string_times ? str_u64(lo ? lo->close_time : 0)
					 : json_integer(lo ? (json_int_t)lo->close_time : 0));
}

json_t *chain_health(unsigned lag)
{
	json_t *o = json_object();

	pthread_mutex_lock(&g_chain.lock);
	json_object_set_new(o, "status", json_string("healthy"));
	put_window(o, chain_view_ledger(lag), true);
	json_object_set_new(o, "ledgerRetentionWindow",
			    json_integer(g_chain.cfg.retention_ledgers));
	pthread_mutex_unlock(&g_chain.lock);
	return o;
}

/* headerXdr and metadataXdr of a ledger, as two JSON strings; 0 or -ENOMEM. */
static int make_ledger_xdr(const struct enc_ledger *e, json_t **hdr, json_t **meta)
{
	char *h, *m;

	if (enc_latest_ledger(e, &h, &m) < 0)
		return -ENOMEM;
	*hdr = json_string_nocheck(h);
	*meta = json_string_nocheck(m);
	free(h);
	free(m);
	if (*hdr && *meta)
		return 0;
	json_decref(*hdr);
	json_decref(*meta);
	return -ENOMEM;
}

/*
 * The view ledger's XDR is encoded outside the lock on the first request for
 * that ledger, then kept in its slot: every later answer shares it.
 */
json_t *chain_latest_ledger(unsigned lag)
{
	struct enc_ledger e = {.base_fee = g_chain.cfg.base_fee,
			       .max_tx_set_size = g_chain.cfg.ledger_capacity};
	json_t *o, *hdr, *meta;
	struct ledger *l, *prev;
	char hex[65];

	pthread_mutex_lock(&g_chain.lock);
	l = chain_ledger(chain_view_ledger(lag));
	prev = chain_ledger(l->seq - 1);
	e.seq = l->seq;
	e.close_time = l->close_time;
	memcpy(e.hash, l->hash, 32);
	if (prev)
		memcpy(e.prev_hash, prev->hash, 32);
	hdr = json_incref(l->header_json);
	meta = json_incref(l->meta_json);
	pthread_mutex_unlock(&g_chain.lock);
	if (!hdr) {
		if (make_ledger_xdr(&e, &hdr, &meta) < 0)
			return NULL;
		pthread_mutex_lock(&g_chain.lock);
		l = chain_ledger(e.seq); /* NULL if it left the ring meanwhile */
		if (l && !l->header_json) {
			l->header_json = json_incref(hdr);
			l->meta_json = json_incref(meta);
		}
		pthread_mutex_unlock(&g_chain.lock);
	}
	sim_hex(e.hash, 32, hex);
	o = json_object();
	json_object_set_new(o, "id", json_string_nocheck(hex));
	json_object_set_new(o, "protocolVersion", json_integer(SIM_PROTOCOL_VERSION));
	json_object_set_new(o, "sequence", json_integer(e.seq));
	json_object_set_new(o, "closeTime", str_u64(e.close_time));
	json_object_set_new(o, "headerXdr", hdr);
	json_object_set_new(o, "metadataXdr", meta);
	return o;
}

static void put_record(json_t *o, const struct txrec *r, bool created_at_string)
{
	json_object_set_new(o, "status", json_string(r->success ? "SUCCESS" : "FAILED"));
	json_object_set_new(o, "ledger", json_integer(r->ledger));
	json_object_set_new(o, "createdAt",
			    created_at_string ? str_u64(r->created_at)
					      : json_integer((json_int_t)r->created_at));
	json_object_set_new(o, "applicationOrder", json_integer(r->order));
	json_object_set_new(o, "feeBump", json_boolean(r->fee_bump));
	json_object_set_new(o, "envelopeXdr", json_string(r->envelope_b64));
	json_object_set_new(o, "resultXdr", json_string(r->result_b64));
	json_object_set(o, "resultMetaXdr", g_chain.tx_meta[r->soroban][r->success]);
}

/* The applied tx with this full (or, for a bump, inner) hash, if stored. */
static struct txrec *find_record(const uint8_t hash[32])
{
	struct table_node *n = table_find(&g_chain.txs, hash);

	if (n)
		return table_entry(n, struct txrec, node);
	n = table_find(&g_chain.txs_inner, hash);
	return n ? table_entry(n, struct txrec, inner_node) : NULL;
}

json_t *chain_get_transaction(const uint8_t hash[32], unsigned lag)
{
	json_t *o = json_object();
	struct txrec *r;
	uint32_t view;
	char hex[65];

	sim_hex(hash, 32, hex);
	json_object_set_new(o, "txHash", json_string(hex));
	pthread_mutex_lock(&g_chain.lock);
	view = chain_view_ledger(lag);
	put_window(o, view, true);
	r = find_record(hash);
	/* a lagging node has not ingested the ledgers after its view */
	if (r && r->ledger >= chain_view_oldest(view) && r->ledger <= view) {
		put_record(o, r, true);
		pthread_mutex_unlock(&g_chain.lock);
		return o;
	}
	pthread_mutex_unlock(&g_chain.lock);
	json_object_set_new(o, "status", json_string("NOT_FOUND"));
	return o;
}

/* Where a getTransactions page starts: 0 on success, -1 with errbuf set. */
static int page_start(uint32_t start_ledger, uint64_t cursor, uint32_t view, uint32_t *seq,
		      uint32_t *order_after, char *errbuf, size_t errlen)
{
	uint32_t oldest = chain_view_oldest(view);

	*order_after = 0;
	if (start_ledger) {
		if (start_ledger < oldest || start_ledger > view) {
			snprintf(errbuf, errlen,
				 "start ledger must be between the oldest ledger: %u and the "
				 "latest ledger: %u for this rpc instance.",
				 oldest, view);
			return -1;
		}
		*seq = start_ledger;
		return 0;
	}
	*seq = (uint32_t)(cursor >> 32);
	*order_after = (uint32_t)((cursor & 0xffffffffULL) >> 12);
	if (*seq < oldest) {
		*seq = oldest;
		*order_after = 0;
	}
	return 0;
}

json_t *chain_get_transactions(uint32_t start_ledger, uint64_t cursor, unsigned limit, unsigned lag,
			       char *errbuf, size_t errlen)
{
	json_t *o, *arr;
	uint32_t seq, order_after, view;
	uint64_t last = 0;
	unsigned got = 0;

	pthread_mutex_lock(&g_chain.lock);
	view = chain_view_ledger(lag);
	if (page_start(start_ledger, cursor, view, &seq, &order_after, errbuf, errlen) < 0) {
		pthread_mutex_unlock(&g_chain.lock);
		return NULL;
	}
	o = json_object();
	arr = json_array();
	for (; seq <= view && got < limit; seq++, order_after = 0) {
		struct ledger *l = chain_ledger(seq);
		uint32_t i;

		if (!l)
			continue;
		for (i = order_after; i < l->n_txs && got < limit; i++) {
			json_t *t = json_object();
			char hex[65];

			sim_hex(l->txs[i]->node.key, 32, hex);
			json_object_set_new(t, "txHash", json_string(hex));
			put_record(t, l->txs[i], false);
			json_array_append_new(arr, t);
			last = ((uint64_t)seq << 32) | ((uint64_t)(i + 1) << 12);
			got++;
		}
	}
	/*
	 * Everything up to the view was read. A cursor never moves back: one
	 * from a node further ahead, replayed against one behind it, keeps its
	 * place.
	 */
	if (got < limit) {
		last = ((uint64_t)view << 32) | 0xffffffffULL;
		if (last < cursor)
			last = cursor;
	}
	json_object_set_new(o, "transactions", arr);
	put_window(o, view, false);
	pthread_mutex_unlock(&g_chain.lock);
	json_object_set_new(o, "cursor", str_u64(last));
	return o;
}

bool chain_account_at(const uint8_t key[32], uint32_t view, struct acct_state *out)
{
	const struct acct_state *s = NULL;
	struct account *a;

	pthread_mutex_lock(&g_chain.lock);
	a = chain_account_get(key, false);
	if (a)
		s = acct_at(a, view);
	if (s)
		*out = *s;
	pthread_mutex_unlock(&g_chain.lock);
	return s != NULL;
}
