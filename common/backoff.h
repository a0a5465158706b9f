/*
 * backoff.h - full-jitter exponential backoff (pure, no I/O).
 *
 * After the n-th failed attempt (n >= 1) the next try waits a uniformly random
 * time in [0, min(max_ms, base_ms * 2^(n-1))]. Full jitter spreads retries of
 * many ops that failed together (an RPC outage) instead of re-synchronising
 * them into waves. The caller supplies the random word so the rule stays
 * deterministic under test; production passes randombytes_random()-quality
 * 64-bit values.
 */
#ifndef OUTBOX_COMMON_BACKOFF_H
#define OUTBOX_COMMON_BACKOFF_H

#include <stdint.h>

/* The upper bound of the draw after failure n: min(max_ms, base_ms * 2^(n-1)),
 * computed without overflow. n == 0 is treated as 1. base_ms > max_ms yields
 * max_ms. */
uint64_t backoff_ceiling_ms(uint32_t n, uint64_t base_ms, uint64_t max_ms);

/* A delay in [0, backoff_ceiling_ms(n, base_ms, max_ms)] chosen by rnd. */
uint64_t backoff_full_jitter_ms(uint32_t n, uint64_t base_ms, uint64_t max_ms, uint64_t rnd);

#endif
