/*
 * inflight.h - the global in-flight transaction cap across worker processes.
 *
 * Each worker owns one counter (own 128-byte line) of its in-flight
 * transactions. To admit a new one, inflight_try_acquire() reserves first and
 * checks after: it increments its own counter (seq_cst), sums every worker's
 * counter (seq_cst loads) and, if the sum exceeds the cap, undoes its
 * increment and refuses.
 *
 * The race, and why it cannot overshoot: among any set of workers admitted
 * concurrently, take the one whose increment came last in the seq_cst total
 * order; its loads follow its increment, hence every other increment of the
 * set, so its sum counted all of them and it was admitted only if that sum
 * (<= cap) included the whole set. So the number admitted never exceeds the
 * cap. The price is spurious refusals: two workers racing near the cap can
 * both see each other's reservation and both refuse (at most one refusal per
 * concurrent racer); callers simply retry on the next loop iteration.
 *
 * A dead worker's counter would hold capacity forever: the supervisor calls
 * inflight_reset() when it reaps the worker, before respawning it. (Its
 * transactions may still be on the network; PostgreSQL, not this counter, is
 * the truth for them, and the respawned worker re-counts what it resumes.)
 */
#ifndef OUTBOX_SHM_INFLIGHT_H
#define OUTBOX_SHM_INFLIGHT_H

#include <stdint.h>

#include "common/shm/segment.h"

/* worker w: reserve one slot under global_max; 0 or -EAGAIN (refused). */
int inflight_try_acquire(const struct shm_segment *seg, uint32_t worker, int64_t global_max);
/* worker w: one transaction finished (never below 0). */
void inflight_release(const struct shm_segment *seg, uint32_t worker);
/* worker w: set its count outright (after resuming from PostgreSQL). */
void inflight_set(const struct shm_segment *seg, uint32_t worker, int64_t n);
/* Sum over all workers. */
int64_t inflight_total(const struct shm_segment *seg);
/* Count of one worker. */
int64_t inflight_get(const struct shm_segment *seg, uint32_t worker);
/* supervisor: worker w died; its count is 0. */
void inflight_reset(const struct shm_segment *seg, uint32_t worker);

#endif
