/*
 * check_rpc_parse.c - request bodies and response parsing for every Stellar
 * RPC method: example responses in the shapes of common/stellar/README.md
 * (RPC) parse to the expected values; missing fields, wrong JSON types, reals
 * where integers belong, out-of-range numbers, oversized strings, broken
 * envelopes and JSON-RPC error objects are rejected with a message naming
 * the field path.
 */
#include "common/stellar/rpc.h"

#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

#define ID 7

static const char *const ACCOUNT_KEY = "AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90Mg==";
static const char *const ACCOUNT_XDR = "AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAAAAJ"
				       "UC+QAAAABH3H7BMoAAAAAAAAAAAAAAAAAAA"
				       "AAAQAAAAAAAAAAAAAA";
static const char *const HASH = "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94";

static struct rpc_request req_for(enum rpc_method m)
{
	struct rpc_request req = {.method = m};
	uint8_t key[40];
	size_t len;

	/* The test account GAXDYN...5ZH: its LedgerKey minus the 8-byte prefix. */
	ck_assert_int_eq(sodium_base642bin(key, sizeof(key), ACCOUNT_KEY, strlen(ACCOUNT_KEY), NULL,
					   &len, NULL, sodium_base64_VARIANT_ORIGINAL),
			 0);
	ck_assert_uint_eq(len, 40);
	memcpy(req.account, key + 8, 32);
	return req;
}

/* Parse {"jsonrpc":"2.0","id":ID,"result":<result>} for method m. */
static int parse_result(enum rpc_method m, const char *result, struct rpc_result *out)
{
	struct rpc_request req = req_for(m);
	size_t n = strlen(result) + 64;
	char *body = malloc(n);
	int rc;

	snprintf(body, n, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":%s}", ID, result);
	rpc_result_init(out, m);
	rc = rpc_response_parse(&req, ID, body, strlen(body), out);
	free(body);
	return rc;
}

static int parse_body(enum rpc_method m, const char *body, struct rpc_result *out)
{
	struct rpc_request req = req_for(m);

	rpc_result_init(out, m);
	return rpc_response_parse(&req, ID, body, strlen(body), out);
}

/* Expect a protocol rejection whose message is exactly msg. */
static void expect_reject(enum rpc_method m, const char *result, const char *msg)
{
	struct rpc_result r;
	int rc = parse_result(m, result, &r);

	ck_assert_msg(rc < 0, "accepted: %s", result);
	ck_assert_int_eq(r.status, RPC_E_PROTOCOL);
	ck_assert_str_eq(r.err.msg, msg);
	rpc_result_release(&r);
}

static const char FEE_DIST[] = "{\"max\":\"210\",\"min\":\"100\",\"mode\":\"100\",\"p10\":\"100\","
			       "\"p20\":\"100\",\"p30\":\"100\",\"p40\":\"100\",\"p50\":\"100\","
			       "\"p60\":\"100\",\"p70\":\"100\",\"p80\":\"120\",\"p90\":\"200\","
			       "\"p95\":\"200\",\"p99\":\"210\",\"transactionCount\":\"371\","
			       "\"ledgerCount\":50}";

/* ---- good responses ---------------------------------------------------- */

START_TEST(test_parse_health)
{
	struct rpc_result r;

	ck_assert_int_eq(parse_result(RPC_GET_HEALTH,
				      "{\"status\":\"healthy\",\"latestLedger\":51234567,"
				      "\"latestLedgerCloseTime\":\"1784671485\",\"oldestLedger\":"
				      "51113608,\"oldestLedgerCloseTime\":\"1784065656\","
				      "\"ledgerRetentionWindow\":120960}",
				      &r),
			 0);
	ck_assert_int_eq(r.status, RPC_OK);
	ck_assert_str_eq(r.u.health.status, "healthy");
	ck_assert_uint_eq(r.u.health.latest_ledger, 51234567);
	ck_assert_uint_eq(r.u.health.oldest_ledger, 51113608);
	ck_assert_uint_eq(r.u.health.ledger_retention_window, 120960);
	ck_assert_int_eq(r.u.health.latest_ledger_close_time, 1784671485);
	ck_assert_int_eq(r.u.health.oldest_ledger_close_time, 1784065656);
	rpc_result_release(&r);
	/* Before v27.1: no close times. */
	ck_assert_int_eq(
		parse_result(RPC_GET_HEALTH,
			     "{\"status\":\"healthy\",\"latestLedger\":5,\"oldestLedger\":1,"
			     "\"ledgerRetentionWindow\":10}",
			     &r),
		0);
	ck_assert_int_eq(r.u.health.latest_ledger_close_time, -1);
	ck_assert_int_eq(r.u.health.oldest_ledger_close_time, -1);
	rpc_result_release(&r);
}
END_TEST

START_TEST(test_parse_network)
{
	struct rpc_result r;

	ck_assert_int_eq(
		parse_result(RPC_GET_NETWORK,
			     "{\"friendbotUrl\":\"https://friendbot-testnet.stellar.org/\","
			     "\"passphrase\":\"Test SDF Network ; September 2015\","
			     "\"protocolVersion\":27}",
			     &r),
		0);
	ck_assert_str_eq(r.u.network.passphrase, "Test SDF Network ; September 2015");
	ck_assert_uint_eq(r.u.network.protocol_version, 27);
	rpc_result_release(&r);
	expect_reject(RPC_GET_NETWORK, "{\"passphrase\":\"\",\"protocolVersion\":27}",
		      "result.passphrase: empty");
	expect_reject(RPC_GET_NETWORK, "{\"protocolVersion\":27}", "result.passphrase: missing");
}
END_TEST

START_TEST(test_parse_latest_ledger)
{
	struct rpc_result r;

	ck_assert_int_eq(
		parse_result(
			RPC_GET_LATEST_LEDGER,
			"{\"id\":"
			"\"0A00a9cf845f7af7cff09c66f8ae6480e9971e6e2c7fa4afd8d6266ee13c987b\","
			"\"protocolVersion\":27,\"sequence\":51234567,\"closeTime\":\"1784671645\","
			"\"headerXdr\":\"AAAA\",\"metadataXdr\":\"AAAA\"}",
			&r),
		0);
	ck_assert_str_eq(r.u.latest_ledger.id,
			 "0a00a9cf845f7af7cff09c66f8ae6480e9971e6e2c7fa4afd8d6266ee13c987b");
	ck_assert_uint_eq(r.u.latest_ledger.sequence, 51234567);
	ck_assert_uint_eq(r.u.latest_ledger.protocol_version, 27);
	ck_assert_int_eq(r.u.latest_ledger.close_time, 1784671645);
	ck_assert_str_eq(r.u.latest_ledger.header_xdr, "AAAA");
	rpc_result_release(&r);
	ck_assert_ptr_null(r.u.latest_ledger.header_xdr);
	expect_reject(RPC_GET_LATEST_LEDGER,
		      "{\"id\":\"abc\",\"protocolVersion\":27,\"sequence\":5}",
		      "result.id: 'abc' is not 64 hex digits");
}
END_TEST

