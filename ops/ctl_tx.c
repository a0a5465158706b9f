/*
 * ctl_tx.c - `outboxctl tx decode [--passphrase P] [B64]`: print a base64
 * TransactionEnvelope (argument, or stdin when absent) as JSON for operators
 * inspecting an attempt.
 *
 * Output: type ("tx" | "fee_bump"), source, fee, seq_num (string: i64),
 * time_bounds, memo, operations with their arguments (i128/u64/i64 as decimal
 * strings, addresses as strkeys, bytes as hex), soroban_data, signatures
 * (hint and signature in hex) and the hash for the network passphrase from
 * --passphrase or STELLAR_NETWORK_PASSPHRASE; without one, "hash" is null and
 * "hash_omitted" says why. A fee bump prints its outer fields (its i64 "fee" as
 * a decimal string) and the inner transaction (with its own hash) under "inner".
 * Bad input: exit 1 with one line "outboxctl tx decode: <what>".
 */
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/stellar/xdr.h"
#include "ops/ctl.h"

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* stdin bound: the largest envelope in base64 plus whitespace. */
#define CTL_TX_STDIN_MAX ((XDR_MAX_ENVELOPE_BYTES / 3 + 1) * 4 + 4096)

static json_t *hex_json(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	json_t *j;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * n] = '\0';
	j = json_string(s);
	free(s);
	return j;
}

static json_t *u64_json(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	return json_string(b);
}

static json_t *i64_json(int64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRId64, v);
	return json_string(b);
}

static json_t *muxed_json(const struct xdr_muxed *m)
{
	char s[STRKEY_BUF];

	if (m->type == KEY_TYPE_MUXED_ED25519)
		strkey_encode_muxed(m->key, m->id, s);
	else
		strkey_encode_account(m->key, s);
	return json_string(s);
}

static json_t *address_json(const struct xdr_sc_address *a)
{
	char s[STRKEY_BUF];

	if (a->type == SC_ADDRESS_TYPE_CONTRACT)
		strkey_encode_contract(a->id, s);
	else
		strkey_encode_account(a->id, s);
	return json_string(s);
}

/* Text when it is printable UTF-8 without NUL, else hex under another key. */
static void text_or_hex(json_t *o, const char *key, const struct xdr_bytes *b)
{
	json_t *s = memchr(b->p, 0, b->len) ? NULL : json_stringn((const char *)b->p, b->len);
	char hk[32];

	if (s) {
		json_object_set_new(o, key, s);
		return;
	}
	snprintf(hk, sizeof(hk), "%s_hex", key);
	json_object_set_new(o, hk, hex_json(b->p, b->len));
}

static json_t *scval_json(const struct xdr_scval *v)
{
	json_t *o = json_object();
	char dec[XDR_I128_DEC_BUF];
	static const char *const types[] = {
		[SCV_BOOL] = "bool",     [SCV_VOID] = "void",     [SCV_U32] = "u32",
		[SCV_I32] = "i32",       [SCV_U64] = "u64",       [SCV_I64] = "i64",
		[SCV_U128] = "u128",     [SCV_I128] = "i128",     [SCV_BYTES] = "bytes",
		[SCV_STRING] = "string", [SCV_SYMBOL] = "symbol", [SCV_ADDRESS] = "address",
	};

	json_object_set_new(o, "type", json_string(types[v->type]));
	switch (v->type) {
	case SCV_BOOL:
		json_object_set_new(o, "value", json_boolean(v->v.b));
		break;
	case SCV_VOID:
		json_object_set_new(o, "value", json_null());
		break;
	case SCV_U32:
		json_object_set_new(o, "value", json_integer(v->v.u32));
		break;
	case SCV_I32:
		json_object_set_new(o, "value", json_integer(v->v.i32));
		break;
	case SCV_U64:
		json_object_set_new(o, "value", u64_json(v->v.u64));
		break;
	case SCV_I64:
		json_object_set_new(o, "value", i64_json(v->v.i64));
		break;
	case SCV_U128:
		xdr_u128_format((uint64_t)v->v.i128.hi, v->v.i128.lo, dec);
		json_object_set_new(o, "value", json_string(dec));
		break;
	case SCV_I128:
		xdr_i128_format(v->v.i128.hi, v->v.i128.lo, dec);
		json_object_set_new(o, "value", json_string(dec));
		break;
	case SCV_BYTES:
		json_object_set_new(o, "value", hex_json(v->v.bytes.p, v->v.bytes.len));
		break;
	case SCV_STRING:
	case SCV_SYMBOL:
		text_or_hex(o, "value", &v->v.bytes);
		break;
	case SCV_ADDRESS:
		json_object_set_new(o, "value", address_json(&v->v.addr));
		break;
	}
	return o;
}

static json_t *asset_json(const struct xdr_asset *a)
{
	char s[13 + 1 + STRKEY_BUF];
	char issuer[STRKEY_BUF];

	if (a->type == ASSET_TYPE_NATIVE)
		return json_string("native");
	strkey_encode_account(a->issuer, issuer);
	snprintf(s, sizeof(s), "%.12s:%s", a->code, issuer);
	return json_string(s);
}

