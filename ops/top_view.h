/*
 * top_view.h - what `outboxctl top` shows, computed from two samples of a
 * running instance (ctl_stats_collect documents) and drawn as plain lines.
 *
 * Pure: no terminal, no clock, no I/O. ctl_top.c samples and draws; this
 * module decides the numbers (rates that survive a child's restart, the
 * sparkline's scale) and fits every line into the terminal's width, so a
 * narrow ssh window truncates instead of wrapping into garbage.
 */
#ifndef OUTBOX_OPS_TOP_VIEW_H
#define OUTBOX_OPS_TOP_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOP_HISTORY   240 /* samples kept for the sparkline */
#define TOP_MAX_LINES 200
#define TOP_LINE_MAX  1024 /* bytes, a UTF-8 line of up to ~300 columns */

/* The last TOP_HISTORY values of one rate, oldest first when read. */
struct top_history {
	double v[TOP_HISTORY];
	unsigned n, head;
};

/* Queue depth read from PostgreSQL (ctl_top.c), by priority 0..2. */
struct top_queue {
	bool known;
	long long pending[3], submitted[3];
	uint64_t age_ms; /* since it was read */
	char error[160]; /* why it is not known ("" when known) */
};

struct top_input {
	json_t *prev;                        /* the previous sample, or NULL on the first frame */
	json_t *cur;                         /* this sample */
	double dt_s;                         /* seconds between them */
	const struct top_history *confirmed; /* confirmed ops per second */
	const struct top_queue *queue;
	const char *clock; /* wall clock to show, e.g. "12:01:02" */
	int cols, rows;
	bool utf8; /* block characters for the sparkline, else ASCII */
};

/* A frame: lines, each at most cols columns; alert lines deserve attention. */
struct top_frame {
	int n;
	char line[TOP_MAX_LINES][TOP_LINE_MAX];
	bool alert[TOP_MAX_LINES];
};

/*
 * Per-second rate of a monotonic counter between two samples. A counter
 * that went backwards (the process restarted with a fresh block) or a
 * non-positive interval gives 0, never a negative or huge rate.
 */
double top_rate(uint64_t prev, uint64_t cur, double dt_s);

void top_history_push(struct top_history *h, double v);

/*
 * The last `width` values of h as a sparkline into buf (NUL-terminated,
 * truncated to cap), scaled to their maximum, which goes to *max. Values
 * are right-aligned: the newest is the last character; missing history is
 * blank. utf8 selects U+2581..U+2588 blocks, else " .:-=+*#".
 */
void top_sparkline(char *buf, size_t cap, const struct top_history *h, int width, bool utf8,
		   double *max);

/* The whole screen for in, at most in->rows lines (the last one a key hint). */
void top_render(struct top_frame *f, const struct top_input *in);

/* Columns (code points) of a UTF-8 string. */
int top_columns(const char *s);

#endif
