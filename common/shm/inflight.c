/*
 * inflight.c - global in-flight cap by reserve-then-check (see inflight.h).
 *
 * Notes on synchronisation: every access to the counters is seq_cst. The
 * no-overshoot argument in inflight.h needs the single total order over the
 * increments and the loads of the sum; weaker orderings would let two
 * racing workers each miss the other's reservation.
 */
#include <errno.h>

#include "common/shm/inflight.h"

int inflight_try_acquire(const struct shm_segment *seg, uint32_t worker, int64_t global_max)
{
	_Atomic int64_t *mine;

	if (worker >= seg->n_workers)
		return -EINVAL;
	mine = &seg->inflight[worker].count;
	atomic_fetch_add(mine, 1);
	if (inflight_total(seg) > global_max) {
		atomic_fetch_sub(mine, 1);
		return -EAGAIN;
	}
	return 0;
}

void inflight_release(const struct shm_segment *seg, uint32_t worker)
{
	_Atomic int64_t *mine;

	if (worker >= seg->n_workers)
		return;
	mine = &seg->inflight[worker].count;
	if (atomic_load(mine) > 0)
		atomic_fetch_sub(mine, 1);
}

void inflight_set(const struct shm_segment *seg, uint32_t worker, int64_t n)
{
	if (worker < seg->n_workers)
		atomic_store(&seg->inflight[worker].count, n < 0 ? 0 : n);
}

int64_t inflight_total(const struct shm_segment *seg)
{
	int64_t sum = 0;

	for (uint32_t w = 0; w < seg->n_workers; w++)
		sum += atomic_load(&seg->inflight[w].count);
	return sum;
}

int64_t inflight_get(const struct shm_segment *seg, uint32_t worker)
{
	return worker < seg->n_workers ? atomic_load(&seg->inflight[worker].count) : 0;
}

void inflight_reset(const struct shm_segment *seg, uint32_t worker)
{
	if (worker < seg->n_workers)
		atomic_store(&seg->inflight[worker].count, 0);
}
