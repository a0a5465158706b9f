/*
 * xdr_tx.c - TransactionEnvelope (v1 and fee bump), Transaction and their
 * parts: decode (strict, bounded, no allocation) and encode.
 * Layouts: common/stellar/README.md, XDR.
 *
 * Error fields are paths such as "tx.operations[0].args[2]"; the reader
 * appends the byte offset, so a message pinpoints the bad byte.
 */
#include "common/stellar/xdr.h"
#include "common/stellar/xdr_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_MAX 96

/* --- decode --- */

int xdr_get_muxed(struct xdr_reader *r, const char *field, struct xdr_muxed *m)
{
	memset(m, 0, sizeof(*m));
	if (xdr_get_u32(r, field, &m->type))
		return r->status;
	if (m->type == KEY_TYPE_MUXED_ED25519) {
		if (xdr_get_u64(r, field, &m->id))
			return r->status;
	} else if (m->type != KEY_TYPE_ED25519) {
		return xdr_fail(r, OUTBOX_EPROTO, field,
				"unknown CryptoKeyType %u for MuxedAccount", m->type);
	}
	return xdr_get_fixed(r, field, m->key, 32);
}

static int get_time_bounds(struct xdr_reader *r, const char *field, struct xdr_time_bounds *tb)
{
	if (xdr_get_u64(r, field, &tb->min_time))
		return r->status;
	return xdr_get_u64(r, field, &tb->max_time);
}

static int skip_signer_key(struct xdr_reader *r, const char *field)
{
	struct xdr_bytes payload;
	uint32_t t;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	if (t > 3)
		return xdr_fail(r, OUTBOX_EPROTO, field, "unknown SignerKeyType %u", t);
	if (xdr_skip(r, field, 32))
		return r->status;
	return t == 3 ? xdr_get_var(r, field, 64, &payload) : 0;
}

static int get_precond_v2(struct xdr_reader *r, const char *field, struct xdr_precond *c)
{
	size_t start;

	if (xdr_get_bool(r, field, &c->has_time_bounds) ||
	    (c->has_time_bounds && get_time_bounds(r, field, &c->time_bounds)) ||
	    xdr_get_bool(r, field, &c->has_ledger_bounds) ||
	    (c->has_ledger_bounds &&
	     (xdr_get_u32(r, field, &c->min_ledger) || xdr_get_u32(r, field, &c->max_ledger))) ||
	    xdr_get_bool(r, field, &c->has_min_seq_num) ||
	    (c->has_min_seq_num && xdr_get_i64(r, field, &c->min_seq_num)) ||
	    xdr_get_u64(r, field, &c->min_seq_age) ||
	    xdr_get_u32(r, field, &c->min_seq_ledger_gap) ||
	    xdr_get_count(r, field, 2, &c->n_extra_signers))
		return r->status;
	start = r->off;
	for (uint32_t i = 0; i < c->n_extra_signers; i++)
		if (skip_signer_key(r, field))
			return r->status;
	c->extra_signers.p = r->buf + start;
	c->extra_signers.len = (uint32_t)(r->off - start);
	return 0;
}

static int get_precond(struct xdr_reader *r, const char *field, struct xdr_precond *c)
{
	memset(c, 0, sizeof(*c));
	if (xdr_get_u32(r, field, &c->type))
		return r->status;
	switch (c->type) {
	case PRECOND_NONE:
		return 0;
	case PRECOND_TIME:
		c->has_time_bounds = true;
		return get_time_bounds(r, field, &c->time_bounds);
	case PRECOND_V2:
		return get_precond_v2(r, field, c);
	default:
		return xdr_fail(r, OUTBOX_EPROTO, field, "unknown PreconditionType %u", c->type);
	}
}

static int get_memo(struct xdr_reader *r, const char *field, struct xdr_memo *m)
{
	memset(m, 0, sizeof(*m));
	if (xdr_get_u32(r, field, &m->type))
		return r->status;
	switch (m->type) {
	case MEMO_NONE:
		return 0;
	case MEMO_TEXT:
		return xdr_get_var(r, field, XDR_MEMO_TEXT_MAX, &m->text);
	case MEMO_ID:
		return xdr_get_u64(r, field, &m->id);
	case MEMO_HASH:
	case MEMO_RETURN:
		return xdr_get_fixed(r, field, m->hash, 32);
	default:
		return xdr_fail(r, OUTBOX_EPROTO, field, "unknown MemoType %u", m->type);
	}
}

