/*
 * http.c - libmicrohttpd in its epoll mode with a small thread pool
 * (OUTBOX_HTTP_THREADS); MHD parses HTTP, this file never does.
 *
 * A request's life (on_request, called by MHD on one pool thread):
 *	first call      the rate limiter (429), the route (404, 405), a declared
 *	                body over GW_BODY_MAX (413); nothing audited yet
 *	upload calls    the body is kept up to GW_BODY_MAX, the rest discarded
 *	last call       public routes answer at once; the others authenticate
 *	                (keys.c) and are checked (api.c), then the connection
 *	                is SUSPENDED and the request handed to the loop thread
 *	                (gw_submit), which runs its SQL and resumes it
 *	resumed call    the answer is queued
 * Every answer under /api/admin and /api/v1/ops, refusals included, is
 * given only once its audit row committed. A 429 is not audited: auditing a
 * flood would be the flood.
 */
#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_DISCARD_MAX (16 * GW_BODY_MAX) /* past this, a body closes the connection */

static void count(struct gateway *g, enum shm_counter_id id)
{
	atomic_fetch_add_explicit(&g->stats->counter[id], 1, memory_order_relaxed);
}

char *gw_http_error_json(const char *code, const char *field, const char *message)
{
	json_t *e = json_pack("{s:s, s:s}", "code", code, "message", message);
	char *s;

	if (e && field)
		json_object_set_new(e, "field", json_string(field));
	s = e ? json_dumps(json_pack("{s:o}", "error", e), JSON_COMPACT) : NULL;
	return s;
}

void gw_http_answer(struct gateway *g, struct gw_req *r, unsigned status, char *resp)
{
	free(r->resp);
	r->status = status;
	r->resp = resp;
	r->answered = true;
	if (r->suspended) {
		r->suspended = false;
		MHD_resume_connection(r->conn); /* r is the HTTP thread's from here on */
	}
	(void)g;
}

void gw_http_error(struct gateway *g, struct gw_req *r, unsigned status, const char *code,
		   const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gw_http_answer(g, r, status, gw_http_error_json(code, field, msg));
}

json_t *gw_http_request_json(const struct gw_req *r, json_t *body)
{
	json_t *j = json_pack("{s:s, s:s, s:s}", "method", r->method, "path", r->path, "client",
			      r->client);

	if (!j)
		return NULL;
	if (r->key_prefix[0])
		json_object_set_new(j, "keyPrefix", json_string(r->key_prefix));
	if (body)
		json_object_set(j, "body", body);
	return j;
}

/* ---- routes ---- */

/* A positive decimal id of at most 18 digits; -1 otherwise. */
static int64_t parse_id(const char *s, size_t n)
{
	int64_t v = 0;

	if (n == 0 || n > 18 || s[0] == '0')
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

struct route_def {
	const char *path; /* exact, or the suffix after /api/admin/outbox/<id> */
	enum gw_route route;
	const char *method;
	bool audited;
};

static const struct route_def fixed[] = {
	{"/healthz", R_HEALTHZ, "GET", false},
	{"/readyz", R_READYZ, "GET", false},
	{"/metrics", R_METRICS, "GET", false},
	{"/api/v1/network/conditions", R_CONDITIONS, "GET", false},
	{"/api/v1/ops", R_ENQUEUE, "POST", true},
	{"/api/admin/outbox", R_LIST, "GET", true},
	{"/api/admin/outbox/stats", R_STATS, "GET", true},
	{"/", R_CONSOLE, "GET", false},
	{"/api/console/overview", R_OVERVIEW, "GET", false},
};

/* The console's files: console.c answers 404 for a name it does not embed. */
static const struct route_def console_files = {"/console/", R_CONSOLE, "GET", false};

static const struct route_def by_id[] = {
	{"", R_GET, "GET", true},
	{"/why", R_WHY, "GET", true},
	{"/retry", R_RETRY, "POST", true},
	{"/cancel", R_CANCEL, "POST", true},
};

#define ADMIN_PREFIX "/api/admin/outbox/"

/* The route of path; *method_ok says whether method is its method. */
static const struct route_def *route_find(struct gw_req *r, const char *method, bool *method_ok,
					  bool *bad_id)
{
	const char *p = r->path, *rest;
	size_t n;

	*bad_id = false;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!strcmp(p, fixed[i].path)) {
			*method_ok = !strcmp(method, fixed[i].method);
			return &fixed[i];
		}
	if (!strncmp(p, console_files.path, strlen(console_files.path))) {
		*method_ok = !strcmp(method, console_files.method);
		return &console_files;
	}
	if (strncmp(p, ADMIN_PREFIX, strlen(ADMIN_PREFIX)))
		return NULL;
	p += strlen(ADMIN_PREFIX);
	n = strcspn(p, "/");
	rest = p + n;
	for (size_t i = 0; i < sizeof(by_id) / sizeof(by_id[0]); i++)
		if (!strcmp(rest, by_id[i].path)) {
			r->op_id = parse_id(p, n);
			*bad_id = r->op_id < 0;
			*method_ok = !strcmp(method, by_id[i].method);
			return &by_id[i];
		}
	return NULL;
}

