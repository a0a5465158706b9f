/*
 * request.h - the gateway's request decoding, pure: no I/O, no
 * libmicrohttpd, no PostgreSQL, no shared state.
 *
 * What libmicrohttpd hands over (method, path, query arguments, headers,
 * body) becomes a route, an op id, checked list filters, a checked JSON
 * body, the parsed form of an Authorization header, or a refusal naming
 * the field. http.c and api.c decide with these functions; the libFuzzer
 * target tests/fuzz/fuzz_gateway_request.c drives them with arbitrary
 * bytes. Everything a refusal echoes (a field, a value, a path) is cut to a
 * bound and made valid UTF-8 without control characters, so that an answer
 * or an audit row can always be rendered as JSON and stored as text.
 */
#ifndef OUTBOX_OPS_GATEWAY_REQUEST_H
#define OUTBOX_OPS_GATEWAY_REQUEST_H

#include "common/apikey.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_BODY_MAX     16384  /* a request body longer than this is 413 */
#define GW_PAGE_DEFAULT 50     /* list page size without limit */
#define GW_PAGE_MAX     500    /* the hard page limit */
#define GW_WAIT_MAX_MS  120000 /* waitTimeoutMs at most */
#define GW_STRING_MAX   1024   /* a string field of a body, in bytes */
#define GW_FIELD_MAX    64     /* a field name echoed in a refusal, in bytes */

enum gw_route {
	R_NONE,
	R_HEALTHZ,
	R_READYZ,
	R_METRICS,
	R_CONDITIONS,
	R_ENQUEUE,
	R_LIST,
	R_STATS,
	R_GET,
	R_WHY,
	R_RETRY,
	R_CANCEL,
	R_CONSOLE,  /* / and /console/<file> */
	R_OVERVIEW, /* /api/console/overview */
};

/* What the path and the method name. */
struct gw_target {
	enum gw_route route; /* R_NONE: no route */
	const char *method;  /* the route's method (NULL: no route) */
	bool audited;        /* under /api/admin or /api/v1/ops: every answer is audited */
	bool method_ok;
	bool bad_id;   /* a by-id route whose id is not a positive integer */
	int64_t op_id; /* by-id routes, else 0 */
};

/* A refusal: the field it names ("" none) and its message, both clean. */
struct gw_bad {
	char field[GW_FIELD_MAX + 1];
	char msg[480];
};

/* Set b (field NULL: none) and return 1. */
int gw_bad_set(struct gw_bad *b, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Make s valid UTF-8 in place: every byte of an invalid, overlong,
 * surrogate or truncated sequence and every control character becomes '?'.
 * Returns the number of bytes replaced.
 */
size_t gw_text_clean(char *s);
/* s is valid UTF-8 (as PostgreSQL and jansson accept it) of at most max bytes. */
bool gw_utf8_valid(const char *s, size_t max);
/* Copy at most max bytes of src into dst (cap bytes), "..." when cut, clean. */
void gw_text_echo(char *dst, size_t cap, const char *src, size_t max);

/* {"error": {"code", "message", "field"}} malloc'd (field NULL: none), its
 * texts cut and cleaned; NULL only when out of memory. */
char *gw_http_error_json(const char *code, const char *field, const char *message);

/* The route of path and method. */
void gw_route_find(const char *path, const char *method, struct gw_target *t);
/* The method a route takes (its Allow header). */
const char *gw_route_method(enum gw_route route);

/* A Content-Length that announces more than GW_BODY_MAX (or is no number). */
bool gw_content_length_too_big(const char *value);

/* ---- Authorization ---- */

enum auth_result { AUTH_OK, AUTH_MISSING, AUTH_MALFORMED, AUTH_UNKNOWN, AUTH_REVOKED };
/*
 * "Bearer <key>": AUTH_OK when the key has the API-key format, its prefix
 * copied and *key pointing at it inside header (APIKEY_LEN bytes); otherwise
 * AUTH_MISSING or AUTH_MALFORMED. Says nothing of whether the key is known.
 */
enum auth_result gw_auth_parse(const char *header, char prefix[APIKEY_PREFIX_LEN + 1],
			       const char **key);

/* ---- GET /api/admin/outbox: the query ---- */

enum { GW_Q_STATUS, GW_Q_KIND, GW_Q_PRIORITY, GW_Q_USER, GW_Q_CURSOR, GW_Q_LIMIT, GW_Q_N };
extern const char *const gw_list_args[GW_Q_N];

struct gw_list_q {
	const char *v[GW_Q_N];      /* as given (pointers into the caller's strings) */
	char bad[GW_FIELD_MAX + 1]; /* the first unknown or repeated argument, clean */
	bool has_bad, dup;
	/* after gw_list_check */
	int64_t cursor; /* 0: none */
	int64_t limit;
};

/* One query argument (value NULL: "?key" without "="). */
void gw_list_arg(struct gw_list_q *q, const char *key, const char *value);
/* 0, or 1 with b naming the argument. */
int gw_list_check(struct gw_list_q *q, struct gw_bad *b);

/* ---- JSON bodies ---- */

/* The body as a JSON object (empty: {}), or NULL with b set. */
json_t *gw_body_object(const char *body, size_t len, struct gw_bad *b);

struct gw_enqueue {
	const char *kind, *user_id, *record_id, *signer, *priority; /* NULL: absent or null */
	json_t *payload;                                            /* borrowed from the body */
	bool wait;
	int64_t timeout_ms; /* 0: not given */
};
/* POST /api/v1/ops: every field known, of its type, in range. 0 or 1 (b set). */
int gw_enqueue_check(json_t *body, struct gw_enqueue *e, struct gw_bad *b);
/* POST .../retry and .../cancel take no field: 0 or 1 (b set). */
int gw_admin_check(json_t *body, struct gw_bad *b);

#endif
