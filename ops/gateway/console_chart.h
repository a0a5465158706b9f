/*
 * console_chart.h - the console's chart and rates, from samples of
 * cumulative counters and latency histograms taken by the gateway's loop.
 * Pure (no clock, no shared memory, no allocation): console.c takes the
 * samples and reads the answers; tests/unit/check_console_chart.c proves
 * the rules.
 *
 * The counters are sums over every process's stats block, and a restarted
 * process starts its block again from zero, so a later sample may be lower
 * than an earlier one: such an interval counts nothing (0 per second, an
 * empty bucket) rather than a negative or a wrapped-around number.
 */
#ifndef OUTBOX_OPS_GATEWAY_CONSOLE_CHART_H
#define OUTBOX_OPS_GATEWAY_CONSOLE_CHART_H

#include "common/shm/metrics.h"

#include <stdint.h>

#define CHART_SAMPLE_MS 5000 /* the loop's sampling period */
#define CHART_SAMPLES   61   /* five minutes of samples, both ends included */

struct chart_sample {
	uint64_t wall_ms; /* when, for the page's time axis */
	int64_t mono_ms;  /* when, for the rates */
	uint64_t confirmed, failed;
	uint64_t lat[3][SHM_HIST_BUCKETS]; /* by priority, non-cumulative buckets */
};

/* The last CHART_SAMPLES samples; zero-initialised is empty. */
struct chart_ring {
	struct chart_sample s[CHART_SAMPLES];
	unsigned n, next;
};

/* Keep s, forgetting the oldest once full. */
void chart_push(struct chart_ring *r, const struct chart_sample *s);
/* The i-th oldest sample, i < r->n. */
const struct chart_sample *chart_nth(const struct chart_ring *r, unsigned i);
/* The newest sample (NULL when empty). */
const struct chart_sample *chart_newest(const struct chart_ring *r);
/* Per second from a to b over ms: 0 when ms <= 0 or b < a (a restart). */
double chart_rate(uint64_t a, uint64_t b, int64_t ms);
/* The buckets of the interval from a to b: b - a each, 0 where b < a. */
void chart_window(const uint64_t a[SHM_HIST_BUCKETS], const uint64_t b[SHM_HIST_BUCKETS],
		  uint64_t out[SHM_HIST_BUCKETS]);
/*
 * What the rates "now" are measured from: the newest sample at least min_ms
 * before now_ms (a younger one would make a rate of a few events over a few
 * milliseconds); NULL when there is none.
 */
const struct chart_sample *chart_rate_base(const struct chart_ring *r, int64_t now_ms,
					   int64_t min_ms);

#endif
