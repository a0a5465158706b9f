/*
 * chain.h - the simulated network's state and its rules: accounts, the
 * transaction queue (stellar-core's admission, replace-by-fee, ageing and
 * bans), ledger close with surge pricing, the transaction store behind
 * getTransaction(s), fee statistics and the vault contract's balances.
 *
 * Every function here takes the one chain mutex itself; callers hold no
 * lock. JSON results are new references the caller owns.
 */
#ifndef OUTBOX_SIM_CHAIN_H
#define OUTBOX_SIM_CHAIN_H

#include "tests/stellar-sim/sim.h"

#include <jansson.h>

int chain_init(const struct sim_config *cfg);
const struct sim_config *chain_config(void);

/* Close one ledger now (the timer thread calls this every --ledger-ms). */
void chain_close_ledger(void);

enum submit_status {
	SUBMIT_PENDING,
	SUBMIT_DUPLICATE,
	SUBMIT_TRY_AGAIN_LATER,
	SUBMIT_ERROR,
};

struct submit_out {
	enum submit_status status;
	char *error_result_b64; /* SUBMIT_ERROR: malloc'd TransactionResult */
	uint32_t latest_ledger;
	uint64_t latest_close_time;
};

/*
 * Read views (the ingest_lag_ledgers fault, view.c). A lagging RPC node
 * answers its read methods as of the last ledger it ingested, head - lag
 * (never before genesis): the view. Two lags model two such nodes behind a
 * load balancer; each read request is answered by one of them, at random.
 * Every lag is 0..VIEW_MAX_LAG.
 */
#define VIEW_MAX_LAG 1000

void view_set(unsigned lag, bool two_views, unsigned alt_lag);
void view_get(unsigned *lag, bool *two_views, unsigned *alt_lag);
/* The lag answering one read request: one die from the --seed PRNG when two
 * views are set (no draw otherwise). */
unsigned view_pick(void);
/* View A's lag: what sendTransaction and simulateTransaction report. */
unsigned view_primary(void);

/*
 * Admission of a decoded envelope (stellar-core's TransactionQueue rules, see
 * submit.c), always against the head. Takes ownership of tx in every case.
 * blackhole: answer PENDING but never include it (fault injection). The
 * latest ledger reported is the view of `lag`'s.
 */
void chain_submit(struct sim_tx *tx, bool blackhole, unsigned lag, struct submit_out *out);

/* getHealth / getLatestLedger / getFeeStats / getTransaction, as of a view. */
json_t *chain_health(unsigned lag);
json_t *chain_latest_ledger(unsigned lag);
json_t *chain_fee_stats(unsigned lag);
json_t *chain_get_transaction(const uint8_t hash[32], unsigned lag);
/*
 * getTransactions as of a view: start_ledger 0 means "use cursor". Returns
 * NULL with a message in errbuf on bad parameters.
 */
json_t *chain_get_transactions(uint32_t start_ledger, uint64_t cursor, unsigned limit, unsigned lag,
			       char *errbuf, size_t errlen);

/* An account's state as of the end of a ledger. */
struct acct_state {
	uint32_t ledger; /* the ledger that last changed it: lastModifiedLedgerSeq */
	int64_t seq;
	int64_t balance; /* clamped to 0..INT64_MAX, as getLedgerEntries shows it */
};

/*
 * getLedgerEntries: the view ledger of `lag` (and its close time), then each
 * account as of the end of that ledger; false when the account did not exist
 * then. A view stays answerable while it is within the history kept (at
 * least --retention-ledgers + VIEW_MAX_LAG ledgers behind the head).
 */
void chain_view(unsigned lag, uint32_t *seq, uint64_t *close_time);
bool chain_account_at(const uint8_t key[32], uint32_t view, struct acct_state *out);
/* The head: the latest closed ledger and its close time. */
void chain_latest(uint32_t *seq, uint64_t *close_time);

/*
 * simulateTransaction of one vault call by source (the invoker), against the
 * head's state. Fills the result object (transactionData, minResourceFee,
 * results, latestLedger = the view of `lag`) or an error string in
 * result.error, like the real method.
 */
json_t *chain_simulate(const struct sim_tx *tx, unsigned lag);

/* Debug endpoints. */
int chain_debug_accounts(json_t *req, char *errbuf, size_t errlen);
json_t *chain_debug_state(void);
json_t *chain_debug_executions(void);
void chain_set_background_load(unsigned n);

/* --- internals shared by chain.c, submit.c, close.c, vault.c --- */

struct account {
	struct table_node node; /* key = ed25519 key or contract id */
	bool exists;            /* a Stellar account (else a vault balance holder only) */
	bool is_contract;
	int64_t seq;
	__int128 balance; /* stroops; vault calls and fees move it */
	/*
	 * A Stellar account's states by ledger, oldest first, in
	 * hist[hist_head .. hist_head + hist_n): one per ledger that changed it
	 * (the newest is the current state), pruned to the window views can
	 * ask about. Balance-only holders (exists false) have none.
	 */
	struct acct_state *hist;
	uint32_t hist_head, hist_n, hist_cap;
	struct sim_tx *pending; /* its one queued transaction */
	unsigned in_flight;     /* distinct inner txs accepted and not yet applied/dropped */
	unsigned max_in_flight;
};

#endif
