/*
 * chain_state.h - the chain's private state, shared by chain.c (queries and
 * debug), submit.c (admission), close.c (ledger close) and vault.c. Every
 * field is guarded by g_chain.lock.
 */
#ifndef OUTBOX_SIM_CHAIN_STATE_H
#define OUTBOX_SIM_CHAIN_STATE_H

#include "tests/stellar-sim/chain.h"

#include <pthread.h>

/* One inner transaction that a source account has in flight. */
struct inflight {
	struct table_node node; /* key = inner hash */
	uint8_t source[32];
	unsigned envelopes; /* accepted envelopes of it still alive (v1 and bumps) */
};

struct ban {
	struct table_node node; /* key = full hash */
	uint32_t until;         /* banned while latest ledger < until */
};

/* An applied transaction, kept for the retention window. */
struct txrec {
	struct table_node node;       /* key = full hash */
	struct table_node inner_node; /* key = inner hash (fee bumps only) */
	bool fee_bump;
	bool success;
	bool soroban; /* picks its TransactionMeta */
	uint32_t ledger;
	uint32_t order; /* applicationOrder, from 1 */
	uint64_t created_at;
	char *envelope_b64;
	char *result_b64;
};

struct exec_count {
	struct table_node node; /* key = op_ref */
	uint64_t n;
};

struct ledger {
	uint32_t seq; /* 0: slot unused */
	uint64_t close_time;
	uint8_t hash[32];
	struct txrec **txs;
	uint32_t n_txs;
	int64_t *fees_classic; /* inclusion fee charged per op */
	uint32_t n_classic;
	int64_t *fees_soroban; /* inclusion fee charged per tx */
	uint32_t n_soroban;
	/*
	 * getLatestLedger's headerXdr and metadataXdr of this ledger, made on
	 * the first request for it and shared (immutable strings, atomic
	 * reference counts) by every answer after; NULL until then.
	 */
	json_t *header_json, *meta_json;
};

struct chain {
	pthread_mutex_t lock;
	struct sim_config cfg;
	struct table accounts;  /* struct account */
	struct table queued;    /* struct sim_tx by full hash: queue and black holes */
	struct table bans;      /* struct ban */
	struct table inflight;  /* struct inflight */
	struct table txs;       /* struct txrec by full hash */
	struct table txs_inner; /* struct txrec of fee bumps by inner hash */
	struct table execs;     /* struct exec_count */
	struct sim_tx **queue;  /* pending, unordered */
	size_t n_queue, queue_cap;
	struct sim_tx **holes; /* black-holed: answered PENDING, never included */
	size_t n_holes, holes_cap;
	struct ban **ban_fifo; /* bans in expiry order */
	size_t ban_head, n_bans, bans_cap;
	struct ledger *ring; /* ledger seq s lives in ring[s % ring_size] */
	size_t ring_size;
	uint32_t genesis, latest;
	unsigned bg_load, bg_level;
	json_t *tx_meta[2][2]; /* TransactionMeta of an applied tx, by [soroban][success] */
};

extern struct chain g_chain;

struct ledger *chain_ledger(uint32_t seq); /* NULL when outside the ring */
struct account *chain_account_get(const uint8_t key[32], bool create);

/*
 * Views (view.c). The ring keeps every ledger a view can reach: the fee
 * windows and the retention window behind a view up to VIEW_MAX_LAG behind
 * the head.
 */
uint32_t chain_view_ledger(unsigned lag);           /* max(genesis, latest - lag) */
uint32_t chain_view_oldest(uint32_t view);          /* oldest ledger that view serves */
void acct_note(struct account *a, uint32_t ledger); /* a's state at the end of ledger */
const struct acct_state *acct_at(const struct account *a, uint32_t ledger); /* NULL: none then */

/* In-flight bookkeeping (max_pending_per_account). */
void inflight_add(const struct sim_tx *tx);
void inflight_drop(const struct sim_tx *tx);    /* one envelope gone */
void inflight_applied(const struct sim_tx *tx); /* the inner tx executed */

void ban_add(const uint8_t hash[32]);
bool ban_active(const uint8_t hash[32]);
void ban_expire(void);

/* Queue membership. */
int queue_push(struct sim_tx *tx);
void queue_remove_at(size_t i); /* does not free */
int holes_push(struct sim_tx *tx);

#endif
