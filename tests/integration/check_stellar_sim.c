/*
 * check_stellar_sim.c - stellar-sim's own test suite. Every case starts the
 * real binary ($OUTBOX_BUILD_DIR/stellar-sim) on an ephemeral port, drives it
 * over HTTP with transactions built and signed by common/stellar (txbuild,
 * sign), closes ledgers on demand (POST /debug/close; the ledger clock is
 * set to an hour so nothing closes behind a test's back) and checks the
 * answers against stellar-rpc's and stellar-core's rules: statuses, result
 * codes read out of the result XDR, queue rules, surge pricing, fee stats,
 * the vault model, every fault knob and the ingest-lag read views. The
 * SDK-built transaction and rpc.Server cases live in tests/sim/.
 */
#include "common/stellar/rpc.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/stellar/txbuild.h"
#include "common/stellar/txresult.h"
#include "common/stellar/xdr.h"

#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PASSPHRASE "Test SDF Network ; September 2015"
#define HOUR_MS    "3600000"

static pid_t sim_pid;
static unsigned sim_port;
static uint8_t network_id[32];
static char vault[STRKEY_BUF];

/* ---------- process ---------- */

static void sim_start_v(const char *const *extra)
{
	const char *dir = getenv("OUTBOX_BUILD_DIR");
	char bin[1024], line[256];
	const char *argv[64];
	int fd[2], n = 0, i;
	FILE *f;

	ck_assert_msg(dir != NULL, "OUTBOX_BUILD_DIR is not set");
	snprintf(bin, sizeof(bin), "%s/stellar-sim", dir);
	argv[n++] = bin;
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--passphrase";
	argv[n++] = PASSPHRASE;
	argv[n++] = "--debug";
	for (i = 0; extra && extra[i] && n < 62; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	ck_assert_int_eq(pipe(fd), 0);
	sim_pid = fork();
	ck_assert_int_ge(sim_pid, 0);
	if (sim_pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_int_eq(sscanf(line, "listening 127.0.0.1:%u", &sim_port), 1);
	fclose(f);
	stellar_network_id(PASSPHRASE, network_id);
}

static void sim_start(const char *first, ...)
{
	const char *extra[48];
	va_list ap;
	int n = 0;

	va_start(ap, first);
	for (const char *a = first; a && n < 47; a = va_arg(ap, const char *))
		extra[n++] = a;
	va_end(ap);
	extra[n] = NULL;
	sim_start_v(extra);
}

static void sim_stop(void)
{
	int st = 0;

	kill(sim_pid, SIGTERM);
	ck_assert_int_eq(waitpid(sim_pid, &st, 0), sim_pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "stellar-sim did not exit cleanly");
}

/* ---------- HTTP ---------- */

struct buf {
	char *p;
	size_t n;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *u)
{
	struct buf *b = u;

	b->p = realloc(b->p, b->n + sz * nm + 1);
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

/* POST (body != NULL) or GET; returns the HTTP status, -1 on a curl error. */
static long http(const char *path, const char *body, long timeout_ms, char **out)
{
	CURL *c = curl_easy_init();
	struct buf b = {NULL, 0};
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char url[256];
	long status = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", sim_port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (out)
		*out = b.p ? b.p : strdup("");
	else
		free(b.p);
	return status;
}

static json_t *http_json(const char *path, const char *body)
{
	char *s;
	long st = http(path, body, 10000, &s);
	json_t *j;

	ck_assert_msg(st == 200, "%s: HTTP %ld: %s", path, st, s);
	j = json_loads(s, 0, NULL);
	ck_assert_msg(j != NULL, "%s: not JSON: %s", path, s);
	free(s);
	return j;
}

/* The whole JSON-RPC response. params: a JSON object text or NULL. */
static json_t *rpc_raw(const char *method, const char *params)
{
	char body[65536];

	snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\"%s%s}", method,
		 params ? ",\"params\":" : "", params ? params : "");
	return http_json("/", body);
}

/* result of a successful call (new reference). */
static json_t *rpc(const char *method, const char *params)
{
	json_t *r = rpc_raw(method, params), *res = json_incref(json_object_get(r, "result"));

	ck_assert_msg(res != NULL, "%s: no result: %s", method, json_dumps(r, 0));
	json_decref(r);
	return res;
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_string(v), "field %s is not a string", k);
	return json_string_value(v);
}

static json_int_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_integer(v), "field %s is not a number", k);
	return json_integer_value(v);
}

static uint32_t close_ledgers(int n)
{
	char body[64];
	json_t *r;
	uint32_t seq;

	snprintf(body, sizeof(body), "{\"ledgers\":%d}", n);
	r = http_json("/debug/close", body);
	seq = (uint32_t)jint(r, "latest_ledger");
	json_decref(r);
	return seq;
}

static void set_faults(const char *body)
{
	json_decref(http_json("/debug/faults", body));
}

/* ---------- accounts and transactions ---------- */

struct acct {
	struct stellar_keypair kp;
	char g[STRKEY_BUF];
	int64_t seq; /* last used */
};

static void acct_new(struct acct *a, int64_t balance)
{
	uint8_t seed[32];
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char body[512];

	randombytes_buf(seed, sizeof(seed));
	ck_assert_int_eq(stellar_keypair_from_seed(&a->kp, seed, &err), 0);
	stellar_keypair_address(&a->kp, a->g);
	a->seq = 4294967296LL * 7;
	snprintf(body, sizeof(body),
		 "{\"accounts\":[{\"id\":\"%s\",\"seq\":\"%lld\",\"balance\":\"%lld\"}]}", a->g,
		 (long long)a->seq, (long long)balance);
	json_decref(http_json("/debug/accounts", body));
}

struct txopt {
	enum vault_fn fn;
	const char *user;            /* default: the source itself */
	const char *amount;          /* default "1000" */
	const char *key;             /* idempotency key, default random */
	uint32_t incl;               /* inclusion bid, default 100 */
	int64_t seq;                 /* default source seq + 1 */
	uint64_t min_time, max_time; /* default 0 and now + 300 */
	bool no_sim;                 /* submit without simulate's data */
	int64_t resource_fee_delta;  /* added to simulate's resourceFee */
};

struct built {
	char *b64;
	uint8_t hash[32];
	uint8_t op_ref[32];
	int64_t fee;
	int64_t resource_fee;
};

/* Patch the trailing i64 resourceFee of a base64 SorobanTransactionData. */
static char *patch_resource_fee(const char *b64, int64_t delta, int64_t *fee)
{
	uint8_t raw[4096];
	size_t n;
	int64_t v = 0;
	int i;

	ck_assert_int_eq(xdr_b64_decode(b64, strlen(b64), raw, sizeof(raw), &n, "data", NULL), 0);
	for (i = 0; i < 8; i++)
		v = (v << 8) | raw[n - 8 + i];
	v += delta;
	*fee = v;
	for (i = 7; i >= 0; i--, v >>= 8)
		raw[n - 8 + i] = (uint8_t)(v & 0xff);
	return xdr_b64_encode(raw, n);
}

static void build_vault(struct acct *a, const struct txopt *o, struct built *out,
			const uint8_t *sign_net)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char key[65], *b64, params[8192];
	struct txbuild b;
	uint8_t rnd[16];
	struct txbuild_source src = {
		.account = a->g,
		.seq_num = o->seq ? o->seq : a->seq + 1,
		.fee = o->incl ? o->incl : 100,
		.min_time = o->min_time,
		.max_time = o->max_time ? o->max_time : (uint64_t)time(NULL) + 300,
	};
	struct txbuild_vault_call call = {
		.contract = vault,
		.fn = o->fn,
		.account = o->user ? o->user : a->g,
		.amount = o->amount ? o->amount : "1000",
	};

	if (o->key) {
		snprintf(key, sizeof(key), "%s", o->key);
	} else {
		randombytes_buf(rnd, sizeof(rnd));
		for (int i = 0; i < 16; i++)
			sprintf(key + 2 * i, "%02x", rnd[i]);
	}
	call.idempotency_key = key;
	call.idempotency_key_len = strlen(key);
	txbuild_init(&b);
	ck_assert_msg(txbuild_vault(&b, &src, &call, NULL, &err) == 0, "%s", err.msg);
	out->resource_fee = 0;
	if (!o->no_sim) {
		json_t *sim, *auth;
		const char *auths[1];
		char *data;
		struct txbuild_sim s;

		ck_assert_int_eq(txbuild_to_b64(&b, &b64), 0);
		snprintf(params, sizeof(params), "{\"transaction\":\"%s\"}", b64);
		free(b64);
		sim = rpc("simulateTransaction", params);
		ck_assert_msg(!json_object_get(sim, "error"), "simulate: %s", jstr(sim, "error"));
		data = patch_resource_fee(jstr(sim, "transactionData"), o->resource_fee_delta,
					  &out->resource_fee);
		auth = json_object_get(json_array_get(json_object_get(sim, "results"), 0), "auth");
		auths[0] = json_string_value(json_array_get(auth, 0));
		s = (struct txbuild_sim){data, auths, 1};
		ck_assert_msg(txbuild_vault(&b, &src, &call, &s, &err) == 0, "%s", err.msg);
		free(data);
		json_decref(sim);
	}
	memcpy(out->op_ref, b.op_ref, 32);
	ck_assert_int_eq(txbuild_sign(&b, &a->kp, sign_net ? sign_net : network_id, &err), 0);
	ck_assert_int_eq(xdr_envelope_hash(&b.env, network_id, out->hash), 0);
	ck_assert_int_eq(txbuild_to_b64(&b, &out->b64), 0);
	out->fee = b.env.tx.fee;
	txbuild_release(&b);
}

static char *fee_bump(const char *inner_b64, struct acct *payer, int64_t fee, uint8_t hash[32])
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild b;
	char *s;

	txbuild_init(&b);
	ck_assert_msg(txbuild_fee_bump(&b, inner_b64, payer->g, fee, 100, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(txbuild_sign(&b, &payer->kp, network_id, &err), 0);
	memcpy(hash, b.hash, 32);
	ck_assert_int_eq(txbuild_to_b64(&b, &s), 0);
	txbuild_release(&b);
	return s;
}

/* sendTransaction: returns the result object. */
static json_t *send_tx(const char *b64)
{
	char *params = malloc(strlen(b64) + 64);
	json_t *r;

	sprintf(params, "{\"transaction\":\"%s\"}", b64);
	r = rpc("sendTransaction", params);
	free(params);
	return r;
}

static void expect_status(const char *b64, const char *status)
{
	json_t *r = send_tx(b64);

	ck_assert_msg(!strcmp(jstr(r, "status"), status), "expected %s, got %s", status,
		      json_dumps(r, 0));
	json_decref(r);
}

static int32_t be32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)(uint32_t)be32(p) << 32 | (uint32_t)be32(p + 4));
}

/* Decoded TransactionResult: fee, code, and (inner) first op's code. */
struct res {
	int64_t fee;
	int32_t code;
	int32_t inner_code; /* fee-bump results */
	int32_t op_code;    /* op-specific code, when present */
};

static struct res decode_result(const char *b64)
{
	uint8_t raw[1024];
	size_t n;
	struct res r = {0, 0, 0, 99};
	size_t off = 12;

	ck_assert_int_eq(xdr_b64_decode(b64, strlen(b64), raw, sizeof(raw), &n, "res", NULL), 0);
	r.fee = be64(raw);
	r.code = be32(raw + 8);
	r.inner_code = r.code;
	if (r.code == 1 || r.code == -13) {
		r.inner_code = be32(raw + 52);
		off = 56;
	}
	if ((r.inner_code == 0 || r.inner_code == -1) && n >= off + 16)
		r.op_code = be32(raw + off + 12);
	return r;
}

/* sendTransaction expecting ERROR; returns the decoded errorResultXdr. */
static struct res expect_error(const char *b64)
{
	json_t *r = send_tx(b64);
	struct res d;

	ck_assert_msg(!strcmp(jstr(r, "status"), "ERROR"), "expected ERROR, got %s",
		      json_dumps(r, 0));
	d = decode_result(jstr(r, "errorResultXdr"));
	json_decref(r);
	return d;
}

static json_t *get_tx(const uint8_t hash[32])
{
	char hex[65], params[128];

	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", hash[i]);
	snprintf(params, sizeof(params), "{\"hash\":\"%s\"}", hex);
	return rpc("getTransaction", params);
}

static const char *tx_status(const uint8_t hash[32])
{
	static char st[32];
	json_t *r = get_tx(hash);

	snprintf(st, sizeof(st), "%s", jstr(r, "status"));
	json_decref(r);
	return st;
}

static struct res tx_result(const uint8_t hash[32])
{
	json_t *r = get_tx(hash);
	struct res d = decode_result(jstr(r, "resultXdr"));

