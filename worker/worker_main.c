/*
 * worker_main.c - a worker process: the dispatch engine's event loop.
 *
 * One event loop (common/loop.h: signals, the supervisor's death pipe and
 * a timer at OUTBOX_DISPATCH_INTERVAL_MS, the sweep that claims whatever a
 * hint missed, backoff timers included) with the worker's own fds: the ring
 * doorbell (hints from other roles: a NEW_OP claims at once), the
 * WORKER_PG_CONNS PostgreSQL connections (common/pgq.h; see worker.h for
 * which statement goes where), the RPC client's fd (rpc.h) and, with
 * OUTBOX_KAFKA_BROKERS set, the event relay's PostgreSQL socket and Kafka
 * fd (common/relay.h). Every turn: QSBR quiescent point, fee view for this
 * turn, heartbeat; reconnect PostgreSQL when due; renew and acquire leases
 * (leases.c); claim when asked (claim.c); run due jobs (job.c, build.c,
 * follow.c); hand the relay the leases held, whose vshards' events it seals
 * and produces.
 *
 * Wake-up: the worker LISTENs on outbox_wake on its express connection
 * (the CRITICAL-only NOTIFY of schema/0003_wakeup.sql), which is idle
 * between CRITICAL ops' statements, so the NOTIFY arrives at once and is
 * claimed at once (claim.c); NORMAL/LOW work through the oracle's lane
 * watcher's NEW_OP hints (oracle/lane_watch.h), the sweep, and the lane
 * poll of a busy worker while the watcher is silent (claim.c).
 *
 * The chain's clock: every RPC answer (and the oracle's snapshot) reports
 * the newest ledger it knows and, mostly, its close time. Both are chain
 * facts whichever node reported them; the worker keeps the newest ledger
 * and the last WORKER_MARKS (ledger, close time) pairs, from which a job
 * learns the first ledger known to have closed past its maxTime.
 *
 * Drain (SIGTERM, supervisor gone): stop claiming, abandon jobs (their ops
 * stay SUBMITTED or PENDING in PostgreSQL; the next owner reconciles them),
 * release the leases so a peer can take them at once, exit 0.
 *
 * At start it re-checks the signer keys file and loads it: a file that became
 * unusable is a configuration error, exit 2, which the supervisor does not
 * restart.
 */
#include "worker/worker_main.h"

#include "worker/worker.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/vshard.h"
#include "common/shm/inflight.h"
#include "common/stellar/sign.h"

#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORKER_TICK_MS 100

enum { EV_DOORBELL = LOOP_TAG_ROLE, EV_RPC, EV_RELAY_PG, EV_RELAY_KAFKA, EV_PG /* + connection */ };

/* The sweep: every OUTBOX_DISPATCH_INTERVAL_MS, the first one interval after the start. */
static int arm_sweep(struct worker *w)
{
	int64_t ms = w->ctx->cfg->dispatch_interval_ms;

	return loop_timer(&w->loop, ms, ms);
}

void worker_saw_ledger(struct worker *w, uint32_t ledger, int64_t close_time)
{
	int64_t now_s = (int64_t)(wall_ms() / 1000);

	if (!ledger)
		return;
	if (ledger > w->chain_ledger)
		w->chain_ledger = ledger;
	/* a close time more than a day ahead of us is not believed */
	if (close_time <= 0 || close_time > now_s + 86400)
		return;
	if (w->n_marks && ledger <= w->marks[w->n_marks - 1].ledger)
		return;
	if (w->n_marks && close_time <= w->marks[w->n_marks - 1].close)
		return; /* close times strictly increase: an answer that says otherwise is wrong */
	if (w->n_marks == WORKER_MARKS) {
		memmove(w->marks, w->marks + 1, (WORKER_MARKS - 1) * sizeof(w->marks[0]));
		w->n_marks--;
	}
	w->marks[w->n_marks++] = (struct chain_mark){ledger, close_time};
	w->chain_close = close_time;
}

uint32_t worker_first_ledger_after(const struct worker *w, int64_t t)
{
	for (unsigned i = 0; i < w->n_marks; i++)
		if (w->marks[i].close > t)
			return w->marks[i].ledger;
	return 0;
}

void worker_schedule_claim(struct worker *w, int64_t in_ms)
{
	int64_t at = mono_ms() + in_ms;

	if (w->claiming) {
		if (in_ms == 0)
			w->claim_again = true;
		return;
	}
	if (!w->next_claim_ms || at < w->next_claim_ms)
		w->next_claim_ms = at;
}

int64_t worker_epoch(const struct worker *w, int vshard)
{
	return vshard >= 0 && vshard < w->nvshards ? w->leases[vshard].epoch : 0;
}

