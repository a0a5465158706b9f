/*
 * apikey.h - API keys of the HTTP gateway (pure, no I/O): the format, the
 * hash PostgreSQL stores, the scopes.
 *
 * A key is "obx_" + 12 hex digits + "_" + 43 base64url characters: the
 * first 16 characters are its public prefix (how outbox.admin_keys finds its
 * row, what `outboxctl keys list` shows and what audit rows may name); the
 * rest is 32 random bytes. Only BLAKE2b-256 of the whole key is stored:
 * with 256 random bits a fast hash is enough (no dictionary to slow down),
 * and the gateway compares hashes in constant time. The key itself is
 * printed once by `outboxctl keys create` and never logged, stored or put
 * in shared memory.
 *
 * Used by outboxctl (create) and the gateway (verify); callers must have
 * called sodium_init().
 */
#ifndef OUTBOX_COMMON_APIKEY_H
#define OUTBOX_COMMON_APIKEY_H

#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APIKEY_LEN        60 /* the whole key */
#define APIKEY_PREFIX_LEN 16 /* "obx_" + 12 hex digits */
#define APIKEY_HASH_LEN   32

enum apikey_scope {
	APIKEY_SCOPE_READ = 1u << 0,    /* outbox:read */
	APIKEY_SCOPE_WRITE = 1u << 1,   /* outbox:write */
	APIKEY_SCOPE_ENQUEUE = 1u << 2, /* outbox:enqueue */
};
#define APIKEY_SCOPE_ALL 7u

/* A fresh key (NUL-terminated in out) from the system's CSPRNG. */
void apikey_generate(char out[APIKEY_LEN + 1]);

/*
 * Check the format of s (n bytes, not NUL-terminated) and copy its prefix.
 * 0, or OUTBOX_EINVAL (message without the key's bytes).
 */
int apikey_parse(const char *s, size_t n, char prefix[APIKEY_PREFIX_LEN + 1],
		 struct outbox_error *err);

/* BLAKE2b-256 of the n bytes of key. */
void apikey_hash(const char *key, size_t n, uint8_t out[APIKEY_HASH_LEN]);

/* Constant-time equality of two hashes. */
bool apikey_hash_equal(const uint8_t a[APIKEY_HASH_LEN], const uint8_t b[APIKEY_HASH_LEN]);

/* "outbox:read" -> APIKEY_SCOPE_READ ...; 0 when unknown. */
unsigned apikey_scope_parse(const char *name, size_t n);
/* The name of one scope bit, NULL otherwise. */
const char *apikey_scope_name(unsigned bit);

/*
 * A comma-separated list ("outbox:read,outbox:write") into a mask; an
 * unknown, empty or repeated scope is OUTBOX_EINVAL naming it.
 */
int apikey_scopes_parse(const char *csv, unsigned *out, struct outbox_error *err);

#endif
