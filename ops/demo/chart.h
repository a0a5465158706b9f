/*
 * chart.h - terminal charts for the demo's summary: bars over time with a
 * value axis, a time axis, one-line strips (a sparkline, levels, spans) that
 * line up under them, and nearest-rank percentiles.
 *
 * Pure: it writes to a FILE and reads nothing else, so a unit test renders
 * into memory. Every row starts with a label column of CHART_LABEL_W
 * characters, then one character per time bucket, so rows line up. utf8
 * selects block characters (U+2581..U+2588); otherwise plain ASCII.
 */
#ifndef OUTBOX_OPS_DEMO_CHART_H
#define OUTBOX_OPS_DEMO_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CHART_LABEL_W 20
#define CHART_NONE    (-1.0) /* a bucket without a value (blank) */

/*
 * Bars of v[0..n) scaled to their maximum, `height` rows; marks (may be
 * NULL) draws a dot at each bucket's mark value (a second series, e.g. p99
 * over p50 bars) on the same scale. The top row's label is the maximum
 * formatted with fmt (e.g. "%.0f/s"), the bottom row's is 0.
 */
void chart_bars(FILE *out, const double *v, const double *marks, int n, int height, bool utf8,
		const char *fmt);

/* The time axis under n buckets of bucket_s seconds: ticks and labels every 10 buckets' worth. */
void chart_axis(FILE *out, int n, double bucket_s, bool utf8);

/*
 * A one-line sparkline of v (CHART_NONE: blank) scaled to `scale`, or to
 * its maximum when scale <= 0.
 */
void chart_strip(FILE *out, const char *label, const double *v, int n, double scale, bool utf8);

/* A span [start, end] in seconds as a bar under the axis; a short one is a single mark. */
void chart_span(FILE *out, const char *label, double start, double end, int n, double bucket_s,
		bool utf8);

/* Nearest-rank percentile p (0 < p <= 1) of sorted[0..n); 0 when n is 0. */
double chart_pctl(const double *sorted, size_t n, double p);

/* qsort comparator for doubles. */
int chart_cmp_double(const void *a, const void *b);

#endif