/* Read the snapshot for this iteration and account for it. */
static void read_fees(struct worker *w)
{
	const struct fee_snapshot *s = fee_snapshot_get(&w->reader);

	fee_view_eval(&w->fees, s, wall_ms(), (uint64_t)w->ctx->cfg->fee_oracle_default_base_fee);
	stats_counter_add(w->stats, MET_SNAPSHOT_READS, 1);
	if (w->fees.stale)
		stats_counter_add(w->stats, MET_SNAPSHOT_STALE, 1);
	stats_gauge_set(w->stats, MET_SNAPSHOT_AGE_MS, w->fees.none ? -1 : (int64_t)w->fees.age_ms);
	stats_gauge_set(w->stats, MET_FEE_RECOMMENDED, (int64_t)w->fees.recommended);
	stats_gauge_set(w->stats, MET_FEE_AGGRESSIVE, (int64_t)w->fees.aggressive);
	stats_gauge_set(w->stats, MET_FEE_CONGESTION, (int64_t)w->fees.congestion);
	stats_gauge_set(w->stats, MET_INFLIGHT, w->inflight);
	worker_saw_ledger(w, w->fees.latest_ledger, (int64_t)w->fees.close_time);
}

/*
 * A CRITICAL NOTIFY's payload is its op's vshard (schema/0003_wakeup.sql).
 * Every worker hears every NOTIFY; only the one holding that vshard (its
 * lease reconciled, so a claim would read it) has something to claim. A
 * payload of another form is claimed for: a hint must never be lost to a
 * format the worker did not expect.
 */
static bool wake_is_mine(const struct worker *w, const char *payload)
{
	char *end;
	long v;

	if (!payload || !*payload)
		return true;
	errno = 0;
	v = strtol(payload, &end, 10);
	if (errno || *end || v < 0 || v >= w->nvshards)
		return true;
	return w->leases[v].epoch && w->leases[v].reconciled;
}

static void on_notify(const char *channel, const char *extra, void *arg)
{
	struct worker *w = arg;

	if (!strcmp(channel, "outbox_wake") && wake_is_mine(w, extra))
		claim_critical(w);
}

static void on_listen(PGresult *res, void *arg)
{
	(void)arg;
	if (res && !pgq_ok(res))
		log_warn("listen outbox_wake: %s", PQresultErrorMessage(res));
}

static bool all_connected(const struct worker *w)
{
	for (int k = 0; k < WORKER_PG_CONNS; k++)
		if (!pgq_connected(&w->pg[k]))
			return false;
	return true;
}

/*
 * Any connection lost: every write in flight on it has an unknown outcome
 * and the vshards it carries are out of order with the others, so the whole
 * worker starts over from the database once all connections are back.
 */
static void on_connect(bool up, void *arg)
{
	struct worker *w = arg;
	bool was = w->pg_up;

	w->pg_up = up && all_connected(w);
	if (!up) {
		/* Every write in flight has an unknown outcome: start over from the database. */
		for (int v = 0; v < w->nvshards; v++) {
			job_abandon_vshard(w, v);
			w->leases[v].epoch = 0;
			w->leases[v].reconciled = false;
			w->leases[v].reconciling = false;
			w->leases[v].acquiring = false;
		}
		w->claiming = false;
		w->urgent_claiming = false;
		w->urgent_again = false;
		w->renewing = false;
		return;
	}
	if (!w->pg_up || was)
		return;
	log_info("postgresql connected (%d connections)", WORKER_PG_CONNS);
	pgq_send(&w->pg[WORKER_PG_EXPRESS], "LISTEN outbox_wake", 0, NULL, on_listen, w);
	leases_start(w);
}

/* An event on one of the PostgreSQL connections (tags EV_PG + k); others are ignored. */
static void pg_ready(struct worker *w, const struct epoll_event *ev)
{
	if (ev->data.u64 >= EV_PG && ev->data.u64 < EV_PG + WORKER_PG_CONNS)
		pgq_on_ready(&w->pg[ev->data.u64 - EV_PG], ev->events);
}

static void handle_own(struct worker *w, const struct epoll_event *ev)
{
	switch (ev->data.u64) {
	case EV_DOORBELL:
		stats_counter_add(w->stats, MET_DOORBELL_WAKEUPS, 1);
		hints_read(w);
		break;
	case EV_RPC:
		rpc_client_perform(w->rpc);
		break;
	case EV_RELAY_PG:
	case EV_RELAY_KAFKA:
		if (w->relay)
			relay_on_ready(w->relay, ev->data.u64, ev->events);
		break;
	default:
		pg_ready(w, ev);
	}
}

