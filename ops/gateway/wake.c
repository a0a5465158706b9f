/*
 * wake.c - an op enqueued over HTTP wakes the worker that owns it.
 *
 * The enqueue's answer names the op's vshard. Once PostgreSQL has committed
 * the op PENDING, the loop thread pushes a NEW_OP hint into the gateway's
 * ring of the worker that owns that vshard (outbox_vshard_owner,
 * common/vshard.h) and rings its doorbell: the worker claims at once,
 * instead of at the oracle's lane watcher's next look (every 5 ms while
 * work streams in, up to 40 ms after a quiet spell; oracle/lane_watch.h).
 *
 * Only the loop thread pushes: a ring has one producer (common/shm/
 * hint_out.h). A hint is a hint: a full ring drops it (counted in
 * outbox_hints_dropped_total) and the watcher and the sweep still find the
 * op; a worker of this instance that does not hold the vshard's lease
 * (another instance's worker does) answers it with one empty claim.
 */
#include "ops/gateway/gateway.h"

#include "common/vshard.h"

void gw_wake_attach(struct gateway *g)
{
	hint_out_attach(&g->hints, g->ctx->seg, g->ctx->doorbells, g->stats, SHM_PRODUCER_GATEWAY,
			(uint32_t)g->ctx->cfg->workers);
}

void gw_wake_new_op(struct gateway *g, long long vshard)
{
	int w = vshard < 0 || vshard >= OUTBOX_VSHARDS_MAX
			? -1
			: outbox_vshard_owner((int)vshard, (int)g->ctx->cfg->workers);
	struct shm_hint h = {.type = SHM_HINT_NEW_OP, .ledger = (uint32_t)vshard};

	(void)hint_out_send(&g->hints, w, &h, true); /* a full ring: the watcher and the sweep */
}
