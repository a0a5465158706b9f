/*
 * gen_c.c - interop_gen: builds and signs random transactions with outboxd's
 * C layer (txbuild/sign) and prints one JSON line per transaction: the signed
 * envelope (base64), its hash as C computed it, and the fields as the
 * generator *intended* them (from its random inputs, not from decoding), in
 * the normalized form tests/interop/interop.js compares with what the
 * official JS SDK decodes.
 *
 *	interop_gen COUNT SEED PASSPHRASE
 *
 * Deterministic for a given SEED (splitmix64), so a failure reproduces.
 * Covers vault calls (all four functions, i128 edges, account or contract
 * user, random Soroban data and auth entries passed through as base64) and
 * native payments (G or M accounts, every memo type), about a third wrapped
 * in fee bumps at or above the minimum fee.
 */
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/stellar/txbuild.h"
#include "common/stellar/xdr.h"

#include <inttypes.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static json_t *hexj(const uint8_t *p, size_t n)
{
	char s[2 * 256 + 1];
	for (size_t i = 0; i < n && i < 256; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * (n < 256 ? n : 256)] = '\0';
	return json_string(s);
}

static json_t *u64j(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	return json_string(b);
}

static json_t *i64j(int64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRId64, v);
	return json_string(b);
}

static void die(const char *what, const struct outbox_error *err)
{
	fprintf(stderr, "interop_gen: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

struct key {
	struct stellar_keypair kp;
	char g[STRKEY_BUF];
};

static void new_key(struct key *k)
{
	uint8_t seed[32];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	rnd_bytes(seed, 32);
	if (stellar_keypair_from_seed(&k->kp, seed, &err))
		die("keypair", &err);
	sodium_memzero(seed, sizeof(seed));
	stellar_keypair_address(&k->kp, k->g);
}

/* G..., or M... over the same key with a random id (when allowed). */
static void account_str(const struct key *k, bool muxed, char out[STRKEY_BUF])
{
	if (muxed)
		strkey_encode_muxed(k->kp.pk, below(4) ? rnd() : (below(2) ? 0 : UINT64_MAX), out);
	else
		strcpy(out, k->g);
}

static uint64_t rnd_u64_edge(void)
{
	switch (below(6)) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return below(1u << 31);
	default:
		return rnd();
	}
}

static int64_t rnd_seq(void)
{
	switch (below(5)) {
	case 0:
		return 1;
	case 1:
		return INT64_MAX;
	default:
		return (int64_t)(rnd() >> 1) | 1;
	}
}

static void rnd_i128(int64_t *hi, uint64_t *lo)
{
	switch (below(8)) {
	case 0:
		*hi = INT64_MIN, *lo = 0;
		return;
	case 1:
		*hi = INT64_MAX, *lo = UINT64_MAX;
		return;
	case 2:
		*hi = -1, *lo = UINT64_MAX;
		return;
	case 3:
		*hi = 0, *lo = below(2);
		return;
	case 4:
		*hi = 0, *lo = rnd();
		return;
	case 5:
		*hi = -1, *lo = rnd() | (1ULL << 63);
		return;
	default:
		*hi = (int64_t)rnd(), *lo = rnd();
	}
}

/* Random SorobanTransactionData (footprint: contract instance, source account). */
static char *rnd_soroban_data(const uint8_t contract[32], const uint8_t account[32],
			      int64_t resource_fee, json_t *expect)
{
	struct xdr_writer w;
	uint32_t ins = (uint32_t)rnd(), rd = (uint32_t)rnd(), wr = (uint32_t)rnd();
	uint32_t n_ro = (uint32_t)below(3), n_rw = (uint32_t)below(3);
	char *b64;

	xdr_writer_init(&w, 65536);
	if (below(4) == 0) { /* ext v1: archived entry indexes */
		uint32_t n = (uint32_t)below(3);
		xdr_put_u32(&w, 1);
		xdr_put_u32(&w, n);
		for (uint32_t i = 0; i < n; i++)
			xdr_put_u32(&w, (uint32_t)below(8));
	} else {
		xdr_put_u32(&w, 0);
	}
	xdr_put_u32(&w, n_ro);
	for (uint32_t i = 0; i < n_ro; i++) {
		/* CONTRACT_DATA: contract, SCV_LEDGER_KEY_CONTRACT_INSTANCE, PERSISTENT */
		xdr_put_u32(&w, 6);
		xdr_put_u32(&w, 1);
		xdr_put_fixed(&w, contract, 32);
		xdr_put_u32(&w, 20);
		xdr_put_u32(&w, 1);
	}
	xdr_put_u32(&w, n_rw);
	for (uint32_t i = 0; i < n_rw; i++) {
		xdr_put_u32(&w, 0); /* ACCOUNT */
		xdr_put_u32(&w, 0);
		xdr_put_fixed(&w, account, 32);
	}
	xdr_put_u32(&w, ins);
	xdr_put_u32(&w, rd);
	xdr_put_u32(&w, wr);
	xdr_put_i64(&w, resource_fee);
	if (w.status)
		die("soroban data", NULL);
	b64 = xdr_b64_encode(w.buf, w.len);
	xdr_writer_release(&w);
	json_object_set_new(expect, "resource_fee", i64j(resource_fee));
	json_object_set_new(expect, "instructions", json_integer(ins));
	json_object_set_new(expect, "disk_read_bytes", json_integer(rd));
	json_object_set_new(expect, "write_bytes", json_integer(wr));
	json_object_set_new(expect, "read_only", json_integer(n_ro));
	json_object_set_new(expect, "read_write", json_integer(n_rw));
	return b64;
}

/* A SOURCE_ACCOUNT auth entry authorizing fn(args) on contract. */
static char *rnd_auth(const uint8_t contract[32], const char *fn, const struct xdr_tx *tx)
{
	struct xdr_writer w;
	char *b64;
	uint32_t sub = (uint32_t)below(2);

	xdr_writer_init(&w, 65536);
	xdr_put_u32(&w, 0); /* SOROBAN_CREDENTIALS_SOURCE_ACCOUNT */
	for (uint32_t level = 0; level <= sub; level++) {
		xdr_put_u32(&w, 0); /* CONTRACT_FN */
		xdr_put_u32(&w, 1);
		xdr_put_fixed(&w, contract, 32);
		xdr_put_var(&w, fn, strlen(fn), 32);
		xdr_put_u32(&w, tx->n_args);
		for (uint32_t i = 0; i < tx->n_args; i++)
			xdr_put_scval(&w, &tx->args[i]);
		xdr_put_u32(&w, level < sub ? 1 : 0); /* one nested sub-invocation, then none */
	}
	if (w.status)
		die("auth", NULL);
	b64 = xdr_b64_encode(w.buf, w.len);
	xdr_writer_release(&w);
	return b64;
}

static json_t *args_json(const struct xdr_tx *tx, const char *user_str, bool has_user,
			 const char *amount, const uint8_t op_ref[32])
{
	json_t *a = json_array(), *v;

	if (has_user) {
		v = json_object();
		json_object_set_new(v, "type", json_string("address"));
		json_object_set_new(v, "value", json_string(user_str));
		json_array_append_new(a, v);
	}
	v = json_object();
	json_object_set_new(v, "type", json_string("i128"));
	json_object_set_new(v, "value", json_string(amount));
	json_array_append_new(a, v);
	v = json_object();
	json_object_set_new(v, "type", json_string("bytes"));
	json_object_set_new(v, "value", hexj(op_ref, 32));
	json_array_append_new(a, v);
	(void)tx;
	return a;
}

/* Builds a vault call into b; fills the expected tx fields into ex. */
static void gen_vault(struct txbuild *b, const struct key *src, json_t *ex, json_t *extra)
{
	static const char *const fns[] = {"deposit", "withdraw", "rebalance", "pay_referral"};
	struct txbuild_source s = {0};
	struct txbuild_vault_call c = {0};
	struct txbuild_sim sim = {0};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t cid[32], user[32], op_ref[32];
	char cstr[STRKEY_BUF], ustr[STRKEY_BUF], amount[XDR_I128_DEC_BUF], key[65];
	char *auth[2] = {NULL, NULL}, *td;
	int64_t hi, r;
	uint64_t lo, incl;
	size_t klen = 1 + below(64);
	json_t *op = json_object(), *sd = json_object();

	rnd_bytes(cid, 32);
	strkey_encode_contract(cid, cstr);
	rnd_bytes(user, 32);
	if (below(4) == 0)
		strkey_encode_contract(user, ustr);
	else
		strkey_encode_account(user, ustr);
	rnd_i128(&hi, &lo);
	xdr_i128_format(hi, lo, amount);
	for (size_t i = 0; i < klen; i++)
		key[i] = (char)(0x21 + below(94));
	key[klen] = '\0';
	crypto_hash_sha256(op_ref, (const uint8_t *)key, klen);

	r = below(3) == 0 ? 0 : (int64_t)below(100000000);
	incl = below(4) == 0 ? (below(2) ? 0 : UINT32_MAX - (uint64_t)r) : below(1000000);
	s.account = src->g;
	s.seq_num = rnd_seq();
	s.fee = (uint32_t)incl;
	s.min_time = below(3) ? 0 : rnd_u64_edge();
	s.max_time = below(4) == 0 ? 0 : s.min_time + below(UINT64_MAX - s.min_time);
	c.contract = cstr;
	c.fn = (enum vault_fn)below(4);
	c.account = ustr;
	c.amount = amount;
	c.idempotency_key = key;
	c.idempotency_key_len = klen;

	/* First the simulation request (args only), to build the matching auth entries. */
	if (txbuild_vault(b, &s, &c, NULL, &err))
		die("vault (sim request)", &err);
	size_t n_auth = below(3);
	for (size_t i = 0; i < n_auth; i++)
		auth[i] = rnd_auth(cid, fns[c.fn], &b->env.tx);
	td = rnd_soroban_data(cid, src->kp.pk, r, sd);
	sim.transaction_data = td;
	sim.auth = (const char *const *)auth;
	sim.n_auth = n_auth;
	if (txbuild_vault(b, &s, &c, &sim, &err))
		die("vault", &err);

	json_object_set_new(ex, "source", json_string(src->g));
	json_object_set_new(ex, "fee", u64j(incl + (uint64_t)r));
	json_object_set_new(ex, "seq_num", i64j(s.seq_num));
	json_t *tb = json_object();
	json_object_set_new(tb, "min_time", u64j(s.min_time));
	json_object_set_new(tb, "max_time", u64j(s.max_time));
	json_object_set_new(ex, "time_bounds", tb);
	json_t *memo = json_object();
	json_object_set_new(memo, "type", json_string("none"));
	json_object_set_new(ex, "memo", memo);
	json_object_set_new(op, "source", json_null());
	json_object_set_new(op, "type", json_string("invoke_host_function"));
	json_object_set_new(op, "contract", json_string(cstr));
	json_object_set_new(op, "function", json_string(fns[c.fn]));
	json_object_set_new(op, "args",
			    args_json(&b->env.tx, ustr, c.fn != VAULT_REBALANCE, amount, op_ref));
	json_object_set_new(op, "auth_entries", json_integer((json_int_t)n_auth));
	json_t *ops = json_array();
	json_array_append_new(ops, op);
	json_object_set_new(ex, "operations", ops);
	json_object_set_new(ex, "soroban_data", sd);
	json_object_set_new(extra, "idempotency_key", json_string(key));
	free(td);
	for (size_t i = 0; i < n_auth; i++)
		free(auth[i]);
}

static uint8_t memo_text[28];

static void gen_payment(struct txbuild *b, const struct key *src, json_t *ex)
{
	struct txbuild_source s = {0};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct key dst;
	char sstr[STRKEY_BUF], dstr[STRKEY_BUF];
	uint8_t hash[32];
	int64_t amount = below(4) == 0 ? (below(2) ? 1 : INT64_MAX) : (int64_t)(rnd() >> 1) | 1;
	uint32_t mt = (uint32_t)below(5);
	json_t *memo = json_object(), *op = json_object(), *tb = json_object(), *ops;

	new_key(&dst);
	account_str(src, below(3) == 0, sstr);
	account_str(&dst, below(3) == 0, dstr);
	s.account = sstr;
	s.seq_num = rnd_seq();
	s.fee = below(4) == 0 ? (below(2) ? 0 : UINT32_MAX) : (uint32_t)below(100000);
	s.min_time = below(3) ? 0 : rnd_u64_edge();
	s.max_time = below(4) == 0 ? 0 : s.min_time + below(UINT64_MAX - s.min_time);
	rnd_bytes(hash, 32);
	if (txbuild_payment(b, &s, dstr, amount, mt == MEMO_HASH ? hash : NULL, &err))
		die("payment", &err);
	/* Other memo kinds go straight into the struct (txbuild only offers MEMO_HASH). */
	b->env.tx.memo.type = mt;
	json_object_set_new(
		memo, "type",
		json_string((const char *[]){"none", "text", "id", "hash", "return"}[mt]));
	if (mt == MEMO_TEXT) {
		uint32_t n = (uint32_t)below(29);
		for (uint32_t i = 0; i < n; i++)
			memo_text[i] = (uint8_t)(0x20 + below(95));
		b->env.tx.memo.text = (struct xdr_bytes){memo_text, n};
		json_object_set_new(memo, "value", hexj(memo_text, n));
	} else if (mt == MEMO_ID) {
		b->env.tx.memo.id = rnd_u64_edge();
		json_object_set_new(memo, "value", u64j(b->env.tx.memo.id));
	} else if (mt == MEMO_HASH || mt == MEMO_RETURN) {
		memcpy(b->env.tx.memo.hash, hash, 32);
		json_object_set_new(memo, "value", hexj(hash, 32));
	}
	json_object_set_new(ex, "source", json_string(sstr));
	json_object_set_new(ex, "fee", u64j(s.fee));
	json_object_set_new(ex, "seq_num", i64j(s.seq_num));
	json_object_set_new(tb, "min_time", u64j(s.min_time));
	json_object_set_new(tb, "max_time", u64j(s.max_time));
	json_object_set_new(ex, "time_bounds", tb);
	json_object_set_new(ex, "memo", memo);
	json_object_set_new(op, "source", json_null());
	json_object_set_new(op, "type", json_string("payment"));
	json_object_set_new(op, "destination", json_string(dstr));
	json_object_set_new(op, "asset", json_string("native"));
	json_object_set_new(op, "amount", i64j(amount));
	ops = json_array();
	json_array_append_new(ops, op);
	json_object_set_new(ex, "operations", ops);
	json_object_set_new(ex, "soroban_data", json_null());
	stellar_keypair_release(&dst.kp);
}

static void hex32(const uint8_t h[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

static void gen_one(const uint8_t nid[32])
{
	static struct txbuild b, bump;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct key src, fee_src;
	json_t *line = json_object(), *ex = json_object(), *extra = json_object();
	char *b64, h[65], *s;
	bool soroban = below(3) != 0;

	new_key(&src);
	txbuild_init(&b);
	if (soroban)
		gen_vault(&b, &src, ex, extra);
	else
		gen_payment(&b, &src, ex);
	if (txbuild_sign(&b, &src.kp, nid, &err))
		die("sign", &err);
	json_object_set_new(line, "signer", json_string(src.g));
	if (txbuild_to_b64(&b, &b64))
		die("encode", NULL);
	hex32(b.hash, h);
	json_object_set_new(ex, "hash", json_string(h));

	if (below(3) == 0) {
		struct fee_bump_inner in = {
			b.env.tx.fee, b.env.tx.has_soroban ? b.env.tx.soroban.resource_fee : 0,
			b.env.tx.n_ops};
		int64_t min, fee;
		char fstr[STRKEY_BUF];

		if (txbuild_fee_bump_min_fee(&in, 100, NULL, &min, &err))
			die("min fee", &err);
		fee = below(3) == 0 ? min
				    : min + (int64_t)below(below(2) ? 1000000 : INT64_MAX - min);
		new_key(&fee_src);
		account_str(&fee_src, below(3) == 0, fstr);
		txbuild_init(&bump);
		if (txbuild_fee_bump(&bump, b64, fstr, fee, 100, &err))
			die("fee bump", &err);
		if (txbuild_sign(&bump, &fee_src.kp, nid, &err))
			die("sign bump", &err);
		free(b64);
		if (txbuild_to_b64(&bump, &b64))
			die("encode bump", NULL);
		json_object_set_new(line, "type", json_string("fee_bump"));
		json_object_set_new(line, "fee_source", json_string(fstr));
		json_object_set_new(line, "fee", i64j(fee));
		json_object_set_new(line, "fee_signer", json_string(fee_src.g));
		hex32(bump.hash, h);
		json_object_set_new(line, "hash", json_string(h));
		txbuild_release(&bump);
		stellar_keypair_release(&fee_src.kp);
	} else {
		json_object_set_new(line, "type", json_string("tx"));
		json_object_set_new(line, "hash", json_string(h));
	}
	json_object_set_new(line, "inner", ex);
	json_object_set_new(line, "extra", extra);
	json_object_set_new(line, "b64", json_string(b64));
	s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	puts(s);
	free(s);
	free(b64);
	json_decref(line);
	txbuild_release(&b);
	stellar_keypair_release(&src.kp);
}

int main(int argc, char **argv)
{
	uint8_t nid[32];
	long count;

	if (argc != 4) {
		fprintf(stderr, "usage: interop_gen COUNT SEED PASSPHRASE\n");
		return 2;
	}
	count = strtol(argv[1], NULL, 10);
	rng = strtoull(argv[2], NULL, 10);
	if (sodium_init() < 0)
		die("sodium_init", NULL);
	stellar_network_id(argv[3], nid);
	for (long i = 0; i < count; i++)
		gen_one(nid);
	return fflush(stdout) == 0 ? 0 : 1;
}