/*
 * The event relay (common/relay.h) of the op events of the vshards this
 * worker leases: it seals their chains (fenced by the same leases) and
 * produces them to Kafka. Without brokers there is no relay: the events
 * stay in outbox.events, the durable record.
 */
static int relay_open(struct worker *w, struct outbox_error *err)
{
	const struct outbox_config *c = w->cfg;
	char client[32];
	struct relay_config rc = {.brokers = c->kafka_brokers,
				  .topic = c->kafka_topic,
				  .database = c->database_url,
				  .client = client,
				  .ep = w->loop.ep,
				  .tag_pg = EV_RELAY_PG,
				  .tag_kafka = EV_RELAY_KAFKA,
				  .stats = w->stats};

	if (!c->kafka_brokers[0])
		return 0;
	snprintf(client, sizeof(client), "worker-%u", w->ctx->index);
	w->relay = relay_new(&rc, err);
	return w->relay ? 0 : -EINVAL;
}

/* The relay follows the leases: it may seal exactly the chains of the vshards held. */
static void relay_turn(struct worker *w, int64_t now)
{
	static int vs[OUTBOX_VSHARDS_MAX]; /* one thread: no need for 48 KiB of stack a turn */
	static int64_t ep[OUTBOX_VSHARDS_MAX];
	int n = 0;

	if (!w->relay)
		return;
	for (int v = 0; v < w->nvshards && n < OUTBOX_VSHARDS_MAX; v++)
		if (w->leases[v].epoch) {
			vs[n] = v;
			ep[n++] = w->leases[v].epoch;
		}
	relay_set_vshards(w->relay, w->owner, vs, ep, n);
	relay_tick(w->relay, now);
}

static void handle(struct worker *w, const struct epoll_event *ev)
{
	switch (loop_event(&w->loop, ev)) {
	case LOOP_TIMER:
		worker_schedule_claim(w, 0);
		break;
	case LOOP_RELOADED:
		arm_sweep(w);
		break;
	case LOOP_ROLE:
		handle_own(w, ev);
		break;
	default:
		break;
	}
}

static int setup(struct worker *w, struct outbox_error *err)
{
	const struct child_ctx *ctx = w->ctx;
	struct rpc_config rc_cfg = {.url = ctx->cfg->rpc_url};
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
	w->nvshards = (int)ctx->cfg->vshards;
	w->leases = calloc((size_t)w->nvshards, sizeof(*w->leases));
	if (!w->leases)
		return -ENOMEM;
	if (outbox_lease_owner_format(w->owner, sizeof(w->owner), ctx->cfg->instance, ctx->index,
				      (long)getpid()) < 0)
		return -ENAMETOOLONG;
	stellar_network_id(ctx->cfg->network_passphrase, w->network_id);
	w->rpc = rpc_client_new(&rc_cfg, err);
	if (!w->rpc)
		return -EINVAL;
	for (int k = 0; k < WORKER_PG_CONNS; k++) {
		/* pg_stat_activity tells the connections apart (worker.h, WORKER_PG_CONNS) */
		static const char *const names[WORKER_PG_CONNS] = {
			"outboxd-worker/control", "outboxd-worker/data1", "outboxd-worker/data2",
			"outboxd-worker/data3",   "outboxd-worker/ahead", "outboxd-worker/express"};
		_Static_assert(WORKER_PG_CONNS == 6, "a name for each connection");

		if ((rc = pgq_init(&w->pg[k], ctx->cfg->database_url, names[k], w->loop.ep,
				   EV_PG + (uint64_t)k, on_notify, on_connect, w)))
			return rc;
		w->pg[k].stats = w->stats;
	}
	if ((rc = loop_add(&w->loop, w->db_fd, EV_DOORBELL)) ||
	    (rc = loop_add(&w->loop, rpc_client_fd(w->rpc), EV_RPC)))
		return rc;
	for (int pr = 0; pr < SHM_N_PRODUCERS; pr++)
		w->ring_ok[pr] = spsc_ring_attach(&w->rings[pr], ctx->seg, (enum shm_producer)pr,
						  ctx->index) == 0;
	inflight_set(ctx->seg, ctx->index, 0);
	if ((rc = relay_open(w, err)))
		return rc;
	return arm_sweep(w);
}

static int wait_ms(struct worker *w, int64_t now)
{
	int64_t t = WORKER_TICK_MS;
	int rt = rpc_client_timeout_ms(w->rpc);

	if (rt >= 0 && rt < t)
		t = rt;
	if (w->next_claim_ms && w->next_claim_ms - now < t)
		t = w->next_claim_ms - now;
	if (due_next(w) - now < t)
		t = due_next(w) - now;
	if (w->relay && relay_timeout_ms(w->relay, now) < t)
		t = relay_timeout_ms(w->relay, now);
	return t < 0 ? 0 : (int)t;
}

