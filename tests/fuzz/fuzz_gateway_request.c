/*
 * fuzz_gateway_request.c - libFuzzer target for the gateway's request
 * decoding (ops/gateway/request.h): what the gateway does with a request
 * after libmicrohttpd parsed it, in the order http.c and api.c do it.
 *
 * Input: a request as it goes over the wire, without the framing
 * libmicrohttpd checks ("METHOD TARGET[ VERSION]" line, "Name: value"
 * header lines, an empty line, the body; "\n" or "\r\n"). The harness splits
 * it as libmicrohttpd would hand it over: the path, the query arguments
 * (split on '&' and '=', %XX and '+' decoded, cut at a decoded NUL as a C
 * string is), the Authorization and Content-Length headers, the body (which
 * may hold NUL bytes). The seeds in corpus/gateway_request/ are real
 * requests of every route.
 *
 * Checked on every input (a violation traps): the route is consistent (a
 * by-id route has an op id or says it is bad); a well-formed Authorization
 * gives its 16-character prefix, a malformed one none; every refusal has a
 * message, is valid UTF-8 and renders as the error JSON; every accepted
 * list filter and enqueue field is within its bounds and valid UTF-8, the
 * request's audit JSON renders; nothing leaks (ASan).
 */
#include "ops/gateway/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define MAX_ARGS 64

struct input {
	char method[32], path[4096], auth[4096], clen[64];
	bool has_auth, has_clen;
	char *args[MAX_ARGS][2]; /* key, value (NULL: no '=') */
	int n_args;
	const char *body;
	size_t body_len;
};

static int hex(int c)
{
	return c >= '0' && c <= '9'                 ? c - '0'
	       : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
						    : -1;
}

/* %XX and '+' decoded in place; a decoded NUL ends the C string, as it does in MHD's. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '+') {
			*o++ = ' ';
		} else if (*s == '%' && hex(s[1]) >= 0 && hex(s[2]) >= 0) {
			*o++ = (char)(hex(s[1]) << 4 | hex(s[2]));
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static void copy(char *dst, size_t cap, const char *src, size_t n)
{
	n = n < cap - 1 ? n : cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void query_split(struct input *in, char *q)
{
	while (q && *q && in->n_args < MAX_ARGS) {
		char *amp = strchr(q, '&'), *eq;

		if (amp)
			*amp = '\0';
		eq = strchr(q, '=');
		if (eq)
			*eq = '\0';
		if (*q) {
			unescape(q);
			in->args[in->n_args][0] = q;
			in->args[in->n_args][1] = eq ? (unescape(eq + 1), eq + 1) : NULL;
			in->n_args++;
		}
		q = amp ? amp + 1 : NULL;
	}
}

/* The next line of [*p, end): its length without "\r\n"; *p moves past it. */
static size_t line(const char **p, const char *end, const char **start)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);

	*start = *p;
	*p = nl ? nl + 1 : end;
	if (n && (*start)[n - 1] == '\r')
		n--;
	return n;
}

static void parse(struct input *in, char *target, const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *l, *sp, *q;
	size_t n = line(&p, end, &l);

	sp = memchr(l, ' ', n);
	copy(in->method, sizeof(in->method), l, sp ? (size_t)(sp - l) : n);
	if (sp) {
		const char *t = sp + 1, *tend = memchr(t, ' ', n - (size_t)(t - l));
		copy(target, 8192, t, tend ? (size_t)(tend - t) : n - (size_t)(t - l));
	}
	q = strchr(target, '?');
	copy(in->path, sizeof(in->path), target, q ? (size_t)(q - target) : strlen(target));
	unescape(in->path);
	query_split(in, q ? (char *)q + 1 : NULL);
	while (p < end && (n = line(&p, end, &l)) > 0) {
		const char *colon = memchr(l, ':', n), *v;

		if (!colon)
			continue;
		for (v = colon + 1; v < l + n && (*v == ' ' || *v == '\t'); v++)
			;
		if ((size_t)(colon - l) == 13 && !strncasecmp(l, "Authorization", 13)) {
			copy(in->auth, sizeof(in->auth), v, (size_t)(l + n - v));
			in->has_auth = true;
		} else if ((size_t)(colon - l) == 14 && !strncasecmp(l, "Content-Length", 14)) {
			copy(in->clen, sizeof(in->clen), v, (size_t)(l + n - v));
			in->has_clen = true;
		}
	}
	in->body = p;
	in->body_len = (size_t)(end - p);
}

/* A refusal is complete, clean, and renders. */
static void refused(const struct gw_bad *b)
{
	char *e;

	CHECK(b->msg[0]);
	CHECK(gw_utf8_valid(b->msg, sizeof(b->msg)));
	CHECK(gw_utf8_valid(b->field, sizeof(b->field)));
	e = gw_http_error_json("invalid", b->field[0] ? b->field : NULL, b->msg);
	CHECK(e);
	free(e);
}

