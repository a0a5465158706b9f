/*
 * pgq.c - see pgq.h.
 */
#include "common/pgq.h"

#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sodium.h>

#define PGQ_BACKOFF_BASE_MS 100
#define PGQ_BACKOFF_MAX_MS  5000

struct pgq_cmd {
	struct pgq_cmd *next;
	pgq_cb cb;
	void *arg;
	bool batch;                    /* may share a transaction (pgq_send_batch) */
	const struct pgq_merge *merge; /* may become part of one set statement */
	int stmt;                      /* in a batch on the wire: its statement's result */
	int n;
	char *params[PGQ_MAX_PARAMS];
	char sql[]; /* followed by the parameter strings */
};

int pgq_init(struct pgq *q, const char *conninfo, const char *app_name, int ep, uint64_t tag,
	     pgq_notify_fn on_notify, pgq_connect_fn on_connect, void *arg)
{
	memset(q, 0, sizeof(*q));
	q->conninfo = strdup(conninfo);
	q->app_name = strdup(app_name);
	if (!q->conninfo || !q->app_name) {
		free(q->conninfo);
		free(q->app_name);
		q->conninfo = q->app_name = NULL;
		return -ENOMEM;
	}
	q->ep = ep;
	q->tag = tag;
	q->fd = -1;
	q->on_notify = on_notify;
	q->on_connect = on_connect;
	q->arg = arg;
	return 0;
}

bool pgq_connected(const struct pgq *q)
{
	return q->conn != NULL && !q->connecting;
}

bool pgq_down(const struct pgq *q)
{
	return !pgq_connected(q) && q->failures > 0;
}

size_t pgq_pending(const struct pgq *q)
{
	return q->queued;
}

const char *pgq_sqlstate(const PGresult *res)
{
	const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return s ? s : "";
}

bool pgq_ok(const PGresult *res)
{
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

	return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
}

static void set_events(struct pgq *q, uint32_t want)
{
	struct epoll_event ev = {.events = want, .data.u64 = q->tag};

	if (q->fd < 0 || want == q->registered_events)
		return;
	if (epoll_ctl(q->ep, EPOLL_CTL_MOD, q->fd, &ev) == 0)
		q->registered_events = want;
}

static struct pgq_cmd *pop(struct pgq *q)
{
	struct pgq_cmd *c = q->head;

	q->head = c->next;
	if (!q->head)
		q->tail = NULL;
	q->queued--;
	return c;
}

static void clear_results(struct pgq *q)
{
	for (int i = 0; i < q->n_res; i++)
		PQclear(q->res[i]);
	q->n_res = 0;
}

/* This session's index of sql among the prepared statements, or -1. */
static int prepared_find(const struct pgq *q, const char *sql)
{
	for (int i = 0; i < q->n_prepared; i++)
		if (!strcmp(q->prepared[i], sql))
			return i;
	return -1;
}

/* The statements of a session that ended are gone with it (and one being prepared). */
static void prepared_forget(struct pgq *q)
{
	for (int i = 0; i < q->n_prepared + q->preparing; i++) {
		free(q->prepared[i]);
		q->prepared[i] = NULL;
	}
	q->n_prepared = 0;
	q->preparing = false;
}

/*
 * Connection gone: every command learns "unknown" (NULL), in order. why is
 * NULL when we close it ourselves (pgq_release, an orderly shutdown): that
 * is no failure, nothing to warn about.
 */
static void drop_connection(struct pgq *q, const char *why)
{
	if (q->conn && !why) {
		log_debug("postgresql connection closed");
	} else if (q->conn) {
		/*
		 * Once per episode: the first failure is a warning, and so is a
		 * retry that fails for another reason (a lost session, then
		 * "too many clients"); a retry that fails as the one before is
		 * a debug line (a server down for a minute would otherwise log
		 * every attempt of every connection). The connect that ends
		 * the episode says how long it lasted.
		 */
		bool new_reason =
			!q->failures || strncmp(why, q->last_why, sizeof(q->last_why) - 1);

		log_msg(new_reason ? LOG_LVL_WARN : LOG_LVL_DEBUG, "postgresql %s: %s",
			q->connecting ? "connect failed" : "connection lost", why);
		snprintf(q->last_why, sizeof(q->last_why), "%s", why);
	}
	if (q->conn) {
		if (q->fd >= 0)
			epoll_ctl(q->ep, EPOLL_CTL_DEL, q->fd, NULL);
		PQfinish(q->conn);
		q->conn = NULL;
		q->fd = -1;
		q->registered_events = 0;
	}
	q->connecting = false;
	clear_results(q);
	prepared_forget(q);
	q->n_sent = 0;
	if (!q->failures++)
		q->down_since_ms = mono_ms();
	q->retry_at_ms = mono_ms() +
			 (int64_t)backoff_full_jitter_ms(
				 q->failures, PGQ_BACKOFF_BASE_MS, PGQ_BACKOFF_MAX_MS,
				 ((uint64_t)randombytes_random() << 32) | randombytes_random()) +
			 1;
	while (q->head) {
		struct pgq_cmd *c = pop(q);
		c->cb(NULL, c->arg);
		free(c);
	}
	if (q->on_connect)
		q->on_connect(false, q->arg);
}

