/*
 * conditions.c - GET /api/v1/network/conditions, the estimates an enqueue
 * answers with, and the facts `why` needs from shared memory.
 *
 * The fee numbers are the fee snapshot as a worker reads it
 * (common/fee_view.h): the oracle's while fresh; past its TTL plus the
 * grace, the default fee at low congestion, with "stale": true, which is
 * what outboxd itself bids then.
 *
 * ETA bands: p50 and p90 of creation-to-confirmation per priority, from the
 * workers' outbox_op_latency_seconds histograms (by kind and priority in
 * shared memory). The loop samples them every ETA_SAMPLE_MS and keeps
 * ETA_SAMPLES samples, so a band describes the last five minutes; with
 * fewer than ETA_MIN_OBS confirmations in that window it falls back to
 * everything since the start, and to null when there is nothing.
 * Quantiles interpolate within a bucket, as Prometheus' histogram_quantile
 * does. The bands are published to the HTTP threads by an RCU pointer.
 */
#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/fee_policy.h"
#include "common/fee_view.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/inflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu/urcu-memb.h>

#define ETA_SAMPLE_MS 5000
#define ETA_SAMPLES   61 /* five minutes of samples, both ends included */
#define ETA_MIN_OBS   5

struct gw_eta {
	struct rcu_head rcu;
	double p50[3], p90[3]; /* seconds; < 0: none */
};

struct eta_ring {
	uint64_t b[ETA_SAMPLES][3][SHM_HIST_BUCKETS];
	unsigned n, next;
};

/* What the HTTP threads need of the (reloadable) configuration, kept by the loop. */
static _Atomic int64_t default_fee = 100, global_max = 1000, low_max_defer = 600000;

/* ---- ETA bands (loop thread) ---- */

static void sample(const struct shm_segment *seg, uint64_t out[3][SHM_HIST_BUCKETS])
{
	unsigned per_kind = stats_hfamily_cells(HFAM_OP_LATENCY) / SHM_DIM_KIND_N;
	struct stats_hist_view v;

	memset(out, 0, sizeof(uint64_t) * 3 * SHM_HIST_BUCKETS);
	for (unsigned c = 0; c < stats_hfamily_cells(HFAM_OP_LATENCY); c++) {
		unsigned prio = c % per_kind; /* (kind, priority): priority varies fastest */

		for (uint32_t p = 0; p < seg->n_procs; p++) {
			stats_hfamily_read(shm_stats_block(seg, p), HFAM_OP_LATENCY, c, &v);
			for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++)
				out[prio][i] += v.bucket[i];
		}
	}
}

/* The q-quantile of non-cumulative buckets b, in seconds; < 0 with too few. */
static double quantile(const uint64_t *b, double q, uint64_t min_obs)
{
	uint64_t total = 0, cum = 0;
	double div = (double)stats_hfamily_divisor(HFAM_OP_LATENCY);

	for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++)
		total += b[i];
	if (total < min_obs || total == 0)
		return -1;
	for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++) {
		double lo = i ? (double)stats_hfamily_bound(HFAM_OP_LATENCY, i - 1) : 0;
		uint64_t hi = stats_hfamily_bound(HFAM_OP_LATENCY, i);

		if ((double)(cum + b[i]) >= q * (double)total && b[i]) {
			if (hi == UINT64_MAX)
				return lo / div; /* the +Inf bucket: its lower bound */
			return (lo + ((double)hi - lo) * (q * (double)total - (double)cum) /
					     (double)b[i]) /
			       div;
		}
		cum += b[i];
	}
	return -1;
}

static void free_eta(struct rcu_head *h)
{
	free(caa_container_of(h, struct gw_eta, rcu));
}

static void eta_publish(struct gateway *g, const struct eta_ring *ring)
{
	const uint64_t(*now)[SHM_HIST_BUCKETS] =
		ring->b[(ring->next + ETA_SAMPLES - 1) % ETA_SAMPLES];
	const uint64_t(*old)[SHM_HIST_BUCKETS] =
		ring->b[ring->n < ETA_SAMPLES ? 0 : ring->next % ETA_SAMPLES];
	struct gw_eta *e = calloc(1, sizeof(*e)), *prev;
	uint64_t win[SHM_HIST_BUCKETS];

	if (!e)
		return;
	for (int p = 0; p < 3; p++) {
		for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++)
			win[i] = now[p][i] - old[p][i];
		e->p50[p] = quantile(win, 0.5, ETA_MIN_OBS);
		e->p90[p] = quantile(win, 0.9, ETA_MIN_OBS);
		if (e->p50[p] < 0) { /* too few recently: since the start */
			e->p50[p] = quantile(now[p], 0.5, 1);
			e->p90[p] = quantile(now[p], 0.9, 1);
		}
	}
	prev = rcu_xchg_pointer(&g->eta, e);
	if (prev)
		urcu_memb_call_rcu(&prev->rcu, free_eta);
}

