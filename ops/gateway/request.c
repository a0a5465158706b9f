/*
 * request.c - the gateway's request decoding (request.h): routes, ids,
 * the Authorization header's form, list filters, JSON bodies. Pure: the
 * fuzz target runs it on arbitrary bytes, so every input is bounded and
 * every echo of one is cleaned before it can reach JSON or PostgreSQL.
 */
#include "ops/gateway/request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- text ---- */

/* The length of the valid UTF-8 sequence at s (strict: no overlong, no
 * surrogate, nothing past U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0], cp, need;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return need + 1;
}

static bool control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

size_t gw_text_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t replaced = 0;

	while (*p) {
		size_t n = utf8_seq(p);

		if (n == 0 || (n == 1 && control(*p))) {
			*p++ = '?';
			replaced++;
		} else {
			p += n;
		}
	}
	return replaced;
}

bool gw_utf8_valid(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq(p);

		if (n == 0 || (size_t)(p - (const unsigned char *)s) + n > max)
			return false;
		p += n;
	}
	return true;
}

void gw_text_echo(char *dst, size_t cap, const char *src, size_t max)
{
	size_t n = strlen(src);

	if (cap == 0)
		return;
	if (n > max && max + 4 <= cap)
		snprintf(dst, cap, "%.*s...", (int)max, src);
	else
		snprintf(dst, cap, "%s", src);
	gw_text_clean(dst); /* also a multibyte character cut in two */
}

int gw_bad_set(struct gw_bad *b, const char *field, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b->field[0] = '\0';
	if (field)
		gw_text_echo(b->field, sizeof(b->field), field, GW_FIELD_MAX - 3);
	if (field)
		snprintf(b->msg, sizeof(b->msg), "%s: %s", b->field, msg);
	else
		snprintf(b->msg, sizeof(b->msg), "%s", msg);
	gw_text_clean(b->msg);
	return 1;
}

char *gw_http_error_json(const char *code, const char *field, const char *message)
{
	char m[512], f[GW_FIELD_MAX + 1];
	json_t *e, *w;
	char *s;

	/* messages may quote what a client sent: bounded and valid UTF-8 */
	gw_text_echo(m, sizeof(m), message, sizeof(m) - 4);
	e = json_pack("{s:s, s:s}", "code", code, "message", m);
	if (e && field) {
		gw_text_echo(f, sizeof(f), field, sizeof(f) - 4);
		json_object_set_new(e, "field", json_string(f));
	}
	w = e ? json_pack("{s:o}", "error", e) : NULL;
	s = w ? json_dumps(w, JSON_COMPACT) : NULL;
	json_decref(w);
	return s;
}

/* ---- routes ---- */

/* A positive decimal id of at most 18 digits, no leading zero; -1 otherwise. */
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

#define N_OF(a)      (sizeof(a) / sizeof((a)[0]))
#define ADMIN_PREFIX "/api/admin/outbox/"

static void target_set(struct gw_target *t, const struct route_def *d, const char *method)
{
	t->route = d->route;
	t->method = d->method;
	t->audited = d->audited;
	t->method_ok = !strcmp(method, d->method);
}

void gw_route_find(const char *path, const char *method, struct gw_target *t)
{
	const char *p, *rest;
	size_t n;

	*t = (struct gw_target){.route = R_NONE, .audited = !strncmp(path, "/api/admin/", 11)};
	for (size_t i = 0; i < N_OF(fixed); i++)
		if (!strcmp(path, fixed[i].path)) {
			target_set(t, &fixed[i], method);
			return;
		}
	if (!strncmp(path, console_files.path, strlen(console_files.path))) {
		target_set(t, &console_files, method);
		return;
	}
	if (strncmp(path, ADMIN_PREFIX, strlen(ADMIN_PREFIX)))
		return;
	p = path + strlen(ADMIN_PREFIX);
	n = strcspn(p, "/");
	rest = p + n;
	for (size_t i = 0; i < N_OF(by_id); i++)
		if (!strcmp(rest, by_id[i].path)) {
			target_set(t, &by_id[i], method);
			t->op_id = parse_id(p, n);
			t->bad_id = t->op_id < 0;
			if (t->bad_id)
				t->op_id = 0;
			return;
		}
}

