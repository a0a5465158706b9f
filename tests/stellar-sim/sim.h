/*
 * sim.h - stellar-sim, a local Stellar RPC network for tests and benchmarks.
 *
 * Shape of the program: http.c accepts requests (libmicrohttpd, epoll thread
 * pool) and applies fault injection; rpc.c dispatches JSON-RPC methods;
 * envelope.c decodes and signature-checks submitted envelopes WITHOUT the
 * chain lock (the expensive part); everything that reads or changes chain
 * state (chain.c, submit.c, close.c, vault.c, feestats.c, view.c's account
 * history) runs under the one chain mutex; read methods answer as of a view
 * (view.c: the ingest-lag fault picks its ledger); a timer thread closes a
 * ledger every --ledger-ms.
 *
 * This header holds the configuration and the pieces shared by several
 * files. The chain's API is in chain.h.
 */
#ifndef OUTBOX_SIM_H
#define OUTBOX_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/stellar-sim/table.h"

#define SIM_PROTOCOL_VERSION 23
#define SIM_MAX_BODY         (512 * 1024) /* request body bound */

struct sim_config {
	char listen_host[64];
	unsigned port; /* 0: ephemeral, printed on stdout */
	char passphrase[256];
	uint8_t network_id[32];
	unsigned ledger_ms;
	unsigned ledger_capacity; /* transactions per ledger */
	uint8_t vault_contract[32];
	bool debug;
	bool strict_simulate;      /* simulate runs the vault's preconditions */
	const char *accounts_file; /* --accounts: created before the sim answers anything */
	uint32_t base_fee;
	unsigned queue_ledgers;     /* TRANSACTION_QUEUE_TIMEOUT_LEDGERS */
	unsigned ban_ledgers;       /* TRANSACTION_QUEUE_BAN_LEDGERS */
	unsigned retention_ledgers; /* getTransaction window */
	unsigned queue_capacity;    /* pending transactions (0: 2 x capacity) */
	uint64_t seed;
	unsigned threads;      /* HTTP worker threads */
	int64_t vault_reserve; /* the vault's own starting balance */
	uint32_t start_ledger; /* sequence of the genesis ledger */
	unsigned hold_max_ms;  /* how long a "timeout" fault holds a connection */
	unsigned fee_window_classic;
	unsigned fee_window_soroban;
};

/* What a vault call or payment does once applied (decoded at submission). */
enum sim_op_kind {
	SIM_OP_VAULT,    /* INVOKE_HOST_FUNCTION on the vault contract */
	SIM_OP_CONTRACT, /* INVOKE_HOST_FUNCTION on another contract: traps */
	SIM_OP_PAYMENT,  /* native payment */
};

enum sim_vault_fn {
	SIM_VAULT_DEPOSIT,
	SIM_VAULT_WITHDRAW,
	SIM_VAULT_REBALANCE,
	SIM_VAULT_PAY_REFERRAL,
	SIM_VAULT_BAD, /* unknown function or bad arguments: traps when applied */
};

struct sim_vault_call {
	enum sim_vault_fn fn;
	uint8_t user[32]; /* deposit/withdraw user, pay_referral referrer */
	bool user_is_contract;
	__int128 amount;
	uint8_t op_ref[32];
};

/*
 * A submitted envelope after decoding and signature checks, flattened to
 * what admission and application need. Owns envelope_b64.
 */
struct sim_tx {
	uint8_t hash[32];       /* the envelope's hash (outer for a fee bump) */
	uint8_t inner_hash[32]; /* == hash for a v1 envelope */
	bool fee_bump;
	uint8_t source[32];     /* inner source: the sequence account */
	uint8_t fee_source[32]; /* who pays: bump fee source, else source */
	int64_t seq;
	int64_t fee;       /* the bid: bump fee, else tx fee */
	int64_t inner_fee; /* the inner tx's fee */
	uint32_t n_ops;    /* inner operation count */
	bool soroban;      /* its operation is INVOKE_HOST_FUNCTION */
	int64_t resource_fee;
	uint32_t instructions;
	/* validity */
	uint64_t min_time, max_time; /* max 0: unbounded */
	uint32_t min_ledger, max_ledger;
	bool has_min_seq_num;
	int64_t min_seq_num;
	/*
	 * Codes from checks that need no chain state (0: passed), for the
	 * v1 transaction (the inner one of a bump) and for the bump's outer
	 * part. Admission reports them in stellar-core's check order:
	 * structure, time, fee, account, seq, then signatures.
	 */
	int32_t static_code;    /* txMISSING_OPERATION, txMALFORMED, txSOROBAN_INVALID, ... */
	int32_t sig_code;       /* txBAD_AUTH / txBAD_AUTH_EXTRA of the (inner) tx */
	int32_t outer_sig_code; /* fee bumps: the fee source's signatures */
	/* the operation */
	enum sim_op_kind kind;
	struct sim_vault_call call;
	bool footprint_ok; /* Soroban data declares the keys the call touches */
	bool auth_ok;      /* carries the auth entry simulate returned */
	uint8_t pay_dest[32];
	int64_t pay_amount;
	char *envelope_b64;
	char *auth_b64; /* simulate only: the auth entry the call needs */
	/* filled by the chain while queued */
	struct table_node qnode; /* key = hash, in the queue or black-hole index */
	bool included;           /* chosen for the ledger being closed */
	uint32_t queued_at;      /* latest ledger when admitted */
	uint64_t tiebreak;
};

void sim_tx_free(struct sim_tx *tx);

/* a + b clamped to int64 (fee fields come from hostile envelopes). */
int64_t sim_fee_add(__int128 a, __int128 b);

/* Inclusion bid and the op count it is spread over (a bump counts k+1). */
int64_t sim_tx_incl_bid(const struct sim_tx *tx);
uint32_t sim_tx_fee_ops(const struct sim_tx *tx);

/* Deterministic PRNG (splitmix64) seeded from --seed; thread-safe. */
void sim_rand_seed(uint64_t seed);
uint64_t sim_rand_u64(void);
double sim_rand_unit(void); /* [0, 1) */

/* Monotonic milliseconds and wall-clock seconds. */
uint64_t sim_now_ms(void);
uint64_t sim_wall_s(void);

/* Lowercase hex of n bytes into out[2n+1]; parse exactly 2n hex chars. */
void sim_hex(const uint8_t *p, size_t n, char *out);
int sim_unhex(const char *s, uint8_t *out, size_t n);

#endif
