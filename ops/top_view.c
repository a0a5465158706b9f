/*
 * top_view.c - the numbers and the lines of `outboxctl top` (top_view.h).
 */
#include "ops/top_view.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const prio_names[3] = {"CRITICAL", "NORMAL", "LOW"};

double top_rate(uint64_t prev, uint64_t cur, double dt_s)
{
	if (cur < prev || !(dt_s > 0))
		return 0;
	return (double)(cur - prev) / dt_s;
}

void top_history_push(struct top_history *h, double v)
{
	h->v[h->head] = v;
	h->head = (h->head + 1) % TOP_HISTORY;
	if (h->n < TOP_HISTORY)
		h->n++;
}

/* The i-th newest value (0 = newest); i < h->n. */
static double history_back(const struct top_history *h, unsigned i)
{
	return h->v[(h->head + TOP_HISTORY - 1 - i) % TOP_HISTORY];
}

void top_sparkline(char *buf, size_t cap, const struct top_history *h, int width, bool utf8,
		   double *max)
{
	static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588"};
	static const char ascii[] = " .:-=+*#";
	unsigned shown = width > 0 ? (unsigned)width : 0;
	size_t len = 0;

	*max = 0;
	if (shown > TOP_HISTORY)
		shown = TOP_HISTORY;
	for (unsigned i = 0; i < shown && i < h->n; i++)
		if (history_back(h, i) > *max)
			*max = history_back(h, i);
	if (cap == 0)
		return;
	buf[0] = '\0';
	for (unsigned col = 0; col < shown; col++) {
		unsigned back = shown - 1 - col; /* the last column is the newest */
		const char *c = " ";
		char one[2] = {0, 0};

		if (back < h->n) {
			double v = history_back(h, back);
			int level = *max > 0 ? (int)(v / *max * 7.0 + 0.5) : 0;

			level = level < 0 ? 0 : level > 7 ? 7 : level;
			if (utf8) {
				c = blocks[level];
			} else {
				one[0] = ascii[level];
				c = one;
			}
		}
		if (len + strlen(c) + 1 > cap)
			break;
		memcpy(buf + len, c, strlen(c) + 1);
		len += strlen(c);
	}
}

