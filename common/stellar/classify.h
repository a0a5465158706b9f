/*
 * classify.h - what to do about an RPC outcome (common/stellar/README.md:
 * Result classification, Queue rules, Time and ledger bounds). Pure
 * functions: no I/O, no clock, no globals; the same input always gives the
 * same verdict, so the whole table is unit-tested.
 *
 * The verdict is an action plus facts the caller needs to apply it safely:
 *
 *	struct outcome o = classify_send(send->status, decoded_or_NULL);
 *	if (o.action == OUTCOME_BUMP_FEE) ... o.min_fee ...
 *
 * The exactly-once rule stays with the caller: TRANSIENT for a sendTransaction
 * means "send the SAME envelope again (or fee-bump the same inner tx)"; a new
 * transaction is built only on REFETCH_SEQ / REBUILD / RESIMULATE / RESTORE,
 * and for REFETCH_SEQ only after proving the earlier tx dead (common/fate.h).
 */
#ifndef OUTBOX_STELLAR_CLASSIFY_H
#define OUTBOX_STELLAR_CLASSIFY_H

#include "common/stellar/rpc.h"
#include "common/stellar/txresult.h"

#include <stdbool.h>
#include <stdint.h>

enum outcome_action {
	OUTCOME_SUCCESS,     /* done: the tx is in a ledger and succeeded */
	OUTCOME_PENDING,     /* accepted or not yet seen: poll getTransaction */
	OUTCOME_TRANSIENT,   /* retry the same request / envelope after backoff */
	OUTCOME_WAIT,        /* txTOO_EARLY: resend the same envelope once valid */
	OUTCOME_BUMP_FEE,    /* txINSUFFICIENT_FEE: fee-bump (or rebuild) bidding min_fee+ */
	OUTCOME_REFETCH_SEQ, /* txBAD_SEQ: prove the old tx is dead, refetch seqNum, rebuild */
	OUTCOME_REBUILD,     /* build a new tx (new bounds; next seq if seq_consumed) */
	OUTCOME_RESIMULATE,  /* simulate again, then a new tx (next seq if seq_consumed) */
	OUTCOME_RESTORE,     /* ENTRY_ARCHIVED: restore the footprint, then a new tx */
	OUTCOME_FUND,        /* txINSUFFICIENT_BALANCE: retry only after funding */
	OUTCOME_FINAL,       /* fail the op now with the code */
};

struct outcome {
	enum outcome_action action;
	bool seq_consumed;  /* the tx was applied in a ledger: never resend it */
	bool limited;       /* retry only a small bounded number of times */
	bool alert;         /* operator attention: configuration, funding or a bug */
	int32_t code;       /* deciding result code (tx or op level), 0 if none */
	int64_t min_fee;    /* BUMP_FEE: the minimum full fee the node would accept */
	const char *reason; /* static text for logs and events, e.g. "txBAD_SEQ" */
};

const char *outcome_action_name(enum outcome_action a);

/*
 * A call that produced no usable result: transport failures, HTTP errors,
 * malformed bodies and JSON-RPC error objects (rpc_code for RPC_E_JSONRPC).
 * status must not be RPC_OK.
 */
struct outcome classify_transport(enum rpc_status status, int64_t rpc_code);

/*
 * sendTransaction answered. r is the decoded errorResultXdr for ERROR (NULL
 * if it could not be decoded); ignored for the other statuses.
 */
struct outcome classify_send(enum rpc_send_status status, const struct tx_result *r);

/*
 * getTransaction answered. r is the decoded resultXdr for SUCCESS / FAILED
 * (NULL if it could not be decoded); ignored for NOT_FOUND. NOT_FOUND is
 * PENDING here: NOT_FOUND proves nothing, and deciding that a tx can never
 * land takes an account read after its last chance (common/fate.h), which
 * is the caller's job.
 */
struct outcome classify_get(enum rpc_tx_status status, const struct tx_result *r);

/*
 * simulateTransaction returned result.error: a contract error
 * ("Error(Contract, #n)") is final for the op; anything else (host, budget,
 * storage) may be retried after backoff.
 */
struct outcome classify_simulate_error(const char *error);

#endif
