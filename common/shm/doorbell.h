/*
 * doorbell.h - wake a worker that sleeps in epoll when its rings get work.
 *
 * Each worker w owns an eventfd made by the supervisor BEFORE fork (the fd
 * numbers live in a process-local struct doorbell_fds, never in shm: fds are
 * per-process) and a struct shm_doorbell in shm holding a `sleeping` flag.
 *
 * Waiter (worker w), PostgreSQL latch discipline:
 *	doorbell_prepare(db);           sleeping = 1; seq_cst fence
 *	if (no work in my rings)        re-check AFTER the fence
 *		epoll_wait(..., fd, timeout)     (or doorbell_wait())
 *	doorbell_done(db, fd);          sleeping = 0; drain the eventfd
 *
 * Waker (producer, after spsc_ring_push):
 *	doorbell_ring(db, fd);          seq_cst fence; if sleeping, write(fd)
 *
 * Why no lost wakeup: both sides store then fence then load (Dekker). Either
 * the waker sees sleeping == 1 and writes the eventfd (which stays readable
 * until drained, so a write before epoll_wait is not lost), or the waiter's
 * re-check sees the pushed record. Why ring only when sleeping: a write()
 * is a system call per hint, and a busy worker needs none (check_doorbell
 * tests both paths; bench_snapshot_read measures them: the top-level
 * README.md, Benchmarks). Every wait has a timeout, so even a bug here costs
 * latency, never liveness.
 */
#ifndef OUTBOX_SHM_DOORBELL_H
#define OUTBOX_SHM_DOORBELL_H

#include <stdint.h>

#include "common/shm/segment.h"

/* Process-local table of eventfds, one per worker; inherited across fork. */
struct doorbell_fds {
	uint32_t n;
	int fd[SHM_MAX_WORKERS];
};

/* supervisor, before fork: n eventfds (EFD_NONBLOCK|EFD_CLOEXEC). */
int doorbell_fds_create(struct doorbell_fds *fds, uint32_t n, struct outbox_error *err);
/* close every fd (a child may close the ones it does not need). */
void doorbell_fds_close(struct doorbell_fds *fds);

/* Doorbell of worker w; NULL when out of range. */
struct shm_doorbell *shm_doorbell_get(const struct shm_segment *seg, uint32_t worker);

/* waker: seq_cst fence; if the owner sleeps, write 1 to fd. Returns 1 if rung. */
int doorbell_ring(struct shm_doorbell *db, int fd);

/* waiter: announce sleep (sleeping = 1 + seq_cst fence). Re-check work after. */
void doorbell_prepare(struct shm_doorbell *db);
/* waiter: sleeping = 0 and drain fd (non-blocking read). */
void doorbell_done(struct shm_doorbell *db, int fd);

/*
 * waiter convenience for loops without epoll: prepare must have been called
 * and work re-checked; poll fd for up to timeout_ms (>= 0). Returns 1 when
 * rung, 0 on timeout, negative errno on error. Does not call doorbell_done.
 */
int doorbell_wait(int fd, int timeout_ms);

#endif
