/*
 * view.c - the ingest_lag_ledgers fault: a lagging RPC node, or two of them
 * behind a load balancer.
 *
 * stellar-rpc answers its read methods from the ledgers it has ingested,
 * which can trail the network: its latestLedger is its own, a transaction is
 * NOT_FOUND until it has ingested the ledger holding it, and an account
 * entry is as of that ledger. Its sendTransaction, though, goes to a current
 * stellar-core, so the queue validates against the real head. outboxd must
 * decide an envelope's fate from proof despite that; this file lets the sim
 * behave that way.
 *
 * The lags: one _Atomic word holding both lags and the "two views" flag, so
 * every request reads a consistent pair without taking a lock.
 *
 * Account history: every Stellar account keeps its (ledger, seqNum, balance)
 * states, one per ledger that changed it, so getLedgerEntries can answer as
 * of the end of any ledger a view can reach. acct_note() records the state
 * after each change (close.c after applying a tx, debug.c after a reset);
 * two changes in one ledger leave one state. The history is pruned as it
 * grows: the newest state at or before the horizon (head minus
 * --retention-ledgers minus VIEW_MAX_LAG) stands for every older ledger and
 * the ones before it go. Everything but the lag word is guarded by the chain
 * lock.
 */
#include "tests/stellar-sim/chain_state.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_TWO (1ULL << 63)

/* bits 0..31: view A's lag; 32..62: view B's; bit 63: two views */
static _Atomic uint64_t lag_word;

void view_set(unsigned lag, bool two_views, unsigned alt_lag)
{
	uint64_t w = lag;

	if (two_views)
		w |= VIEW_TWO | (uint64_t)alt_lag << 32;
	atomic_store(&lag_word, w);
}

void view_get(unsigned *lag, bool *two_views, unsigned *alt_lag)
{
	uint64_t w = atomic_load(&lag_word);

	*lag = (unsigned)(w & 0xffffffffu);
	*two_views = (w & VIEW_TWO) != 0;
	*alt_lag = *two_views ? (unsigned)((w >> 32) & 0x7fffffffu) : *lag;
}

unsigned view_pick(void)
{
	unsigned lag, alt;
	bool two;

	view_get(&lag, &two, &alt);
	if (!two)
		return lag;
	/* the load balancer's coin: one draw per read request */
	return sim_rand_u64() >> 63 ? alt : lag;
}

unsigned view_primary(void)
{
	return (unsigned)(atomic_load(&lag_word) & 0xffffffffu);
}

uint32_t chain_view_ledger(unsigned lag)
{
	return g_chain.latest - g_chain.genesis > lag ? g_chain.latest - lag : g_chain.genesis;
}

uint32_t chain_view_oldest(uint32_t view)
{
	uint32_t r = g_chain.cfg.retention_ledgers;

	return view - g_chain.genesis + 1 <= r ? g_chain.genesis : view - r + 1;
}

static struct acct_state *hist_last(struct account *a)
{
	return &a->hist[a->hist_head + a->hist_n - 1];
}

/* Drop states no view can need: keep the newest at or before the horizon. */
static void hist_prune(struct account *a, uint32_t ledger)
{
	uint32_t keep = g_chain.cfg.retention_ledgers + VIEW_MAX_LAG;
	uint32_t horizon = ledger > keep ? ledger - keep : 0;

	while (a->hist_n >= 2 && a->hist[a->hist_head + 1].ledger <= horizon) {
		a->hist_head++;
		a->hist_n--;
	}
}

/* Room for one more state at the end: slide down when half is free, else grow. */
static int hist_reserve(struct account *a)
{
	struct acct_state *n;
	uint32_t cap;

	if (a->hist_head + a->hist_n < a->hist_cap)
		return 0;
	if (a->hist_head && a->hist_n * 2 <= a->hist_cap) {
		memmove(a->hist, a->hist + a->hist_head, a->hist_n * sizeof(*a->hist));
		a->hist_head = 0;
		return 0;
	}
	cap = a->hist_cap ? 2 * a->hist_cap : 2;
	n = realloc(a->hist, cap * sizeof(*n));
	if (!n)
		return -1;
	a->hist = n;
	a->hist_cap = cap;
	return 0;
}

void acct_note(struct account *a, uint32_t ledger)
{
	struct acct_state s = {ledger, a->seq, 0};

	if (!a->exists)
		return;
	s.balance = a->balance > INT64_MAX ? INT64_MAX : a->balance < 0 ? 0 : (int64_t)a->balance;
	if (a->hist_n && hist_last(a)->ledger >= ledger) {
		/* a second change in the same ledger (never an older one) */
		s.ledger = hist_last(a)->ledger;
		*hist_last(a) = s;
		return;
	}
	hist_prune(a, ledger);
	if (hist_reserve(a) < 0) {
		/* out of memory: the newest state must stay right, history suffers */
		if (a->hist_n)
			*hist_last(a) = s;
		return;
	}
	a->hist[a->hist_head + a->hist_n++] = s;
}

const struct acct_state *acct_at(const struct account *a, uint32_t ledger)
{
	const struct acct_state *h = a->hist + a->hist_head;
	uint32_t lo = 0, hi = a->hist_n;

	if (!a->hist_n || h[0].ledger > ledger)
		return NULL; /* not an account yet at that ledger */
	if (h[hi - 1].ledger <= ledger)
		return &h[hi - 1]; /* the usual case: unchanged since */
	/* the last state at or before ledger: h[lo].ledger <= ledger < h[hi].ledger */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (h[mid].ledger <= ledger)
			lo = mid;
		else
			hi = mid;
	}
	return &h[lo];
}
