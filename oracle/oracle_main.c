/*
 * oracle_main.c - the fee oracle process: one event loop (common/loop.h)
 * whose timer fires every FEE_ORACLE_POLL_MS (the first round at once), plus
 * the RPC client's fd (curl multi sockets behind one epoll fd), the
 * ledger follower's, the archiver's (archiver.h) and the lanes vacuum's
 * (lanes_vacuum.h) PostgreSQL sockets and,
 * with OUTBOX_KAFKA_BROKERS set,
 * the fds of the relay of its FEE_SNAPSHOT events (common/relay.h), with a
 * timeout of at most ORACLE_TICK_MS so the heartbeat never stops and curl's
 * own timers are honoured. Nothing in the loop blocks: the RPC client, the
 * PostgreSQL connections (common/pgq.h) and the relay are all
 * non-blocking, so a silent RPC node, database server or broker costs the
 * oracle neither its heartbeat nor its fee snapshots. The oracle is the
 * only writer of the fee snapshot; it is not a QSBR reader.
 */
#include "oracle/oracle_main.h"

#include "oracle/archiver.h"
#include "oracle/lanes_vacuum.h"
#include "oracle/follower.h"
#include "oracle/oracle.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ORACLE_TICK_MS 100

enum {
	EV_RPC = LOOP_TAG_ROLE,
	EV_FOLLOWER,
	EV_RELAY_PG,
	EV_RELAY_KAFKA,
	EV_ARCHIVER,
	EV_LANES_VACUUM
};

static int arm_poll_timer(struct oracle *o)
{
	return loop_timer(&o->loop, 0, o->ctx->cfg->fee_oracle_poll_ms);
}

/*
 * scheme://host[:port] of url, for logs: RPC providers often put an API key
 * in the path or the userinfo, and logs never carry secrets.
 */
static const char *rpc_origin(const char *url)
{
	static char buf[256];
	const char *sep = strstr(url, "://");
	const char *host = sep ? sep + 3 : url;
	const char *end = host + strcspn(host, "/?#");
	const char *at = memchr(host, '@', (size_t)(end - host));
	int scheme_len = sep ? (int)(sep + 3 - url) : 0;

	if (at)
		host = at + 1; /* drop user:password@ */
	snprintf(buf, sizeof(buf), "%.*s%.*s", scheme_len, url, (int)(end - host), host);
	return buf;
}

static struct rpc_client *rpc_open(const struct outbox_config *c)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	long timeout = c->fee_oracle_poll_ms < RPC_DEFAULT_TIMEOUT_MS ? (long)c->fee_oracle_poll_ms
								      : RPC_DEFAULT_TIMEOUT_MS;
	struct rpc_config rc = {
		.url = c->rpc_url,
		.timeout_ms = timeout < 1000 ? 1000 : timeout,
		.connect_timeout_ms = timeout < 1000 ? 1000 : timeout,
		.max_host_connections = 4,
	};
	struct rpc_client *rpc = rpc_client_new(&rc, &err);

	if (!rpc)
		log_err("rpc client: %s", err.msg);
	return rpc;
}

/* The relay of the oracle's FEE_SNAPSHOT events, when brokers are configured. */
static int relay_open(struct oracle *o)
{
	const struct outbox_config *c = o->ctx->cfg;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char chain[64];
	struct relay_config rc = {.brokers = c->kafka_brokers,
				  .topic = c->kafka_topic,
				  .database = c->database_url,
				  .client = "oracle",
				  .ep = o->loop.ep,
				  .tag_pg = EV_RELAY_PG,
				  .tag_kafka = EV_RELAY_KAFKA,
				  .stats = o->stats};

	if (!c->kafka_brokers[0])
		return 0;
	if (!(o->relay = relay_new(&rc, &err))) {
		log_err("event relay: %s", err.msg);
		return -EINVAL;
	}
	snprintf(chain, sizeof(chain), "oracle:%s", c->instance);
	relay_set_chain(o->relay, chain);
	return 0;
}

static int setup(struct oracle *o)
{
	struct child_ctx *ctx = o->ctx;
	int rc;

	o->slot = shm_proc_slot(ctx->seg, ctx->proc);
	o->stats = shm_stats_block(ctx->seg, ctx->proc);
	if (!o->slot || !o->stats)
		return -EINVAL;
	stats_block_restart(o->stats);
	rc = fee_publisher_init(&o->pub, ctx->seg);
	if (rc)
		return rc;
	o->published_waits = o->pub.waits;
	congestion_init(&o->cong);
	oracle_seed_from_segment(o);
	o->rpc = rpc_open(ctx->cfg);
	if (!o->rpc)
		return -EINVAL;
	if ((rc = loop_add(&o->loop, rpc_client_fd(o->rpc), EV_RPC)) || (rc = relay_open(o)))
		return rc;
	return arm_poll_timer(o);
}

