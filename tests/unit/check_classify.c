/*
 * check_classify.c - the outcome table of common/stellar/README.md (Result
 * classification), row by row: every sendTransaction and getTransaction
 * status, every transaction result code in txresult.h in both the submission
 * and the ledger context, every INVOKE_HOST_FUNCTION and PAYMENT operation
 * code, unknown codes, and transport / JSON-RPC failures. The expectations
 * are written from the README's table, not copied from classify.c; a
 * coverage test proves no code was skipped.
 */
#include "common/stellar/classify.h"

#include <check.h>
#include <stdlib.h>
#include "tests/support/check_main.h"

enum ctx { SEND, GET };

struct row {
	enum ctx ctx;
	int status; /* enum rpc_send_status or enum rpc_tx_status */
	bool has_r;
	int32_t code, inner, op_code, op_type, op_inner;
	uint32_t n_ops;
	enum outcome_action want;
	bool consumed, alert, limited;
};

#define IHF 24
#define PAY 1
#define NO_R(ctx, st, want, alert)                                                                 \
	{                                                                                          \
		ctx, st, false, 0, 0, 0, -1, 0, 0, want,                                           \
			ctx == GET && (int)st != (int)RPC_TX_NOT_FOUND, alert, false               \
	}
/* sendTransaction ERROR with a plain tx-level code. */
#define SE(code, want, alert, limited)                                                             \
	{                                                                                          \
		SEND, RPC_SEND_ERROR, true, code, code, 0, -1, 0, 0, want, false, alert, limited   \
	}
/* sendTransaction ERROR txFAILED with one operation result. */
#define SOP(opc, type, inner, want, alert, limited)                                                \
	{                                                                                          \
		SEND, RPC_SEND_ERROR, true, TX_FAILED, TX_FAILED, opc, type, inner, 1, want,       \
			false, alert, limited                                                      \
	}
/* getTransaction FAILED with a tx-level code. */
#define GF(code, want, alert)                                                                      \
	{                                                                                          \
		GET, RPC_TX_FAILED, true, code, code, 0, -1, 0, 0, want, true, alert, false        \
	}
/* getTransaction FAILED txFAILED with one operation result. */
#define GOP(opc, type, inner, want, alert, limited)                                                \
	{                                                                                          \
		GET, RPC_TX_FAILED, true, TX_FAILED, TX_FAILED, opc, type, inner, 1, want, true,   \
			alert, limited                                                             \
	}

