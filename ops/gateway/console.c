/*
 * console.c - the operators' web console: its three files, its overview and
 * the security headers every answer of the gateway carries.
 *
 * The files (ops/gateway/console/: index.html, console.js, console.css) are
 * embedded in the binary at build time (console/embed.cmake): nothing is
 * read from disk or fetched at run time, and the page makes no request
 * outside this listener (the CSP below forbids it). They are public, like
 * /healthz: the page holds no data. The data comes from
 * GET /api/console/overview and the admin API, with the operator's API key
 * as the Bearer header, so a console action is an admin API call: same
 * scopes, same audit row.
 *
 * The overview is authenticated (outbox:read) but not audited: the page
 * polls it every second, and a row a second per open browser would bury
 * the actions the audit is for (the same reasoning as for 429). It is one
 * read-only statement on an API connection (queue depth, held ops) plus
 * shared memory read on the loop thread when the answer is built: the
 * counters, the fee conditions, the process table, and a ring of samples
 * of the latency histograms and the confirmed/failed counters taken every
 * CHART_SAMPLE_MS by the loop, from which the chart's points are computed
 * (console_chart.h).
 */
#include "ops/gateway/gateway.h"
#include "ops/gateway/console_chart.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/proc_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OV_HELD_MAX    20   /* held ops listed */
#define OV_RATE_MIN_MS 1000 /* the rates "now" span at least this */

/* Strict: only this origin's script, style and XHR; no inline code, no frames. */
#define CONSOLE_CSP                                                                                \
	"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "            \
	"img-src 'self' data:; frame-ancestors 'none'"

static const char *const prio_names[3] = {"CRITICAL", "NORMAL", "LOW"};

/* Read-only; the depth as api_stats gives it, the newest held ops in full. */
static const char overview_sql[] =
	"SELECT 200, jsonb_build_object("
	"'depth', (SELECT jsonb_object_agg(s.status, s.by_prio) FROM (SELECT d.status, "
	"jsonb_object_agg(d.priority, d.n) AS by_prio FROM outbox.depth_counts() d "
	"GROUP BY d.status) s), "
	"'held', (SELECT coalesce(jsonb_agg(outbox.api_op_json(o) ORDER BY o.id DESC), '[]') "
	"FROM (SELECT * FROM outbox.ops x WHERE x.status = 'HELD' ORDER BY x.id DESC "
	"LIMIT 20) o), " /* OV_HELD_MAX */
	"'oldestPendingCreatedAt', (SELECT min(o.created_at) FROM outbox.ops o "
	"WHERE o.status = 'PENDING'), "
	"'at', now())::text";

/* ---- the headers of every answer ---- */

void gw_console_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "Content-Security-Policy", CONSOLE_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
}

/* ---- the files ---- */

static const struct gw_asset *asset_find(const char *path)
{
	if (!strcmp(path, "/"))
		path = "/console/index.html";
	for (size_t i = 0; i < gw_console_assets_count; i++)
		if (!strcmp(path, gw_console_assets[i].path))
			return &gw_console_assets[i];
	return NULL;
}

static void serve_file(struct gateway *g, struct gw_req *r)
{
	const struct gw_asset *a = asset_find(r->path);
	char *copy;

	if (!a) {
		gw_http_error(g, r, 404, "not_found", NULL, "no console file %s", r->path);
		return;
	}
	if (!(copy = malloc(a->len + 1))) {
		gw_http_error(g, r, 503, "unavailable", NULL, "out of memory");
		return;
	}
	memcpy(copy, a->data, a->len);
	copy[a->len] = '\0';
	r->content_type = a->type;
	gw_http_answer(g, r, 200, copy);
}

/* ---- the overview: the HTTP thread's part ---- */

static enum MHD_Result any_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	(void)kind, (void)value;
	*(const char **)cls = key;
	return MHD_NO;
}

