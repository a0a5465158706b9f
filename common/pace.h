/*
 * pace.h - a token bucket: at most `rate` units per second, at most `burst`
 * at once (pure, no I/O; the caller passes the clock).
 *
 * The promise: over any interval of t microseconds, pace_spend() grants at
 * most burst + rate * t / 1 000 000 units in all (rounded down), and a
 * caller that asks whenever pace_wait_us() says a unit is there is granted
 * the rate in the long run. Tokens are counted in millionths, so rates below
 * one a second and shares of a rate split between processes need no
 * floating point; a clock that runs backwards adds nothing.
 *
 * Used by the workers to cap the NORMAL and LOW ops they claim
 * (OUTBOX_NORMAL_LOW_MAX_RATE): on a host whose cores a backlog keeps busy,
 * the cap leaves room for the CRITICAL ops that arrive on top of it.
 */
#ifndef OUTBOX_COMMON_PACE_H
#define OUTBOX_COMMON_PACE_H

#include <stdint.h>

#define PACE_UNIT 1000000LL /* a token, in millionths */

struct pace {
	int64_t micro; /* tokens held, in millionths, 0..burst * PACE_UNIT */
	int64_t frac;  /* thousandths of a millionth carried from the last refill */
	int64_t at_us; /* the clock of the last refill */
	int started;   /* 0: the first refill fills the bucket */
};

/*
 * Refill for the time since the last call at rate_milli thousandths of a
 * unit per second (> 0), capped at burst units (>= 1); returns the whole
 * units now held.
 */
int64_t pace_refill(struct pace *p, int64_t now_us, int64_t rate_milli, int64_t burst);

/* Take n (>= 0) units, at most those held; returns how many were taken. */
int64_t pace_spend(struct pace *p, int64_t n);

/* Microseconds until a whole unit is held at rate_milli (0 when one is). */
int64_t pace_wait_us(const struct pace *p, int64_t rate_milli);

#endif