static const struct row rows[] = {
	/* Statuses without a result. */
	NO_R(SEND, RPC_SEND_PENDING, OUTCOME_PENDING, false),
	NO_R(SEND, RPC_SEND_DUPLICATE, OUTCOME_PENDING, false),
	NO_R(SEND, RPC_SEND_TRY_AGAIN_LATER, OUTCOME_TRANSIENT, false),
	{SEND, RPC_SEND_ERROR, false, 0, 0, 0, -1, 0, 0, OUTCOME_TRANSIENT, false, true, true},
	NO_R(GET, RPC_TX_NOT_FOUND, OUTCOME_PENDING, false),
	NO_R(GET, RPC_TX_SUCCESS, OUTCOME_SUCCESS, false),
	NO_R(GET, RPC_TX_FAILED, OUTCOME_FINAL, true),
	{GET, RPC_TX_SUCCESS, true, TX_SUCCESS, TX_SUCCESS, 0, IHF, 0, 1, OUTCOME_SUCCESS, true,
	 false, false},
	{GET, RPC_TX_SUCCESS, true, TX_FEE_BUMP_INNER_SUCCESS, TX_SUCCESS, 0, IHF, 0, 1,
	 OUTCOME_SUCCESS, true, false, false},

	/* Submission: every tx-level code. */
	SE(TX_FEE_BUMP_INNER_SUCCESS, OUTCOME_TRANSIENT, true, true),
	SE(TX_SUCCESS, OUTCOME_TRANSIENT, true, true),
	SE(TX_FAILED, OUTCOME_FINAL, true, false), /* txFAILED without op results */
	SE(TX_TOO_EARLY, OUTCOME_WAIT, false, false),
	SE(TX_TOO_LATE, OUTCOME_REBUILD, false, false),
	SE(TX_MISSING_OPERATION, OUTCOME_FINAL, true, false),
	SE(TX_BAD_SEQ, OUTCOME_REFETCH_SEQ, false, false),
	SE(TX_BAD_AUTH, OUTCOME_FINAL, true, false),
	SE(TX_INSUFFICIENT_BALANCE, OUTCOME_FUND, true, false),
	SE(TX_NO_ACCOUNT, OUTCOME_FINAL, true, false),
	SE(TX_INSUFFICIENT_FEE, OUTCOME_BUMP_FEE, false, false),
	SE(TX_BAD_AUTH_EXTRA, OUTCOME_FINAL, true, false),
	SE(TX_INTERNAL_ERROR, OUTCOME_TRANSIENT, false, true),
	SE(TX_NOT_SUPPORTED, OUTCOME_FINAL, true, false),
	SE(TX_BAD_SPONSORSHIP, OUTCOME_FINAL, true, false),
	SE(TX_BAD_MIN_SEQ_AGE_OR_GAP, OUTCOME_FINAL, true, false),
	SE(TX_MALFORMED, OUTCOME_FINAL, true, false),
	SE(TX_SOROBAN_INVALID, OUTCOME_RESIMULATE, true, true),
	SE(TX_FROZEN_KEY_ACCESSED, OUTCOME_FINAL, false, false),
	SE(-19, OUTCOME_FINAL, true, false),
	SE(2, OUTCOME_FINAL, true, false),
	SE(-1000, OUTCOME_FINAL, true, false),
	/* Fee bump rejected: the inner code decides. */
	{SEND, RPC_SEND_ERROR, true, TX_FEE_BUMP_INNER_FAILED, TX_BAD_SEQ, 0, -1, 0, 0,
	 OUTCOME_REFETCH_SEQ, false, false, false},
	{SEND, RPC_SEND_ERROR, true, TX_FEE_BUMP_INNER_FAILED, TX_TOO_LATE, 0, -1, 0, 0,
	 OUTCOME_REBUILD, false, false, false},
	{SEND, RPC_SEND_ERROR, true, TX_FEE_BUMP_INNER_FAILED, TX_FAILED, 0, IHF,
	 IHF_RESOURCE_LIMIT_EXCEEDED, 1, OUTCOME_RESIMULATE, false, false, true},
	{SEND, RPC_SEND_ERROR, true, TX_FEE_BUMP_INNER_FAILED, TX_FEE_BUMP_INNER_FAILED, 0, -1, 0,
	 0, OUTCOME_FINAL, false, true, false},
	{SEND, RPC_SEND_ERROR, true, TX_FEE_BUMP_INNER_FAILED, -77, 0, -1, 0, 0, OUTCOME_FINAL,
	 false, true, false},

	/* Submission txFAILED: operation-level codes. */
	SOP(OP_INNER, IHF, IHF_SUCCESS, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, IHF, IHF_MALFORMED, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, IHF, IHF_TRAPPED, OUTCOME_FINAL, false, false),
	SOP(OP_INNER, IHF, IHF_RESOURCE_LIMIT_EXCEEDED, OUTCOME_RESIMULATE, false, true),
	SOP(OP_INNER, IHF, IHF_ENTRY_ARCHIVED, OUTCOME_RESTORE, false, true),
	SOP(OP_INNER, IHF, IHF_INSUFFICIENT_REFUNDABLE_FEE, OUTCOME_RESIMULATE, false, true),
	SOP(OP_INNER, IHF, -6, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, PAY, PAYMENT_SUCCESS, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, PAY, PAYMENT_MALFORMED, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, PAY, PAYMENT_UNDERFUNDED, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, PAY, PAYMENT_SRC_NO_TRUST, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, PAY, PAYMENT_SRC_NOT_AUTHORIZED, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, PAY, PAYMENT_NO_DESTINATION, OUTCOME_FINAL, false, false),
	SOP(OP_INNER, PAY, PAYMENT_NO_TRUST, OUTCOME_FINAL, false, false),
	SOP(OP_INNER, PAY, PAYMENT_NOT_AUTHORIZED, OUTCOME_FINAL, false, false),
	SOP(OP_INNER, PAY, PAYMENT_LINE_FULL, OUTCOME_FINAL, false, false),
	SOP(OP_INNER, PAY, PAYMENT_NO_ISSUER, OUTCOME_FINAL, false, false),
	SOP(OP_INNER, PAY, -10, OUTCOME_FINAL, true, false),
	SOP(OP_INNER, 11, -1, OUTCOME_FINAL, true, false), /* an op type we never send */
	SOP(OP_BAD_AUTH, -1, 0, OUTCOME_FINAL, true, false),
	SOP(OP_NO_ACCOUNT, -1, 0, OUTCOME_FINAL, true, false),
	SOP(OP_NOT_SUPPORTED, -1, 0, OUTCOME_FINAL, true, false),
	SOP(OP_TOO_MANY_SUBENTRIES, -1, 0, OUTCOME_FINAL, true, false),
	SOP(OP_EXCEEDED_WORK_LIMIT, -1, 0, OUTCOME_FINAL, true, false),
	SOP(OP_TOO_MANY_SPONSORING, -1, 0, OUTCOME_FINAL, true, false),
	SOP(-7, -1, 0, OUTCOME_FINAL, true, false),

	/* Applied and failed: seq consumed, never resent; only resource or
	 * archive failures lead to a new transaction. */
	GF(TX_FEE_BUMP_INNER_SUCCESS, OUTCOME_FINAL, true),
	GF(TX_SUCCESS, OUTCOME_FINAL, true),
	GF(TX_FAILED, OUTCOME_FINAL, true),
	GF(TX_TOO_EARLY, OUTCOME_FINAL, true),
	GF(TX_TOO_LATE, OUTCOME_FINAL, true),
	GF(TX_MISSING_OPERATION, OUTCOME_FINAL, true),
	GF(TX_BAD_SEQ, OUTCOME_FINAL, true),
	GF(TX_BAD_AUTH, OUTCOME_FINAL, true),
	GF(TX_INSUFFICIENT_BALANCE, OUTCOME_FINAL, true),
	GF(TX_NO_ACCOUNT, OUTCOME_FINAL, true),
	GF(TX_INSUFFICIENT_FEE, OUTCOME_FINAL, true),
	GF(TX_BAD_AUTH_EXTRA, OUTCOME_FINAL, true),
	GF(TX_INTERNAL_ERROR, OUTCOME_FINAL, true),
	GF(TX_NOT_SUPPORTED, OUTCOME_FINAL, true),
	GF(TX_BAD_SPONSORSHIP, OUTCOME_FINAL, true),
	GF(TX_BAD_MIN_SEQ_AGE_OR_GAP, OUTCOME_FINAL, true),
	GF(TX_MALFORMED, OUTCOME_FINAL, true),
	{GET, RPC_TX_FAILED, true, TX_SOROBAN_INVALID, TX_SOROBAN_INVALID, 0, -1, 0, 0,
	 OUTCOME_RESIMULATE, true, true, true},
	GF(TX_FROZEN_KEY_ACCESSED, OUTCOME_FINAL, false),
	GF(-19, OUTCOME_FINAL, true),
	GF(5, OUTCOME_FINAL, true),
	{GET, RPC_TX_FAILED, true, TX_FEE_BUMP_INNER_FAILED, TX_FEE_BUMP_INNER_FAILED, 0, -1, 0, 0,
	 OUTCOME_FINAL, true, true, false},
	{GET, RPC_TX_FAILED, true, TX_FEE_BUMP_INNER_FAILED, TX_FAILED, OP_INNER, IHF, IHF_TRAPPED,
	 1, OUTCOME_FINAL, true, false, false},
	{GET, RPC_TX_FAILED, true, TX_FEE_BUMP_INNER_FAILED, TX_FAILED, OP_INNER, IHF,
	 IHF_ENTRY_ARCHIVED, 1, OUTCOME_RESTORE, true, false, true},
	GOP(OP_INNER, IHF, IHF_SUCCESS, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, IHF, IHF_MALFORMED, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, IHF, IHF_TRAPPED, OUTCOME_FINAL, false, false),
	GOP(OP_INNER, IHF, IHF_RESOURCE_LIMIT_EXCEEDED, OUTCOME_RESIMULATE, false, true),
	GOP(OP_INNER, IHF, IHF_ENTRY_ARCHIVED, OUTCOME_RESTORE, false, true),
	GOP(OP_INNER, IHF, IHF_INSUFFICIENT_REFUNDABLE_FEE, OUTCOME_RESIMULATE, false, true),
	GOP(OP_INNER, IHF, -6, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, PAY, PAYMENT_SUCCESS, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, PAY, PAYMENT_MALFORMED, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, PAY, PAYMENT_UNDERFUNDED, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, PAY, PAYMENT_SRC_NO_TRUST, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, PAY, PAYMENT_SRC_NOT_AUTHORIZED, OUTCOME_FINAL, true, false),
	GOP(OP_INNER, PAY, PAYMENT_NO_DESTINATION, OUTCOME_FINAL, false, false),
	GOP(OP_INNER, PAY, PAYMENT_NO_TRUST, OUTCOME_FINAL, false, false),
	GOP(OP_INNER, PAY, PAYMENT_NOT_AUTHORIZED, OUTCOME_FINAL, false, false),
	GOP(OP_INNER, PAY, PAYMENT_LINE_FULL, OUTCOME_FINAL, false, false),
	GOP(OP_INNER, PAY, PAYMENT_NO_ISSUER, OUTCOME_FINAL, false, false),
	GOP(OP_INNER, PAY, -10, OUTCOME_FINAL, true, false),
	GOP(OP_BAD_AUTH, -1, 0, OUTCOME_FINAL, true, false),
	GOP(OP_NO_ACCOUNT, -1, 0, OUTCOME_FINAL, true, false),
	GOP(OP_NOT_SUPPORTED, -1, 0, OUTCOME_FINAL, true, false),
	GOP(OP_TOO_MANY_SUBENTRIES, -1, 0, OUTCOME_FINAL, true, false),
	GOP(OP_EXCEEDED_WORK_LIMIT, -1, 0, OUTCOME_FINAL, true, false),
	GOP(OP_TOO_MANY_SPONSORING, -1, 0, OUTCOME_FINAL, true, false),
	GOP(-7, -1, 0, OUTCOME_FINAL, true, false),
};

