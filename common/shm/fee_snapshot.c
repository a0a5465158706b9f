/*
 * fee_snapshot.c - RCU-style publication of the fee snapshot (fee_snapshot.h).
 *
 * Notes on synchronisation
 * ------------------------
 * current (fee ctl): oracle only. Stored with release after the slot body
 *     and its seqcount are complete; loaded with acquire by readers.
 * retire_token[s]: oracle only (bookkeeping that survives an oracle
 *     respawn). 0 = never used (free); RETIRE_IN_USE = current, or was
 *     current when an oracle died before retiring it; otherwise the QSBR
 *     token that every online reader must pass before s is rewritten.
 * slot seq + body: oracle writes under the seqcount (seqcount.h); QSBR
 *     readers read the body in place after loading `current`, which is safe
 *     because the slot cannot be rewritten until they pass a quiescent
 *     point; seqcount copiers (outboxctl) are not registered and rely only
 *     on seq + generation + checksum.
 *
 * Publish order (one writer):
 *   1. pick s != current with retire_token[s] == 0 or passed (qsbr_check)
 *   2. seqcount_write_begin(s.seq); body words (relaxed); write_end (release)
 *   3. retire_token[s] = RETIRE_IN_USE; store_release(current, gen<<8 | s)
 *   4. retire_token[old] = qsbr_start()   (seq_cst token bump)
 * An oracle killed between 3 and 4 leaves the old slot RETIRE_IN_USE; the
 * next fee_publisher_init retires it with a fresh token, so no reader can be
 * caught by its reuse and no slot leaks. Killed inside 2, the slot stays
 * odd; seqcount_write_begin keeps it odd on the rewrite, so copiers never
 * accept the half-written body.
 *
 * No "is the reader's process alive" shortcut: a respawned reader goes
 * online before the supervisor may have stored its new pid/state, so any
 * liveness guess from the proc table could skip a live reader. The
 * supervisor's qsbr_mark_offline() on reap is the one way a dead reader
 * stops blocking; until then the writer waits with backoff and logs.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/seqcount.h"

#define RETIRE_IN_USE     UINT64_MAX
#define SLOT_MASK         0xffu
#define FEE_PUBLISH_SPINS 64

_Static_assert(sizeof(struct fee_snapshot) % 8 == 0, "snapshot is whole words");
_Static_assert(SHM_FEE_MAX_SLOTS <= SLOT_MASK, "slot index fits the low byte");

uint64_t fee_snapshot_checksum(const struct fee_snapshot *s)
{
	const uint64_t *w = (const uint64_t *)s;
	uint64_t h = 0x6a09e667f3bcc908ULL;

	for (size_t i = 0; i < FEE_SNAPSHOT_WORDS - 1; i++) {
		h ^= w[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h;
}

int fee_publisher_init(struct fee_publisher *p, const struct shm_segment *seg)
{
	uint64_t cur;
	uint32_t cs;

	memset(p, 0, sizeof(*p));
	if (seg->readonly)
		return -EPERM;
	p->seg = seg;
	qsbr_init(&p->q, seg);
	p->ctl = seg->fee_ctl;
	p->slots = seg->fee_slots_base;
	p->n_slots = seg->fee_slots;
	cur = atomic_load_explicit(&p->ctl->current, memory_order_relaxed);
	cs = cur ? (uint32_t)(cur & SLOT_MASK) : UINT32_MAX;
	/* repair: a slot left "in use" by a dead oracle but no longer current */
	for (uint32_t s = 0; s < p->n_slots; s++) {
		if (s != cs && atomic_load_explicit(&p->ctl->retire_token[s],
						    memory_order_relaxed) == RETIRE_IN_USE)
			atomic_store_explicit(&p->ctl->retire_token[s], qsbr_start(&p->q),
					      memory_order_relaxed);
	}
	return 0;
}

/* A slot other than `cur_slot` that no online reader can still be using. */
static int find_free_slot(struct fee_publisher *p, uint32_t cur_slot, uint32_t *blocker)
{
	/* round robin from the slot after current: the longest grace for readers */
	for (uint32_t k = 1; k <= p->n_slots; k++) {
		uint32_t s = (cur_slot + k) % p->n_slots;
		uint64_t rt = atomic_load_explicit(&p->ctl->retire_token[s], memory_order_relaxed);

		if (s == cur_slot || rt == RETIRE_IN_USE)
			continue;
		if (rt == 0 || qsbr_check(&p->q, rt, blocker))
			return (int)s;
	}
	return -1;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
			      .tv_nsec = (long)(ns % 1000000000u)};

	nanosleep(&ts, NULL);
}

/* Wait with backoff for a free slot; logs every FEE_PUBLISH_LOG_MS. */
static int wait_free_slot(struct fee_publisher *p, uint32_t cur_slot, uint64_t timeout_ms)
{
	uint64_t start = mono_ns(), next_log = start + FEE_PUBLISH_LOG_MS * 1000000ull;
	uint64_t backoff = 20000, now;
	uint32_t blocker = 0, spins = 0;
	int s;

	while ((s = find_free_slot(p, cur_slot, &blocker)) < 0) {
		now = mono_ns();
		if (now - start >= timeout_ms * 1000000ull)
			return -ETIMEDOUT;
		if (now >= next_log) {
			log_warn("fee snapshot: still waiting for reader %u (pid %d) to pass a "
				 "quiescent state",
				 blocker,
				 blocker < p->seg->n_procs
					 ? atomic_load(&p->seg->procs[blocker].pid)
					 : -1);
			next_log = now + FEE_PUBLISH_LOG_MS * 1000000ull;
		}
		/*
		 * A blocking reader is usually just descheduled while online:
		 * yield first (lets it run if it shares our CPU), then sleep
		 * with exponential backoff up to 1 ms.
		 */
		if (++spins <= FEE_PUBLISH_SPINS) {
			sched_yield();
			continue;
		}
		sleep_ns(backoff);
		backoff = backoff < 1000000 ? backoff * 2 : backoff;
	}
	p->last_wait_ns = mono_ns() - start;
	return s;
}

