/*
 * classify.c - the outcome tables of common/stellar/README.md (Result
 * classification), as data.
 *
 * Two tables: transaction-level codes (what a node says at submission, or
 * what a ledger recorded) and operation-level codes for the two operations
 * outboxd sends (INVOKE_HOST_FUNCTION, PAYMENT). A fee bump is judged by its
 * inner transaction. Codes the tables do not know are FINAL with an alert:
 * a protocol newer than this code should stop the op and page a human, not
 * loop.
 */
#include "common/stellar/classify.h"

#include <stddef.h>
#include <string.h>

#define OP_TYPE_PAYMENT              1
#define OP_TYPE_INVOKE_HOST_FUNCTION 24

struct rule {
	int32_t code;
	enum outcome_action action;
	bool limited;
	bool alert;
	const char *reason;
};

/* Transaction-level codes at submission (sendTransaction ERROR). */
static const struct rule tx_rules[] = {
	{TX_FEE_BUMP_INNER_SUCCESS, OUTCOME_TRANSIENT, true, true, "txFEE_BUMP_INNER_SUCCESS"},
	{TX_SUCCESS, OUTCOME_TRANSIENT, true, true, "txSUCCESS"},
	{TX_FAILED, OUTCOME_FINAL, false, true, "txFAILED"}, /* refined by op rules */
	{TX_TOO_EARLY, OUTCOME_WAIT, false, false, "txTOO_EARLY"},
	{TX_TOO_LATE, OUTCOME_REBUILD, false, false, "txTOO_LATE"},
	{TX_MISSING_OPERATION, OUTCOME_FINAL, false, true, "txMISSING_OPERATION"},
	{TX_BAD_SEQ, OUTCOME_REFETCH_SEQ, false, false, "txBAD_SEQ"},
	{TX_BAD_AUTH, OUTCOME_FINAL, false, true, "txBAD_AUTH"},
	{TX_INSUFFICIENT_BALANCE, OUTCOME_FUND, false, true, "txINSUFFICIENT_BALANCE"},
	{TX_NO_ACCOUNT, OUTCOME_FINAL, false, true, "txNO_ACCOUNT"},
	{TX_INSUFFICIENT_FEE, OUTCOME_BUMP_FEE, false, false, "txINSUFFICIENT_FEE"},
	{TX_BAD_AUTH_EXTRA, OUTCOME_FINAL, false, true, "txBAD_AUTH_EXTRA"},
	{TX_INTERNAL_ERROR, OUTCOME_TRANSIENT, true, false, "txINTERNAL_ERROR"},
	{TX_NOT_SUPPORTED, OUTCOME_FINAL, false, true, "txNOT_SUPPORTED"},
	{TX_FEE_BUMP_INNER_FAILED, OUTCOME_FINAL, false, true, "txFEE_BUMP_INNER_FAILED"},
	{TX_BAD_SPONSORSHIP, OUTCOME_FINAL, false, true, "txBAD_SPONSORSHIP"},
	{TX_BAD_MIN_SEQ_AGE_OR_GAP, OUTCOME_FINAL, false, true, "txBAD_MIN_SEQ_AGE_OR_GAP"},
	{TX_MALFORMED, OUTCOME_FINAL, false, true, "txMALFORMED"},
	{TX_SOROBAN_INVALID, OUTCOME_RESIMULATE, true, true, "txSOROBAN_INVALID"},
	{TX_FROZEN_KEY_ACCESSED, OUTCOME_FINAL, false, false, "txFROZEN_KEY_ACCESSED"},
};

/* OperationResult outer codes other than opINNER. */
static const struct rule op_outer_rules[] = {
	{OP_BAD_AUTH, OUTCOME_FINAL, false, true, "opBAD_AUTH"},
	{OP_NO_ACCOUNT, OUTCOME_FINAL, false, true, "opNO_ACCOUNT"},
	{OP_NOT_SUPPORTED, OUTCOME_FINAL, false, true, "opNOT_SUPPORTED"},
	{OP_TOO_MANY_SUBENTRIES, OUTCOME_FINAL, false, true, "opTOO_MANY_SUBENTRIES"},
	{OP_EXCEEDED_WORK_LIMIT, OUTCOME_FINAL, false, true, "opEXCEEDED_WORK_LIMIT"},
	{OP_TOO_MANY_SPONSORING, OUTCOME_FINAL, false, true, "opTOO_MANY_SPONSORING"},
};

static const struct rule ihf_rules[] = {
	{IHF_SUCCESS, OUTCOME_FINAL, false, true, "INVOKE_HOST_FUNCTION_SUCCESS in a failed tx"},
	{IHF_MALFORMED, OUTCOME_FINAL, false, true, "INVOKE_HOST_FUNCTION_MALFORMED"},
	{IHF_TRAPPED, OUTCOME_FINAL, false, false, "INVOKE_HOST_FUNCTION_TRAPPED"},
	{IHF_RESOURCE_LIMIT_EXCEEDED, OUTCOME_RESIMULATE, true, false,
	 "INVOKE_HOST_FUNCTION_RESOURCE_LIMIT_EXCEEDED"},
	{IHF_ENTRY_ARCHIVED, OUTCOME_RESTORE, true, false, "INVOKE_HOST_FUNCTION_ENTRY_ARCHIVED"},
	{IHF_INSUFFICIENT_REFUNDABLE_FEE, OUTCOME_RESIMULATE, true, false,
	 "INVOKE_HOST_FUNCTION_INSUFFICIENT_REFUNDABLE_FEE"},
};

