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

/* 400 naming the field: an audited refusal. */
static int invalid(struct gateway *g, struct gw_req *r, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int invalid(struct gateway *g, struct gw_req *r, const char *field, const char *fmt, ...)
{
	char msg[400], full[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s: %s", field, msg);
	gw_api_refuse(g, r, 400, "invalid", full);
	free(r->resp);
	r->resp = gw_http_error_json("invalid", field, full);
	return 1;
}

/* ---- GET /api/admin/outbox: the query ---- */

struct list_q {
	const char *v[6]; /* status, kind, priority, userId, cursor, limit */
	const char *bad;  /* an unknown or repeated argument */
	bool dup;
};

static const char *const list_args[6] = {"status", "kind", "priority", "userId", "cursor", "limit"};

static enum MHD_Result list_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct list_q *q = cls;

	(void)kind;
	for (int i = 0; i < 6; i++)
		if (!strcmp(key, list_args[i])) {
			if (q->v[i] && !q->bad) {
				q->bad = key;
				q->dup = true;
			}
			q->v[i] = value ? value : "";
			return MHD_YES;
		}
	if (!q->bad)
		q->bad = key;
	return MHD_YES;
}

static bool one_of(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(v, *set))
			return true;
	return false;
}

static const char *const statuses[] = {"PENDING",   "SUBMITTED", "CONFIRMED", "FAILED",
				       "CANCELLED", "HELD",      NULL};
static const char *const kinds[] = {"DEPOSIT", "WITHDRAW", "REBALANCE", "REFERRAL_REWARD", NULL};
static const char *const prios[] = {"CRITICAL", "NORMAL", "LOW", NULL};

static bool printable_ident(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int list_check(struct gateway *g, struct gw_req *r, struct list_q *q, int64_t *cursor,
		      int64_t *limit)
{
	char *end;

	if (q->bad)
		return invalid(g, r, q->bad,
			       q->dup ? "is given twice"
				      : "is not a filter of this "
					"route (status, kind, priority, userId, cursor, limit)");
	if (q->v[0] && !one_of(q->v[0], statuses))
		return invalid(g, r, "status",
			       "'%.40s' is not one of PENDING, SUBMITTED, "
			       "CONFIRMED, FAILED, CANCELLED, HELD",
			       q->v[0]);
	if (q->v[1] && !one_of(q->v[1], kinds))
		return invalid(g, r, "kind",
			       "'%.40s' is not one of DEPOSIT, WITHDRAW, REBALANCE, "
			       "REFERRAL_REWARD",
			       q->v[1]);
	if (q->v[2] && !one_of(q->v[2], prios))
		return invalid(g, r, "priority", "'%.40s' is not one of CRITICAL, NORMAL, LOW",
			       q->v[2]);
	if (q->v[3] && !printable_ident(q->v[3], 128))
		return invalid(g, r, "userId",
			       "is not 1..128 characters without control characters");
	*cursor = 0;
	if (q->v[4] && ((*cursor = strtoll(q->v[4], &end, 10)) <= 0 || *end || !*q->v[4] ||
			strlen(q->v[4]) > 18))
		return invalid(g, r, "cursor", "is not a cursor this API returned");
	*limit = GW_PAGE_DEFAULT;
	if (q->v[5] && ((*limit = strtoll(q->v[5], &end, 10)) < 1 || *limit > GW_PAGE_MAX || *end ||
			!*q->v[5] || strlen(q->v[5]) > 4))
		return invalid(g, r, "limit", "is not an integer in 1..%d", GW_PAGE_MAX);
	return 0;
}

static int route_list(struct gateway *g, struct gw_req *r)
{
	struct list_q q = {0};
	int64_t cursor = 0, limit = GW_PAGE_DEFAULT;
	json_t *query;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, list_arg, &q);
	if (list_check(g, r, &q, &cursor, &limit))
		return 1;
	query = json_object();
	for (int i = 0; i < 6; i++)
		if (q.v[i])
			json_object_set_new(query, list_args[i], json_string(q.v[i]));
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
	if (cursor)
		param_i64(r, cursor);
	else
		param(r, NULL);
	param_i64(r, limit);
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

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, first_arg, &key);
	if (key)
		return invalid(g, r, key, "is not an argument of this route");
	return 0;
}

/* ---- POST bodies ---- */

/* The body as a JSON object (an empty body is {}), or 400. */
static json_t *body_object(struct gateway *g, struct gw_req *r)
{
	json_error_t e;
	json_t *j;

	if (!r->body_len)
		return json_object();
	j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &e);
	if (!j) {
		invalid(g, r, "body", "malformed JSON at line %d column %d: %.100s", e.line,
			e.column, e.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		invalid(g, r, "body", "is not a JSON object");
		return NULL;
	}
	return j;
}

