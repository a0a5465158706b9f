/*
 * gateway.h - the gateway's private state, shared by its files:
 *
 *	gateway_main.c  the role's loop: signals, heartbeat, PostgreSQL, the
 *	                hand-off from the HTTP threads, drain
 *	http.c          libmicrohttpd (epoll, a thread pool): a request's life,
 *	                routes, limits, errors, suspend and resume
 *	request.c       the pure decoding: routes, ids, the Authorization
 *	                header's form, list filters, JSON bodies (request.h)
 *	api.c           the admin endpoints and the enqueue: input checks, the
 *	                SQL call (schema/0010_gateway.sql), the answer
 *	jobs.c          the PostgreSQL side on the loop: connections, LISTEN,
 *	                jobs from the HTTP threads, synchronous enqueues
 *	keys.c          the API-key cache (urcu-memb RCU) and authentication
 *	ratelimit.c     the per-client token buckets (cds_lfht)
 *	conns.c         the open connections: a request's deadline
 *	metrics.c       GET /metrics
 *	conditions.c    GET /api/v1/network/conditions, ETA bands, fee estimates
 *	console.c       the web console: its embedded files, GET
 *	                /api/console/overview, the security headers
 *	console_chart.c the overview's chart and rates (pure)
 *	wake.c          an op enqueued over HTTP wakes the worker that owns it
 *
 * Threads: the loop thread owns every PostgreSQL connection and everything
 * that changes; the HTTP threads read what it publishes through RCU
 * pointers (keys, queue depth, ETA bands) and the rate limiter's table, and
 * hand every database call to it (gw_submit) with their connection
 * suspended, so no HTTP thread ever waits for PostgreSQL and a synchronous
 * enqueue costs a list entry, not a thread. The cross-process fee snapshot
 * is read by seqcount copy (fee_snapshot_copy), which needs no QSBR
 * registration: liburcu's flavours are per process, the segment's QSBR is
 * not.
 */
#ifndef OUTBOX_OPS_GATEWAY_H
#define OUTBOX_OPS_GATEWAY_H

#include "common/apikey.h"
#include "common/child.h"
#include "common/loop.h"
#include "common/pgq.h"
#include "common/shm/hint_out.h"
#include "common/shm/stats.h"
#include "ops/gateway/request.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define GW_TICK_MS         100   /* the loop's longest sleep: the heartbeat */
#define GW_API_CONNS       3     /* PostgreSQL connections for API calls */
#define GW_KEYS_REFRESH_MS 10000 /* key cache reload besides NOTIFY outbox_keys */
#define GW_DEPTH_MAX_AGE   2000  /* /metrics re-reads queue depth when older */
#define GW_WAIT_DEFAULT_MS 30000 /* "wait": true without waitTimeoutMs */
#define GW_WAITERS_MAX     4096  /* synchronous enqueues waiting at once */
#define GW_STMT_TIMEOUT_MS 5000  /* statement_timeout of the API connections */
#define GW_CONN_MEMORY     65536 /* MHD's buffer per connection: request line + headers fit */

/* What a request's job asks of the loop. */
enum gw_job_kind {
	J_SQL,     /* one api_* call: (http, body) */
	J_AUDIT,   /* an audited refusal: write its row, then answer */
	J_METRICS, /* /metrics waits for a fresh queue depth */
};

/* One HTTP request, from its first byte to its completion callback. */
struct gw_req {
	struct gw_req *next; /* the hand-off list, then the waiters */
	struct gateway *g;
	struct MHD_Connection *conn;
	enum gw_route route;
	bool audited;   /* under /api/admin or /api/v1/ops: every answer is audited */
	bool suspended; /* handed to the loop; resumed once answered */
	bool answered;  /* status and body are set */
	bool responded; /* handed to MHD (HTTP thread only) */
	bool too_big;   /* the body went past GW_BODY_MAX */
	char method[8];
	char path[256];
	char client[64];
	char *body; /* the upload, NUL-terminated */
	size_t body_len, discarded;
	int64_t op_id; /* from the path */
	/* who: filled by authentication */
	int64_t key_id; /* 0: none */
	char actor[80];
	char key_prefix[APIKEY_PREFIX_LEN + 1];
	unsigned scopes; /* the overview's: what the console may offer */
	/* the job */
	enum gw_job_kind job;
	char *sql;
	int n_params;
	char *params[12];
	/* the synchronous enqueue */
	bool wait;
	int64_t wait_deadline_ms; /* monotonic */
	int created_status;       /* 201 or 200 */
	int priority;             /* the op's, for its estimates */
	/* the answer */
	unsigned status;
	char *resp;               /* JSON, malloc'd */
	unsigned retry_after;     /* seconds, 429 */
	const char *content_type; /* NULL: JSON */
};