#define N_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static struct outcome run_row(const struct row *w)
{
	struct tx_result r = {.fee_charged = 50200,
			      .code = w->code,
			      .inner_code = w->inner,
			      .op_code = w->op_code,
			      .op_type = w->op_type,
			      .op_inner = w->op_inner,
			      .n_ops = w->n_ops};
	const struct tx_result *rp = w->has_r ? &r : NULL;

	if (w->ctx == SEND)
		return classify_send((enum rpc_send_status)w->status, rp);
	return classify_get((enum rpc_tx_status)w->status, rp);
}

START_TEST(test_classify_row)
{
	const struct row *w = &rows[_i];
	struct outcome o = run_row(w);

	ck_assert_msg(o.action == w->want, "row %d (%s status %d code %d/%d op %d/%d/%d): got %s",
		      _i, w->ctx == SEND ? "send" : "get", w->status, w->code, w->inner, w->op_code,
		      w->op_type, w->op_inner, outcome_action_name(o.action));
	ck_assert_msg(o.seq_consumed == w->consumed, "row %d: seq_consumed %d", _i, o.seq_consumed);
	ck_assert_msg(o.alert == w->alert, "row %d: alert %d", _i, o.alert);
	ck_assert_msg(o.limited == w->limited, "row %d: limited %d", _i, o.limited);
	ck_assert_ptr_nonnull(o.reason);
	/* Pure: the same input gives the same verdict. */
	ck_assert_int_eq(run_row(w).action, o.action);
}
END_TEST

