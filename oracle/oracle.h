/*
 * oracle.h - the fee oracle's private state, shared by its files:
 *
 *	oracle_main.c  the event loop (common/loop.h): poll timer, RPC fd, follower
 *	follower.c     the ledger follower (follower.h)
 *	poll.c         one poll round: getFeeStats + getLatestLedger in parallel
 *	publish.c      round -> FeeSnapshot (clamps, capacity, congestion) -> shm
 *	congestion.c   the pure rules (congestion.h)
 *
 * With OUTBOX_KAFKA_BROKERS set, a published snapshot whose fees or
 * congestion level differ from the last one reported becomes an event of
 * the oracle's own chain (outbox.fee_event), relayed like the op events
 * (common/relay.h): the oracle is that chain's one writer.
 *
 * A round starts on every FEE_ORACLE_POLL_MS tick unless the previous one
 * is still in flight (then the tick is skipped, never queued). A round that
 * fails (either call) publishes nothing: the snapshot ages, and readers fall
 * back to FEE_ORACLE_DEFAULT_BASE_FEE once it is past ttl + 1 s (fee_view.h).
 */
#ifndef OUTBOX_ORACLE_H
#define OUTBOX_ORACLE_H

#include "common/child.h"
#include "common/loop.h"
#include "common/relay.h"
#include "common/shm/fee_snapshot.h"
#include "common/stellar/rpc.h"
#include "oracle/congestion.h"

#include <stdbool.h>
#include <stdint.h>

struct oracle {
	struct child_ctx *ctx;
	struct rpc_client *rpc;
	struct fee_publisher pub;
	struct congestion_state cong;
	struct shm_proc_slot *slot;
	struct shm_stats_block *stats;
	struct loop loop; /* its timer fires every FEE_ORACLE_POLL_MS */

	/* the round in flight (poll.c) */
	bool in_flight;
	unsigned pending; /* calls not yet completed */
	bool failed;
	char fail_msg[OUTBOX_ERROR_MSG_MAX + 64];
	struct rpc_fee_stats fee_stats;
	struct rpc_latest_ledger latest;
	uint64_t round_started_ns;
	uint64_t failures_in_row;
	uint64_t published_waits; /* pub.waits already counted */

	/* fee snapshot changes as events (FEE_SNAPSHOT, chain oracle:<instance>) */
	struct relay *relay; /* NULL when OUTBOX_KAFKA_BROKERS is unset */
	bool reported;       /* last_* hold what the last event said */
	uint64_t last_recommended, last_aggressive;
	uint32_t last_congestion;
};

/* poll.c: start a round now (no-op while one is in flight). */
void oracle_poll_start(struct oracle *o);

/* publish.c: turn a complete, successful round into a published snapshot. */
void oracle_publish(struct oracle *o);

/* publish.c: seed congestion from a fresh snapshot left by a previous oracle. */
void oracle_seed_from_segment(struct oracle *o);

#endif
