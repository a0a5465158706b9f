/*
 * worker_main.c - a worker process: its event loop skeleton.
 *
 * This is the loop the dispatch engine (a later issue) plugs into. Today it
 *	- attaches (the mapping is inherited), registers as the QSBR reader at
 *	  its process index and goes online;
 *	- every iteration: reports a quiescent state, reads the current fee
 *	  snapshot in place through fee_view (the stale fallback lives there),
 *	  counts the read in its stats block and heartbeats;
 *	- sleeps in epoll on: its doorbell eventfd (ring hints), a timerfd at
 *	  OUTBOX_DISPATCH_INTERVAL_MS (the sweep), the signalfd and the
 *	  supervisor death pipe, with a WORKER_TICK_MS timeout so heartbeats
 *	  never stop while idle;
 *	- goes offline in QSBR before every epoll_wait and back online after it
 *	  (a sleeping worker must never hold the oracle back);
 *	- on SIGTERM (or the supervisor's death) drains: STOPPING, offline, exit 0.
 *
 * At start it re-checks the signer keys file (it will sign with those keys):
 * a file that became unusable (mode, content) is a configuration error, exit
 * 2, which the supervisor does not restart.
 *
 * Nothing from a snapshot is kept across iterations: the pointer is valid
 * only between two quiescent points.
 */
#include "common/child.h"
#include "common/fee_view.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define WORKER_TICK_MS 100

enum { EV_SIGNAL = 1, EV_DEATH, EV_DOORBELL, EV_TIMER };

struct worker {
	struct child_ctx *ctx;
	struct fee_reader reader;
	struct shm_proc_slot *slot;
	struct shm_stats_block *stats;
	struct shm_doorbell *db;
	int db_fd, sig_fd, ep, timer_fd;
	bool draining;
};

static int epoll_add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int arm_timer(int fd, int64_t ms)
{
	struct itimerspec its = {
		.it_interval = {ms / 1000, (ms % 1000) * 1000000},
		.it_value = {ms / 1000, (ms % 1000) * 1000000},
	};

	return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Read the snapshot for this iteration and account for it. */
static void read_fees(struct worker *w)
{
	const struct fee_snapshot *s = fee_snapshot_get(&w->reader);
	struct fee_view v;

	fee_view_eval(&v, s, shm_realtime_ms(), (uint64_t)w->ctx->cfg->fee_oracle_default_base_fee);
	stats_counter_add(w->stats, MET_SNAPSHOT_READS, 1);
	if (v.stale)
		stats_counter_add(w->stats, MET_SNAPSHOT_STALE, 1);
	stats_gauge_set(w->stats, MET_SNAPSHOT_AGE_MS, v.none ? -1 : (int64_t)v.age_ms);
	stats_gauge_set(w->stats, MET_FEE_RECOMMENDED, (int64_t)v.recommended);
	stats_gauge_set(w->stats, MET_FEE_AGGRESSIVE, (int64_t)v.aggressive);
	stats_gauge_set(w->stats, MET_FEE_CONGESTION, (int64_t)v.congestion);
}

static void handle(struct worker *w, const struct epoll_event *ev)
{
	uint64_t n;
	int sig;

	switch (ev->data.u64) {
	case EV_SIGNAL:
		while ((sig = child_signal_next(w->sig_fd)) > 0) {
			if (sig == SIGHUP) {
				if (!child_reload(w->ctx))
					arm_timer(w->timer_fd, w->ctx->cfg->dispatch_interval_ms);
			} else {
				log_info("draining on signal %d", sig);
				w->draining = true;
			}
		}
		break;
	case EV_DEATH:
		log_warn("supervisor gone: draining");
		w->draining = true;
		break;
	case EV_DOORBELL:
		stats_counter_add(w->stats, MET_DOORBELL_WAKEUPS, 1);
		break;
	case EV_TIMER:
		(void)!read(w->timer_fd, &n, sizeof(n)); /* the sweep goes here (dispatch issue) */
		break;
	}
}

static int setup(struct worker *w)
{
	const struct child_ctx *ctx = w->ctx;
	int rc;

	w->slot = shm_proc_slot(ctx->seg, ctx->proc);
	w->stats = shm_stats_block(ctx->seg, ctx->proc);
	w->db = shm_doorbell_get(ctx->seg, ctx->index);
	if (!w->slot || !w->stats || !w->db || ctx->index >= ctx->doorbells->n)
		return -EINVAL;
	w->db_fd = ctx->doorbells->fd[ctx->index];
	stats_block_restart(w->stats);
	rc = fee_reader_init(&w->reader, ctx->seg, ctx->proc);
	if (rc)
		return rc;
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->ep < 0 || w->timer_fd < 0)
		return -errno;
	if ((rc = epoll_add(w->ep, w->sig_fd, EV_SIGNAL)) ||
	    (rc = epoll_add(w->ep, ctx->death_fd, EV_DEATH)) ||
	    (rc = epoll_add(w->ep, w->db_fd, EV_DOORBELL)) ||
	    (rc = epoll_add(w->ep, w->timer_fd, EV_TIMER)))
		return rc;
	return arm_timer(w->timer_fd, ctx->cfg->dispatch_interval_ms);
}

int worker_main(struct child_ctx *ctx)
{
	struct worker w = {.ctx = ctx, .ep = -1, .timer_fd = -1};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct epoll_event evs[8];
	int rc;

	w.sig_fd = child_init(ctx);
	if (w.sig_fd < 0)
		return 1;
	if (keys_file_check(ctx->cfg->signer_keys_file, NULL, &err)) {
		log_err("cannot run: %s", err.msg);
		return 2;
	}
	rc = setup(&w);
	if (rc) {
		log_err("worker setup: %s", strerror(rc < 0 && rc > -4096 ? -rc : EINVAL));
		return 1;
	}
	proc_slot_running(w.slot);
	log_info("running");

	while (!w.draining) {
		int n;

		qsbr_quiescent(&w.reader.q, w.reader.me);
		read_fees(&w);
		proc_slot_heartbeat(w.slot);
		stats_counter_add(w.stats, MET_HEARTBEATS, 1);
		stats_counter_add(w.stats, MET_LOOP_ITERATIONS, 1);

		doorbell_prepare(w.db);
		qsbr_offline(&w.reader.q, w.reader.me);
		n = epoll_wait(w.ep, evs, 8, WORKER_TICK_MS);
		qsbr_online(&w.reader.q, w.reader.me);
		doorbell_done(w.db, w.db_fd);
		if (n == 0)
			stats_counter_add(w.stats, MET_DOORBELL_TIMEOUTS, 1);
		for (int i = 0; i < n; i++)
			handle(&w, &evs[i]);
		if (child_supervisor_gone(ctx) && !w.draining) {
			log_warn("supervisor gone: draining");
			w.draining = true;
		}
	}

	proc_slot_stopping(w.slot);
	qsbr_offline(&w.reader.q, w.reader.me);
	log_info("stopped");
	return 0;
}