	json_decref(r);
	return d;
}

/* Account seqNum and balance read through getLedgerEntries (offsets 40/48). */
static bool ledger_account(const struct acct *a, int64_t *seq, int64_t *bal)
{
	uint8_t key[40] = {0}, raw[512];
	char *k, params[256];
	json_t *r, *e;
	size_t n;
	bool found;

	memcpy(key + 8, a->kp.pk, 32);
	k = xdr_b64_encode(key, sizeof(key));
	snprintf(params, sizeof(params), "{\"keys\":[\"%s\"]}", k);
	free(k);
	r = rpc("getLedgerEntries", params);
	e = json_array_get(json_object_get(r, "entries"), 0);
	found = e != NULL;
	if (found) {
		const char *x = jstr(e, "xdr");

		ck_assert_int_eq(xdr_b64_decode(x, strlen(x), raw, sizeof(raw), &n, "xdr", NULL),
				 0);
		ck_assert_int_eq(be32(raw), 0);
		ck_assert(!memcmp(raw + 8, a->kp.pk, 32));
		*bal = be64(raw + 40);
		*seq = be64(raw + 48);
	}
	json_decref(r);
	return found;
}

static long long executions(const uint8_t op_ref[32])
{
	char hex[65];
	json_t *r = http_json("/debug/executions", NULL), *v;
	long long n;

	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", op_ref[i]);
	v = json_object_get(json_object_get(r, "by_ref"), hex);
	n = v ? json_integer_value(v) : 0;
	json_decref(r);
	return n;
}

static long long max_pending(const struct acct *a)
{
	json_t *r = http_json("/debug/executions", NULL);
	json_t *v = json_object_get(json_object_get(r, "max_pending_per_account"), a->g);
	long long n = v ? json_integer_value(v) : 0;

	json_decref(r);
	return n;
}

static const char *balance_of(const char *id)
{
	static char b[64];
	json_t *r = http_json("/debug/state", NULL);
	json_t *v = json_object_get(json_object_get(r, "balances"), id);

	snprintf(b, sizeof(b), "%s", v ? json_string_value(v) : "absent");
	json_decref(r);
	return b;
}

static void setup(void)
{
	uint8_t id[32];

	crypto_hash_sha256(id, (const uint8_t *)"outboxd vault contract", 22);
	strkey_encode_contract(id, vault);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* simulateTransaction of a vault call: its error text (malloc'd) or NULL. */
static char *simulate_error(const struct acct *a, enum vault_fn fn, const char *user,
			    const char *amount)
{
	struct txbuild b;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src = {.account = a->g,
				     .seq_num = a->seq + 1,
				     .fee = 100,
				     .max_time = (uint64_t)time(NULL) + 300};
	struct txbuild_vault_call c = {vault, fn, user, amount, "sim", 3};
	char *b64, params[4096], *e = NULL;
	json_t *r, *ev;

	txbuild_init(&b);
	ck_assert_int_eq(txbuild_vault(&b, &src, &c, NULL, &err), 0);
	ck_assert_int_eq(txbuild_to_b64(&b, &b64), 0);
	snprintf(params, sizeof(params), "{\"transaction\":\"%s\"}", b64);
	r = rpc("simulateTransaction", params);
	jint(r, "latestLedger");
	ev = json_object_get(r, "error");
	if (ev)
		e = strdup(json_string_value(ev));
	else
		jstr(r, "transactionData");
	json_decref(r);
	free(b64);
	txbuild_release(&b);
	return e;
}

/* ---------- ingest lag (views) ---------- */

/* getLedgerEntries of one account as a view answers it. */
struct acct_view {
	bool found;
	int64_t seq, balance;
	json_int_t last_modified; /* lastModifiedLedgerSeq */
	json_int_t latest;        /* the answer's latestLedger */
};

static struct acct_view read_account(const struct acct *a)
{
	struct acct_view v = {0};
	uint8_t key[40] = {0}, raw[512];
	char *k, params[256];
	json_t *r, *e;
	size_t n;

	memcpy(key + 8, a->kp.pk, 32);
	k = xdr_b64_encode(key, sizeof(key));
	snprintf(params, sizeof(params), "{\"keys\":[\"%s\"]}", k);
	free(k);
	r = rpc("getLedgerEntries", params);
	v.latest = jint(r, "latestLedger");
	e = json_array_get(json_object_get(r, "entries"), 0);
	v.found = e != NULL;
	if (e) {
		const char *x = jstr(e, "xdr");

		ck_assert_int_eq(xdr_b64_decode(x, strlen(x), raw, sizeof(raw), &n, "xdr", NULL),
				 0);
		v.balance = be64(raw + 40);
		v.seq = be64(raw + 48);
		v.last_modified = jint(e, "lastModifiedLedgerSeq");
	}
	json_decref(r);
	return v;
}

/* A read method's latest ledger: getLatestLedger's "sequence", else "latestLedger". */
static json_int_t view_of(const char *method)
{
	json_t *r = rpc(method, NULL);
	json_int_t v = jint(r, strcmp(method, "getLatestLedger") ? "latestLedger" : "sequence");

	json_decref(r);
	return v;
}

/* Every whole-node read method agrees the view is `want`. */
static void expect_view(json_int_t want)
{
	ck_assert_int_eq(view_of("getLatestLedger"), want);
	ck_assert_int_eq(view_of("getHealth"), want);
	ck_assert_int_eq(view_of("getFeeStats"), want);
}

static json_int_t debug_state_int(const char *field)
{
	json_t *st = http_json("/debug/state", NULL);
	json_int_t v = json_is_null(json_object_get(st, field)) ? -1 : jint(st, field);

	json_decref(st);
	return v;
}

/* POST /debug/faults expecting HTTP 400 whose error names `field`. */
static void expect_fault_refused(const char *body, const char *field)
{
	char *out;

	ck_assert_int_eq(http("/debug/faults", body, 5000, &out), 400);
	ck_assert_msg(strstr(out, field), "%s: error does not name %s: %s", body, field, out);
	free(out);
}

/* ---------- tests ---------- */

START_TEST(test_read_methods)
{
	json_t *r, *fs;

	sim_start("--ledger-ms", HOUR_MS, "--start-ledger", "500", NULL);
	r = rpc("getNetwork", "{}");
	ck_assert_str_eq(jstr(r, "passphrase"), PASSPHRASE);
	ck_assert_int_gt(jint(r, "protocolVersion"), 20);
	json_decref(r);
	r = rpc("getHealth", NULL);
	ck_assert_str_eq(jstr(r, "status"), "healthy");
	ck_assert_int_eq(jint(r, "latestLedger"), 500);
	ck_assert_int_eq(jint(r, "oldestLedger"), 500);
	jstr(r, "latestLedgerCloseTime");
	jint(r, "ledgerRetentionWindow");
	json_decref(r);
	ck_assert_int_eq(close_ledgers(3), 503);
	r = rpc("getLatestLedger", NULL);
	ck_assert_int_eq(jint(r, "sequence"), 503);
	ck_assert_int_eq(strlen(jstr(r, "id")), 64);
	ck_assert_int_gt(atoll(jstr(r, "closeTime")), 1700000000);
	jstr(r, "headerXdr");
	json_decref(r);
	r = rpc("getFeeStats", NULL);
	fs = json_object_get(r, "sorobanInclusionFee");
	ck_assert_str_eq(jstr(fs, "p50"), "0");
	ck_assert_str_eq(jstr(fs, "transactionCount"), "0");
	ck_assert_int_eq(jint(fs, "ledgerCount"), 0);
	ck_assert_int_eq(jint(r, "latestLedger"), 503);
	json_decref(r);
	/* JSON-RPC errors: unknown method, bad request, bad XDR, bad hash. */
	r = rpc_raw("noSuchMethod", NULL);
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32601);
	json_decref(r);
	r = rpc_raw("sendTransaction", "{\"transaction\":\"AAAA\"}");
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32602);
	ck_assert_str_eq(jstr(json_object_get(r, "error"), "message"), "invalid_xdr");
	json_decref(r);
	r = rpc_raw("getTransaction", "{\"hash\":\"xyz\"}");
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32602);
	json_decref(r);
	r = http_json("/", "{\"id\":1}");
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32600);
	json_decref(r);
	{
		/* bodies are bounded (512 KiB) */
		size_t n = 600 * 1024;
		char *huge = malloc(n + 1), *out;

		memset(huge, 'a', n);
		huge[n] = '\0';
		ck_assert_int_eq(http("/", huge, 10000, &out), 413);
		free(out);
		free(huge);
	}
	r = http_json("/", "{not json");
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32700);
	json_decref(r);
	r = http_json("/", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getHealth\"}]");
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32600);
	json_decref(r);
	sim_stop();
}
END_TEST

