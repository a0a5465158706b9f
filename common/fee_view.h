/*
 * fee_view.h - what a reader of the fee snapshot may use (pure).
 *
 * A snapshot is trusted for ttl_ms after it was sampled, plus a grace of
 * FEE_VIEW_GRACE_MS, measured on the READER's clock (CLOCK_REALTIME ms, the
 * same clock the oracle stamps sampled_at_ms with). Past that, or when no
 * snapshot was ever published, the reader falls back to
 * FEE_ORACLE_DEFAULT_BASE_FEE for both the recommended and the aggressive fee
 * and treats congestion as low (a stale oracle must not stall LOW work
 * forever); the caller counts the stale read and sets its staleness gauge to
 * age_ms, which keeps growing while the oracle is down.
 */
#ifndef OUTBOX_COMMON_FEE_VIEW_H
#define OUTBOX_COMMON_FEE_VIEW_H

#include "common/shm/layout.h"

#include <stdbool.h>
#include <stdint.h>

#define FEE_VIEW_GRACE_MS 1000

struct fee_view {
	uint64_t recommended; /* stroops */
	uint64_t aggressive;  /* stroops */
	enum fee_congestion congestion;
	bool stale;      /* fell back to the default fee */
	bool none;       /* no snapshot at all */
	uint64_t age_ms; /* now - sampled_at (0 if sampled in the future; UINT64_MAX if none) */
	/*
	 * The latest ledger's close time (unix s; 0 if none), kept even when
	 * stale: callers use it for time bounds after this iteration's
	 * quiescent point, when the snapshot itself may no longer be read.
	 */
	uint64_t close_time;
	uint32_t latest_ledger; /* the ledger that closed then (0 if none) */
};

/* Evaluate snapshot s (NULL = none published) at now_ms. */
void fee_view_eval(struct fee_view *out, const struct fee_snapshot *s, uint64_t now_ms,
		   uint64_t default_base_fee);

#endif