static int get_asset(struct xdr_reader *r, const char *field, struct xdr_asset *a)
{
	uint32_t kt;
	size_t n;

	memset(a, 0, sizeof(*a));
	if (xdr_get_u32(r, field, &a->type))
		return r->status;
	if (a->type == ASSET_TYPE_NATIVE)
		return 0;
	if (a->type != ASSET_TYPE_CREDIT_ALPHANUM4 && a->type != ASSET_TYPE_CREDIT_ALPHANUM12)
		return xdr_fail(r, OUTBOX_EPROTO, field, "unknown AssetType %u", a->type);
	n = a->type == ASSET_TYPE_CREDIT_ALPHANUM4 ? 4 : 12;
	if (xdr_get_fixed(r, field, a->code, n) || xdr_get_u32(r, field, &kt))
		return r->status;
	if (kt != 0)
		return xdr_fail(r, OUTBOX_EPROTO, field, "unknown PublicKeyType %u", kt);
	return xdr_get_fixed(r, field, a->issuer, 32);
}

static int get_invoke(struct xdr_reader *r, const char *field, struct xdr_tx *tx,
		      struct xdr_invoke *iv)
{
	char f[FIELD_MAX];
	uint32_t hf, n;
	size_t start;

	if (xdr_get_u32(r, field, &hf))
		return r->status;
	if (hf != 0)
		return xdr_fail(r, OUTBOX_EPROTO, field,
				"unsupported HostFunctionType %u (only INVOKE_CONTRACT 0)", hf);
	snprintf(f, sizeof(f), "%.64s.contract", field);
	if (xdr_get_sc_address_basic(r, f, &iv->contract))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.function", field);
	if (xdr_get_var(r, f, XDR_SYMBOL_MAX, &iv->function))
		return r->status;
	if (!xdr_symbol_ok(&iv->function))
		return xdr_fail(r, OUTBOX_EPROTO, f, "symbol has a character outside [A-Za-z0-9_]");
	snprintf(f, sizeof(f), "%.64s.args", field);
	if (xdr_get_count(r, f, XDR_MAX_ARGS - tx->n_args, &n))
		return r->status;
	iv->first_arg = tx->n_args;
	iv->n_args = n;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(f, sizeof(f), "%.64s.args[%u]", field, i);
		if (xdr_get_scval(r, f, &tx->args[tx->n_args]))
			return r->status;
		tx->n_args++;
	}
	snprintf(f, sizeof(f), "%.64s.auth", field);
	if (xdr_get_count(r, f, XDR_MAX_AUTH, &iv->n_auth))
		return r->status;
	start = r->off;
	for (uint32_t i = 0; i < iv->n_auth; i++) {
		snprintf(f, sizeof(f), "%.64s.auth[%u]", field, i);
		if (xdr_skip_auth_entry(r, f))
			return r->status;
	}
	iv->auth.p = r->buf + start;
	iv->auth.len = (uint32_t)(r->off - start);
	return 0;
}

static int get_op(struct xdr_reader *r, const char *field, struct xdr_tx *tx, struct xdr_op *op)
{
	char f[FIELD_MAX];

	memset(op, 0, sizeof(*op));
	snprintf(f, sizeof(f), "%.64s.source", field);
	if (xdr_get_bool(r, f, &op->has_source) ||
	    (op->has_source && xdr_get_muxed(r, f, &op->source)))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.type", field);
	if (xdr_get_u32(r, f, &op->type))
		return r->status;
	switch (op->type) {
	case XDR_OP_PAYMENT:
		snprintf(f, sizeof(f), "%.64s.payment", field);
		if (xdr_get_muxed(r, f, &op->body.payment.destination) ||
		    get_asset(r, f, &op->body.payment.asset))
			return r->status;
		return xdr_get_i64(r, f, &op->body.payment.amount);
	case XDR_OP_INVOKE_HOST_FUNCTION:
		snprintf(f, sizeof(f), "%.64s.invoke", field);
		return get_invoke(r, f, tx, &op->body.invoke);
	default:
		return xdr_fail(r, OUTBOX_EPROTO, f,
				"unsupported OperationType %u (only PAYMENT 1 and "
				"INVOKE_HOST_FUNCTION 24)",
				op->type);
	}
}

