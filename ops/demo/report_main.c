/*
 * report_main.c - outbox-demo-report: the demo's summary after the run.
 *
 *	outbox-demo-report [--db URL] [--width N] [--ascii]
 *
 * Prints the ops by final state, enqueue -> confirm latency per priority,
 * fee bumps and deferrals, whether every business row mirrors its op, and
 * charts of throughput and latency over the run with the fee, the
 * congestion level and the injected faults lined up under them.
 *
 * Exit codes: 0 the run ended as it should (every op CONFIRMED, except the
 * overdrafts, which FAILED; every business row agrees with its op); 1 it did
 * not (each problem is named) or the database could not be read; 2 usage.
 */
#include "common/enqueue.h"
#include "ops/demo/chart.h"
#include "ops/demo/report.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const line_names[RL__COUNT] = {
	"WITHDRAW        CRITICAL", "DEPOSIT         NORMAL", "DEPOSIT (recur.) LOW",
	"REFERRAL_REWARD NORMAL",   "REBALANCE       LOW",
};
static const char *const prio_names[3] = {"CRITICAL", "NORMAL", "LOW"};

struct opts {
	const char *db;
	int width;
	bool utf8;
};

/* The usage on out; 0 for --help (stdout), 2 for a usage error (stderr). */
static int usage_to(FILE *out)
{
	fprintf(out,
		"usage: outbox-demo-report [--db URL] [--width N] [--ascii]\n"
		"  --db URL   the demo's database (default: OUTBOX_DATABASE_URL)\n"
		"  --width N  chart columns, 20..200 (default 72)\n"
		"  --ascii    plain ASCII charts (default: blocks when the locale is UTF-8)\n");
	return out == stdout ? 0 : 2;
}

static int usage(void)
{
	return usage_to(stderr);
}

static int parse(int argc, char **argv, struct opts *o)
{
	setlocale(LC_ALL, "");
	*o = (struct opts){.db = getenv("OUTBOX_DATABASE_URL"),
			   .width = 72,
			   .utf8 = !strcasecmp(nl_langinfo(CODESET), "UTF-8")};
	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--help")) {
			return usage_to(stdout) - 1; /* -1: done, exit 0 */
		} else if (!strcmp(argv[i], "--ascii")) {
			o->utf8 = false;
		} else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			o->db = argv[++i];
		} else if (!strcmp(argv[i], "--width") && i + 1 < argc) {
			errno = 0;
			o->width = (int)strtol(argv[++i], &end, 10);
			if (errno || *end || o->width < 20 || o->width > 200) {
				fprintf(stderr,
					"outbox-demo-report: --width: '%s' is not in 20..200\n",
					argv[i]);
				return 2;
			}
		} else {
			return usage();
		}
	}
	if (!o->db || !*o->db) {
		fprintf(stderr, "outbox-demo-report: --db (or OUTBOX_DATABASE_URL) is required\n");
		return 2;
	}
	return 0;
}

/* The table of final states; returns how many ops are in an unexpected one. */
static int print_states(const struct report_data *d)
{
	int64_t n[RL__COUNT + 1][3] = {{0}};
	int bad = 0;

	for (size_t i = 0; i < d->n_ops; i++) {
		const struct report_op *o = &d->ops[i];
		int col = !strcmp(o->status, "CONFIRMED") ? 0
			  : !strcmp(o->status, "FAILED")  ? 1
							  : 2;

		n[o->line][col]++;
		n[RL__COUNT][col]++;
		if ((col == 0 && !o->overdraft) || (col == 1 && o->overdraft))
			continue;
		if (bad++ < 5)
			printf("   UNEXPECTED: op %lld %s is %s%s%s\n", (long long)o->id,
			       line_names[o->line], o->status, o->detail[0] ? ": " : "", o->detail);
	}
	printf("   %-26s %9s %7s %6s\n", "ops by final state", "CONFIRMED", "FAILED", "other");
	for (int l = 0; l <= RL__COUNT; l++)
		printf("   %-26s %9lld %7lld %6lld\n", l < RL__COUNT ? line_names[l] : "total",
		       (long long)n[l][0], (long long)n[l][1], (long long)n[l][2]);
	if (!bad)
		printf("   the %lld FAILED ops are exactly the overdrafts the load asked for "
		       "(withdrawals beyond the balance: the vault traps on chain)\n",
		       (long long)n[RL__COUNT][1]);
	return bad;
}

