/*
 * oracle_main.c - the fee oracle process: one epoll loop over
 *	- the signalfd (SIGTERM/SIGINT drain, SIGHUP reload),
 *	- the supervisor death pipe,
 *	- a timerfd firing every FEE_ORACLE_POLL_MS (first tick at once),
 *	- the RPC client's fd (curl multi sockets behind one epoll fd),
 * with a timeout of at most ORACLE_TICK_MS so the heartbeat never stops and
 * curl's own timers are honoured. The oracle is the only writer of the fee
 * snapshot; it is not a QSBR reader.
 */
#include "oracle/oracle.h"
#include "oracle/follower.h"

#include "common/log.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define ORACLE_TICK_MS 100

enum { EV_SIGNAL = 1, EV_DEATH, EV_TIMER, EV_RPC };

static int epoll_add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int arm_poll_timer(struct oracle *o)
{
	int64_t ms = o->ctx->cfg->fee_oracle_poll_ms;
	struct itimerspec its = {
		.it_interval = {ms / 1000, (ms % 1000) * 1000000},
		.it_value = {0, 1}, /* first round at once */
	};

	return timerfd_settime(o->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
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
	o->ep = epoll_create1(EPOLL_CLOEXEC);
	o->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (o->ep < 0 || o->timer_fd < 0)
		return -errno;
	if ((rc = epoll_add(o->ep, o->sig_fd, EV_SIGNAL)) ||
	    (rc = epoll_add(o->ep, ctx->death_fd, EV_DEATH)) ||
	    (rc = epoll_add(o->ep, o->timer_fd, EV_TIMER)) ||
	    (rc = epoll_add(o->ep, rpc_client_fd(o->rpc), EV_RPC)))
		return rc;
	return arm_poll_timer(o);
}

static void handle(struct oracle *o, const struct epoll_event *ev)
{
	uint64_t n;
	int sig;

	switch (ev->data.u64) {
	case EV_SIGNAL:
		while ((sig = child_signal_next(o->sig_fd)) > 0) {
			if (sig == SIGHUP) {
				if (!child_reload(o->ctx))
					arm_poll_timer(o);
			} else {
				log_info("draining on signal %d", sig);
				o->draining = true;
			}
		}
		break;
	case EV_DEATH:
		log_warn("supervisor gone: draining");
		o->draining = true;
		break;
	case EV_TIMER:
		if (read(o->timer_fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
			oracle_poll_start(o);
		break;
	default:
		break; /* EV_RPC: performed below on every turn */
	}
}

int oracle_main(struct child_ctx *ctx)
{
	struct oracle o = {.ctx = ctx, .ep = -1, .timer_fd = -1};
	struct epoll_event evs[8];
	int rc;

	o.sig_fd = child_init(ctx);
	if (o.sig_fd < 0)
		return 1;
	rc = setup(&o);
	if (rc) {
		log_err("oracle setup failed: %s", strerror(rc < 0 && rc > -4096 ? -rc : EINVAL));
		rpc_client_free(o.rpc);
		return 1;
	}
	struct follower *fol = follower_new(ctx, o.rpc, o.ep); /* ledger follower (follower.h) */
	proc_slot_running(o.slot);
	log_info("running rpc=%s poll=%lldms ttl=%lldms dwell=%lldms",
		 rpc_origin(ctx->cfg->rpc_url), (long long)ctx->cfg->fee_oracle_poll_ms,
		 (long long)ctx->cfg->fee_oracle_ttl_ms, (long long)ctx->cfg->fee_oracle_dwell_ms);

	while (!o.draining) {
		int timeout = rpc_client_timeout_ms(o.rpc), n;

		if (timeout < 0 || timeout > ORACLE_TICK_MS)
			timeout = ORACLE_TICK_MS;
		if (fol && follower_timeout_ms(fol) < timeout)
			timeout = follower_timeout_ms(fol);
		proc_slot_heartbeat(o.slot);
		stats_counter_add(o.stats, MET_HEARTBEATS, 1);
		stats_counter_add(o.stats, MET_LOOP_ITERATIONS, 1);
		n = epoll_wait(o.ep, evs, 8, timeout);
		for (int i = 0; i < n; i++)
			if (fol && evs[i].data.u64 == FOLLOWER_EV_TAG)
				follower_on_ready(fol, evs[i].events);
			else
				handle(&o, &evs[i]);
		rpc_client_perform(o.rpc);
		if (fol)
			follower_tick(fol);
		if (child_supervisor_gone(ctx) && !o.draining) {
			log_warn("supervisor gone: draining");
			o.draining = true;
		}
	}

	proc_slot_stopping(o.slot);
	rpc_client_free(o.rpc); /* cancels a round in flight; nothing is published after this */
	follower_free(fol);
	log_info("stopped");
	return 0;
}
