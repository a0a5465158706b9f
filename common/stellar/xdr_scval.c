/*
 * xdr_scval.c - SCAddress and the ScVal arms outboxd passes as contract
 * arguments (see enum xdr_scval_type), i128 decimal conversion, type names.
 * Richer arms (Vec, Map, ...) only occur inside auth entries and footprints;
 * xdr_soroban.c validates those without representing them.
 */
#include "common/stellar/xdr.h"
#include "common/stellar/xdr_internal.h"

#include <stdio.h>
#include <string.h>

void xdr_put_sc_address(struct xdr_writer *w, const struct xdr_sc_address *a)
{
	xdr_put_u32(w, a->type);
	if (a->type == SC_ADDRESS_TYPE_ACCOUNT)
		xdr_put_u32(w, 0); /* PUBLIC_KEY_TYPE_ED25519 */
	else if (a->type != SC_ADDRESS_TYPE_CONTRACT && !w->status)
		w->status = OUTBOX_EINVAL;
	xdr_put_fixed(w, a->id, 32);
}

static int get_sc_address(struct xdr_reader *r, const char *field, struct xdr_sc_address *a)
{
	uint32_t t, kt;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	a->type = t;
	if (t == SC_ADDRESS_TYPE_ACCOUNT) {
		if (xdr_get_u32(r, field, &kt))
			return r->status;
		if (kt != 0)
			return xdr_fail(r, OUTBOX_EPROTO, field, "unknown PublicKeyType %u", kt);
	} else if (t != SC_ADDRESS_TYPE_CONTRACT) {
		return xdr_fail(r, OUTBOX_EPROTO, field,
				"unsupported SCAddressType %u (only ACCOUNT 0 and CONTRACT 1)", t);
	}
	return xdr_get_fixed(r, field, a->id, 32);
}

