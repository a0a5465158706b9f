/*
 * xdr.h - the Stellar XDR types outboxd builds and reads back, as plain C
 * structs, with an encoder and a strict decoder for each envelope.
 * Layouts: common/stellar/README.md, XDR.
 *
 * Covered: TransactionEnvelope of type ENVELOPE_TYPE_TX (v1) and
 * ENVELOPE_TYPE_TX_FEE_BUMP; Transaction with a MuxedAccount source;
 * Preconditions NONE, TIME and V2 (decoded and re-encoded field by field);
 * Memo NONE/TEXT/ID/HASH/RETURN; Operations PAYMENT (any Asset) and
 * INVOKE_HOST_FUNCTION of type INVOKE_CONTRACT with ScVal arguments;
 * SorobanTransactionData (kept as validated raw bytes plus the figures outboxd
 * reads); SorobanAuthorizationEntry (validated, passed through raw);
 * DecoratedSignature. Anything else (TX_V0 envelopes, other operation types,
 * other host functions, ScVal arms outside enum xdr_scval_type) is rejected
 * with an error naming the type and the value.
 *
 * Capacities are fixed and documented below; the decoder rejects input that
 * exceeds them (no allocation, ever). Decoded structs hold views into the
 * decode input (see xdr_buf.h): keep that buffer alive while you use them.
 * Structs are plain values: copying one keeps its views valid. A struct
 * xdr_envelope is about 24 KiB (the fixed arrays): keep it static or on the
 * heap in deep call chains and event-loop threads.
 *
 * Building: zero a struct (or use the txbuild.h helpers), fill the fields,
 * point views at your own memory, and call the encoder.
 */
#ifndef OUTBOX_STELLAR_XDR_H
#define OUTBOX_STELLAR_XDR_H

#include "common/error.h"
#include "common/stellar/xdr_buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- capacities (documented maxima; the decoder rejects anything larger) --- */
#define XDR_MAX_ENVELOPE_BYTES 262144 /* total decode input (a Soroban tx is <= 132096) */
#define XDR_MAX_OPS            100    /* Transaction.operations<100> */
#define XDR_MAX_SIGS           20     /* signatures<20> */
#define XDR_MAX_ARGS           64     /* ScVal arguments, summed over all ops of one tx */
#define XDR_MAX_AUTH           32     /* SorobanAuthorizationEntry per operation */
#define XDR_MAX_DEPTH          32     /* nesting of ScVal / invocations inside auth and footprint */
#define XDR_MAX_BYTES_LEN      65536  /* SCV_BYTES / SCV_STRING payload */
#define XDR_SYMBOL_MAX         32     /* SCSymbol string<32> */
#define XDR_MEMO_TEXT_MAX      28     /* Memo text string<28> */

enum xdr_envelope_type {
	ENVELOPE_TYPE_TX_V0 = 0, /* legacy: rejected */
	ENVELOPE_TYPE_TX = 2,
	ENVELOPE_TYPE_TX_FEE_BUMP = 5,
};

enum xdr_key_type {
	KEY_TYPE_ED25519 = 0,
	KEY_TYPE_MUXED_ED25519 = 0x100,
};

/* MuxedAccount: ed25519 key, or (KEY_TYPE_MUXED_ED25519) key plus 64-bit id. */
struct xdr_muxed {
	uint32_t type; /* enum xdr_key_type */
	uint64_t id;   /* muxed only */
	uint8_t key[32];
};

enum xdr_precond_type {
	PRECOND_NONE = 0,
	PRECOND_TIME = 1,
	PRECOND_V2 = 2,
};

struct xdr_time_bounds {
	uint64_t min_time;
	uint64_t max_time; /* 0 = unbounded */
};

/*
 * Preconditions. PRECOND_TIME uses time_bounds only. PRECOND_V2 uses the rest;
 * extra_signers (SignerKey<2>) is validated and kept raw with its count.
 */
struct xdr_precond {
	uint32_t type; /* enum xdr_precond_type */
	struct xdr_time_bounds time_bounds;
	bool has_time_bounds; /* V2 only; TIME implies true */
	bool has_ledger_bounds;
	uint32_t min_ledger, max_ledger;
	bool has_min_seq_num;
	int64_t min_seq_num;
	uint64_t min_seq_age;
	uint32_t min_seq_ledger_gap;
	uint32_t n_extra_signers;
	struct xdr_bytes extra_signers; /* raw SignerKey elements, without the count */
};

enum xdr_memo_type {
	MEMO_NONE = 0,
	MEMO_TEXT = 1,
	MEMO_ID = 2,
	MEMO_HASH = 3,
	MEMO_RETURN = 4,
};

struct xdr_memo {
	uint32_t type;         /* enum xdr_memo_type */
	struct xdr_bytes text; /* MEMO_TEXT, <= 28 bytes, any bytes */
	uint64_t id;           /* MEMO_ID */
	uint8_t hash[32];      /* MEMO_HASH, MEMO_RETURN */
};