START_TEST(test_debug_off_and_timer)
{
	const char *dir = getenv("OUTBOX_BUILD_DIR");
	char bin[1024], line[256], *body;
	int fd[2];
	FILE *f;
	json_t *r;
	json_int_t first;

	/* Without --debug the debug endpoints do not exist. */
	snprintf(bin, sizeof(bin), "%s/stellar-sim", dir);
	ck_assert_int_eq(pipe(fd), 0);
	sim_pid = fork();
	if (sim_pid == 0) {
		dup2(fd[1], 1);
		execl(bin, bin, "--listen", "127.0.0.1:0", "--ledger-ms", "100", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	ck_assert_int_eq(sscanf(line, "listening 127.0.0.1:%u", &sim_port), 1);
	ck_assert_int_eq(http("/debug/state", NULL, 5000, &body), 404);
	free(body);
	ck_assert_int_eq(http("/debug/accounts", "{\"accounts\":[]}", 5000, &body), 404);
	free(body);
	/* The ledger clock closes a ledger every --ledger-ms (loose bounds: the
	 * machine may be busy, the clock catches up on a late tick). */
	{
		double t0 = now_s(), el;
		json_int_t second;

		r = rpc("getLatestLedger", NULL);
		first = jint(r, "sequence");
		json_decref(r);
		usleep(1000 * 1000);
		r = rpc("getLatestLedger", NULL);
		second = jint(r, "sequence");
		json_decref(r);
		el = now_s() - t0;
		ck_assert_int_ge(second - first, (json_int_t)(el * 10 * 0.5));
		ck_assert_int_le(second - first, (json_int_t)(el * 10) + 3);
	}
	sim_stop();
}
END_TEST

START_TEST(test_help)
{
	const char *dir = getenv("OUTBOX_BUILD_DIR");
	char cmd[1200], out[8192];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s/stellar-sim --help", dir);
	p = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	ck_assert_int_eq(pclose(p), 0);
	for (const char *flag =
		     "--listen\0--passphrase\0--ledger-ms\0--ledger-capacity\0"
		     "--vault-contract\0--debug\0--base-fee\0--queue-ledgers\0--strict-simulate\0"
		     "--ban-ledgers\0--retention-ledgers\0--seed\0";
	     *flag; flag += strlen(flag) + 1)
		ck_assert_msg(strstr(out, flag), "--help lacks %s", flag);
	snprintf(cmd, sizeof(cmd), "%s/stellar-sim --ledger-ms x 2>/dev/null", dir);
	p = popen(cmd, "r");
	ck_assert_int_eq(WEXITSTATUS(pclose(p)), 2);
	snprintf(cmd, sizeof(cmd), "%s/stellar-sim --listen localhost:1 2>/dev/null", dir);
	p = popen(cmd, "r");
	ck_assert_int_eq(WEXITSTATUS(pclose(p)), 2);
	snprintf(cmd, sizeof(cmd), "%s/stellar-sim --vault-contract GABC 2>/dev/null", dir);
	p = popen(cmd, "r");
	ck_assert_int_eq(WEXITSTATUS(pclose(p)), 2);
}
END_TEST

/*
 * --accounts FILE: the accounts exist before the sim answers anything (a sim
 * restarted in place of another, tests/chaos/sim_restart.sh); a bad file is
 * a usage error.
 */
START_TEST(test_accounts_file)
{
	const char *dir = getenv("OUTBOX_BUILD_DIR");
	char path[] = "/tmp/check_sim_accounts.XXXXXX", arg[64], cmd[1200];
	const char *g = "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH";
	int fd = mkstemp(path);
	json_t *st, *a;
	FILE *p;

	ck_assert_int_ge(fd, 0);
	dprintf(fd, "{\"accounts\":[{\"id\":\"%s\",\"seq\":\"777\",\"balance\":\"5\"}]}", g);
	close(fd);
	snprintf(arg, sizeof(arg), "%s", path);
	sim_start("--ledger-ms", HOUR_MS, "--accounts", arg, NULL);
	st = http_json("/debug/state", NULL);
	a = json_object_get(json_object_get(st, "accounts"), g);
	ck_assert_msg(a != NULL, "the account of --accounts is missing");
	ck_assert_str_eq(jstr(a, "seq"), "777");
	ck_assert_str_eq(jstr(a, "balance"), "5");
	json_decref(st);
	sim_stop();
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	dprintf(fd, "{\"accounts\":[{\"id\":\"GNOPE\",\"seq\":\"1\",\"balance\":\"5\"}]}");
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s/stellar-sim --accounts %s 2>/dev/null", dir, path);
	p = popen(cmd, "r");
	ck_assert_int_eq(WEXITSTATUS(pclose(p)), 2);
	snprintf(cmd, sizeof(cmd), "%s/stellar-sim --accounts /nonexistent/x 2>/dev/null", dir);
	p = popen(cmd, "r");
	ck_assert_int_eq(WEXITSTATUS(pclose(p)), 2);
	unlink(path);
}
END_TEST

START_TEST(test_deposit_executes)
{
	struct acct a;
	struct built t;
	struct txopt o = {.fn = VAULT_DEPOSIT, .amount = "2500"};
	json_t *r;
	struct res d;
	int64_t seq, bal;
	uint32_t led;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &o, &t, NULL);
	ck_assert_str_eq(tx_status(t.hash), "NOT_FOUND");
	expect_status(t.b64, "PENDING");
	expect_status(t.b64, "DUPLICATE");
	ck_assert_str_eq(tx_status(t.hash), "NOT_FOUND");
	led = close_ledgers(1);
	r = get_tx(t.hash);
	ck_assert_str_eq(jstr(r, "status"), "SUCCESS");
	ck_assert_int_eq(jint(r, "ledger"), led);
	ck_assert_int_eq(jint(r, "applicationOrder"), 1);
	ck_assert(json_is_false(json_object_get(r, "feeBump")));
	ck_assert_str_eq(jstr(r, "envelopeXdr"), t.b64);
	jstr(r, "createdAt");
	d = decode_result(jstr(r, "resultXdr"));
	ck_assert_int_eq(d.code, TX_SUCCESS);
	ck_assert_int_eq(d.op_code, IHF_SUCCESS);
	ck_assert_int_eq(d.fee, 100 + t.resource_fee);
	json_decref(r);
	/* sequence consumed, fee charged, deposit credited (user == source here) */
	ck_assert(ledger_account(&a, &seq, &bal));
	ck_assert_int_eq(seq, a.seq + 1);
	ck_assert_int_eq(bal, 1000000000 - d.fee + 2500);
	ck_assert_int_eq(executions(t.op_ref), 1);
	ck_assert_int_eq(max_pending(&a), 1);
	/* replay of the applied envelope: its sequence number is used */
	d = expect_error(t.b64);
	ck_assert_int_eq(d.code, TX_BAD_SEQ);
	/* getTransactions sees it with a numeric createdAt */
	{
		char params[128];

		snprintf(params, sizeof(params),
			 "{\"startLedger\":%u,\"pagination\":{\"limit\":5}}", led);
		r = rpc("getTransactions", params);
		ck_assert_int_eq(json_array_size(json_object_get(r, "transactions")), 1);
		ck_assert(json_is_integer(json_object_get(
			json_array_get(json_object_get(r, "transactions"), 0), "createdAt")));
		jstr(r, "cursor");
		jint(r, "latestLedgerCloseTimestamp");
		json_decref(r);
	}
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_rejections)
{
	struct acct a, other;
	struct built t;
	struct txopt o = {.fn = VAULT_DEPOSIT};
	uint8_t wrong_net[32];
	struct res d;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	acct_new(&other, 1000000000);
	/* wrong key */
	build_vault(&a, &o, &t, NULL);
	{
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct xdr_envelope env;
		uint8_t *raw;
		size_t rl;
		char *s;

		ck_assert_int_eq(
			xdr_envelope_decode_b64(&env, t.b64, strlen(t.b64), &raw, &rl, &err), 0);
		env.n_sigs = 0;
		ck_assert_int_eq(stellar_sign_envelope(&env, &other.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
		ck_assert_int_eq(expect_error(s).code, TX_BAD_AUTH);
		free(s);
		/* the right signature plus an extra one */
		env.n_sigs = 0;
		ck_assert_int_eq(stellar_sign_envelope(&env, &a.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(stellar_sign_envelope(&env, &other.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
		ck_assert_int_eq(expect_error(s).code, TX_BAD_AUTH_EXTRA);
		free(s);
		/* a memo on a contract call */
		env.n_sigs = 0;
		env.tx.memo.type = MEMO_ID;
		env.tx.memo.id = 42;
		ck_assert_int_eq(stellar_sign_envelope(&env, &a.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
		ck_assert_int_eq(expect_error(s).code, TX_SOROBAN_INVALID);
		free(s);
		/* simulate refuses it as well */
		{
			char params[8192];
			json_t *r;

			env.n_sigs = 0;
			env.tx.has_soroban = false;
			env.tx.ops[0].body.invoke.n_auth = 0;
			env.tx.ops[0].body.invoke.auth.len = 0;
			ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
			snprintf(params, sizeof(params), "{\"transaction\":\"%s\"}", s);
			r = rpc("simulateTransaction", params);
			ck_assert_ptr_nonnull(strstr(jstr(r, "error"), "memo"));
			json_decref(r);
			free(s);
		}
		free(raw);
	}
	free(t.b64);
	/* wrong network passphrase */
	stellar_network_id("Public Global Stellar Network ; September 2015", wrong_net);
	build_vault(&a, &o, &t, wrong_net);
	ck_assert_int_eq(expect_error(t.b64).code, TX_BAD_AUTH);
	free(t.b64);
	/* bad sequence: too high and already used */
	o.seq = a.seq + 2;
	build_vault(&a, &o, &t, NULL);
	ck_assert_int_eq(expect_error(t.b64).code, TX_BAD_SEQ);
	free(t.b64);
	o.seq = a.seq;
	build_vault(&a, &o, &t, NULL);
	ck_assert_int_eq(expect_error(t.b64).code, TX_BAD_SEQ);
	free(t.b64);
	o.seq = 0;
	/* time bounds */
	o.max_time = (uint64_t)time(NULL) - 10;
	build_vault(&a, &o, &t, NULL);
	ck_assert_int_eq(expect_error(t.b64).code, TX_TOO_LATE);
	free(t.b64);
	o.max_time = 0;
	o.min_time = (uint64_t)time(NULL) + 3600;
	o.max_time = (uint64_t)time(NULL) + 7200;
	build_vault(&a, &o, &t, NULL);
	ck_assert_int_eq(expect_error(t.b64).code, TX_TOO_EARLY);
	free(t.b64);
	o.min_time = o.max_time = 0;
	/* fee below the minimum: feeCharged is the minimum full fee */
	o.incl = 99;
	build_vault(&a, &o, &t, NULL);
	d = expect_error(t.b64);
	ck_assert_int_eq(d.code, TX_INSUFFICIENT_FEE);
	ck_assert_int_eq(d.fee, 100 + t.resource_fee);
	free(t.b64);
	o.incl = 0;
	/* resourceFee below what simulate returned */
	o.resource_fee_delta = -1;
	build_vault(&a, &o, &t, NULL);
	ck_assert_int_eq(expect_error(t.b64).code, TX_SOROBAN_INVALID);
	free(t.b64);
	o.resource_fee_delta = 0;
	/* nothing above consumed a sequence number */
	{
		int64_t seq, bal;

		ck_assert(ledger_account(&a, &seq, &bal));
		ck_assert_int_eq(seq, a.seq);
		ck_assert_int_eq(bal, 1000000000);
	}
	sim_stop();
}
END_TEST

START_TEST(test_no_account)
{
	struct acct a;
	struct built t;
	struct txopt o = {.fn = VAULT_DEPOSIT};

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &o, &t, NULL);
	sim_stop();
	/* A fresh network where that source account does not exist. */
	sim_start("--ledger-ms", HOUR_MS, NULL);
	ck_assert_int_eq(expect_error(t.b64).code, TX_NO_ACCOUNT);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_fee_bump_rules)
{
	struct acct a, payer;
	struct built t;
	struct txopt o = {.fn = VAULT_DEPOSIT, .incl = 100};
	uint8_t h1[32], h2[32];
	char *b1, *b2;
	struct res d;
	json_t *r;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	acct_new(&payer, 1000000000);
	build_vault(&a, &o, &t, NULL);
	expect_status(t.b64, "PENDING");
	/* a second, different tx from the same account: TRY_AGAIN_LATER */
	{
		struct built t2;
		struct txopt o2 = {.fn = VAULT_DEPOSIT, .seq = a.seq + 2};

		build_vault(&a, &o2, &t2, NULL);
		expect_status(t2.b64, "TRY_AGAIN_LATER");
		free(t2.b64);
	}
	/* a bump bidding 5x the queued tx cannot displace it */
	b1 = fee_bump(t.b64, &payer, t.resource_fee + 1000, h1);
	d = expect_error(b1);
	ck_assert_int_eq(d.code, TX_INSUFFICIENT_FEE);
	ck_assert_int_eq(d.fee, t.resource_fee + 2000);
	free(b1);
	/* 10x does */
	b1 = fee_bump(t.b64, &payer, t.resource_fee + 2000, h1);
	expect_status(b1, "PENDING");
	ck_assert_int_eq(max_pending(&a), 1);
	close_ledgers(1);
	r = get_tx(h1);
	ck_assert_str_eq(jstr(r, "status"), "SUCCESS");
	ck_assert(json_is_true(json_object_get(r, "feeBump")));
	d = decode_result(jstr(r, "resultXdr"));
	ck_assert_int_eq(d.code, TX_FEE_BUMP_INNER_SUCCESS);
	ck_assert_int_eq(d.inner_code, TX_SUCCESS);
	json_decref(r);
	/* the inner hash finds the bumped execution; it ran once */
	ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	ck_assert_int_eq(executions(t.op_ref), 1);
	/* a second fee bump of the applied inner tx */
	b2 = fee_bump(t.b64, &payer, t.resource_fee + 5000, h2);
	d = expect_error(b2);
	ck_assert_int_eq(d.code, TX_FEE_BUMP_INNER_FAILED);
	ck_assert_int_eq(d.inner_code, TX_BAD_SEQ);
	/* and the original envelope itself */
	ck_assert_int_eq(expect_error(t.b64).code, TX_BAD_SEQ);
	ck_assert_int_eq(executions(t.op_ref), 1);
	free(b1);
	free(b2);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_drop_and_ban)
{
	struct acct a;
	struct built t;
	struct txopt o = {.fn = VAULT_DEPOSIT, .incl = 100};
	json_t *st;

	/* Two ledger slots, both taken by background bids above 100. */
	sim_start("--ledger-ms", HOUR_MS, "--ledger-capacity", "2", NULL);
	acct_new(&a, 1000000000);
	set_faults("{\"background_fee_load\": 2}");
	build_vault(&a, &o, &t, NULL);
	expect_status(t.b64, "PENDING");
	close_ledgers(3);
	ck_assert_str_eq(tx_status(t.hash), "NOT_FOUND");
	st = http_json("/debug/state", NULL);
	ck_assert_int_eq(jint(st, "queue_size"), 1);
	json_decref(st);
	close_ledgers(1); /* the 4th ledger: dropped and banned */
	st = http_json("/debug/state", NULL);
	ck_assert_int_eq(jint(st, "queue_size"), 0);
	json_decref(st);
	expect_status(t.b64, "TRY_AGAIN_LATER");
	close_ledgers(9);
	expect_status(t.b64, "TRY_AGAIN_LATER");
	close_ledgers(1); /* 10 ledgers later the ban is over */
	set_faults("{}");
	expect_status(t.b64, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	ck_assert_int_eq(max_pending(&a), 1);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_surge_pricing)
{
	struct acct a[5];
	struct built t[5];
	static const uint32_t bids[5] = {300, 100, 500, 200, 400};
	int i;
	json_t *fs;

	sim_start("--ledger-ms", HOUR_MS, "--ledger-capacity", "3", NULL);
	for (i = 0; i < 5; i++) {
		struct txopt o = {.fn = VAULT_DEPOSIT, .incl = bids[i]};

		acct_new(&a[i], 1000000000);
		build_vault(&a[i], &o, &t[i], NULL);
		expect_status(t[i].b64, "PENDING");
	}
	close_ledgers(1);
	/* the three best bids (500, 400, 300) are in, each charged the clearing bid 300 */
	for (i = 0; i < 5; i++) {
		bool in = bids[i] >= 300;

		ck_assert_str_eq(tx_status(t[i].hash), in ? "SUCCESS" : "NOT_FOUND");
		if (in)
			ck_assert_int_eq(tx_result(t[i].hash).fee, 300 + t[i].resource_fee);
	}
	{
		json_t *r = get_tx(t[2].hash);

		ck_assert_int_eq(jint(r, "applicationOrder"), 1); /* highest bid first */
		json_decref(r);
	}
	fs = rpc("getFeeStats", NULL);
	ck_assert_str_eq(jstr(json_object_get(fs, "sorobanInclusionFee"), "min"), "300");
	ck_assert_str_eq(jstr(json_object_get(fs, "sorobanInclusionFee"), "transactionCount"), "3");
	json_decref(fs);
	/* the rest follow at the base fee once there is room */
	close_ledgers(1);
	for (i = 0; i < 5; i++)
		ck_assert_str_eq(tx_status(t[i].hash), "SUCCESS");
	ck_assert_int_eq(tx_result(t[1].hash).fee, 100 + t[1].resource_fee);
	for (i = 0; i < 5; i++)
		free(t[i].b64);
	sim_stop();
}
END_TEST

START_TEST(test_fee_stats_move_with_load)
{
	json_t *fs, *d;
	long long p50, p90;

	sim_start("--ledger-ms", HOUR_MS, "--ledger-capacity", "5", NULL);
	set_faults("{\"background_fee_load\": 10}");
	close_ledgers(5);
	fs = rpc("getFeeStats", NULL);
	d = json_object_get(fs, "sorobanInclusionFee");
	p50 = atoll(jstr(d, "p50"));
	ck_assert_str_eq(jstr(d, "transactionCount"), "25");
	ck_assert_int_eq(jint(d, "ledgerCount"), 6); /* genesis and 5 closed */
	ck_assert_int_gt(atoll(jstr(d, "min")), 100);
	json_decref(fs);
	close_ledgers(5);
	fs = rpc("getFeeStats", NULL);
	d = json_object_get(fs, "sorobanInclusionFee");
	p90 = atoll(jstr(d, "p90"));
	ck_assert_int_gt(atoll(jstr(d, "p50")), p50); /* rising */
	ck_assert_int_ge(p90, atoll(jstr(d, "p50")));
	json_decref(fs);
	sim_stop();
}
END_TEST

START_TEST(test_withdraw_beyond_balance_fails)
{
	struct acct a, b, user;
	struct built dep, wa, wb;
	struct txopt o = {.fn = VAULT_DEPOSIT, .amount = "500"};
	int64_t seq, bal;
	struct res d;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	acct_new(&b, 1000000000);
	acct_new(&user, 0);
	o.user = user.g;
	build_vault(&a, &o, &dep, NULL);
	expect_status(dep.b64, "PENDING");
	close_ledgers(1);
	a.seq++;
	ck_assert_str_eq(balance_of(user.g), "500");
	/* Two withdrawals of 400, each simulated fine against 500; b bids more
	 * and applies first, so a's executes against 100 and FAILS on chain. */
	build_vault(&a, &(struct txopt){.fn = VAULT_WITHDRAW, .user = user.g, .amount = "400"}, &wa,
		    NULL);
	build_vault(
		&b,
		&(struct txopt){.fn = VAULT_WITHDRAW, .user = user.g, .amount = "400", .incl = 200},
		&wb, NULL);
	expect_status(wa.b64, "PENDING");
	expect_status(wb.b64, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(wb.hash), "SUCCESS");
	ck_assert_str_eq(tx_status(wa.hash), "FAILED");
	d = tx_result(wa.hash);
	ck_assert_int_eq(d.code, TX_FAILED);
	ck_assert_int_eq(d.op_code, IHF_TRAPPED);
	ck_assert_int_eq(d.fee, 100 + wa.resource_fee);
	ck_assert_str_eq(balance_of(user.g), "100");
	ck_assert_int_eq(executions(wb.op_ref), 1);
	ck_assert_int_eq(executions(wa.op_ref), 0);
	/* the failed tx consumed its sequence number and paid its fee */
	ck_assert(ledger_account(&a, &seq, &bal));
	ck_assert_int_eq(seq, a.seq + 1);
	ck_assert_int_eq(bal, 1000000000 - (100 + dep.resource_fee) - d.fee);
	ck_assert_int_eq(expect_error(wa.b64).code, TX_BAD_SEQ);
	/* a withdrawal beyond the balance simulates fine (simulation skips the
	 * vault's preconditions by default), is included and FAILS on chain */
	{
		struct built w;
		char *e = simulate_error(&a, VAULT_WITHDRAW, user.g, "101");

		ck_assert_ptr_null(e);
		a.seq++;
		build_vault(&a,
			    &(struct txopt){.fn = VAULT_WITHDRAW, .user = user.g, .amount = "101"},
			    &w, NULL);
		expect_status(w.b64, "PENDING");
		close_ledgers(1);
		ck_assert_str_eq(tx_status(w.hash), "FAILED");
		d = tx_result(w.hash);
		ck_assert_int_eq(d.code, TX_FAILED);
		ck_assert_int_eq(d.op_code, IHF_TRAPPED);
		ck_assert_str_eq(balance_of(user.g), "100");
		ck_assert_int_eq(executions(w.op_ref), 0);
		ck_assert(ledger_account(&a, &seq, &bal));
		ck_assert_int_eq(seq, a.seq + 1);
		free(w.b64);
	}
	free(dep.b64);
	free(wa.b64);
	free(wb.b64);
	sim_stop();
}
END_TEST

START_TEST(test_missing_auth_traps)
{
	struct acct a;
	struct built t;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct xdr_envelope env;
	uint8_t *raw, h[32];
	size_t rl;
	char *s;
	int64_t seq, bal;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	ck_assert_int_eq(xdr_envelope_decode_b64(&env, t.b64, strlen(t.b64), &raw, &rl, &err), 0);
	env.tx.ops[0].body.invoke.n_auth = 0;
	env.tx.ops[0].body.invoke.auth.len = 0;
	env.n_sigs = 0;
	ck_assert_int_eq(stellar_sign_envelope(&env, &a.kp, network_id, h, &err), 0);
	ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
	expect_status(s, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(h), "FAILED");
	ck_assert_int_eq(tx_result(h).op_code, IHF_TRAPPED);
	ck_assert_int_eq(executions(t.op_ref), 0);
	ck_assert(ledger_account(&a, &seq, &bal));
	ck_assert_int_eq(seq, a.seq + 1);
	free(s);
	free(raw);
	free(t.b64);
	sim_stop();
}
END_TEST

struct timed_call {
	const char *method;
	long timeout_ms;
	long status;
	double seconds;
};

static void *timed_call_main(void *arg)
{
	struct timed_call *c = arg;
	char body[128];
	double t0 = now_s();

	snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"}", c->method);
	c->status = http("/", body, c->timeout_ms, NULL);
	c->seconds = now_s() - t0;
	return NULL;
}

static struct timed_call timed(const char *method, long timeout_ms)
{
	struct timed_call c = {method, timeout_ms, 0, 0};

	timed_call_main(&c);
	return c;
}

START_TEST(test_fault_delay_and_timeout)
{
	struct timed_call slow = {"getHealth", 5000, 0, 0}, held = {"getFeeStats", 2000, 0, 0},
			  fast;
	pthread_t th1, th2;
	char *body;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	set_faults("{\"method\":\"getHealth\",\"delay_ms\":1500}");
	set_faults("{\"method\":\"getFeeStats\",\"timeout_rate\":1}");
	pthread_create(&th1, NULL, timed_call_main, &slow);
	pthread_create(&th2, NULL, timed_call_main, &held);
	usleep(100 * 1000);
	/* neither the delayed nor the held request blocks anyone else */
	fast = timed("getLatestLedger", 5000);
	ck_assert_int_eq(fast.status, 200);
	ck_assert_double_lt(fast.seconds, 0.7);
	pthread_join(th1, NULL);
	pthread_join(th2, NULL);
	ck_assert_int_eq(slow.status, 200);
	ck_assert_double_ge(slow.seconds, 1.49);
	ck_assert_int_eq(held.status, -1); /* no answer: the client gave up */
	ck_assert_double_ge(held.seconds, 1.9);
	/* once the client has hung up the sim lets the connection go */
	{
		json_int_t n = -1;

		for (int i = 0; i < 30 && n != 0; i++) {
			json_t *st = http_json("/debug/state", NULL);

			n = jint(st, "held_connections");
			json_decref(st);
			if (n)
				usleep(100 * 1000);
		}
		ck_assert_int_eq(n, 0);
	}
	/* GET /debug/faults shows the table; {} clears it */
	ck_assert_int_eq(http("/debug/faults", NULL, 5000, &body), 200);
	ck_assert_ptr_nonnull(strstr(body, "getHealth"));
	free(body);
	set_faults("{}");
	slow = timed("getHealth", 5000);
	ck_assert_int_eq(slow.status, 200);
	ck_assert_double_lt(slow.seconds, 0.7);
	ck_assert_int_eq(timed("getFeeStats", 2000).status, 200);
	/* bad bodies change nothing and say why */
	ck_assert_int_eq(http("/debug/faults", "{\"timeout_rate\":2}", 5000, &body), 400);
	ck_assert_ptr_nonnull(strstr(body, "timeout_rate"));
	free(body);
	ck_assert_int_eq(http("/debug/faults", "{\"bogus\":1}", 5000, &body), 400);
	free(body);
	ck_assert_int_eq(http("/debug/faults", "{\"delay_ms\":1.5}", 5000, &body), 400);
	free(body);
	ck_assert_int_eq(http("/debug/faults", "{\"background_fee_load\":2.0}", 5000, &body), 200);
	free(body);
	{
		json_t *st = http_json("/debug/state", NULL);

		ck_assert_int_eq(jint(st, "background_fee_load"), 2);
		json_decref(st);
	}
	sim_stop();
}
END_TEST

START_TEST(test_fault_5xx_garbage_rates)
{
	char *body;
	json_t *j;
	int i, n5xx = 0;

	sim_start("--ledger-ms", HOUR_MS, "--seed", "42", NULL);
	set_faults("{\"method\":\"*\",\"http_5xx_rate\":1}");
	ck_assert_int_eq(timed("getHealth", 5000).status, 503);
	ck_assert_int_eq(timed("getNetwork", 5000).status, 503);
	/* a method's own entry wins over "*" */
	set_faults("{\"method\":\"getHealth\",\"garbage_rate\":1}");
	ck_assert_int_eq(
		http("/", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getHealth\"}", 5000, &body),
		200);
	j = json_loads(body, 0, NULL);
	ck_assert_ptr_null(j);
	free(body);
	ck_assert_int_eq(timed("getNetwork", 5000).status, 503);
	/* rates are rates */
	set_faults("{}");
	set_faults("{\"method\":\"getHealth\",\"http_5xx_rate\":0.3}");
	for (i = 0; i < 300; i++)
		n5xx += timed("getHealth", 5000).status == 503;
	ck_assert_int_ge(n5xx, 60);
	ck_assert_int_le(n5xx, 120);
	sim_stop();
}
END_TEST

START_TEST(test_fault_try_again_later_and_blackhole)
{
	struct acct a, b;
	struct built t, u, u2;
	json_t *st;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	acct_new(&b, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	set_faults("{\"method\":\"sendTransaction\",\"try_again_later_rate\":1}");
	expect_status(t.b64, "TRY_AGAIN_LATER");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t.hash), "NOT_FOUND");
	set_faults("{}");
	expect_status(t.b64, "PENDING"); /* nothing was queued or banned */
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	/* black hole: PENDING, never included, forgotten after 4 ledgers */
	set_faults("{\"method\":\"sendTransaction\",\"blackhole_rate\":1}");
	build_vault(&b, &(struct txopt){.fn = VAULT_DEPOSIT}, &u, NULL);
	expect_status(u.b64, "PENDING");
	expect_status(u.b64, "DUPLICATE");
	set_faults("{}");
	st = http_json("/debug/state", NULL);
	ck_assert_int_eq(jint(st, "black_holed"), 1);
	json_decref(st);
	close_ledgers(2);
	ck_assert_str_eq(tx_status(u.hash), "NOT_FOUND");
	/* the sim does not know the black-holed tx is lost: a second inner tx
	 * for the same sequence number is two in flight for that account */
	build_vault(&b, &(struct txopt){.fn = VAULT_DEPOSIT, .amount = "7"}, &u2, NULL);
	expect_status(u2.b64, "PENDING");
	ck_assert_int_eq(max_pending(&b), 2);
	close_ledgers(2);
	ck_assert_str_eq(tx_status(u.hash), "NOT_FOUND");
	ck_assert_str_eq(tx_status(u2.hash), "SUCCESS");
	st = http_json("/debug/state", NULL);
	ck_assert_int_eq(jint(st, "black_holed"), 0);
	json_decref(st);
	ck_assert_int_eq(executions(u.op_ref), 0);
	free(t.b64);
	free(u.b64);
	free(u2.b64);
	sim_stop();
}
END_TEST

START_TEST(test_queue_full_evicts_lowest)
{
	struct acct a[4];
	struct built t[4];
	static const uint32_t bids[4] = {100, 150, 120, 300};
	int i;

	sim_start("--ledger-ms", HOUR_MS, "--ledger-capacity", "1", "--queue-capacity", "2", NULL);
	for (i = 0; i < 4; i++) {
		acct_new(&a[i], 1000000000);
		build_vault(&a[i], &(struct txopt){.fn = VAULT_DEPOSIT, .incl = bids[i]}, &t[i],
			    NULL);
	}
	expect_status(t[0].b64, "PENDING");
	expect_status(t[1].b64, "PENDING");
	/* 120 beats the lowest queued bid (100), which is evicted and banned */
	expect_status(t[2].b64, "PENDING");
	expect_status(t[0].b64, "TRY_AGAIN_LATER");
	/* a full queue refuses a bid not above its lowest, and bans it */
	{
		struct built low;

		acct_new(&a[0], 1000000000);
		build_vault(&a[0], &(struct txopt){.fn = VAULT_DEPOSIT, .incl = 110}, &low, NULL);
		expect_status(low.b64, "TRY_AGAIN_LATER");
		free(low.b64);
	}
	expect_status(t[3].b64, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t[3].hash), "SUCCESS");
	ck_assert_str_eq(tx_status(t[1].hash), "NOT_FOUND");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t[1].hash), "SUCCESS");
	for (i = 0; i < 4; i++)
		free(t[i].b64);
	sim_stop();
}
END_TEST

START_TEST(test_get_transactions_pages)
{
	struct acct a[5];
	struct built t[5];
	char params[256];
	json_t *r, *txs;
	uint32_t first;
	int i, seen = 0;
	const char *cursor;
	char cur[32];

	sim_start("--ledger-ms", HOUR_MS, "--ledger-capacity", "3", NULL);
	for (i = 0; i < 5; i++) {
		acct_new(&a[i], 1000000000);
		build_vault(&a[i], &(struct txopt){.fn = VAULT_DEPOSIT}, &t[i], NULL);
		expect_status(t[i].b64, "PENDING");
	}
	first = close_ledgers(1);
	close_ledgers(1);
	snprintf(params, sizeof(params), "{\"startLedger\":%u,\"pagination\":{\"limit\":2}}",
		 first);
	r = rpc("getTransactions", params);
	for (;;) {
		txs = json_object_get(r, "transactions");
		seen += (int)json_array_size(txs);
		if (json_array_size(txs) == 0)
			break;
		ck_assert_int_le(json_array_size(txs), 2);
		cursor = jstr(r, "cursor");
		snprintf(cur, sizeof(cur), "%s", cursor);
		json_decref(r);
		snprintf(params, sizeof(params), "{\"pagination\":{\"cursor\":\"%s\",\"limit\":2}}",
			 cur);
		r = rpc("getTransactions", params);
	}
	json_decref(r);
	ck_assert_int_eq(seen, 5);
	/* a start ledger outside the window is a parameter error */
	r = rpc_raw("getTransactions", "{\"startLedger\":5}");
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32602);
	json_decref(r);
	for (i = 0; i < 5; i++)
		free(t[i].b64);
	sim_stop();
}
END_TEST

START_TEST(test_retention_window)
{
	struct acct a;
	struct built t;
	json_t *r;

	sim_start("--ledger-ms", HOUR_MS, "--retention-ledgers", "3", NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	expect_status(t.b64, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	close_ledgers(3);
	r = get_tx(t.hash);
	ck_assert_str_eq(jstr(r, "status"), "NOT_FOUND");
	ck_assert_int_eq(jint(r, "oldestLedger"), jint(r, "latestLedger") - 2);
	json_decref(r);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_vault_rebalance_and_referral)
{
	struct acct agent, ref;
	struct built t[4];
	json_t *st;

	sim_start("--ledger-ms", HOUR_MS, "--vault-reserve", "5000", NULL);
	acct_new(&agent, 1000000000);
	acct_new(&ref, 0);
	ck_assert_str_eq(balance_of(vault), "5000");
	build_vault(&agent, &(struct txopt){.fn = VAULT_REBALANCE, .amount = "1000"}, &t[0], NULL);
	expect_status(t[0].b64, "PENDING");
	close_ledgers(1);
	agent.seq++;
	ck_assert_str_eq(tx_status(t[0].hash), "SUCCESS");
	ck_assert_str_eq(balance_of(vault), "6000");
	build_vault(&agent,
		    &(struct txopt){.fn = VAULT_PAY_REFERRAL, .user = ref.g, .amount = "2500"},
		    &t[1], NULL);
	expect_status(t[1].b64, "PENDING");
	close_ledgers(1);
	agent.seq++;
	ck_assert_str_eq(tx_status(t[1].hash), "SUCCESS");
	ck_assert_str_eq(balance_of(vault), "3500");
	ck_assert_str_eq(balance_of(ref.g), "2500");
	/* a negative rebalance moves funds out of the reserve ... */
	build_vault(&agent, &(struct txopt){.fn = VAULT_REBALANCE, .amount = "-3000"}, &t[2], NULL);
	expect_status(t[2].b64, "PENDING");
	close_ledgers(1);
	agent.seq++;
	ck_assert_str_eq(tx_status(t[2].hash), "SUCCESS");
	ck_assert_str_eq(balance_of(vault), "500");
	/* ... and traps on chain when the reserve cannot cover it: drain the
	 * reserve between simulation and application */
	{
		struct acct other;
		struct built drain;

		acct_new(&other, 1000000000);
		build_vault(&agent, &(struct txopt){.fn = VAULT_REBALANCE, .amount = "-400"}, &t[3],
			    NULL);
		build_vault(&other,
			    &(struct txopt){.fn = VAULT_REBALANCE, .amount = "-200", .incl = 300},
			    &drain, NULL);
		expect_status(t[3].b64, "PENDING");
		expect_status(drain.b64, "PENDING");
		close_ledgers(1);
		agent.seq++;
		ck_assert_str_eq(tx_status(drain.hash), "SUCCESS");
		ck_assert_str_eq(tx_status(t[3].hash), "FAILED");
		ck_assert_int_eq(tx_result(t[3].hash).op_code, IHF_TRAPPED);
		ck_assert_str_eq(balance_of(vault), "300");
		free(drain.b64);
	}
	st = http_json("/debug/state", NULL);
	ck_assert_str_eq(jstr(st, "vault_contract"), vault);
	ck_assert_str_eq(jstr(st, "vault_reserve"), "300");
	json_decref(st);
	for (int i = 0; i < 4; i++)
		free(t[i].b64);
	sim_stop();
}
END_TEST

START_TEST(test_debug_accounts_and_vault_flag)
{
	char *body;
	json_t *st;
	static const char other[] = "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE";
	static const char g[] = "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH";

	sim_start("--ledger-ms", HOUR_MS, "--vault-contract", other, NULL);
	st = http_json("/debug/state", NULL);
	ck_assert_str_eq(jstr(st, "vault_contract"), other);
	ck_assert_int_eq(jint(st, "latest_ledger"), 100);
	json_decref(st);
	/* bad entries are refused, and nothing of the request is applied */
	ck_assert_int_eq(http("/debug/accounts",
			      "{\"accounts\":[{\"id\":"
			      "\"GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH\","
			      "\"seq\":\"5\",\"balance\":\"7\"},"
			      "{\"id\":\"GBAD\",\"seq\":\"1\",\"balance\":\"1\"}]}",
			      5000, &body),
			 400);
	ck_assert_ptr_nonnull(strstr(body, "accounts[1].id"));
	free(body);
	ck_assert_str_eq(balance_of(g), "absent");
	ck_assert_int_eq(http("/debug/accounts",
			      "{\"accounts\":[{\"id\":"
			      "\"GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH\","
			      "\"seq\":\"-1\",\"balance\":\"7\"}]}",
			      5000, &body),
			 400);
	free(body);
	json_decref(http_json("/debug/accounts",
			      "{\"accounts\":[{\"id\":"
			      "\"GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH\","
			      "\"seq\":\"1234567890122\",\"balance\":\"10000000000\"}]}"));
	/*
	 * a hand-checked account entry (GAXDYN..., 1000 XLM, seqNum
	 * 1234567890122), byte for byte
	 */
	{
		json_t *r = rpc("getLedgerEntries",
				"{\"keys\":["
				"\"AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90Mg==\"]}");
		json_t *e = json_array_get(json_object_get(r, "entries"), 0);

		ck_assert_str_eq(jstr(e, "xdr"),
				 "AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAAAAJUC+"
				 "QAAAABH3H7BMoAAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAAAAAAA");
		ck_assert_str_eq(jstr(e, "key"),
				 "AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90Mg==");
		jint(e, "lastModifiedLedgerSeq");
		json_decref(r);
	}
	sim_stop();
}
END_TEST

/* outboxd's own RPC client (common/stellar/rpc.h) parses every answer. */
static int call(struct rpc_client *c, struct rpc_request *rq, struct rpc_result *out)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int rc = rpc_call_blocking(c, rq, out, &err);

	ck_assert_msg(rc == 0, "%s: %s", rpc_method_name(rq->method), err.msg);
	return rc;
}

START_TEST(test_outboxd_rpc_client)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_config cfg = {0};
	struct rpc_client *c;
	struct rpc_request rq;
	struct rpc_result r;
	struct acct a;
	struct built t;
	char url[64], hex[65];

	sim_start("--ledger-ms", HOUR_MS, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", sim_port);
	cfg.url = url;
	c = rpc_client_new(&cfg, &err);
	ck_assert_msg(c != NULL, "%s", err.msg);
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	for (int m = 0; m < RPC_METHOD_COUNT; m++) {
		memset(&rq, 0, sizeof(rq));
		rq.method = (enum rpc_method)m;
		memcpy(rq.account, a.kp.pk, 32);
		rq.transaction = t.b64;
		for (int i = 0; i < 32; i++)
			sprintf(hex + 2 * i, "%02x", t.hash[i]);
		rq.hash = hex;
		rq.start_ledger = 100;
		call(c, &rq, &r);
		switch (rq.method) {
		case RPC_GET_HEALTH:
			ck_assert_str_eq(r.u.health.status, "healthy");
			ck_assert_int_ge(r.u.health.latest_ledger_close_time, 0);
			break;
		case RPC_GET_NETWORK:
			ck_assert_str_eq(r.u.network.passphrase, PASSPHRASE);
			break;
		case RPC_GET_LATEST_LEDGER:
			ck_assert_int_eq(r.u.latest_ledger.sequence, 100);
			ck_assert_ptr_nonnull(r.u.latest_ledger.header_xdr);
			break;
		case RPC_GET_FEE_STATS:
			ck_assert_int_eq(r.u.fee_stats.soroban.ledger_count, 0);
			break;
		case RPC_GET_ACCOUNT:
			ck_assert(r.u.account.found);
			ck_assert_int_eq(r.u.account.seq_num, a.seq);
			ck_assert_int_eq(r.u.account.balance, 1000000000);
			break;
		case RPC_SIMULATE_TRANSACTION:
			ck_assert_ptr_null(r.u.simulate.error);
			ck_assert_int_eq(r.u.simulate.n_auth, 1);
			ck_assert_int_eq(r.u.simulate.min_resource_fee, t.resource_fee);
			break;
		case RPC_SEND_TRANSACTION:
			ck_assert_int_eq(r.u.send.status, RPC_SEND_PENDING);
			ck_assert_str_eq(r.u.send.hash, hex);
			close_ledgers(1);
			break;
		case RPC_GET_TRANSACTION:
			ck_assert_int_eq(r.u.get_tx.status, RPC_TX_SUCCESS);
			ck_assert_int_eq(r.u.get_tx.ledger, 101);
			ck_assert_int_gt(r.u.get_tx.created_at, 0);
			break;
		case RPC_GET_TRANSACTIONS:
			ck_assert_int_eq(r.u.get_txs.n_txs, 1);
			ck_assert_str_eq(r.u.get_txs.txs[0].tx_hash, hex);
			ck_assert_int_gt(strlen(r.u.get_txs.cursor), 0);
			break;
		default:
			break;
		}
		rpc_result_release(&r);
	}
	rpc_client_free(c);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_expiry_proves_dead)
{
	struct acct a;
	struct built t;
	uint64_t max_time = (uint64_t)time(NULL) + 15;
	json_t *r, *st;

	/* a long queue timeout, so only the time bound can end the tx */
	sim_start("--ledger-ms", HOUR_MS, "--ledger-capacity", "1", "--queue-ledgers", "100", NULL);
	acct_new(&a, 1000000000);
	set_faults("{\"background_fee_load\": 1}");
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .max_time = max_time}, &t, NULL);
	expect_status(t.b64, "PENDING");
	close_ledgers(20); /* close times step at least 1 s per ledger */
	r = get_tx(t.hash);
	ck_assert_str_eq(jstr(r, "status"), "NOT_FOUND");
	ck_assert_int_gt(atoll(jstr(r, "latestLedgerCloseTime")), (long long)max_time);
	json_decref(r);
	st = http_json("/debug/state", NULL);
	ck_assert_int_eq(jint(st, "queue_size"), 0);
	json_decref(st);
	/* the expired hash is banned for a while, then simply too late */
	expect_status(t.b64, "TRY_AGAIN_LATER");
	close_ledgers(10);
	set_faults("{}");
	ck_assert_int_eq(expect_error(t.b64).code, TX_TOO_LATE);
	ck_assert_int_eq(max_pending(&a), 1);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_strict_simulate)
{
	struct acct a, user;
	char *e;

	sim_start("--ledger-ms", HOUR_MS, "--strict-simulate", "--vault-reserve", "500", NULL);
	acct_new(&a, 1000000000);
	acct_new(&user, 100);
	e = simulate_error(&a, VAULT_WITHDRAW, user.g, "101");
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(e, "Error(Contract, #1)"));
	free(e);
	ck_assert_ptr_null(simulate_error(&a, VAULT_WITHDRAW, user.g, "100"));
	e = simulate_error(&a, VAULT_PAY_REFERRAL, user.g, "501");
	ck_assert_ptr_nonnull(strstr(e, "Error(Contract, #1)"));
	free(e);
	e = simulate_error(&a, VAULT_DEPOSIT, user.g, "0");
	ck_assert_ptr_nonnull(strstr(e, "Error(Contract, #2)"));
	free(e);
	/* without --strict-simulate the same calls simulate fine */
	sim_stop();
	sim_start("--ledger-ms", HOUR_MS, "--vault-reserve", "500", NULL);
	acct_new(&a, 1000000000);
	ck_assert_ptr_null(simulate_error(&a, VAULT_PAY_REFERRAL, user.g, "501"));
	ck_assert_ptr_null(simulate_error(&a, VAULT_DEPOSIT, user.g, "0"));
	sim_stop();
}
END_TEST

START_TEST(test_blackhole_ends_at_max_time)
{
	struct acct a;
	struct built t, t2;
	uint64_t max_time = (uint64_t)time(NULL) + 15;
	json_t *st;

	sim_start("--ledger-ms", HOUR_MS, "--queue-ledgers", "100", NULL);
	acct_new(&a, 1000000000);
	set_faults("{\"method\":\"sendTransaction\",\"blackhole_rate\":1}");
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .max_time = max_time}, &t, NULL);
	expect_status(t.b64, "PENDING");
	set_faults("{}");
	close_ledgers(20); /* close time now past max_time: it can never land */
	st = http_json("/debug/state", NULL);
	ck_assert_int_eq(jint(st, "black_holed"), 0);
	json_decref(st);
	/* so a replacement with the same sequence number is the only one in flight */
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .amount = "9"}, &t2, NULL);
	expect_status(t2.b64, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t2.hash), "SUCCESS");
	ck_assert_str_eq(tx_status(t.hash), "NOT_FOUND");
	ck_assert_int_eq(max_pending(&a), 1);
	free(t.b64);
	free(t2.b64);
	sim_stop();
}
END_TEST

