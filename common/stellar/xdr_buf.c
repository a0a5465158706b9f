/*
 * xdr_buf.c - see xdr_buf.h. The reader checks `len - off >= n` (never
 * `off + n <= len`, which could wrap) before touching any byte.
 */
#include "common/stellar/xdr_buf.h"

#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xdr_writer_init(struct xdr_writer *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->max = max;
	w->growable = true;
}

void xdr_writer_init_fixed(struct xdr_writer *w, uint8_t *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
	w->max = cap;
}

void xdr_writer_release(struct xdr_writer *w)
{
	if (w->growable && w->buf) {
		sodium_memzero(w->buf, w->cap);
		free(w->buf);
	}
	w->buf = NULL;
	w->len = w->cap = 0;
	w->status = 0;
}

uint8_t *xdr_writer_detach(struct xdr_writer *w, size_t *len)
{
	uint8_t *p = w->buf;

	if (!w->growable || w->status) {
		xdr_writer_release(w);
		return NULL;
	}
	*len = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
	if (!p)
		p = malloc(1); /* an empty but valid result */
	return p;
}

/* Room for n more bytes, growing if allowed; false (sticky status) otherwise. */
static bool reserve(struct xdr_writer *w, size_t n)
{
	size_t want, ncap;
	uint8_t *nbuf;

	if (w->status)
		return false;
	if (w->max - w->len < n || w->len > w->max) {
		w->status = OUTBOX_ETOOBIG;
		return false;
	}
	want = w->len + n;
	if (want <= w->cap)
		return true;
	if (!w->growable) {
		w->status = OUTBOX_ETOOBIG;
		return false;
	}
	ncap = w->cap ? w->cap : 256;
	while (ncap < want)
		ncap = ncap > w->max / 2 ? w->max : ncap * 2;
	nbuf = malloc(ncap);
	if (!nbuf) {
		w->status = -ENOMEM;
		return false;
	}
	/* Copy and wipe instead of realloc: buffers may hold payloads worth keeping private. */
	if (w->buf) {
		memcpy(nbuf, w->buf, w->len);
		sodium_memzero(w->buf, w->cap);
		free(w->buf);
	}
	w->buf = nbuf;
	w->cap = ncap;
	return true;
}

void xdr_put_u32(struct xdr_writer *w, uint32_t v)
{
	if (!reserve(w, 4))
		return;
	w->buf[w->len++] = (uint8_t)(v >> 24);
	w->buf[w->len++] = (uint8_t)(v >> 16);
	w->buf[w->len++] = (uint8_t)(v >> 8);
	w->buf[w->len++] = (uint8_t)v;
}

void xdr_put_i32(struct xdr_writer *w, int32_t v)
{
	xdr_put_u32(w, (uint32_t)v);
}

void xdr_put_u64(struct xdr_writer *w, uint64_t v)
{
	xdr_put_u32(w, (uint32_t)(v >> 32));
	xdr_put_u32(w, (uint32_t)v);
}

void xdr_put_i64(struct xdr_writer *w, int64_t v)
{
	xdr_put_u64(w, (uint64_t)v);
}

void xdr_put_bool(struct xdr_writer *w, bool v)
{
	xdr_put_u32(w, v ? 1 : 0);
}

void xdr_put_fixed(struct xdr_writer *w, const void *p, size_t n)
{
	size_t pad = (4 - (n & 3)) & 3;

	if (!reserve(w, n + pad))
		return;
	if (n)
		memcpy(w->buf + w->len, p, n);
	memset(w->buf + w->len + n, 0, pad);
	w->len += n + pad;
}

void xdr_put_var(struct xdr_writer *w, const void *p, size_t n, size_t max)
{
	if (n > max || n > UINT32_MAX) {
		if (!w->status)
			w->status = OUTBOX_EINVAL;
		return;
	}
	xdr_put_u32(w, (uint32_t)n);
	xdr_put_fixed(w, p, n);
}

void xdr_put_raw(struct xdr_writer *w, const void *p, size_t n)
{
	if (n & 3) {
		if (!w->status)
			w->status = OUTBOX_EINVAL;
		return;
	}
	xdr_put_fixed(w, p, n);
}

int xdr_reader_init(struct xdr_reader *r, const uint8_t *buf, size_t len, size_t max_total,
		    struct outbox_error *err)
{
	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->len = len;
	r->err = err;
	if (len > max_total)
		return xdr_fail(r, OUTBOX_ETOOBIG, "xdr",
				"input of %zu bytes exceeds the %zu-byte limit", len, max_total);
	return 0;
}

int xdr_fail(struct xdr_reader *r, int code, const char *field, const char *fmt, ...)
{
	char msg[OUTBOX_ERROR_MSG_MAX - 80];
	va_list ap;

	if (r->status)
		return r->status;
	r->status = code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	outbox_error_set(r->err, code, field, "%s (at byte %zu)", msg, r->mark);
	return code;
}

int xdr_reader_finish(struct xdr_reader *r, const char *what)
{
	if (r->status)
		return r->status;
	r->mark = r->off;
	if (r->off != r->len)
		return xdr_fail(r, OUTBOX_EPROTO, what, "%zu trailing bytes after the value",
				r->len - r->off);
	return 0;
}

