/*
 * util.c - small helpers of sim.h: the seeded PRNG, clocks, hex, and the
 * fee arithmetic of a submitted transaction.
 */
#include "tests/stellar-sim/sim.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static uint64_t rng_state;
static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;

void sim_rand_seed(uint64_t seed)
{
	pthread_mutex_lock(&rng_lock);
	rng_state = seed;
	pthread_mutex_unlock(&rng_lock);
}

uint64_t sim_rand_u64(void)
{
	uint64_t z;

	pthread_mutex_lock(&rng_lock);
	z = (rng_state += 0x9e3779b97f4a7c15ULL);
	pthread_mutex_unlock(&rng_lock);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double sim_rand_unit(void)
{
	return (double)(sim_rand_u64() >> 11) / 9007199254740992.0;
}

uint64_t sim_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t sim_wall_s(void)
{
	return (uint64_t)time(NULL);
}

void sim_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sim_unhex(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int hi = nibble(s[2 * i]), lo;

		if (hi < 0)
			return -1;
		lo = nibble(s[2 * i + 1]);
		if (lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return s[2 * n] == '\0' ? 0 : -1;
}

void sim_tx_free(struct sim_tx *tx)
{
	if (!tx)
		return;
	free(tx->envelope_b64);
	free(tx->auth_b64);
	free(tx);
}

int64_t sim_fee_add(__int128 a, __int128 b)
{
	__int128 r = a + b;

	return r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : (int64_t)r;
}

int64_t sim_tx_incl_bid(const struct sim_tx *tx)
{
	return sim_fee_add(tx->fee, -(__int128)tx->resource_fee);
}

uint32_t sim_tx_fee_ops(const struct sim_tx *tx)
{
	uint32_t k = tx->n_ops ? tx->n_ops : 1;

	return tx->fee_bump ? k + 1 : k;
}