static const struct rule payment_rules[] = {
	{PAYMENT_SUCCESS, OUTCOME_FINAL, false, true, "PAYMENT_SUCCESS in a failed tx"},
	{PAYMENT_MALFORMED, OUTCOME_FINAL, false, true, "PAYMENT_MALFORMED"},
	{PAYMENT_UNDERFUNDED, OUTCOME_FINAL, false, true, "PAYMENT_UNDERFUNDED"},
	{PAYMENT_SRC_NO_TRUST, OUTCOME_FINAL, false, true, "PAYMENT_SRC_NO_TRUST"},
	{PAYMENT_SRC_NOT_AUTHORIZED, OUTCOME_FINAL, false, true, "PAYMENT_SRC_NOT_AUTHORIZED"},
	{PAYMENT_NO_DESTINATION, OUTCOME_FINAL, false, false, "PAYMENT_NO_DESTINATION"},
	{PAYMENT_NO_TRUST, OUTCOME_FINAL, false, false, "PAYMENT_NO_TRUST"},
	{PAYMENT_NOT_AUTHORIZED, OUTCOME_FINAL, false, false, "PAYMENT_NOT_AUTHORIZED"},
	{PAYMENT_LINE_FULL, OUTCOME_FINAL, false, false, "PAYMENT_LINE_FULL"},
	{PAYMENT_NO_ISSUER, OUTCOME_FINAL, false, false, "PAYMENT_NO_ISSUER"},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const char *outcome_action_name(enum outcome_action a)
{
	static const char *const names[] = {
		[OUTCOME_SUCCESS] = "success",     [OUTCOME_PENDING] = "pending",
		[OUTCOME_TRANSIENT] = "transient", [OUTCOME_WAIT] = "wait",
		[OUTCOME_BUMP_FEE] = "bump_fee",   [OUTCOME_REFETCH_SEQ] = "refetch_seq",
		[OUTCOME_REBUILD] = "rebuild",     [OUTCOME_RESIMULATE] = "resimulate",
		[OUTCOME_RESTORE] = "restore",     [OUTCOME_FUND] = "fund",
		[OUTCOME_FINAL] = "final",
	};
	return (unsigned)a < N(names) ? names[a] : "unknown";
}

static struct outcome make(enum outcome_action a, bool limited, bool alert, int32_t code,
			   const char *reason)
{
	struct outcome o = {
		.action = a, .limited = limited, .alert = alert, .code = code, .reason = reason};
	return o;
}

static struct outcome from_table(const struct rule *t, size_t n, int32_t code, const char *unknown)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return make(t[i].action, t[i].limited, t[i].alert, code, t[i].reason);
	return make(OUTCOME_FINAL, false, true, code, unknown);
}

/* txFAILED: the first (only) operation's result decides. */
static struct outcome classify_ops(const struct tx_result *r)
{
	if (r->n_ops == 0)
		return make(OUTCOME_FINAL, false, true, TX_FAILED, "txFAILED without op results");
	if (r->op_code != OP_INNER)
		return from_table(op_outer_rules, N(op_outer_rules), r->op_code, "op<unknown>");
	switch (r->op_type) {
	case OP_TYPE_INVOKE_HOST_FUNCTION:
		return from_table(ihf_rules, N(ihf_rules), r->op_inner,
				  "INVOKE_HOST_FUNCTION<unknown>");
	case OP_TYPE_PAYMENT:
		return from_table(payment_rules, N(payment_rules), r->op_inner, "PAYMENT<unknown>");
	default:
		return make(OUTCOME_FINAL, false, true, r->op_inner, "unexpected operation type");
	}
}

/* The code that describes what happened: a fee bump's inner one. */
static int32_t effective_code(const struct tx_result *r)
{
	if (r->code == TX_FEE_BUMP_INNER_SUCCESS || r->code == TX_FEE_BUMP_INNER_FAILED)
		return r->inner_code;
	return r->code;
}

