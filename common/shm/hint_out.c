/*
 * hint_out.c - a producer role's hint rings, counted and rung (see hint_out.h).
 */
#include "common/shm/hint_out.h"

#include <errno.h>
#include <string.h>

void hint_out_attach(struct hint_out *o, const struct shm_segment *seg,
		     const struct doorbell_fds *bells, struct shm_stats_block *stats,
		     enum shm_producer producer, uint32_t workers)
{
	memset(o, 0, sizeof(*o));
	o->seg = seg;
	o->bells = bells;
	o->stats = stats;
	for (uint32_t w = 0; w < workers && w < SHM_MAX_WORKERS; w++)
		o->ok[w] = spsc_ring_attach(&o->rings[w], seg, producer, w) == 0;
}

struct spsc_ring *hint_out_ring(struct hint_out *o, int w)
{
	return w >= 0 && w < SHM_MAX_WORKERS && o->ok[w] ? &o->rings[w] : NULL;
}

int hint_out_send(struct hint_out *o, int w, const struct shm_hint *h, bool bell)
{
	struct spsc_ring *r = hint_out_ring(o, w);
	int rc;

	if (!r)
		return -EINVAL;
	rc = spsc_ring_push(r, h);
	if (o->stats)
		stats_counter_add(o->stats, rc ? MET_HINTS_DROPPED : MET_HINTS_SENT, 1);
	if (!rc && bell && o->bells && (uint32_t)w < o->bells->n)
		doorbell_ring(shm_doorbell_get(o->seg, (uint32_t)w), o->bells->fd[w]);
	return rc;
}