static const char *const auth_msgs[] = {
	[AUTH_MISSING] = "an API key is required (Authorization: Bearer <key>)",
	[AUTH_MALFORMED] = "the Authorization header is not Bearer <outboxd API key>",
	[AUTH_UNKNOWN] = "the API key is not valid",
	[AUTH_REVOKED] = "the API key is revoked",
};

/* True when r has a job for the loop (the overview's statement). */
static bool overview_begin(struct gateway *g, struct gw_req *r)
{
	const char *arg = NULL;
	unsigned scopes = 0;
	enum auth_result a =
		gw_keys_auth(g, r,
			     MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_AUTHORIZATION),
			     &scopes);

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, any_arg, &arg);
	if (a != AUTH_OK)
		gw_http_error(g, r, 401, "unauthorized", NULL, "%s", auth_msgs[a]);
	else if (!(scopes & APIKEY_SCOPE_READ))
		gw_http_error(g, r, 403, "forbidden", NULL,
			      "the API key lacks the scope this route needs (outbox:read)");
	else if (arg)
		gw_http_error(g, r, 400, "invalid", arg, "%.60s: is not an argument of this route",
			      arg);
	else if (r->body_len || r->too_big)
		gw_http_error(g, r, 400, "invalid", "body", "body: this route takes no body");
	if (r->answered)
		return false;
	r->scopes = scopes;
	gw_api_job_clear(r);
	r->job = J_SQL;
	r->sql = strdup(overview_sql);
	if (!r->sql) {
		gw_http_error(g, r, 503, "unavailable", NULL, "out of memory");
		return false;
	}
	return true;
}

bool gw_console_request(struct gateway *g, struct gw_req *r)
{
	if (r->route == R_OVERVIEW)
		return overview_begin(g, r);
	if (r->body_len || r->too_big)
		gw_http_error(g, r, 400, "invalid", "body", "body: a console file takes no body");
	else
		serve_file(g, r);
	return false;
}

/* ---- the samples (loop thread) ---- */

static void take(struct gateway *g, struct chart_sample *s, int64_t now_ms)
{
	s->wall_ms = wall_ms();
	s->mono_ms = now_ms;
	s->confirmed = stats_counter_sum(g->ctx->seg, MET_OPS_CONFIRMED);
	s->failed = stats_counter_sum(g->ctx->seg, MET_OPS_FAILED);
	gw_latency_sample(g, s->lat);
}

void gw_console_tick(struct gateway *g, int64_t now_ms)
{
	struct chart_ring *ring = g->console_ring;
	const struct chart_sample *last = ring ? chart_newest(ring) : NULL;
	struct chart_sample s;

	if (last && now_ms - last->mono_ms < CHART_SAMPLE_MS)
		return;
	if (!ring && !(ring = g->console_ring = calloc(1, sizeof(*ring))))
		return;
	take(g, &s, now_ms);
	chart_push(ring, &s);
}

void gw_console_free(struct gateway *g)
{
	free(g->console_ring);
	g->console_ring = NULL;
}

/*
 * The chart: one point per interval between two samples, the p50 of the
 * ops confirmed in it per priority (null: none), and the rates.
 */
static json_t *series_json(const struct chart_ring *ring)
{
	json_t *pts = json_array();
	uint64_t win[SHM_HIST_BUCKETS];

	for (unsigned i = 1; ring && i < ring->n; i++) {
		const struct chart_sample *a = chart_nth(ring, i - 1), *b = chart_nth(ring, i);
		int64_t ms = b->mono_ms - a->mono_ms;
		json_t *p50 = json_object();

		for (int p = 0; p < 3; p++) {
			double q;

			chart_window(a->lat[p], b->lat[p], win);
			q = gw_latency_quantile(win, 0.5);
			json_object_set_new(p50, prio_names[p],
					    q >= 0 ? json_real(q) : json_null());
		}
		json_array_append_new(
			pts,
			json_pack("{s:I, s:o, s:f, s:f}", "at", (json_int_t)b->wall_ms, "p50", p50,
				  "confirmedPerS", chart_rate(a->confirmed, b->confirmed, ms),
				  "failedPerS", chart_rate(a->failed, b->failed, ms)));
	}
	return pts;
}