START_TEST(test_parse_fee_stats)
{
	struct rpc_result r;
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"sorobanInclusionFee\":%s,\"inclusionFee\":{\"max\":\"133\",\"min\":\"100\","
		 "\"mode\":\"100\",\"p10\":\"100\",\"p20\":\"100\",\"p30\":\"100\",\"p40\":\"100\","
		 "\"p50\":\"100\",\"p60\":\"100\",\"p70\":\"101\",\"p80\":\"100\",\"p90\":\"100\","
		 "\"p95\":\"100\",\"p99\":\"133\",\"transactionCount\":\"28\",\"ledgerCount\":10},"
		 "\"latestLedger\":51234567}",
		 FEE_DIST);
	ck_assert_int_eq(parse_result(RPC_GET_FEE_STATS, buf, &r), 0);
	ck_assert_uint_eq(r.u.fee_stats.soroban.max, 210);
	ck_assert_uint_eq(r.u.fee_stats.soroban.p80, 120);
	ck_assert_uint_eq(r.u.fee_stats.soroban.p99, 210);
	ck_assert_uint_eq(r.u.fee_stats.soroban.transaction_count, 371);
	ck_assert_uint_eq(r.u.fee_stats.soroban.ledger_count, 50);
	ck_assert_uint_eq(r.u.fee_stats.classic.max, 133);
	ck_assert_uint_eq(r.u.fee_stats.classic.p70, 101);
	ck_assert_uint_eq(r.u.fee_stats.classic.ledger_count, 10);
	ck_assert_uint_eq(r.u.fee_stats.latest_ledger, 51234567);
	rpc_result_release(&r);
}
END_TEST

static void fee_variant(const char *from, const char *to, const char *msg)
{
	char dist[1024], buf[2048];
	const char *p = strstr(FEE_DIST, from);

	ck_assert_ptr_nonnull(p);
	snprintf(dist, sizeof(dist), "%.*s%s%s", (int)(p - FEE_DIST), FEE_DIST, to,
		 p + strlen(from));
	snprintf(buf, sizeof(buf),
		 "{\"sorobanInclusionFee\":%s,\"inclusionFee\":%s,\"latestLedger\":1}", FEE_DIST,
		 dist);
	if (msg) {
		expect_reject(RPC_GET_FEE_STATS, buf, msg);
	} else {
		struct rpc_result r;
		ck_assert_int_eq(parse_result(RPC_GET_FEE_STATS, buf, &r), 0);
		rpc_result_release(&r);
	}
}

START_TEST(test_parse_fee_stats_strict)
{
	fee_variant("\"p70\":\"100\"", "\"p70\":100",
		    "result.inclusionFee.p70: expected decimal string, got number");
	fee_variant("\"p70\":\"100\"", "\"p70\":\"-1\"",
		    "result.inclusionFee.p70: '-1' is not a decimal integer in "
		    "0..18446744073709551615");
	fee_variant("\"p70\":\"100\"", "\"p70\":\"0100\"",
		    "result.inclusionFee.p70: '0100' is not a decimal integer in "
		    "0..18446744073709551615");
	fee_variant("\"p70\":\"100\"", "\"p70\":\"18446744073709551616\"",
		    "result.inclusionFee.p70: '18446744073709551616' is not a decimal integer in "
		    "0..18446744073709551615");
	fee_variant("\"p70\":\"100\"", "\"p70\":\"1e3\"",
		    "result.inclusionFee.p70: '1e3' is not a decimal integer in "
		    "0..18446744073709551615");
	fee_variant(
		"\"p70\":\"100\"", "\"p70\":\"\"",
		"result.inclusionFee.p70: '' is not a decimal integer in 0..18446744073709551615");
	fee_variant("\"p70\":\"100\",", "", "result.inclusionFee.p70: missing");
	fee_variant("\"p70\":\"100\"", "\"p70\":null", "result.inclusionFee.p70: missing");
	fee_variant("\"ledgerCount\":50", "\"ledgerCount\":\"50\"",
		    "result.inclusionFee.ledgerCount: expected integer, got string");
	fee_variant("\"ledgerCount\":50", "\"ledgerCount\":50.5",
		    "result.inclusionFee.ledgerCount: expected integer, got fractional number");
	fee_variant("\"ledgerCount\":50", "\"ledgerCount\":4294967296",
		    "result.inclusionFee.ledgerCount: 4294967296 out of range for u32");
	fee_variant("\"ledgerCount\":50", "\"ledgerCount\":-1",
		    "result.inclusionFee.ledgerCount: -1 out of range for u32");
	fee_variant("\"transactionCount\":\"371\"", "\"transactionCount\":371",
		    "result.inclusionFee.transactionCount: expected decimal string, got number");
	/* The edges themselves are fine. */
	fee_variant("\"p70\":\"100\"", "\"p70\":\"18446744073709551615\"", NULL);
	fee_variant("\"ledgerCount\":50", "\"ledgerCount\":4294967295", NULL);
	fee_variant("\"p70\":\"100\"", "\"p70\":\"0\"", NULL);
	expect_reject(RPC_GET_FEE_STATS, "{\"sorobanInclusionFee\":[],\"inclusionFee\":{}}",
		      "result.sorobanInclusionFee: expected object, got array");
}
END_TEST

