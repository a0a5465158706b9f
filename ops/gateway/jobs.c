/*
 * jobs.c - the gateway's PostgreSQL, all on the loop thread (common/pgq.h:
 * non-blocking, so the heartbeat never waits for the database).
 *
 *	ctl     LISTEN outbox_done (an op ended: a synchronous enqueue may be
 *	        answered) and outbox_keys (reload the key cache); the key
 *	        cache, the queue depth of /metrics, the waiters' status checks
 *	api[i]  the api_* calls of requests, each request on the connection
 *	        with the fewest commands queued
 *
 * HTTP threads hand a request over with gw_submit: a mutex-protected list
 * and an eventfd in the loop's epoll set. The request's connection is
 * suspended; the loop answers it (gw_http_answer resumes it) when its SQL
 * returns.
 *
 * A synchronous enqueue ("wait": true) whose op is not over yet becomes a
 * waiter: a list entry, no thread. It is answered when NOTIFY outbox_done
 * names its op and a status check finds it ended (CONFIRMED, FAILED,
 * CANCELLED or HELD), or with 202 once its deadline passed. Every second the
 * waiters' ops are checked anyway, which covers a NOTIFY lost with a
 * connection and an op that ended before its waiter was listed.
 */
#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define WAITERS_CHECK_MS 1000

static uint64_t tag_inbox_, tag_ctl_, tag_api0_;

