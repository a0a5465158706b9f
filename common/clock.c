/*
 * clock.c - see clock.h. clock_gettime on these clocks cannot fail on
 * Linux (valid clock ids, a valid pointer), so no error is returned.
 */
#include "common/clock.h"

#include <time.h>

int64_t mono_ms(void)
{
	return (int64_t)(mono_ns() / 1000000u);
}

int64_t mono_us(void)
{
	return (int64_t)(mono_ns() / 1000u);
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
