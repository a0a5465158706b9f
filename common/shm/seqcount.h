/*
 * seqcount.h - sequence counts for readers that cannot register (outboxctl).
 *
 * The writer makes the count odd, writes the payload, makes it even again;
 * a reader copies the payload between two loads of the count and accepts the
 * copy only when both loads returned the same even value. The payload must be
 * written and read with relaxed atomic word accesses (seqcount_copy_words),
 * so the racing accesses are not data races under C11 (and TSan stays quiet).
 *
 * Ordering (Boehm, "Can seqlocks get along with programming language memory
 * models?"):
 *	writer: store(seq, odd, relaxed); fence(release); payload stores (relaxed);
 *	        store(seq, even, release)
 *	reader: s1 = load(seq, acquire); payload loads (relaxed); fence(acquire);
 *	        s2 = load(seq, relaxed)
 * If a reader's payload load saw any store of a write section, the fences pair
 * and s2 sees that section's odd value or later, so s1 != s2.
 *
 * A writer that dies inside the section leaves the count odd forever: readers
 * must bound their retries (callers pass max_tries), and the next writer
 * continues from the odd value (seqcount_write_begin keeps it odd).
 * Keep write sections short and straight-line: nothing that can fail or block.
 */
#ifndef OUTBOX_SHM_SEQCOUNT_H
#define OUTBOX_SHM_SEQCOUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* writer: enter; returns the odd value now stored. */
static inline uint64_t seqcount_write_begin(_Atomic uint64_t *seq)
{
	uint64_t s = atomic_load_explicit(seq, memory_order_relaxed);

	if (!(s & 1)) {
		s++;
		atomic_store_explicit(seq, s, memory_order_relaxed);
	}
	atomic_thread_fence(memory_order_release);
	return s;
}

/* writer: leave; `odd` is what seqcount_write_begin returned. */
static inline void seqcount_write_end(_Atomic uint64_t *seq, uint64_t odd)
{
	atomic_store_explicit(seq, odd + 1, memory_order_release);
}

/* reader: first load; odd means "writer inside", retry. */
static inline uint64_t seqcount_read_begin(const _Atomic uint64_t *seq)
{
	return atomic_load_explicit((_Atomic uint64_t *)seq, memory_order_acquire);
}

/* reader: 1 when the copy made since read_begin returned s1 is consistent. */
static inline int seqcount_read_ok(const _Atomic uint64_t *seq, uint64_t s1)
{
	atomic_thread_fence(memory_order_acquire);
	return !(s1 & 1) &&
	       atomic_load_explicit((_Atomic uint64_t *)seq, memory_order_relaxed) == s1;
}

/* Copy n 64-bit words with relaxed atomic loads (reader) or stores (writer). */
static inline void seqcount_load_words(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

static inline void seqcount_store_words(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
}

#endif
