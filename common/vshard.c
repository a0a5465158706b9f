/*
 * vshard.c - see vshard.h. crypto_hash_sha256 needs no sodium_init(): it
 * uses no random numbers and picks no CPU-specific code path at run time.
 */
#include "common/vshard.h"

#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

int outbox_vshard_owner(int vshard, int workers)
{
	if (vshard < 0 || workers < 1)
		return -EINVAL;
	return vshard % workers;
}

int outbox_lease_owner_format(char *out, size_t cap, const char *instance, unsigned index, long pid)
{
	int n = snprintf(out, cap, "%s/%u/%ld", instance, index, pid);

	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			out[0] = '\0';
		return -ENOSPC;
	}
	return n;
}

/* A decimal number in 0..INT_MAX, no sign, no leading zero, ending at *end. */
static bool decimal(const char *s, const char **end, long *v)
{
	long x = 0;
	const char *p = s;

	if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((x = x * 10 + (*p - '0')) > INT_MAX)
			return false;
	*end = p;
	*v = x;
	return true;
}

bool outbox_lease_owner_parse(const char *owner, const char *instance, unsigned *index, long *pid)
{
	size_t n = strlen(instance);
	const char *p;
	long i, q;

	if (strncmp(owner, instance, n) || owner[n] != '/' || !decimal(owner + n + 1, &p, &i) ||
	    *p != '/' || !decimal(p + 1, &p, &q) || *p)
		return false;
	*index = (unsigned)i;
	*pid = q;
	return true;
}

int outbox_vshards_parse(const char *s, int *out, struct outbox_error *err)
{
	long v = 0;

	*out = 0;
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || p - s >= 4)
			return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_VSHARDS",
						"'%.16s' is not an integer in 1..%d", s,
						OUTBOX_VSHARDS_MAX);
		v = v * 10 + (*p - '0');
	}
	if (v < 1 || v > OUTBOX_VSHARDS_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_VSHARDS",
					"'%s' is not an integer in 1..%d", s, OUTBOX_VSHARDS_MAX);
	*out = (int)v;
	return 0;
}
