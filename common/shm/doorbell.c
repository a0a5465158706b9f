/*
 * doorbell.c - eventfd doorbells with a `sleeping` flag in shm (doorbell.h).
 *
 * Notes on synchronisation
 * ------------------------
 * The waiter stores sleeping = 1, issues a seq_cst fence, then re-checks
 * its rings (loads of head). The waker has stored head (release), issues a
 * seq_cst fence, then loads sleeping. With both fences seq_cst, at least
 * one side observes the other's store (store-buffering litmus test), so
 * either the waiter sees the new record or the waker sees sleeping == 1 and
 * writes the eventfd. An eventfd counter stays readable until drained, so a
 * write that lands before the waiter reaches epoll/poll is not lost.
 * The waiter clears sleeping and drains the eventfd after waking; a stale
 * write left over from an earlier round only causes one spurious wakeup.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/shm/doorbell.h"

int doorbell_fds_create(struct doorbell_fds *fds, uint32_t n, struct outbox_error *err)
{
	fds->n = 0;
	if (n > SHM_MAX_WORKERS)
		return outbox_error_set(err, -EINVAL, "n_workers", "%u exceeds %u", n,
					SHM_MAX_WORKERS);
	for (uint32_t i = 0; i < n; i++) {
		int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

		if (fd < 0) {
			int rc = -errno;

			doorbell_fds_close(fds);
			return outbox_error_set(err, rc, "doorbell", "eventfd %u: %s", i,
						strerror(-rc));
		}
		fds->fd[fds->n++] = fd;
	}
	return 0;
}

void doorbell_fds_close(struct doorbell_fds *fds)
{
	for (uint32_t i = 0; i < fds->n; i++)
		if (fds->fd[i] >= 0)
			close(fds->fd[i]);
	fds->n = 0;
}

struct shm_doorbell *shm_doorbell_get(const struct shm_segment *seg, uint32_t worker)
{
	return worker < seg->n_workers ? &seg->doorbells[worker] : NULL;
}

int doorbell_ring(struct shm_doorbell *db, int fd)
{
	uint64_t one = 1;
	ssize_t n;

	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&db->sleeping, memory_order_relaxed))
		return 0;
	atomic_fetch_add_explicit(&db->rings, 1, memory_order_relaxed);
	do
		n = write(fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
	/* EAGAIN: counter saturated, the waiter is already woken */
	return 1;
}

void doorbell_prepare(struct shm_doorbell *db)
{
	atomic_store_explicit(&db->sleeping, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

void doorbell_done(struct shm_doorbell *db, int fd)
{
	uint64_t v;

	atomic_store_explicit(&db->sleeping, 0, memory_order_relaxed);
	while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

int doorbell_wait(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int rc;

	do
		rc = poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc > 0;
}