START_TEST(test_parse_account)
{
	struct rpc_result r;
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"entries\":[{\"key\":\"%s\",\"xdr\":\"%s\",\"lastModifiedLedgerSeq\":51234500,"
		 "\"extXdr\":\"AAAAAA==\"}],\"latestLedger\":51234567}",
		 ACCOUNT_KEY, ACCOUNT_XDR);
	ck_assert_int_eq(parse_result(RPC_GET_ACCOUNT, buf, &r), 0);
	ck_assert(r.u.account.found);
	ck_assert_int_eq(r.u.account.seq_num, 1234567890122LL);
	ck_assert_int_eq(r.u.account.balance, 10000000000LL);
	ck_assert_uint_eq(r.u.account.last_modified_ledger, 51234500);
	ck_assert_uint_eq(r.u.account.latest_ledger, 51234567);
	rpc_result_release(&r);

	ck_assert_int_eq(parse_result(RPC_GET_ACCOUNT, "{\"entries\":[],\"latestLedger\":9}", &r),
			 0);
	ck_assert(!r.u.account.found);
	ck_assert_uint_eq(r.u.account.latest_ledger, 9);
	rpc_result_release(&r);
	ck_assert_int_eq(parse_result(RPC_GET_ACCOUNT, "{\"entries\":null,\"latestLedger\":9}", &r),
			 0);
	ck_assert(!r.u.account.found);
	rpc_result_release(&r);
}
END_TEST

START_TEST(test_parse_account_bad)
{
	char buf[1024];
	/* Another account's key: the echo must be ours. */
	snprintf(buf, sizeof(buf),
		 "{\"entries\":[{\"key\":\"AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90Mw=="
		 "\","
		 "\"xdr\":\"%s\",\"lastModifiedLedgerSeq\":1}],\"latestLedger\":9}",
		 ACCOUNT_XDR);
	expect_reject(
		RPC_GET_ACCOUNT, buf,
		"result.entries[0].key: 'AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90Mw==' "
		"is not the requested key");
	/* Entry data that is not an account (type 6 CONTRACT_DATA). */
	snprintf(buf, sizeof(buf),
		 "{\"entries\":[{\"key\":\"%s\",\"xdr\":"
		 "\"AAAABgAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j"
		 "67qu90MgAAAAJUC+QAAAABH3H7BMoAAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAAAAAAA\","
		 "\"lastModifiedLedgerSeq\":1}],\"latestLedger\":9}",
		 ACCOUNT_KEY);
	expect_reject(RPC_GET_ACCOUNT, buf,
		      "result.entries[0].xdr: entry type 6 / key type 0 is not an ed25519 account");
	snprintf(buf, sizeof(buf),
		 "{\"entries\":[{\"key\":\"%s\",\"xdr\":\"AAAAAA==\",\"lastModifiedLedgerSeq\":1}],"
		 "\"latestLedger\":9}",
		 ACCOUNT_KEY);
	expect_reject(RPC_GET_ACCOUNT, buf,
		      "result.entries[0].xdr: 4 bytes is too short for an AccountEntry");
	snprintf(buf, sizeof(buf),
		 "{\"entries\":[{\"key\":\"%s\",\"xdr\":\"%s\",\"lastModifiedLedgerSeq\":1},{}],"
		 "\"latestLedger\":9}",
		 ACCOUNT_KEY, ACCOUNT_XDR);
	expect_reject(RPC_GET_ACCOUNT, buf, "result.entries: 2 entries for one key");
	snprintf(buf, sizeof(buf),
		 "{\"entries\":[{\"key\":\"%s\",\"xdr\":\"AAAA*AAA\",\"lastModifiedLedgerSeq\":1}],"
		 "\"latestLedger\":9}",
		 ACCOUNT_KEY);
	expect_reject(RPC_GET_ACCOUNT, buf, "result.entries[0].xdr: not standard padded base64");
	expect_reject(RPC_GET_ACCOUNT, "{\"entries\":{},\"latestLedger\":9}",
		      "result.entries: expected array, got object");
}
END_TEST

static const char SIM_OK[] =
	"{\"latestLedger\":51234567,\"minResourceFee\":\"61234\",\"transactionData\":"
	"\"AAAAAAAAAAEAAAAGAAAAATY+qjhnhB+"
	"60PTtiMd55P5m5WokcNyYwOycBz0Fx7EDAAAAFAAAAAEAAAABAAAAAAAAAAAu"
	"PDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAW42AAAAu4AAABkAAAAAAAAO8y\","
	"\"results\":[{\"xdr\":\"AAAAAQ==\",\"auth\":[\"AAAAAAAAAAAAAAABNj6qOGeEH7rQ9O2Ix3nk/"
	"mblaiRw3JjA"
	"7JwHPQXHsQMAAAAIdHJhbnNmZXIAAAADAAAAEgAAAAAAAAAALjw1AQdJwd49mlvdajHBJFh2jaXOh8ymqtY+"
	"u6rvdDIAAAAS"
	"AAAAATY+qjhnhB+60PTtiMd55P5m5WokcNyYwOycBz0Fx7EDAAAACgAAAAAAAAAAAAAAAAAAA+gAAAAA\"]}]}";

