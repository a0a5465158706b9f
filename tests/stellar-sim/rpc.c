/*
 * rpc.c - see rpc.h. Parameter errors are JSON-RPC errors -32602 (an
 * undecodable envelope: "invalid_xdr"); simulateTransaction reports its
 * failures inside result.error, as the real server does.
 */
#include "tests/stellar-sim/rpc.h"
#include "common/stellar/xdr_buf.h"
#include "tests/stellar-sim/chain.h"
#include "tests/stellar-sim/envelope.h"
#include "tests/stellar-sim/xdrenc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RPC_MAX_KEYS     200
#define RPC_MAX_PAGE     200
#define RPC_DEFAULT_PAGE 10
#define RPC_MAX_ENVELOPE (XDR_MAX_ENVELOPE_BYTES * 4 / 3 + 4)

struct rpc_fail {
	int code;
	char msg[256];
};

static json_t *fail(struct rpc_fail *e, int code, const char *msg)
{
	e->code = code;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	return NULL;
}

json_t *rpc_error(json_t *id, int code, const char *message)
{
	return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			 "error", "code", code, "message", message);
}

const char *rpc_method(json_t *req)
{
	json_t *m = json_object_get(req, "method");

	return json_is_string(m) ? json_string_value(m) : NULL;
}

static json_t *get_network(json_t *p, struct rpc_fail *e)
{
	return json_pack("{s:s,s:i}", "passphrase", chain_config()->passphrase, "protocolVersion",
			 SIM_PROTOCOL_VERSION);
}

/* getVersionInfo: stellar-rpc's shape; the sim has no build stamps to give. */
static json_t *get_version_info(json_t *p, struct rpc_fail *e)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:i}", "version", "stellar-sim", "commitHash", "",
			 "buildTimestamp", "", "captiveCoreVersion", "", "protocolVersion",
			 SIM_PROTOCOL_VERSION);
}

static const char *envelope_param(json_t *p, size_t *len, struct rpc_fail *e)
{
	json_t *t = json_object_get(p, "transaction");

	if (!json_is_string(t)) {
		fail(e, -32602, "missing transaction");
		return NULL;
	}
	*len = json_string_length(t);
	if (*len == 0 || *len > RPC_MAX_ENVELOPE) {
		fail(e, -32602, "invalid_xdr");
		return NULL;
	}
	return json_string_value(t);
}

static json_t *send_transaction(json_t *p, const struct rpc_faults *f, unsigned lag,
				struct rpc_fail *e)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	static const char *const names[] = {"PENDING", "DUPLICATE", "TRY_AGAIN_LATER", "ERROR"};
	struct submit_out out;
	struct sim_tx *tx;
	const char *b64;
	size_t len;
	json_t *o;
	char hex[65], ct[24];

	if (!(b64 = envelope_param(p, &len, e)))
		return NULL;
	tx = envelope_decode(chain_config(), b64, len, &err);
	if (!tx)
		return fail(e, -32602, "invalid_xdr");
	sim_hex(tx->hash, 32, hex);
	if (f->try_again_later) {
		sim_tx_free(tx);
		memset(&out, 0, sizeof(out));
		out.status = SUBMIT_TRY_AGAIN_LATER;
		chain_view(lag, &out.latest_ledger, &out.latest_close_time);
	} else {
		chain_submit(tx, f->blackhole, lag, &out);
	}
	snprintf(ct, sizeof(ct), "%llu", (unsigned long long)out.latest_close_time);
	o = json_pack("{s:s,s:s,s:i,s:s}", "status", names[out.status], "hash", hex, "latestLedger",
		      (json_int_t)out.latest_ledger, "latestLedgerCloseTime", ct);
	if (out.error_result_b64) {
		json_object_set_new(o, "errorResultXdr", json_string(out.error_result_b64));
		free(out.error_result_b64);
	}
	return o;
}

