/*
 * rpc_parse.c - JSON-RPC request bodies and defensive response parsing for
 * every Stellar RPC method outboxd uses (common/stellar/README.md, RPC).
 *
 * Every response is hostile input. The rules applied throughout:
 *  - the envelope must be {"jsonrpc":"2.0","id":<the id we sent>, ...} with
 *    exactly one of "result" (an object) or "error" (code + message);
 *  - numbers documented as JSON numbers must be integers in range (u32 for
 *    ledgers and versions, non-negative i64 for timestamps); reals, strings
 *    and out-of-range values are rejected;
 *  - amounts and close times documented as strings must be plain decimal
 *    strings (digits only, no sign, no leading zeros) that fit exactly;
 *  - every string is bounded; base64 fields are checked for the alphabet;
 *  - failures name the field path: "result.inclusionFee.p70: expected
 *    decimal string, got number".
 * Unknown extra fields are ignored (the RPC adds fields over time).
 */
#include "common/stellar/rpc.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define PATH_LEN        160
#define ACCOUNT_KEY_B64 57 /* base64 of the 40-byte LedgerKey, with NUL */
#define AUTH_MAX        1000

enum { OPT = 0, REQ = 1 };

static const char *const method_names[RPC_METHOD_COUNT] = {
	[RPC_GET_HEALTH] = "getHealth",
	[RPC_GET_NETWORK] = "getNetwork",
	[RPC_GET_LATEST_LEDGER] = "getLatestLedger",
	[RPC_GET_FEE_STATS] = "getFeeStats",
	[RPC_GET_ACCOUNT] = "getLedgerEntries",
	[RPC_SIMULATE_TRANSACTION] = "simulateTransaction",
	[RPC_SEND_TRANSACTION] = "sendTransaction",
	[RPC_GET_TRANSACTION] = "getTransaction",
	[RPC_GET_TRANSACTIONS] = "getTransactions",
};

const char *rpc_method_name(enum rpc_method m)
{
	return (unsigned)m < RPC_METHOD_COUNT ? method_names[m] : "unknown";
}