const char *gw_route_method(enum gw_route route)
{
	return route == R_ENQUEUE || route == R_RETRY || route == R_CANCEL ? "POST" : "GET";
}

bool gw_content_length_too_big(const char *v)
{
	size_t n = 0;

	/* libmicrohttpd refuses a malformed Content-Length itself; this is the
	 * bound, digits only, so "-1" or 10^30 cannot wrap around it */
	while (*v == ' ' || *v == '\t')
		v++;
	for (; v[n]; n++)
		if (v[n] < '0' || v[n] > '9')
			break;
	if (n == 0)
		return false; /* no number: not ours to judge */
	while (n > 1 && *v == '0')
		v++, n--;
	return n > 9 || strtoul(v, NULL, 10) > GW_BODY_MAX;
}

/* ---- Authorization ---- */

enum auth_result gw_auth_parse(const char *header, char prefix[APIKEY_PREFIX_LEN + 1],
			       const char **key)
{
	const char *k;
	size_t n;

	prefix[0] = '\0';
	*key = NULL;
	if (!header || !*header)
		return AUTH_MISSING;
	if (strncasecmp(header, "Bearer ", 7))
		return AUTH_MALFORMED;
	k = header + 7;
	n = strnlen(k, APIKEY_LEN + 1);
	if (n != APIKEY_LEN || apikey_parse(k, n, prefix, NULL)) {
		prefix[0] = '\0';
		return AUTH_MALFORMED;
	}
	*key = k;
	return AUTH_OK;
}

/* ---- the list query ---- */

const char *const gw_list_args[GW_Q_N] = {"status", "kind",   "priority",
					  "userId", "cursor", "limit"};

