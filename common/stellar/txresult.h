/*
 * txresult.h - Stellar result codes (common/stellar/README.md,
 * TransactionResult), shared by the XDR result decoder (which fills struct
 * tx_result) and the outcome classifier (which decides retry / final from
 * it). Decoders keep codes they do not know
 * as raw integers: the enums grow with the protocol.
 */
#ifndef OUTBOX_STELLAR_TXRESULT_H
#define OUTBOX_STELLAR_TXRESULT_H

#include <stddef.h>
#include <stdint.h>

struct outbox_error;

enum tx_result_code {
	TX_FEE_BUMP_INNER_SUCCESS = 1,
	TX_SUCCESS = 0,
	TX_FAILED = -1,
	TX_TOO_EARLY = -2,
	TX_TOO_LATE = -3,
	TX_MISSING_OPERATION = -4,
	TX_BAD_SEQ = -5,
	TX_BAD_AUTH = -6,
	TX_INSUFFICIENT_BALANCE = -7,
	TX_NO_ACCOUNT = -8,
	TX_INSUFFICIENT_FEE = -9,
	TX_BAD_AUTH_EXTRA = -10,
	TX_INTERNAL_ERROR = -11,
	TX_NOT_SUPPORTED = -12,
	TX_FEE_BUMP_INNER_FAILED = -13,
	TX_BAD_SPONSORSHIP = -14,
	TX_BAD_MIN_SEQ_AGE_OR_GAP = -15,
	TX_MALFORMED = -16,
	TX_SOROBAN_INVALID = -17,
	TX_FROZEN_KEY_ACCESSED = -18,
};

/* OperationResult outer codes. */
enum op_result_code {
	OP_INNER = 0,
	OP_BAD_AUTH = -1,
	OP_NO_ACCOUNT = -2,
	OP_NOT_SUPPORTED = -3,
	OP_TOO_MANY_SUBENTRIES = -4,
	OP_EXCEEDED_WORK_LIMIT = -5,
	OP_TOO_MANY_SPONSORING = -6,
};

enum invoke_host_function_result_code {
	IHF_SUCCESS = 0,
	IHF_MALFORMED = -1,
	IHF_TRAPPED = -2,
	IHF_RESOURCE_LIMIT_EXCEEDED = -3,
	IHF_ENTRY_ARCHIVED = -4,
	IHF_INSUFFICIENT_REFUNDABLE_FEE = -5,
};

enum payment_result_code {
	PAYMENT_SUCCESS = 0,
	PAYMENT_MALFORMED = -1,
	PAYMENT_UNDERFUNDED = -2,
	PAYMENT_SRC_NO_TRUST = -3,
	PAYMENT_SRC_NOT_AUTHORIZED = -4,
	PAYMENT_NO_DESTINATION = -5,
	PAYMENT_NO_TRUST = -6,
	PAYMENT_NOT_AUTHORIZED = -7,
	PAYMENT_LINE_FULL = -8,
	PAYMENT_NO_ISSUER = -9,
};

/*
 * A decoded TransactionResult, flattened to what outboxd acts on. For a
 * fee-bump result (code 1 / -13) inner_code and the op fields describe the
 * inner transaction; otherwise inner_code == code.
 */
struct tx_result {
	int64_t fee_charged;
	int32_t code;       /* enum tx_result_code, or an unknown raw value */
	int32_t inner_code; /* inner transaction's code for fee bumps */
	int32_t op_code;    /* first operation's outer code (enum op_result_code) */
	int32_t op_type;    /* first operation's type when op_code == OP_INNER, else -1 */
	int32_t op_inner;   /* first operation's op-specific code, else 0 */
	uint32_t n_ops;     /* operations in the result (0 when no arm) */
};

/* "txBAD_SEQ", "txSUCCESS", ...; "tx<unknown>" for codes not in the enum. */
const char *tx_result_code_name(int32_t code);

/*
 * Decode a TransactionResult (resultXdr / errorResultXdr) from buf[0..len),
 * strictly (bounded counts, trailing bytes rejected, unknown tx codes kept
 * raw with no arm). For a fee bump the inner result fills inner_code and the
 * op fields. Returns 0, or OUTBOX_EPROTO with err naming the problem.
 */
int tx_result_decode(struct tx_result *res, const uint8_t *buf, size_t len,
		     struct outbox_error *err);
/* The same from standard base64 (NUL-terminated). */
int tx_result_decode_b64(struct tx_result *res, const char *b64, struct outbox_error *err);

#endif
