/*
 * pace.c - see pace.h.
 */
#include "common/pace.h"

int64_t pace_refill(struct pace *p, int64_t now_us, int64_t rate_milli, int64_t burst)
{
	int64_t cap, dt, fill_us;

	if (rate_milli < 1)
		rate_milli = 1;
	if (burst < 1)
		burst = 1;
	cap = burst * PACE_UNIT;
	if (!p->started) {
		p->started = 1;
		p->micro = cap;
		p->at_us = now_us;
		return burst;
	}
	dt = now_us - p->at_us;
	if (dt <= 0)
		return p->micro / PACE_UNIT; /* a clock that went back adds nothing */
	p->at_us = now_us;
	/* Past the time an empty bucket takes to fill it is full: no overflow below. */
	fill_us = cap / rate_milli * 1000 + 1000;
	if (dt >= fill_us) {
		p->micro = cap;
	} else {
		/* rate_milli / 1000 millionths a microsecond; the remainder is kept */
		int64_t add = dt * rate_milli + p->frac;

		p->micro += add / 1000;
		p->frac = add % 1000;
	}
	if (p->micro >= cap) {
		p->micro = cap;
		p->frac = 0;
	}
	return p->micro / PACE_UNIT;
}

int64_t pace_spend(struct pace *p, int64_t n)
{
	int64_t have = p->micro / PACE_UNIT;

	if (n < 0)
		n = 0;
	if (n > have)
		n = have;
	p->micro -= n * PACE_UNIT;
	return n;
}

int64_t pace_wait_us(const struct pace *p, int64_t rate_milli)
{
	int64_t need = PACE_UNIT - p->micro;

	if (need <= 0)
		return 0;
	if (rate_milli < 1)
		rate_milli = 1;
	return (need * 1000 + rate_milli - 1) / rate_milli;
}
