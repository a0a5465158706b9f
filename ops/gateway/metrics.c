/*
 * metrics.c - GET /metrics, the Prometheus text format (0.0.4).
 *
 * Where each number comes from:
 *	shared memory, summed over every process's stats block: the counters,
 *	  gauges and histograms of common/shm/metrics.h (histograms kept in ms
 *	  or us are exported in seconds, named *_seconds), and the labeled
 *	  families (outbox_ops_total{kind, priority, outcome},
 *	  outbox_fee_bump_total{kind}, outbox_max_fee_hit_total{priority},
 *	  outbox_op_latency_seconds{kind}, outbox_dispatch_seconds{priority});
 *	  fee_oracle_clamp_total{bound} and
 *	  outbox_low_deferred_total are the oracle's and the workers' counters
 *	  under the names the dashboards use;
 *	the fee snapshot (seqcount copy): the fee_oracle_* gauges;
 *	the process table: outbox_process_restarts_total{role},
 *	  outbox_processes_running{role}; the hint rings: drops;
 *	PostgreSQL, cached for GW_DEPTH_MAX_AGE and refreshed by the loop while
 *	  someone scrapes: outbox_queue_depth{status, priority},
 *	  outbox_stuck_submitted.
 * The per-process fee views of the workers (outbox_fee_*_stroops, ...) are
 * left out: the fee_oracle_* gauges say it once.
 */
#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/fee_view.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/proc_table.h"
#include "common/shm/spsc_ring.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-memb.h>

#define DEPTH_STATUSES 3
struct gw_depth {
	struct rcu_head rcu;
	int64_t at_ms; /* monotonic */
	int64_t n[DEPTH_STATUSES][3];
	int64_t stuck;
};
static const char *const depth_status[DEPTH_STATUSES] = {"PENDING", "SUBMITTED", "HELD"};
static const char *const prio_names[3] = {"CRITICAL", "NORMAL", "LOW"};

/* ---- a growing buffer ---- */

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void out(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0 || b->oom)
			return;
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		char *np = realloc(b->p, b->cap * 2 + (size_t)n);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = b->cap * 2 + (size_t)n;
	}
}

static void head(struct buf *b, const char *name, const char *type, const char *help)
{
	out(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- shared memory ---- */

/* Histograms kept in ms or us are exported in seconds: "x_ms" -> "x_seconds", divisor. */
static uint64_t base_unit(const char *name, char *buf, size_t cap)
{
	size_t n = strlen(name);

	if (n > 3 && !strcmp(name + n - 3, "_ms")) {
		snprintf(buf, cap, "%.*s_seconds", (int)(n - 3), name);
		return 1000;
	}
	if (n > 3 && !strcmp(name + n - 3, "_us")) {
		snprintf(buf, cap, "%.*s_seconds", (int)(n - 3), name);
		return 1000000;
	}
	snprintf(buf, cap, "%s", name);
	return 1;
}

static void hist_out(struct buf *b, const char *name, const char *labels,
		     const struct stats_hist_view *v, uint64_t (*bound)(unsigned, unsigned),
		     unsigned id, uint64_t div)
{
	uint64_t cum = 0;

	for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++) {
		uint64_t ub = bound(id, i);

		cum += v->bucket[i];
		if (ub == UINT64_MAX)
			out(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels,
			    *labels ? "," : "", (unsigned long long)cum);
		else
			out(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, *labels ? "," : "",
			    (double)ub / (double)div, (unsigned long long)cum);
	}
	out(b, "%s_sum%s%s%s %.6f\n%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels,
	    *labels ? "}" : "", (double)v->sum / (double)div, name, *labels ? "{" : "", labels,
	    *labels ? "}" : "", (unsigned long long)cum);
}

static void hist_add(struct stats_hist_view *t, const struct stats_hist_view *v)
{
	for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++)
		t->bucket[i] += v->bucket[i];
	t->count += v->count;
	t->sum += v->sum;
}

/* Counters superseded by a labeled family or another name (their data is there). */
static bool counter_skipped(unsigned id)
{
	return id == MET_MAX_FEE_HIT;
}