static json_t *simulate_transaction(json_t *p, unsigned lag, struct rpc_fail *e)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct sim_tx *tx;
	const char *b64;
	size_t len;
	json_t *o;

	if (!(b64 = envelope_param(p, &len, e)))
		return NULL;
	tx = envelope_decode_unsigned(chain_config(), b64, len, &err);
	if (!tx)
		return fail(e, -32602, "invalid_xdr");
	o = chain_simulate(tx, lag);
	sim_tx_free(tx);
	return o;
}

static json_t *get_transaction(json_t *p, unsigned lag, struct rpc_fail *e)
{
	json_t *h = json_object_get(p, "hash");
	uint8_t hash[32];

	if (!json_is_string(h) || json_string_length(h) != 64 ||
	    sim_unhex(json_string_value(h), hash, 32) < 0)
		return fail(e, -32602, "invalid hash: expected 64 hex characters");
	return chain_get_transaction(hash, lag);
}

static json_t *get_transactions(json_t *p, unsigned lag, struct rpc_fail *e)
{
	json_t *sl = json_object_get(p, "startLedger"), *pg = json_object_get(p, "pagination");
	json_t *cur = json_object_get(pg, "cursor"), *lim = json_object_get(pg, "limit"), *o;
	unsigned long long cursor = 0;
	json_int_t start = 0, limit = RPC_DEFAULT_PAGE;
	char buf[256], *end;

	if (pg && !json_is_object(pg))
		return fail(e, -32602, "pagination: expected an object");
	if (sl && (!json_is_integer(sl) || json_integer_value(sl) <= 0 ||
		   json_integer_value(sl) > UINT32_MAX))
		return fail(e, -32602, "startLedger: expected a positive ledger sequence");
	start = sl ? json_integer_value(sl) : 0;
	if (cur) {
		if (start)
			return fail(e, -32602, "startLedger and cursor cannot both be set");
		if (!json_is_string(cur) || !json_string_length(cur) ||
		    json_string_length(cur) > 20 ||
		    strspn(json_string_value(cur), "0123456789") != json_string_length(cur))
			return fail(e, -32602, "cursor: expected a decimal string");
		errno = 0;
		cursor = strtoull(json_string_value(cur), &end, 10);
		if (errno)
			return fail(e, -32602, "cursor: out of range");
	} else if (!start) {
		return fail(e, -32602, "startLedger must be positive");
	}
	if (lim) {
		if (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
		    json_integer_value(lim) > RPC_MAX_PAGE)
			return fail(e, -32602, "limit must not exceed 200");
		limit = json_integer_value(lim);
	}
	o = chain_get_transactions((uint32_t)start, cursor, (unsigned)limit, lag, buf, sizeof(buf));
	return o ? o : fail(e, -32602, buf);
}

/*
 * One LedgerKey: an account yields its entry as of the end of ledger view;
 * other types are not stored here.
 */
static int ledger_entry(const char *b64, size_t len, uint32_t view, json_t *entries,
			struct rpc_fail *e)
{
	uint8_t raw[256], key[32];
	struct acct_state st;
	uint32_t type;
	size_t n;
	char *xdr;

	if (xdr_b64_decode(b64, len, raw, sizeof(raw), &n, "keys", NULL) < 0 || n < 8)
		return fail(e, -32602, "cannot unmarshal key value: invalid_xdr"), -1;
	type = (uint32_t)raw[0] << 24 | (uint32_t)raw[1] << 16 | (uint32_t)raw[2] << 8 | raw[3];
	if (type == 9)
		return fail(e, -32602, "ledger key type TTL is not allowed"), -1;
	if (type > 9)
		return fail(e, -32602, "cannot unmarshal key value: invalid_xdr"), -1;
	if (type != 0)
		return 0;
	if (n != 40 || memcmp(raw + 4, "\0\0\0\0", 4))
		return fail(e, -32602, "cannot unmarshal key value: invalid_xdr"), -1;
	memcpy(key, raw + 8, 32);
	if (!chain_account_at(key, view, &st))
		return 0;
	xdr = enc_account_entry(key, st.balance, st.seq);
	if (!xdr)
		return fail(e, -32603, "out of memory"), -1;
	json_array_append_new(entries, json_pack("{s:s%,s:s,s:i,s:s}", "key", b64, len, "xdr", xdr,
						 "lastModifiedLedgerSeq", (json_int_t)st.ledger,
						 "extXdr", "AAAAAA=="));
	free(xdr);
	return 0;
}

