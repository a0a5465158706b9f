/*
 * fee_snapshot.h - the RCU-published fee snapshot.
 *
 * The oracle (sole writer) fills a free slot of the K-slot array, publishes
 * its index in fee ctl `current` = (generation << 8) | slot with release
 * semantics, and retires the previously current slot with a QSBR token.
 * A slot is reused only when every online QSBR reader has passed that token
 * (qsbr.h), so registered readers (the workers) use the current slot IN
 * PLACE with no copy and no retry:
 *
 *	struct fee_reader r;
 *	fee_reader_init(&r, &seg, my_proc_index);   registers + goes online
 *	for (;;) {
 *		qsbr_quiescent(&r.q, r.me);          top of every loop iteration
 *		const struct fee_snapshot *s = fee_snapshot_get(&r);
 *		... use *s during this iteration only (NULL: none published) ...
 *		qsbr_offline(&r.q, r.me); epoll_wait(...); qsbr_online(&r.q, r.me);
 *	}
 *
 * Each slot also carries a seqcount and the body a checksum, so a reader
 * that cannot register (outboxctl, read-only mapping) copies the current slot
 * with fee_snapshot_copy(), which gives up after max_tries.
 *
 * Writer never stalls behind a dead reader once the supervisor has marked it
 * offline (qsbr_mark_offline on reap, before the respawn). Behind a live but
 * slow reader it yields, then sleeps with exponential backoff (20 us .. 1 ms) and logs
 * "still waiting for reader %u (pid %d)" every FEE_PUBLISH_LOG_MS, up to the
 * caller's timeout. (There is deliberately no "reader's process looks dead"
 * shortcut: a respawned reader may go online before the supervisor stores
 * its new pid, so such a guess could skip a live reader.)
 */
#ifndef OUTBOX_SHM_FEE_SNAPSHOT_H
#define OUTBOX_SHM_FEE_SNAPSHOT_H

#include <stdint.h>

#include "common/shm/qsbr.h"
#include "common/shm/segment.h"

#define FEE_SNAPSHOT_WORDS (sizeof(struct fee_snapshot) / 8)
#define FEE_PUBLISH_LOG_MS 3000
#define FEE_COPY_MAX_TRIES 1000

/* Checksum of every word of s except the checksum itself (64-bit mix). */
uint64_t fee_snapshot_checksum(const struct fee_snapshot *s);

/* ---- writer (oracle) ---- */

struct fee_publisher {
	const struct shm_segment *seg;
	struct qsbr q;
	struct shm_fee_ctl *ctl;
	struct shm_fee_slot *slots;
	uint32_t n_slots;
	uint64_t waits;        /* publishes that had to wait (process-local) */
	uint64_t last_wait_ns; /* ns the last publish waited */
};

/* Bind to seg (read-write). Resumes generation numbering from `current`. */
int fee_publisher_init(struct fee_publisher *p, const struct shm_segment *seg);

/*
 * Publish *in (its generation and checksum fields are ignored and set
 * here). Waits for a reusable slot up to timeout_ms (0 = do not wait);
 * returns 0, or -ETIMEDOUT with nothing published. On success the published
 * generation is returned through *generation when not NULL.
 */
int fee_snapshot_publish(struct fee_publisher *p, const struct fee_snapshot *in,
			 uint64_t timeout_ms, uint64_t *generation);

/* ---- registered readers (the workers) ---- */

struct fee_reader {
	struct qsbr q;
	uint32_t me; /* process index = QSBR reader id */
	const struct shm_fee_ctl *ctl;
	const struct shm_fee_slot *slots;
	uint32_t n_slots;
};

/* Register reader `proc_index` and go online. -EINVAL when out of range. */
int fee_reader_init(struct fee_reader *r, const struct shm_segment *seg, uint32_t proc_index);

/* Current snapshot, in place, valid until the next quiescent/offline; NULL if none. */
const struct fee_snapshot *fee_snapshot_get(const struct fee_reader *r);

/* ---- unregistered readers (outboxctl) ---- */

/*
 * Copy the current snapshot with the seqcount protocol: accept only an even,
 * unchanged count, the expected generation and a valid checksum. Returns 0,
 * -ENODATA (nothing published yet), or -EBUSY after max_tries failed
 * attempts (message says "fee snapshot busy after N tries"; an oracle killed
 * mid-write leaves the slot odd, which shows up here until it republishes).
 */
int fee_snapshot_copy(const struct shm_segment *seg, struct fee_snapshot *out, unsigned max_tries,
		      struct outbox_error *err);

/* "low", "elevated", "high", "severe"; "?" otherwise. */
const char *fee_congestion_name(uint32_t level);
/* Parse one of those names; -EINVAL otherwise. */
int fee_congestion_parse(const char *s, enum fee_congestion *out);

/* Age of s at now_ms (CLOCK_REALTIME ms), 0 if sampled in the future. */
uint64_t fee_snapshot_age_ms(const struct fee_snapshot *s, uint64_t now_ms);

#endif