static bool gauge_skipped(unsigned id)
{
	return id == MET_FEE_RECOMMENDED || id == MET_FEE_AGGRESSIVE || id == MET_FEE_CONGESTION ||
	       id == MET_SNAPSHOT_AGE_MS;
}

static void plain_metrics(struct buf *b, const struct shm_segment *seg)
{
	char name[128];

	for (unsigned id = 0; id < SHM_N_COUNTERS; id++) {
		if (counter_skipped(id))
			continue;
		head(b, stats_counter_name(id), "counter", stats_counter_help(id));
		out(b, "%s %llu\n", stats_counter_name(id),
		    (unsigned long long)stats_counter_sum(seg, (enum shm_counter_id)id));
	}
	for (unsigned id = 0; id < SHM_N_GAUGES; id++) {
		int64_t sum = 0;

		if (gauge_skipped(id))
			continue;
		for (uint32_t p = 0; p < seg->n_procs; p++)
			sum += stats_gauge_read(shm_stats_block(seg, p), (enum shm_gauge_id)id);
		head(b, stats_gauge_name(id), "gauge", stats_gauge_help(id));
		out(b, "%s %lld\n", stats_gauge_name(id), (long long)sum);
	}
	for (unsigned id = 0; id < SHM_N_HISTS; id++) {
		struct stats_hist_view t = {0}, v;
		uint64_t div = base_unit(stats_hist_name(id), name, sizeof(name));

		for (uint32_t p = 0; p < seg->n_procs; p++) {
			stats_hist_read(shm_stats_block(seg, p), (enum shm_hist_id)id, &v);
			hist_add(&t, &v);
		}
		head(b, name, "histogram", stats_hist_help(id));
		hist_out(b, name, "", &t, stats_hist_bound, id, div);
	}
}

/* label="value",... of one cell, for the dimensions whose index is below n_dims */
static void cell_labels(char *buf, size_t cap, const enum shm_dim d[3], unsigned cell,
			unsigned n_dims)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n_dims && i < 3; i++) {
		if (d[i] == SHM_DIM_NONE)
			continue;
		len += (size_t)snprintf(buf + len, cap - len, "%s%s=\"%s\"", len ? "," : "",
					stats_dim_label(d[i]),
					stats_dim_value(d[i], stats_cell_value(d, cell, i)));
	}
}

static void family_metrics(struct buf *b, const struct shm_segment *seg)
{
	char labels[160];

	for (unsigned f = 0; f < SHM_N_FAMILIES; f++) {
		enum shm_dim d[3] = {stats_family_dim(f, 0), stats_family_dim(f, 1),
				     stats_family_dim(f, 2)};

		head(b, stats_family_name(f), "counter", stats_family_help(f));
		for (unsigned c = 0; c < stats_family_cells(f); c++) {
			uint64_t sum = 0;

			for (uint32_t p = 0; p < seg->n_procs; p++)
				sum += stats_family_read(shm_stats_block(seg, p), f, c);
			cell_labels(labels, sizeof(labels), d, c, 3);
			out(b, "%s{%s} %llu\n", stats_family_name(f), labels,
			    (unsigned long long)sum);
		}
	}
}

/*
 * Histogram families are exported by their FIRST label only (the latency
 * by kind, as the dashboards query it); the other dimensions are summed
 * (the priority is for the ETA bands, conditions.c).
 */
static void hfamily_metrics(struct buf *b, const struct shm_segment *seg)
{
	char labels[160];

	for (unsigned f = 0; f < SHM_N_HFAMILIES; f++) {
		enum shm_dim d[3] = {stats_hfamily_dim(f, 0), stats_hfamily_dim(f, 1),
				     stats_hfamily_dim(f, 2)};
		unsigned n1 = stats_dim_size(d[0]), per = stats_hfamily_cells(f) / n1;

		head(b, stats_hfamily_name(f), "histogram", stats_hfamily_help(f));
		for (unsigned v1 = 0; v1 < n1; v1++) {
			struct stats_hist_view t = {0}, v;

			for (unsigned c = v1 * per; c < (v1 + 1) * per; c++)
				for (uint32_t p = 0; p < seg->n_procs; p++) {
					stats_hfamily_read(shm_stats_block(seg, p), f, c, &v);
					hist_add(&t, &v);
				}
			cell_labels(labels, sizeof(labels), d, v1 * per, 1);
			hist_out(b, stats_hfamily_name(f), labels, &t, stats_hfamily_bound, f,
				 stats_hfamily_divisor(f));
		}
	}
}