/* Append n bytes of piece to *buf, growing it; false when out of memory. */
static bool append(char **buf, size_t *len, size_t *cap, const char *piece, size_t n)
{
	if (*len + n + 3 > *cap) {
		size_t ncap = (*cap + n + 3) * 2;
		char *nb = realloc(*buf, ncap);

		if (!nb)
			return false;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, piece, n);
	*len += n;
	(*buf)[*len] = '\0';
	return true;
}

/* Append a parameter as an escaped literal (NULL as NULL); false on failure. */
static bool append_literal(PGconn *conn, const char *v, char **buf, size_t *len, size_t *cap)
{
	char *esc;
	bool ok;

	if (!v)
		return append(buf, len, cap, "NULL", 4);
	esc = PQescapeLiteral(conn, v, strlen(v));
	if (!esc)
		return false;
	ok = append(buf, len, cap, esc, strlen(esc));
	PQfreemem(esc);
	return ok;
}

/* Append c's statement with its parameters as escaped literals; false on failure. */
static bool append_inlined(PGconn *conn, const struct pgq_cmd *c, char **buf, size_t *len,
			   size_t *cap)
{
	for (const char *p = c->sql; *p;) {
		if (p[0] == '$' && p[1] >= '1' && p[1] <= '9') {
			char *end;
			long k = strtol(p + 1, &end, 10);

			if (k < 1 || k > c->n ||
			    !append_literal(conn, c->params[k - 1], buf, len, cap))
				return false;
			p = end;
		} else {
			const char *next = p + strcspn(p + 1, "$") + 1;

			if (!append(buf, len, cap, p, (size_t)(next - p)))
				return false;
			p = next;
		}
	}
	return append(buf, len, cap, ";\n", 2);
}

/*
 * Append the run of m commands from c, which share a merge descriptor, as
 * its one set statement: the k-th array holds the k-th parameter of each.
 */
static bool append_merged(PGconn *conn, const struct pgq_cmd *c, int m, char **buf, size_t *len,
			  size_t *cap)
{
	const struct pgq_merge *mg = c->merge;

	if (!append(buf, len, cap, "SELECT ", 7) ||
	    !append(buf, len, cap, mg->fn, strlen(mg->fn)) || !append(buf, len, cap, "(", 1))
		return false;
	for (int k = 0; k < c->n; k++) {
		const struct pgq_cmd *x = c;

		if (!append(buf, len, cap, k ? ", ARRAY[" : "ARRAY[", k ? 8 : 6))
			return false;
		for (int i = 0; i < m; i++, x = x->next)
			if ((i && !append(buf, len, cap, ",", 1)) ||
			    !append_literal(conn, x->params[k], buf, len, cap))
				return false;
		if (!append(buf, len, cap, "]::", 3) ||
		    !append(buf, len, cap, mg->types[k], strlen(mg->types[k])))
			return false;
	}
	return append(buf, len, cap, ");\n", 3);
}

/* How many commands from c share its merge descriptor (1 when it has none). */
static int merge_run(const struct pgq_cmd *c, int left)
{
	int m = 1;

	if (!c->merge)
		return 1;
	for (const struct pgq_cmd *x = c->next; x && m < left; x = x->next, m++)
		if (x->merge != c->merge || x->n != c->n)
			break;
	return m;
}

/*
 * The first n batchable commands as one multi-statement string, or NULL;
 * each command learns which statement's result is its own, *stmts how many
 * statements there are, *merged how many commands went into set forms.
 */
static char *batch_sql(struct pgq *q, int n, int *stmts, int *merged)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	struct pgq_cmd *c = q->head;
	int s = 0;

	*merged = 0;
	for (int i = 0; buf && i < n; s++) {
		int m = merge_run(c, n - i);
		bool ok = m > 1 ? append_merged(q->conn, c, m, &buf, &len, &cap)
				: append_inlined(q->conn, c, &buf, &len, &cap);

		if (!ok) {
			free(buf);
			return NULL;
		}
		if (m > 1)
			*merged += m;
		for (int k = 0; k < m; k++, c = c->next)
			c->stmt = s;
		i += m;
	}
	*stmts = s;
	return buf;
}

