/*
 * xdrenc.h - the XDR the simulator answers with, written on top of
 * common/stellar's writer primitives: TransactionResult (resultXdr and
 * errorResultXdr), account LedgerEntryData (getLedgerEntries), the vault's
 * footprint keys, SorobanTransactionData and SorobanAuthorizationEntry
 * (simulateTransaction), a LedgerHeader and LedgerCloseMeta
 * (getLatestLedger) and TransactionMeta (getTransaction(s)).
 *
 * Every function returns a malloc'd base64 string, or NULL on ENOMEM, unless
 * it says otherwise.
 */
#ifndef OUTBOX_SIM_XDRENC_H
#define OUTBOX_SIM_XDRENC_H

#include "common/stellar/xdr.h"
#include "tests/stellar-sim/sim.h"

/* The single operation's result, when the tx reached application. */
struct op_outcome {
	int32_t op_type;          /* 24 INVOKE_HOST_FUNCTION, 1 PAYMENT */
	int32_t code;             /* op-specific code (IHF_*, PAYMENT_*) */
	uint8_t success_hash[32]; /* INVOKE_HOST_FUNCTION success arm */
};

/* A result with no arm: a rejection code (txBAD_SEQ, txINSUFFICIENT_FEE, ...). */
char *enc_result_code(int64_t fee_charged, int32_t code);
/* A fee-bump rejection because of the inner tx (txFEE_BUMP_INNER_FAILED). */
char *enc_result_inner_failed(int64_t fee_charged, const uint8_t inner_hash[32],
			      int32_t inner_code);
/*
 * An applied tx's result: txSUCCESS/txFAILED with one op result, wrapped in
 * txFEE_BUMP_INNER_SUCCESS/FAILED when fee_bump.
 */
char *enc_result_applied(int64_t fee_charged, bool fee_bump, const uint8_t inner_hash[32],
			 const struct op_outcome *op);

/* LedgerEntryData of an account (arm ACCOUNT) with balance and seqNum. */
char *enc_account_entry(const uint8_t key[32], int64_t balance, int64_t seq);

/* LedgerKey writers (raw XDR into w). */
void enc_key_account(struct xdr_writer *w, const uint8_t key[32]);
void enc_key_contract_instance(struct xdr_writer *w, const uint8_t contract[32]);
/* The vault's balance entry of an address (key ScVal = the address). */
void enc_key_vault_balance(struct xdr_writer *w, const uint8_t contract[32],
			   const uint8_t holder[32], bool holder_is_contract);
/* The vault's reserve entry (key ScVal = Symbol "reserve"). */
void enc_key_vault_reserve(struct xdr_writer *w, const uint8_t contract[32]);

/*
 * The root invocation of a contract call (SorobanAuthorizedInvocation with
 * no sub-invocations) preceded by SOURCE_ACCOUNT credentials: one complete
 * SorobanAuthorizationEntry, as raw XDR into w.
 */
void enc_auth_source_account(struct xdr_writer *w, const struct xdr_sc_address *contract,
			     struct xdr_bytes function, const struct xdr_scval *args,
			     uint32_t n_args);

/* What the simulator knows of a closed ledger, for its header and close meta. */
struct enc_ledger {
	uint32_t seq;
	uint64_t close_time;
	uint8_t hash[32];      /* SHA-256 of its LedgerHeader (enc_ledger_hash) */
	uint8_t prev_hash[32]; /* zeros for the genesis ledger */
	uint32_t base_fee;
	uint32_t max_tx_set_size;
};

/* The ledger's hash: SHA-256 of its LedgerHeader XDR, as on the real network. */
void enc_ledger_hash(struct enc_ledger *l);

/*
 * getLatestLedger's headerXdr (a LedgerHeader with the fields its readers
 * look at: sequence, close time, baseFee, baseReserve, maxTxSetSize) and
 * metadataXdr (a LedgerCloseMeta v1: the LedgerHeaderHistoryEntry, an empty
 * generalized tx set with a classic and a parallel Soroban phase, and empty
 * tx processing, upgrades, SCP info and evictions). 0, or -ENOMEM with
 * nothing allocated.
 */
int enc_latest_ledger(const struct enc_ledger *l, char **header_b64, char **meta_b64);

/*
 * An applied tx's TransactionMeta v4 (protocol 23): no ledger-entry changes
 * and no events, one empty OperationMetaV2 when it succeeded, and for a
 * Soroban tx a SorobanTransactionMetaV2 whose returnValue is the vault call's
 * (SCV_VOID) on success and absent on failure.
 */
char *enc_tx_meta(bool soroban, bool success);

/* Base64 of a writer's bytes (the writer is left untouched). */
char *enc_b64(const struct xdr_writer *w);

#endif