START_TEST(test_fault_timeout_on_send_processes)
{
	struct acct a;
	struct built t;
	char *params;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	set_faults("{\"method\":\"sendTransaction\",\"timeout_rate\":1}");
	params = malloc(strlen(t.b64) + 128);
	sprintf(params,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sendTransaction\",\"params\":{"
		"\"transaction\":\"%s\"}}",
		t.b64);
	ck_assert_int_eq(http("/", params, 700, NULL), -1); /* no answer */
	free(params);
	set_faults("{}");
	/* ... but the envelope was received: it is queued and lands */
	expect_status(t.b64, "DUPLICATE");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	ck_assert_int_eq(executions(t.op_ref), 1);
	free(t.b64);
	sim_stop();
}
END_TEST

/* Count the bytes of an answer, keeping only its first 64. */
struct counted {
	size_t n;
	char head[65];
};

static size_t count_data(char *d, size_t sz, size_t nm, void *u)
{
	struct counted *c = u;

	if (c->n < 64)
		memcpy(c->head + c->n, d, sz * nm < 64 - c->n ? sz * nm : 64 - c->n);
	c->n += sz * nm;
	return sz * nm;
}

/* POST body to /; the curl result, the bytes received in *got. */
static CURLcode post_counted(const char *body, long timeout_ms, struct counted *got)
{
	CURL *c = curl_easy_init();
	char url[64];
	CURLcode rc;

	memset(got, 0, sizeof(*got));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", sim_port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, count_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, got);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c);
	curl_easy_cleanup(c);
	return rc;
}

