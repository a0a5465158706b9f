/*
 * congestion.c - see congestion.h. Pure functions; the state machine is
 * small enough to read in one screen: candidate (hysteresis), then dwell.
 */
#include "oracle/congestion.h"

#include <string.h>

void congestion_params_default(struct congestion_params *p, uint64_t dwell_ms)
{
	static const uint32_t uu[] = {0, 500000, 800000, 950000};
	static const uint32_t ud[] = {0, 400000, 700000, 850000};
	static const uint32_t su[] = {0, 2000, 5000, 20000};
	static const uint32_t sd[] = {0, 1500, 4000, 15000};

	memcpy(p->usage_up_ppm, uu, sizeof(uu));
	memcpy(p->usage_down_ppm, ud, sizeof(ud));
	memcpy(p->spread_up_milli, su, sizeof(su));
	memcpy(p->spread_down_milli, sd, sizeof(sd));
	p->dwell_ms = dwell_ms;
}

void congestion_init(struct congestion_state *st)
{
	memset(st, 0, sizeof(*st));
	st->level = FEE_CONGESTION_LOW;
}

void congestion_seed(struct congestion_state *st, enum fee_congestion level)
{
	congestion_init(st);
	if (level > FEE_CONGESTION_SEVERE)
		level = FEE_CONGESTION_SEVERE;
	st->have_level = true;
	st->level = level;
}

/* Highest level whose threshold pair (usage, spread) is reached. */
static enum fee_congestion level_reached(const uint32_t *usage, const uint32_t *spread,
					 const struct congestion_sample *s)
{
	for (int l = CONGESTION_LEVELS - 1; l > 0; l--)
		if (s->usage_ppm >= usage[l] || s->spread_milli >= spread[l])
			return (enum fee_congestion)l;
	return FEE_CONGESTION_LOW;
}

enum fee_congestion congestion_candidate(const struct congestion_params *p,
					 const struct congestion_sample *s, enum fee_congestion cur)
{
	enum fee_congestion up = level_reached(p->usage_up_ppm, p->spread_up_milli, s);
	enum fee_congestion down = level_reached(p->usage_down_ppm, p->spread_down_milli, s);

	if (up > cur)
		return up;
	if (down < cur)
		return down;
	return cur;
}

enum fee_congestion congestion_update(struct congestion_state *st,
				      const struct congestion_params *p,
				      const struct congestion_sample *s)
{
	enum fee_congestion cand = congestion_candidate(p, s, st->level);
	int dir;

	if (!st->have_level) {
		st->have_level = true;
		st->level = cand;
		st->pending = false;
		return st->level;
	}
	if (cand == st->level) {
		st->pending = false;
		return st->level;
	}
	dir = cand > st->level ? 1 : -1;
	if (!st->pending || st->pending_dir != dir) {
		st->pending = true;
		st->pending_dir = dir;
		st->pending_level = cand;
		st->pending_since_ms = s->now_ms;
	} else if (dir > 0 ? cand < st->pending_level : cand > st->pending_level) {
		st->pending_level = cand; /* only the nearer level held throughout */
	}
	if (s->now_ms >= st->pending_since_ms && s->now_ms - st->pending_since_ms >= p->dwell_ms) {
		st->level = st->pending_level;
		st->pending = false;
		/* A farther candidate starts its own dwell from now. */
		if (cand != st->level) {
			st->pending = true;
			st->pending_dir = dir;
			st->pending_level = cand;
			st->pending_since_ms = s->now_ms;
		}
	}
	return st->level;
}

uint32_t congestion_usage_ppm(uint64_t transaction_count, uint32_t ledger_count,
			      uint64_t ledger_max_tx)
{
	long double u;

	if (ledger_count == 0 || ledger_max_tx == 0)
		return 0;
	u = (long double)transaction_count / ledger_count / ledger_max_tx;
	if (u >= 1.0L)
		return 1000000;
	return (uint32_t)(u * 1000000.0L);
}

uint32_t congestion_spread_milli(uint64_t fee_min, uint64_t fee_p95)
{
	long double r;

	if (fee_p95 == 0)
		return 1000;
	r = (long double)fee_p95 / (long double)(fee_min ? fee_min : 1) * 1000.0L;
	if (r >= 4e9L)
		return 4000000000u;
	return (uint32_t)r;
}

uint64_t fee_clamp(uint64_t fee, uint64_t min, uint64_t max, enum fee_clamp *which)
{
	*which = FEE_CLAMP_NONE;
	if (fee < min) {
		fee = min;
		*which = FEE_CLAMP_MIN;
	}
	if (fee > max) {
		fee = max;
		*which = FEE_CLAMP_MAX;
	}
	if (fee < FEE_FLOOR) {
		fee = FEE_FLOOR;
		*which = FEE_CLAMP_FLOOR;
	}
	return fee;
}