enum xdr_sc_address_type {
	SC_ADDRESS_TYPE_ACCOUNT = 0,
	SC_ADDRESS_TYPE_CONTRACT = 1,
};

/* SCAddress: an account (ed25519 key) or a contract id. */
struct xdr_sc_address {
	uint32_t type; /* enum xdr_sc_address_type */
	uint8_t id[32];
};

enum xdr_scval_type {
	SCV_BOOL = 0,
	SCV_VOID = 1,
	SCV_U32 = 3,
	SCV_I32 = 4,
	SCV_U64 = 5,
	SCV_I64 = 6,
	SCV_U128 = 9,
	SCV_I128 = 10,
	SCV_BYTES = 13,
	SCV_STRING = 14,
	SCV_SYMBOL = 15,
	SCV_ADDRESS = 18,
};

/* An ScVal argument. Arms outside enum xdr_scval_type are rejected as arguments. */
struct xdr_scval {
	uint32_t type; /* enum xdr_scval_type */
	union {
		bool b;
		uint32_t u32;
		int32_t i32;
		uint64_t u64;
		int64_t i64;
		struct {
			int64_t hi; /* I128: signed upper half; U128: cast to uint64_t */
			uint64_t lo;
		} i128;
		struct xdr_bytes
			bytes; /* BYTES (<= XDR_MAX_BYTES_LEN), STRING, SYMBOL (<= 32, [A-Za-z0-9_]) */
		struct xdr_sc_address addr;
	} v;
};

enum xdr_asset_type {
	ASSET_TYPE_NATIVE = 0,
	ASSET_TYPE_CREDIT_ALPHANUM4 = 1,
	ASSET_TYPE_CREDIT_ALPHANUM12 = 2,
};

struct xdr_asset {
	uint32_t type; /* enum xdr_asset_type */
	char code[13]; /* NUL-padded code (4 or 12 bytes on the wire), NUL-terminated here */
	uint8_t issuer[32];
};

enum xdr_op_type {
	XDR_OP_PAYMENT = 1,
	XDR_OP_INVOKE_HOST_FUNCTION = 24,
};

struct xdr_payment {
	struct xdr_muxed destination;
	struct xdr_asset asset;
	int64_t amount; /* stroops */
};

/*
 * InvokeHostFunctionOp with HostFunction INVOKE_CONTRACT. Its arguments are
 * tx->args[first_arg .. first_arg + n_args). auth holds the n_auth
 * SorobanAuthorizationEntry elements exactly as on the wire (after the count),
 * each validated by a full structural decode.
 */
struct xdr_invoke {
	struct xdr_sc_address contract;
	struct xdr_bytes function; /* SCSymbol */
	uint32_t first_arg;
	uint32_t n_args;
	uint32_t n_auth;
	struct xdr_bytes auth;
};

struct xdr_op {
	bool has_source;
	struct xdr_muxed source;
	uint32_t type; /* enum xdr_op_type */
	union {
		struct xdr_payment payment;
		struct xdr_invoke invoke;
	} body;
};

/*
 * SorobanTransactionData (Transaction.ext arm 1). raw is the complete
 * structure as on the wire (what the encoder writes back, byte for byte); the
 * other fields are read out of it by the decoder (and by xdr_soroban_data_parse).
 */
struct xdr_soroban_data {
	struct xdr_bytes raw;
	int64_t resource_fee;
	uint32_t instructions;
	uint32_t disk_read_bytes;
	uint32_t write_bytes;
	uint32_t n_read_only; /* footprint LedgerKeys */
	uint32_t n_read_write;
};

struct xdr_tx {
	struct xdr_muxed source;
	uint32_t fee; /* max total: inclusion bid + resource fee */
	int64_t seq_num;
	struct xdr_precond cond;
	struct xdr_memo memo;
	uint32_t n_ops;
	struct xdr_op ops[XDR_MAX_OPS];
	uint32_t n_args; /* used entries of args (shared by the ops) */
	struct xdr_scval args[XDR_MAX_ARGS];
	bool has_soroban; /* ext v1 */
	struct xdr_soroban_data soroban;
};

/* DecoratedSignature: hint = last 4 bytes of the signer's public key. */
struct xdr_sig {
	uint8_t hint[4];
	uint8_t sig[64];
};

/*
 * A TransactionEnvelope. For ENVELOPE_TYPE_TX, tx/n_sigs/sigs are the
 * envelope. For ENVELOPE_TYPE_TX_FEE_BUMP, they are the inner v1 envelope
 * (which keeps its own signatures) and bump holds the outer part.
 */