void gw_list_arg(struct gw_list_q *q, const char *key, const char *value)
{
	for (int i = 0; i < GW_Q_N; i++)
		if (!strcmp(key, gw_list_args[i])) {
			if (q->v[i] && !q->has_bad) {
				gw_text_echo(q->bad, sizeof(q->bad), key, GW_FIELD_MAX - 3);
				q->has_bad = q->dup = true;
			}
			q->v[i] = value ? value : "";
			return;
		}
	if (!q->has_bad) {
		gw_text_echo(q->bad, sizeof(q->bad), key, GW_FIELD_MAX - 3);
		q->has_bad = true;
	}
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

/* 1..max digits, no sign, no space; -1 otherwise. */
static int64_t parse_digits(const char *s, size_t max)
{
	size_t n = strlen(s);
	int64_t v = 0;

	if (n == 0 || n > max)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* 1..max bytes of UTF-8 without control characters. */
static bool printable(const char *s, size_t max)
{
	if (!*s || !gw_utf8_valid(s, max))
		return false;
	for (; *s; s++)
		if (control((unsigned char)*s))
			return false;
	return true;
}

/* The value echoed in a refusal: at most 40 bytes, clean. */
static const char *echo40(char buf[48], const char *v)
{
	gw_text_echo(buf, 48, v, 40);
	return buf;
}

int gw_list_check(struct gw_list_q *q, struct gw_bad *b)
{
	const char *const *v = q->v;
	char e[48];

	q->cursor = 0;
	q->limit = GW_PAGE_DEFAULT;
	if (q->has_bad)
		return gw_bad_set(b, q->bad, "%s",
				  q->dup ? "is given twice"
					 : "is not a filter of this route (status, kind, "
					   "priority, userId, cursor, limit)");
	if (v[GW_Q_STATUS] && !one_of(v[GW_Q_STATUS], statuses))
		return gw_bad_set(b, "status",
				  "'%s' is not one of PENDING, SUBMITTED, CONFIRMED, FAILED, "
				  "CANCELLED, HELD",
				  echo40(e, v[GW_Q_STATUS]));
	if (v[GW_Q_KIND] && !one_of(v[GW_Q_KIND], kinds))
		return gw_bad_set(b, "kind",
				  "'%s' is not one of DEPOSIT, WITHDRAW, REBALANCE, "
				  "REFERRAL_REWARD",
				  echo40(e, v[GW_Q_KIND]));
	if (v[GW_Q_PRIORITY] && !one_of(v[GW_Q_PRIORITY], prios))
		return gw_bad_set(b, "priority", "'%s' is not one of CRITICAL, NORMAL, LOW",
				  echo40(e, v[GW_Q_PRIORITY]));
	if (v[GW_Q_USER] && !printable(v[GW_Q_USER], 128))
		return gw_bad_set(b, "userId",
				  "is not 1..128 bytes of UTF-8 without control characters");
	if (v[GW_Q_CURSOR] && parse_digits(v[GW_Q_CURSOR], 18) <= 0)
		return gw_bad_set(b, "cursor", "is not a cursor this API returned");
	if (v[GW_Q_LIMIT] &&
	    (parse_digits(v[GW_Q_LIMIT], 4) < 1 || parse_digits(v[GW_Q_LIMIT], 4) > GW_PAGE_MAX))
		return gw_bad_set(b, "limit", "is not an integer in 1..%d", GW_PAGE_MAX);
	if (v[GW_Q_CURSOR])
		q->cursor = parse_digits(v[GW_Q_CURSOR], 18);
	if (v[GW_Q_LIMIT])
		q->limit = parse_digits(v[GW_Q_LIMIT], 4);
	return 0;
}

/* ---- JSON bodies ---- */

json_t *gw_body_object(const char *body, size_t len, struct gw_bad *b)
{
	json_error_t e;
	json_t *j;

	if (!len)
		return json_object();
	/* jansson refuses invalid UTF-8 and, without JSON_ALLOW_NUL, "\u0000" */
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e);
	if (!j) {
		gw_bad_set(b, "body", "malformed JSON at line %d column %d: %.100s", e.line,
			   e.column, e.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		gw_bad_set(b, "body", "is not a JSON object");
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
		return json_is_string(v) && json_string_length(v) <= GW_STRING_MAX;
	return json_typeof(v) == f->type;
}

/* Every field known, of its type, the required ones there. */
static int fields_check(json_t *body, const struct field *fs, size_t n, struct gw_bad *b)
{
	const char *key;
	json_t *v;

	json_object_foreach(body, key, v)
	{
		size_t i = 0;

		while (i < n && strcmp(fs[i].name, key))
			i++;
		if (i == n)
			return gw_bad_set(b, key, "is not a field of this route");
		if (!type_ok(v, &fs[i]))
			return gw_bad_set(b, key, "must be %s%s", type_name(fs[i].type),
					  fs[i].type == JSON_STRING ? " of at most 1024 bytes"
								    : "");
	}
	for (size_t i = 0; i < n; i++)
		if (fs[i].required && !json_object_get(body, fs[i].name))
			return gw_bad_set(b, fs[i].name, "is missing");
	return 0;
}

static const char *str_or_null(json_t *body, const char *k)
{
	json_t *v = json_object_get(body, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int gw_enqueue_check(json_t *body, struct gw_enqueue *e, struct gw_bad *b)
{
	json_t *t;

	*e = (struct gw_enqueue){0};
	if (fields_check(body, enqueue_fields, N_OF(enqueue_fields), b))
		return 1;
	t = json_object_get(body, "waitTimeoutMs");
	if (t && (json_integer_value(t) < 1 || json_integer_value(t) > GW_WAIT_MAX_MS))
		return gw_bad_set(b, "waitTimeoutMs", "is not in 1..%d", GW_WAIT_MAX_MS);
	e->timeout_ms = t ? json_integer_value(t) : 0;
	e->wait = json_is_true(json_object_get(body, "wait"));
	e->kind = str_or_null(body, "kind");
	e->user_id = str_or_null(body, "userId");
	e->record_id = str_or_null(body, "businessRecordId");
	e->signer = str_or_null(body, "signer");
	e->priority = str_or_null(body, "priority");
	e->payload = json_object_get(body, "payload");
	return 0;
}

int gw_admin_check(json_t *body, struct gw_bad *b)
{
	return fields_check(body, NULL, 0, b);
}
