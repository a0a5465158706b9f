/*
 * qsbr.c - cross-process QSBR (see qsbr.h for the protocol).
 *
 * Notes on synchronisation
 * ------------------------
 * token: oracle only; fetch_add seq_cst in qsbr_start. The store of the new
 *        `current` pointer (release) precedes it in program order, so a
 *        reader that loads the new token (acquire) afterwards and then
 *        loads `current` sees the new slot.
 * reader[p].cnt: reader p stores the token it saw with release after all
 *        its uses of snapshot pointers from the previous iteration, so the
 *        writer's acquire load of cnt >= T proves those uses are complete.
 *        The supervisor stores 0 for a dead reader: that reader has no uses
 *        left.
 * Online transition: store cnt = token, then a seq_cst fence before
 *        loading `current`. Without the fence the load of `current` could
 *        be satisfied before our counter is visible, and a writer checking
 *        in between would reuse the slot we are about to read (DPDK's
 *        rte_rcu_qsbr_thread_online comment).
 * Counters only grow while a reader is online; 0 means offline, and the
 * token starts at 1, so an online counter is never 0.
 */
#include "common/shm/qsbr.h"

void qsbr_init(struct qsbr *q, const struct shm_segment *seg)
{
	q->tok = seg->qsbr_token;
	q->readers = seg->qsbr_readers;
	q->n_readers = seg->n_procs;
}

void qsbr_online(struct qsbr *q, uint32_t p)
{
	uint64_t t;

	if (p >= q->n_readers)
		return;
	t = atomic_load_explicit(&q->tok->token, memory_order_acquire);
	atomic_store_explicit(&q->readers[p].cnt, t, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

void qsbr_offline(struct qsbr *q, uint32_t p)
{
	if (p < q->n_readers)
		atomic_store_explicit(&q->readers[p].cnt, 0, memory_order_release);
}

void qsbr_mark_offline(struct qsbr *q, uint32_t p)
{
	qsbr_offline(q, p);
}

void qsbr_quiescent(struct qsbr *q, uint32_t p)
{
	uint64_t t;

	if (p >= q->n_readers)
		return;
	t = atomic_load_explicit(&q->tok->token, memory_order_acquire);
	if (atomic_load_explicit(&q->readers[p].cnt, memory_order_relaxed) != t)
		atomic_store_explicit(&q->readers[p].cnt, t, memory_order_release);
}

uint64_t qsbr_start(struct qsbr *q)
{
	return atomic_fetch_add_explicit(&q->tok->token, 1, memory_order_seq_cst) + 1;
}

int qsbr_check(const struct qsbr *q, uint64_t token, uint32_t *blocker)
{
	for (uint32_t p = 0; p < q->n_readers; p++) {
		uint64_t c = atomic_load_explicit(&q->readers[p].cnt, memory_order_acquire);

		if (c != 0 && c < token) {
			if (blocker)
				*blocker = p;
			return 0;
		}
	}
	return 1;
}

int qsbr_is_online(const struct qsbr *q, uint32_t p)
{
	return p < q->n_readers &&
	       atomic_load_explicit(&q->readers[p].cnt, memory_order_acquire) != 0;
}