/*
 * Hostile answers: huge (64 MiB, streamed), deep (nesting no parser
 * accepts), truncated (half the announced length, then the connection is
 * cut), drip (the real answer, 16 bytes every 250 ms); a sendTransaction
 * whose answer is spoiled was still processed.
 */
START_TEST(test_fault_hostile_answers)
{
	const char *health = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getHealth\"}";
	struct counted got;
	struct acct a;
	struct built t;
	json_error_t je;
	char *body, *params;
	json_t *j;
	size_t normal;
	double t0;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	ck_assert_int_eq(http("/", health, 5000, &body), 200);
	normal = strlen(body);
	free(body);

	set_faults("{\"method\":\"getHealth\",\"huge_rate\":1}");
	ck_assert_int_eq(post_counted(health, 60000, &got), CURLE_OK);
	ck_assert_uint_eq(got.n, (size_t)64 << 20);
	ck_assert(!strncmp(got.head, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{", 34));

	set_faults("{\"method\":\"getHealth\",\"deep_rate\":1}");
	ck_assert_int_eq(http("/", health, 5000, &body), 200);
	ck_assert_uint_gt(strlen(body), 200000);
	j = json_loads(body, 0, &je);
	ck_assert_ptr_null(j); /* beyond jansson's depth limit */
	free(body);

	set_faults("{\"method\":\"getHealth\",\"truncated_rate\":1}");
	ck_assert_int_eq(post_counted(health, 5000, &got), CURLE_PARTIAL_FILE);
	ck_assert_uint_eq(got.n, normal / 2);

	set_faults("{\"method\":\"getHealth\",\"drip_rate\":1}");
	t0 = now_s();
	ck_assert_int_eq(http("/", health, 60000, &body), 200);
	/* a lower bound only: (chunks - 1) pauses of 250 ms */
	ck_assert_double_ge(now_s() - t0, (double)((normal + 15) / 16 - 1) * 0.25 - 0.05);
	j = json_loads(body, 0, &je);
	ck_assert_msg(j != NULL, "a dripped answer arrives whole: %s", body);
	ck_assert_str_eq(jstr(json_object_get(j, "result"), "status"), "healthy");
	json_decref(j);
	free(body);

	/* a spoiled answer to sendTransaction: the envelope was processed */
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	set_faults("{}");
	set_faults("{\"method\":\"sendTransaction\",\"truncated_rate\":1}");
	params = malloc(strlen(t.b64) + 128);
	sprintf(params,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sendTransaction\",\"params\":{"
		"\"transaction\":\"%s\"}}",
		t.b64);
	ck_assert_int_eq(post_counted(params, 5000, &got), CURLE_PARTIAL_FILE);
	free(params);
	set_faults("{}");
	expect_status(t.b64, "DUPLICATE");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	ck_assert_int_eq(executions(t.op_ref), 1);
	free(t.b64);
	sim_stop();
}
END_TEST

/* Re-sign an envelope's outer part after changing its bump fee. */
static char *rebump(const char *b64, int64_t fee, struct acct *payer)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct xdr_envelope env;
	uint8_t *raw;
	size_t rl;
	char *s;

	ck_assert_int_eq(xdr_envelope_decode_b64(&env, b64, strlen(b64), &raw, &rl, &err), 0);
	env.bump.fee = fee;
	env.bump.n_sigs = 0;
	ck_assert_int_eq(stellar_sign_envelope(&env, &payer->kp, network_id, NULL, &err), 0);
	ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
	free(raw);
	return s;
}

START_TEST(test_fee_bump_validity)
{
	struct acct a, payer, nobody;
	struct built t;
	uint8_t h[32];
	char *b, *bad;
	struct res d;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	acct_new(&payer, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .incl = 300}, &t, NULL);
	b = fee_bump(t.b64, &payer, t.resource_fee + 600, h);
	/* the bump's rate must not fall below the inner one's: 2 x 300 */
	bad = rebump(b, t.resource_fee + 599, &payer);
	d = expect_error(bad);
	ck_assert_int_eq(d.code, TX_INSUFFICIENT_FEE);
	ck_assert_int_eq(d.fee, t.resource_fee + 600);
	free(bad);
	/* the inner tx must be unchanged: its signature no longer matches */
	{
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct xdr_envelope env;
		uint8_t *raw;
		size_t rl;

		ck_assert_int_eq(xdr_envelope_decode_b64(&env, b, strlen(b), &raw, &rl, &err), 0);
		env.tx.cond.time_bounds.max_time += 1;
		env.bump.n_sigs = 0;
		ck_assert_int_eq(stellar_sign_envelope(&env, &payer.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(xdr_envelope_to_b64(&env, &bad), 0);
		free(raw);
		d = expect_error(bad);
		ck_assert_int_eq(d.code, TX_FEE_BUMP_INNER_FAILED);
		ck_assert_int_eq(d.inner_code, TX_BAD_AUTH);
		free(bad);
	}
	/* the fee source must sign, and must exist */
	acct_new(&nobody, 0);
	{
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct xdr_envelope env;
		uint8_t *raw;
		size_t rl;

		ck_assert_int_eq(xdr_envelope_decode_b64(&env, b, strlen(b), &raw, &rl, &err), 0);
		env.bump.n_sigs = 0;
		ck_assert_int_eq(stellar_sign_envelope(&env, &a.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(xdr_envelope_to_b64(&env, &bad), 0);
		ck_assert_int_eq(expect_error(bad).code, TX_BAD_AUTH);
		free(bad);
		free(raw);
	}
	{
		uint8_t ph[32];
		char *poor = fee_bump(t.b64, &nobody, t.resource_fee + 600, ph);

		ck_assert_int_eq(expect_error(poor).code, TX_INSUFFICIENT_BALANCE);
		free(poor);
	}
	/* the valid bump applies; its inner envelope alone can no longer */
	expect_status(b, "PENDING");
	close_ledgers(1);
	ck_assert_str_eq(tx_status(h), "SUCCESS");
	ck_assert_int_eq(expect_error(t.b64).code, TX_BAD_SEQ);
	ck_assert_int_eq(executions(t.op_ref), 1);
	free(b);
	free(t.b64);
	sim_stop();
}
END_TEST

/* An envelope whose SorobanTransactionData.resourceFee is forced to rf. */
static char *with_resource_fee(const char *b64, int64_t rf, struct acct *signer)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct xdr_envelope env;
	uint8_t *raw, *p;
	size_t rl;
	char *s;
	int i;

	ck_assert_int_eq(xdr_envelope_decode_b64(&env, b64, strlen(b64), &raw, &rl, &err), 0);
	p = (uint8_t *)env.tx.soroban.raw.p + env.tx.soroban.raw.len - 8;
	for (i = 7; i >= 0; i--, rf = (int64_t)((uint64_t)rf >> 8))
		p[i] = (uint8_t)(rf & 0xff);
	env.n_sigs = 0;
	ck_assert_int_eq(stellar_sign_envelope(&env, &signer->kp, network_id, NULL, &err), 0);
	ck_assert_int_eq(xdr_envelope_to_b64(&env, &s), 0);
	free(raw);
	return s;
}

START_TEST(test_hostile_fees)
{
	struct acct a, payer;
	struct built t;
	char *huge, *neg, *bump, *outer;
	uint8_t h[32];
	struct res d;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	acct_new(&a, 1000000000);
	acct_new(&payer, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	huge = with_resource_fee(t.b64, INT64_MAX, &a);
	neg = with_resource_fee(t.b64, -1, &a);
	ck_assert_int_eq(expect_error(huge).code, TX_SOROBAN_INVALID);
	ck_assert_int_eq(expect_error(neg).code, TX_SOROBAN_INVALID);
	/* inside a bump a resource fee above the inner fee is allowed (P23):
	 * inner R = INT64_MAX, outer fee = INT64_MAX - no overflow, a sane code */
	bump = fee_bump(t.b64, &payer, t.resource_fee + 200, h);
	{
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct xdr_envelope env;
		uint8_t *raw, *p, ih[32];
		size_t rl;
		int64_t rf = INT64_MAX;

		ck_assert_int_eq(xdr_envelope_decode_b64(&env, bump, strlen(bump), &raw, &rl, &err),
				 0);
		p = (uint8_t *)env.tx.soroban.raw.p + env.tx.soroban.raw.len - 8;
		for (int k = 7; k >= 0; k--, rf >>= 8)
			p[k] = (uint8_t)(rf & 0xff);
		env.tx.soroban.resource_fee = INT64_MAX;
		ck_assert_int_eq(xdr_envelope_inner_hash(&env, network_id, ih), 0);
		ck_assert_int_eq(stellar_sign_decorated(&a.kp, ih, &env.sigs[0]), 0);
		env.bump.fee = INT64_MAX;
		env.bump.n_sigs = 0;
		ck_assert_int_eq(stellar_sign_envelope(&env, &payer.kp, network_id, NULL, &err), 0);
		ck_assert_int_eq(xdr_envelope_to_b64(&env, &outer), 0);
		free(raw);
	}
	d = expect_error(outer);
	ck_assert_int_eq(d.code, TX_INSUFFICIENT_FEE); /* outerIncl = 0 */
	ck_assert_int_eq(d.fee, INT64_MAX);            /* saturated, not wrapped */
	free(outer);
	free(bump);
	free(huge);
	free(neg);
	free(t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_ingest_lag_single_view)
{
	struct acct a;
	struct built t, reuse, next;
	struct acct_view v;
	json_int_t head, landed;
	char params[128];
	json_t *r, *ll;
	struct res d;

	sim_start("--ledger-ms", HOUR_MS, "--start-ledger", "100", NULL);
	set_faults("{\"ingest_lag_ledgers\":3}");
	/* while fewer than 3 ledgers follow genesis, the view is genesis */
	ck_assert_int_eq(close_ledgers(2), 102);
	expect_view(100);
	/* an account created now, at the head, is not in the view yet */
	acct_new(&a, 1000000000);
	v = read_account(&a);
	ck_assert(!v.found);
	ck_assert_int_eq(v.latest, 100);
	ck_assert_int_eq(close_ledgers(3), 105);
	v = read_account(&a);
	ck_assert(v.found);
	ck_assert_int_eq(v.latest, 102);
	ck_assert_int_eq(v.seq, a.seq);
	ck_assert_int_eq(v.last_modified, 102);
	/* sendTransaction runs at the head but reports the view's ledger */
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .amount = "2500"}, &t, NULL);
	r = send_tx(t.b64);
	ck_assert_str_eq(jstr(r, "status"), "PENDING");
	ck_assert_int_eq(jint(r, "latestLedger"), 102);
	ll = rpc("getLatestLedger", NULL);
	ck_assert_str_eq(jstr(r, "latestLedgerCloseTime"), jstr(ll, "closeTime"));
	json_decref(ll);
	json_decref(r);
	landed = close_ledgers(1);
	/* it landed at the head: NOT_FOUND until the view reaches its ledger */
	for (head = landed; head < landed + 3; head = close_ledgers(1)) {
		r = get_tx(t.hash);
		ck_assert_str_eq(jstr(r, "status"), "NOT_FOUND");
		ck_assert_int_eq(jint(r, "latestLedger"), head - 3);
		json_decref(r);
		expect_view(head - 3);
		r = rpc("getFeeStats", NULL);
		ck_assert_str_eq(
			jstr(json_object_get(r, "sorobanInclusionFee"), "transactionCount"), "0");
		json_decref(r);
		v = read_account(&a);
		ck_assert_int_eq(v.latest, head - 3);
		ck_assert_int_eq(v.seq, a.seq);
		ck_assert_int_eq(v.balance, 1000000000);
		if (head != landed)
			continue;
		/* ...while the queue knows the sequence number is used */
		build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .seq = a.seq + 1}, &reuse,
			    NULL);
		ck_assert_int_eq(expect_error(reuse.b64).code, TX_BAD_SEQ);
		build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT, .seq = a.seq + 2}, &next,
			    NULL);
		expect_status(next.b64, "PENDING");
	}
	/* the view has ingested its ledger (but not the next one's tx) */
	r = get_tx(t.hash);
	ck_assert_str_eq(jstr(r, "status"), "SUCCESS");
	ck_assert_int_eq(jint(r, "ledger"), landed);
	ck_assert_int_eq(jint(r, "latestLedger"), landed);
	json_decref(r);
	ck_assert_str_eq(tx_status(next.hash), "NOT_FOUND");
	d = tx_result(t.hash);
	v = read_account(&a);
	ck_assert_int_eq(v.seq, a.seq + 1);
	ck_assert_int_eq(v.last_modified, landed);
	ck_assert_int_eq(v.balance, 1000000000 - d.fee + 2500);
	r = rpc("getFeeStats", NULL);
	ck_assert_str_eq(jstr(json_object_get(r, "sorobanInclusionFee"), "transactionCount"), "1");
	json_decref(r);
	/* getTransactions serves ledgers up to the view only */
	snprintf(params, sizeof(params), "{\"startLedger\":%lld}", (long long)landed + 1);
	r = rpc_raw("getTransactions", params);
	ck_assert_int_eq(jint(json_object_get(r, "error"), "code"), -32602);
	json_decref(r);
	snprintf(params, sizeof(params), "{\"startLedger\":%lld}", (long long)landed);
	r = rpc("getTransactions", params);
	ck_assert_int_eq(json_array_size(json_object_get(r, "transactions")), 1);
	ck_assert_int_eq(jint(r, "latestLedger"), landed);
	json_decref(r);
	/* close times are the view's: strictly behind the head's */
	r = rpc("getHealth", NULL);
	ck_assert_int_lt(atoll(jstr(r, "latestLedgerCloseTime")),
			 debug_state_int("latest_close_time"));
	json_decref(r);
	ck_assert_int_eq(debug_state_int("ingest_lag_ledgers"), 3);
	ck_assert_int_eq(debug_state_int("ingest_lag_alt_ledgers"), -1);
	/* {} clears it: the head again */
	set_faults("{}");
	expect_view(landed + 3);
	ck_assert_str_eq(tx_status(next.hash), "SUCCESS");
	ck_assert_int_eq(read_account(&a).seq, a.seq + 2);
	ck_assert_int_eq(debug_state_int("ingest_lag_ledgers"), 0);
	/* a cursor from the head, replayed to a node behind it, keeps its place */
	snprintf(params, sizeof(params), "{\"startLedger\":%lld}", (long long)landed);
	r = rpc("getTransactions", params);
	ck_assert_int_eq(json_array_size(json_object_get(r, "transactions")), 2);
	snprintf(params, sizeof(params), "{\"pagination\":{\"cursor\":\"%s\"}}", jstr(r, "cursor"));
	json_decref(r);
	set_faults("{\"ingest_lag_ledgers\":3}");
	r = rpc("getTransactions", params);
	ck_assert_int_eq(json_array_size(json_object_get(r, "transactions")), 0);
	ck_assert_ptr_nonnull(strstr(params, jstr(r, "cursor")));
	ck_assert_int_eq(jint(r, "latestLedger"), landed);
	json_decref(r);
	free(t.b64);
	free(reuse.b64);
	free(next.b64);
	sim_stop();
}
END_TEST