static const uint8_t *take(struct xdr_reader *r, const char *field, size_t n)
{
	const uint8_t *p;

	if (r->status)
		return NULL;
	if (r->len - r->off < n) {
		r->mark = r->off;
		xdr_fail(r, OUTBOX_EPROTO, field, "truncated: need %zu bytes, %zu left", n,
			 r->len - r->off);
		return NULL;
	}
	p = r->buf + r->off;
	r->mark = r->off;
	r->off += n;
	return p;
}

int xdr_get_u32(struct xdr_reader *r, const char *field, uint32_t *v)
{
	const uint8_t *p = take(r, field, 4);

	if (!p) {
		*v = 0;
		return r->status;
	}
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

int xdr_get_i32(struct xdr_reader *r, const char *field, int32_t *v)
{
	uint32_t u = 0;
	int rc = xdr_get_u32(r, field, &u);

	if (!rc)
		*v = (int32_t)u;
	return rc;
}

int xdr_get_u64(struct xdr_reader *r, const char *field, uint64_t *v)
{
	uint32_t hi = 0, lo = 0;

	if (xdr_get_u32(r, field, &hi) || xdr_get_u32(r, field, &lo))
		return r->status;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

int xdr_get_i64(struct xdr_reader *r, const char *field, int64_t *v)
{
	uint64_t u = 0;
	int rc = xdr_get_u64(r, field, &u);

	if (!rc)
		*v = (int64_t)u;
	return rc;
}

int xdr_get_bool(struct xdr_reader *r, const char *field, bool *v)
{
	uint32_t u = 0;

	if (xdr_get_u32(r, field, &u))
		return r->status;
	if (u > 1)
		return xdr_fail(r, OUTBOX_EPROTO, field, "bool value %u is not 0 or 1", u);
	*v = u == 1;
	return 0;
}

static int check_pad(struct xdr_reader *r, const char *field, size_t n)
{
	size_t pad = (4 - (n & 3)) & 3;
	const uint8_t *p = take(r, field, pad);

	if (!p)
		return r->status;
	for (size_t i = 0; i < pad; i++)
		if (p[i])
			return xdr_fail(r, OUTBOX_EPROTO, field, "non-zero padding byte 0x%02x",
					p[i]);
	return 0;
}

int xdr_get_fixed(struct xdr_reader *r, const char *field, void *out, size_t n)
{
	const uint8_t *p = take(r, field, n);

	if (!p)
		return r->status;
	memcpy(out, p, n);
	return check_pad(r, field, n);
}

int xdr_get_var(struct xdr_reader *r, const char *field, uint32_t max, struct xdr_bytes *out)
{
	uint32_t n;
	const uint8_t *p;

	if (xdr_get_u32(r, field, &n))
		return r->status;
	if (n > max)
		return xdr_fail(r, OUTBOX_EPROTO, field, "length %u exceeds the maximum %u", n,
				max);
	p = take(r, field, n);
	if (!p)
		return r->status;
	out->p = p;
	out->len = n;
	return check_pad(r, field, n);
}

int xdr_get_count(struct xdr_reader *r, const char *field, uint32_t max, uint32_t *n)
{
	if (xdr_get_u32(r, field, n))
		return r->status;
	if (*n > max)
		return xdr_fail(r, OUTBOX_EPROTO, field, "count %u exceeds the maximum %u", *n,
				max);
	/* Every element takes at least 4 bytes: a cheap bound before any work. */
	if ((size_t)*n > (r->len - r->off) / 4)
		return xdr_fail(r, OUTBOX_EPROTO, field,
				"count %u cannot fit in the %zu bytes left", *n, r->len - r->off);
	return 0;
}

int xdr_skip(struct xdr_reader *r, const char *field, size_t n)
{
	return take(r, field, n) ? 0 : r->status;
}

size_t xdr_b64_decoded_max(size_t slen)
{
	return slen / 4 * 3 + 3;
}

static bool b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

int xdr_b64_decode(const char *s, size_t slen, uint8_t *out, size_t cap, size_t *outlen,
		   const char *field, struct outbox_error *err)
{
	const char *end = NULL;
	size_t pad;

	if (slen == 0 || slen % 4)
		return outbox_error_set(err, OUTBOX_EPROTO, field,
					"base64 of %zu characters is not a multiple of 4", slen);
	/* Our own alphabet check first: libsodium 1.0.18 maps some bytes >= 0x80 onto '/'. */
	pad = s[slen - 1] == '=' ? (s[slen - 2] == '=' ? 2 : 1) : 0;
	for (size_t i = 0; i < slen - pad; i++)
		if (!b64_char(s[i]))
			return outbox_error_set(err, OUTBOX_EPROTO, field,
						"invalid base64 at character %zu", i);
	if (sodium_base642bin(out, cap, s, slen, NULL, outlen, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != s + slen) {
		size_t at = end ? (size_t)(end - s) : 0;
		if (xdr_b64_decoded_max(slen) > cap)
			return outbox_error_set(err, OUTBOX_ETOOBIG, field,
						"base64 of %zu characters is too long", slen);
		return outbox_error_set(err, OUTBOX_EPROTO, field,
					"invalid base64 at character %zu", at);
	}
	return 0;
}

char *xdr_b64_encode(const uint8_t *p, size_t n)
{
	size_t m = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(m);

	if (s)
		sodium_bin2base64(s, m, p, n, sodium_base64_VARIANT_ORIGINAL);
	return s;
}