void gw_submit(struct gateway *g, struct gw_req *r)
{
	uint64_t one = 1;

	pthread_mutex_lock(&g->lock);
	r->next = g->inbox;
	g->inbox = r;
	pthread_mutex_unlock(&g->lock);
	if (write(g->inbox_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("gateway: eventfd write: %s", strerror(errno));
}

/* ---- the API connections ---- */

static void on_api_result(PGresult *res, void *arg)
{
	struct gw_req *r = arg;

	gw_api_on_result(r->g, r, res);
}

static struct pgq *api_conn(struct gateway *g)
{
	struct pgq *best = NULL;

	for (unsigned i = 0; i < GW_API_CONNS; i++) {
		struct pgq *q = &g->api[(g->api_next + i) % GW_API_CONNS];

		if (pgq_connected(q) && (!best || pgq_pending(q) < pgq_pending(best)))
			best = q;
	}
	g->api_next++;
	return best;
}

static void run(struct gateway *g, struct gw_req *r)
{
	struct pgq *q;

	if (r->job == J_METRICS) {
		r->next = g->metrics_waiting;
		g->metrics_waiting = r;
		atomic_store(&g->depth_wanted_ms, (int64_t)mono_ms());
		g->depth_at_ms = 0; /* refresh now */
		return;
	}
	q = api_conn(g);
	if (!q ||
	    pgq_send(q, r->sql, r->n_params, (const char *const *)r->params, on_api_result, r)) {
		gw_http_error(g, r, 503, "unavailable", NULL, "PostgreSQL is not reachable");
		return;
	}
	gw_api_job_clear(r);
}

static void inbox_drain(struct gateway *g)
{
	uint64_t n;
	struct gw_req *list, *rev = NULL;

	if (read(g->inbox_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("gateway: eventfd read: %s", strerror(errno));
	pthread_mutex_lock(&g->lock);
	list = g->inbox;
	g->inbox = NULL;
	pthread_mutex_unlock(&g->lock);
	while (list) { /* oldest first */
		struct gw_req *next = list->next;
		list->next = rev;
		rev = list;
		list = next;
	}
	while (rev) {
		struct gw_req *next = rev->next;
		rev->next = NULL;
		run(g, rev);
		rev = next;
	}
}

/* ---- waiters ---- */

static void waiter_answer(struct gateway *g, struct gw_req *r, json_t *op, bool timed_out)
{
	uint64_t fee;
	double eta;
	json_t *body = json_pack("{s:O?, s:b, s:b}", "op", op, "created", r->created_status == 201,
				 "timedOut", timed_out);

	gw_conditions_estimate(g, r->priority, &fee, &eta);
	json_object_set_new(body, "estFee", json_integer((json_int_t)fee));
	json_object_set_new(body, "estConfirmationSeconds",
			    eta >= 0 ? json_real(eta) : json_null());
	gw_http_answer(g, r, timed_out ? 202 : (unsigned)r->created_status,
		       json_dumps(body, JSON_COMPACT));
	json_decref(body);
}

static void waiter_remove(struct gateway *g, struct gw_req *r)
{
	for (struct gw_req **p = &g->waiters; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			r->next = NULL;
			g->n_waiters--;
			stats_gauge_set(g->stats, MET_HTTP_WAITING, g->n_waiters);
			return;
		}
}

static void settle_row(struct gateway *g, int64_t id, const char *status, json_t *op, int64_t now)
{
	bool done = !strcmp(status, "CONFIRMED") || !strcmp(status, "FAILED") ||
		    !strcmp(status, "CANCELLED") || !strcmp(status, "HELD");
	struct gw_req *r = g->waiters, *next;

	for (; r; r = next) {
		next = r->next;
		if (r->op_id != id || (!done && now < r->wait_deadline_ms))
			continue;
		waiter_remove(g, r);
		waiter_answer(g, r, op, !done);
	}
}

static void on_waiters(PGresult *res, void *arg)
{
	struct gateway *g = arg;
	int64_t now = (int64_t)mono_ms();

	g->waiters_busy = false;
	if (!pgq_ok(res))
		return; /* the next check asks again */
	for (int i = 0; i < PQntuples(res); i++) {
		json_t *op = json_loads(PQgetvalue(res, i, 2), 0, NULL);

		settle_row(g, strtoll(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1), op,
			   now);
		json_decref(op);
	}
}

/* Check the ops of the waiters (only op `only` when > 0). */
static void waiters_check(struct gateway *g, int64_t only)
{
	size_t cap = 16 + (size_t)g->n_waiters * 21, len = 0;
	char *ids;

	if (!g->waiters || !pgq_connected(&g->ctl) || (g->waiters_busy && !only))
		return;
	if (!(ids = malloc(cap)))
		return;
	ids[len++] = '{';
	for (struct gw_req *r = g->waiters; r; r = r->next)
		if (!only || r->op_id == only)
			len += (size_t)snprintf(ids + len, cap - len, "%s%lld", len > 1 ? "," : "",
						(long long)r->op_id);
	snprintf(ids + len, cap - len, "}");
	if (len > 1) {
		const char *p[1] = {ids};
		if (!pgq_send(
			    &g->ctl,
			    "SELECT id, status, op::text FROM outbox.api_ops_status($1::bigint[])",
			    1, p, on_waiters, g) &&
		    !only)
			g->waiters_busy = true;
	}
	free(ids);
}

void gw_jobs_wait(struct gateway *g, struct gw_req *r)
{
	if (g->n_waiters >= GW_WAITERS_MAX) {
		gw_http_error(g, r, 503, "busy", NULL,
			      "too many synchronous enqueues wait already: op %lld was enqueued, "
			      "look it up",
			      (long long)r->op_id);
		return;
	}
	r->next = g->waiters;
	g->waiters = r;
	g->n_waiters++;
	stats_gauge_set(g->stats, MET_HTTP_WAITING, g->n_waiters);
	waiters_check(g, r->op_id); /* it may have ended before it was listed */
}

/* ---- the control connection ---- */

static void on_keys(PGresult *res, void *arg)
{
	struct gateway *g = arg;

	g->keys_busy = false;
	if (!pgq_ok(res)) {
		if (res)
			log_warn("gateway: loading API keys: %s", PQresultErrorMessage(res));
		return;
	}
	if (gw_keys_load(g, res) == 0) {
		g->gw_keys_loaded = true;
		atomic_fetch_add_explicit(&g->stats->counter[MET_HTTP_KEY_REFRESHES], 1,
					  memory_order_relaxed);
		atomic_store(&g->pg_ready, pgq_connected(&g->ctl));
	}
}

static void keys_refresh(struct gateway *g)
{
	if (g->keys_busy || !pgq_connected(&g->ctl))
		return;
	if (!pgq_send(&g->ctl,
		      "SELECT id, name, key_prefix, encode(key_hash, 'hex'), "
		      "array_to_string(scopes, ','), revoked FROM outbox.api_keys()",
		      0, NULL, on_keys, g)) {
		g->keys_busy = true;
		g->keys_at_ms = (int64_t)mono_ms();
	}
}

static void on_depth(PGresult *res, void *arg)
{
	struct gateway *g = arg;
	struct gw_req *r = g->metrics_waiting, *next;

	g->depth_busy = false;
	if (pgq_ok(res))
		gw_metrics_depth_load(g, res);
	g->metrics_waiting = NULL;
	for (; r; r = next) { /* with the depth we have, fresh or not */
		next = r->next;
		r->next = NULL;
		r->content_type = "text/plain; version=0.0.4; charset=utf-8";
		gw_http_answer(g, r, 200, gw_metrics_render(g));
	}
}

static void depth_refresh(struct gateway *g, int64_t now)
{
	char ms[24];
	const char *p[1] = {ms};

	if (g->depth_busy)
		return;
	if (!pgq_connected(&g->ctl)) {
		on_depth(NULL, g); /* answer the waiting scrapes without it */
		return;
	}
	snprintf(ms, sizeof(ms), "%lld", (long long)g->ctx->cfg->submitted_timeout_ms);
	if (!pgq_send(&g->ctl, "SELECT status, priority, n FROM outbox.api_metrics($1::bigint)", 1,
		      p, on_depth, g)) {
		g->depth_busy = true;
		g->depth_at_ms = now;
	}
}

static void on_ignore(PGresult *res, void *arg)
{
	(void)arg;
	if (res && !pgq_ok(res))
		log_warn("gateway: %s", PQresultErrorMessage(res));
}

static void on_ctl_connect(bool up, void *arg)
{
	struct gateway *g = arg;

	if (!up) {
		atomic_store(&g->pg_ready, false);
		return;
	}
	pgq_send(&g->ctl, "LISTEN outbox_done", 0, NULL, on_ignore, g);
	pgq_send(&g->ctl, "LISTEN outbox_keys", 0, NULL, on_ignore, g);
	keys_refresh(g);
	waiters_check(g, 0); /* what ended while no NOTIFY could come */
}

static void on_ctl_notify(const char *channel, const char *extra, void *arg)
{
	struct gateway *g = arg;

	if (!strcmp(channel, "outbox_keys")) {
		g->keys_at_ms = 0; /* reload at the next tick, after a load under way */
	} else if (!strcmp(channel, "outbox_done") && extra && g->waiters) {
		int64_t id = strtoll(extra, NULL, 10);

		for (struct gw_req *r = g->waiters; r; r = r->next)
			if (r->op_id == id) {
				waiters_check(g, id);
				break;
			}
	}
}

static void on_api_connect(bool up, void *arg)
{
	struct pgq *q = arg;
	char sql[64];

	if (up) {
		snprintf(sql, sizeof(sql), "SET statement_timeout = %d", GW_STMT_TIMEOUT_MS);
		pgq_send(q, sql, 0, NULL, on_ignore, NULL);
	}
}

int gw_jobs_open(struct gateway *g, uint64_t tag_inbox, uint64_t tag_ctl, uint64_t tag_api0)
{
	const char *url = g->ctx->cfg->database_url;
	int rc;

	tag_inbox_ = tag_inbox, tag_ctl_ = tag_ctl, tag_api0_ = tag_api0;
	pthread_mutex_init(&g->lock, NULL);
	g->inbox_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->inbox_fd < 0)
		return -errno;
	if ((rc = loop_add(&g->loop, g->inbox_fd, tag_inbox)))
		return rc;
	if (pgq_init(&g->ctl, url, "outboxd-gateway", g->loop.ep, tag_ctl, on_ctl_notify,
		     on_ctl_connect, g))
		return -ENOMEM;
	for (unsigned i = 0; i < GW_API_CONNS; i++)
		if (pgq_init(&g->api[i], url, "outboxd-gateway-api", g->loop.ep, tag_api0 + i, NULL,
			     on_api_connect, &g->api[i]))
			return -ENOMEM;
	return 0;
}

void gw_jobs_on_ready(struct gateway *g, uint64_t tag, uint32_t events)
{
	if (tag == tag_inbox_)
		inbox_drain(g);
	else if (tag == tag_ctl_)
		pgq_on_ready(&g->ctl, events);
	else if (tag >= tag_api0_ && tag < tag_api0_ + GW_API_CONNS)
		pgq_on_ready(&g->api[tag - tag_api0_], events);
}

void gw_jobs_tick(struct gateway *g, int64_t now)
{
	int64_t wanted = atomic_load(&g->depth_wanted_ms);

	pgq_tick(&g->ctl, now);
	for (unsigned i = 0; i < GW_API_CONNS; i++)
		pgq_tick(&g->api[i], now);
	if (!g->keys_at_ms || now - g->keys_at_ms >= GW_KEYS_REFRESH_MS)
		keys_refresh(g);
	/* keep the depth fresh while someone scrapes; answer scrapes that wait for it */
	if (g->metrics_waiting ||
	    (wanted && now - wanted < 60000 && now - g->depth_at_ms >= GW_DEPTH_MAX_AGE / 2))
		depth_refresh(g, now);
	if (g->waiters && now - g->waiters_at_ms >= WAITERS_CHECK_MS) {
		g->waiters_at_ms = now;
		waiters_check(g, 0);
	}
}

size_t gw_jobs_pending(const struct gateway *g)
{
	size_t n = pgq_pending(&g->ctl);

	for (unsigned i = 0; i < GW_API_CONNS; i++)
		n += pgq_pending(&g->api[i]);
	return n;
}

void gw_jobs_drain(struct gateway *g)
{
	struct gw_req *r;

	inbox_drain(g); /* answered or sent */
	while ((r = g->waiters)) {
		waiter_remove(g, r);
		gw_http_error(g, r, 503, "shutting_down", NULL,
			      "outboxd is stopping: op %lld was enqueued and goes on, look it up",
			      (long long)r->op_id);
	}
}

void gw_jobs_close(struct gateway *g)
{
	gw_jobs_drain(g);
	pgq_release(&g->ctl); /* callbacks run with NULL: every request is answered */
	for (unsigned i = 0; i < GW_API_CONNS; i++)
		pgq_release(&g->api[i]);
	on_depth(NULL, g);
	if (g->inbox_fd >= 0)
		close(g->inbox_fd);
	g->inbox_fd = -1;
	pthread_mutex_destroy(&g->lock);
}
