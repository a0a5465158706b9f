/*
 * apikey.c - see apikey.h.
 */
#include "common/apikey.h"

#include <sodium.h>
#include <string.h>

static const char *const scope_names[] = {"outbox:read", "outbox:write", "outbox:enqueue"};
#define N_SCOPES (sizeof(scope_names) / sizeof(scope_names[0]))

void apikey_generate(char out[APIKEY_LEN + 1])
{
	uint8_t pub[6], secret[32];

	randombytes_buf(pub, sizeof(pub));
	randombytes_buf(secret, sizeof(secret));
	memcpy(out, "obx_", 4);
	sodium_bin2hex(out + 4, 13, pub, sizeof(pub));
	out[16] = '_';
	sodium_bin2base64(out + 17, APIKEY_LEN + 1 - 17, secret, sizeof(secret),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(secret, sizeof(secret));
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool is_b64url(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

int apikey_parse(const char *s, size_t n, char prefix[APIKEY_PREFIX_LEN + 1],
		 struct outbox_error *err)
{
	if (n != APIKEY_LEN || memcmp(s, "obx_", 4) || s[16] != '_')
		return outbox_error_set(err, OUTBOX_EINVAL, "key",
					"is not an outboxd API key (obx_<12 hex>_<43 base64url>)");
	for (size_t i = 4; i < 16; i++)
		if (!is_hex(s[i]))
			return outbox_error_set(err, OUTBOX_EINVAL, "key",
						"has a malformed prefix");
	for (size_t i = 17; i < APIKEY_LEN; i++)
		if (!is_b64url(s[i]))
			return outbox_error_set(err, OUTBOX_EINVAL, "key",
						"has a malformed secret part");
	memcpy(prefix, s, APIKEY_PREFIX_LEN);
	prefix[APIKEY_PREFIX_LEN] = '\0';
	return 0;
}

void apikey_hash(const char *key, size_t n, uint8_t out[APIKEY_HASH_LEN])
{
	crypto_generichash_state st;

	/* the state buffers the key's bytes: wipe it, not just let the stack be reused */
	crypto_generichash_init(&st, NULL, 0, APIKEY_HASH_LEN);
	crypto_generichash_update(&st, (const unsigned char *)key, n);
	crypto_generichash_final(&st, out, APIKEY_HASH_LEN);
	sodium_memzero(&st, sizeof(st));
}

bool apikey_hash_equal(const uint8_t a[APIKEY_HASH_LEN], const uint8_t b[APIKEY_HASH_LEN])
{
	return crypto_verify_32(a, b) == 0;
}

unsigned apikey_scope_parse(const char *name, size_t n)
{
	for (size_t i = 0; i < N_SCOPES; i++)
		if (strlen(scope_names[i]) == n && !memcmp(scope_names[i], name, n))
			return 1u << i;
	return 0;
}

const char *apikey_scope_name(unsigned bit)
{
	for (size_t i = 0; i < N_SCOPES; i++)
		if (bit == 1u << i)
			return scope_names[i];
	return NULL;
}

int apikey_scopes_parse(const char *csv, unsigned *out, struct outbox_error *err)
{
	unsigned mask = 0;
	const char *p = csv ? csv : "";

	for (;;) {
		size_t n = strcspn(p, ",");
		unsigned bit = apikey_scope_parse(p, n);

		if (!bit)
			return outbox_error_set(err, OUTBOX_EINVAL, "scopes",
						"'%.*s' is not one of outbox:read, outbox:write, "
						"outbox:enqueue",
						(int)(n > 64 ? 64 : n), p);
		if (mask & bit)
			return outbox_error_set(err, OUTBOX_EINVAL, "scopes", "'%.*s' is repeated",
						(int)n, p);
		mask |= bit;
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = mask;
	return 0;
}