static int get_tx(struct xdr_reader *r, const char *field, struct xdr_tx *tx)
{
	char f[FIELD_MAX];
	uint32_t ext;

	memset(tx, 0, sizeof(*tx));
	snprintf(f, sizeof(f), "%.64s.source", field);
	if (xdr_get_muxed(r, f, &tx->source))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.fee", field);
	if (xdr_get_u32(r, f, &tx->fee))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.seq_num", field);
	if (xdr_get_i64(r, f, &tx->seq_num))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.cond", field);
	if (get_precond(r, f, &tx->cond))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.memo", field);
	if (get_memo(r, f, &tx->memo))
		return r->status;
	snprintf(f, sizeof(f), "%.64s.operations", field);
	if (xdr_get_count(r, f, XDR_MAX_OPS, &tx->n_ops))
		return r->status;
	for (uint32_t i = 0; i < tx->n_ops; i++) {
		snprintf(f, sizeof(f), "%.64s.operations[%u]", field, i);
		if (get_op(r, f, tx, &tx->ops[i]))
			return r->status;
	}
	snprintf(f, sizeof(f), "%.64s.ext", field);
	if (xdr_get_u32(r, f, &ext))
		return r->status;
	if (ext == 1) {
		tx->has_soroban = true;
		snprintf(f, sizeof(f), "%.64s.soroban_data", field);
		return xdr_read_soroban_data(r, f, &tx->soroban);
	}
	if (ext != 0)
		return xdr_fail(r, OUTBOX_EPROTO, f, "unknown Transaction.ext version %u", ext);
	return 0;
}

static int get_sigs(struct xdr_reader *r, const char *field, uint32_t *n, struct xdr_sig *sigs)
{
	char f[FIELD_MAX];
	struct xdr_bytes s;

	if (xdr_get_count(r, field, XDR_MAX_SIGS, n))
		return r->status;
	for (uint32_t i = 0; i < *n; i++) {
		snprintf(f, sizeof(f), "%.64s[%u]", field, i);
		if (xdr_get_fixed(r, f, sigs[i].hint, 4) || xdr_get_var(r, f, 64, &s))
			return r->status;
		if (s.len != 64)
			return xdr_fail(r, OUTBOX_EPROTO, f,
					"signature of %u bytes (ed25519 signatures are 64)", s.len);
		memcpy(sigs[i].sig, s.p, 64);
	}
	return 0;
}

static int get_envelope(struct xdr_reader *r, struct xdr_envelope *env)
{
	uint32_t inner, ext;

	memset(env, 0, sizeof(*env));
	if (xdr_get_u32(r, "envelope.type", &env->type))
		return r->status;
	switch (env->type) {
	case ENVELOPE_TYPE_TX:
		if (get_tx(r, "tx", &env->tx))
			return r->status;
		return get_sigs(r, "signatures", &env->n_sigs, env->sigs);
	case ENVELOPE_TYPE_TX_FEE_BUMP:
		if (xdr_get_muxed(r, "fee_bump.fee_source", &env->bump.fee_source) ||
		    xdr_get_i64(r, "fee_bump.fee", &env->bump.fee) ||
		    xdr_get_u32(r, "fee_bump.inner_tx.type", &inner))
			return r->status;
		if (inner != ENVELOPE_TYPE_TX)
			return xdr_fail(r, OUTBOX_EPROTO, "fee_bump.inner_tx.type",
					"unknown inner EnvelopeType %u (only ENVELOPE_TYPE_TX 2)",
					inner);
		if (get_tx(r, "fee_bump.inner.tx", &env->tx) ||
		    get_sigs(r, "fee_bump.inner.signatures", &env->n_sigs, env->sigs) ||
		    xdr_get_u32(r, "fee_bump.ext", &ext))
			return r->status;
		if (ext != 0)
			return xdr_fail(r, OUTBOX_EPROTO, "fee_bump.ext",
					"unknown FeeBumpTransaction.ext version %u", ext);
		return get_sigs(r, "fee_bump.signatures", &env->bump.n_sigs, env->bump.sigs);
	case ENVELOPE_TYPE_TX_V0:
		return xdr_fail(r, OUTBOX_EPROTO, "envelope.type",
				"ENVELOPE_TYPE_TX_V0 (legacy) is not supported");
	default:
		return xdr_fail(r, OUTBOX_EPROTO, "envelope.type",
				"unknown EnvelopeType %u (expected TX 2 or TX_FEE_BUMP 5)",
				env->type);
	}
}

int xdr_envelope_decode(struct xdr_envelope *env, const uint8_t *buf, size_t len,
			struct outbox_error *err)
{
	struct xdr_reader r;

	if (xdr_reader_init(&r, buf, len, XDR_MAX_ENVELOPE_BYTES, err))
		return r.status;
	if (get_envelope(&r, env))
		return r.status;
	return xdr_reader_finish(&r, "envelope");
}