struct gw_conns; /* conns.c */
struct key_set;  /* keys.c */
struct gw_depth;
struct gw_eta;
struct gw_limiter;

struct gateway {
	struct child_ctx *ctx;
	struct loop loop;
	struct shm_proc_slot *slot;
	struct shm_stats_block *stats;
	struct MHD_Daemon *mhd;
	struct gw_limiter *limiter;
	struct gw_conns *conns; /* the open connections and their request deadline */

	/* published to the HTTP threads (RCU pointers; NULL until first loaded) */
	struct key_set *keys;
	struct gw_depth *depth;
	struct gw_eta *eta;
	_Atomic bool pg_ready;           /* the control connection is up and keys loaded */
	_Atomic bool draining;           /* new requests answer 503 */
	_Atomic int64_t depth_wanted_ms; /* last /metrics: keep the depth fresh while scraped */

	/* the hand-off from the HTTP threads */
	pthread_mutex_t lock;
	struct gw_req *inbox;
	int inbox_fd; /* eventfd */

	/* the loop's own (never touched by HTTP threads) */
	struct pgq ctl;               /* LISTEN, keys, depth, waiters */
	struct pgq api[GW_API_CONNS]; /* api_* calls */
	unsigned api_next;
	struct gw_req *waiters; /* synchronous enqueues */
	unsigned n_waiters;
	struct gw_req *metrics_waiting; /* /metrics waiting for the depth */
	bool depth_busy, keys_busy, waiters_busy, gw_keys_loaded;
	int64_t keys_at_ms, depth_at_ms, waiters_at_ms, eta_at_ms;
	void *eta_ring;        /* conditions.c's samples */
	void *console_ring;    /* console.c's samples */
	struct hint_out hints; /* wake.c: the gateway's hint ring of each worker */
};

/* ---- http.c ---- */
int gw_http_start(struct gateway *g);
void gw_http_stop(struct gateway *g);
/* Set the answer (takes resp) and, when suspended, resume the connection. */
void gw_http_answer(struct gateway *g, struct gw_req *r, unsigned status, char *resp);
void gw_http_error(struct gateway *g, struct gw_req *r, unsigned status, const char *code,
		   const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The "request" column of an audit row (method, path, client, key prefix, body). */
json_t *gw_http_request_json(const struct gw_req *r, json_t *body);

/* ---- conns.c ---- */
struct gw_conns *gw_conns_new(int64_t deadline_ms);
/* After MHD_stop_daemon. */
void gw_conns_free(struct gw_conns *cs);
/* MHD_OPTION_NOTIFY_CONNECTION (cls: the gw_conns). */
void gw_conns_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		     enum MHD_ConnectionNotificationCode code);
/* HTTP threads: the request arrived whole / is over (the next one's wait starts). */
void gw_conns_received(struct MHD_Connection *mc);
void gw_conns_next(struct MHD_Connection *mc);
/* Loop thread: shut down the connections whose request is late. */
void gw_conns_tick(struct gw_conns *cs, int64_t now_ms);

/* ---- api.c (HTTP threads) ---- */
/* Route r after authentication: answer it, or set up its job (returns 1). */
int gw_api_dispatch(struct gateway *g, struct gw_req *r, unsigned scopes);
/* The job's SQL answered: res (NULL: connection lost) -> the answer (loop thread). */
void gw_api_on_result(struct gateway *g, struct gw_req *r, PGresult *res);
/* Free the job's SQL and parameters. */
void gw_api_job_clear(struct gw_req *r);
/* Set an audited refusal's job: the answer is given once its row is written. */
void gw_api_refuse(struct gateway *g, struct gw_req *r, unsigned status, const char *code,
		   const char *message);

