/*
 * txbuild.h - build the transactions outboxd sends: the four vault-contract
 * calls, classic native payments, and fee bumps around an already signed
 * inner envelope (common/stellar/README.md: SorobanTransactionData and
 * building from a simulation; Fee-bump rules).
 *
 * A struct txbuild owns everything its envelope points at (the decoded
 * simulation fragments, the inner envelope of a bump, the op_ref), so the
 * result is self-contained until txbuild_release(). Typical flow:
 *
 *	txbuild_vault(&b, &src, &call, NULL, &err);       unsigned, for simulate
 *	txbuild_to_b64(&b, &b64) ... simulateTransaction ...
 *	txbuild_vault(&b, &src, &call, &sim, &err);       final, with sim data
 *	txbuild_sign(&b, &kp, network_id, &err);           b.hash is the tx hash
 *	txbuild_to_b64(&b, &b64);                          sendTransaction
 *
 * Contract calls always carry MEMO_NONE and refuse a muxed (M...) source:
 * stellar-core rejects both on Soroban transactions. Every input is checked
 * and errors name the field and the value (never a secret).
 */
#ifndef OUTBOX_STELLAR_TXBUILD_H
#define OUTBOX_STELLAR_TXBUILD_H

#include "common/error.h"
#include "common/stellar/sign.h"
#include "common/stellar/xdr.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vault_fn {
	VAULT_DEPOSIT,      /* deposit(user: Address, amount: i128, op_ref: BytesN<32>) */
	VAULT_WITHDRAW,     /* withdraw(user: Address, amount: i128, op_ref: BytesN<32>) */
	VAULT_REBALANCE,    /* rebalance(amount: i128, op_ref: BytesN<32>) */
	VAULT_PAY_REFERRAL, /* pay_referral(referrer: Address, amount: i128, op_ref: BytesN<32>) */
};

/* "deposit", "withdraw", "rebalance", "pay_referral"; NULL if out of range. */
const char *vault_fn_name(enum vault_fn fn);

/* What every transaction needs. */
struct txbuild_source {
	const char *account; /* G... (M... only for payments) */
	int64_t seq_num;     /* account seqNum + 1; must be > 0 */
	uint32_t fee;        /* classic: total fee; Soroban: inclusion bid (resourceFee added) */
	uint64_t min_time;   /* time bounds; max_time 0 = unbounded: never for outboxd, a */
	uint64_t max_time;   /* transaction without bounds can never be proven dead (fate.h) */
	/*
	 * Ledger bounds (PRECOND_V2 when either is set): valid only in ledgers
	 * n with min_ledger <= n and, when max_ledger != 0, n < max_ledger.
	 */
	uint32_t min_ledger;
	uint32_t max_ledger;
};

struct txbuild_vault_call {
	const char *contract; /* C... OUTBOX_VAULT_CONTRACT */
	enum vault_fn fn;
	const char *account;         /* user / referrer G... (unused for rebalance) */
	const char *amount;          /* decimal i128, exact */
	const char *idempotency_key; /* op_ref = SHA-256 of these bytes */
	size_t idempotency_key_len;
};

/* simulateTransaction output, passed through raw (validated by decoding). */
struct txbuild_sim {
	const char *transaction_data; /* base64 SorobanTransactionData */
	const char *const *auth;      /* base64 SorobanAuthorizationEntry[n_auth] */
	size_t n_auth;
};

struct txbuild {
	struct xdr_envelope env;
	uint8_t op_ref[32]; /* vault calls: SHA-256(idempotency key) */
	uint8_t hash[32];   /* after txbuild_sign: the envelope's hash (outer for bumps) */
	bool is_signed;
	uint8_t *owned; /* decoded fragments the envelope points into */
	size_t owned_len;
};

void txbuild_init(struct txbuild *b);    /* all zero: calloc'd memory is a builder too */
void txbuild_release(struct txbuild *b); /* frees what b owns; b is as after init */
/*
 * Frees what b owns and leaves b's envelope as it is: for a builder whose
 * memory is freed next (clearing ~24 KB only to free it was a visible share
 * of a worker's CPU).
 */