START_TEST(test_parse_simulate)
{
	struct rpc_result r;
	struct rpc_simulate *s = &r.u.simulate;

	ck_assert_int_eq(parse_result(RPC_SIMULATE_TRANSACTION, SIM_OK, &r), 0);
	ck_assert_ptr_null(s->error);
	ck_assert_uint_eq(s->latest_ledger, 51234567);
	ck_assert_uint_eq(s->min_resource_fee, 61234);
	ck_assert(strncmp(s->transaction_data, "AAAAAAAAAAEAAAAG", 16) == 0);
	ck_assert_str_eq(s->result_xdr, "AAAAAQ==");
	ck_assert_uint_eq(s->n_auth, 1);
	ck_assert(strncmp(s->auth[0], "AAAAAAAAAAAAAAAB", 16) == 0);
	ck_assert_ptr_null(s->restore_transaction_data);
	rpc_result_release(&r);

	/* Failure is a result with HTTP 200, not a JSON-RPC error. */
	ck_assert_int_eq(parse_result(RPC_SIMULATE_TRANSACTION,
				      "{\"latestLedger\":51234567,\"error\":\"HostError: "
				      "Error(Contract, #10) ...\",\"events\":[\"AAAA\"]}",
				      &r),
			 0);
	ck_assert_int_eq(r.status, RPC_OK);
	ck_assert_str_eq(s->error, "HostError: Error(Contract, #10) ...");
	ck_assert_ptr_null(s->transaction_data);
	rpc_result_release(&r);

	ck_assert_int_eq(
		parse_result(RPC_SIMULATE_TRANSACTION,
			     "{\"latestLedger\":5,\"minResourceFee\":\"10\",\"transactionData\":"
			     "\"AAAA\",\"restorePreamble\":{\"transactionData\":\"AAAB\","
			     "\"minResourceFee\":\"77\"},\"results\":[{\"xdr\":\"AAAAAQ==\","
			     "\"auth\":[]}]}",
			     &r),
		0);
	ck_assert_str_eq(s->restore_transaction_data, "AAAB");
	ck_assert_uint_eq(s->restore_min_resource_fee, 77);
	ck_assert_uint_eq(s->n_auth, 0);
	rpc_result_release(&r);

	expect_reject(RPC_SIMULATE_TRANSACTION,
		      "{\"latestLedger\":5,\"minResourceFee\":61234,\"transactionData\":\"AAAA\"}",
		      "result.minResourceFee: expected decimal string, got number");
	expect_reject(RPC_SIMULATE_TRANSACTION,
		      "{\"latestLedger\":5,\"minResourceFee\":\"1\",\"transactionData\":\"AAAA\","
		      "\"results\":[{\"xdr\":\"AAAA\",\"auth\":[\"AAAA\",7]}]}",
		      "result.results[0].auth[1]: expected string, got number");
	expect_reject(RPC_SIMULATE_TRANSACTION,
		      "{\"latestLedger\":5,\"minResourceFee\":\"1\",\"transactionData\":\"AAAA\","
		      "\"results\":[{\"xdr\":\"AAAA\"},{\"xdr\":\"AAAA\"}]}",
		      "result.results: 2 results, expected 1");
	expect_reject(RPC_SIMULATE_TRANSACTION, "{\"minResourceFee\":\"1\"}",
		      "result.latestLedger: missing");
}
END_TEST

START_TEST(test_parse_send)
{
	struct rpc_result r;

	ck_assert_int_eq(
		parse_result(RPC_SEND_TRANSACTION,
			     "{\"status\":\"PENDING\",\"hash\":\"14f29487790446fcec71dd130613a"
			     "0737163cd7dd197418c766b2c149d52ee94\",\"latestLedger\":51234567,"
			     "\"latestLedgerCloseTime\":\"1784671645\"}",
			     &r),
		0);
	ck_assert_int_eq(r.u.send.status, RPC_SEND_PENDING);
	ck_assert_str_eq(r.u.send.hash, HASH);
	ck_assert_int_eq(r.u.send.latest_ledger_close_time, 1784671645);
	ck_assert_ptr_null(r.u.send.error_result_xdr);
	rpc_result_release(&r);

	ck_assert_int_eq(
		parse_result(RPC_SEND_TRANSACTION,
			     "{\"status\":\"ERROR\",\"errorResultXdr\":\"AAAAAAAAxBj////3AAAAAA=="
			     "\",\"hash\":\"14f29487790446fcec71dd130613a0737163cd7dd197418c76"
			     "6b2c149d52ee94\",\"latestLedger\":51234567,"
			     "\"latestLedgerCloseTime\":\"1784671645\"}",
			     &r),
		0);
	ck_assert_int_eq(r.u.send.status, RPC_SEND_ERROR);
	ck_assert_str_eq(r.u.send.error_result_xdr, "AAAAAAAAxBj////3AAAAAA==");
	rpc_result_release(&r);

	for (int i = 0; i < 2; i++) {
		const char *st = i ? "DUPLICATE" : "TRY_AGAIN_LATER";
		char buf[512];
		snprintf(buf, sizeof(buf),
			 "{\"status\":\"%s\",\"hash\":\"%s\",\"latestLedger\":1,"
			 "\"latestLedgerCloseTime\":\"2\"}",
			 st, HASH);
		ck_assert_int_eq(parse_result(RPC_SEND_TRANSACTION, buf, &r), 0);
		ck_assert_int_eq(r.u.send.status,
				 i ? RPC_SEND_DUPLICATE : RPC_SEND_TRY_AGAIN_LATER);
		rpc_result_release(&r);
	}
	expect_reject(
		RPC_SEND_TRANSACTION,
		"{\"status\":\"ERROR\",\"hash\":\"14f29487790446fcec71dd130613a0737163cd7dd197418c"
		"766b2c149d52ee94\",\"latestLedger\":1,\"latestLedgerCloseTime\":\"2\"}",
		"result.errorResultXdr: missing");
	expect_reject(RPC_SEND_TRANSACTION,
		      "{\"status\":\"FILTERED\",\"hash\":\"x\",\"latestLedger\":1}",
		      "result.status: unknown status 'FILTERED'");
	expect_reject(
		RPC_SEND_TRANSACTION,
		"{\"status\":\"PENDING\",\"hash\":\"14f29487790446fcec71dd130613a0737163cd7dd197"
		"418c766b2c149d52ee94\",\"latestLedger\":1,\"latestLedgerCloseTime\":2}",
		"result.latestLedgerCloseTime: expected decimal string, got number");
}
END_TEST