/* ---- answers ---- */

static void count_answer(struct gateway *g, unsigned status)
{
	count(g, MET_HTTP_REQUESTS);
	if (status == 401 || status == 403)
		count(g, MET_HTTP_AUTH_REFUSED);
	else if (status == 429)
		count(g, MET_HTTP_RATE_LIMITED);
	else if (status >= 500)
		count(g, MET_HTTP_SERVER_ERRORS);
	else if (status >= 400)
		count(g, MET_HTTP_CLIENT_ERRORS);
}

static enum MHD_Result respond(struct gateway *g, struct gw_req *r)
{
	const char *body = r->resp ? r->resp : "";
	struct MHD_Response *resp;
	enum MHD_Result rc;
	char ra[16];

	if (r->responded) /* queued already (an early refusal): MHD is only reading the rest */
		return MHD_YES;
	r->responded = true;
	resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->resp = NULL; /* MHD frees it */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->content_type ? r->content_type : "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	gw_console_headers(resp);
	if (r->status == 429) {
		snprintf(ra, sizeof(ra), "%u", r->retry_after ? r->retry_after : 1);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (r->status == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					r->route == R_ENQUEUE || r->route == R_RETRY ||
							r->route == R_CANCEL
						? "POST"
						: "GET");
	count_answer(g, r->status);
	rc = MHD_queue_response(r->conn, r->status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* ---- the first call ---- */

static void client_name(struct MHD_Connection *c, char *buf, size_t cap, const struct sockaddr **sa)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[INET6_ADDRSTRLEN] = "?";

	*sa = ci ? ci->client_addr : NULL;
	if (*sa && (*sa)->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)*sa)->sin_addr, host,
			  sizeof(host));
	else if (*sa && (*sa)->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)*sa)->sin6_addr, host,
			  sizeof(host));
	snprintf(buf, cap, "%s", host);
}

/* A refusal known before the body: 429, 503, 404 or 405 outside the audited routes, 413. */
static bool early_refusal(struct gateway *g, struct gw_req *r, const char *method,
			  const struct sockaddr *sa)
{
	const char *cl;
	unsigned wait = sa ? gw_limiter_take(g->limiter, sa, (int64_t)mono_ms()) : 0;
	bool method_ok = false, bad_id;
	const struct route_def *d = route_find(r, method, &method_ok, &bad_id);

	r->route = d ? d->route : R_NONE;
	r->audited = d ? d->audited : !strncmp(r->path, "/api/admin/", 11);
	if (wait) {
		r->retry_after = wait;
		gw_http_error(g, r, 429, "rate_limited", NULL,
			      "too many requests from %s: retry after %u s", r->client, wait);
	} else if (atomic_load(&g->draining)) {
		gw_http_error(g, r, 503, "shutting_down", NULL, "outboxd is stopping");
	} else if (!d && !r->audited) {
		gw_http_error(g, r, 404, "not_found", NULL, "no route %s", r->path);
	} else if (d && !method_ok && !r->audited) {
		gw_http_error(g, r, 405, "method_not_allowed", NULL, "%s %s: use %s", method,
			      r->path, d->method);
	} else if ((cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH)) &&
		   strtoull(cl, NULL, 10) > GW_BODY_MAX) {
		gw_http_error(g, r, 413, "too_large", NULL, "the body is over %d bytes",
			      GW_BODY_MAX);
	}
	return r->answered;
}