static void write_slot(struct shm_fee_slot *slot, const struct fee_snapshot *in, uint64_t gen)
{
	struct fee_snapshot body = *in;
	uint64_t odd;

	body.generation = gen;
	body.checksum = fee_snapshot_checksum(&body);
	odd = seqcount_write_begin(&slot->seq);
	seqcount_store_words((uint64_t *)&slot->snap, (const uint64_t *)&body, FEE_SNAPSHOT_WORDS);
	seqcount_write_end(&slot->seq, odd);
}

int fee_snapshot_publish(struct fee_publisher *p, const struct fee_snapshot *in,
			 uint64_t timeout_ms, uint64_t *generation)
{
	uint64_t cur = atomic_load_explicit(&p->ctl->current, memory_order_relaxed);
	uint32_t cur_slot = cur ? (uint32_t)(cur & SLOT_MASK) : UINT32_MAX;
	uint64_t gen = (cur >> 8) + 1;
	int s;

	p->last_wait_ns = 0;
	s = find_free_slot(p, cur_slot, NULL);
	if (s < 0) {
		p->waits++;
		atomic_fetch_add_explicit(&p->ctl->waits, 1, memory_order_relaxed);
		s = wait_free_slot(p, cur_slot, timeout_ms);
		if (s < 0)
			return s;
	}
	write_slot(&p->slots[s], in, gen);
	atomic_store_explicit(&p->ctl->retire_token[s], RETIRE_IN_USE, memory_order_relaxed);
	atomic_store_explicit(&p->ctl->current, gen << 8 | (uint64_t)s, memory_order_release);
	if (cur_slot < p->n_slots)
		atomic_store_explicit(&p->ctl->retire_token[cur_slot], qsbr_start(&p->q),
				      memory_order_relaxed);
	atomic_fetch_add_explicit(&p->ctl->publishes, 1, memory_order_relaxed);
	if (generation)
		*generation = gen;
	return 0;
}

int fee_reader_init(struct fee_reader *r, const struct shm_segment *seg, uint32_t proc_index)
{
	memset(r, 0, sizeof(*r));
	if (proc_index >= seg->n_procs)
		return -EINVAL;
	qsbr_init(&r->q, seg);
	r->me = proc_index;
	r->ctl = seg->fee_ctl;
	r->slots = seg->fee_slots_base;
	r->n_slots = seg->fee_slots;
	if (!seg->readonly)
		qsbr_online(&r->q, proc_index);
	return 0;
}

const struct fee_snapshot *fee_snapshot_get(const struct fee_reader *r)
{
	uint64_t cur = atomic_load_explicit(&((struct shm_fee_ctl *)r->ctl)->current,
					    memory_order_acquire);
	uint32_t s = (uint32_t)(cur & SLOT_MASK);

	if (!cur || s >= r->n_slots)
		return NULL;
	return &r->slots[s].snap;
}

/* One seqcount attempt: 1 accepted, 0 retry, -ENODATA nothing published. */
static int copy_once(const struct shm_segment *seg, struct fee_snapshot *out)
{
	uint64_t cur = atomic_load_explicit(&seg->fee_ctl->current, memory_order_acquire);
	const struct shm_fee_slot *slot;
	uint32_t s = (uint32_t)(cur & SLOT_MASK);
	uint64_t s1;

	if (!cur)
		return -ENODATA;
	if (s >= seg->fee_slots)
		return 0;
	slot = &seg->fee_slots_base[s];
	s1 = seqcount_read_begin(&slot->seq);
	if (s1 & 1)
		return 0;
	seqcount_load_words((uint64_t *)out, (const uint64_t *)&slot->snap, FEE_SNAPSHOT_WORDS);
	if (!seqcount_read_ok(&slot->seq, s1))
		return 0;
	return out->generation == cur >> 8 && out->checksum == fee_snapshot_checksum(out);
}

int fee_snapshot_copy(const struct shm_segment *seg, struct fee_snapshot *out, unsigned max_tries,
		      struct outbox_error *err)
{
	for (unsigned i = 0; i < max_tries; i++) {
		int rc = copy_once(seg, out);

		if (rc < 0)
			return outbox_error_set(err, rc, "fee", "no fee snapshot published yet");
		if (rc > 0)
			return 0;
		if (i >= 16)
			sched_yield();
	}
	return outbox_error_set(err, -EBUSY, "fee", "fee snapshot busy after %u tries", max_tries);
}

const char *fee_congestion_name(uint32_t level)
{
	static const char *const names[] = {"low", "elevated", "high", "severe"};

	return level < 4 ? names[level] : "?";
}

int fee_congestion_parse(const char *s, enum fee_congestion *out)
{
	for (uint32_t i = 0; i < 4; i++) {
		if (s && !strcmp(s, fee_congestion_name(i))) {
			*out = (enum fee_congestion)i;
			return 0;
		}
	}
	return -EINVAL;
}

uint64_t fee_snapshot_age_ms(const struct fee_snapshot *s, uint64_t now_ms)
{
	return now_ms > s->sampled_at_ms ? now_ms - s->sampled_at_ms : 0;
}