START_TEST(test_parse_get_transaction)
{
	struct rpc_result r;
	struct rpc_get_tx *t = &r.u.get_tx;

	ck_assert_int_eq(
		parse_result(RPC_GET_TRANSACTION,
			     "{\"status\":\"NOT_FOUND\",\"txHash\":\"14f29487790446fcec71dd130"
			     "613a0737163cd7dd197418c766b2c149d52ee94\",\"latestLedger\":"
			     "51234568,\"latestLedgerCloseTime\":\"1784671650\","
			     "\"oldestLedger\":51113609,\"oldestLedgerCloseTime\":\"1784065661\"}",
			     &r),
		0);
	ck_assert_int_eq(t->status, RPC_TX_NOT_FOUND);
	ck_assert_uint_eq(t->latest_ledger, 51234568);
	ck_assert_int_eq(t->latest_ledger_close_time, 1784671650);
	ck_assert_uint_eq(t->oldest_ledger, 51113609);
	ck_assert_int_eq(t->oldest_ledger_close_time, 1784065661);
	ck_assert_ptr_null(t->result_xdr);
	rpc_result_release(&r);

	ck_assert_int_eq(
		parse_result(
			RPC_GET_TRANSACTION,
			"{\"status\":\"SUCCESS\",\"txHash\":\"14f29487790446fcec71dd130613a0737163"
			"cd7dd197418c766b2c149d52ee94\",\"latestLedger\":51234570,"
			"\"latestLedgerCloseTime\":\"1784671660\",\"oldestLedger\":51113611,"
			"\"oldestLedgerCloseTime\":\"1784065671\",\"ledger\":51234569,"
			"\"createdAt\":\"1784671655\",\"applicationOrder\":3,\"feeBump\":false,"
			"\"envelopeXdr\":\"AAAAAgAA\",\"resultXdr\":"
			"\"AAAAAAAAoRIAAAAAAAAAAQAAAAAAAAAY"
			"AAAAAAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4fAAAAAA==\","
			"\"resultMetaXdr\":\"AAAA\"}",
			&r),
		0);
	ck_assert_int_eq(t->status, RPC_TX_SUCCESS);
	ck_assert_str_eq(t->tx_hash, HASH);
	ck_assert_uint_eq(t->ledger, 51234569);
	ck_assert_int_eq(t->created_at, 1784671655);
	ck_assert_uint_eq(t->application_order, 3);
	ck_assert(!t->fee_bump);
	ck_assert_str_eq(t->envelope_xdr, "AAAAAgAA");
	ck_assert(strncmp(t->result_xdr, "AAAAAAAAoRIA", 12) == 0);
	rpc_result_release(&r);

	/* createdAt is a string in getTransaction (number only in the plural). */
	expect_reject(RPC_GET_TRANSACTION,
		      "{\"status\":\"FAILED\",\"latestLedger\":2,\"latestLedgerCloseTime\":\"1\","
		      "\"oldestLedger\":1,\"oldestLedgerCloseTime\":\"1\",\"ledger\":2,"
		      "\"createdAt\":1784671655,\"applicationOrder\":1,\"feeBump\":true,"
		      "\"envelopeXdr\":\"AAAA\",\"resultXdr\":\"AAAA\"}",
		      "result.createdAt: expected decimal string, got number");
	expect_reject(RPC_GET_TRANSACTION,
		      "{\"status\":\"FAILED\",\"latestLedger\":2,\"latestLedgerCloseTime\":\"1\","
		      "\"oldestLedger\":1,\"oldestLedgerCloseTime\":\"1\",\"ledger\":2,"
		      "\"createdAt\":\"1\",\"applicationOrder\":1,\"feeBump\":\"no\","
		      "\"envelopeXdr\":\"AAAA\",\"resultXdr\":\"AAAA\"}",
		      "result.feeBump: expected boolean, got string");
	expect_reject(RPC_GET_TRANSACTION,
		      "{\"status\":\"FAILED\",\"latestLedger\":2,\"latestLedgerCloseTime\":\"1\","
		      "\"oldestLedger\":1,\"oldestLedgerCloseTime\":\"1\",\"ledger\":2,"
		      "\"createdAt\":\"1\",\"applicationOrder\":1,\"feeBump\":false,"
		      "\"envelopeXdr\":\"AAAA\"}",
		      "result.resultXdr: missing");
	expect_reject(
		RPC_GET_TRANSACTION,
		"{\"status\":\"NOT_FOUND\",\"latestLedger\":2,\"latestLedgerCloseTime\":"
		"\"9223372036854775808\",\"oldestLedger\":1,\"oldestLedgerCloseTime\":\"1\"}",
		"result.latestLedgerCloseTime: '9223372036854775808' is not a decimal integer "
		"in 0..9223372036854775807");
}
END_TEST

START_TEST(test_parse_get_transactions)
{
	struct rpc_result r;
	struct rpc_get_txs *t = &r.u.get_txs;
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"transactions\":[{\"status\":\"SUCCESS\",\"applicationOrder\":1,"
		 "\"feeBump\":false,\"envelopeXdr\":\"AAAA\",\"resultXdr\":\"AAAB\","
		 "\"resultMetaXdr\":\"AAAC\",\"ledger\":100,\"createdAt\":1784671655,"
		 "\"txHash\":\"%s\"},{\"status\":\"FAILED\",\"applicationOrder\":2,"
		 "\"feeBump\":true,\"envelopeXdr\":\"BBBB\",\"resultXdr\":\"BBBC\",\"ledger\":100,"
		 "\"createdAt\":1784671655,\"txHash\":\"%s\"}],\"latestLedger\":120,"
		 "\"latestLedgerCloseTimestamp\":1784671755,\"oldestLedger\":10,"
		 "\"oldestLedgerCloseTimestamp\":1784000000,\"cursor\":\"429496729600\"}",
		 HASH, HASH);
	ck_assert_int_eq(parse_result(RPC_GET_TRANSACTIONS, buf, &r), 0);
	ck_assert_uint_eq(t->n_txs, 2);
	ck_assert_int_eq(t->txs[0].status, RPC_TX_SUCCESS);
	ck_assert_int_eq(t->txs[1].status, RPC_TX_FAILED);
	ck_assert(t->txs[1].fee_bump);
	ck_assert_uint_eq(t->txs[1].application_order, 2);
	ck_assert_int_eq(t->txs[0].created_at, 1784671655);
	ck_assert_str_eq(t->txs[1].envelope_xdr, "BBBB");
	ck_assert_str_eq(t->txs[0].tx_hash, HASH);
	ck_assert_uint_eq(t->latest_ledger, 120);
	ck_assert_int_eq(t->latest_ledger_close_time, 1784671755);
	ck_assert_str_eq(t->cursor, "429496729600");
	rpc_result_release(&r);

	ck_assert_int_eq(
		parse_result(RPC_GET_TRANSACTIONS,
			     "{\"transactions\":[],\"latestLedger\":120,\"oldestLedger\":10,"
			     "\"cursor\":\"5\"}",
			     &r),
		0);
	ck_assert_uint_eq(t->n_txs, 0);
	ck_assert_int_eq(t->latest_ledger_close_time, -1);
	rpc_result_release(&r);

	snprintf(buf, sizeof(buf),
		 "{\"transactions\":[{\"status\":\"SUCCESS\",\"applicationOrder\":1,"
		 "\"feeBump\":false,\"envelopeXdr\":\"AAAA\",\"resultXdr\":\"AAAB\",\"ledger\":100,"
		 "\"createdAt\":\"1784671655\",\"txHash\":\"%s\"}],\"latestLedger\":120,"
		 "\"oldestLedger\":10,\"cursor\":\"5\"}",
		 HASH);
	expect_reject(RPC_GET_TRANSACTIONS, buf,
		      "result.transactions[0].createdAt: expected integer, got string");
	snprintf(buf, sizeof(buf),
		 "{\"transactions\":[{\"status\":\"NOT_FOUND\",\"txHash\":\"%s\"}],"
		 "\"latestLedger\":120,\"oldestLedger\":10,\"cursor\":\"5\"}",
		 HASH);
	expect_reject(RPC_GET_TRANSACTIONS, buf,
		      "result.transactions[0].status: unknown status 'NOT_FOUND'");
	expect_reject(
		RPC_GET_TRANSACTIONS,
		"{\"transactions\":[7],\"latestLedger\":120,\"oldestLedger\":10,\"cursor\":\"5\"}",
		"result.transactions[0]: expected object, got number");
	expect_reject(RPC_GET_TRANSACTIONS,
		      "{\"transactions\":[],\"latestLedger\":120,\"oldestLedger\":10}",
		      "result.cursor: missing");
}
END_TEST