void txbuild_dispose(struct txbuild *b);

/*
 * A vault call. sim == NULL builds the simulation request (ext v0, no auth,
 * fee = src->fee). With sim: ext v1 = transactionData, auth = the entries,
 * fee = src->fee + resourceFee, which must fit in a u32 (else OUTBOX_EINVAL;
 * only a fee bump could pay more: README.md, Fee-bump rules). Replaces
 * whatever b held.
 */
int txbuild_vault(struct txbuild *b, const struct txbuild_source *src,
		  const struct txbuild_vault_call *call, const struct txbuild_sim *sim,
		  struct outbox_error *err);

/*
 * A classic native payment of amount stroops (> 0) to destination (G or M);
 * memo_hash (may be NULL) becomes MEMO_HASH.
 */
int txbuild_payment(struct txbuild *b, const struct txbuild_source *src, const char *destination,
		    int64_t amount, const uint8_t *memo_hash, struct outbox_error *err);

/*
 * Wrap an already signed v1 envelope (base64) in a fee bump paid by
 * fee_source (G...) with outer max fee `fee`. Refuses a fee the network would
 * refuse under rules 1 and 2 (README.md, Fee-bump rules) for base_fee (see
 * txbuild_fee_bump_check). The inner envelope and its signatures are kept
 * byte for byte.
 */
int txbuild_fee_bump(struct txbuild *b, const char *inner_b64, const char *fee_source, int64_t fee,
		     uint32_t base_fee, struct outbox_error *err);

/* Sign the envelope (outer for a bump) and set b->hash. Can be repeated for more signers. */
int txbuild_sign(struct txbuild *b, const struct stellar_keypair *kp, const uint8_t network_id[32],
		 struct outbox_error *err);

/* The envelope as a malloc'd NUL-terminated base64 string. */
int txbuild_to_b64(const struct txbuild *b, char **out);

/*
 * Fee-bump fee rules (common/stellar/README.md, Fee-bump rules and Queue
 * rules). For an inner tx with max fee inner_fee, resource fee R (0 for
 * classic) and k operations:
 *   innerIncl = inner_fee - R, outerIncl = outer_fee - R, the bump counts k+1 ops;
 *   rule 1: outerIncl >= base_fee * (k + 1);
 *   rule 2: outerIncl * k >= innerIncl * (k + 1)   (skipped when innerIncl <= 0).
 * Replace-by-fee: while a tx with the same seq sits in the node's queue with
 * inclusion fee q_incl over q_ops operations, a bump is admitted only if
 *   outerIncl * q_ops >= 10 * q_incl * (k + 1).
 */
struct fee_bump_inner {
	int64_t fee;          /* inner Transaction.fee */
	int64_t resource_fee; /* SorobanTransactionData.resourceFee, 0 for classic */
	uint32_t n_ops;       /* k >= 1 */
};

struct fee_bump_queued {
	int64_t incl;   /* inclusion fee of the queued tx (its fee minus R) */
	uint32_t n_ops; /* its op count: k for the inner itself, k+1 for a queued bump */
};

/*
 * The smallest outer fee (FeeBumpTransaction.fee) satisfying rules 1 and 2
 * and, when queued != NULL, the 10x displacement rule. 0, or OUTBOX_EINVAL
 * for bad inputs / overflow of int64.
 */
int txbuild_fee_bump_min_fee(const struct fee_bump_inner *inner, uint32_t base_fee,
			     const struct fee_bump_queued *queued, int64_t *min_fee,
			     struct outbox_error *err);

/* 0 when outer_fee satisfies rules 1 and 2 (and 10x when queued), else OUTBOX_EINVAL naming the rule. */
int txbuild_fee_bump_check(const struct fee_bump_inner *inner, uint32_t base_fee,
			   const struct fee_bump_queued *queued, int64_t outer_fee,
			   struct outbox_error *err);

#endif