struct outcome classify_transport(enum rpc_status status, int64_t rpc_code)
{
	switch (status) {
	case RPC_OK:
		return make(OUTCOME_TRANSIENT, true, true, 0, "ok is not a failure");
	case RPC_E_CONNECT:
		return make(OUTCOME_TRANSIENT, false, false, 0, "rpc connect failed");
	case RPC_E_TIMEOUT:
		return make(OUTCOME_TRANSIENT, false, false, 0, "rpc timeout");
	case RPC_E_TRANSPORT:
		return make(OUTCOME_TRANSIENT, false, false, 0, "rpc transport error");
	case RPC_E_HTTP:
		return make(OUTCOME_TRANSIENT, false, false, 0, "rpc http error");
	case RPC_E_TOOBIG:
		return make(OUTCOME_TRANSIENT, false, true, 0, "rpc response too big");
	case RPC_E_PROTOCOL:
		return make(OUTCOME_TRANSIENT, false, true, 0, "rpc malformed response");
	case RPC_E_CANCELLED:
		return make(OUTCOME_TRANSIENT, false, false, 0, "rpc call cancelled");
	case RPC_E_JSONRPC:
		break;
	}
	/* JSON-RPC 2.0 reserved codes: the request itself is wrong (our bug). */
	switch (rpc_code) {
	case -32700:
		return make(OUTCOME_FINAL, false, true, -32700, "json-rpc parse error");
	case -32600:
		return make(OUTCOME_FINAL, false, true, -32600, "json-rpc invalid request");
	case -32601:
		return make(OUTCOME_FINAL, false, true, -32601, "json-rpc method not found");
	case -32602:
		return make(OUTCOME_FINAL, false, true, -32602, "json-rpc invalid params");
	case -32603:
		return make(OUTCOME_TRANSIENT, false, false, -32603, "json-rpc internal error");
	default:
		/* Server-defined codes (-32000..-32099: overload, rate limits). */
		return make(OUTCOME_TRANSIENT, false, false, (int32_t)rpc_code,
			    "json-rpc server error");
	}
}

/* Submission rejected with a decoded result (nothing was consumed). */
static struct outcome classify_send_error(const struct tx_result *r)
{
	struct outcome o;
	int32_t code = r->code;

	if (code == TX_FEE_BUMP_INNER_FAILED) {
		code = r->inner_code;
		if (code == TX_FEE_BUMP_INNER_FAILED || code == TX_FEE_BUMP_INNER_SUCCESS ||
		    code == TX_SUCCESS)
			return make(OUTCOME_FINAL, false, true, code,
				    "inconsistent fee-bump inner code");
	}
	if (code == TX_FAILED)
		o = classify_ops(r);
	else
		o = from_table(tx_rules, N(tx_rules), code, "tx<unknown>");
	if (o.action == OUTCOME_BUMP_FEE)
		o.min_fee = r->fee_charged;
	return o;
}

struct outcome classify_send(enum rpc_send_status status, const struct tx_result *r)
{
	switch (status) {
	case RPC_SEND_PENDING:
		return make(OUTCOME_PENDING, false, false, 0, "PENDING");
	case RPC_SEND_DUPLICATE:
		return make(OUTCOME_PENDING, false, false, 0, "DUPLICATE");
	case RPC_SEND_TRY_AGAIN_LATER:
		return make(OUTCOME_TRANSIENT, false, false, 0, "TRY_AGAIN_LATER");
	case RPC_SEND_ERROR:
		if (!r)
			return make(OUTCOME_TRANSIENT, true, true, 0,
				    "ERROR with undecodable errorResultXdr");
		return classify_send_error(r);
	}
	return make(OUTCOME_FINAL, false, true, 0, "unknown send status");
}

/*
 * Applied and failed: fee charged, seq consumed. Only resource and archive
 * failures of the operation justify a new transaction; everything else is
 * final for the op.
 */
static struct outcome classify_ledger_failure(const struct tx_result *r)
{
	int32_t code = effective_code(r);
	struct outcome o;

	if (code == TX_FAILED)
		o = classify_ops(r);
	else if (code == TX_SUCCESS || code == TX_FEE_BUMP_INNER_SUCCESS)
		o = make(OUTCOME_FINAL, false, true, code, "FAILED with a success code");
	else
		o = from_table(tx_rules, N(tx_rules), code, "tx<unknown>");
	if (o.action != OUTCOME_RESIMULATE && o.action != OUTCOME_RESTORE) {
		o.action = OUTCOME_FINAL;
		o.limited = false;
	}
	if (code != TX_FAILED && code != TX_FROZEN_KEY_ACCESSED)
		o.alert = true;
	return o;
}

struct outcome classify_get(enum rpc_tx_status status, const struct tx_result *r)
{
	struct outcome o;

	switch (status) {
	case RPC_TX_NOT_FOUND:
		return make(OUTCOME_PENDING, false, false, 0, "NOT_FOUND");
	case RPC_TX_SUCCESS:
		o = make(OUTCOME_SUCCESS, false, false, 0, "SUCCESS");
		if (r) {
			o.code = effective_code(r);
			o.alert = o.code != TX_SUCCESS;
		}
		o.seq_consumed = true;
		return o;
	case RPC_TX_FAILED:
		if (r)
			o = classify_ledger_failure(r);
		else
			o = make(OUTCOME_FINAL, false, true, 0,
				 "FAILED with undecodable resultXdr");
		o.seq_consumed = true;
		return o;
	}
	return make(OUTCOME_FINAL, false, true, 0, "unknown getTransaction status");
}

struct outcome classify_simulate_error(const char *error)
{
	if (!error)
		return make(OUTCOME_TRANSIENT, true, true, 0, "simulation failed without error");
	if (strstr(error, "Error(Contract,"))
		return make(OUTCOME_FINAL, false, false, 0, "simulation: contract error");
	return make(OUTCOME_TRANSIENT, true, false, 0, "simulation: host error");
}