static void renders(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);

	CHECK(s);
	free(s);
}

static void list(const struct input *in)
{
	struct gw_list_q q = {0};
	struct gw_bad b;
	json_t *query;

	for (int i = 0; i < in->n_args; i++)
		gw_list_arg(&q, in->args[i][0], in->args[i][1]);
	if (gw_list_check(&q, &b)) {
		refused(&b);
		return;
	}
	CHECK(q.limit >= 1 && q.limit <= GW_PAGE_MAX);
	CHECK(q.cursor >= 0);
	query = json_object();
	for (int i = 0; i < GW_Q_N; i++)
		if (q.v[i]) /* the audit row's query: every accepted value is a JSON string */
			CHECK(json_object_set_new(query, gw_list_args[i], json_string(q.v[i])) ==
			      0);
	renders(query);
	json_decref(query);
}

static void no_query(const struct input *in)
{
	struct gw_bad b;

	if (in->n_args) {
		gw_bad_set(&b, in->args[0][0], "is not an argument of this route");
		refused(&b);
	}
}

static void body(const struct input *in, enum gw_route route)
{
	struct gw_enqueue e;
	struct gw_bad b;
	json_t *j = gw_body_object(in->body, in->body_len, &b);

	if (!j) {
		refused(&b);
		return;
	}
	CHECK(json_is_object(j));
	if (route != R_ENQUEUE) {
		if (gw_admin_check(j, &b))
			refused(&b);
		else
			CHECK(json_object_size(j) == 0);
	} else if (gw_enqueue_check(j, &e, &b)) {
		refused(&b);
	} else {
		CHECK(e.kind && e.user_id && e.signer && json_is_object(e.payload));
		CHECK(strlen(e.kind) <= GW_STRING_MAX && strlen(e.user_id) <= GW_STRING_MAX &&
		      strlen(e.signer) <= GW_STRING_MAX);
		CHECK(!e.record_id || strlen(e.record_id) <= GW_STRING_MAX);
		CHECK(!e.priority || strlen(e.priority) <= GW_STRING_MAX);
		CHECK(e.timeout_ms >= 0 && e.timeout_ms <= GW_WAIT_MAX_MS);
		renders(e.payload);
		renders(j); /* the audit row's body */
	}
	json_decref(j);
}

static void auth(const struct input *in)
{
	char prefix[APIKEY_PREFIX_LEN + 1];
	const char *key;
	enum auth_result a = gw_auth_parse(in->has_auth ? in->auth : NULL, prefix, &key);

	if (a == AUTH_OK) {
		CHECK(strlen(prefix) == APIKEY_PREFIX_LEN);
		CHECK(key == in->auth + 7 && strlen(key) == APIKEY_LEN);
		CHECK(!memcmp(prefix, key, APIKEY_PREFIX_LEN));
	} else {
		CHECK(a == AUTH_MISSING || a == AUTH_MALFORMED);
		CHECK(prefix[0] == '\0' && key == NULL);
		CHECK(a != AUTH_MISSING || !in->has_auth || !in->auth[0]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char target[8192];
	struct input in = {0};
	struct gw_target t;
	char method[8], path[256], *e;

	if (size > 4 * GW_BODY_MAX)
		return 0;
	target[0] = '\0';
	parse(&in, target, data, size);
	/* begin(): what is echoed */
	gw_text_echo(method, sizeof(method), in.method, sizeof(method) - 1);
	gw_text_echo(path, sizeof(path), in.path, 200);
	CHECK(gw_utf8_valid(method, sizeof(method)) && gw_utf8_valid(path, sizeof(path)));
	e = gw_http_error_json("not_found", NULL, path);
	CHECK(e);
	free(e);
	gw_route_find(path, method, &t);
	CHECK((t.route == R_NONE) == (t.method == NULL));
	if (t.route == R_GET || t.route == R_WHY || t.route == R_RETRY || t.route == R_CANCEL)
		CHECK(t.bad_id ? t.op_id == 0 : t.op_id > 0);
	else
		CHECK(t.op_id == 0 && !t.bad_id);
	CHECK(t.route == R_NONE ||
	      t.audited == (t.route >= R_ENQUEUE && t.route <= R_CANCEL)); /* the API's */
	if (in.has_clen && gw_content_length_too_big(in.clen))
		return 0; /* 413 before the body */
	auth(&in);
	if (!t.method_ok || t.bad_id || in.body_len > GW_BODY_MAX)
		return 0;
	switch (t.route) {
	case R_LIST:
		list(&in);
		break;
	case R_ENQUEUE:
		body(&in, t.route);
		break;
	case R_RETRY:
	case R_CANCEL:
		body(&in, t.route);
		no_query(&in);
		break;
	case R_STATS:
	case R_GET:
	case R_WHY:
		no_query(&in);
		break;
	default:
		break;
	}
	return 0;
}
