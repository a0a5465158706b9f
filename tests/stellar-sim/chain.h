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
 * Admission of a decoded envelope (stellar-protocol.md 4.3, 4.4, 4.7).
 * Takes ownership of tx in every case. blackhole: answer PENDING but never
 * include it (fault injection).
 */
void chain_submit(struct sim_tx *tx, bool blackhole, struct submit_out *out);

/* getHealth / getLatestLedger / getFeeStats / getTransaction results. */
json_t *chain_health(void);
json_t *chain_latest_ledger(void);
json_t *chain_fee_stats(void);
json_t *chain_get_transaction(const uint8_t hash[32]);
/*
 * getTransactions: start_ledger 0 means "use cursor". Returns NULL and sets
 * *errmsg (static or malloc'd into errbuf) on bad parameters.
 */
json_t *chain_get_transactions(uint32_t start_ledger, uint64_t cursor, unsigned limit, char *errbuf,
			       size_t errlen);

/* Account facts for getLedgerEntries; false when the account does not exist. */
bool chain_account(const uint8_t key[32], int64_t *seq, int64_t *balance, uint32_t *last_modified);
void chain_latest(uint32_t *seq, uint64_t *close_time);

/*
 * simulateTransaction of one vault call by source (the invoker). Fills the
 * result object (transactionData, minResourceFee, results, latestLedger) or
 * an error string in result.error, like the real method.
 */
json_t *chain_simulate(const struct sim_tx *tx);

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
	uint32_t last_modified;
	struct sim_tx *pending; /* its one queued transaction */
	unsigned in_flight;     /* distinct inner txs accepted and not yet applied/dropped */
	unsigned max_in_flight;
};

#endif
