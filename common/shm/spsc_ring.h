/*
 * spsc_ring.h - single-producer single-consumer hint rings in shm.
 *
 * There is one ring per (producer role, worker) pair: the gateway and the
 * oracle each own n_workers rings, and worker w consumes its two (layout.h
 * says what each carries). Records are
 * fixed-size struct shm_hint (64 bytes); capacity is a power of two fixed at
 * segment creation.
 *
 * Promises:
 *  - push never blocks: when the ring is full the hint is DROPPED, the ring's
 *    drops counter grows and push returns -ENOSPC. Hints are only hints; the
 *    worker's periodic sweep of PostgreSQL finds any dropped operation.
 *  - a record becomes visible only with the release-store of head that
 *    follows the complete record, so a producer killed mid-write leaves a
 *    partial record that no consumer can see; the respawned producer
 *    attaches, reads head, and overwrites it.
 *  - the consumer publishes tail only after it has copied records out; a
 *    restarted consumer resumes from the stored tail, so records it had
 *    copied but not released are delivered again (at-least-once hints).
 *
 * Ordering: producer writes record -> store_release(head); consumer
 * load_acquire(head) -> reads records -> store_release(tail); producer
 * load_acquire(tail) before reusing slots. Head and tail are free-running
 * uint64 (no wrap in practice), each on its own 128-byte line.
 */
#ifndef OUTBOX_SHM_SPSC_RING_H
#define OUTBOX_SHM_SPSC_RING_H

#include <stdint.h>

#include "common/shm/segment.h"

/* Process-local handle (one per ring a process uses). */
struct spsc_ring {
	struct shm_ring *r;     /* ring header in shm */
	struct shm_hint *recs;  /* records in shm */
	uint64_t mask;          /* capacity - 1 */
	uint64_t cached_head;   /* producer: own head; consumer: last head seen */
	uint64_t cached_tail;   /* producer: last tail seen; consumer: own cursor */
	uint64_t released_tail; /* consumer: tail last published */
};

/*
 * Attach to ring (producer, worker) and take the current head/tail as the
 * starting point (a respawned producer resumes at head, a respawned consumer
 * at tail). -EINVAL on an out-of-range pair or an inconsistent ring header.
 */
int spsc_ring_attach(struct spsc_ring *ring, const struct shm_segment *seg,
		     enum shm_producer producer, uint32_t worker);

/* The ring header of (producer, worker), or NULL; for stats readers. */
struct shm_ring *shm_ring_get(const struct shm_segment *seg, enum shm_producer producer,
			      uint32_t worker);

/* producer: 0, or -ENOSPC when full (hint dropped and counted). */
int spsc_ring_push(struct spsc_ring *ring, const struct shm_hint *hint);

/*
 * consumer: copy up to max records into out and publish the new tail once
 * (batched). Returns the number copied (0 when empty).
 */
unsigned spsc_ring_pop_batch(struct spsc_ring *ring, struct shm_hint *out, unsigned max);

/*
 * consumer, finer grained: copy one record and advance the private cursor
 * without publishing tail (returns 1, or 0 when empty); spsc_ring_release
 * publishes the cursor as tail.
 */
int spsc_ring_pop(struct spsc_ring *ring, struct shm_hint *out);
void spsc_ring_release(struct spsc_ring *ring);

/* Records visible to the consumer now (head - tail), any process. */
uint64_t spsc_ring_fill(const struct shm_ring *r);
/* Drops so far (relaxed read), any process. */
uint64_t spsc_ring_drops(const struct shm_ring *r);

#endif