/* ---- limits, envelopes, errors ------------------------------------------ */

START_TEST(test_parse_oversized_xdr)
{
	size_t n = RPC_XDR_MAX + 4;
	char *big, *p;
	struct rpc_result r;

	/* errorResultXdr one base64 quantum over the bound. */
	big = malloc(n + 512);
	p = big + sprintf(big,
			  "{\"status\":\"ERROR\",\"hash\":\"%s\",\"latestLedger\":1,"
			  "\"latestLedgerCloseTime\":\"2\",\"errorResultXdr\":\"",
			  HASH);
	memset(p, 'A', n);
	strcpy(p + n, "\"}");
	ck_assert_int_lt(parse_result(RPC_SEND_TRANSACTION, big, &r), 0);
	ck_assert_int_eq(r.status, RPC_E_PROTOCOL);
	ck_assert_int_eq(r.err.code, OUTBOX_ETOOBIG);
	ck_assert_str_eq(r.err.msg, "result.errorResultXdr: string of 262148 bytes exceeds 262144");
	ck_assert_ptr_null(r.u.send.error_result_xdr);
	rpc_result_release(&r);
	/* Exactly at the bound is accepted. */
	strcpy(p + RPC_XDR_MAX, "\"}");
	ck_assert_int_eq(parse_result(RPC_SEND_TRANSACTION, big, &r), 0);
	ck_assert_uint_eq(strlen(r.u.send.error_result_xdr), RPC_XDR_MAX);
	rpc_result_release(&r);
	free(big);
}
END_TEST

START_TEST(test_parse_long_simulate_error_truncated)
{
	size_t n = RPC_MESSAGE_MAX * 3;
	char *big = malloc(n + 128), *p;
	struct rpc_result r;

	p = big + sprintf(big, "{\"latestLedger\":1,\"error\":\"");
	memset(p, 'e', n);
	strcpy(p + n, "\"}");
	ck_assert_int_eq(parse_result(RPC_SIMULATE_TRANSACTION, big, &r), 0);
	ck_assert_uint_eq(strlen(r.u.simulate.error), RPC_MESSAGE_MAX);
	rpc_result_release(&r);
	free(big);
}
END_TEST

START_TEST(test_parse_jsonrpc_error)
{
	struct rpc_result r;

	ck_assert_int_lt(
		parse_body(RPC_GET_HEALTH,
			   "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,"
			   "\"message\":\"latency (6s) since last known ledger closed is too "
			   "high\"}}",
			   &r),
		0);
	ck_assert_int_eq(r.status, RPC_E_JSONRPC);
	ck_assert_int_eq(r.rpc_code, -32603);
	ck_assert_str_eq(r.rpc_message, "latency (6s) since last known ledger closed is too high");
	ck_assert_str_eq(r.err.msg, "error: json-rpc error -32603: latency (6s) since last known "
				    "ledger closed is too high");
	rpc_result_release(&r);
	ck_assert_ptr_null(r.rpc_message);

	ck_assert_int_lt(parse_body(RPC_SEND_TRANSACTION,
				    "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,"
				    "\"message\":\"invalid_xdr\",\"data\":{\"x\":1}}}",
				    &r),
			 0);
	ck_assert_int_eq(r.status, RPC_E_JSONRPC);
	ck_assert_int_eq(r.rpc_code, -32602);
	rpc_result_release(&r);

	ck_assert_int_lt(parse_body(RPC_GET_HEALTH,
				    "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":\"x\"}}",
				    &r),
			 0);
	ck_assert_int_eq(r.status, RPC_E_PROTOCOL);
	ck_assert_str_eq(r.err.msg, "error.code: expected integer, got string");
	rpc_result_release(&r);
}
END_TEST

struct env_case {
	const char *body;
	const char *msg; /* prefix of the expected message */
};

static const struct env_case env_cases[] = {
	{"", "response: invalid json"},
	{"garbage", "response: invalid json"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}} trailing", "response: invalid json"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"id\":7,\"result\":{}}", "response: invalid json"},
	{"[1,2]", "response: expected object, got array"},
	{"{\"id\":7,\"result\":{}}", "jsonrpc: expected \"2.0\""},
	{"{\"jsonrpc\":\"1.0\",\"id\":7,\"result\":{}}", "jsonrpc: expected \"2.0\""},
	{"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", "id: response id does not match"},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}", "id: response id does not match"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7}", "result: missing"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":[]}", "result: expected object, got array"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{},\"error\":{\"code\":1}}",
	 "response: both result and error"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"status\":\"a\\u0000b\"}}",
	 "response: invalid json"},
};

START_TEST(test_parse_envelope_rejects)
{
	const struct env_case *c = &env_cases[_i];
	struct rpc_result r;

	ck_assert_int_lt(parse_body(RPC_GET_HEALTH, c->body, &r), 0);
	ck_assert_int_eq(r.status, RPC_E_PROTOCOL);
	ck_assert_msg(strncmp(r.err.msg, c->msg, strlen(c->msg)) == 0, "%s -> %s", c->body,
		      r.err.msg);
	rpc_result_release(&r);
}
END_TEST

/* Every method: each required field of a good result, removed, is named. */
struct required_case {
	enum rpc_method m;
	const char *result;
};

