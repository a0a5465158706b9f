/*
 * pgq.h - a non-blocking libpq command queue for a role's epoll loop (the
 * worker's connections, the oracle's ledger follower).
 *
 * One PostgreSQL connection, one command on the wire at a time, a FIFO of
 * the rest. Each command is one parameterised statement (text parameters,
 * copied at pgq_send) and a callback that runs exactly once:
 *
 *	with the command's last PGresult (PGRES_TUPLES_OK, PGRES_COMMAND_OK or
 *	PGRES_FATAL_ERROR: check PQresultStatus and pgq_sqlstate), owned by pgq
 *	and cleared after the callback returns; or
 *	with NULL when the connection was lost: the command MAY have committed.
 *	Callers treat NULL as "outcome unknown" (the worker drops its claims and
 *	re-reconciles from PostgreSQL, which is the truth; the follower asks
 *	again).
 *
 * The connection is made without blocking (PQconnectStartParams and
 * PQconnectPoll driven by the owner's epoll; PGQ_CONNECT_TIMEOUT_MS bounds
 * it, checked by pgq_tick), so an unreachable or silent server never stalls
 * the event loop or its heartbeat. Over TCP, a session whose server went
 * silent (a host gone, a network partition) is dropped within ~30 s:
 * keepalive probes after PGQ_KEEPALIVE_IDLE_S of quiet, and
 * PGQ_TCP_USER_TIMEOUT_MS for data sent and never acknowledged (a busy
 * server still acknowledges, so a long statement is not cut). Without them
 * a write-ahead session that died silently would hold every send and
 * reconcile of its worker for the kernel's ~15 minutes of retransmits
 * while the control connection kept the leases. A value written in the
 * conninfo string itself wins (one from a service file does not). After a
 * failure or a loss pgq reconnects with full-jitter backoff and calls
 * on_connect so the owner can LISTEN again and rebuild its state.
 * Notifications (LISTEN) go to on_notify as they are read.
 *
 * Group commit: commands sent with pgq_send_batch may share a transaction.
 * While a command is on the wire the others queue; when the wire frees, up
 * to PGQ_BATCH_MAX consecutive batchable commands at the head go out as ONE
 * simple-protocol message (parameters inlined with PQescapeLiteral), which
 * PostgreSQL runs as one implicit transaction: one commit, one WAL flush,
 * one NOTIFY queue lock for all of them. Callbacks still run one per
 * command, in order, with that command's own result, and only after the
 * commit. If any statement of a batch fails, the whole transaction rolled
 * back, so every command of it is re-sent alone and gets its own verdict:
 * a batch changes how many commits there are, never what a callback sees.
 * No batching happens on an idle connection (nothing waits to join), so it
 * adds no latency.
 *
 * Merging: consecutive commands of a batch sent with pgq_send_merge and the
 * same struct pgq_merge go out as ONE statement, SELECT fn(ARRAY[...]::t1,
 * ARRAY[...]::t2, ...), whose k-th array holds each command's k-th
 * parameter in queue order. fn's promise: the effect of the commands' own
 * statements run in that order, or an error and nothing written (then, as
 * for any failed batch, every command goes again alone with its own
 * statement and gets its own verdict). One statement instead of many is
 * what a set-based function saves: the per-statement work of every nested
 * statement. Each merged command's callback gets the merged statement's
 * result, so merge only statements whose callers just check pgq_ok, or
 * whose set form returns what every one of its commands would (the
 * worker's attempts_record: RECORDED).
 *
 * Prepared statements: a command sent alone runs as a statement prepared
 * on this connection, named by its text's place in the connection's list
 * (the first PGQ_PREPARED_MAX texts; any other is sent unnamed). The first
 * send of a text prepares it, one round trip more, and its result decides:
 * prepared, the command runs; refused, the command's callback gets that
 * error, which is the one the statement itself would have raised. A
 * reconnect starts the list again. What it saves is the parse and plan of
 * every call: ~60 us of a ~190 us claim poll that finds nothing (pgbench,
 * one client, unnamed against prepared). Batches are simple-protocol
 * strings and are not prepared.
 *
 * Registration: pgq_fd() is added to the owner's epoll set with the tag the
 * owner chooses; pgq_events() says which events to wait for (EPOLLOUT only
 * while output is unflushed) and pgq_on_ready() handles them.
 */
#ifndef OUTBOX_COMMON_PGQ_H
#define OUTBOX_COMMON_PGQ_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#define PGQ_MAX_PARAMS           16
#define PGQ_BATCH_MAX            32
#define PGQ_PREPARED_MAX         32 /* statements kept prepared per connection */
#define PGQ_CONNECT_TIMEOUT_MS   3000
#define PGQ_KEEPALIVE_IDLE_S     "10"    /* keepalives_idle: quiet seconds before a probe */
#define PGQ_KEEPALIVE_INTERVAL_S "5"     /* keepalives_interval: seconds between probes */
#define PGQ_KEEPALIVE_COUNT      "3"     /* keepalives_count: probes unanswered, then dropped */
#define PGQ_TCP_USER_TIMEOUT_MS  "30000" /* tcp_user_timeout */