/*
 * Every entry is read as of one ledger, the view's, fixed before the first:
 * ledgers closing meanwhile change nothing in the answer.
 */
static json_t *get_ledger_entries(json_t *p, unsigned lag, struct rpc_fail *e)
{
	json_t *keys = json_object_get(p, "keys"), *k, *entries;
	uint32_t latest;
	uint64_t ct;
	size_t i;

	if (!json_is_array(keys) || json_array_size(keys) == 0)
		return fail(e, -32602, "keys: expected a non-empty array");
	if (json_array_size(keys) > RPC_MAX_KEYS)
		return fail(e, -32602, "key count exceeds maximum (200)");
	chain_view(lag, &latest, &ct);
	entries = json_array();
	json_array_foreach(keys, i, k)
	{
		if (!json_is_string(k) || ledger_entry(json_string_value(k), json_string_length(k),
						       latest, entries, e) < 0) {
			if (!e->code)
				fail(e, -32602, "keys: expected base64 strings");
			json_decref(entries);
			return NULL;
		}
	}
	return json_pack("{s:o,s:i}", "entries", entries, "latestLedger", (json_int_t)latest);
}

json_t *rpc_handle(json_t *req, const struct rpc_faults *f)
{
	json_t *id = json_object_get(req, "id"), *p = json_object_get(req, "params");
	json_t *v = json_object_get(req, "jsonrpc"), *res = NULL, *owned = NULL;
	const char *m = rpc_method(req);
	struct rpc_fail e = {0, ""};

	if (!json_is_object(req) || !json_is_string(v) || strcmp(json_string_value(v), "2.0") || !m)
		return rpc_error(id, -32600, "invalid request");
	if (p && json_is_null(p))
		p = NULL;
	if (p && !json_is_object(p))
		return rpc_error(id, -32602,
				 "invalid parameters: pass params by name, as an object");
	if (!p)
		p = owned = json_object();
	/*
	 * Read methods answer from a view (view_pick: one load-balancer die per
	 * request when two lags are set); submission and simulation report
	 * view A's ledger.
	 */
	if (!strcmp(m, "getHealth"))
		res = chain_health(view_pick());
	else if (!strcmp(m, "getNetwork"))
		res = get_network(p, &e);
	else if (!strcmp(m, "getVersionInfo"))
		res = get_version_info(p, &e);
	else if (!strcmp(m, "getLatestLedger"))
		res = chain_latest_ledger(view_pick());
	else if (!strcmp(m, "getFeeStats"))
		res = chain_fee_stats(view_pick());
	else if (!strcmp(m, "getLedgerEntries"))
		res = get_ledger_entries(p, view_pick(), &e);
	else if (!strcmp(m, "simulateTransaction"))
		res = simulate_transaction(p, view_primary(), &e);
	else if (!strcmp(m, "sendTransaction"))
		res = send_transaction(p, f, view_primary(), &e);
	else if (!strcmp(m, "getTransaction"))
		res = get_transaction(p, view_pick(), &e);
	else if (!strcmp(m, "getTransactions"))
		res = get_transactions(p, view_pick(), &e);
	else
		fail(&e, -32601, "method not found");
	json_decref(owned);
	if (!res)
		return rpc_error(id, e.code ? e.code : -32603, e.code ? e.msg : "internal error");
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
			 res);
}
