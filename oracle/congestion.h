/*
 * congestion.h - the fee oracle's pure rules: congestion level with
 * hysteresis and dwell, capacity usage, and fee clamping. No I/O, no clock:
 * every input (including "now") is an argument, so tests script sequences.
 *
 * Signals (common/stellar/README.md, Fees; oracle/README.md, Fees), both
 * from getFeeStats' Soroban lane (outboxd only submits vault-contract
 * invocations):
 *	usage  = (transactionCount / ledgerCount) / FEE_ORACLE_LEDGER_MAX_TX,
 *	         capped at 1, in ppm (0 when the window is empty);
 *	spread = p95 / max(min, 1), in thousandths (1000 = flat distribution;
 *	         1000 when the window is empty).
 *
 * Thresholds (a level is reached when EITHER signal reaches it):
 *
 *	level      usage up  usage down   spread up  spread down
 *	elevated     0.50      0.40          2.0x       1.5x
 *	high         0.80      0.70          5.0x       4.0x
 *	severe       0.95      0.85         20.0x      15.0x
 *
 * Hysteresis: from level c, the candidate is the highest level whose "up"
 * threshold is reached if that is above c; otherwise the highest level whose
 * "down" threshold is still reached if that is below c; otherwise c.
 *
 * Dwell: the published level changes only after candidates have stayed on
 * the same side of it for dwell_ms (FEE_ORACLE_DWELL_MS, default 30 s). It
 * then moves to the level that held the whole time (the lowest candidate
 * seen for a rise, the highest for a fall). A candidate equal to the level,
 * or on the other side, restarts the wait, so one noisy sample never flaps
 * the level. The very first sample sets the level at once (a fresh oracle
 * has no history; a respawned one seeds the state from the last snapshot).
 */
#ifndef OUTBOX_ORACLE_CONGESTION_H
#define OUTBOX_ORACLE_CONGESTION_H

#include "common/shm/layout.h"

#include <stdbool.h>
#include <stdint.h>

#define CONGESTION_LEVELS 4

struct congestion_params {
	uint32_t usage_up_ppm[CONGESTION_LEVELS]; /* [0] unused */
	uint32_t usage_down_ppm[CONGESTION_LEVELS];
	uint32_t spread_up_milli[CONGESTION_LEVELS];
	uint32_t spread_down_milli[CONGESTION_LEVELS];
	uint64_t dwell_ms;
};

/* The documented thresholds above, with the given dwell. */
void congestion_params_default(struct congestion_params *p, uint64_t dwell_ms);

struct congestion_sample {
	uint32_t usage_ppm;    /* 0..1000000 */
	uint32_t spread_milli; /* p95 / min in thousandths */
	uint64_t now_ms;       /* a monotonic clock */
};

struct congestion_state {
	bool have_level;
	enum fee_congestion level;         /* published level */
	bool pending;                      /* a change is waiting out the dwell */
	int pending_dir;                   /* +1 rise, -1 fall */
	enum fee_congestion pending_level; /* level that held since pending_since */
	uint64_t pending_since_ms;
};

void congestion_init(struct congestion_state *st);

/* Start from a known level (the last published snapshot after a respawn). */
void congestion_seed(struct congestion_state *st, enum fee_congestion level);

/* Candidate level for sample s relative to current level cur (hysteresis only). */
enum fee_congestion congestion_candidate(const struct congestion_params *p,
					 const struct congestion_sample *s,
					 enum fee_congestion cur);

/* Feed one sample; returns the (possibly new) published level. */
enum fee_congestion congestion_update(struct congestion_state *st,
				      const struct congestion_params *p,
				      const struct congestion_sample *s);

/* Signals from one lane's distribution (rpc_fee_distribution fields). */
uint32_t congestion_usage_ppm(uint64_t transaction_count, uint32_t ledger_count,
			      uint64_t ledger_max_tx);
uint32_t congestion_spread_milli(uint64_t fee_min, uint64_t fee_p95);

/* Which bound a clamp applied (each counted in its own stats counter). */
enum fee_clamp {
	FEE_CLAMP_NONE = 0,
	FEE_CLAMP_MIN,   /* raised to FEE_ORACLE_MIN */
	FEE_CLAMP_MAX,   /* lowered to FEE_ORACLE_MAX */
	FEE_CLAMP_FLOOR, /* raised to the 100-stroop floor (after the min/max clamp) */
};

#define FEE_FLOOR 100 /* the network's base fee: nothing below is ever bid */

/*
 * Clamp fee to [min, max], then floor it at FEE_FLOOR. *which (not NULL)
 * tells the bound that moved it last; the caller counts it.
 */
uint64_t fee_clamp(uint64_t fee, uint64_t min, uint64_t max, enum fee_clamp *which);

#endif