const char *rpc_status_name(enum rpc_status s)
{
	switch (s) {
	case RPC_OK:
		return "ok";
	case RPC_E_CONNECT:
		return "connect";
	case RPC_E_TIMEOUT:
		return "timeout";
	case RPC_E_TRANSPORT:
		return "transport";
	case RPC_E_HTTP:
		return "http";
	case RPC_E_TOOBIG:
		return "toobig";
	case RPC_E_PROTOCOL:
		return "protocol";
	case RPC_E_JSONRPC:
		return "jsonrpc";
	case RPC_E_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

void rpc_result_init(struct rpc_result *r, enum rpc_method m)
{
	memset(r, 0, sizeof(*r));
	r->method = m;
}

static void free_tx_infos(struct rpc_get_txs *t)
{
	for (size_t i = 0; i < t->n_txs; i++) {
		free(t->txs[i].envelope_xdr);
		free(t->txs[i].result_xdr);
	}
	free(t->txs);
}

/* Free and zero the method payload only; status and messages stay. */
static void result_clear_payload(struct rpc_result *r)
{
	struct rpc_simulate *s = &r->u.simulate;

	switch (r->method) {
	case RPC_SIMULATE_TRANSACTION:
		free(s->error);
		free(s->transaction_data);
		free(s->result_xdr);
		for (size_t i = 0; i < s->n_auth; i++)
			free(s->auth[i]);
		free(s->auth);
		free(s->restore_transaction_data);
		break;
	case RPC_GET_LATEST_LEDGER:
		free(r->u.latest_ledger.header_xdr);
		break;
	case RPC_SEND_TRANSACTION:
		free(r->u.send.error_result_xdr);
		break;
	case RPC_GET_TRANSACTION:
		free(r->u.get_tx.envelope_xdr);
		free(r->u.get_tx.result_xdr);
		break;
	case RPC_GET_TRANSACTIONS:
		free_tx_infos(&r->u.get_txs);
		break;
	default:
		break;
	}
	memset(&r->u, 0, sizeof(r->u));
}

void rpc_result_release(struct rpc_result *r)
{
	if (!r)
		return;
	result_clear_payload(r);
	free(r->rpc_message);
	rpc_result_init(r, r->method);
}

void rpc_result_move(struct rpc_result *dst, struct rpc_result *src)
{
	*dst = *src;
	rpc_result_init(src, src->method);
}

/* ---- typed field getters ------------------------------------------------ */

static const char *jtype(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "unknown";
}

static int bad(struct outbox_error *err, const char *path, const char *fmt, const char *a)
{
	return outbox_error_set(err, OUTBOX_EPROTO, path, fmt, a);
}

/*
 * Look up parent.key. Returns 0 with *out set, 1 if absent and optional,
 * or an error. A JSON null counts as absent. path only names the field in
 * error messages: one deeper than PATH_LEN keeps its head and ends in "...".
 */
static int field(const json_t *obj, const char *parent, const char *key, int req, json_t **out,
		 char *path, struct outbox_error *err)
{
	if (snprintf(path, PATH_LEN, "%s.%s", parent, key) >= PATH_LEN)
		memcpy(path + PATH_LEN - 4, "...", 4);
	*out = json_object_get(obj, key);
	if (*out && !json_is_null(*out))
		return 0;
	if (req)
		return bad(err, path, "%s", "missing");
	return 1;
}

static int get_u32(const json_t *obj, const char *parent, const char *key, int req, uint32_t *out,
		   struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);
	json_int_t n;

	if (rc)
		return rc;
	if (!json_is_integer(v))
		return bad(err, path, "expected integer, got %s",
			   json_is_real(v) ? "fractional number" : jtype(v));
	n = json_integer_value(v);
	if (n < 0 || n > (json_int_t)UINT32_MAX)
		return outbox_error_set(err, OUTBOX_EPROTO, path, "%lld out of range for u32",
					(long long)n);
	*out = (uint32_t)n;
	return 0;
}

static int get_i64num(const json_t *obj, const char *parent, const char *key, int req, int64_t *out,
		      struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);

	if (rc)
		return rc;
	if (!json_is_integer(v))
		return bad(err, path, "expected integer, got %s",
			   json_is_real(v) ? "fractional number" : jtype(v));
	if (json_integer_value(v) < 0)
		return outbox_error_set(err, OUTBOX_EPROTO, path, "%lld is negative",
					(long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

/* Plain decimal digits, no sign, no leading zero, value <= max. */
static int parse_decimal(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20 || (len > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9 || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int get_decstr(const json_t *obj, const char *parent, const char *key, int req, uint64_t max,
		      uint64_t *out, struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);
	const char *s;
	size_t len;

	if (rc)
		return rc;
	if (!json_is_string(v))
		return bad(err, path, "expected decimal string, got %s", jtype(v));
	s = json_string_value(v);
	len = json_string_length(v);
	if (parse_decimal(s, len, max, out) < 0)
		return outbox_error_set(err, OUTBOX_EPROTO, path,
					"'%.40s' is not a decimal integer in 0..%" PRIu64, s, max);
	return 0;
}

static int get_u64str(const json_t *obj, const char *parent, const char *key, int req,
		      uint64_t *out, struct outbox_error *err)
{
	return get_decstr(obj, parent, key, req, UINT64_MAX, out, err);
}

/* Unix seconds as a decimal string; -1 stays when absent and optional. */
static int get_timestr(const json_t *obj, const char *parent, const char *key, int req,
		       int64_t *out, struct outbox_error *err)
{
	uint64_t v;
	int rc = get_decstr(obj, parent, key, req, INT64_MAX, &v, err);

	if (rc == 0)
		*out = (int64_t)v;
	return rc;
}

static int get_bool(const json_t *obj, const char *parent, const char *key, int req, bool *out,
		    struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);

	if (rc)
		return rc;
	if (!json_is_boolean(v))
		return bad(err, path, "expected boolean, got %s", jtype(v));
	*out = json_is_true(v);
	return 0;
}

static int want_string(const json_t *v, const char *path, size_t max, struct outbox_error *err)
{
	if (!json_is_string(v))
		return bad(err, path, "expected string, got %s", jtype(v));
	if (json_string_length(v) > max)
		return outbox_error_set(err, OUTBOX_ETOOBIG, path,
					"string of %zu bytes exceeds %zu", json_string_length(v),
					max);
	return 0;
}

/* Copy into buf[cap]; longer strings are rejected. */
static int get_strbuf(const json_t *obj, const char *parent, const char *key, int req, char *buf,
		      size_t cap, struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);

	if (rc)
		return rc;
	if ((rc = want_string(v, path, cap - 1, err)))
		return rc;
	memcpy(buf, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

/* A human message: bounded by truncation, not rejection. */
static int get_message(const json_t *obj, const char *parent, const char *key, int req, char **out,
		       struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);

	if (rc)
		return rc;
	if (!json_is_string(v))
		return bad(err, path, "expected string, got %s", jtype(v));
	*out = strndup(json_string_value(v), RPC_MESSAGE_MAX);
	return *out ? 0 : -ENOMEM;
}

/* The 64 letters of standard base64; a table, because every XDR field of every answer is read. */
static const bool b64_letter[256] = {
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
	['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
	['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
	['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
	['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
	['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1,
	['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
	['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['+'] = 1, ['/'] = 1,
};

/* Standard padded base64: letters, then at most two '=' that end it. */
static bool is_b64(const char *s, size_t len)
{
	size_t n = len;

	if (len % 4)
		return false;
	if (n && s[n - 1] == '=')
		n--;
	if (n && s[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++)
		if (!b64_letter[(unsigned char)s[i]])
			return false;
	return true;
}

static int want_b64(const json_t *v, const char *path, char **out, struct outbox_error *err)
{
	int rc = want_string(v, path, RPC_XDR_MAX, err);

	if (rc)
		return rc;
	if (!is_b64(json_string_value(v), json_string_length(v)))
		return bad(err, path, "%s", "not standard padded base64");
	*out = strdup(json_string_value(v));
	return *out ? 0 : -ENOMEM;
}

static int get_b64(const json_t *obj, const char *parent, const char *key, int req, char **out,
		   struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);

	return rc ? rc : want_b64(v, path, out, err);
}

static bool is_hex64(const char *s, size_t len)
{
	if (len != 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

/* 64 hex digits, stored lowercase. */
static int get_hex64(const json_t *obj, const char *parent, const char *key, int req, char out[65],
		     struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, req, &v, path, err);

	if (rc)
		return rc;
	if (!json_is_string(v))
		return bad(err, path, "expected hex string, got %s", jtype(v));
	if (!is_hex64(json_string_value(v), json_string_length(v)))
		return bad(err, path, "'%.70s' is not 64 hex digits", json_string_value(v));
	for (int i = 0; i < 64; i++) {
		char c = json_string_value(v)[i];
		out[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
	}
	out[64] = '\0';
	return 0;
}

static int get_obj(const json_t *obj, const char *parent, const char *key, int req, json_t **out,
		   char *path, struct outbox_error *err)
{
	int rc = field(obj, parent, key, req, out, path, err);

	if (rc)
		return rc;
	if (!json_is_object(*out))
		return bad(err, path, "expected object, got %s", jtype(*out));
	return 0;
}

/* An array; absent or null reads as empty when optional. */
static int get_arr(const json_t *obj, const char *parent, const char *key, int req, json_t **out,
		   char *path, struct outbox_error *err)
{
	int rc = field(obj, parent, key, req, out, path, err);

	if (rc)
		return rc;
	if (!json_is_array(*out))
		return bad(err, path, "expected array, got %s", jtype(*out));
	return 0;
}

/*
 * Match a fixed set of status words (the field is required): returns the
 * word's index, or a negative error. The index is the return value, not an
 * out-parameter, so no caller can read a status that was never set.
 */
static int get_enum(const json_t *obj, const char *parent, const char *key,
		    const char *const *words, size_t n, struct outbox_error *err)
{
	char path[PATH_LEN];
	json_t *v;
	int rc = field(obj, parent, key, REQ, &v, path, err);

	if (rc)
		return rc;
	if (!json_is_string(v))
		return bad(err, path, "expected string, got %s", jtype(v));
	for (size_t i = 0; i < n; i++)
		if (strcmp(json_string_value(v), words[i]) == 0 &&
		    json_string_length(v) == strlen(words[i]))
			return (int)i;
	return bad(err, path, "unknown status '%.40s'", json_string_value(v));
}

/* Combine getter results: an optional absence (1) is not an error. */
#define TRY(expr)                                                                                  \
	do {                                                                                       \
		int try_rc_ = (expr);                                                              \
		if (try_rc_ < 0)                                                                   \
			return try_rc_;                                                            \
	} while (0)

/* ---- per-method result parsers ------------------------------------------ */

static int parse_health(const json_t *r, struct rpc_health *h, struct outbox_error *err)
{
	h->latest_ledger_close_time = -1;
	h->oldest_ledger_close_time = -1;
	TRY(get_strbuf(r, "result", "status", REQ, h->status, sizeof(h->status), err));
	TRY(get_u32(r, "result", "latestLedger", REQ, &h->latest_ledger, err));
	TRY(get_u32(r, "result", "oldestLedger", REQ, &h->oldest_ledger, err));
	TRY(get_u32(r, "result", "ledgerRetentionWindow", REQ, &h->ledger_retention_window, err));
	TRY(get_timestr(r, "result", "latestLedgerCloseTime", OPT, &h->latest_ledger_close_time,
			err));
	TRY(get_timestr(r, "result", "oldestLedgerCloseTime", OPT, &h->oldest_ledger_close_time,
			err));
	return 0;
}

static int parse_network(const json_t *r, struct rpc_network *n, struct outbox_error *err)
{
	TRY(get_strbuf(r, "result", "passphrase", REQ, n->passphrase, sizeof(n->passphrase), err));
	if (!n->passphrase[0])
		return outbox_error_set(err, OUTBOX_EPROTO, "result.passphrase", "empty");
	TRY(get_u32(r, "result", "protocolVersion", REQ, &n->protocol_version, err));
	return 0;
}

static int parse_latest_ledger(const json_t *r, struct rpc_latest_ledger *l,
			       struct outbox_error *err)
{
	l->close_time = -1;
	TRY(get_hex64(r, "result", "id", REQ, l->id, err));
	TRY(get_u32(r, "result", "sequence", REQ, &l->sequence, err));
	TRY(get_u32(r, "result", "protocolVersion", REQ, &l->protocol_version, err));
	TRY(get_timestr(r, "result", "closeTime", OPT, &l->close_time, err));
	TRY(get_b64(r, "result", "headerXdr", OPT, &l->header_xdr, err));
	return 0;
}

static int parse_fee_dist(const json_t *r, const char *key, struct rpc_fee_distribution *d,
			  struct outbox_error *err)
{
	static const char *const names[] = {"max", "min", "mode", "p10", "p20", "p30", "p40",
					    "p50", "p60", "p70",  "p80", "p90", "p95", "p99"};
	uint64_t *const slots[] = {&d->max, &d->min, &d->mode, &d->p10, &d->p20, &d->p30, &d->p40,
				   &d->p50, &d->p60, &d->p70,  &d->p80, &d->p90, &d->p95, &d->p99};
	char path[PATH_LEN];
	json_t *o;

	TRY(get_obj(r, "result", key, REQ, &o, path, err));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		TRY(get_u64str(o, path, names[i], REQ, slots[i], err));
	TRY(get_u64str(o, path, "transactionCount", REQ, &d->transaction_count, err));
	TRY(get_u32(o, path, "ledgerCount", REQ, &d->ledger_count, err));
	return 0;
}

static int parse_fee_stats(const json_t *r, struct rpc_fee_stats *f, struct outbox_error *err)
{
	TRY(parse_fee_dist(r, "sorobanInclusionFee", &f->soroban, err));
	TRY(parse_fee_dist(r, "inclusionFee", &f->classic, err));
	TRY(get_u32(r, "result", "latestLedger", REQ, &f->latest_ledger, err));
	return 0;
}

/* The 40-byte account LedgerKey (README.md, Ledger keys), base64. */
static void account_key_b64(const uint8_t account[32], char out[ACCOUNT_KEY_B64])
{
	uint8_t key[40] = {0}; /* u32 ACCOUNT = 0, u32 PUBLIC_KEY_TYPE_ED25519 = 0 */

	memcpy(key + 8, account, 32);
	sodium_bin2base64(out, ACCOUNT_KEY_B64, key, sizeof(key), sodium_base64_VARIANT_ORIGINAL);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/*
 * LedgerEntryData, arm ACCOUNT, up to numSubEntries (README.md, Ledger
 * keys). The rest of the AccountEntry is not needed; its presence is only
 * checked by length.
 */
static int decode_account_xdr(const char *b64, const uint8_t account[32], struct rpc_account *a,
			      const char *path, struct outbox_error *err)
{
	uint8_t *bin;
	size_t max = strlen(b64) / 4 * 3, len = 0;
	const char *end = NULL;
	int rc = 0;

	bin = malloc(max ? max : 1);
	if (!bin)
		return -ENOMEM;
	if (sodium_base642bin(bin, max, b64, strlen(b64), NULL, &len, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != b64 + strlen(b64)) {
		rc = bad(err, path, "%s", "undecodable base64");
	} else if (len < 64 || len % 4) {
		rc = outbox_error_set(err, OUTBOX_EPROTO, path,
				      "%zu bytes is too short for an AccountEntry", len);
	} else if (be32(bin) != 0 || be32(bin + 4) != 0) {
		rc = outbox_error_set(err, OUTBOX_EPROTO, path,
				      "entry type %u / key type %u is not an ed25519 account",
				      be32(bin), be32(bin + 4));
	} else if (memcmp(bin + 8, account, 32) != 0) {
		rc = bad(err, path, "%s", "account id differs from the requested key");
	} else if ((int64_t)be64(bin + 40) < 0 || (int64_t)be64(bin + 48) < 0) {
		rc = bad(err, path, "%s", "negative balance or seqNum");
	} else {
		a->balance = (int64_t)be64(bin + 40);
		a->seq_num = (int64_t)be64(bin + 48);
		a->num_sub_entries = be32(bin + 56);
		a->found = true;
	}
	free(bin);
	return rc;
}

static int parse_account(const json_t *r, const uint8_t account[32], struct rpc_account *a,
			 struct outbox_error *err)
{
	char path[PATH_LEN], epath[PATH_LEN + 8], want[ACCOUNT_KEY_B64], kbuf[ACCOUNT_KEY_B64 + 8];
	json_t *entries, *e;
	char *xdr = NULL;
	int rc;

	TRY(get_u32(r, "result", "latestLedger", REQ, &a->latest_ledger, err));
	rc = get_arr(r, "result", "entries", OPT, &entries, path, err);
	if (rc < 0)
		return rc;
	if (rc == 1 || json_array_size(entries) == 0)
		return 0; /* no such account */
	if (json_array_size(entries) > 1)
		return outbox_error_set(err, OUTBOX_EPROTO, path, "%zu entries for one key",
					json_array_size(entries));
	e = json_array_get(entries, 0);
	snprintf(epath, sizeof(epath), "%s[0]", path);
	if (!json_is_object(e))
		return bad(err, epath, "expected object, got %s", jtype(e));
	TRY(get_strbuf(e, epath, "key", REQ, kbuf, sizeof(kbuf), err));
	account_key_b64(account, want);
	if (strcmp(kbuf, want) != 0)
		return outbox_error_set(err, OUTBOX_EPROTO, "result.entries[0].key",
					"'%s' is not the requested key", kbuf);
	TRY(get_u32(e, epath, "lastModifiedLedgerSeq", REQ, &a->last_modified_ledger, err));
	TRY(get_b64(e, epath, "xdr", REQ, &xdr, err));
	rc = decode_account_xdr(xdr, account, a, "result.entries[0].xdr", err);
	free(xdr);
	return rc;
}

static int parse_simulate(const json_t *r, struct rpc_simulate *s, struct outbox_error *err)
{
	char path[PATH_LEN], epath[PATH_LEN + 8];
	json_t *results, *res0, *auth, *pre;
	int rc;

	TRY(get_u32(r, "result", "latestLedger", REQ, &s->latest_ledger, err));
	TRY(get_message(r, "result", "error", OPT, &s->error, err));
	if (s->error)
		return 0;
	TRY(get_b64(r, "result", "transactionData", REQ, &s->transaction_data, err));
	TRY(get_u64str(r, "result", "minResourceFee", REQ, &s->min_resource_fee, err));
	rc = get_obj(r, "result", "restorePreamble", OPT, &pre, epath, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		TRY(get_b64(pre, epath, "transactionData", REQ, &s->restore_transaction_data, err));
		TRY(get_u64str(pre, epath, "minResourceFee", REQ, &s->restore_min_resource_fee,
			       err));
	}
	rc = get_arr(r, "result", "results", OPT, &results, path, err);
	if (rc < 0)
		return rc;
	if (rc == 1 || json_array_size(results) == 0)
		return 0;
	if (json_array_size(results) != 1)
		return outbox_error_set(err, OUTBOX_EPROTO, path, "%zu results, expected 1",
					json_array_size(results));
	res0 = json_array_get(results, 0);
	snprintf(epath, sizeof(epath), "%s[0]", path);
	if (!json_is_object(res0))
		return bad(err, epath, "expected object, got %s", jtype(res0));
	TRY(get_b64(res0, epath, "xdr", REQ, &s->result_xdr, err));
	rc = get_arr(res0, epath, "auth", OPT, &auth, path, err);
	if (rc < 0)
		return rc;
	if (rc == 1 || json_array_size(auth) == 0)
		return 0;
	if (json_array_size(auth) > AUTH_MAX)
		return outbox_error_set(err, OUTBOX_ETOOBIG, path, "%zu entries exceed %d",
					json_array_size(auth), AUTH_MAX);
	s->auth = calloc(json_array_size(auth), sizeof(*s->auth));
	if (!s->auth)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(auth); i++) {
		char ipath[PATH_LEN + 24];
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		TRY(want_b64(json_array_get(auth, i), ipath, &s->auth[i], err));
		s->n_auth++;
	}
	return 0;
}

static int parse_send(const json_t *r, struct rpc_send *s, struct outbox_error *err)
{
	static const char *const words[] = {"PENDING", "DUPLICATE", "TRY_AGAIN_LATER", "ERROR"};
	int st = get_enum(r, "result", "status", words, 4, err);

	if (st < 0)
		return st;
	s->status = (enum rpc_send_status)st;
	TRY(get_hex64(r, "result", "hash", REQ, s->hash, err));
	TRY(get_u32(r, "result", "latestLedger", REQ, &s->latest_ledger, err));
	TRY(get_timestr(r, "result", "latestLedgerCloseTime", REQ, &s->latest_ledger_close_time,
			err));
	if (s->status == RPC_SEND_ERROR)
		TRY(get_b64(r, "result", "errorResultXdr", REQ, &s->error_result_xdr, err));
	return 0;
}

static int parse_get_tx(const json_t *r, struct rpc_get_tx *t, struct outbox_error *err)
{
	static const char *const words[] = {"SUCCESS", "FAILED", "NOT_FOUND"};
	int st = get_enum(r, "result", "status", words, 3, err);

	if (st < 0)
		return st;
	t->status = (enum rpc_tx_status)st;
	TRY(get_hex64(r, "result", "txHash", OPT, t->tx_hash, err));
	TRY(get_u32(r, "result", "latestLedger", REQ, &t->latest_ledger, err));
	TRY(get_timestr(r, "result", "latestLedgerCloseTime", REQ, &t->latest_ledger_close_time,
			err));
	TRY(get_u32(r, "result", "oldestLedger", REQ, &t->oldest_ledger, err));
	TRY(get_timestr(r, "result", "oldestLedgerCloseTime", REQ, &t->oldest_ledger_close_time,
			err));
	if (t->status == RPC_TX_NOT_FOUND)
		return 0;
	TRY(get_u32(r, "result", "ledger", REQ, &t->ledger, err));
	TRY(get_timestr(r, "result", "createdAt", REQ, &t->created_at, err));
	TRY(get_u32(r, "result", "applicationOrder", REQ, &t->application_order, err));
	TRY(get_bool(r, "result", "feeBump", REQ, &t->fee_bump, err));
	TRY(get_b64(r, "result", "envelopeXdr", REQ, &t->envelope_xdr, err));
	TRY(get_b64(r, "result", "resultXdr", REQ, &t->result_xdr, err));
	return 0;
}

static int parse_tx_info(const json_t *o, const char *path, struct rpc_tx_info *t,
			 struct outbox_error *err)
{
	static const char *const words[] = {"SUCCESS", "FAILED"};
	int st;

	if (!json_is_object(o))
		return bad(err, path, "expected object, got %s", jtype(o));
	st = get_enum(o, path, "status", words, 2, err);
	if (st < 0)
		return st;
	t->status = (enum rpc_tx_status)st;
	TRY(get_hex64(o, path, "txHash", REQ, t->tx_hash, err));
	TRY(get_u32(o, path, "ledger", REQ, &t->ledger, err));
	TRY(get_i64num(o, path, "createdAt", REQ, &t->created_at, err));
	TRY(get_u32(o, path, "applicationOrder", REQ, &t->application_order, err));
	TRY(get_bool(o, path, "feeBump", REQ, &t->fee_bump, err));
	TRY(get_b64(o, path, "envelopeXdr", REQ, &t->envelope_xdr, err));
	TRY(get_b64(o, path, "resultXdr", REQ, &t->result_xdr, err));
	return 0;
}

/* getTransactions close timestamps: documented as numbers; tolerate strings. */
static int get_stamp(const json_t *r, const char *key, int64_t *out, struct outbox_error *err)
{
	const json_t *v = json_object_get(r, key);

	if (v && json_is_string(v))
		return get_timestr(r, "result", key, REQ, out, err);
	return get_i64num(r, "result", key, OPT, out, err);
}

static int parse_get_txs(const json_t *r, struct rpc_get_txs *t, struct outbox_error *err)
{
	char path[PATH_LEN], ipath[PATH_LEN + 24];
	json_t *arr;
	size_t n;
	int rc;

	t->latest_ledger_close_time = -1;
	t->oldest_ledger_close_time = -1;
	TRY(get_u32(r, "result", "latestLedger", REQ, &t->latest_ledger, err));
	TRY(get_u32(r, "result", "oldestLedger", REQ, &t->oldest_ledger, err));
	TRY(get_stamp(r, "latestLedgerCloseTimestamp", &t->latest_ledger_close_time, err));
	TRY(get_stamp(r, "oldestLedgerCloseTimestamp", &t->oldest_ledger_close_time, err));
	TRY(get_strbuf(r, "result", "cursor", REQ, t->cursor, sizeof(t->cursor), err));
	rc = get_arr(r, "result", "transactions", OPT, &arr, path, err);
	if (rc < 0)
		return rc;
	n = rc == 1 ? 0 : json_array_size(arr);
	if (n > RPC_GET_TXS_MAX)
		return outbox_error_set(err, OUTBOX_ETOOBIG, path, "%zu transactions exceed %d", n,
					RPC_GET_TXS_MAX);
	if (n == 0)
		return 0;
	t->txs = calloc(n, sizeof(*t->txs));
	if (!t->txs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		t->n_txs++; /* counted first so release frees a half-parsed entry */
		TRY(parse_tx_info(json_array_get(arr, i), ipath, &t->txs[i], err));
	}
	return 0;
}

static int parse_result(const struct rpc_request *req, const json_t *r, struct rpc_result *out,
			struct outbox_error *err)
{
	switch (req->method) {
	case RPC_GET_HEALTH:
		return parse_health(r, &out->u.health, err);
	case RPC_GET_NETWORK:
		return parse_network(r, &out->u.network, err);
	case RPC_GET_LATEST_LEDGER:
		return parse_latest_ledger(r, &out->u.latest_ledger, err);
	case RPC_GET_FEE_STATS:
		return parse_fee_stats(r, &out->u.fee_stats, err);
	case RPC_GET_ACCOUNT:
		return parse_account(r, req->account, &out->u.account, err);
	case RPC_SIMULATE_TRANSACTION:
		return parse_simulate(r, &out->u.simulate, err);
	case RPC_SEND_TRANSACTION:
		return parse_send(r, &out->u.send, err);
	case RPC_GET_TRANSACTION:
		return parse_get_tx(r, &out->u.get_tx, err);
	case RPC_GET_TRANSACTIONS:
		return parse_get_txs(r, &out->u.get_txs, err);
	default:
		return outbox_error_set(err, OUTBOX_EINVAL, "method", "unknown method %d",
					(int)req->method);
	}
}

/* ---- the JSON-RPC envelope ---------------------------------------------- */

static int parse_rpc_error(const json_t *e, struct rpc_result *out)
{
	json_t *code;
	char *msg = NULL;
	int rc;

	if (!json_is_object(e))
		return bad(&out->err, "error", "expected object, got %s", jtype(e));
	code = json_object_get(e, "code");
	if (!code || !json_is_integer(code))
		return bad(&out->err, "error.code", "expected integer, got %s",
			   code ? jtype(code) : "nothing");
	rc = get_message(e, "error", "message", OPT, &msg, &out->err);
	if (rc < 0)
		return rc;
	out->status = RPC_E_JSONRPC;
	out->rpc_code = json_integer_value(code);
	out->rpc_message = msg;
	outbox_error_set(&out->err, OUTBOX_EPROTO, "error", "json-rpc error %lld: %s",
			 (long long)out->rpc_code, msg ? msg : "(no message)");
	return OUTBOX_EPROTO;
}

static int parse_envelope(const struct rpc_request *req, uint64_t expect_id, const json_t *root,
			  struct rpc_result *out)
{
	json_t *v, *result, *error;

	if (!json_is_object(root))
		return bad(&out->err, "response", "expected object, got %s", jtype(root));
	v = json_object_get(root, "jsonrpc");
	if (!v || !json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return bad(&out->err, "jsonrpc", "%s", "expected \"2.0\"");
	v = json_object_get(root, "id");
	if (!v || !json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) != expect_id)
		return outbox_error_set(&out->err, OUTBOX_EPROTO, "id",
					"response id does not match request id %" PRIu64,
					expect_id);
	result = json_object_get(root, "result");
	error = json_object_get(root, "error");
	if (result && error)
		return bad(&out->err, "response", "%s", "both result and error");
	if (error)
		return parse_rpc_error(error, out);
	if (!result)
		return bad(&out->err, "result", "%s", "missing");
	if (!json_is_object(result))
		return bad(&out->err, "result", "expected object, got %s", jtype(result));
	return parse_result(req, result, out, &out->err);
}

int rpc_response_parse(const struct rpc_request *req, uint64_t expect_id, const char *body,
		       size_t len, struct rpc_result *out)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	out->status = RPC_E_PROTOCOL;
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return outbox_error_set(&out->err, OUTBOX_EPROTO, "response",
					"invalid json at line %d column %d: %s", jerr.line,
					jerr.column, jerr.text);
	rc = parse_envelope(req, expect_id, root, out);
	json_decref(root);
	if (rc == 0) {
		out->status = RPC_OK;
		outbox_error_clear(&out->err);
		return 0;
	}
	if (out->status != RPC_E_JSONRPC)
		out->status = RPC_E_PROTOCOL;
	if (rc == -ENOMEM && !out->err.code)
		outbox_error_set(&out->err, rc, "response", "out of memory");
	result_clear_payload(out);
	return rc;
}

/* ---- request bodies ----------------------------------------------------- */

static int check_b64_param(const char *s, const char *name, struct outbox_error *err)
{
	size_t len;

	if (!s)
		return outbox_error_set(err, OUTBOX_EINVAL, name, "missing");
	len = strnlen(s, RPC_XDR_MAX + 1);
	if (len == 0 || len > RPC_XDR_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, name, "length %zu not in 1..%u", len,
					RPC_XDR_MAX);
	if (!is_b64(s, len))
		return outbox_error_set(err, OUTBOX_EINVAL, name, "not standard padded base64");
	return 0;
}

/*
 * Request bodies are written, not built as JSON trees and dumped (that cost
 * a worker ~15 us per call, two calls per op). Every value written is a
 * constant, a number, or a string checked here to need no escaping (base64,
 * hex) but for the cursor, printable ASCII whose '"' and '\' are escaped.
 * The bytes are those json_dumps(JSON_COMPACT) gives for the same tree:
 * check_rpc_parse compares the two for every method and cursor character.
 */
#define PARAMS_SMALL (2 * RPC_CURSOR_MAX + 96)

/* A cursor of printable ASCII as the inside of a JSON string (out: 2 * len + 1). */
static void cursor_escaped(const char *s, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"' || s[i] == '\\')
			*out++ = '\\';
		*out++ = s[i];
	}
	*out = '\0';
}

static int get_txs_params(const struct rpc_request *req, char out[PARAMS_SMALL],
			  struct outbox_error *err)
{
	char limit[32] = "", cur[2 * RPC_CURSOR_MAX];

	if (req->limit > RPC_GET_TXS_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, "limit", "%u exceeds %d", req->limit,
					RPC_GET_TXS_MAX);
	if (req->limit)
		snprintf(limit, sizeof(limit), "\"limit\":%u", req->limit);
	if (req->cursor) {
		size_t len = strnlen(req->cursor, RPC_CURSOR_MAX);
		bool printable = true;
		for (size_t i = 0; i < len; i++)
			if (req->cursor[i] < 0x21 || req->cursor[i] > 0x7e)
				printable = false;
		if (!printable || len == 0 || len >= RPC_CURSOR_MAX)
			return outbox_error_set(err, OUTBOX_EINVAL, "cursor",
						"expected 1..%d printable characters",
						RPC_CURSOR_MAX - 1);
		cursor_escaped(req->cursor, len, cur);
		snprintf(out, PARAMS_SMALL, "{\"pagination\":{%s%s\"cursor\":\"%s\"}}", limit,
			 req->limit ? "," : "", cur);
		return 0;
	}
	if (req->start_ledger == 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "start_ledger", "0 without a cursor");
	snprintf(out, PARAMS_SMALL, "{\"startLedger\":%u,\"pagination\":{%s}}", req->start_ledger,
		 limit);
	return 0;
}

/*
 * The params of req: small ones written into small; a transaction (checked)
 * named by *tx, for the caller to write. 0, or OUTBOX_EINVAL naming the field.
 */
static int params_of(const struct rpc_request *req, char small[PARAMS_SMALL], const char **tx,
		     struct outbox_error *err)
{
	char key[ACCOUNT_KEY_B64];

	*tx = NULL;
	switch (req->method) {
	case RPC_GET_HEALTH:
	case RPC_GET_NETWORK:
	case RPC_GET_LATEST_LEDGER:
	case RPC_GET_FEE_STATS:
		snprintf(small, PARAMS_SMALL, "{}");
		return 0;
	case RPC_GET_ACCOUNT:
		account_key_b64(req->account, key);
		snprintf(small, PARAMS_SMALL, "{\"keys\":[\"%s\"]}", key);
		return 0;
	case RPC_SIMULATE_TRANSACTION:
	case RPC_SEND_TRANSACTION:
		*tx = req->transaction;
		return check_b64_param(req->transaction, "transaction", err);
	case RPC_GET_TRANSACTION:
		if (!req->hash || !is_hex64(req->hash, strnlen(req->hash, 65)))
			return outbox_error_set(err, OUTBOX_EINVAL, "hash",
						"expected 64 hex digits");
		snprintf(small, PARAMS_SMALL, "{\"hash\":\"%s\"}", req->hash);
		return 0;
	case RPC_GET_TRANSACTIONS:
		return get_txs_params(req, small, err);
	default:
		return outbox_error_set(err, OUTBOX_EINVAL, "method", "unknown method %d",
					(int)req->method);
	}
}

char *rpc_request_body(const struct rpc_request *req, uint64_t id, struct outbox_error *err)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":";
	static const char tx_params[] = "{\"transaction\":\"%s\"}}";
	char small[PARAMS_SMALL];
	const char *tx;
	size_t cap;
	char *body;
	int n;

	outbox_error_clear(err);
	if (params_of(req, small, &tx, err))
		return NULL;
	/* the head, with room for a 20-digit id and a method name of up to 40 */
	cap = sizeof(head) + 60 + (tx ? strlen(tx) + sizeof(tx_params) : strlen(small) + 2);
	body = malloc(cap);
	if (!body) {
		outbox_error_set(err, -ENOMEM, "request", "out of memory");
		return NULL;
	}
	/* jansson printed the id as a json_int_t: the same cast */
	n = snprintf(body, cap, head, (long long)(json_int_t)id, rpc_method_name(req->method));
	if (tx)
		snprintf(body + n, cap - (size_t)n, tx_params, tx);
	else
		snprintf(body + n, cap - (size_t)n, "%s}", small);
	return body;
}