static void turn(struct worker *w)
{
	int64_t now = mono_ms();

	for (int k = 0; k < WORKER_PG_CONNS; k++)
		pgq_tick(&w->pg[k], now);
	leases_tick(w, now);
	if (w->next_claim_ms && now >= w->next_claim_ms && !w->claiming) {
		w->next_claim_ms = 0;
		claim_tick(w);
	}
	jobs_tick(w, now);
	relay_turn(w, now);
}

static size_t pg_pending(const struct worker *w)
{
	size_t n = 0;

	for (int k = 0; k < WORKER_PG_CONNS; k++)
		n += pgq_pending(&w->pg[k]);
	return n;
}

static void wait_writes(struct worker *w, int64_t until)
{
	while (pg_pending(w) && mono_ms() < until) {
		struct epoll_event evs[8];
		int n = epoll_wait(w->loop.ep, evs, 8, 50);
		for (int i = 0; i < n; i++)
			if (evs[i].data.u64 == EV_RPC)
				rpc_client_perform(w->rpc);
			else
				pg_ready(w, &evs[i]);
	}
}

/*
 * Stopping, within three quarters of the supervisor's OUTBOX_DRAIN_TIMEOUT_MS
 * (then it SIGKILLs): the jobs are abandoned and their writes in flight
 * finish; the relay publishes the events those writes left while the leases
 * still fence its seals (released first, every event written in the last
 * moments waited, unpublished, for the next start); then the leases go.
 */
static void drain(struct worker *w)
{
	int64_t start = mono_ms(), end = start + w->cfg->drain_timeout_ms * 3 / 4;
	int64_t writes = start + 2000 < end ? start + 2000 : end;

	for (int v = 0; v < w->nvshards; v++)
		if (w->leases[v].epoch)
			job_abandon_vshard(w, v);
	wait_writes(w, writes);
	relay_drain(w->relay, (int)(end - 1000 - mono_ms() > 0 ? end - 1000 - mono_ms() : 0));
	leases_release_all(w);
	wait_writes(w, end);
}

int worker_main(struct child_ctx *ctx)
{
	struct worker w = {.ctx = ctx, .cfg = ctx->cfg};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct epoll_event evs[32];
	int rc;

	rc = loop_open(&w.loop, ctx);
	if (rc) {
		log_err("worker setup: %s", outbox_error_name(rc));
		loop_close(&w.loop);
		return 1;
	}
	if (keys_file_check(ctx->cfg->signer_keys_file, NULL, &err) || signers_load(&w, &err)) {
		log_err("cannot run: %s", err.msg);
		return 2;
	}
	rc = setup(&w, &err);
	if (rc) {
		log_err("worker setup: %s", err.msg[0] ? err.msg : outbox_error_name(rc));
		return 1;
	}
	proc_slot_running(w.slot);
	log_info("running as %s", w.owner);

	while (!w.loop.draining) {
		int n;

		qsbr_quiescent(&w.reader.q, w.reader.me);
		read_fees(&w);
		proc_slot_heartbeat(w.slot);
		stats_counter_add(w.stats, MET_HEARTBEATS, 1);
		stats_counter_add(w.stats, MET_LOOP_ITERATIONS, 1);
		hints_read(&w);
		turn(&w);

		doorbell_prepare(w.db);
		qsbr_offline(&w.reader.q, w.reader.me);
		/* a hint pushed before the prepare rang no doorbell: look again after it */
		n = epoll_wait(w.loop.ep, evs, 32, hints_waiting(&w) ? 0 : wait_ms(&w, mono_ms()));
		qsbr_online(&w.reader.q, w.reader.me);
		doorbell_done(w.db, w.db_fd);
		if (n == 0)
			stats_counter_add(w.stats, MET_DOORBELL_TIMEOUTS, 1);
		for (int i = 0; i < n; i++)
			handle(&w, &evs[i]);
		rpc_client_perform(w.rpc);
		loop_check_supervisor(&w.loop);
	}

	proc_slot_stopping(w.slot);
	qsbr_offline(&w.reader.q, w.reader.me);
	drain(&w);
	relay_free(w.relay, 0); /* relay_drain had its time; the rest is produced again */
	rpc_client_free(w.rpc);
	due_free(&w);
	tx_index_free(&w);
	for (int k = 0; k < WORKER_PG_CONNS; k++)
		pgq_release(&w.pg[k]);
	signers_release(&w);
	loop_close(&w.loop);
	log_info("stopped");
	return 0;
}