bool xdr_symbol_ok(const struct xdr_bytes *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		uint8_t c = b->p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

void xdr_put_scval(struct xdr_writer *w, const struct xdr_scval *v)
{
	xdr_put_u32(w, v->type);
	switch (v->type) {
	case SCV_BOOL:
		xdr_put_bool(w, v->v.b);
		break;
	case SCV_VOID:
		break;
	case SCV_U32:
		xdr_put_u32(w, v->v.u32);
		break;
	case SCV_I32:
		xdr_put_i32(w, v->v.i32);
		break;
	case SCV_U64:
		xdr_put_u64(w, v->v.u64);
		break;
	case SCV_I64:
		xdr_put_i64(w, v->v.i64);
		break;
	case SCV_U128:
	case SCV_I128:
		xdr_put_i64(w, v->v.i128.hi);
		xdr_put_u64(w, v->v.i128.lo);
		break;
	case SCV_BYTES:
	case SCV_STRING:
		xdr_put_var(w, v->v.bytes.p, v->v.bytes.len, XDR_MAX_BYTES_LEN);
		break;
	case SCV_SYMBOL:
		if (!xdr_symbol_ok(&v->v.bytes) && !w->status)
			w->status = OUTBOX_EINVAL;
		xdr_put_var(w, v->v.bytes.p, v->v.bytes.len, XDR_SYMBOL_MAX);
		break;
	case SCV_ADDRESS:
		xdr_put_sc_address(w, &v->v.addr);
		break;
	default:
		if (!w->status)
			w->status = OUTBOX_EINVAL;
	}
}

int xdr_get_scval(struct xdr_reader *r, const char *field, struct xdr_scval *v)
{
	uint32_t t;

	memset(v, 0, sizeof(*v));
	if (xdr_get_u32(r, field, &t))
		return r->status;
	v->type = t;
	switch (t) {
	case SCV_BOOL:
		return xdr_get_bool(r, field, &v->v.b);
	case SCV_VOID:
		return 0;
	case SCV_U32:
		return xdr_get_u32(r, field, &v->v.u32);
	case SCV_I32:
		return xdr_get_i32(r, field, &v->v.i32);
	case SCV_U64:
		return xdr_get_u64(r, field, &v->v.u64);
	case SCV_I64:
		return xdr_get_i64(r, field, &v->v.i64);
	case SCV_U128:
	case SCV_I128:
		if (xdr_get_i64(r, field, &v->v.i128.hi))
			return r->status;
		return xdr_get_u64(r, field, &v->v.i128.lo);
	case SCV_BYTES:
	case SCV_STRING:
		return xdr_get_var(r, field, XDR_MAX_BYTES_LEN, &v->v.bytes);
	case SCV_SYMBOL:
		if (xdr_get_var(r, field, XDR_SYMBOL_MAX, &v->v.bytes))
			return r->status;
		if (!xdr_symbol_ok(&v->v.bytes))
			return xdr_fail(r, OUTBOX_EPROTO, field,
					"symbol has a character outside [A-Za-z0-9_]");
		return 0;
	case SCV_ADDRESS:
		return get_sc_address(r, field, &v->v.addr);
	default: {
		const char *n = xdr_scval_type_name(t);
		return xdr_fail(r, OUTBOX_EPROTO, field, "unsupported SCValType %u%s%s%s", t,
				n ? " (" : "", n ? n : "", n ? ")" : "");
	}
	}
}

int xdr_get_sc_address_basic(struct xdr_reader *r, const char *field, struct xdr_sc_address *a)
{
	return get_sc_address(r, field, a);
}

int xdr_i128_parse(const char *s, int64_t *hi, uint64_t *lo, const char *field,
		   struct outbox_error *err)
{
	const unsigned __int128 limit = (unsigned __int128)1 << 127;
	unsigned __int128 mag = 0;
	bool neg = false;
	const char *d;
	size_t n;

	if (!s || !*s)
		return outbox_error_set(err, OUTBOX_EINVAL, field, "'' is not a decimal i128");
	d = s;
	if (*d == '-') {
		neg = true;
		d++;
	}
	n = strlen(d);
	if (n == 0 || n > 39 || (d[0] == '0' && (n > 1 || neg)))
		return outbox_error_set(err, OUTBOX_EINVAL, field, "'%.48s' is not a decimal i128",
					s);
	for (size_t i = 0; i < n; i++) {
		if (d[i] < '0' || d[i] > '9')
			return outbox_error_set(err, OUTBOX_EINVAL, field,
						"'%.48s' is not a decimal i128", s);
		/* 39 digits can exceed 2^128: check before multiplying. */
		if (mag > (((unsigned __int128)0 - 1) - (unsigned)(d[i] - '0')) / 10)
			return outbox_error_set(err, OUTBOX_EINVAL, field,
						"'%.48s' is outside the i128 range", s);
		mag = mag * 10 + (unsigned)(d[i] - '0');
	}
	if (mag > limit || (!neg && mag == limit))
		return outbox_error_set(err, OUTBOX_EINVAL, field,
					"'%.48s' is outside the i128 range", s);
	if (neg)
		mag = (unsigned __int128)0 - mag;
	*hi = (int64_t)(uint64_t)(mag >> 64);
	*lo = (uint64_t)mag;
	return 0;
}

static void u128_digits(unsigned __int128 v, char *out)
{
	char tmp[XDR_I128_DEC_BUF];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
}

void xdr_i128_format(int64_t hi, uint64_t lo, char out[XDR_I128_DEC_BUF])
{
	unsigned __int128 u = (unsigned __int128)(uint64_t)hi << 64 | lo;

	if (hi < 0) {
		out[0] = '-';
		u128_digits((unsigned __int128)0 - u, out + 1);
	} else {
		u128_digits(u, out);
	}
}

void xdr_u128_format(uint64_t hi, uint64_t lo, char out[XDR_I128_DEC_BUF])
{
	u128_digits((unsigned __int128)hi << 64 | lo, out);
}

const char *xdr_scval_type_name(uint32_t t)
{
	static const char *const names[] = {
		"SCV_BOOL",
		"SCV_VOID",
		"SCV_ERROR",
		"SCV_U32",
		"SCV_I32",
		"SCV_U64",
		"SCV_I64",
		"SCV_TIMEPOINT",
		"SCV_DURATION",
		"SCV_U128",
		"SCV_I128",
		"SCV_U256",
		"SCV_I256",
		"SCV_BYTES",
		"SCV_STRING",
		"SCV_SYMBOL",
		"SCV_VEC",
		"SCV_MAP",
		"SCV_ADDRESS",
		"SCV_CONTRACT_INSTANCE",
		"SCV_LEDGER_KEY_CONTRACT_INSTANCE",
		"SCV_LEDGER_KEY_NONCE",
	};
	return t < sizeof(names) / sizeof(names[0]) ? names[t] : NULL;
}

const char *xdr_memo_type_name(uint32_t t)
{
	static const char *const names[] = {"MEMO_NONE", "MEMO_TEXT", "MEMO_ID", "MEMO_HASH",
					    "MEMO_RETURN"};
	return t < 5 ? names[t] : NULL;
}