static enum MHD_Result begin(struct gateway *g, struct MHD_Connection *c, const char *url,
			     const char *method, void **con_cls)
{
	struct gw_req *r = calloc(1, sizeof(*r));
	const struct sockaddr *sa;

	if (!r)
		return MHD_NO;
	gw_rcu_thread();
	r->g = g;
	r->conn = c;
	snprintf(r->method, sizeof(r->method), "%s", method);
	if (strlen(url) >= sizeof(r->path))
		snprintf(r->path, sizeof(r->path), "%.200s...", url);
	else
		snprintf(r->path, sizeof(r->path), "%s", url);
	client_name(c, r->client, sizeof(r->client), &sa);
	*con_cls = r;
	/* answered at once: MHD sends it without reading a body it was not asked for */
	if (early_refusal(g, r, method, sa))
		return respond(g, r);
	return MHD_YES;
}

/* ---- the body ---- */

static enum MHD_Result take_body(struct gw_req *r, const char *data, size_t n)
{
	if (r->too_big || r->body_len + n > GW_BODY_MAX) {
		r->too_big = true;
		r->discarded += n;
		return r->discarded > GW_DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	char *b = realloc(r->body, r->body_len + n + 1);
	if (!b)
		return MHD_NO;
	memcpy(b + r->body_len, data, n);
	r->body = b;
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return MHD_YES;
}

/* ---- the last call ---- */

static void public_route(struct gateway *g, struct gw_req *r)
{
	switch (r->route) {
	case R_HEALTHZ:
		gw_http_answer(g, r, 200, strdup("{\"status\":\"ok\"}"));
		break;
	case R_READYZ:
		if (atomic_load(&g->pg_ready))
			gw_http_answer(g, r, 200, strdup("{\"status\":\"ready\"}"));
		else
			gw_http_error(
				g, r, 503, "not_ready", NULL,
				"PostgreSQL is not reachable yet, or the API keys are not loaded");
		break;
	case R_CONDITIONS:
		gw_http_answer(g, r, 200, gw_conditions_render(g));
		break;
	default:
		break;
	}
}

static bool scope_ok(enum gw_route route, unsigned scopes)
{
	switch (route) {
	case R_ENQUEUE:
		return scopes & APIKEY_SCOPE_ENQUEUE;
	case R_RETRY:
	case R_CANCEL:
		return scopes & APIKEY_SCOPE_WRITE;
	default:
		return scopes & APIKEY_SCOPE_READ;
	}
}

static const char *const auth_msgs[] = {
	[AUTH_MISSING] = "an API key is required (Authorization: Bearer <key>)",
	[AUTH_MALFORMED] = "the Authorization header is not Bearer <outboxd API key>",
	[AUTH_UNKNOWN] = "the API key is not valid",
	[AUTH_REVOKED] = "the API key is revoked",
};

/* Authenticate, authorise and check an audited request; true when it has a job. */
static bool audited_route(struct gateway *g, struct gw_req *r, const char *method)
{
	bool method_ok = false, bad_id;
	const struct route_def *d = route_find(r, method, &method_ok, &bad_id);
	unsigned scopes = 0;
	enum auth_result a;

	a = gw_keys_auth(g, r,
			 MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_AUTHORIZATION),
			 &scopes);
	if (!d)
		gw_api_refuse(g, r, 404, "not_found", "no such route");
	else if (!method_ok)
		gw_api_refuse(g, r, 405, "method_not_allowed", "wrong method for this route");
	else if (a != AUTH_OK)
		gw_api_refuse(g, r, 401, "unauthorized", auth_msgs[a]);
	else if (!scope_ok(r->route, scopes))
		gw_api_refuse(g, r, 403, "forbidden",
			      "the API key lacks the scope this route needs");
	else if (bad_id)
		gw_api_refuse(g, r, 400, "invalid", "id: not a positive integer op id");
	else if (r->too_big)
		gw_api_refuse(g, r, 413, "too_large", "the body is too large");
	else
		return gw_api_dispatch(g, r, scopes) != 0;
	return true;
}