START_TEST(test_ingest_lag_retention)
{
	struct acct a;
	struct built t;
	json_int_t landed, head;
	json_t *r, *h;

	sim_start("--ledger-ms", HOUR_MS, "--start-ledger", "100", "--retention-ledgers", "3",
		  NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t, NULL);
	expect_status(t.b64, "PENDING");
	landed = close_ledgers(1);
	set_faults("{\"ingest_lag_ledgers\":2}");
	/* the view serves its own retention window, view - 2 .. view */
	for (head = close_ledgers(1); head <= landed + 5; head = close_ledgers(1)) {
		json_int_t view = head - 2, oldest = view - 2 < 100 ? 100 : view - 2;
		bool found = landed <= view && oldest <= landed;

		r = get_tx(t.hash);
		ck_assert_int_eq(jint(r, "latestLedger"), view);
		ck_assert_int_eq(jint(r, "oldestLedger"), oldest);
		ck_assert_str_eq(jstr(r, "status"), found ? "SUCCESS" : "NOT_FOUND");
		h = rpc("getHealth", NULL);
		ck_assert_int_eq(jint(h, "oldestLedger"), oldest);
		ck_assert_str_eq(jstr(h, "oldestLedgerCloseTime"),
				 jstr(r, "oldestLedgerCloseTime"));
		if (oldest < view)
			ck_assert_int_lt(atoll(jstr(h, "oldestLedgerCloseTime")),
					 atoll(jstr(h, "latestLedgerCloseTime")));
		json_decref(h);
		json_decref(r);
		if (head != landed + 4)
			continue;
		/* the head's own window has already let it go */
		set_faults("{}");
		ck_assert_str_eq(tx_status(t.hash), "NOT_FOUND");
		set_faults("{\"ingest_lag_ledgers\":2}");
		ck_assert_str_eq(tx_status(t.hash), "SUCCESS");
	}
	free(t.b64);
	sim_stop();
}
END_TEST

