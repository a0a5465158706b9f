/*
 * api.c - the admin endpoints and the enqueue. On an HTTP thread: check
 * every input (400 names the field), then set the request's job, one call
 * of an api_* function of schema/0010_gateway.sql, which does the work and
 * writes the audit row in one transaction. On the loop thread: turn its
 * (http, body) into the answer. Values reach SQL only as parameters.
 */
#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gw_api_job_clear(struct gw_req *r)
{
	free(r->sql);
	r->sql = NULL;
	for (int i = 0; i < r->n_params; i++)
		free(r->params[i]);
	r->n_params = 0;
}

static void param(struct gw_req *r, const char *v)
{
	r->params[r->n_params++] = v ? strdup(v) : NULL;
}

static void param_i64(struct gw_req *r, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%lld", (long long)v);
	param(r, b);
}

static void param_json(struct gw_req *r, json_t *j)
{
	r->params[r->n_params++] = j ? json_dumps(j, JSON_COMPACT) : strdup("{}");
}

/* The key and the actor: the first two arguments of every api_* function. */
static void who(struct gw_req *r, const char *sql)
{
	gw_api_job_clear(r);
	r->job = J_SQL;
	r->sql = strdup(sql);
	if (r->key_id)
		param_i64(r, r->key_id);
	else
		param(r, NULL);
	param(r, r->actor[0] ? r->actor : "anonymous");
}

/* $1 key id, $2 actor, $3 request: every api_* function starts so. */
static void job_begin(struct gw_req *r, const char *sql, json_t *body)
{
	json_t *req = gw_http_request_json(r, body);

	who(r, sql);
	param_json(r, req);
	json_decref(req);
}

static const char *action_of(enum gw_route route)
{
	switch (route) {
	case R_LIST:
		return "api.list";
	case R_STATS:
		return "api.stats";
	case R_GET:
		return "api.get";
	case R_WHY:
		return "api.why";
	case R_RETRY:
		return "op.retry";
	case R_CANCEL:
		return "op.cancel";
	case R_ENQUEUE:
		return "op.enqueue";
	default:
		return "api.unknown";
	}
}

void gw_api_refuse(struct gateway *g, struct gw_req *r, unsigned status, const char *code,
		   const char *message)
{
	json_t *result =
		json_pack("{s:i, s:s, s:s}", "status", (int)status, "code", code, "error", message);
	json_t *req = gw_http_request_json(r, NULL);

	(void)g;
	who(r, "SELECT outbox.api_audit($1::bigint, $2, $3, $4, $5::jsonb, $6::jsonb)");
	param(r, action_of(r->route));
	if (r->op_id > 0)
		param_i64(r, r->op_id);
	else
		param(r, NULL);
	param_json(r, req);
	param_json(r, result);
	json_decref(req);
	json_decref(result);
	r->job = J_AUDIT;
	r->status = status;
	free(r->resp);
	r->resp = gw_http_error_json(code, NULL, message);
}

/* 400 naming the field: an audited refusal (b from request.c, clean). */
static int refuse_bad(struct gateway *g, struct gw_req *r, const struct gw_bad *b)
{
	gw_api_refuse(g, r, 400, "invalid", b->msg);
	free(r->resp);
	r->resp = gw_http_error_json("invalid", b->field[0] ? b->field : NULL, b->msg);
	return 1;
}

/* ---- GET /api/admin/outbox: the query ---- */

static enum MHD_Result list_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	(void)kind;
	gw_list_arg(cls, key, value);
	return MHD_YES;
}

static int route_list(struct gateway *g, struct gw_req *r)
{
	struct gw_list_q q = {0};
	struct gw_bad bad;
	json_t *query;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, list_arg, &q);
	if (gw_list_check(&q, &bad))
		return refuse_bad(g, r, &bad);
	query = json_object();
	for (int i = 0; i < GW_Q_N; i++)
		if (q.v[i]) /* checked: valid UTF-8 */
			json_object_set_new(query, gw_list_args[i], json_string(q.v[i]));
	job_begin(r,
		  "SELECT http, body::text FROM outbox.api_list($1::bigint, $2, $3::jsonb, $4, $5, "
		  "$6, $7, $8::bigint, $9::int)",
		  NULL);
	free(r->params[2]);
	{
		json_t *req = gw_http_request_json(r, NULL);
		json_object_set_new(req, "query", query);
		r->params[2] = json_dumps(req, JSON_COMPACT);
		json_decref(req);
	}
	for (int i = 0; i < 4; i++)
		param(r, q.v[i]);
	if (q.cursor)
		param_i64(r, q.cursor);
	else
		param(r, NULL);
	param_i64(r, q.limit);
	return 1;
}

/* No query argument on the routes that take none. */
static enum MHD_Result first_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	(void)kind, (void)value;
	*(const char **)cls = key;
	return MHD_NO;
}

static int no_query(struct gateway *g, struct gw_req *r)
{
	const char *key = NULL;
	struct gw_bad bad;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, first_arg, &key);
	if (key)
		return gw_bad_set(&bad, key, "is not an argument of this route"),
		       refuse_bad(g, r, &bad);
	return 0;
}

/* ---- POST bodies ---- */

static int route_enqueue(struct gateway *g, struct gw_req *r)
{
	struct gw_bad bad;
	struct gw_enqueue e;
	json_t *body = gw_body_object(r->body, r->body_len, &bad);

	if (!body)
		return refuse_bad(g, r, &bad);
	if (gw_enqueue_check(body, &e, &bad)) {
		json_decref(body);
		return refuse_bad(g, r, &bad);
	}
	r->wait = e.wait;
	r->wait_deadline_ms =
		(int64_t)mono_ms() + (e.timeout_ms ? e.timeout_ms : GW_WAIT_DEFAULT_MS);
	job_begin(r,
		  "SELECT http, body::text FROM outbox.api_enqueue($1::bigint, $2, $3::jsonb, $4, "
		  "$5, $6, $7, $8::jsonb, $9)",
		  body);
	param(r, e.kind);
	param(r, e.user_id);
	param(r, e.record_id);
	param(r, e.signer);
	param_json(r, e.payload);
	param(r, e.priority);
	json_decref(body);
	return 1;
}