static const char GET_TX_OK[] =
	"{\"status\":\"SUCCESS\",\"latestLedger\":2,\"latestLedgerCloseTime\":\"1\","
	"\"oldestLedger\":1,\"oldestLedgerCloseTime\":\"1\",\"ledger\":2,\"createdAt\":\"1\","
	"\"applicationOrder\":1,\"feeBump\":false,\"envelopeXdr\":\"AAAA\",\"resultXdr\":\"AAAA\"}";

START_TEST(test_parse_each_required_field)
{
	const struct required_case cases[] = {
		{RPC_GET_HEALTH, "{\"status\":\"healthy\",\"latestLedger\":5,\"oldestLedger\":1,"
				 "\"ledgerRetentionWindow\":10}"},
		{RPC_GET_NETWORK, "{\"passphrase\":\"p\",\"protocolVersion\":27}"},
		{RPC_GET_LATEST_LEDGER,
		 "{\"id\":\"0a00a9cf845f7af7cff09c66f8ae6480e9971e6e2c7fa4afd8d6266ee13c987b\","
		 "\"protocolVersion\":27,\"sequence\":5}"},
		{RPC_SIMULATE_TRANSACTION,
		 "{\"latestLedger\":5,\"minResourceFee\":\"1\",\"transactionData\":\"AAAA\"}"},
		{RPC_GET_TRANSACTION, GET_TX_OK},
		{RPC_GET_TRANSACTIONS,
		 "{\"transactions\":[],\"latestLedger\":120,\"oldestLedger\":10,\"cursor\":\"5\"}"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *root = json_loads(cases[i].result, 0, NULL);
		const char *key;
		json_t *v;
		struct rpc_result r;

		ck_assert_ptr_nonnull(root);
		ck_assert_int_eq(parse_result(cases[i].m, cases[i].result, &r), 0);
		rpc_result_release(&r);
		json_object_foreach(root, key, v)
		{
			json_t *copy;
			char *s, want[128];
			if (strcmp(key, "transactions") == 0)
				continue; /* an absent list reads as empty */
			copy = json_deep_copy(root);
			json_object_del(copy, key);
			s = json_dumps(copy, JSON_COMPACT);
			snprintf(want, sizeof(want), "result.%s: missing", key);
			expect_reject(cases[i].m, s, want);
			free(s);
			json_decref(copy);
		}
		json_decref(root);
	}
}
END_TEST

/* ---- request bodies ----------------------------------------------------- */

static void expect_body(const struct rpc_request *req, const char *want)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char *body = rpc_request_body(req, 42, &err);

	ck_assert_msg(body != NULL, "%s", err.msg);
	ck_assert_str_eq(body, want);
	free(body);
}

START_TEST(test_request_bodies)
{
	struct rpc_request req = req_for(RPC_GET_HEALTH);

	expect_body(&req, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"getHealth\",\"params\":{}}");
	req.method = RPC_GET_FEE_STATS;
	expect_body(&req,
		    "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"getFeeStats\",\"params\":{}}");
	req.method = RPC_GET_ACCOUNT;
	expect_body(&req, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"getLedgerEntries\","
			  "\"params\":{\"keys\":[\"AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j"
			  "67qu90Mg==\"]}}");
	req.method = RPC_SEND_TRANSACTION;
	req.transaction = "AAAAAgAA";
	expect_body(&req, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"sendTransaction\","
			  "\"params\":{\"transaction\":\"AAAAAgAA\"}}");
	req.method = RPC_SIMULATE_TRANSACTION;
	expect_body(&req, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"simulateTransaction\","
			  "\"params\":{\"transaction\":\"AAAAAgAA\"}}");
	req.method = RPC_GET_TRANSACTION;
	req.hash = HASH;
	expect_body(&req, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"getTransaction\","
			  "\"params\":{\"hash\":\"14f29487790446fcec71dd130613a0737163cd7dd197418c7"
			  "66b2c149d52ee94\"}}");
	req.method = RPC_GET_TRANSACTIONS;
	req.start_ledger = 100;
	req.limit = 50;
	expect_body(&req, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"getTransactions\","
			  "\"params\":{\"startLedger\":100,\"pagination\":{\"limit\":50}}}");
	req.cursor = "429496729600";
	expect_body(&req,
		    "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"getTransactions\","
		    "\"params\":{\"pagination\":{\"limit\":50,\"cursor\":\"429496729600\"}}}");
}
END_TEST

/*
 * The bodies rpc_request_body writes are the bytes jansson gives for the
 * same tree (what it used to build): every method, ids up to 2^63 - 1, a
 * transaction of every base64 character, each printable cursor character
 * alone and among others, with and without a limit.
 */
static void expect_as_jansson(const struct rpc_request *req, uint64_t id, json_t *params)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	json_t *root = json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id", (json_int_t)id,
				 "method", rpc_method_name(req->method), "params", params);
	char *want = json_dumps(root, JSON_COMPACT), *got = rpc_request_body(req, id, &err);

	ck_assert_msg(got != NULL, "%s", err.msg);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	json_decref(root);
}

static json_t *txs_params(const struct rpc_request *req)
{
	json_t *pag = json_object(), *p = json_object();

	if (req->limit)
		json_object_set_new(pag, "limit", json_integer(req->limit));
	if (req->cursor)
		json_object_set_new(pag, "cursor", json_string(req->cursor));
	else
		json_object_set_new(p, "startLedger", json_integer(req->start_ledger));
	json_object_set_new(p, "pagination", pag);
	return p;
}