/* ---- jobs.c (loop thread, except gw_submit) ---- */
int gw_jobs_open(struct gateway *g, uint64_t tag_inbox, uint64_t tag_ctl, uint64_t tag_api0);
void gw_jobs_close(struct gateway *g);
void gw_jobs_on_ready(struct gateway *g, uint64_t tag, uint32_t events);
void gw_jobs_tick(struct gateway *g, int64_t now_ms);
/* Drain: answer every waiter and every queued job. */
void gw_jobs_drain(struct gateway *g);
size_t gw_jobs_pending(const struct gateway *g);
/* HTTP thread: hand r to the loop (its connection is already suspended). */
void gw_submit(struct gateway *g, struct gw_req *r);
/* A synchronous enqueue's op is not over yet: wait for it. */
void gw_jobs_wait(struct gateway *g, struct gw_req *r);

/* ---- keys.c ---- */
/* The Authorization header -> who (r->key_id, actor, key_prefix) and scopes. */
enum auth_result gw_keys_auth(struct gateway *g, struct gw_req *r, const char *header,
			      unsigned *scopes);
/* Replace the cache from outbox.api_keys() rows (loop thread). */
int gw_keys_load(struct gateway *g, const PGresult *res);
void gw_keys_free(struct gateway *g);
/* Register the calling thread with urcu-memb once (unregistered at its exit). */
void gw_rcu_thread(void);

/* ---- ratelimit.c ---- */
struct gw_limiter *gw_limiter_new(void);
void gw_limiter_free(struct gw_limiter *l);
void gw_limiter_config(struct gw_limiter *l, int64_t rate, int64_t burst);
/* 0: allowed; otherwise the seconds to wait (Retry-After). */
unsigned gw_limiter_take(struct gw_limiter *l, const struct sockaddr *addr, int64_t now_ms);
/* Forget clients idle for a while (loop thread). */
void gw_limiter_gc(struct gw_limiter *l, int64_t now_ms);

/* ---- metrics.c ---- */
/* The Prometheus text, malloc'd (NULL: out of memory). */
char *gw_metrics_render(struct gateway *g);
/* outbox.api_metrics() rows -> the published depth (loop thread). */
void gw_metrics_depth_load(struct gateway *g, const PGresult *res);
bool gw_metrics_depth_fresh(struct gateway *g, int64_t now_ms);
void gw_metrics_free(struct gateway *g);

/* ---- wake.c ---- */
/* Attach the gateway's hint rings, one per worker (loop thread, at start). */
void gw_wake_attach(struct gateway *g);
/* An op of vshard v committed PENDING: wake the worker that owns v (loop thread). */
void gw_wake_new_op(struct gateway *g, long long vshard);

/* ---- conditions.c ---- */
char *gw_conditions_render(struct gateway *g);
/* Sample the latency histograms, recompute the ETA bands (loop thread). */
void gw_conditions_tick(struct gateway *g, int64_t now_ms);
void gw_conditions_free(struct gateway *g);
/* What an enqueue answers: the inclusion fee it would bid now, and its p50 ETA (-1: none). */
void gw_conditions_estimate(struct gateway *g, int priority, uint64_t *fee, double *eta_s);
/* {"congestion", "latestLedger", "closeTime", "inFlight", "maxInFlight", "lowMaxDeferMs"} */
char *gw_conditions_why_facts(struct gateway *g);

/* The latency histograms of confirmed ops by priority, summed over processes. */
void gw_latency_sample(struct gateway *g, uint64_t out[3][SHM_HIST_BUCKETS]);
/* The q-quantile in seconds of non-cumulative latency buckets; < 0 when empty. */
double gw_latency_quantile(const uint64_t *b, double q);

/* ---- console.c ---- */
struct gw_asset {
	const char *path; /* /console/<file> */
	const char *type; /* Content-Type */
	const char *data; /* text, no NUL inside */
	size_t len;
};
/* Generated by console/embed.cmake from ops/gateway/console/. */
extern const struct gw_asset gw_console_assets[];
extern const size_t gw_console_assets_count;

/* CSP, nosniff, no-referrer, no framing: added to every answer. */
void gw_console_headers(struct MHD_Response *resp);
/* A console route (HTTP thread): answered, or true when it has a job for the loop. */
bool gw_console_request(struct gateway *g, struct gw_req *r);
/* The overview's statement answered (loop thread). */
void gw_console_on_result(struct gateway *g, struct gw_req *r, PGresult *res);
/* Sample the counters and latency histograms for the chart (loop thread). */
void gw_console_tick(struct gateway *g, int64_t now_ms);
void gw_console_free(struct gateway *g);

#endif
