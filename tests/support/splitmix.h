/*
 * splitmix.h - splitmix64 for the suites that need many reproducible
 * pseudo-random draws: a fixed, well-mixed sequence of 64-bit values from
 * a seed, the same on every machine.
 */
#ifndef OUTBOX_TESTS_SPLITMIX_H
#define OUTBOX_TESTS_SPLITMIX_H

#include <stdint.h>

static inline uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif
