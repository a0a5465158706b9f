/*
 * vshard.c - see vshard.h. crypto_hash_sha256 needs no sodium_init(): it
 * uses no random numbers and picks no CPU-specific code path at run time.
 */
#include "common/vshard.h"

#include <errno.h>
#include <sodium.h>
#include <stdint.h>

#include "common/migrate.h"

int outbox_vshard_of(const char *signer, size_t len, int vshards)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	uint32_t v;

	if (!signer || vshards < 1 || vshards > OUTBOX_VSHARDS_MAX)
		return -EINVAL;
	crypto_hash_sha256(h, (const unsigned char *)signer, len);
	v = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
	return (int)(v % (uint32_t)vshards);
}