static json_t *op_json(const struct xdr_tx *tx, const struct xdr_op *op)
{
	json_t *o = json_object(), *args;

	json_object_set_new(o, "source", op->has_source ? muxed_json(&op->source) : json_null());
	if (op->type == XDR_OP_PAYMENT) {
		const struct xdr_payment *p = &op->body.payment;
		json_object_set_new(o, "type", json_string("payment"));
		json_object_set_new(o, "destination", muxed_json(&p->destination));
		json_object_set_new(o, "asset", asset_json(&p->asset));
		json_object_set_new(o, "amount", i64_json(p->amount));
		return o;
	}
	const struct xdr_invoke *iv = &op->body.invoke;
	json_object_set_new(o, "type", json_string("invoke_host_function"));
	json_object_set_new(o, "contract", address_json(&iv->contract));
	json_object_set_new(o, "function",
			    json_stringn((const char *)iv->function.p, iv->function.len));
	args = json_array();
	for (uint32_t i = 0; i < iv->n_args; i++)
		json_array_append_new(args, scval_json(&tx->args[iv->first_arg + i]));
	json_object_set_new(o, "args", args);
	json_object_set_new(o, "auth_entries", json_integer(iv->n_auth));
	return o;
}

static json_t *memo_json(const struct xdr_memo *m)
{
	json_t *o = json_object();
	static const char *const names[] = {"none", "text", "id", "hash", "return"};

	json_object_set_new(o, "type", json_string(names[m->type]));
	if (m->type == MEMO_TEXT)
		text_or_hex(o, "text", &m->text);
	else if (m->type == MEMO_ID)
		json_object_set_new(o, "id", u64_json(m->id));
	else if (m->type == MEMO_HASH || m->type == MEMO_RETURN)
		json_object_set_new(o, "hash", hex_json(m->hash, 32));
	return o;
}

static json_t *time_bounds_json(const struct xdr_precond *c)
{
	json_t *o;

	if (!c->has_time_bounds)
		return json_null();
	o = json_object();
	json_object_set_new(o, "min_time", u64_json(c->time_bounds.min_time));
	json_object_set_new(o, "max_time", u64_json(c->time_bounds.max_time));
	return o;
}

static json_t *precond_v2_json(const struct xdr_precond *c)
{
	json_t *o = json_object();

	if (c->has_ledger_bounds) {
		json_t *lb = json_object();
		json_object_set_new(lb, "min_ledger", json_integer(c->min_ledger));
		json_object_set_new(lb, "max_ledger", json_integer(c->max_ledger));
		json_object_set_new(o, "ledger_bounds", lb);
	} else {
		json_object_set_new(o, "ledger_bounds", json_null());
	}
	json_object_set_new(o, "min_seq_num",
			    c->has_min_seq_num ? i64_json(c->min_seq_num) : json_null());
	json_object_set_new(o, "min_seq_age", u64_json(c->min_seq_age));
	json_object_set_new(o, "min_seq_ledger_gap", json_integer(c->min_seq_ledger_gap));
	json_object_set_new(o, "extra_signers", json_integer(c->n_extra_signers));
	return o;
}

static json_t *sigs_json(uint32_t n, const struct xdr_sig *sigs)
{
	json_t *a = json_array();

	for (uint32_t i = 0; i < n; i++) {
		json_t *s = json_object();
		json_object_set_new(s, "hint", hex_json(sigs[i].hint, 4));
		json_object_set_new(s, "signature", hex_json(sigs[i].sig, 64));
		json_array_append_new(a, s);
	}
	return a;
}

/* The Transaction's own fields into o. */
static void tx_fields(json_t *o, const struct xdr_tx *tx)
{
	json_t *ops = json_array();

	json_object_set_new(o, "source", muxed_json(&tx->source));
	json_object_set_new(o, "fee", json_integer(tx->fee));
	json_object_set_new(o, "seq_num", i64_json(tx->seq_num));
	json_object_set_new(o, "time_bounds", time_bounds_json(&tx->cond));
	if (tx->cond.type == PRECOND_V2)
		json_object_set_new(o, "preconditions_v2", precond_v2_json(&tx->cond));
	json_object_set_new(o, "memo", memo_json(&tx->memo));
	for (uint32_t i = 0; i < tx->n_ops; i++)
		json_array_append_new(ops, op_json(tx, &tx->ops[i]));
	json_object_set_new(o, "operations", ops);
	if (tx->has_soroban) {
		json_t *sd = json_object();
		json_object_set_new(sd, "resource_fee", i64_json(tx->soroban.resource_fee));
		json_object_set_new(sd, "instructions", json_integer(tx->soroban.instructions));
		json_object_set_new(sd, "disk_read_bytes",
				    json_integer(tx->soroban.disk_read_bytes));
		json_object_set_new(sd, "write_bytes", json_integer(tx->soroban.write_bytes));
		json_object_set_new(sd, "read_only", json_integer(tx->soroban.n_read_only));
		json_object_set_new(sd, "read_write", json_integer(tx->soroban.n_read_write));
		json_object_set_new(o, "soroban_data", sd);
	} else {
		json_object_set_new(o, "soroban_data", json_null());
	}
}

