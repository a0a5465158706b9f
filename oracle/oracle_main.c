/*
 * oracle_main.c - the fee oracle process: one event loop (common/loop.h)
 * whose timer fires every FEE_ORACLE_POLL_MS (the first round at once), plus
 * the RPC client's fd (curl multi sockets behind one epoll fd), the
 * ledger follower's, the archiver's (archiver.h), the lanes vacuum's
 * (lanes_vacuum.h) and the lane watcher's (lane_watch.h) PostgreSQL sockets
 * and,
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
#include "oracle/follower.h"
#include "oracle/lane_watch.h"
#include "oracle/lanes_vacuum.h"
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
	EV_LANES_VACUUM,
	EV_LANE_WATCH
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

/* The oracle's optional parts: each NULL when it could not be made. */
struct parts {
	struct follower *fol;
	struct archiver *arc;
	struct lanes_vacuum *lv;
	struct lane_watch *lw;
};

static void handle(struct oracle *o, const struct parts *p, const struct epoll_event *ev)
{
	switch (loop_event(&o->loop, ev)) {
	case LOOP_TIMER:
		oracle_poll_start(o);
		break;
	case LOOP_RELOADED:
		arm_poll_timer(o);
		break;
	case LOOP_ROLE:
		if (p->fol && ev->data.u64 == EV_FOLLOWER)
			follower_on_ready(p->fol, ev->events);
		else if (p->arc && ev->data.u64 == EV_ARCHIVER)
			archiver_on_ready(p->arc, ev->events);
		else if (p->lv && ev->data.u64 == EV_LANES_VACUUM)
			lanes_vacuum_on_ready(p->lv, ev->events);
		else if (p->lw && ev->data.u64 == EV_LANE_WATCH)
			lane_watch_on_ready(p->lw, ev->events);
		else if (o->relay &&
			 (ev->data.u64 == EV_RELAY_PG || ev->data.u64 == EV_RELAY_KAFKA))
			relay_on_ready(o->relay, ev->data.u64, ev->events);
		break; /* EV_RPC: performed below on every turn */
	default:
		break;
	}
}

/* How long the loop may sleep: until the first part's next deadline, at most a tick. */
static int loop_timeout(const struct oracle *o, const struct parts *p)
{
	int t = rpc_client_timeout_ms(o->rpc);

	if (t < 0 || t > ORACLE_TICK_MS)
		t = ORACLE_TICK_MS;
	if (p->fol && follower_timeout_ms(p->fol) < t)
		t = follower_timeout_ms(p->fol);
	if (p->arc && archiver_timeout_ms(p->arc) < t)
		t = archiver_timeout_ms(p->arc);
	if (p->lv && lanes_vacuum_timeout_ms(p->lv) < t)
		t = lanes_vacuum_timeout_ms(p->lv);
	if (p->lw && lane_watch_timeout_ms(p->lw) < t)
		t = lane_watch_timeout_ms(p->lw);
	if (o->relay && relay_timeout_ms(o->relay, mono_ms()) < t)
		t = relay_timeout_ms(o->relay, mono_ms());
	return t;
}

static void parts_tick(const struct parts *p)
{
	if (p->fol)
		follower_tick(p->fol);
	if (p->arc)
		archiver_tick(p->arc);
	if (p->lv)
		lanes_vacuum_tick(p->lv);
	if (p->lw)
		lane_watch_tick(p->lw);
}

int oracle_main(struct child_ctx *ctx)
{
	struct oracle o = {.ctx = ctx};
	struct parts p;
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
	/* Each part is optional: the oracle runs without one it could not allocate. */
	p.fol = follower_new(ctx, o.rpc, o.loop.ep, EV_FOLLOWER);    /* follower.h */
	p.arc = archiver_new(ctx, o.loop.ep, EV_ARCHIVER);           /* archiver.h */
	p.lv = lanes_vacuum_new(ctx, o.loop.ep, EV_LANES_VACUUM);    /* lanes_vacuum.h */
	p.lw = lane_watch_new(ctx, p.fol, o.loop.ep, EV_LANE_WATCH); /* lane_watch.h */
	proc_slot_running(o.slot);
	log_detail(LOG_LVL_INFO, "running", "rpc=%s poll_ms=%lld ttl_ms=%lld dwell_ms=%lld",
		   rpc_origin(ctx->cfg->rpc_url), (long long)ctx->cfg->fee_oracle_poll_ms,
		   (long long)ctx->cfg->fee_oracle_ttl_ms,
		   (long long)ctx->cfg->fee_oracle_dwell_ms);

	while (!o.loop.draining) {
		int n, timeout = loop_timeout(&o, &p);

		proc_slot_heartbeat(o.slot);
		stats_counter_add(o.stats, MET_HEARTBEATS, 1);
		stats_counter_add(o.stats, MET_LOOP_ITERATIONS, 1);
		n = epoll_wait(o.loop.ep, evs, 8, timeout);
		for (int i = 0; i < n; i++)
			handle(&o, &p, &evs[i]);
		rpc_client_perform(o.rpc);
		parts_tick(&p);
		if (o.relay)
			relay_tick(o.relay, mono_ms());
		loop_check_supervisor(&o.loop);
	}

	proc_slot_stopping(o.slot);
	rpc_client_free(o.rpc); /* cancels a round in flight; nothing is published after this */
	lane_watch_free(p.lw);  /* before the follower: it pushes through the follower's rings */
	follower_free(p.fol);
	archiver_free(p.arc);
	lanes_vacuum_free(p.lv);
	/* the oracle drains last: whatever is left of the drain's time, less a margin */
	relay_drain(o.relay, (int)(ctx->cfg->drain_timeout_ms / 4));
	relay_free(o.relay, 0);
	loop_close(&o.loop);
	log_info("stopped");
	return 0;
}
