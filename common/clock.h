/*
 * clock.h - the clocks of outboxd, read in one place.
 *
 * mono_ms(), mono_us() and mono_ns() read CLOCK_MONOTONIC: deadlines, timers, backoff,
 * heartbeats and ages. It never jumps, and it is one clock for the whole
 * host, so a heartbeat one process stores in shared memory is aged by
 * another (the supervisor, outboxctl) with its own reading.
 *
 * wall_ms() and wall_us() read CLOCK_REALTIME, since the epoch: for what is
 * compared with other hosts or the chain, or shown to people (a fee
 * snapshot's sampled_at, a process's started_at).
 */
#ifndef OUTBOX_COMMON_CLOCK_H
#define OUTBOX_COMMON_CLOCK_H

#include <stdint.h>

int64_t mono_ms(void);
int64_t mono_us(void);
uint64_t mono_ns(void);
uint64_t wall_ms(void);
int64_t wall_us(void);

#endif