int xdr_envelope_decode_b64(struct xdr_envelope *env, const char *b64, size_t b64len, uint8_t **raw,
			    size_t *raw_len, struct outbox_error *err)
{
	size_t cap = xdr_b64_decoded_max(b64len);
	uint8_t *buf;
	int rc;

	*raw = NULL;
	*raw_len = 0;
	if (b64len > (XDR_MAX_ENVELOPE_BYTES / 3 + 1) * 4)
		return outbox_error_set(err, OUTBOX_ETOOBIG, "envelope",
					"base64 of %zu characters exceeds the %d-byte limit",
					b64len, XDR_MAX_ENVELOPE_BYTES);
	buf = malloc(cap ? cap : 1);
	if (!buf)
		return outbox_error_set(err, -ENOMEM, "envelope", "out of memory");
	rc = xdr_b64_decode(b64, b64len, buf, cap, raw_len, "envelope", err);
	if (!rc)
		rc = xdr_envelope_decode(env, buf, *raw_len, err);
	if (rc) {
		free(buf);
		*raw_len = 0;
		return rc;
	}
	*raw = buf;
	return 0;
}

/* --- encode --- */

static void fail_w(struct xdr_writer *w, int code)
{
	if (!w->status)
		w->status = code;
}

void xdr_put_muxed(struct xdr_writer *w, const struct xdr_muxed *m)
{
	xdr_put_u32(w, m->type);
	if (m->type == KEY_TYPE_MUXED_ED25519)
		xdr_put_u64(w, m->id);
	else if (m->type != KEY_TYPE_ED25519)
		fail_w(w, OUTBOX_EINVAL);
	xdr_put_fixed(w, m->key, 32);
}

static void put_precond(struct xdr_writer *w, const struct xdr_precond *c)
{
	xdr_put_u32(w, c->type);
	switch (c->type) {
	case PRECOND_NONE:
		return;
	case PRECOND_TIME:
		xdr_put_u64(w, c->time_bounds.min_time);
		xdr_put_u64(w, c->time_bounds.max_time);
		return;
	case PRECOND_V2:
		xdr_put_bool(w, c->has_time_bounds);
		if (c->has_time_bounds) {
			xdr_put_u64(w, c->time_bounds.min_time);
			xdr_put_u64(w, c->time_bounds.max_time);
		}
		xdr_put_bool(w, c->has_ledger_bounds);
		if (c->has_ledger_bounds) {
			xdr_put_u32(w, c->min_ledger);
			xdr_put_u32(w, c->max_ledger);
		}
		xdr_put_bool(w, c->has_min_seq_num);
		if (c->has_min_seq_num)
			xdr_put_i64(w, c->min_seq_num);
		xdr_put_u64(w, c->min_seq_age);
		xdr_put_u32(w, c->min_seq_ledger_gap);
		if (c->n_extra_signers > 2)
			fail_w(w, OUTBOX_EINVAL);
		xdr_put_u32(w, c->n_extra_signers);
		xdr_put_raw(w, c->extra_signers.p, c->extra_signers.len);
		return;
	default:
		fail_w(w, OUTBOX_EINVAL);
	}
}

static void put_memo(struct xdr_writer *w, const struct xdr_memo *m)
{
	xdr_put_u32(w, m->type);
	switch (m->type) {
	case MEMO_NONE:
		return;
	case MEMO_TEXT:
		xdr_put_var(w, m->text.p, m->text.len, XDR_MEMO_TEXT_MAX);
		return;
	case MEMO_ID:
		xdr_put_u64(w, m->id);
		return;
	case MEMO_HASH:
	case MEMO_RETURN:
		xdr_put_fixed(w, m->hash, 32);
		return;
	default:
		fail_w(w, OUTBOX_EINVAL);
	}
}

static void put_asset(struct xdr_writer *w, const struct xdr_asset *a)
{
	xdr_put_u32(w, a->type);
	if (a->type == ASSET_TYPE_NATIVE)
		return;
	if (a->type != ASSET_TYPE_CREDIT_ALPHANUM4 && a->type != ASSET_TYPE_CREDIT_ALPHANUM12) {
		fail_w(w, OUTBOX_EINVAL);
		return;
	}
	xdr_put_fixed(w, a->code, a->type == ASSET_TYPE_CREDIT_ALPHANUM4 ? 4 : 12);
	xdr_put_u32(w, 0);
	xdr_put_fixed(w, a->issuer, 32);
}

