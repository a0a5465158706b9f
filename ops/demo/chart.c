/*
 * chart.c - terminal charts (chart.h).
 */
#include "ops/demo/chart.h"

#include <math.h>
#include <string.h>

/* Eighths of a cell: index 0 is empty, 8 is full. */
static const char *const blocks[9] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
				      "\u2585", "\u2586", "\u2587", "\u2588"};
static const char *const ascii[9] = {" ", ".", ".", ".", "+", "+", "+", "+", "#"};

static const char *cell(int eighths, bool utf8)
{
	eighths = eighths < 0 ? 0 : eighths > 8 ? 8 : eighths;
	return utf8 ? blocks[eighths] : ascii[eighths];
}

static double max_of(const double *v, int n)
{
	double m = 0;

	for (int i = 0; v && i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* Bar height of x in eighths of a cell, on a chart `height` cells high. */
static int eighths_of(double x, double max, int height)
{
	if (!(max > 0) || x <= 0)
		return 0;
	return (int)lround(x / max * height * 8);
}

static void label(FILE *out, const char *s)
{
	fprintf(out, "   %-*.*s", CHART_LABEL_W - 3, CHART_LABEL_W - 3, s);
}

/* One row of bars: the row `row` cells above the axis (0 = the lowest). */
static void bar_row(FILE *out, const double *v, const double *marks, int n, int height, int row,
		    double max, bool utf8)
{
	for (int i = 0; i < n; i++) {
		int fill = eighths_of(v[i], max, height) - row * 8;
		int mark = marks ? eighths_of(marks[i], max, height) : 0;

		/* a mark shows in its cell when the bar stays below that cell; not in
		 * the lowest row, where it would only say "small" */
		if (row > 0 && mark > 0 && (mark - 1) / 8 == row && fill <= 0)
			fputs(utf8 ? "\u2022" : "o", out);
		else
			fputs(cell(fill, utf8), out);
	}
	fputc('\n', out);
}

void chart_bars(FILE *out, const double *v, const double *marks, int n, int height, bool utf8,
		const char *fmt)
{
	double max = max_of(v, n), mmax = max_of(marks, n);
	char top[32];

	if (mmax > max)
		max = mmax;
	snprintf(top, sizeof(top), fmt, max);
	for (int row = height - 1; row >= 0; row--) {
		const char *axis = "";

		if (row == height - 1)
			axis = top;
		else if (row == 0)
			axis = "0";
		fprintf(out, "   %*s %s", CHART_LABEL_W - 5, axis, utf8 ? "\u2502" : "|");
		bar_row(out, v, marks, n, height, row, max, utf8);
	}
}

/*
 * Columns between ticks: a round number of seconds (10 s, 20 s, 30 s, ...)
 * that is a whole number of buckets and leaves room for its label.
 */
static int tick_every(double bucket_s)
{
	static const int steps[] = {10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		double cols = steps[i] / bucket_s;

		if (cols >= 6 && cols == floor(cols))
			return (int)cols;
	}
	return 10;
}

void chart_axis(FILE *out, int n, double bucket_s, bool utf8)
{
	int every = tick_every(bucket_s), col = 0;
	char lab[32];

	fprintf(out, "   %*s %s", CHART_LABEL_W - 5, "", utf8 ? "\u2514" : "+");
	for (int i = 0; i < n; i++)
		fputs(i % every == 0 ? (utf8 ? "\u252c" : "+") : (utf8 ? "\u2500" : "-"), out);
	fprintf(out, "\n%*s", CHART_LABEL_W, "");
	/* each label starts at its tick, one blank at least after the previous one */
	for (int i = 0; i < n; i += every) {
		int len = snprintf(lab, sizeof(lab), "%.0fs", i * bucket_s);

		if (i > 0 && col >= i)
			continue;
		fprintf(out, "%*s%s", i - col, "", lab);
		col = i + len;
	}
	fputc('\n', out);
}

void chart_strip(FILE *out, const char *name, const double *v, int n, double scale, bool utf8)
{
	double max = scale > 0 ? scale : max_of(v, n);

	label(out, name);
	for (int i = 0; i < n; i++) {
		int e = eighths_of(v[i], max, 1);

		/* every known value shows, the smallest as the lowest block */
		fputs(v[i] == CHART_NONE ? " " : cell(e > 0 ? e : 1, utf8), out);
	}
	fputc('\n', out);
}

void chart_span(FILE *out, const char *name, double start, double end, int n, double bucket_s,
		bool utf8)
{
	int a = (int)floor(start / bucket_s), b = (int)floor(end / bucket_s);

	label(out, name);
	for (int i = 0; i < n; i++) {
		if (i < a || i > b)
			fputc(' ', out);
		else if (a == b)
			fputs(utf8 ? "\u25b2" : "^", out);
		else
			fputs(utf8 ? "\u2501" : "=", out);
	}
	fputc('\n', out);
}

int chart_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double chart_pctl(const double *sorted, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)ceil(p * (double)n);
	return sorted[rank ? rank - 1 : 0];
}