struct pgq;
typedef void (*pgq_cb)(PGresult *res, void *arg);
typedef void (*pgq_notify_fn)(const char *channel, const char *extra, void *arg);
typedef void (*pgq_connect_fn)(bool up, void *arg);

struct pgq_cmd;
struct shm_stats_block;

struct pgq {
	char *conninfo;
	char *app_name; /* application_name, as pg_stat_activity shows it */
	PGconn *conn;
	int ep;       /* owner's epoll fd */
	uint64_t tag; /* epoll data for our socket */
	int fd;       /* registered socket, -1 when none */
	uint32_t registered_events;
	struct pgq_cmd *head, *tail; /* the first n_sent are on the wire */
	int n_sent;
	int n_stmts;                  /* statements on the wire (merged commands share one) */
	int n_res;                    /* results of the batch read so far */
	PGresult *res[PGQ_BATCH_MAX]; /* held until the batch completes */
	size_t queued;
	uint64_t batches, batched, batch_retries; /* counters for stats and tests */
	uint64_t merged;                          /* commands that went out merged */
	struct shm_stats_block *stats;    /* NULL, or where batches, merged and batch_retries
					  are counted as metrics too (MET_PG_*) */
	char *prepared[PGQ_PREPARED_MAX]; /* this session's statements: "pgq<i>" */
	int n_prepared;
	bool preparing;        /* the head command's statement is being prepared */
	uint32_t failures;     /* since the last successful connect: the episode's */
	int64_t down_since_ms; /* monotonic: when the episode began */
	char last_why[160];    /* the episode's last failure, logged once */
	int64_t retry_at_ms;   /* monotonic; 0 = connected or not yet tried */
	bool connecting;       /* a non-blocking connect is under way */
	int64_t connect_deadline_ms;
	pgq_notify_fn on_notify;
	pgq_connect_fn on_connect;
	void *arg;
};

/*
 * Set up (not connected yet: pgq_tick connects) to conninfo (a conninfo
 * string or URL) as application_name app_name. 0 or -ENOMEM.
 */
int pgq_init(struct pgq *q, const char *conninfo, const char *app_name, int ep, uint64_t tag,
	     pgq_notify_fn on_notify, pgq_connect_fn on_connect, void *arg);
void pgq_release(struct pgq *q);

bool pgq_connected(const struct pgq *q);

/*
 * Not connected, and an attempt failed (or the connection was lost) since
 * the last successful connect: unlike a first connect still under way.
 */
bool pgq_down(const struct pgq *q);

/* Queue a command; cb runs later (never from here). 0, -ENOTCONN or -ENOMEM. */
int pgq_send(struct pgq *q, const char *sql, int n, const char *const *params, pgq_cb cb,
	     void *arg);

/*
 * The same, for a single self-contained statement that may share a
 * transaction with its neighbours in the queue (see "Group commit"): no
 * transaction control, no reliance on running alone.
 */
int pgq_send_batch(struct pgq *q, const char *sql, int n, const char *const *params, pgq_cb cb,
		   void *arg);

/* How a command's set form is built (see "Merging"). */
struct pgq_merge {
	const char *fn;                    /* the set function, e.g. "outbox.ops_landed" */
	const char *types[PGQ_MAX_PARAMS]; /* each parameter's array type, e.g. "integer[]" */
};

/*
 * pgq_send_batch for a command that m can merge with its neighbours. 0,
 * -EINVAL (m incomplete for n parameters), -ENOTCONN or -ENOMEM.
 */
int pgq_send_merge(struct pgq *q, const struct pgq_merge *m, const char *sql, int n,
		   const char *const *params, pgq_cb cb, void *arg);

/* Epoll said our socket is ready. */
void pgq_on_ready(struct pgq *q, uint32_t events);

/* Reconnect when due; call every loop turn with CLOCK_MONOTONIC ms. */
void pgq_tick(struct pgq *q, int64_t now_ms);

/*
 * While not connected: milliseconds until pgq_tick has something to do (the
 * next connect attempt, or a connect's deadline), so an owner whose work all
 * waits on the connection sleeps until then. -1 when connected.
 */
int pgq_timeout_ms(const struct pgq *q, int64_t now_ms);

/*
 * For an owner whose next command for q is due at due_ms (monotonic): how
 * long its loop may sleep, at most max_ms. Until due_ms; once due with the
 * connection down, until pgq_tick's next connect attempt or deadline, never
 * 0 while nothing can be sent (a loop that woke at once would spin for as
 * long as the database is down).
 */
int pgq_due_wait_ms(const struct pgq *q, int64_t due_ms, int64_t now_ms, int max_ms);

/* Commands queued or on the wire. */
size_t pgq_pending(const struct pgq *q);

/* SQLSTATE of an error result, "" otherwise. */
const char *pgq_sqlstate(const PGresult *res);

/* True when res is a successful result. */
bool pgq_ok(const PGresult *res);

#endif
