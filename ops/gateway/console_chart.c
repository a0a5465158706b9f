/*
 * console_chart.c - the console's chart and rates: see console_chart.h.
 */
#include "ops/gateway/console_chart.h"

#include <stddef.h>

void chart_push(struct chart_ring *r, const struct chart_sample *s)
{
	r->s[r->next] = *s;
	r->next = (r->next + 1) % CHART_SAMPLES;
	if (r->n < CHART_SAMPLES)
		r->n++;
}

const struct chart_sample *chart_nth(const struct chart_ring *r, unsigned i)
{
	return &r->s[(r->next + CHART_SAMPLES - r->n + i) % CHART_SAMPLES];
}

const struct chart_sample *chart_newest(const struct chart_ring *r)
{
	return r->n ? chart_nth(r, r->n - 1) : NULL;
}

double chart_rate(uint64_t a, uint64_t b, int64_t ms)
{
	return ms > 0 && b >= a ? (double)(b - a) * 1000.0 / (double)ms : 0;
}

void chart_window(const uint64_t a[SHM_HIST_BUCKETS], const uint64_t b[SHM_HIST_BUCKETS],
		  uint64_t out[SHM_HIST_BUCKETS])
{
	for (unsigned k = 0; k < SHM_HIST_BUCKETS; k++)
		out[k] = b[k] >= a[k] ? b[k] - a[k] : 0;
}

const struct chart_sample *chart_rate_base(const struct chart_ring *r, int64_t now_ms,
					   int64_t min_ms)
{
	for (unsigned i = r->n; i-- > 0;)
		if (now_ms - chart_nth(r, i)->mono_ms >= min_ms)
			return chart_nth(r, i);
	return NULL;
}