static int route_admin(struct gateway *g, struct gw_req *r, const char *action)
{
	struct gw_bad bad;
	json_t *body = gw_body_object(r->body, r->body_len, &bad);

	if (!body)
		return refuse_bad(g, r, &bad);
	if (gw_admin_check(body, &bad)) {
		json_decref(body);
		return refuse_bad(g, r, &bad);
	}
	json_decref(body);
	if (no_query(g, r))
		return 1;
	job_begin(r,
		  "SELECT http, body::text FROM outbox.api_admin($1::bigint, $2, $3::jsonb, $4, "
		  "$5::bigint)",
		  NULL);
	param(r, action);
	param_i64(r, r->op_id);
	return 1;
}

int gw_api_dispatch(struct gateway *g, struct gw_req *r, unsigned scopes)
{
	char *facts;

	(void)scopes;
	switch (r->route) {
	case R_LIST:
		return route_list(g, r);
	case R_ENQUEUE:
		return route_enqueue(g, r);
	case R_RETRY:
		return route_admin(g, r, "op.retry");
	case R_CANCEL:
		return route_admin(g, r, "op.cancel");
	default:
		break;
	}
	if (r->body_len) {
		struct gw_bad bad;

		gw_bad_set(&bad, "body", "this route takes no body");
		return refuse_bad(g, r, &bad);
	}
	if (no_query(g, r))
		return 1;
	if (r->route == R_STATS) {
		job_begin(
			r,
			"SELECT http, body::text FROM outbox.api_stats($1::bigint, $2, $3::jsonb)",
			NULL);
	} else if (r->route == R_GET) {
		job_begin(r,
			  "SELECT http, body::text FROM outbox.api_op($1::bigint, $2, $3::jsonb, "
			  "$4::bigint)",
			  NULL);
		param_i64(r, r->op_id);
	} else {
		job_begin(r,
			  "SELECT http, body::text FROM outbox.api_why($1::bigint, $2, $3::jsonb, "
			  "$4::bigint, $5::jsonb)",
			  NULL);
		param_i64(r, r->op_id);
		facts = gw_conditions_why_facts(g);
		r->params[r->n_params++] = facts;
	}
	return 1;
}

/* ---- the loop thread: the answer ---- */

static bool terminal(const char *status)
{
	return status && (!strcmp(status, "CONFIRMED") || !strcmp(status, "FAILED") ||
			  !strcmp(status, "CANCELLED") || !strcmp(status, "HELD"));
}

static int prio_rank(const char *p)
{
	return !p ? 1 : !strcmp(p, "CRITICAL") ? 0 : !strcmp(p, "LOW") ? 2 : 1;
}

/* The enqueue's answer: the op plus the oracle's estimates; maybe wait for the end. */
static void enqueued(struct gateway *g, struct gw_req *r, unsigned http, json_t *body)
{
	json_t *op = json_object_get(body, "op"), *vshard = json_object_get(op, "vshard");
	const char *status = json_string_value(json_object_get(op, "status"));
	uint64_t fee;
	double eta;

	r->priority = prio_rank(json_string_value(json_object_get(op, "priority")));
	gw_conditions_estimate(g, r->priority, &fee, &eta);
	json_object_set_new(body, "estFee", json_integer((json_int_t)fee));
	json_object_set_new(body, "estConfirmationSeconds",
			    eta >= 0 ? json_real(eta) : json_null());
	r->op_id = json_integer_value(json_object_get(op, "id"));
	r->created_status = (int)http;
	if (http == 201 && status && !strcmp(status, "PENDING") && json_is_integer(vshard))
		gw_wake_new_op(g, json_integer_value(vshard));
	if (r->wait && !terminal(status)) {
		gw_jobs_wait(g, r);
		return;
	}
	if (r->wait)
		json_object_set_new(body, "timedOut", json_false());
	gw_http_answer(g, r, http, json_dumps(body, JSON_COMPACT));
}

void gw_api_on_result(struct gateway *g, struct gw_req *r, PGresult *res)
{
	json_t *body;
	unsigned http;

	if (r->route == R_OVERVIEW) {
		gw_console_on_result(g, r, res);
		return;
	}
	if (!res) {
		gw_http_error(g, r, 503, "unavailable", NULL,
			      "the database connection was lost during the call%s",
			      r->route == R_RETRY || r->route == R_CANCEL || r->route == R_ENQUEUE
				      ? ": it may have been applied, look the op up"
				      : "");
		return;
	}
	if (!pgq_ok(res)) {
		log_warn("api %s: %s", action_of(r->route), PQresultErrorMessage(res));
		gw_http_error(g, r, 503, "unavailable", NULL, "the database refused the call (%s)",
			      pgq_sqlstate(res));
		return;
	}
	if (r->job == J_AUDIT) {
		r->answered = false;
		gw_http_answer(g, r, r->status, r->resp ? strdup(r->resp) : NULL);
		return;
	}
	http = (unsigned)atoi(PQgetvalue(res, 0, 0));
	if (r->route == R_ENQUEUE && (http == 200 || http == 201) &&
	    (body = json_loads(PQgetvalue(res, 0, 1), 0, NULL))) {
		enqueued(g, r, http, body);
		json_decref(body);
		return;
	}
	gw_http_answer(g, r, http, strdup(PQgetvalue(res, 0, 1)));
}