/* The dashboards' names for counters outboxd keeps under its own. */
static void renamed_metrics(struct buf *b, const struct shm_segment *seg)
{
	head(b, "fee_oracle_clamp_total", "counter",
	     "published fees the oracle clamped to FEE_ORACLE_MIN or FEE_ORACLE_MAX");
	out(b, "fee_oracle_clamp_total{bound=\"min\"} %llu\n",
	    (unsigned long long)stats_counter_sum(seg, MET_FEE_CLAMP_MIN));
	out(b, "fee_oracle_clamp_total{bound=\"max\"} %llu\n",
	    (unsigned long long)stats_counter_sum(seg, MET_FEE_CLAMP_MAX));
	head(b, "outbox_low_deferred_total", "counter", "LOW ops deferred under congestion");
	out(b, "outbox_low_deferred_total %llu\n",
	    (unsigned long long)stats_counter_sum(seg, MET_OPS_DEFERRED));
}

static void process_metrics(struct buf *b, const struct shm_segment *seg)
{
	static const char *const roles[] = {"supervisor", "oracle", "gateway", "worker"};
	uint64_t restarts[4] = {0}, running[4] = {0}, drops = 0;
	struct proc_slot_view v;

	for (uint32_t p = 0; p < seg->n_procs; p++) {
		proc_slot_read(shm_proc_slot(seg, p), &v);
		if ((unsigned)v.role < 4) {
			restarts[v.role] += v.restarts;
			running[v.role] += v.state == SHM_PROC_RUNNING || p == SHM_PROC_SUPERVISOR;
		}
	}
	head(b, "outbox_process_restarts_total", "counter",
	     "child processes respawned by the supervisor, by role");
	for (unsigned i = 1; i < 4; i++)
		out(b, "outbox_process_restarts_total{role=\"%s\"} %llu\n", roles[i],
		    (unsigned long long)restarts[i]);
	head(b, "outbox_processes_running", "gauge", "processes running, by role");
	for (unsigned i = 0; i < 4; i++)
		out(b, "outbox_processes_running{role=\"%s\"} %llu\n", roles[i],
		    (unsigned long long)running[i]);
	for (unsigned pr = 0; pr < SHM_N_PRODUCERS; pr++)
		for (uint32_t w = 0; w < seg->n_workers; w++) {
			struct shm_ring *r = shm_ring_get(seg, (enum shm_producer)pr, w);
			if (r)
				drops += atomic_load_explicit(&r->drops, memory_order_relaxed);
		}
	head(b, "outbox_ring_drops_total", "counter",
	     "hints dropped because a worker's ring was full (its sweep finds the work)");
	out(b, "outbox_ring_drops_total %llu\n", (unsigned long long)drops);
}

static void fee_metrics(struct buf *b, const struct gateway *g)
{
	struct fee_snapshot s;
	bool have = fee_snapshot_copy(g->ctx->seg, &s, FEE_COPY_MAX_TRIES, NULL) == 0;
	uint64_t now = wall_ms();

	head(b, "fee_oracle_staleness_seconds", "gauge",
	     "age of the published fee snapshot (+Inf: none published)");
	if (have)
		out(b, "fee_oracle_staleness_seconds %.3f\n",
		    (double)fee_snapshot_age_ms(&s, now) / 1000.0);
	else
		out(b, "fee_oracle_staleness_seconds +Inf\n");
	if (!have)
		return;
	head(b, "fee_oracle_recommended_base_fee", "gauge", "recommended base fee (p70), stroops");
	out(b, "fee_oracle_recommended_base_fee %llu\n",
	    (unsigned long long)s.recommended_base_fee);
	head(b, "fee_oracle_aggressive_base_fee", "gauge", "aggressive base fee (p95), stroops");
	out(b, "fee_oracle_aggressive_base_fee %llu\n", (unsigned long long)s.aggressive_base_fee);
	head(b, "fee_oracle_ledger_capacity_usage", "gauge", "ledger capacity usage, 0..1");
	out(b, "fee_oracle_ledger_capacity_usage %.6f\n",
	    (double)s.capacity_ppm / (double)FEE_CAPACITY_SCALE);
	head(b, "fee_oracle_congestion_level", "gauge",
	     "congestion level: 0 low, 1 elevated, 2 high, 3 severe");
	out(b, "fee_oracle_congestion_level %u\n", s.congestion);
}

