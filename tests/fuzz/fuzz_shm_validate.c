/*
 * fuzz_shm_validate.c - the read-only attacher's view of a hostile segment.
 *
 * The input is taken as the bytes of a mapped segment. shm_segment_validate
 * must reject anything inconsistent; when it accepts, every accessor that
 * outboxctl uses (proc rows, stats, rings, the seqcount snapshot copy) must
 * stay inside the buffer (ASan checks that). Seed: a valid minimal segment
 * (1 worker, ring capacity 2, 3 fee slots) in corpus/shm_validate/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/shm/fee_snapshot.h"
#include "common/shm/proc_table.h"
#include "common/shm/spsc_ring.h"
#include "common/shm/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(struct shm_segment *seg)
{
	struct fee_snapshot snap;
	struct proc_slot_view v;
	struct spsc_ring r;
	uint64_t acc = 0;

	for (uint32_t p = 0; p < seg->n_procs; p++) {
		proc_slot_read(shm_proc_slot(seg, p), &v);
		acc += v.heartbeat_ns + stats_counter_read(shm_stats_block(seg, p), 0);
	}
	for (uint32_t w = 0; w < seg->n_workers; w++)
		for (int k = 0; k < SHM_N_PRODUCERS; k++)
			if (spsc_ring_attach(&r, seg, (enum shm_producer)k, w) == 0)
				acc += spsc_ring_fill(r.r) + r.recs[r.mask].op_id;
	if (fee_snapshot_copy(seg, &snap, 3, NULL) == 0)
		acc += snap.generation;
	(void)acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shm_segment seg;
	size_t cap = (size + SHM_ALIGN - 1) / SHM_ALIGN * SHM_ALIGN;
	void *buf;

	if (size > (1u << 22))
		return 0;
	buf = aligned_alloc(SHM_ALIGN, cap ? cap : SHM_ALIGN);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (shm_segment_validate(&seg, buf, size, NULL) == 0)
		touch(&seg);
	free(buf);
	return 0;
}
