/*
 * txresult.c - TransactionResult decoding (README.md, TransactionResult) and
 * result-code names. Transaction codes the table does not know are kept raw
 * (they carry no arm); operation results are walked for the operation types
 * outboxd sends (and the few others whose result arms are plain codes), and
 * anything else is rejected by name, since its arm length is unknown.
 */
#include "common/stellar/txresult.h"
#include "common/error.h"
#include "common/stellar/xdr_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TX_RESULT_MAX_BYTES 65536
#define TX_RESULT_MAX_OPS   100

const char *tx_result_code_name(int32_t code)
{
	static const char *const names[] = {
		"txFEE_BUMP_INNER_SUCCESS",
		"txSUCCESS",
		"txFAILED",
		"txTOO_EARLY",
		"txTOO_LATE",
		"txMISSING_OPERATION",
		"txBAD_SEQ",
		"txBAD_AUTH",
		"txINSUFFICIENT_BALANCE",
		"txNO_ACCOUNT",
		"txINSUFFICIENT_FEE",
		"txBAD_AUTH_EXTRA",
		"txINTERNAL_ERROR",
		"txNOT_SUPPORTED",
		"txFEE_BUMP_INNER_FAILED",
		"txBAD_SPONSORSHIP",
		"txBAD_MIN_SEQ_AGE_OR_GAP",
		"txMALFORMED",
		"txSOROBAN_INVALID",
		"txFROZEN_KEY_ACCESSED",
	};
	int idx = 1 - code; /* 1 -> 0, 0 -> 1, -18 -> 19 */

	if (idx < 0 || idx >= (int)(sizeof(names) / sizeof(names[0])))
		return "tx<unknown>";
	return names[idx];
}

/* One OperationResult; records it in res when it is the first. */
static int get_op_result(struct xdr_reader *r, struct tx_result *res, uint32_t index)
{
	int32_t code, type = -1, inner = 0;

	if (xdr_get_i32(r, "result.op", &code))
		return r->status;
	if (code == OP_INNER) {
		if (xdr_get_i32(r, "result.op.type", &type) ||
		    xdr_get_i32(r, "result.op.code", &inner))
			return r->status;
		switch (type) {
		case 24: /* INVOKE_HOST_FUNCTION: SUCCESS carries the result hash */
			if (inner == IHF_SUCCESS && xdr_skip(r, "result.op.hash", 32))
				return r->status;
			break;
		case 0:        /* CREATE_ACCOUNT */
		case 1:        /* PAYMENT */
		case 11:       /* BUMP_SEQUENCE */
		case 25:       /* EXTEND_FOOTPRINT_TTL */
		case 26:       /* RESTORE_FOOTPRINT */
			break; /* every arm is void */
		default:
			return xdr_fail(r, OUTBOX_EPROTO, "result.op.type",
					"unsupported OperationType %d in a result", type);
		}
	} else if (code < OP_TOO_MANY_SPONSORING || code > OP_INNER) {
		return xdr_fail(r, OUTBOX_EPROTO, "result.op", "unknown OperationResultCode %d",
				code);
	}
	if (index == 0) {
		res->op_code = code;
		res->op_type = type;
		res->op_inner = inner;
	}
	return 0;
}

static int get_op_results(struct xdr_reader *r, struct tx_result *res)
{
	if (xdr_get_count(r, "result.results", TX_RESULT_MAX_OPS, &res->n_ops))
		return r->status;
	for (uint32_t i = 0; i < res->n_ops; i++)
		if (get_op_result(r, res, i))
			return r->status;
	return 0;
}

static int get_ext(struct xdr_reader *r, const char *field)
{
	uint32_t ext;

	if (xdr_get_u32(r, field, &ext))
		return r->status;
	if (ext != 0)
		return xdr_fail(r, OUTBOX_EPROTO, field, "unknown ext version %u", ext);
	return 0;
}

static int get_inner(struct xdr_reader *r, struct tx_result *res)
{
	int64_t fee;

	if (xdr_skip(r, "result.inner_hash", 32) ||
	    xdr_get_i64(r, "result.inner.fee_charged", &fee) ||
	    xdr_get_i32(r, "result.inner.code", &res->inner_code))
		return r->status;
	if (res->inner_code == TX_FEE_BUMP_INNER_SUCCESS ||
	    res->inner_code == TX_FEE_BUMP_INNER_FAILED)
		return xdr_fail(r, OUTBOX_EPROTO, "result.inner.code",
				"fee-bump code %d inside a fee bump", res->inner_code);
	if ((res->inner_code == TX_SUCCESS || res->inner_code == TX_FAILED) &&
	    get_op_results(r, res))
		return r->status;
	return get_ext(r, "result.inner.ext");
}

int tx_result_decode(struct tx_result *res, const uint8_t *buf, size_t len,
		     struct outbox_error *err)
{
	struct xdr_reader r;

	memset(res, 0, sizeof(*res));
	res->op_type = -1;
	if (xdr_reader_init(&r, buf, len, TX_RESULT_MAX_BYTES, err))
		return r.status;
	if (xdr_get_i64(&r, "result.fee_charged", &res->fee_charged) ||
	    xdr_get_i32(&r, "result.code", &res->code))
		return r.status;
	res->inner_code = res->code;
	if (res->code == TX_FEE_BUMP_INNER_SUCCESS || res->code == TX_FEE_BUMP_INNER_FAILED) {
		if (get_inner(&r, res))
			return r.status;
	} else if (res->code == TX_SUCCESS || res->code == TX_FAILED) {
		if (get_op_results(&r, res))
			return r.status;
	}
	if (get_ext(&r, "result.ext"))
		return r.status;
	return xdr_reader_finish(&r, "result");
}

int tx_result_decode_b64(struct tx_result *res, const char *b64, struct outbox_error *err)
{
	size_t n = b64 ? strlen(b64) : 0, len = 0;
	uint8_t *buf;
	int rc;

	memset(res, 0, sizeof(*res));
	if (n > (TX_RESULT_MAX_BYTES / 3 + 1) * 4)
		return outbox_error_set(err, OUTBOX_ETOOBIG, "result", "%zu base64 characters", n);
	buf = malloc(xdr_b64_decoded_max(n) + 1);
	if (!buf)
		return outbox_error_set(err, -ENOMEM, "result", "out of memory");
	rc = xdr_b64_decode(b64, n, buf, xdr_b64_decoded_max(n), &len, "result", err);
	if (!rc)
		rc = tx_result_decode(res, buf, len, err);
	free(buf);
	return rc;
}