int top_columns(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* Cut s at `cols` code points, never inside a UTF-8 sequence. */
static void fit(char *s, int cols)
{
	int n = 0;

	for (char *p = s; *p; p++) {
		if (((unsigned char)*p & 0xC0) == 0x80)
			continue;
		if (n++ == cols) {
			*p = '\0';
			return;
		}
	}
}

/* Append a line unless the screen is full (the last row is the key hint). */
__attribute__((format(printf, 4, 5))) static void
add(struct top_frame *f, const struct top_input *in, bool alert, const char *fmt, ...)
{
	va_list ap;

	if (f->n >= TOP_MAX_LINES - 1 || f->n >= in->rows - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(f->line[f->n], TOP_LINE_MAX, fmt, ap);
	va_end(ap);
	fit(f->line[f->n], in->cols);
	f->alert[f->n++] = alert;
}

static long long jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static uint64_t total(json_t *doc, const char *name)
{
	json_int_t v =
		doc ? json_integer_value(json_object_get(json_object_get(doc, "totals"), name)) : 0;

	return v > 0 ? (uint64_t)v : 0;
}

static double total_rate(const struct top_input *in, const char *name)
{
	return in->prev ? top_rate(total(in->prev, name), total(in->cur, name), in->dt_s) : 0;
}

/* The sum of a gauge over every process. */
static long long gauge_sum(json_t *doc, const char *name)
{
	long long s = 0;
	size_t i;
	json_t *row;

	json_array_foreach(json_object_get(doc, "processes"), i, row) s +=
		jint(json_object_get(row, "gauges"), name);
	return s;
}

static void render_header(struct top_frame *f, const struct top_input *in)
{
	json_t *cur = in->cur;

	add(f, in, false, "outboxd %s  segment %s  supervisor heartbeat %lld ms  %s",
	    json_string_value(json_object_get(cur, "instance")),
	    json_string_value(json_object_get(cur, "segment")),
	    jint(cur, "supervisor_heartbeat_age_ms"), in->clock);
	if (!json_is_true(json_object_get(cur, "supervisor_alive")))
		add(f, in, true, "! supervisor not running or stuck: this segment may be stale");
}

static void render_fee(struct top_frame *f, const struct top_input *in)
{
	json_t *fee = json_object_get(in->cur, "fee");
	bool stale = json_is_true(json_object_get(fee, "stale"));

	if (!json_is_true(json_object_get(fee, "published"))) {
		add(f, in, true, "fee      none published (%s)",
		    json_string_value(json_object_get(fee, "error")));
		return;
	}
	add(f, in, stale,
	    "fee      recommended %lld  aggressive %lld stroops  congestion %s  capacity %.0f%%  "
	    "ledger %lld  age %lld ms%s",
	    jint(fee, "recommendedBaseFee"), jint(fee, "aggressiveBaseFee"),
	    json_string_value(json_object_get(fee, "congestionLevel")),
	    json_real_value(json_object_get(fee, "ledgerCapacityUsage")) * 100.0,
	    jint(fee, "latestLedger"), jint(fee, "ageMs"), stale ? "  STALE" : "");
}

static void render_queue(struct top_frame *f, const struct top_input *in)
{
	const struct top_queue *q = in->queue;
	char part[3][64];

	if (!q || !q->known) {
		add(f, in, false, "queue    unknown: %s",
		    q && q->error[0] ? q->error : "no database");
		return;
	}
	for (int p = 0; p < 3; p++)
		snprintf(part[p], sizeof(part[p]), "%s %lld/%lld", prio_names[p], q->pending[p],
			 q->submitted[p]);
	add(f, in, false, "queue    %s  %s  %s  (pending/submitted, read %.1f s ago)", part[0],
	    part[1], part[2], (double)q->age_ms / 1000.0);
}

static void render_totals(struct top_frame *f, const struct top_input *in)
{
	uint64_t held = total(in->cur, "outbox_ops_held_total");
	uint64_t alarms = total(in->cur, "outbox_sequence_alarms_total") +
			  total(in->cur, "outbox_landed_late_total");

	add(f, in, false,
	    "per s    confirmed %.1f  failed %.1f  retried %.1f  deferred %.1f  fee bumps %.1f  "
	    "sends %.1f  claims %.1f",
	    total_rate(in, "outbox_ops_confirmed_total"), total_rate(in, "outbox_ops_failed_total"),
	    total_rate(in, "outbox_ops_retried_total"), total_rate(in, "outbox_ops_deferred_total"),
	    total_rate(in, "outbox_fee_bumps_total"), total_rate(in, "outbox_sends_total"),
	    total_rate(in, "outbox_claims_total"));
	add(f, in, false,
	    "total    confirmed %llu  failed %llu  expired %llu  max fee hits %llu  resyncs %llu",
	    (unsigned long long)total(in->cur, "outbox_ops_confirmed_total"),
	    (unsigned long long)total(in->cur, "outbox_ops_failed_total"),
	    (unsigned long long)total(in->cur, "outbox_tx_expired_total"),
	    (unsigned long long)total(in->cur, "outbox_max_fee_hit_total"),
	    (unsigned long long)total(in->cur, "outbox_vshard_resyncs_total"));
	if (held || alarms)
		add(f, in, true,
		    "! %llu ops held for an operator, %llu sequence alarms or late landings since "
		    "start (README: what HELD means)",
		    (unsigned long long)held, (unsigned long long)alarms);
	if (total(in->cur, "outbox_events_sealed_total") == 0) {
		add(f, in, false,
		    "events   none relayed (OUTBOX_KAFKA_BROKERS unset, or no op yet)");
		return;
	}
	add(f, in, false,
	    "events   published %.1f/s  unpublished %lld  producer queue %lld  delivery failures "
	    "%llu",
	    total_rate(in, "outbox_events_published_total"),
	    gauge_sum(in->cur, "outbox_events_unpublished"),
	    gauge_sum(in->cur, "outbox_kafka_queue"),
	    (unsigned long long)total(in->cur, "outbox_event_delivery_failures_total"));
}

static void render_spark(struct top_frame *f, const struct top_input *in)
{
	char spark[TOP_HISTORY * 3 + 1];
	int width = in->cols - 32;
	double max;

	if (!in->confirmed || width < 8)
		return;
	top_sparkline(spark, sizeof(spark), in->confirmed, width, in->utf8, &max);
	add(f, in, false, "confirmed/s %s max %.0f", spark, max);
}

/* The row of prev with the same role, index and pid, or NULL (restarted). */
static json_t *prev_row(const struct top_input *in, json_t *row)
{
	size_t i;
	json_t *p;

	if (!in->prev)
		return NULL;
	json_array_foreach(json_object_get(in->prev, "processes"), i, p)
	{
		if (jint(p, "index") == jint(row, "index") && jint(p, "pid") == jint(row, "pid") &&
		    json_equal(json_object_get(p, "role"), json_object_get(row, "role")))
			return p;
	}
	return NULL;
}

static void row_rate(char *buf, size_t cap, const struct top_input *in, json_t *prev, json_t *row,
		     const char *counter)
{
	json_int_t a, b;

	if (!prev) {
		snprintf(buf, cap, "-");
		return;
	}
	a = json_integer_value(json_object_get(json_object_get(prev, "counters"), counter));
	b = json_integer_value(json_object_get(json_object_get(row, "counters"), counter));
	snprintf(buf, cap, "%.1f",
		 top_rate(a > 0 ? (uint64_t)a : 0, b > 0 ? (uint64_t)b : 0, in->dt_s));
}

static void render_procs(struct top_frame *f, const struct top_input *in)
{
	json_t *procs = json_object_get(in->cur, "processes"), *row;
	size_t i, n = json_array_size(procs);

	add(f, in, false, "%-10s %3s %8s %-9s %9s %8s %8s %9s %9s %9s", "ROLE", "IDX", "PID",
	    "STATE", "HEARTBEAT", "RESTARTS", "INFLIGHT", "CLAIMS/s", "CONFIRM/s", "LOOPS/s");
	json_array_foreach(procs, i, row)
	{
		json_t *prev = prev_row(in, row);
		const char *role = json_string_value(json_object_get(row, "role"));
		const char *state = json_string_value(json_object_get(row, "state"));
		bool down = strcmp(state ? state : "", "running") != 0;
		char claims[16], conf[16], loops[16];

		if (f->n >= in->rows - 2 && i + 1 < n) {
			add(f, in, false, "... %zu more processes (a taller window shows them)",
			    n - i);
			return;
		}
		row_rate(claims, sizeof(claims), in, prev, row, "outbox_claims_total");
		row_rate(conf, sizeof(conf), in, prev, row, "outbox_ops_confirmed_total");
		row_rate(loops, sizeof(loops), in, prev, row, "outbox_loop_iterations_total");
		add(f, in, down && strcmp(role ? role : "", "supervisor") != 0,
		    "%-10s %3lld %8lld %-9s %7lldms %8lld %8lld %9s %9s %9s", role ? role : "?",
		    jint(row, "index"), jint(row, "pid"), state ? state : "?",
		    jint(row, "heartbeat_age_ms"), jint(row, "restarts"),
		    jint(json_object_get(row, "gauges"), "outbox_inflight"), claims, conf, loops);
	}
}

void top_render(struct top_frame *f, const struct top_input *in)
{
	f->n = 0;
	render_header(f, in);
	render_fee(f, in);
	render_queue(f, in);
	render_totals(f, in);
	render_spark(f, in);
	add(f, in, false, "%s", "");
	render_procs(f, in);
	/* The key hint always gets the last row, whatever was cut above. */
	if (f->n < TOP_MAX_LINES) {
		snprintf(f->line[f->n], TOP_LINE_MAX, "q quit");
		fit(f->line[f->n], in->cols);
		f->alert[f->n++] = false;
	}
}