static json_t *hash_json(int rc, const uint8_t *h)
{
	return rc == 0 ? hex_json(h, 32) : json_null();
}

static json_t *envelope_json(const struct xdr_envelope *env, const char *passphrase)
{
	json_t *o = json_object();
	uint8_t nid[32], h[32];
	int rc = -1;

	if (passphrase)
		stellar_network_id(passphrase, nid);
	if (env->type == ENVELOPE_TYPE_TX) {
		json_object_set_new(o, "type", json_string("tx"));
		tx_fields(o, &env->tx);
		json_object_set_new(o, "signatures", sigs_json(env->n_sigs, env->sigs));
		if (passphrase)
			rc = xdr_envelope_hash(env, nid, h);
		json_object_set_new(o, "hash", hash_json(rc, h));
	} else {
		json_t *inner = json_object();
		json_object_set_new(o, "type", json_string("fee_bump"));
		json_object_set_new(o, "fee_source", muxed_json(&env->bump.fee_source));
		json_object_set_new(o, "fee", i64_json(env->bump.fee));
		json_object_set_new(o, "signatures", sigs_json(env->bump.n_sigs, env->bump.sigs));
		if (passphrase)
			rc = xdr_envelope_hash(env, nid, h);
		json_object_set_new(o, "hash", hash_json(rc, h));
		tx_fields(inner, &env->tx);
		json_object_set_new(inner, "signatures", sigs_json(env->n_sigs, env->sigs));
		if (passphrase)
			rc = xdr_envelope_inner_hash(env, nid, h);
		json_object_set_new(inner, "hash", hash_json(rc, h));
		json_object_set_new(o, "inner", inner);
	}
	if (!passphrase)
		json_object_set_new(o, "hash_omitted",
				    json_string("no network passphrase (use --passphrase or "
						"STELLAR_NETWORK_PASSPHRASE)"));
	return o;
}

/* Reads all of stdin (bounded) into a malloc'd NUL-terminated string. */
static char *read_stdin(size_t *n, const char **why)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1), *nb;
	size_t got;

	if (!buf) {
		*why = "out of memory";
		return NULL;
	}
	while ((got = fread(buf + len, 1, cap - len, stdin)) > 0) {
		len += got;
		if (len == cap) {
			if (cap >= CTL_TX_STDIN_MAX) {
				free(buf);
				*why = "input exceeds the envelope size limit";
				return NULL;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				*why = "out of memory";
				return NULL;
			}
			buf = nb;
		}
	}
	if (ferror(stdin)) {
		free(buf);
		*why = "cannot read stdin";
		return NULL;
	}
	buf[len] = '\0';
	*n = len;
	return buf;
}

static int fail(const char *what)
{
	fprintf(stderr, "outboxctl tx decode: %s\n", what);
	return 1;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: outboxctl tx decode [--passphrase P] [BASE64_ENVELOPE]\n"
		   "  reads the envelope from stdin when no argument is given; the hash needs\n"
		   "  the network passphrase (--passphrase or STELLAR_NETWORK_PASSPHRASE)\n");
	return f == stdout ? 0 : 2;
}

static int tx_decode(int argc, char **argv)
{
	const char *passphrase = getenv("STELLAR_NETWORK_PASSPHRASE"), *arg = NULL;
	static struct xdr_envelope env;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char *input = NULL, *s;
	uint8_t *raw = NULL;
	size_t n = 0, raw_len;
	json_t *out;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--passphrase")) {
			if (++i >= argc)
				return usage(stderr);
			passphrase = argv[i];
		} else if (!strncmp(argv[i], "--passphrase=", 13)) {
			passphrase = argv[i] + 13;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			return usage(stdout);
		} else if (argv[i][0] == '-' || arg) {
			return usage(stderr);
		} else {
			arg = argv[i];
		}
	}
	if (passphrase && !*passphrase)
		passphrase = NULL;
	if (arg) {
		s = (char *)arg;
		n = strlen(arg);
	} else {
		const char *why = NULL;
		input = read_stdin(&n, &why);
		if (!input)
			return fail(why);
		s = input;
	}
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0) {
		free(input);
		return fail("empty input (expected a base64 TransactionEnvelope)");
	}
	rc = xdr_envelope_decode_b64(&env, s, n, &raw, &raw_len, &err);
	free(input);
	if (rc)
		return fail(err.msg);
	out = envelope_json(&env, passphrase);
	rc = json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', stdout);
	json_decref(out);
	free(raw);
	return rc ? fail("cannot write the output") : 0;
}

int ctl_tx(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "decode"))
		return tx_decode(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "outboxctl tx: expected 'decode' (see outboxctl tx --help)\n");
	return 2;
}