START_TEST(test_request_bodies_as_jansson)
{
	static const uint64_t ids[] = {0, 1, 42, 4294967296u, 9223372036854775807u};
	char tx[69], cur[RPC_CURSOR_MAX];
	struct rpc_request req;

	for (int i = 0; i < 64; i++)
		tx[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i];
	memcpy(tx + 64, "AA==", 5);
	for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
		for (int m = 0; m < RPC_METHOD_COUNT; m++) {
			req = req_for((enum rpc_method)m);
			req.transaction = tx;
			req.hash = HASH;
			req.start_ledger = 7;
			if (m == RPC_GET_TRANSACTIONS)
				expect_as_jansson(&req, ids[k], txs_params(&req));
			else if (m == RPC_SIMULATE_TRANSACTION || m == RPC_SEND_TRANSACTION)
				expect_as_jansson(&req, ids[k],
						  json_pack("{s:s}", "transaction", tx));
			else if (m == RPC_GET_TRANSACTION)
				expect_as_jansson(&req, ids[k], json_pack("{s:s}", "hash", HASH));
			else if (m == RPC_GET_ACCOUNT)
				expect_as_jansson(&req, ids[k],
						  json_pack("{s:[s]}", "keys", ACCOUNT_KEY));
			else
				expect_as_jansson(&req, ids[k], json_object());
		}
	}
	req = req_for(RPC_GET_TRANSACTIONS);
	for (int c = 0x21; c <= 0x7e; c++) {
		for (int lim = 0; lim <= RPC_GET_TXS_MAX; lim += RPC_GET_TXS_MAX) {
			req.limit = (uint32_t)lim;
			snprintf(cur, sizeof(cur), "%c", c);
			req.cursor = cur;
			expect_as_jansson(&req, 3, txs_params(&req));
			snprintf(cur, sizeof(cur), "4294967296%c%c-x\"\\%c", c, c, c);
			expect_as_jansson(&req, 3, txs_params(&req));
			req.cursor = NULL;
			req.start_ledger = (uint32_t)c * 16777216u;
			expect_as_jansson(&req, 3, txs_params(&req));
		}
	}
	memset(cur, '\\', RPC_CURSOR_MAX - 1);
	cur[RPC_CURSOR_MAX - 1] = '\0';
	req.cursor = cur;
	expect_as_jansson(&req, 3, txs_params(&req));
}
END_TEST

/* What "standard padded base64" means, spelled out: ^[A-Za-z0-9+/]*={0,2}$, length a multiple of 4. */
static bool spec_b64(const char *s, size_t len)
{
	size_t i = 0, pad = 0;

	if (len % 4)
		return false;
	while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '/'))
		i++;
	while (i < len && s[i] == '=' && pad < 2)
		i++, pad++;
	return i == len;
}

/* Every string of len characters over alpha: the request check says what spec_b64 says. */
static void b64_all(const char *alpha, size_t len)
{
	const size_t na = strlen(alpha);
	struct rpc_request req = {.method = RPC_SEND_TRANSACTION};
	size_t total = 1;
	char buf[16];

	for (size_t k = 0; k < len; k++)
		total *= na;
	for (size_t n = 0; n < total; n++) {
		struct outbox_error err = OUTBOX_ERROR_INIT;
		size_t x = n;
		char *body;
		for (size_t k = 0; k < len; k++, x /= na)
			buf[k] = alpha[x % na];
		buf[len] = '\0';
		req.transaction = buf;
		body = rpc_request_body(&req, 1, &err);
		ck_assert_msg((body != NULL) == spec_b64(buf, len), "'%s': %s", buf,
			      body ? "accepted" : err.msg);
		free(body);
	}
}

/*
 * 1 to 5 characters over a letter of each class, '=', the URL-safe '-' and
 * '_', a space and a byte above 127; 8 characters over four of them.
 */
START_TEST(test_request_b64_exhaustive)
{
	for (size_t len = 1; len <= 5; len++)
		b64_all("Az9+/=-_ \xc3", len);
	b64_all("A/=_", 8);
}
END_TEST

START_TEST(test_request_bad_params)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_SEND_TRANSACTION};

	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_str_eq(err.msg, "transaction: missing");
	req.transaction = "not base64!";
	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_str_eq(err.msg, "transaction: not standard padded base64");
	req.method = RPC_GET_TRANSACTION;
	req.hash = "1234";
	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_str_eq(err.msg, "hash: expected 64 hex digits");
	req.method = RPC_GET_TRANSACTIONS;
	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_str_eq(err.msg, "start_ledger: 0 without a cursor");
	req.cursor = "has space";
	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_str_eq(err.msg, "cursor: expected 1..127 printable characters");
	req.cursor = NULL;
	req.start_ledger = 1;
	req.limit = RPC_GET_TXS_MAX + 1;
	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_str_eq(err.msg, "limit: 10001 exceeds 10000");
	req.method = RPC_METHOD_COUNT;
	ck_assert_ptr_null(rpc_request_body(&req, 1, &err));
	ck_assert_int_eq(err.code, OUTBOX_EINVAL);
}
END_TEST

START_TEST(test_result_move)
{
	struct rpc_result a, b;

	ck_assert_int_eq(parse_result(RPC_SIMULATE_TRANSACTION, SIM_OK, &a), 0);
	rpc_result_move(&b, &a);
	ck_assert_ptr_null(a.u.simulate.transaction_data);
	ck_assert_uint_eq(b.u.simulate.n_auth, 1);
	rpc_result_release(&a);
	rpc_result_release(&b);
	ck_assert_str_eq(rpc_method_name(RPC_GET_TRANSACTIONS), "getTransactions");
	ck_assert_str_eq(rpc_status_name(RPC_E_TOOBIG), "toobig");
}
END_TEST

static Suite *rpc_parse_suite(void)
{
	Suite *s = suite_create("rpc_parse");
	TCase *tc = tcase_create("methods");
	TCase *tl = tcase_create("limits");

	tcase_add_test(tc, test_parse_health);
	tcase_add_test(tc, test_parse_network);
	tcase_add_test(tc, test_parse_latest_ledger);
	tcase_add_test(tc, test_parse_fee_stats);
	tcase_add_test(tc, test_parse_fee_stats_strict);
	tcase_add_test(tc, test_parse_account);
	tcase_add_test(tc, test_parse_account_bad);
	tcase_add_test(tc, test_parse_simulate);
	tcase_add_test(tc, test_parse_send);
	tcase_add_test(tc, test_parse_get_transaction);
	tcase_add_test(tc, test_parse_get_transactions);
	tcase_add_test(tc, test_parse_each_required_field);
	tcase_add_test(tc, test_request_bodies);
	tcase_add_test(tc, test_request_bodies_as_jansson);
	tcase_add_test(tc, test_request_bad_params);
	tcase_add_test(tc, test_request_b64_exhaustive);
	tcase_add_test(tc, test_result_move);
	suite_add_tcase(s, tc);
	tcase_add_test(tl, test_parse_oversized_xdr);
	tcase_add_test(tl, test_parse_long_simulate_error_truncated);
	tcase_add_test(tl, test_parse_jsonrpc_error);
	tcase_add_loop_test(tl, test_parse_envelope_rejects, 0,
			    (int)(sizeof(env_cases) / sizeof(env_cases[0])));
	suite_add_tcase(s, tl);
	return s;
}

OUTBOX_CHECK_MAIN(rpc_parse_suite)