static int print_rows(const struct report_data *d)
{
	printf("   app.payments: %lld business rows (the ops enqueued in the application's "
	       "transaction): %lld paid, %lld failed, %lld still requested; %s\n",
	       (long long)d->rows, (long long)d->rows_paid, (long long)d->rows_failed,
	       (long long)d->rows_open,
	       d->rows_agree == d->rows ? "each one agrees with its op"
					: "SOME DISAGREE WITH THEIR OP");
	if ((int64_t)d->n_ops > d->rows)
		printf("   the other %lld ops came over HTTP from services without a business row "
		       "here\n",
		       (long long)d->n_ops - (long long)d->rows);
	return d->rows_agree == d->rows ? 0 : 1;
}

/* The demo's congestion phase, from demo.marks: [*a, *b]; false when there was none. */
static bool congestion_span(const struct report_data *d, double *a, double *b)
{
	for (size_t i = 0; i < d->n_marks; i++)
		if (!strcmp(d->marks[i].label, "congestion")) {
			*a = d->marks[i].start;
			*b = d->marks[i].end;
			return true;
		}
	return false;
}

/* Sorted latencies of priority p's confirmed ops enqueued in [a, b] into lat; their count. */
static size_t latencies(const struct report_data *d, int p, double a, double b, double *lat)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n_ops; i++) {
		const struct report_op *o = &d->ops[i];

		if (o->priority == p && o->confirmed >= 0 && o->created >= a && o->created <= b)
			lat[n++] = o->confirmed - o->created;
	}
	qsort(lat, n, sizeof(double), chart_cmp_double);
	return n;
}

static void print_latency(const struct report_data *d)
{
	double *lat = calloc(d->n_ops ? d->n_ops : 1, sizeof(double)), a = 0, b = -1;
	bool cong = congestion_span(d, &a, &b);

	if (!lat)
		return;
	printf("\n   %-22s %8s %8s %8s %6s   %s\n", "enqueue -> CONFIRMED", "p50", "p99", "max",
	       "ops", cong ? "enqueued during congestion: p50, p99" : "");
	for (int p = 0; p < 3; p++) {
		size_t n = latencies(d, p, -1e9, 1e9, lat);

		printf("   %-22s %7.2fs %7.2fs %7.2fs %6zu", prio_names[p], chart_pctl(lat, n, 0.5),
		       chart_pctl(lat, n, 0.99), n ? lat[n - 1] : 0, n);
		n = cong ? latencies(d, p, a, b, lat) : 0;
		if (n)
			printf("   %7.2fs %7.2fs (%zu ops)", chart_pctl(lat, n, 0.5),
			       chart_pctl(lat, n, 0.99), n);
		printf("\n");
	}
	free(lat);
}

static void print_fees(const struct report_data *d)
{
	printf("\n   fee bumps: %lld (on %lld ops); LOW deferrals under congestion: %lld (on %lld "
	       "ops); new attempts after a failed one: %lld\n",
	       (long long)d->bumps, (long long)d->bumped_ops, (long long)d->deferrals,
	       (long long)d->deferred_ops, (long long)d->retries);
	printf("   inclusion fee bid by the transactions that landed: median %lld, highest %lld "
	       "stroops (each also paid its Soroban resource fee)\n",
	       (long long)d->fee_median, (long long)d->fee_max);
}

struct series {
	int n;         /* buckets */
	double bucket; /* seconds per bucket */
	double *thru;  /* confirmed per second */
	double *p50;   /* latency of the ops enqueued in the bucket */
	double *p99;
	double *fee;   /* highest recommended fee sampled */
	double *level; /* highest congestion level sampled */
};

/* The run's span in buckets of whole seconds, at most width of them. */
static void size_series(const struct report_data *d, int width, struct series *s)
{
	double end = d->load_end;

	for (size_t i = 0; i < d->n_ops; i++)
		if (d->ops[i].settled > end)
			end = d->ops[i].settled;
	s->bucket = ceil(ceil(end) / width);
	if (s->bucket < 1)
		s->bucket = 1;
	s->n = (int)ceil(end / s->bucket);
	if (s->n < 1)
		s->n = 1;
}