static void handle(struct oracle *o, struct follower *fol, struct archiver *arc,
		   struct lanes_vacuum *lv, const struct epoll_event *ev)
{
	switch (loop_event(&o->loop, ev)) {
	case LOOP_TIMER:
		oracle_poll_start(o);
		break;
	case LOOP_RELOADED:
		arm_poll_timer(o);
		break;
	case LOOP_ROLE:
		if (fol && ev->data.u64 == EV_FOLLOWER)
			follower_on_ready(fol, ev->events);
		else if (arc && ev->data.u64 == EV_ARCHIVER)
			archiver_on_ready(arc, ev->events);
		else if (lv && ev->data.u64 == EV_LANES_VACUUM)
			lanes_vacuum_on_ready(lv, ev->events);
		else if (o->relay &&
			 (ev->data.u64 == EV_RELAY_PG || ev->data.u64 == EV_RELAY_KAFKA))
			relay_on_ready(o->relay, ev->data.u64, ev->events);
		break; /* EV_RPC: performed below on every turn */
	default:
		break;
	}
}

int oracle_main(struct child_ctx *ctx)
{
	struct oracle o = {.ctx = ctx};
	struct epoll_event evs[8];
	int rc;

	rc = loop_open(&o.loop, ctx);
	if (!rc)
		rc = setup(&o);
	if (rc) {
		log_err("oracle setup failed: %s", outbox_error_name(rc));
		rpc_client_free(o.rpc);
		loop_close(&o.loop);
		return 1;
	}
	/* ledger follower (follower.h); the oracle runs without it when out of memory */
	struct follower *fol = follower_new(ctx, o.rpc, o.loop.ep, EV_FOLLOWER);
	/* terminal ops to the archive (archiver.h); likewise optional */
	struct archiver *arc = archiver_new(ctx, o.loop.ep, EV_ARCHIVER);
	/* outbox.lanes kept small (lanes_vacuum.h); likewise optional */
	struct lanes_vacuum *lv = lanes_vacuum_new(ctx, o.loop.ep, EV_LANES_VACUUM);
	proc_slot_running(o.slot);
	log_detail(LOG_LVL_INFO, "running", "rpc=%s poll_ms=%lld ttl_ms=%lld dwell_ms=%lld",
		   rpc_origin(ctx->cfg->rpc_url), (long long)ctx->cfg->fee_oracle_poll_ms,
		   (long long)ctx->cfg->fee_oracle_ttl_ms,
		   (long long)ctx->cfg->fee_oracle_dwell_ms);

	while (!o.loop.draining) {
		int timeout = rpc_client_timeout_ms(o.rpc), n;

		if (timeout < 0 || timeout > ORACLE_TICK_MS)
			timeout = ORACLE_TICK_MS;
		if (fol && follower_timeout_ms(fol) < timeout)
			timeout = follower_timeout_ms(fol);
		if (arc && archiver_timeout_ms(arc) < timeout)
			timeout = archiver_timeout_ms(arc);
		if (lv && lanes_vacuum_timeout_ms(lv) < timeout)
			timeout = lanes_vacuum_timeout_ms(lv);
		if (o.relay && relay_timeout_ms(o.relay, mono_ms()) < timeout)
			timeout = relay_timeout_ms(o.relay, mono_ms());
		proc_slot_heartbeat(o.slot);
		stats_counter_add(o.stats, MET_HEARTBEATS, 1);
		stats_counter_add(o.stats, MET_LOOP_ITERATIONS, 1);
		n = epoll_wait(o.loop.ep, evs, 8, timeout);
		for (int i = 0; i < n; i++)
			handle(&o, fol, arc, lv, &evs[i]);
		rpc_client_perform(o.rpc);
		if (fol)
			follower_tick(fol);
		if (arc)
			archiver_tick(arc);
		if (lv)
			lanes_vacuum_tick(lv);
		if (o.relay)
			relay_tick(o.relay, mono_ms());
		loop_check_supervisor(&o.loop);
	}

	proc_slot_stopping(o.slot);
	rpc_client_free(o.rpc); /* cancels a round in flight; nothing is published after this */
	follower_free(fol);
	archiver_free(arc);
	lanes_vacuum_free(lv);
	/* the oracle drains last: whatever is left of the drain's time, less a margin */
	relay_drain(o.relay, (int)(ctx->cfg->drain_timeout_ms / 4));
	relay_free(o.relay, 0);
	loop_close(&o.loop);
	log_info("stopped");
	return 0;
}
