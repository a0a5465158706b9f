/*
 * hint_out.h - a producer role's end of its hint rings: one ring per worker
 * (spsc_ring.h), each push counted in the role's stats block, and the
 * worker's doorbell rung (doorbell.h) when the hint should wake it.
 *
 * A ring has exactly one producer: a role keeps one struct hint_out and
 * pushes from one thread (the oracle's follower and lane watcher share the
 * oracle's; the gateway's loop thread owns the gateway's). A hint is a
 * hint: a full ring drops it, counted in outbox_hints_dropped_total, and
 * the caller decides what the loss means (the follower moves its coverage;
 * the lane watcher and the gateway leave the op to the next look and the
 * sweep).
 */
#ifndef OUTBOX_SHM_HINT_OUT_H
#define OUTBOX_SHM_HINT_OUT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/shm/doorbell.h"
#include "common/shm/spsc_ring.h"
#include "common/shm/stats.h"

struct hint_out {
	const struct shm_segment *seg;
	const struct doorbell_fds *bells;
	struct shm_stats_block *stats; /* hints sent and dropped; NULL: not counted */
	struct spsc_ring rings[SHM_MAX_WORKERS];
	bool ok[SHM_MAX_WORKERS]; /* rings[w] attached */
};

/* Attach producer's rings of workers 0..workers-1 (those that fail stay unusable). */
void hint_out_attach(struct hint_out *o, const struct shm_segment *seg,
		     const struct doorbell_fds *bells, struct shm_stats_block *stats,
		     enum shm_producer producer, uint32_t workers);

/* Worker w's ring, or NULL when w is out of range or its ring did not attach. */
struct spsc_ring *hint_out_ring(struct hint_out *o, int w);

/*
 * Push h into worker w's ring, count it (sent or dropped) and, when bell,
 * ring w's doorbell. 0 when pushed; -EINVAL when w has no ring (nothing
 * counted); -ENOSPC when the ring is full (the hint dropped).
 */
int hint_out_send(struct hint_out *o, int w, const struct shm_hint *h, bool bell);

#endif