struct field {
	const char *name;
	json_type type; /* JSON_STRING, JSON_OBJECT, JSON_TRUE (boolean), JSON_INTEGER */
	bool required, nullable;
};

static const struct field enqueue_fields[] = {
	{"kind", JSON_STRING, true, false},
	{"userId", JSON_STRING, true, false},
	{"businessRecordId", JSON_STRING, false, true},
	{"signer", JSON_STRING, true, false},
	{"payload", JSON_OBJECT, true, false},
	{"priority", JSON_STRING, false, true},
	{"wait", JSON_TRUE, false, false},
	{"waitTimeoutMs", JSON_INTEGER, false, false},
};
#define N_ENQUEUE_FIELDS (sizeof(enqueue_fields) / sizeof(enqueue_fields[0]))

static const char *type_name(json_type t)
{
	switch (t) {
	case JSON_STRING:
		return "a string";
	case JSON_OBJECT:
		return "a JSON object";
	case JSON_TRUE:
		return "true or false";
	default:
		return "an integer";
	}
}

static bool type_ok(const json_t *v, const struct field *f)
{
	if (json_is_null(v))
		return f->nullable;
	if (f->type == JSON_TRUE)
		return json_is_boolean(v);
	if (f->type == JSON_STRING)
		return json_is_string(v) && json_string_length(v) <= 1024;
	return json_typeof(v) == f->type;
}

/* Every field known, of its type, the required ones there. */
static int fields_check(struct gateway *g, struct gw_req *r, json_t *body, const struct field *fs,
			size_t n)
{
	const char *key;
	json_t *v;

	json_object_foreach(body, key, v)
	{
		size_t i = 0;

		while (i < n && strcmp(fs[i].name, key))
			i++;
		if (i == n)
			return invalid(g, r, key, "is not a field of this route");
		if (!type_ok(v, &fs[i]))
			return invalid(g, r, key, "must be %s%s", type_name(fs[i].type),
				       fs[i].type == JSON_STRING ? " of at most 1024 bytes" : "");
	}
	for (size_t i = 0; i < n; i++)
		if (fs[i].required && !json_object_get(body, fs[i].name))
			return invalid(g, r, fs[i].name, "is missing");
	return 0;
}

static const char *str_or_null(json_t *body, const char *k)
{
	json_t *v = json_object_get(body, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int route_enqueue(struct gateway *g, struct gw_req *r)
{
	json_t *body = body_object(g, r), *t;

	if (!body)
		return 1;
	if (fields_check(g, r, body, enqueue_fields, N_ENQUEUE_FIELDS)) {
		json_decref(body);
		return 1;
	}
	r->wait = json_is_true(json_object_get(body, "wait"));
	t = json_object_get(body, "waitTimeoutMs");
	if (t && (json_integer_value(t) < 1 || json_integer_value(t) > GW_WAIT_MAX_MS)) {
		json_decref(body);
		return invalid(g, r, "waitTimeoutMs", "is not in 1..%d", GW_WAIT_MAX_MS);
	}
	r->wait_deadline_ms = (int64_t)mono_ms() + (t ? json_integer_value(t) : GW_WAIT_DEFAULT_MS);
	job_begin(r,
		  "SELECT http, body::text FROM outbox.api_enqueue($1::bigint, $2, $3::jsonb, $4, "
		  "$5, $6, $7, $8::jsonb, $9)",
		  body);
	param(r, str_or_null(body, "kind"));
	param(r, str_or_null(body, "userId"));
	param(r, str_or_null(body, "businessRecordId"));
	param(r, str_or_null(body, "signer"));
	param_json(r, json_object_get(body, "payload"));
	param(r, str_or_null(body, "priority"));
	json_decref(body);
	return 1;
}

static int route_admin(struct gateway *g, struct gw_req *r, const char *action)
{
	json_t *body = body_object(g, r);

	if (!body)
		return 1;
	if (fields_check(g, r, body, NULL, 0) || no_query(g, r)) {
		json_decref(body);
		return 1;
	}
	job_begin(r,
		  "SELECT http, body::text FROM outbox.api_admin($1::bigint, $2, $3::jsonb, $4, "
		  "$5::bigint)",
		  NULL);
	param(r, action);
	param_i64(r, r->op_id);
	json_decref(body);
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
	if (r->body_len)
		return invalid(g, r, "body", "this route takes no body");
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
	json_t *op = json_object_get(body, "op");
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