/* What two views (lags 1 and 4) answer, checked against the chain's facts. */
struct two_views {
	struct acct a;
	struct built t;
	json_int_t landed;       /* ledger t landed in */
	char close_time[16][24]; /* of ledgers 100.. */
};

static const char *close_time_of(const struct two_views *w, json_int_t ledger)
{
	ck_assert(ledger >= 100 && ledger < 116);
	return w->close_time[ledger - 100];
}

/* One read request; checks it is self-consistent; returns its view. */
static json_int_t two_views_read(const struct two_views *w, int method)
{
	json_int_t view;
	bool has_tx;
	json_t *r;

	if (method == 3) {
		struct acct_view v = read_account(&w->a);

		ck_assert_int_eq(v.seq, w->a.seq + (v.latest >= w->landed));
		return v.latest;
	}
	if (method == 0)
		r = rpc("getHealth", NULL);
	else if (method == 1)
		r = rpc("getLatestLedger", NULL);
	else if (method == 2)
		r = rpc("getFeeStats", NULL);
	else if (method == 4)
		r = get_tx(w->t.hash);
	else
		r = rpc("getTransactions", "{\"startLedger\":100}");
	view = jint(r, method == 1 ? "sequence" : "latestLedger");
	has_tx = view >= w->landed;
	if (method == 0 || method == 4)
		ck_assert_str_eq(jstr(r, "latestLedgerCloseTime"), close_time_of(w, view));
	if (method == 1)
		ck_assert_str_eq(jstr(r, "closeTime"), close_time_of(w, view));
	if (method == 2)
		ck_assert_str_eq(
			jstr(json_object_get(r, "sorobanInclusionFee"), "transactionCount"),
			has_tx ? "1" : "0");
	if (method == 4)
		ck_assert_str_eq(jstr(r, "status"), has_tx ? "SUCCESS" : "NOT_FOUND");
	if (method == 5) {
		ck_assert_int_eq(json_array_size(json_object_get(r, "transactions")), has_tx);
		ck_assert_int_eq(jint(r, "latestLedgerCloseTimestamp"),
				 atoll(close_time_of(w, view)));
	}
	json_decref(r);
	return view;
}