static void put_op(struct xdr_writer *w, const struct xdr_tx *tx, const struct xdr_op *op)
{
	const struct xdr_invoke *iv = &op->body.invoke;

	xdr_put_bool(w, op->has_source);
	if (op->has_source)
		xdr_put_muxed(w, &op->source);
	xdr_put_u32(w, op->type);
	switch (op->type) {
	case XDR_OP_PAYMENT:
		xdr_put_muxed(w, &op->body.payment.destination);
		put_asset(w, &op->body.payment.asset);
		xdr_put_i64(w, op->body.payment.amount);
		return;
	case XDR_OP_INVOKE_HOST_FUNCTION:
		if (iv->first_arg > tx->n_args || iv->n_args > tx->n_args - iv->first_arg ||
		    iv->n_auth > XDR_MAX_AUTH) {
			fail_w(w, OUTBOX_EINVAL);
			return;
		}
		xdr_put_u32(w, 0); /* HOST_FUNCTION_TYPE_INVOKE_CONTRACT */
		xdr_put_sc_address(w, &iv->contract);
		if (!xdr_symbol_ok(&iv->function))
			fail_w(w, OUTBOX_EINVAL);
		xdr_put_var(w, iv->function.p, iv->function.len, XDR_SYMBOL_MAX);
		xdr_put_u32(w, iv->n_args);
		for (uint32_t i = 0; i < iv->n_args; i++)
			xdr_put_scval(w, &tx->args[iv->first_arg + i]);
		xdr_put_u32(w, iv->n_auth);
		xdr_put_raw(w, iv->auth.p, iv->auth.len);
		return;
	default:
		fail_w(w, OUTBOX_EINVAL);
	}
}

int xdr_tx_encode(const struct xdr_tx *tx, struct xdr_writer *w)
{
	if (tx->n_ops > XDR_MAX_OPS || tx->n_args > XDR_MAX_ARGS)
		fail_w(w, OUTBOX_EINVAL);
	xdr_put_muxed(w, &tx->source);
	xdr_put_u32(w, tx->fee);
	xdr_put_i64(w, tx->seq_num);
	put_precond(w, &tx->cond);
	put_memo(w, &tx->memo);
	xdr_put_u32(w, tx->n_ops);
	for (uint32_t i = 0; i < tx->n_ops && !w->status; i++)
		put_op(w, tx, &tx->ops[i]);
	if (tx->has_soroban) {
		xdr_put_u32(w, 1);
		xdr_put_raw(w, tx->soroban.raw.p, tx->soroban.raw.len);
	} else {
		xdr_put_u32(w, 0);
	}
	return w->status;
}

static void put_sigs(struct xdr_writer *w, uint32_t n, const struct xdr_sig *sigs)
{
	if (n > XDR_MAX_SIGS) {
		fail_w(w, OUTBOX_EINVAL);
		return;
	}
	xdr_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++) {
		xdr_put_fixed(w, sigs[i].hint, 4);
		xdr_put_var(w, sigs[i].sig, 64, 64);
	}
}

/* FeeBumpTransaction (without the envelope's outer signatures). */
static void put_fee_bump_tx(struct xdr_writer *w, const struct xdr_envelope *env)
{
	xdr_put_muxed(w, &env->bump.fee_source);
	xdr_put_i64(w, env->bump.fee);
	xdr_put_u32(w, ENVELOPE_TYPE_TX);
	xdr_tx_encode(&env->tx, w);
	put_sigs(w, env->n_sigs, env->sigs);
	xdr_put_u32(w, 0); /* ext */
}

int xdr_envelope_encode(const struct xdr_envelope *env, struct xdr_writer *w)
{
	xdr_put_u32(w, env->type);
	if (env->type == ENVELOPE_TYPE_TX) {
		xdr_tx_encode(&env->tx, w);
		put_sigs(w, env->n_sigs, env->sigs);
	} else if (env->type == ENVELOPE_TYPE_TX_FEE_BUMP) {
		put_fee_bump_tx(w, env);
		put_sigs(w, env->bump.n_sigs, env->bump.sigs);
	} else {
		fail_w(w, OUTBOX_EINVAL);
	}
	return w->status;
}

int xdr_envelope_to_b64(const struct xdr_envelope *env, char **out)
{
	struct xdr_writer w;
	int rc;

	*out = NULL;
	xdr_writer_init(&w, XDR_MAX_ENVELOPE_BYTES);
	rc = xdr_envelope_encode(env, &w);
	if (!rc) {
		*out = xdr_b64_encode(w.buf, w.len);
		if (!*out)
			rc = -ENOMEM;
	}
	xdr_writer_release(&w);
	return rc;
}

int xdr_put_fee_bump_tx(struct xdr_writer *w, const struct xdr_envelope *env)
{
	put_fee_bump_tx(w, env);
	return w->status;
}
