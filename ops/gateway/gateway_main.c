/*
 * gateway_main.c - the gateway process: one event loop (common/loop.h) on
 * the main thread, libmicrohttpd's thread pool beside it (http.c).
 *
 * The loop owns the PostgreSQL connections (jobs.c), answers the requests
 * the HTTP threads hand over, stores the heartbeat at least every
 * GW_TICK_MS, samples the ETA bands and sweeps the rate limiter. Nothing in
 * it blocks: pgq is non-blocking, and the HTTP threads never wait for it.
 *
 * Drain (SIGTERM, or the supervisor gone): no new request is taken
 * (MHD_quiesce_daemon, and 503 for what is already read), waiters are told
 * that their op goes on, calls already sent to PostgreSQL get up to
 * GW_DRAIN_MS to answer, the rest answer 503; then the HTTP threads stop.
 * Exit 0. A listen address that cannot be bound exits 1 (the supervisor
 * retries with backoff: the port may free up).
 */
#include "ops/gateway/gateway_main.h"

#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/proc_table.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <urcu/urcu-memb.h>

#define GW_DRAIN_MS   3000
#define GW_FLUSH_MS   200 /* resumed answers get this long to leave before MHD stops */
#define GW_LIMITER_GC 10000

enum { EV_INBOX = LOOP_TAG_ROLE, EV_CTL, EV_API0 };

static void apply_config(struct gateway *g)
{
	const struct outbox_config *c = g->ctx->cfg;

	gw_limiter_config(g->limiter, c->http_rate_limit, c->http_rate_burst);
}

static int setup(struct gateway *g)
{
	struct child_ctx *ctx = g->ctx;
	int rc;

	g->inbox_fd = -1;
	g->slot = shm_proc_slot(ctx->seg, ctx->proc);
	g->stats = shm_stats_block(ctx->seg, ctx->proc);
	if (!g->slot || !g->stats || sodium_init() < 0)
		return -EINVAL;
	stats_block_restart(g->stats);
	urcu_memb_register_thread();
	if (!(g->limiter = gw_limiter_new()))
		return -ENOMEM;
	apply_config(g);
	gw_wake_attach(g);
	if ((rc = gw_jobs_open(g, EV_INBOX, EV_CTL, EV_API0)))
		return rc;
	gw_conditions_tick(g, (int64_t)mono_ms());
	return loop_timer(&g->loop, GW_TICK_MS, GW_TICK_MS);
}

static void handle(struct gateway *g, const struct epoll_event *ev)
{
	switch (loop_event(&g->loop, ev)) {
	case LOOP_RELOADED:
		apply_config(g);
		break;
	case LOOP_ROLE:
		gw_jobs_on_ready(g, ev->data.u64, ev->events);
		break;
	default:
		break;
	}
}

/* One turn: wait at most GW_TICK_MS, handle what came, then the timers. */
static void turn(struct gateway *g, int64_t *gc_at)
{
	struct epoll_event evs[16];
	int64_t now;
	int n;

	proc_slot_heartbeat(g->slot);
	stats_counter_add(g->stats, MET_HEARTBEATS, 1);
	stats_counter_add(g->stats, MET_LOOP_ITERATIONS, 1);
	n = epoll_wait(g->loop.ep, evs, 16, GW_TICK_MS);
	for (int i = 0; i < n; i++)
		handle(g, &evs[i]);
	now = (int64_t)mono_ms();
	gw_jobs_tick(g, now);
	gw_conditions_tick(g, now);
	gw_conns_tick(g->conns, now);
	gw_console_tick(g, now);
	if (now - *gc_at >= GW_LIMITER_GC) {
		gw_limiter_gc(g->limiter, now);
		*gc_at = now;
	}
	loop_check_supervisor(&g->loop);
}

static void drain(struct gateway *g)
{
	int64_t until = (int64_t)mono_ms() + GW_DRAIN_MS, gc_at = INT64_MAX / 2;
	int fd;

	proc_slot_stopping(g->slot);
	atomic_store(&g->draining, true);
	if (g->mhd && (fd = MHD_quiesce_daemon(g->mhd)) >= 0)
		close(fd);
	gw_jobs_drain(g);
	while (gw_jobs_pending(g) && (int64_t)mono_ms() < until) {
		turn(g, &gc_at);
		gw_jobs_drain(g);
	}
	gw_jobs_close(g);
	usleep(GW_FLUSH_MS * 1000);
	gw_http_stop(g);
}

static void release(struct gateway *g)
{
	if (g->inbox_fd >= 0)
		gw_jobs_close(g);
	gw_http_stop(g);
	gw_keys_free(g);
	gw_metrics_free(g);
	gw_conditions_free(g);
	gw_console_free(g);
	gw_limiter_free(g->limiter);
	urcu_memb_unregister_thread();
	loop_close(&g->loop);
}

int gateway_main(struct child_ctx *ctx)
{
	struct gateway g = {.ctx = ctx, .inbox_fd = -1};
	int64_t gc_at = (int64_t)mono_ms();
	int rc;

	rc = loop_open(&g.loop, ctx);
	if (!rc)
		rc = setup(&g);
	if (!rc)
		rc = gw_http_start(&g);
	if (rc) {
		log_err("gateway setup failed: %s", outbox_error_name(rc));
		release(&g);
		return 1;
	}
	proc_slot_running(g.slot);
	while (!g.loop.draining)
		turn(&g, &gc_at);
	drain(&g);
	release(&g);
	log_info("stopped");
	return 0;
}