static int bucket_of(const struct series *s, double t)
{
	int b = (int)floor(t / s->bucket);

	return b < 0 ? 0 : b >= s->n ? s->n - 1 : b;
}

/* p50 and p99 latency of the ops enqueued in each bucket (CHART_NONE: none confirmed). */
static void latency_series(const struct report_data *d, struct series *s, double *tmp)
{
	for (int b = 0; b < s->n; b++) {
		size_t n = 0;

		for (size_t i = 0; i < d->n_ops; i++)
			if (d->ops[i].confirmed >= 0 && bucket_of(s, d->ops[i].created) == b)
				tmp[n++] = d->ops[i].confirmed - d->ops[i].created;
		qsort(tmp, n, sizeof(double), chart_cmp_double);
		s->p50[b] = n ? chart_pctl(tmp, n, 0.5) : 0;
		s->p99[b] = n ? chart_pctl(tmp, n, 0.99) : 0;
	}
}

static int fill_series(const struct report_data *d, struct series *s)
{
	double *all = calloc((size_t)s->n * 5 + d->n_ops + 1, sizeof(double));

	if (!all)
		return -1;
	s->thru = all;
	s->p50 = all + s->n;
	s->p99 = all + 2 * s->n;
	s->fee = all + 3 * s->n;
	s->level = all + 4 * s->n;
	for (int b = 0; b < s->n; b++)
		s->fee[b] = s->level[b] = CHART_NONE;
	for (size_t i = 0; i < d->n_ops; i++)
		if (d->ops[i].confirmed >= 0)
			s->thru[bucket_of(s, d->ops[i].confirmed)] += 1 / s->bucket;
	for (size_t i = 0; i < d->n_samples; i++) {
		int b = bucket_of(s, d->samples[i].at);

		if (d->samples[i].fee > s->fee[b])
			s->fee[b] = d->samples[i].fee;
		if (d->samples[i].congestion > s->level[b])
			s->level[b] = d->samples[i].congestion;
	}
	latency_series(d, s, all + 5 * s->n);
	return 0;
}

static void print_charts(const struct report_data *d, const struct opts *o)
{
	struct series s;
	double fee_max = 0;

	size_series(d, o->width, &s);
	if (fill_series(d, &s))
		return;
	for (int b = 0; b < s.n; b++)
		fee_max = s.fee[b] > fee_max ? s.fee[b] : fee_max;
	printf("\n   confirmed ops per second, over the run (%.0f s a column)\n", s.bucket);
	chart_bars(stdout, s.thru, NULL, s.n, 6, o->utf8, "%.0f/s");
	chart_axis(stdout, s.n, s.bucket, o->utf8);
	printf("\n   enqueue -> CONFIRMED latency of the ops enqueued each second (bars p50, %s "
	       "p99)\n",
	       o->utf8 ? "\u2022" : "o");
	chart_bars(stdout, s.p50, s.p99, s.n, 6, o->utf8, "%.1fs");
	chart_axis(stdout, s.n, s.bucket, o->utf8);
	printf("%*s(the oracle's recommended fee, up to %.0f stroops, and congestion level,\n"
	       "%*s low..severe; then what the demo injected)\n",
	       CHART_LABEL_W, "", fee_max, CHART_LABEL_W, "");
	chart_strip(stdout, "fee (oracle)", s.fee, s.n, 0, o->utf8);
	chart_strip(stdout, "level (oracle)", s.level, s.n, 3, o->utf8);
	for (size_t i = 0; i < d->n_marks; i++)
		chart_span(stdout, d->marks[i].label, d->marks[i].start, d->marks[i].end, s.n,
			   s.bucket, o->utf8);
	free(s.thru);
}

int main(int argc, char **argv)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct report_data d;
	struct opts o;
	PGconn *conn;
	int rc = parse(argc, argv, &o), bad;

	if (rc)
		return rc < 0 ? 0 : rc;
	if (outbox_db_connect(o.db, &conn, &err)) {
		fprintf(stderr, "outbox-demo-report: %s\n", err.msg);
		return 1;
	}
	rc = report_load(conn, &d);
	PQfinish(conn);
	if (rc)
		return 1;
	bad = print_states(&d);
	bad += print_rows(&d);
	print_latency(&d);
	print_fees(&d);
	print_charts(&d, &o);
	report_free(&d);
	return bad ? 1 : 0;
}