static enum MHD_Result finish(struct gateway *g, struct gw_req *r, const char *method)
{
	if (r->too_big && !r->audited) {
		gw_http_error(g, r, 413, "too_large", NULL, "the body is over %d bytes",
			      GW_BODY_MAX);
	} else if (r->route == R_CONSOLE || r->route == R_OVERVIEW) {
		if (gw_console_request(g, r)) {
			r->suspended = true;
			MHD_suspend_connection(r->conn);
			gw_submit(g, r);
			return MHD_YES;
		}
	} else if (!r->audited) {
		if (r->route == R_METRICS) {
			if (!gw_metrics_depth_fresh(g, (int64_t)mono_ms())) {
				r->job = J_METRICS;
				r->suspended = true;
				MHD_suspend_connection(r->conn);
				gw_submit(g, r);
				return MHD_YES;
			}
			r->content_type = "text/plain; version=0.0.4; charset=utf-8";
			gw_http_answer(g, r, 200, gw_metrics_render(g));
		} else {
			public_route(g, r);
		}
	} else if (atomic_load(&g->draining)) {
		gw_http_error(g, r, 503, "shutting_down", NULL, "outboxd is stopping");
	} else if (audited_route(g, r, method) && !r->answered) {
		r->suspended = true;
		MHD_suspend_connection(
			r->conn); /* before the hand-off: the loop may answer at once */
		gw_submit(g, r);
		return MHD_YES;
	}
	if (!r->answered)
		gw_http_error(g, r, 500, "internal", NULL, "no answer");
	return respond(g, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct gateway *g = cls;
	struct gw_req *r = *con_cls;

	(void)version;
	if (!r)
		return begin(g, c, url, method, con_cls);
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		return r->answered ? MHD_YES : take_body(r, upload, n);
	}
	if (r->answered)
		return respond(g, r);
	return finish(g, r, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct gw_req *r = *con_cls;

	(void)cls, (void)c, (void)why;
	if (!r)
		return;
	gw_api_job_clear(r);
	free(r->body);
	free(r->resp);
	free(r);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_warn("http: %s", msg);
}

/* ---- the daemon ---- */

static int parse_listen(const char *addr, struct sockaddr_storage *ss)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				 .ai_socktype = SOCK_STREAM},
			*ai = NULL;
	size_t n;

	if (!colon)
		return -EINVAL;
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, n);
	host[n] = '\0';
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

int gw_http_start(struct gateway *g)
{
	const struct outbox_config *cfg = g->ctx->cfg;
	struct sockaddr_storage ss = {0};
	const union MHD_DaemonInfo *di;
	unsigned flags =
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

	if (parse_listen(cfg->http_addr, &ss)) {
		log_err("OUTBOX_HTTP_ADDR: '%s' is not a numeric host:port", cfg->http_addr);
		return -EINVAL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	g->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, g, MHD_OPTION_EXTERNAL_LOGGER,
				  mhd_log, g, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)512,
				  MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, g, MHD_OPTION_END);
	if (!g->mhd) {
		log_err("http: cannot listen on %s", cfg->http_addr);
		return -EADDRINUSE;
	}
	di = MHD_get_daemon_info(g->mhd, MHD_DAEMON_INFO_BIND_PORT);
	log_detail(LOG_LVL_INFO, "listening", "addr=%s port=%u threads=%lld", cfg->http_addr,
		   di ? (unsigned)di->port : 0u, (long long)cfg->http_threads);
	return 0;
}

void gw_http_stop(struct gateway *g)
{
	if (g->mhd)
		MHD_stop_daemon(g->mhd);
	g->mhd = NULL;
}