void gw_conditions_tick(struct gateway *g, int64_t now_ms)
{
	struct eta_ring *ring = g->eta_ring;
	const struct outbox_config *cfg = g->ctx->cfg;

	atomic_store(&default_fee, cfg->fee_oracle_default_base_fee);
	atomic_store(&global_max, cfg->global_max_in_flight);
	atomic_store(&low_max_defer, cfg->low_max_defer_ms);
	if (g->eta_at_ms && now_ms - g->eta_at_ms < ETA_SAMPLE_MS)
		return;
	if (!ring && !(ring = g->eta_ring = calloc(1, sizeof(*ring))))
		return;
	g->eta_at_ms = now_ms;
	sample(g->ctx->seg, ring->b[ring->next]);
	ring->next = (ring->next + 1) % ETA_SAMPLES;
	if (ring->n < ETA_SAMPLES)
		ring->n++;
	eta_publish(g, ring);
}

void gw_conditions_free(struct gateway *g)
{
	struct gw_eta *e = rcu_xchg_pointer(&g->eta, NULL);

	if (e) {
		urcu_memb_synchronize_rcu();
		free(e);
	}
	free(g->eta_ring);
	g->eta_ring = NULL;
}

void gw_latency_sample(struct gateway *g, uint64_t out[3][SHM_HIST_BUCKETS])
{
	sample(g->ctx->seg, out);
}

double gw_latency_quantile(const uint64_t *b, double q)
{
	return quantile(b, q, 1);
}

/* ---- readers (any thread) ---- */

static bool view(struct gateway *g, struct fee_view *v, struct fee_snapshot *s)
{
	bool have = fee_snapshot_copy(g->ctx->seg, s, FEE_COPY_MAX_TRIES, NULL) == 0;

	fee_view_eval(v, have ? s : NULL, wall_ms(), (uint64_t)atomic_load(&default_fee));
	return have;
}

static json_t *eta_json(struct gateway *g)
{
	static const char *const names[3] = {"CRITICAL", "NORMAL", "LOW"};
	json_t *bands = json_object();
	const struct gw_eta *e;

	urcu_memb_read_lock();
	e = rcu_dereference(g->eta);
	for (int p = 0; p < 3; p++) {
		double p50 = e ? e->p50[p] : -1, p90 = e ? e->p90[p] : -1;

		json_object_set_new(bands, names[p],
				    json_pack("{s:o, s:o}", "p50",
					      p50 >= 0 ? json_real(p50) : json_null(), "p90",
					      p90 >= 0 ? json_real(p90) : json_null()));
	}
	urcu_memb_read_unlock();
	return bands;
}

static json_t *iso_time(uint64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[40], out[48];

	if (!ms || !gmtime_r(&t, &tm))
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, sizeof(out), "%s.%03uZ", buf, (unsigned)(ms % 1000));
	return json_string(out);
}

char *gw_conditions_render(struct gateway *g)
{
	struct fee_snapshot s;
	struct fee_view v;
	bool have = view(g, &v, &s);
	json_t *j = json_pack(
		"{s:I, s:I, s:s, s:o, s:o, s:o, s:b, s:o, s:o}", "recommendedBaseFee",
		(json_int_t)v.recommended, "aggressiveBaseFee", (json_int_t)v.aggressive,
		"congestionLevel", fee_congestion_name(v.congestion), "ledgerCapacityUsage",
		have ? json_real((double)s.capacity_ppm / FEE_CAPACITY_SCALE) : json_null(),
		"sampledAt", have ? iso_time(s.sampled_at_ms) : json_null(), "ttlMs",
		have ? json_integer(s.ttl_ms) : json_null(), "stale", v.stale, "latestLedger",
		have ? json_integer(s.latest_ledger) : json_null(), "etaBands", eta_json(g));
	char *out = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return out;
}

void gw_conditions_estimate(struct gateway *g, int priority, uint64_t *fee, double *eta_s)
{
	const struct outbox_config *cfg = g->ctx->cfg;
	struct fee_policy_params pp = {.max_abs_fee = (uint64_t)cfg->max_abs_fee,
				       .bump_milli = cfg->fee_bump_multiplier_milli,
				       .low_defer_ms = cfg->low_defer_ms,
				       .low_max_defer_ms = cfg->low_max_defer_ms};
	struct fee_snapshot s;
	struct fee_view v;
	struct fee_decision d;
	const struct gw_eta *e;

	view(g, &v, &s);
	/* the bid it makes when it goes: a LOW op's deferrals spent */
	fee_policy_decide(&d, &pp,
			  &(struct fee_policy_in){.priority = (enum op_priority)priority,
						  .view = &v,
						  .deferred_ms = cfg->low_max_defer_ms});
	*fee = d.fee;
	urcu_memb_read_lock();
	e = rcu_dereference(g->eta);
	*eta_s = e && priority >= 0 && priority < 3 ? e->p50[priority] : -1;
	urcu_memb_read_unlock();
}

char *gw_conditions_why_facts(struct gateway *g)
{
	struct fee_snapshot s;
	struct fee_view v;
	json_t *j;
	char *out;

	view(g, &v, &s);
	j = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}", "congestion", (int)v.congestion,
		      "latestLedger", (json_int_t)v.latest_ledger, "closeTime",
		      (json_int_t)v.close_time, "inFlight", (json_int_t)inflight_total(g->ctx->seg),
		      "maxInFlight", (json_int_t)atomic_load(&global_max), "lowMaxDeferMs",
		      (json_int_t)atomic_load(&low_max_defer));
	out = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return out;
}
