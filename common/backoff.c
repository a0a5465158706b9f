/* backoff.c - see backoff.h. */
#include "common/backoff.h"

uint64_t backoff_ceiling_ms(uint32_t n, uint64_t base_ms, uint64_t max_ms)
{
	uint64_t c = base_ms;

	if (n == 0)
		n = 1;
	/* Double n-1 times, stopping as soon as the cap is reached: this both
	 * bounds the loop (at most 64 doublings of a non-zero base) and makes
	 * overflow impossible, since c <= max_ms before every doubling. */
	for (uint32_t i = 1; i < n && c < max_ms; i++)
		c = c > max_ms / 2 ? max_ms : c * 2;
	return c < max_ms ? c : max_ms;
}

uint64_t backoff_full_jitter_ms(uint32_t n, uint64_t base_ms, uint64_t max_ms, uint64_t rnd)
{
	uint64_t ceil = backoff_ceiling_ms(n, base_ms, max_ms);

	if (ceil == UINT64_MAX)
		return rnd;
	return rnd % (ceil + 1);
}