START_TEST(test_ingest_lag_two_views)
{
	static const char *const names[] = {"getHealth",      "getLatestLedger",
					    "getFeeStats",    "getLedgerEntries",
					    "getTransaction", "getTransactions"};
	struct two_views w;
	int seen[6][2] = {{0}}, round, m;
	json_int_t head = 100;
	json_t *r;

	sim_start("--ledger-ms", HOUR_MS, "--start-ledger", "100", "--seed", "7", NULL);
	acct_new(&w.a, 1000000000);
	/* ledgers 100..108 with their close times; t lands in 106 */
	for (;;) {
		r = rpc("getLatestLedger", NULL);
		snprintf(w.close_time[head - 100], sizeof(w.close_time[0]), "%s",
			 jstr(r, "closeTime"));
		json_decref(r);
		if (head == 105) {
			build_vault(&w.a, &(struct txopt){.fn = VAULT_DEPOSIT}, &w.t, NULL);
			expect_status(w.t.b64, "PENDING");
		}
		if (head == 108)
			break;
		head = close_ledgers(1);
	}
	w.landed = 106;
	ck_assert_str_eq(tx_status(w.t.hash), "SUCCESS");
	/* view A is 107 (has t), view B 104 (has not) */
	set_faults("{\"ingest_lag_ledgers\":1,\"ingest_lag_alt_ledgers\":4}");
	for (round = 0; round < 30; round++) {
		for (m = 0; m < 6; m++) {
			json_int_t view = two_views_read(&w, m);

			ck_assert_msg(view == 107 || view == 104, "%s: view %lld", names[m],
				      (long long)view);
			seen[m][view == 107]++;
		}
		/* submission reports view A, always */
		r = send_tx(w.t.b64);
		ck_assert_str_eq(jstr(r, "status"), "ERROR");
		ck_assert_int_eq(jint(r, "latestLedger"), 107);
		json_decref(r);
	}
	for (m = 0; m < 6; m++)
		ck_assert_msg(seen[m][0] && seen[m][1], "%s: views A %d, B %d", names[m],
			      seen[m][1], seen[m][0]);
	ck_assert_int_eq(debug_state_int("ingest_lag_ledgers"), 1);
	ck_assert_int_eq(debug_state_int("ingest_lag_alt_ledgers"), 4);
	r = http_json("/debug/faults", NULL);
	ck_assert_int_eq(jint(r, "ingest_lag_ledgers"), 1);
	ck_assert_int_eq(jint(r, "ingest_lag_alt_ledgers"), 4);
	json_decref(r);
	set_faults("{}");
	for (m = 0; m < 6; m++)
		ck_assert_int_eq(two_views_read(&w, m), 108);
	r = http_json("/debug/faults", NULL);
	ck_assert_int_eq(json_object_size(r), 0);
	json_decref(r);
	ck_assert_int_eq(debug_state_int("ingest_lag_alt_ledgers"), -1);
	free(w.t.b64);
	sim_stop();
}
END_TEST

START_TEST(test_ingest_lag_validation)
{
	json_t *r;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	set_faults("{\"ingest_lag_ledgers\":2}");
	expect_fault_refused("{\"ingest_lag_ledgers\":1001}", "ingest_lag_ledgers");
	expect_fault_refused("{\"ingest_lag_ledgers\":-1}", "ingest_lag_ledgers");
	expect_fault_refused("{\"ingest_lag_ledgers\":1.5}", "ingest_lag_ledgers");
	expect_fault_refused("{\"ingest_lag_ledgers\":\"3\"}", "ingest_lag_ledgers");
	expect_fault_refused("{\"ingest_lag_ledgers\":null}", "ingest_lag_ledgers");
	expect_fault_refused("{\"ingest_lag_alt_ledgers\":3}", "ingest_lag_alt_ledgers");
	expect_fault_refused("{\"ingest_lag_ledgers\":1,\"ingest_lag_alt_ledgers\":1001}",
			     "ingest_lag_alt_ledgers");
	expect_fault_refused("{\"ingest_lag_ledgers\":5,\"ingest_lag_ledgerz\":1}",
			     "ingest_lag_ledgerz");
	expect_fault_refused("{\"ingest_lag_ledgers\":5,\"method\":\"getHealth\",\"delay_ms\":-1}",
			     "delay_ms");
	/* nothing changed */
	ck_assert_int_eq(debug_state_int("ingest_lag_ledgers"), 2);
	ck_assert_int_eq(debug_state_int("ingest_lag_alt_ledgers"), -1);
	r = http_json("/debug/faults", NULL);
	ck_assert_int_eq(json_object_size(r), 1);
	ck_assert_int_eq(jint(r, "ingest_lag_ledgers"), 2);
	json_decref(r);
	/* combined with a method entry; a body of other global knobs keeps it */
	set_faults("{\"ingest_lag_ledgers\":1000,\"method\":\"getHealth\",\"delay_ms\":0}");
	set_faults("{\"background_fee_load\":3}");
	r = http_json("/debug/faults", NULL);
	ck_assert_int_eq(jint(r, "ingest_lag_ledgers"), 1000);
	ck_assert(json_is_object(json_object_get(r, "getHealth")));
	json_decref(r);
	/* a lag without the alt field is one view again */
	set_faults("{\"ingest_lag_ledgers\":0,\"ingest_lag_alt_ledgers\":4}");
	ck_assert_int_eq(debug_state_int("ingest_lag_alt_ledgers"), 4);
	set_faults("{\"ingest_lag_ledgers\":0}");
	ck_assert_int_eq(debug_state_int("ingest_lag_alt_ledgers"), -1);
	set_faults("{}");
	ck_assert_int_eq(debug_state_int("ingest_lag_ledgers"), 0);
	ck_assert_int_eq(debug_state_int("background_fee_load"), 0);
	sim_stop();
}
END_TEST

START_TEST(test_ingest_lag_history_window)
{
	struct acct a;
	struct built t1, t2;
	struct acct_view v;
	json_int_t l1, l2;
	json_t *h;

	/* the shortest retention: the history kept is what a 1000-ledger lag needs */
	sim_start("--ledger-ms", HOUR_MS, "--start-ledger", "100", "--retention-ledgers", "1",
		  "--fee-window-soroban", "1", "--fee-window-classic", "1", NULL);
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &t1, NULL);
	expect_status(t1.b64, "PENDING");
	l1 = close_ledgers(1);
	close_ledgers(1000);
	close_ledgers(100);
	/*
	 * A second change long after the first prunes the states before it.
	 * 1100 manual closes put the chain's clock ~1100 s ahead of the wall
	 * clock: the time bound comes from the chain's.
	 */
	build_vault(
		&a,
		&(struct txopt){.fn = VAULT_DEPOSIT,
				.seq = a.seq + 2,
				.max_time = (uint64_t)debug_state_int("latest_close_time") + 300},
		&t2, NULL);
	expect_status(t2.b64, "PENDING");
	l2 = close_ledgers(1);
	ck_assert_int_eq(l2, l1 + 1101);
	set_faults("{\"ingest_lag_ledgers\":1000}");
	v = read_account(&a);
	ck_assert_int_eq(v.latest, l2 - 1000);
	ck_assert(v.found);
	ck_assert_int_eq(v.seq, a.seq + 1);
	ck_assert_int_eq(v.last_modified, l1);
	h = rpc("getHealth", NULL);
	ck_assert_int_eq(jint(h, "oldestLedger"), l2 - 1000);
	ck_assert_int_gt(atoll(jstr(h, "oldestLedgerCloseTime")), 1700000000);
	json_decref(h);
	expect_view(l2 - 1000);
	ck_assert_str_eq(tx_status(t1.hash), "NOT_FOUND");
	ck_assert_str_eq(tx_status(t2.hash), "NOT_FOUND");
	set_faults("{}");
	v = read_account(&a);
	ck_assert_int_eq(v.seq, a.seq + 2);
	ck_assert_int_eq(v.last_modified, l2);
	ck_assert_str_eq(tx_status(t2.hash), "SUCCESS");
	free(t1.b64);
	free(t2.b64);
	sim_stop();
}
END_TEST

/* Base64 to bytes (bounded by the caller's buffer). */
static size_t unb64(const char *b64, uint8_t *out, size_t cap)
{
	size_t n;

	ck_assert_int_eq(xdr_b64_decode(b64, strlen(b64), out, cap, &n, "b64", NULL), 0);
	return n;
}

/* 64 hex characters to 32 bytes. */
static void unhex32(const char *s, uint8_t out[32])
{
	unsigned v;

	ck_assert_int_eq(strlen(s), 64);
	for (int i = 0; i < 32; i++) {
		ck_assert_int_eq(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/* Does b hold exactly these XDR u32 words? */
static bool xdr_words_eq(const uint8_t *b, size_t len, const uint32_t *w, size_t n)
{
	size_t k;

	if (len != 4 * n)
		return false;
	for (k = 0; k < n; k++)
		if ((uint32_t)be32(b + 4 * k) != w[k])
			return false;
	return true;
}

START_TEST(test_ledger_and_tx_meta)
{
	uint8_t hdr[1024], meta[2048], id[32], h[32];
	static const uint32_t ok_meta[] = {4, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, SCV_VOID, 0, 0};
	static const uint32_t failed_meta[] = {4, 0, 0, 0, 0, 1, 0, 0, 0, 0};
	struct acct a;
	struct built ok, bad;
	size_t nh, nm, i, n;
	json_t *r;

	sim_start("--ledger-ms", HOUR_MS, NULL);
	close_ledgers(2);
	/*
	 * getLatestLedger: id = SHA-256 of headerXdr; metadataXdr is a
	 * LedgerCloseMeta v1 holding that header and the previous ledger's hash.
	 */
	r = rpc("getLatestLedger", NULL);
	nh = unb64(jstr(r, "headerXdr"), hdr, sizeof(hdr));
	nm = unb64(jstr(r, "metadataXdr"), meta, sizeof(meta));
	unhex32(jstr(r, "id"), id);
	crypto_hash_sha256(h, hdr, nh);
	ck_assert(!memcmp(h, id, 32));
	ck_assert_int_eq(be32(meta), 1);
	ck_assert_int_eq(be32(meta + 4), 0);
	ck_assert(!memcmp(meta + 8, id, 32));
	ck_assert(!memcmp(meta + 40, hdr, nh));
	ck_assert_int_eq(be32(meta + 40 + nh), 0);
	ck_assert_int_eq(be32(meta + 44 + nh), 1);
	ck_assert(!memcmp(meta + 48 + nh, hdr + 4, 32)); /* previousLedgerHash */
	ck_assert_int_eq(nm, 48 + nh + 32 + 4 + 8 + 12 + 12 + 8 + 8);
	json_decref(r);
	/* resultMetaXdr: TransactionMeta v4, returnValue SCV_VOID on success */
	acct_new(&a, 1000000000);
	build_vault(&a, &(struct txopt){.fn = VAULT_DEPOSIT}, &ok, NULL);
	expect_status(ok.b64, "PENDING");
	close_ledgers(1);
	a.seq++;
	build_vault(&a, &(struct txopt){.fn = VAULT_WITHDRAW, .amount = "999999999999"}, &bad,
		    NULL);
	expect_status(bad.b64, "PENDING");
	close_ledgers(1);
	for (i = 0; i < 2; i++) {
		r = get_tx(i ? bad.hash : ok.hash);
		ck_assert_str_eq(jstr(r, "status"), i ? "FAILED" : "SUCCESS");
		n = unb64(jstr(r, "resultMetaXdr"), meta, sizeof(meta));
		ck_assert(i ? xdr_words_eq(meta, n, failed_meta, 10)
			    : xdr_words_eq(meta, n, ok_meta, 14));
		json_decref(r);
	}
	free(ok.b64);
	free(bad.b64);
	sim_stop();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stellar_sim");
	TCase *tc = tcase_create("sim");

	tcase_add_unchecked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_read_methods);
	tcase_add_test(tc, test_debug_off_and_timer);
	tcase_add_test(tc, test_deposit_executes);
	tcase_add_test(tc, test_accounts_file);
	tcase_add_test(tc, test_rejections);
	tcase_add_test(tc, test_no_account);
	tcase_add_test(tc, test_fee_bump_rules);
	tcase_add_test(tc, test_fee_bump_validity);
	tcase_add_test(tc, test_hostile_fees);
	tcase_add_test(tc, test_drop_and_ban);
	tcase_add_test(tc, test_surge_pricing);
	tcase_add_test(tc, test_fee_stats_move_with_load);
	tcase_add_test(tc, test_withdraw_beyond_balance_fails);
	tcase_add_test(tc, test_missing_auth_traps);
	tcase_add_test(tc, test_fault_delay_and_timeout);
	tcase_add_test(tc, test_fault_5xx_garbage_rates);
	tcase_add_test(tc, test_fault_try_again_later_and_blackhole);
	tcase_add_test(tc, test_queue_full_evicts_lowest);
	tcase_add_test(tc, test_get_transactions_pages);
	tcase_add_test(tc, test_retention_window);
	tcase_add_test(tc, test_vault_rebalance_and_referral);
	tcase_add_test(tc, test_debug_accounts_and_vault_flag);
	tcase_add_test(tc, test_outboxd_rpc_client);
	tcase_add_test(tc, test_expiry_proves_dead);
	tcase_add_test(tc, test_strict_simulate);
	tcase_add_test(tc, test_blackhole_ends_at_max_time);
	tcase_add_test(tc, test_fault_timeout_on_send_processes);
	tcase_add_test(tc, test_fault_hostile_answers);
	tcase_add_test(tc, test_ledger_and_tx_meta);
	tcase_add_test(tc, test_ingest_lag_single_view);
	tcase_add_test(tc, test_ingest_lag_retention);
	tcase_add_test(tc, test_ingest_lag_two_views);
	tcase_add_test(tc, test_ingest_lag_validation);
	tcase_add_test(tc, test_ingest_lag_history_window);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
