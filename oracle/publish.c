/*
 * publish.c - a successful round becomes a FeeSnapshot in shared memory.
 *
 * Fees come from getFeeStats' Soroban lane (sorobanInclusionFee: outboxd
 * only submits vault-contract invocations): recommended = p70, aggressive =
 * p95, each clamped to [FEE_ORACLE_MIN, FEE_ORACLE_MAX] and floored at 100,
 * every clamp counted by bound. Capacity usage and the min-to-p95 spread of
 * the same lane feed the congestion rules (congestion.h). sampled_at is the
 * CLOCK_REALTIME time the round completed; ttl is FEE_ORACLE_TTL_MS.
 */
#include "oracle/oracle.h"

#include "common/clock.h"
#include "common/fee_view.h"
#include "common/log.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static uint64_t clamp_counted(struct oracle *o, uint64_t fee)
{
	const struct outbox_config *c = o->ctx->cfg;
	enum fee_clamp which;

	fee = fee_clamp(fee, (uint64_t)c->fee_oracle_min, (uint64_t)c->fee_oracle_max, &which);
	if (which == FEE_CLAMP_MIN)
		stats_counter_add(o->stats, MET_FEE_CLAMP_MIN, 1);
	else if (which == FEE_CLAMP_MAX)
		stats_counter_add(o->stats, MET_FEE_CLAMP_MAX, 1);
	else if (which == FEE_CLAMP_FLOOR)
		stats_counter_add(o->stats, MET_FEE_CLAMP_FLOOR, 1);
	return fee;
}

/*
 * A snapshot that changed what readers act on (fees, congestion) becomes a
 * FEE_SNAPSHOT event; a change whose write cannot be queued is reported
 * with the next publish.
 */
static void report(struct oracle *o, const struct fee_snapshot *s)
{
	char body[256];
	const char *p[2] = {o->ctx->cfg->instance, body};

	if (!o->relay ||
	    (o->reported && s->recommended_base_fee == o->last_recommended &&
	     s->aggressive_base_fee == o->last_aggressive && s->congestion == o->last_congestion))
		return;
	snprintf(body, sizeof(body),
		 "{\"recommended\": %llu, \"aggressive\": %llu, \"congestion\": \"%s\", "
		 "\"capacity_usage\": %.6f, \"latest_ledger\": %u, \"stale\": false}",
		 (unsigned long long)s->recommended_base_fee,
		 (unsigned long long)s->aggressive_base_fee, fee_congestion_name(s->congestion),
		 s->capacity_ppm / 1e6, s->latest_ledger);
	if (relay_write(o->relay, "SELECT outbox.fee_event($1, $2::jsonb)", 2, p))
		return;
	o->reported = true;
	o->last_recommended = s->recommended_base_fee;
	o->last_aggressive = s->aggressive_base_fee;
	o->last_congestion = s->congestion;
}

void oracle_publish(struct oracle *o)
{
	const struct outbox_config *c = o->ctx->cfg;
	const struct rpc_fee_distribution *d = &o->fee_stats.soroban;
	struct congestion_params params;
	struct congestion_sample sample;
	struct fee_snapshot snap;
	enum fee_congestion before = o->cong.level, level;
	bool had = o->cong.have_level;
	uint64_t gen = 0, poll_ms = (uint64_t)c->fee_oracle_poll_ms;
	int rc;

	congestion_params_default(&params, (uint64_t)c->fee_oracle_dwell_ms);
	sample.usage_ppm = congestion_usage_ppm(d->transaction_count, d->ledger_count,
						(uint64_t)c->fee_oracle_ledger_max_tx);
	sample.spread_milli = congestion_spread_milli(d->min, d->p95);
	sample.now_ms = (uint64_t)mono_ms();
	level = congestion_update(&o->cong, &params, &sample);

	memset(&snap, 0, sizeof(snap));
	snap.recommended_base_fee = clamp_counted(o, d->p70);
	snap.aggressive_base_fee = clamp_counted(o, d->p95);
	snap.congestion = level;
	snap.capacity_ppm = sample.usage_ppm;
	snap.sampled_at_ms = wall_ms();
	snap.ttl_ms = (uint32_t)c->fee_oracle_ttl_ms;
	snap.latest_ledger = o->latest.sequence;
	snap.latest_ledger_close_time =
		o->latest.close_time > 0 ? (uint64_t)o->latest.close_time : 0;

	rc = fee_snapshot_publish(&o->pub, &snap, poll_ms < 2000 ? poll_ms / 2 : 1000, &gen);
	if (o->pub.waits > o->published_waits) {
		stats_counter_add(o->stats, MET_FEE_PUBLISH_WAITS,
				  o->pub.waits - o->published_waits);
		o->published_waits = o->pub.waits;
	}
	if (rc) {
		log_warn("fee snapshot not published: %s", rc == -ETIMEDOUT
								   ? "no free slot (a reader is "
								     "holding every slot)"
								   : strerror(-rc));
		return;
	}
	stats_counter_add(o->stats, MET_FEE_PUBLISHES, 1);
	stats_gauge_set(o->stats, MET_FEE_RECOMMENDED, (int64_t)snap.recommended_base_fee);
	stats_gauge_set(o->stats, MET_FEE_AGGRESSIVE, (int64_t)snap.aggressive_base_fee);
	stats_gauge_set(o->stats, MET_FEE_CONGESTION, (int64_t)level);
	if (!had || level != before)
		log_info("congestion %s -> %s (capacity usage %.3f, spread %.2fx, p70 %llu, p95 "
			 "%llu)",
			 had ? fee_congestion_name(before) : "none", fee_congestion_name(level),
			 sample.usage_ppm / 1e6, sample.spread_milli / 1e3,
			 (unsigned long long)snap.recommended_base_fee,
			 (unsigned long long)snap.aggressive_base_fee);
	report(o, &snap);
	log_debug("published generation %llu: recommended %llu aggressive %llu ledger %u",
		  (unsigned long long)gen, (unsigned long long)snap.recommended_base_fee,
		  (unsigned long long)snap.aggressive_base_fee, snap.latest_ledger);
}

void oracle_seed_from_segment(struct oracle *o)
{
	struct fee_snapshot prev;
	struct fee_view v;

	if (fee_snapshot_copy(o->ctx->seg, &prev, 100, NULL))
		return;
	fee_view_eval(&v, &prev, wall_ms(), 0);
	if (v.stale)
		return;
	congestion_seed(&o->cong, (enum fee_congestion)prev.congestion);
	log_info("resuming at congestion %s from the previous snapshot (age %llu ms)",
		 fee_congestion_name(prev.congestion), (unsigned long long)v.age_ms);
}
