/*
 * qsbr.h - quiescent-state-based reclamation across processes (DPDK
 * rte_rcu_qsbr style, counters in shm).
 *
 * One writer (the oracle) and registered readers (the workers; the gateway's
 * slot stays offline: its HTTP threads copy the snapshot with the seqcount),
 * each with a counter at its process index: 0 = offline, otherwise the last
 * token the reader saw. The writer retires an object (a fee slot) with
 * qsbr_start(), which returns a token T; the object may be reused once
 * qsbr_check(T) is true, i.e. every ONLINE reader's counter is >= T, meaning
 * each has passed a quiescent point after the retirement and therefore holds
 * no reference taken before it.
 *
 * Reader rules (a reference is valid only between two quiescent points):
 *	qsbr_online(q, me);           at start/after blocking: cnt = token, seq_cst fence
 *	loop: qsbr_quiescent(q, me);  top of each loop iteration
 *	      use the snapshot in place, never keep the pointer across iterations
 *	qsbr_offline(q, me);          before blocking (epoll_wait) and at exit
 *
 * Dead readers: a reader killed while online would block reclamation forever,
 * so the supervisor calls qsbr_mark_offline(q, p) when it reaps process p,
 * BEFORE respawning it. Offline readers are never waited for.
 *
 * Ordering: token fetch_add is seq_cst (pairs with the reader's acquire load);
 * reader counters are release stores, the writer's loads acquire. Going
 * online needs a seq_cst fence between the counter store and the first load
 * of the protected pointer (DPDK's warning), or the writer could miss us.
 */
#ifndef OUTBOX_SHM_QSBR_H
#define OUTBOX_SHM_QSBR_H

#include <stdint.h>

#include "common/shm/segment.h"

/* Process-local view of the QSBR section. */
struct qsbr {
	struct shm_qsbr_token *tok;
	struct shm_qsbr_reader *readers;
	uint32_t n_readers;
};

void qsbr_init(struct qsbr *q, const struct shm_segment *seg);

/* reader p */
void qsbr_online(struct qsbr *q, uint32_t p);
void qsbr_offline(struct qsbr *q, uint32_t p);
void qsbr_quiescent(struct qsbr *q, uint32_t p);

/* supervisor: reader p died; store 0 (offline). */
void qsbr_mark_offline(struct qsbr *q, uint32_t p);

/* writer: new token (>= 2) that readers must reach. */
uint64_t qsbr_start(struct qsbr *q);

/*
 * writer: 1 when every online reader has counter >= token, else 0 and, if
 * blocker is not NULL, the first reader still behind.
 */
int qsbr_check(const struct qsbr *q, uint64_t token, uint32_t *blocker);

/* Reader p is online (counter != 0). */
int qsbr_is_online(const struct qsbr *q, uint32_t p);

#endif
