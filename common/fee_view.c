/*
 * fee_view.c - see fee_view.h.
 */
#include "common/fee_view.h"

void fee_view_eval(struct fee_view *out, const struct fee_snapshot *s, uint64_t now_ms,
		   uint64_t default_base_fee)
{
	out->none = s == NULL;
	out->age_ms = UINT64_MAX;
	out->close_time = s ? s->latest_ledger_close_time : 0;
	out->latest_ledger = s ? s->latest_ledger : 0;
	if (s)
		out->age_ms = now_ms > s->sampled_at_ms ? now_ms - s->sampled_at_ms : 0;
	out->stale = !s || out->age_ms > (uint64_t)s->ttl_ms + FEE_VIEW_GRACE_MS;
	if (out->stale) {
		out->recommended = default_base_fee;
		out->aggressive = default_base_fee;
		out->congestion = FEE_CONGESTION_LOW;
		return;
	}
	out->recommended = s->recommended_base_fee;
	out->aggressive = s->aggressive_base_fee;
	out->congestion = s->congestion <= FEE_CONGESTION_SEVERE
				  ? (enum fee_congestion)s->congestion
				  : FEE_CONGESTION_SEVERE;
}