static bool covered(enum ctx ctx, int status, int32_t code, int32_t op_type, int32_t op_inner)
{
	for (int i = 0; i < N_ROWS; i++) {
		const struct row *w = &rows[i];
		if (w->ctx != ctx || w->status != status || !w->has_r || w->code != code)
			continue;
		if (op_type < 0 || (w->op_code == OP_INNER && w->op_type == op_type &&
				    w->op_inner == op_inner && w->n_ops == 1))
			return true;
	}
	return false;
}

/* Every code in txresult.h has a row in both contexts. */
START_TEST(test_classify_table_covers_every_code)
{
	for (int32_t c = TX_FROZEN_KEY_ACCESSED; c <= TX_FEE_BUMP_INNER_SUCCESS; c++) {
		ck_assert_msg(covered(SEND, RPC_SEND_ERROR, c, -1, 0), "send code %d", c);
		ck_assert_msg(covered(GET, RPC_TX_FAILED, c, -1, 0), "get code %d", c);
	}
	for (int32_t c = IHF_INSUFFICIENT_REFUNDABLE_FEE; c <= IHF_SUCCESS; c++) {
		ck_assert_msg(covered(SEND, RPC_SEND_ERROR, TX_FAILED, 24, c), "send ihf %d", c);
		ck_assert_msg(covered(GET, RPC_TX_FAILED, TX_FAILED, 24, c), "get ihf %d", c);
	}
	for (int32_t c = PAYMENT_NO_ISSUER; c <= PAYMENT_SUCCESS; c++) {
		ck_assert_msg(covered(SEND, RPC_SEND_ERROR, TX_FAILED, 1, c), "send pay %d", c);
		ck_assert_msg(covered(GET, RPC_TX_FAILED, TX_FAILED, 1, c), "get pay %d", c);
	}
}
END_TEST

