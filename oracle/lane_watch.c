/*
 * lane_watch.c - see lane_watch.h.
 */
#include "oracle/lane_watch.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/pgq.h"
#include "common/shm/layout.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"
#include "common/vshard.h"

#include <stdbool.h>
#include <stdlib.h>

struct lane_watch {
	struct child_ctx *ctx;
	struct follower *fol;
	struct shm_stats_block *stats; /* the oracle's; NULL: nothing counted */
	struct pgq pg;
	int64_t next_ms;  /* monotonic: when the next look may start */
	int64_t due_ms;   /* when the next look also asks for due lanes */
	int64_t alive_ms; /* when the workers next get a WATCHING word */
	int64_t woke_ms;  /* when a look last woke a worker */
	int wait_ms;      /* between looks: MIN while busy, doubling to MAX after */
	bool busy;        /* a look is on the wire */
	bool asked_due;   /* it asks for due lanes too */
	bool failing;     /* the last look failed (logged once per episode) */
};

struct lane_watch *lane_watch_new(struct child_ctx *ctx, struct follower *f, int ep, uint64_t tag)
{
	struct lane_watch *lw;

	if (!f || !(lw = calloc(1, sizeof(*lw))))
		return NULL;
	if (pgq_init(&lw->pg, ctx->cfg->database_url, "outboxd-lane-watch", ep, tag, NULL, NULL,
		     lw)) {
		free(lw);
		return NULL;
	}
	lw->ctx = ctx;
	lw->fol = f;
	lw->stats = shm_stats_block(ctx->seg, ctx->proc);
	lw->wait_ms = (int)ctx->cfg->lane_watch_ms;
	lw->next_ms = lw->due_ms = lw->alive_ms = mono_ms();
	lw->woke_ms = lw->next_ms - LANE_WATCH_BUSY_MS;
	return lw;
}

/* Every worker hears that its lanes are watched (no doorbell: nothing waits on it). */
static void say_watching(struct lane_watch *lw, int64_t now)
{
	struct shm_hint h = {.type = SHM_HINT_WATCHING, .aux = LANE_WATCH_MAX_MS};

	if (now < lw->alive_ms)
		return;
	lw->alive_ms = now + LANE_WATCH_ALIVE_MS;
	for (int w = 0; w < (int)lw->ctx->cfg->workers && w < SHM_MAX_WORKERS; w++)
		(void)follower_push_soft(lw->fol, w, &h, false);
}

/*
 * Worker w's vshard v is leased under owner: the name is worker w's of this
 * instance (common/vshard.h) and carries its running process's pid. Another
 * instance's worker, even one of the same name on another host, a worker
 * since restarted, or nobody, is not ours to wake.
 */
static bool ours(const struct lane_watch *lw, const char *owner, int w)
{
	const struct shm_proc_slot *slot =
		shm_proc_slot(lw->ctx->seg, SHM_PROC_WORKER0 + (uint32_t)w);
	struct proc_slot_view view;
	unsigned index;
	long pid;

	if (!slot || !outbox_lease_owner_parse(owner, lw->ctx->cfg->instance, &index, &pid))
		return false;
	proc_slot_read(slot, &view);
	return index == (unsigned)w && view.pid > 0 && pid == (long)view.pid;
}

/*
 * Ring each worker of ours that owns a listed vshard, once per look; how many
 * had work (a hint left out of a full ring waits for the next look).
 */
static int wake(struct lane_watch *lw, const PGresult *res)
{
	int workers = (int)lw->ctx->cfg->workers, n = PQntuples(res), rung = 0;
	bool done[SHM_MAX_WORKERS] = {false};

	for (int r = 0; r < n; r++) {
		long v = strtol(PQgetvalue(res, r, 0), NULL, 10);
		int w = v < 0 || v >= OUTBOX_VSHARDS_MAX ? -1
							 : outbox_vshard_owner((int)v, workers);
		struct shm_hint h = {.type = SHM_HINT_NEW_OP, .ledger = (uint32_t)v};

		if (w < 0 || w >= SHM_MAX_WORKERS || done[w] || PQgetisnull(res, r, 0) ||
		    PQgetisnull(res, r, 1) || !ours(lw, PQgetvalue(res, r, 1), w))
			continue;
		done[w] = true;
		rung++;
		if (follower_push_soft(lw->fol, w, &h, true) == 0 && lw->stats)
			stats_counter_add(lw->stats, MET_LANE_WAKES, 1);
	}
	return rung;
}

/*
 * The wait before the next look: short while looks woke someone within
 * LANE_WATCH_BUSY_MS (work arrives in streams: backing off between two ops
 * of a stream adds the wait to the second), doubling after that.
 */
static int next_wait(int wait, int busy_wait, int64_t quiet_ms)
{
	if (quiet_ms < LANE_WATCH_BUSY_MS)
		return busy_wait;
	return wait * 2 > LANE_WATCH_MAX_MS ? LANE_WATCH_MAX_MS : wait * 2;
}

static void on_look(PGresult *res, void *arg)
{
	struct lane_watch *lw = arg;
	int64_t now = mono_ms();

	lw->busy = false;
	if (!res || !pgq_ok(res) || PQnfields(res) != 2) {
		if (!lw->failing)
			log_warn("lane watch: %s (tried every %d ms; busy workers poll by "
				 "themselves "
				 "meanwhile)",
				 res ? PQresultErrorMessage(res) : "connection lost",
				 LANE_WATCH_MAX_MS);
		lw->failing = true;
		lw->next_ms = now + LANE_WATCH_MAX_MS;
		return;
	}
	if (lw->stats)
		stats_counter_add(lw->stats, MET_LANE_LOOKS, 1);
	if (lw->failing)
		log_info("lane watch: works again");
	lw->failing = false;
	if (lw->asked_due)
		lw->due_ms = now + LANE_WATCH_DUE_MS;
	if (wake(lw, res) > 0)
		lw->woke_ms = now;
	/* an idle database sees little */
	lw->wait_ms = next_wait(lw->wait_ms, (int)lw->ctx->cfg->lane_watch_ms, now - lw->woke_ms);
	lw->next_ms = now + lw->wait_ms;
	say_watching(lw, now);
}

void lane_watch_tick(struct lane_watch *lw)
{
	int64_t now = mono_ms();
	const char *p[1];

	pgq_tick(&lw->pg, now);
	if (lw->busy || now < lw->next_ms || !pgq_connected(&lw->pg))
		return; /* pgq connects with its backoff; tried again next tick */
	lw->asked_due = now >= lw->due_ms;
	p[0] = lw->asked_due ? "t" : "f";
	if (pgq_send(&lw->pg, "SELECT vshard, owner FROM outbox.lanes_waiting($1::boolean)", 1, p,
		     on_look, lw) == 0)
		lw->busy = true;
	else
		lw->next_ms = now + LANE_WATCH_MAX_MS;
}

int lane_watch_timeout_ms(const struct lane_watch *lw)
{
	if (lw->busy)
		return 1000; /* the answer arrives as an event on the socket */
	return pgq_due_wait_ms(&lw->pg, lw->next_ms, mono_ms(), 1000);
}

void lane_watch_on_ready(struct lane_watch *lw, uint32_t events)
{
	pgq_on_ready(&lw->pg, events);
}

void lane_watch_free(struct lane_watch *lw)
{
	if (!lw)
		return;
	pgq_release(&lw->pg);
	free(lw);
}