struct xdr_envelope {
	uint32_t type; /* ENVELOPE_TYPE_TX or ENVELOPE_TYPE_TX_FEE_BUMP */
	struct xdr_tx tx;
	uint32_t n_sigs;
	struct xdr_sig sigs[XDR_MAX_SIGS];
	struct {
		struct xdr_muxed fee_source;
		int64_t fee; /* outer max fee */
		uint32_t n_sigs;
		struct xdr_sig sigs[XDR_MAX_SIGS];
	} bump;
};

/*
 * Decode a whole TransactionEnvelope from buf[0..len) (len <=
 * XDR_MAX_ENVELOPE_BYTES); trailing bytes are an error. env views point into
 * buf. Returns 0, or OUTBOX_EPROTO/OUTBOX_ETOOBIG with err naming the field.
 */
int xdr_envelope_decode(struct xdr_envelope *env, const uint8_t *buf, size_t len,
			struct outbox_error *err);

/*
 * Base64 convenience: decodes b64 into a malloc'd buffer (*raw, freed by the
 * caller with free(); views point into it) and then the envelope.
 */
int xdr_envelope_decode_b64(struct xdr_envelope *env, const char *b64, size_t b64len, uint8_t **raw,
			    size_t *raw_len, struct outbox_error *err);

/* Encoders. They validate counts and lengths against the capacities above. */
int xdr_envelope_encode(const struct xdr_envelope *env, struct xdr_writer *w);
int xdr_tx_encode(const struct xdr_tx *tx, struct xdr_writer *w);
/* The envelope as a malloc'd base64 string (*out), 0 or < 0. */
int xdr_envelope_to_b64(const struct xdr_envelope *env, char **out);

/* Pieces, also used by txbuild and stellar-sim. */
void xdr_put_muxed(struct xdr_writer *w, const struct xdr_muxed *m);
void xdr_put_sc_address(struct xdr_writer *w, const struct xdr_sc_address *a);
void xdr_put_scval(struct xdr_writer *w, const struct xdr_scval *v);
int xdr_get_scval(struct xdr_reader *r, const char *field, struct xdr_scval *v);

/*
 * Validate raw SorobanTransactionData / one SorobanAuthorizationEntry by a
 * full structural decode (every length bounded, trailing bytes rejected).
 * xdr_soroban_data_parse also fills out (its raw view = buf).
 */
int xdr_soroban_data_parse(const uint8_t *buf, size_t len, struct xdr_soroban_data *out,
			   struct outbox_error *err);
int xdr_auth_entry_check(const uint8_t *buf, size_t len, struct outbox_error *err);

/*
 * The rules stellar-core applies to any tx with an INVOKE_HOST_FUNCTION op:
 * exactly one operation, MEMO_NONE, no muxed source (tx or op), Soroban data
 * present. 0 for a classic tx or a conforming Soroban one; else OUTBOX_EINVAL
 * with err naming the rule. Also: a classic tx must not carry Soroban data.
 */
int xdr_tx_check_soroban(const struct xdr_tx *tx, struct outbox_error *err);

/*
 * Hashes (README.md, Signatures and hashes): SHA-256 of networkId || envelope type ||
 * the tagged transaction. xdr_tx_hash: a v1 Transaction. xdr_envelope_hash:
 * the envelope's own hash (outer hash for a fee bump). xdr_envelope_inner_hash:
 * the v1 transaction's hash (for a v1 envelope equal to xdr_envelope_hash).
 * network_id = SHA-256(passphrase) (stellar_network_id in sign.h).
 */
int xdr_tx_hash(const struct xdr_tx *tx, const uint8_t network_id[32], uint8_t hash[32]);
int xdr_envelope_hash(const struct xdr_envelope *env, const uint8_t network_id[32],
		      uint8_t hash[32]);
int xdr_envelope_inner_hash(const struct xdr_envelope *env, const uint8_t network_id[32],
			    uint8_t hash[32]);
/*
 * The TransactionSignaturePayload bytes (networkId || type || tagged tx) into w;
 * for a fee bump, the outer payload. For tests and cross-checks.
 */
int xdr_envelope_signature_payload(const struct xdr_envelope *env, const uint8_t network_id[32],
				   struct xdr_writer *w);

/*
 * i128 <-> decimal. Parse accepts an optional '-' then 1..39 digits (no '+',
 * no leading zeros except "0", no spaces), exact, rejecting anything outside
 * [-2^127, 2^127-1]. Format needs out[XDR_I128_DEC_BUF].
 */
#define XDR_I128_DEC_BUF 42
int xdr_i128_parse(const char *s, int64_t *hi, uint64_t *lo, const char *field,
		   struct outbox_error *err);
void xdr_i128_format(int64_t hi, uint64_t lo, char out[XDR_I128_DEC_BUF]);
void xdr_u128_format(uint64_t hi, uint64_t lo, char out[XDR_I128_DEC_BUF]);

/* Names for messages and JSON: "SCV_I128", "MEMO_HASH", ...; NULL when unknown. */
const char *xdr_scval_type_name(uint32_t t);
const char *xdr_memo_type_name(uint32_t t);

#endif