START_TEST(test_classify_insufficient_fee_carries_min_fee)
{
	struct tx_result r = {.fee_charged = 50200,
			      .code = TX_INSUFFICIENT_FEE,
			      .inner_code = TX_INSUFFICIENT_FEE,
			      .op_type = -1};
	struct outcome o = classify_send(RPC_SEND_ERROR, &r);

	ck_assert_int_eq(o.action, OUTCOME_BUMP_FEE);
	ck_assert_int_eq(o.min_fee, 50200);
	ck_assert_int_eq(o.code, TX_INSUFFICIENT_FEE);
	ck_assert_str_eq(o.reason, "txINSUFFICIENT_FEE");
	/* Fee bump refused by the inner tx's fee rule: still the outer feeCharged. */
	r.code = TX_FEE_BUMP_INNER_FAILED;
	r.fee_charged = 2000;
	o = classify_send(RPC_SEND_ERROR, &r);
	ck_assert_int_eq(o.action, OUTCOME_BUMP_FEE);
	ck_assert_int_eq(o.min_fee, 2000);
}
END_TEST

/* The result vectors of common/stellar/README.md (Test vectors), decoded by the XDR layer. */
START_TEST(test_classify_decoded_doc_vectors)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct tx_result r;
	struct outcome o;

	ck_assert_int_eq(tx_result_decode_b64(&r, "AAAAAAAAxBj////3AAAAAA==", &err), 0);
	o = classify_send(RPC_SEND_ERROR, &r);
	ck_assert_int_eq(o.action, OUTCOME_BUMP_FEE);
	ck_assert_int_eq(o.min_fee, 50200);
	ck_assert(!o.seq_consumed);

	ck_assert_int_eq(
		tx_result_decode_b64(&r, "AAAAAAAAw7T/////AAAAAQAAAAAAAAAY/////gAAAAA=", &err), 0);
	o = classify_get(RPC_TX_FAILED, &r);
	ck_assert_int_eq(o.action, OUTCOME_FINAL);
	ck_assert_int_eq(o.code, IHF_TRAPPED);
	ck_assert(o.seq_consumed);
	ck_assert(!o.alert);

	ck_assert_int_eq(
		tx_result_decode_b64(&r,
				     "AAAAAAAAoRIAAAAAAAAAAQAAAAAAAAAYAAAAAAABAgMEBQYHCAkKCwwND"
				     "g8QERITFBUWFxgZGhscHR4fAAAAAA==",
				     &err),
		0);
	o = classify_get(RPC_TX_SUCCESS, &r);
	ck_assert_int_eq(o.action, OUTCOME_SUCCESS);
	ck_assert(o.seq_consumed);
	ck_assert(!o.alert);
}
END_TEST