/* ---- PostgreSQL: the depth ---- */

static void depth_metrics(struct buf *b, struct gateway *g)
{
	const struct gw_depth *d;

	urcu_memb_read_lock();
	d = rcu_dereference(g->depth);
	if (d) {
		head(b, "outbox_queue_depth", "gauge", "ops waiting, by status and priority");
		for (int s = 0; s < DEPTH_STATUSES; s++)
			for (int p = 0; p < 3; p++)
				out(b, "outbox_queue_depth{status=\"%s\",priority=\"%s\"} %lld\n",
				    depth_status[s], prio_names[p], (long long)d->n[s][p]);
		head(b, "outbox_stuck_submitted", "gauge",
		     "ops SUBMITTED with no change for longer than OUTBOX_SUBMITTED_TIMEOUT_MS "
		     "(lost in flight)");
		out(b, "outbox_stuck_submitted %lld\n", (long long)d->stuck);
	}
	urcu_memb_read_unlock();
}

static void free_depth(struct rcu_head *h)
{
	free(caa_container_of(h, struct gw_depth, rcu));
}

void gw_metrics_depth_load(struct gateway *g, const PGresult *res)
{
	struct gw_depth *d = calloc(1, sizeof(*d)), *old;

	if (!d)
		return;
	d->at_ms = (int64_t)mono_ms();
	for (int i = 0; i < PQntuples(res); i++) {
		const char *st = PQgetvalue(res, i, 0), *pr = PQgetvalue(res, i, 1);
		int64_t n = strtoll(PQgetvalue(res, i, 2), NULL, 10);

		if (!strcmp(st, "STUCK"))
			d->stuck = n;
		for (int s = 0; s < DEPTH_STATUSES; s++)
			for (int p = 0; p < 3; p++)
				if (!strcmp(st, depth_status[s]) && !strcmp(pr, prio_names[p]))
					d->n[s][p] = n;
	}
	old = rcu_xchg_pointer(&g->depth, d);
	if (old)
		urcu_memb_call_rcu(&old->rcu, free_depth);
}

bool gw_metrics_depth_fresh(struct gateway *g, int64_t now_ms)
{
	const struct gw_depth *d;
	bool fresh;

	atomic_store(&g->depth_wanted_ms, now_ms);
	urcu_memb_read_lock();
	d = rcu_dereference(g->depth);
	fresh = d && now_ms - d->at_ms <= GW_DEPTH_MAX_AGE;
	urcu_memb_read_unlock();
	return fresh;
}

void gw_metrics_free(struct gateway *g)
{
	struct gw_depth *old = rcu_xchg_pointer(&g->depth, NULL);

	if (old) {
		urcu_memb_synchronize_rcu();
		free(old);
	}
}

char *gw_metrics_render(struct gateway *g)
{
	struct buf b = {.cap = 65536};
	const struct shm_segment *seg = g->ctx->seg;

	if (!(b.p = malloc(b.cap)))
		return NULL;
	b.p[0] = '\0';
	plain_metrics(&b, seg);
	family_metrics(&b, seg);
	hfamily_metrics(&b, seg);
	renamed_metrics(&b, seg);
	process_metrics(&b, seg);
	fee_metrics(&b, g);
	depth_metrics(&b, g);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