/* Send the single command c: prepared, being prepared, or unnamed. */
static int send_one(struct pgq *q, const struct pgq_cmd *c)
{
	const char *const *params = (const char *const *)c->params;
	char name[16];
	int k = prepared_find(q, c->sql);

	/* The text is copied before the prepare goes out: a copy that fails
	 * later could not leave the command's callback with the prepare's result. */
	if (k < 0 && q->n_prepared < PGQ_PREPARED_MAX &&
	    (q->prepared[q->n_prepared] = strdup(c->sql))) {
		snprintf(name, sizeof(name), "pgq%d", q->n_prepared);
		q->preparing = true;
		return PQsendPrepare(q->conn, name, c->sql, c->n, NULL);
	}
	if (k < 0)
		return PQsendQueryParams(q->conn, c->sql, c->n, NULL, params, NULL, NULL, 0);
	snprintf(name, sizeof(name), "pgq%d", k);
	return PQsendQueryPrepared(q->conn, name, c->n, params, NULL, NULL, 0);
}

/* Put the head command(s) on the wire if nothing is there. */
static void kick(struct pgq *q)
{
	struct pgq_cmd *c = q->head;
	char *sql = NULL;
	int n = 0, stmts = 1, merged = 0, ok;

	if (!pgq_connected(q) || !c || q->n_sent)
		return;
	for (struct pgq_cmd *x = c; x && x->batch && n < PGQ_BATCH_MAX; x = x->next)
		n++;
	if (n >= 2 && (sql = batch_sql(q, n, &stmts, &merged))) {
		ok = PQsendQuery(q->conn, sql);
		free(sql);
		q->batches++;
		q->batched += (uint64_t)n;
		q->merged += (uint64_t)merged;
		if (q->stats) {
			stats_counter_add(q->stats, MET_PG_BATCHES, 1);
			stats_counter_add(q->stats, MET_PG_MERGED, (uint64_t)merged);
		}
	} else {
		n = 1;
		ok = send_one(q, c);
	}
	if (!ok) {
		drop_connection(q, PQerrorMessage(q->conn));
		return;
	}
	q->n_sent = n;
	q->n_stmts = stmts;
	set_events(q, PQflush(q->conn) == 1 ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

static int enqueue(struct pgq *q, bool batch, const struct pgq_merge *merge, const char *sql, int n,
		   const char *const *params, pgq_cb cb, void *arg)
{
	size_t len = strlen(sql) + 1, off;
	struct pgq_cmd *c;

	if (!pgq_connected(q))
		return -ENOTCONN;
	if (n < 0 || n > PGQ_MAX_PARAMS)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		len += params[i] ? strlen(params[i]) + 1 : 0;
	c = malloc(sizeof(*c) + len);
	if (!c)
		return -ENOMEM;
	c->next = NULL;
	c->cb = cb;
	c->arg = arg;
	c->batch = batch;
	c->merge = merge;
	c->stmt = 0;
	c->n = n;
	off = strlen(sql) + 1;
	memcpy(c->sql, sql, off);
	for (int i = 0; i < n; i++) {
		if (!params[i]) {
			c->params[i] = NULL;
			continue;
		}
		size_t l = strlen(params[i]) + 1;
		c->params[i] = c->sql + off;
		memcpy(c->params[i], params[i], l);
		off += l;
	}
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->queued++;
	kick(q);
	return 0;
}

int pgq_send(struct pgq *q, const char *sql, int n, const char *const *params, pgq_cb cb, void *arg)
{
	return enqueue(q, false, NULL, sql, n, params, cb, arg);
}

int pgq_send_batch(struct pgq *q, const char *sql, int n, const char *const *params, pgq_cb cb,
		   void *arg)
{
	return enqueue(q, true, NULL, sql, n, params, cb, arg);
}

int pgq_send_merge(struct pgq *q, const struct pgq_merge *m, const char *sql, int n,
		   const char *const *params, pgq_cb cb, void *arg)
{
	if (!m || !m->fn)
		return -EINVAL;
	for (int k = 0; k < n && k < PGQ_MAX_PARAMS; k++)
		if (!m->types[k])
			return -EINVAL;
	return enqueue(q, true, m, sql, n, params, cb, arg);
}

static void deliver_notifies(struct pgq *q)
{
	PGnotify *nf;

	while (q->conn && (nf = PQnotifies(q->conn))) {
		if (q->on_notify)
			q->on_notify(nf->relname, nf->extra, q->arg);
		PQfreemem(nf);
	}
}

/*
 * The command(s) on the wire completed (PQgetResult said NULL, so the
 * implicit transaction has ended). A single command gets its last result.
 * A batch delivers one result per command (its statement's: merged
 * commands share one) only if every statement succeeded; otherwise nothing
 * of it committed and each command goes again alone, in the same order, at
 * the head of the queue.
 */
static void finish(struct pgq *q)
{
	int n = q->n_sent;
	bool all_ok = q->n_res == q->n_stmts;

	q->n_sent = 0;
	if (q->preparing) {
		/* Prepared: the command goes next, as itself; refused: it gets the error. */
		q->preparing = false;
		if (all_ok && pgq_ok(q->res[0])) {
			q->n_prepared++;
			clear_results(q);
			return;
		}
		free(q->prepared[q->n_prepared]);
		q->prepared[q->n_prepared] = NULL;
	}
	for (int i = 0; all_ok && i < q->n_res; i++)
		all_ok = pgq_ok(q->res[i]);
	if (n > 1 && !all_ok) {
		struct pgq_cmd *c = q->head;
		for (int i = 0; i < n; i++, c = c->next) {
			c->batch = false;
			c->merge = NULL;
		}
		q->batch_retries++;
		if (q->stats)
			stats_counter_add(q->stats, MET_PG_BATCH_RETRIES, 1);
		clear_results(q);
		return;
	}
	/*
	 * Detach first: a callback may send, and its kick must not see the
	 * rest of this batch (already executed) as the next head to send.
	 */
	struct pgq_cmd *done[PGQ_BATCH_MAX];
	PGresult *held[PGQ_BATCH_MAX];
	int n_res = q->n_res;

	for (int i = 0; i < n; i++)
		done[i] = pop(q);
	memcpy(held, q->res, sizeof(PGresult *) * (size_t)n_res);
	q->n_res = 0;
	for (int i = 0; i < n; i++) {
		/* a single command gets its last result (NULL never: libpq sent one) */
		PGresult *r = n > 1 ? held[done[i]->stmt] : n_res ? held[n_res - 1] : NULL;

		done[i]->cb(r, done[i]->arg);
		free(done[i]);
	}
	for (int i = 0; i < n_res; i++)
		PQclear(held[i]);
}

/* Read every complete result; finish the command(s) when libpq is done. */
static void collect(struct pgq *q)
{
	while (q->conn && q->n_sent && !PQisBusy(q->conn)) {
		PGresult *r = PQgetResult(q->conn);

		if (r) {
			if (q->n_res < PGQ_BATCH_MAX)
				q->res[q->n_res++] = r;
			else
				PQclear(r);
			continue;
		}
		finish(q);
		kick(q);
	}
}

static void connect_step(struct pgq *q);

void pgq_on_ready(struct pgq *q, uint32_t events)
{
	if (!q->conn)
		return;
	if (q->connecting) {
		connect_step(q);
		return;
	}
	if (events & (EPOLLOUT)) {
		int f = PQflush(q->conn);
		if (f < 0) {
			drop_connection(q, PQerrorMessage(q->conn));
			return;
		}
		set_events(q, f == 1 ? EPOLLIN | EPOLLOUT : EPOLLIN);
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		if (!PQconsumeInput(q->conn)) {
			drop_connection(q, PQerrorMessage(q->conn));
			return;
		}
		deliver_notifies(q);
		collect(q);
		deliver_notifies(q);
	}
	if (q->conn && PQstatus(q->conn) != CONNECTION_OK)
		drop_connection(q, "status not ok");
}

/* (Re-)register our socket: PQconnectPoll may switch sockets between addresses. */
static int watch_socket(struct pgq *q, uint32_t want)
{
	struct epoll_event ev = {.events = want, .data.u64 = q->tag};
	int fd = PQsocket(q->conn);

	if (fd < 0)
		return -EBADF;
	if (fd == q->fd) {
		set_events(q, want);
		return 0;
	}
	if (q->fd >= 0)
		epoll_ctl(q->ep, EPOLL_CTL_DEL, q->fd, NULL);
	q->fd = -1;
	if (epoll_ctl(q->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	q->fd = fd;
	q->registered_events = want;
	return 0;
}

/*
 * Advance a non-blocking connect (PQconnectPoll). The event loop never
 * waits on a server that does not answer: pgq_tick gives up at the
 * deadline, and the owner keeps its heartbeat meanwhile.
 */
static void connect_step(struct pgq *q)
{
	switch (PQconnectPoll(q->conn)) {
	case PGRES_POLLING_READING:
		if (watch_socket(q, EPOLLIN))
			drop_connection(q, "cannot watch the socket");
		return;
	case PGRES_POLLING_WRITING:
		if (watch_socket(q, EPOLLOUT))
			drop_connection(q, "cannot watch the socket");
		return;
	case PGRES_POLLING_OK:
		break;
	default:
		drop_connection(q, PQerrorMessage(q->conn));
		return;
	}
	if (PQsetnonblocking(q->conn, 1) != 0 || watch_socket(q, EPOLLIN)) {
		drop_connection(q, "cannot switch to non-blocking mode");
		return;
	}
	q->connecting = false;
	if (q->failures)
		log_info("postgresql connected again after %u failed attempts in %lld ms",
			 q->failures, (long long)(mono_ms() - q->down_since_ms));
	q->failures = 0;
	q->retry_at_ms = 0;
	if (q->on_connect)
		q->on_connect(true, q->arg);
	kick(q);
}

/*
 * libpq hands messages that arrive outside a query (a server shutting down
 * sends "FATAL: terminating connection due to administrator command" to an
 * idle session) and NOTICEs to a notice processor, whose default writes them
 * raw on stderr. They go through the log instead, so that every line a role
 * writes has the log's format and a JSON log stays parseable.
 */
static void log_pg_notice(void *arg, const char *message)
{
	char line[512];
	size_t n = 0;
	/*
	 * Only a WARNING is one: a FATAL (a shutdown, a terminate) is followed
	 * at once by the loss of the connection, which is the episode's warning
	 * (pgq logs one per episode), and NOTICE or INFO is information.
	 */
	bool warning = strncmp(message, "WARNING:", 8) == 0;

	(void)arg;
	/* One log line: the server's DETAIL/HINT lines are joined, the text is bounded. */
	for (const char *p = message; *p && n + 1 < sizeof(line); p++)
		line[n++] = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : *p;
	while (n && line[n - 1] == ' ')
		n--;
	line[n] = '\0';
	log_detail(warning ? LOG_LVL_WARN : LOG_LVL_INFO, "postgresql says %s", "source=libpq",
		   line);
}

void pgq_tick(struct pgq *q, int64_t now_ms)
{
	/* keepalives before dbname: the conninfo's own values override them */
	const char *keys[] = {
		"keepalives",       "keepalives_idle", "keepalives_interval", "keepalives_count",
		"tcp_user_timeout", "dbname",          "application_name",    NULL};
	const char *vals[] = {"1",
			      PGQ_KEEPALIVE_IDLE_S,
			      PGQ_KEEPALIVE_INTERVAL_S,
			      PGQ_KEEPALIVE_COUNT,
			      PGQ_TCP_USER_TIMEOUT_MS,
			      q->conninfo,
			      q->app_name,
			      NULL};

	if (q->connecting && now_ms >= q->connect_deadline_ms) {
		drop_connection(q, "no answer within the connect timeout");
		return;
	}
	if (q->conn || now_ms < q->retry_at_ms)
		return;
	q->conn = PQconnectStartParams(keys, vals, 1);
	if (!q->conn) {
		drop_connection(q, "out of memory");
		return;
	}
	PQsetNoticeProcessor(q->conn, log_pg_notice, NULL);
	q->connecting = true;
	q->connect_deadline_ms = now_ms + PGQ_CONNECT_TIMEOUT_MS;
	if (PQstatus(q->conn) == CONNECTION_BAD) {
		drop_connection(q, PQerrorMessage(q->conn));
		return;
	}
	connect_step(q);
}

int pgq_timeout_ms(const struct pgq *q, int64_t now_ms)
{
	int64_t t;

	if (pgq_connected(q))
		return -1;
	t = (q->connecting ? q->connect_deadline_ms : q->retry_at_ms) - now_ms;
	return t < 0 ? 0 : t > INT32_MAX ? INT32_MAX : (int)t;
}

int pgq_due_wait_ms(const struct pgq *q, int64_t due_ms, int64_t now_ms, int max_ms)
{
	int64_t t = due_ms - now_ms;

	if (t <= 0 && !pgq_connected(q))
		t = pgq_timeout_ms(q, now_ms);
	return t < 0 ? 0 : t > max_ms ? max_ms : (int)t;
}

void pgq_release(struct pgq *q)
{
	if (q->conn)
		drop_connection(q, NULL);
	while (q->head) {
		struct pgq_cmd *c = pop(q);
		c->cb(NULL, c->arg);
		free(c);
	}
	clear_results(q);
	prepared_forget(q);
	free(q->conninfo);
	free(q->app_name);
	q->conninfo = q->app_name = NULL;
}