/* Confirmed and failed per second now, and since the start. */
static json_t *rates_json(struct gateway *g, const struct chart_ring *ring)
{
	struct chart_sample now;
	const struct chart_sample *from;
	int64_t ms;

	take(g, &now, (int64_t)mono_ms());
	from = ring ? chart_rate_base(ring, now.mono_ms, OV_RATE_MIN_MS) : NULL;
	ms = from ? now.mono_ms - from->mono_ms : 0;
	return json_pack("{s:f, s:f, s:I, s:I}", "confirmedPerS",
			 from ? chart_rate(from->confirmed, now.confirmed, ms) : 0.0, "failedPerS",
			 from ? chart_rate(from->failed, now.failed, ms) : 0.0, "confirmedTotal",
			 (json_int_t)now.confirmed, "failedTotal", (json_int_t)now.failed);
}

static json_t *procs_json(const struct shm_segment *seg)
{
	json_t *procs = json_array();
	uint64_t now = mono_ns();

	for (uint32_t p = 0; p < seg->n_procs; p++) {
		struct proc_slot_view v;

		proc_slot_read(shm_proc_slot(seg, p), &v);
		if (v.role == SHM_ROLE_GATEWAY && v.state == SHM_PROC_FREE)
			continue; /* OUTBOX_HTTP_ADDR=off: cannot be us, but the row says so */
		json_array_append_new(
			procs,
			json_pack("{s:s, s:i, s:i, s:s, s:I, s:I, s:I}", "role",
				  shm_role_name(v.role), "index", (int)v.index, "pid", (int)v.pid,
				  "state", shm_proc_state_name(v.state), "heartbeatAgeMs",
				  (json_int_t)(v.heartbeat_ns && now > v.heartbeat_ns
						       ? (int64_t)((now - v.heartbeat_ns) / 1000000)
					       : v.heartbeat_ns ? 0
								: -1),
				  "restarts", (json_int_t)v.restarts, "startedAt",
				  (json_int_t)v.started_at_ms));
	}
	return procs;
}

static json_t *key_json(const struct gw_req *r)
{
	json_t *scopes = json_array();

	if (r->scopes & APIKEY_SCOPE_READ)
		json_array_append_new(scopes, json_string("outbox:read"));
	if (r->scopes & APIKEY_SCOPE_WRITE)
		json_array_append_new(scopes, json_string("outbox:write"));
	if (r->scopes & APIKEY_SCOPE_ENQUEUE)
		json_array_append_new(scopes, json_string("outbox:enqueue"));
	return json_pack("{s:s, s:s, s:o}", "name", r->actor, "prefix", r->key_prefix, "scopes",
			 scopes);
}

/* The statement answered (loop thread): add what shared memory says. */
void gw_console_on_result(struct gateway *g, struct gw_req *r, PGresult *res)
{
	const struct chart_ring *ring = g->console_ring;
	char *fees;
	json_t *body;

	if (!res || !pgq_ok(res) || PQntuples(res) != 1 ||
	    !(body = json_loads(PQgetvalue(res, 0, 1), 0, NULL))) {
		if (res && !pgq_ok(res))
			log_warn("console overview: %s", PQresultErrorMessage(res));
		gw_http_error(g, r, 503, "unavailable", NULL,
			      "the database did not answer the overview");
		return;
	}
	fees = gw_conditions_render(g);
	json_object_set_new(body, "fees", fees ? json_loads(fees, 0, NULL) : json_null());
	free(fees);
	json_object_set_new(body, "ops", rates_json(g, ring));
	json_object_set_new(body, "latency", series_json(ring));
	json_object_set_new(body, "sampleMs", json_integer(CHART_SAMPLE_MS));
	json_object_set_new(body, "processes", procs_json(g->ctx->seg));
	json_object_set_new(body, "key", key_json(r));
	gw_http_answer(g, r, 200, json_dumps(body, JSON_COMPACT));
	json_decref(body);
}
