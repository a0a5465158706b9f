/*
 * xdr_buf.h - XDR (RFC 4506) primitives as Stellar uses them: a writer and a
 * bounded reader, plus strict base64 for the wire.
 *
 * Writer: appends big-endian units into either a caller-owned fixed buffer or
 * a growable heap buffer with a hard maximum. Errors are sticky: after the
 * first failure every put is a no-op and xdr_writer_status() reports it, so
 * encoders can put a whole structure and check once.
 *
 * Reader: a cursor over [buf, buf+len). Every get checks the remaining length
 * first, every variable-length item has an explicit maximum, padding must be
 * zero, and xdr_reader_finish() rejects trailing bytes. Failures fill the
 * reader's outbox_error with "<field>: <what>" (e.g. "tx.memo: unknown
 * MemoType 7") and return OUTBOX_EPROTO / OUTBOX_ETOOBIG; the first error
 * wins and later gets fail too. The reader never allocates: variable items
 * come back as views (struct xdr_bytes) into the input, which the caller must
 * keep alive and unchanged while it uses them.
 */
#ifndef OUTBOX_STELLAR_XDR_BUF_H
#define OUTBOX_STELLAR_XDR_BUF_H

#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A borrowed byte range (a view into a decode input or a caller's memory). */
struct xdr_bytes {
	const uint8_t *p;
	uint32_t len;
};

struct xdr_writer {
	uint8_t *buf;
	size_t len;
	size_t cap;
	size_t max;    /* growable: hard ceiling on len */
	bool growable; /* buf is ours (malloc) */
	int status;    /* 0, or the first failure (-ENOMEM, OUTBOX_ETOOBIG, OUTBOX_EINVAL) */
};

/* A growable writer that refuses to grow past max bytes. */
void xdr_writer_init(struct xdr_writer *w, size_t max);
/* A writer over caller memory buf[0..cap); never allocates. */
void xdr_writer_init_fixed(struct xdr_writer *w, uint8_t *buf, size_t cap);
/* Frees a growable writer's buffer (wiped first) and resets it. */
void xdr_writer_release(struct xdr_writer *w);
/* Takes the buffer out of a growable writer (caller frees); NULL on failure. */
uint8_t *xdr_writer_detach(struct xdr_writer *w, size_t *len);
static inline int xdr_writer_status(const struct xdr_writer *w)
{
	return w->status;
}

void xdr_put_u32(struct xdr_writer *w, uint32_t v);
void xdr_put_i32(struct xdr_writer *w, int32_t v);
void xdr_put_u64(struct xdr_writer *w, uint64_t v);
void xdr_put_i64(struct xdr_writer *w, int64_t v);
void xdr_put_bool(struct xdr_writer *w, bool v);
/* Fixed opaque[n]: the bytes and zero padding to a multiple of 4. */
void xdr_put_fixed(struct xdr_writer *w, const void *p, size_t n);
/* Variable opaque<max>/string<max>: u32 length, bytes, zero padding. */
void xdr_put_var(struct xdr_writer *w, const void *p, size_t n, size_t max);
/* Raw bytes without length or padding (n must be a multiple of 4). */
void xdr_put_raw(struct xdr_writer *w, const void *p, size_t n);

struct xdr_reader {
	const uint8_t *buf;
	size_t len;
	size_t off;
	size_t mark; /* where the item being read started (for messages) */
	int status;  /* 0, or the first failure */
	int depth;   /* recursion guard for nested ScVal / invocations */
	struct outbox_error *err;
};

/*
 * Start reading buf[0..len). Fails with OUTBOX_ETOOBIG when len > max_total.
 * err may be NULL.
 */
int xdr_reader_init(struct xdr_reader *r, const uint8_t *buf, size_t len, size_t max_total,
		    struct outbox_error *err);
/* 0 when the whole input was consumed, else an error naming the trailing bytes. */
int xdr_reader_finish(struct xdr_reader *r, const char *what);
/* Record a decode failure (first one wins); returns the reader's status. */
int xdr_fail(struct xdr_reader *r, int code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * The getters return 0, or the reader's status (non-zero) once anything
 * failed. xdr_get_u32 stores 0 in *v on failure, so a length or count read
 * by it is defined on every path.
 */
int xdr_get_u32(struct xdr_reader *r, const char *field, uint32_t *v);
int xdr_get_i32(struct xdr_reader *r, const char *field, int32_t *v);
int xdr_get_u64(struct xdr_reader *r, const char *field, uint64_t *v);
int xdr_get_i64(struct xdr_reader *r, const char *field, int64_t *v);
/* bool: a u32 that must be 0 or 1. */
int xdr_get_bool(struct xdr_reader *r, const char *field, bool *v);
/* Fixed opaque[n] copied into out (padding checked). */
int xdr_get_fixed(struct xdr_reader *r, const char *field, void *out, size_t n);
/* Variable opaque<max>: a view into the input; padding must be zero. */
int xdr_get_var(struct xdr_reader *r, const char *field, uint32_t max, struct xdr_bytes *out);
/* Array count (u32) that must be <= max. */
int xdr_get_count(struct xdr_reader *r, const char *field, uint32_t max, uint32_t *n);
/* Skip n raw bytes (a multiple of 4). */
int xdr_skip(struct xdr_reader *r, const char *field, size_t n);

/*
 * Strict standard base64 (RFC 4648 alphabet with '+' '/', '=' padding
 * required, no whitespace). Decode writes at most cap bytes into out.
 */
int xdr_b64_decode(const char *s, size_t slen, uint8_t *out, size_t cap, size_t *outlen,
		   const char *field, struct outbox_error *err);
/* Bytes of output a base64 string of slen characters can decode to. */
size_t xdr_b64_decoded_max(size_t slen);
/* NUL-terminated base64 of p[0..n) in a malloc'd string (NULL on ENOMEM). */
char *xdr_b64_encode(const uint8_t *p, size_t n);

#endif