struct transport_row {
	enum rpc_status st;
	int64_t code;
	enum outcome_action want;
};

static const struct transport_row trows[] = {
	{RPC_E_CONNECT, 0, OUTCOME_TRANSIENT},
	{RPC_E_TIMEOUT, 0, OUTCOME_TRANSIENT},
	{RPC_E_TRANSPORT, 0, OUTCOME_TRANSIENT},
	{RPC_E_HTTP, 0, OUTCOME_TRANSIENT},
	{RPC_E_TOOBIG, 0, OUTCOME_TRANSIENT},
	{RPC_E_PROTOCOL, 0, OUTCOME_TRANSIENT},
	{RPC_E_CANCELLED, 0, OUTCOME_TRANSIENT},
	{RPC_E_JSONRPC, -32603, OUTCOME_TRANSIENT},
	{RPC_E_JSONRPC, -32602, OUTCOME_FINAL},
	{RPC_E_JSONRPC, -32601, OUTCOME_FINAL},
	{RPC_E_JSONRPC, -32600, OUTCOME_FINAL},
	{RPC_E_JSONRPC, -32700, OUTCOME_FINAL},
	{RPC_E_JSONRPC, -32000, OUTCOME_TRANSIENT},
	{RPC_E_JSONRPC, 429, OUTCOME_TRANSIENT},
	{RPC_OK, 0, OUTCOME_TRANSIENT},
};

START_TEST(test_classify_transport)
{
	const struct transport_row *t = &trows[_i];
	struct outcome o = classify_transport(t->st, t->code);

	ck_assert_msg(o.action == t->want, "status %s code %lld: got %s", rpc_status_name(t->st),
		      (long long)t->code, outcome_action_name(o.action));
	ck_assert(!o.seq_consumed);
	if (t->st == RPC_OK || t->want == OUTCOME_FINAL)
		ck_assert(o.alert);
}
END_TEST

START_TEST(test_classify_simulate_error)
{
	struct outcome o;

	o = classify_simulate_error("HostError: Error(Contract, #10)\n\nEvent log: ...");
	ck_assert_int_eq(o.action, OUTCOME_FINAL);
	o = classify_simulate_error("HostError: Error(Budget, ExceededLimit)");
	ck_assert_int_eq(o.action, OUTCOME_TRANSIENT);
	ck_assert(o.limited);
	o = classify_simulate_error("Transaction contains a memo");
	ck_assert_int_eq(o.action, OUTCOME_TRANSIENT);
	o = classify_simulate_error(NULL);
	ck_assert_int_eq(o.action, OUTCOME_TRANSIENT);
	ck_assert(o.alert);
}
END_TEST

START_TEST(test_classify_names)
{
	ck_assert_str_eq(outcome_action_name(OUTCOME_REFETCH_SEQ), "refetch_seq");
	ck_assert_str_eq(outcome_action_name(OUTCOME_FINAL), "final");
	ck_assert_str_eq(outcome_action_name((enum outcome_action)99), "unknown");
}
END_TEST

static Suite *classify_suite(void)
{
	Suite *s = suite_create("classify");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_classify_row, 0, N_ROWS);
	tcase_add_test(tc, test_classify_table_covers_every_code);
	tcase_add_test(tc, test_classify_insufficient_fee_carries_min_fee);
	tcase_add_test(tc, test_classify_decoded_doc_vectors);
	tcase_add_loop_test(tc, test_classify_transport, 0,
			    (int)(sizeof(trows) / sizeof(trows[0])));
	tcase_add_test(tc, test_classify_simulate_error);
	tcase_add_test(tc, test_classify_names);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(classify_suite)
