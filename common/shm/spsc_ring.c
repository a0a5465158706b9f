/*
 * spsc_ring.c - single-producer single-consumer hint rings (see spsc_ring.h).
 *
 * Notes on synchronisation
 * ------------------------
 * head: written only by the producer, with release after the record bytes;
 *       loaded by the consumer with acquire, which makes the record bytes
 *       below head visible to it.
 * tail: written only by the consumer, with release after it has copied the
 *       records out; loaded by the producer with acquire before it
 *       overwrites slots below tail + capacity.
 * drops: producer only (relaxed load + store); readers load relaxed.
 *
 * Both counters are free-running uint64: head - tail is the fill level and
 * index = counter & mask. At 10^9 hints per second they wrap after ~584
 * years, so there is no wrap logic.
 *
 * Crash cases: a producer killed between writing a record and the release
 * store of head leaves head unchanged, so the consumer never reads the
 * partial record; the respawned producer's spsc_ring_attach() reads head
 * and overwrites the slot. A consumer killed after copying records but
 * before the release store of tail gets them again after its respawn
 * (hints are at-least-once and idempotent by design: the worker re-reads
 * the operation from PostgreSQL).
 *
 * The record bytes themselves are accessed non-atomically: the head/tail
 * protocol guarantees that producer and consumer never touch the same slot
 * at the same time, so there is no data race.
 */
#include <errno.h>
#include <string.h>

#include "common/shm/spsc_ring.h"

struct shm_ring *shm_ring_get(const struct shm_segment *seg, enum shm_producer producer,
			      uint32_t worker)
{
	if ((unsigned)producer >= SHM_N_PRODUCERS || worker >= seg->n_workers)
		return NULL;
	return (struct shm_ring *)(seg->rings +
				   ((size_t)producer * seg->n_workers + worker) * seg->ring_stride);
}

int spsc_ring_attach(struct spsc_ring *ring, const struct shm_segment *seg,
		     enum shm_producer producer, uint32_t worker)
{
	struct shm_ring *r = shm_ring_get(seg, producer, worker);

	memset(ring, 0, sizeof(*ring));
	if (!r)
		return -EINVAL;
	/* validated at attach, re-checked here: the mask must match the stride */
	if (r->capacity != seg->ring_capacity || (r->capacity & (r->capacity - 1)) ||
	    r->rec_size != sizeof(struct shm_hint))
		return -EINVAL;
	ring->r = r;
	ring->recs = (struct shm_hint *)(r + 1);
	ring->mask = r->capacity - 1;
	ring->cached_head = atomic_load_explicit(&r->head, memory_order_acquire);
	ring->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	ring->released_tail = ring->cached_tail;
	return 0;
}

int spsc_ring_push(struct spsc_ring *ring, const struct shm_hint *hint)
{
	struct shm_ring *r = ring->r;
	uint64_t head = ring->cached_head;

	if (head - ring->cached_tail > ring->mask) {
		ring->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (head - ring->cached_tail > ring->mask) {
			atomic_store_explicit(
				&r->drops,
				atomic_load_explicit(&r->drops, memory_order_relaxed) + 1,
				memory_order_relaxed);
			return -ENOSPC;
		}
	}
	ring->recs[head & ring->mask] = *hint;
	ring->cached_head = head + 1;
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
	return 0;
}

int spsc_ring_pop(struct spsc_ring *ring, struct shm_hint *out)
{
	uint64_t pos = ring->cached_tail;

	if (pos == ring->cached_head) {
		ring->cached_head = atomic_load_explicit(&ring->r->head, memory_order_acquire);
		if (pos == ring->cached_head)
			return 0;
	}
	*out = ring->recs[pos & ring->mask];
	ring->cached_tail = pos + 1;
	return 1;
}

void spsc_ring_release(struct spsc_ring *ring)
{
	if (ring->released_tail == ring->cached_tail)
		return;
	atomic_store_explicit(&ring->r->tail, ring->cached_tail, memory_order_release);
	ring->released_tail = ring->cached_tail;
}

unsigned spsc_ring_pop_batch(struct spsc_ring *ring, struct shm_hint *out, unsigned max)
{
	unsigned n = 0;

	while (n < max && spsc_ring_pop(ring, &out[n]))
		n++;
	spsc_ring_release(ring);
	return n;
}

uint64_t spsc_ring_fill(const struct shm_ring *r)
{
	struct shm_ring *m = (struct shm_ring *)r;
	uint64_t tail = atomic_load_explicit(&m->tail, memory_order_acquire);
	uint64_t head = atomic_load_explicit(&m->head, memory_order_acquire);

	return head - tail;
}

uint64_t spsc_ring_drops(const struct shm_ring *r)
{
	return atomic_load_explicit(&((struct shm_ring *)r)->drops, memory_order_relaxed);
}
