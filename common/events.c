/*
 * events.c - see events.h.
 */
#include "common/events.h"

#include "common/sha256.h"

#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void event_rec_clear(struct event_rec *e)
{
	json_decref(e->body);
	memset(e, 0, sizeof(*e));
}

bool event_time_format(int64_t at_us, char out[EVENT_TIME_MAX])
{
	time_t s = (time_t)(at_us / 1000000);
	struct tm tm;

	if (at_us < 0 || at_us / 1000000 > 253402300799LL || !gmtime_r(&s, &tm))
		return false;
	snprintf(out, EVENT_TIME_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long long)(at_us % 1000000));
	return true;
}

/*
 * ---- JSON written, not built ----
 *
 * The canonical form and the CloudEvent are written directly, in the bytes
 * jansson gives for the same tree and flags: building and dumping the tree
 * cost ~7 and ~17 us an event here, three events per op, in every worker.
 * jansson still writes the body and the members copied from it, and any
 * string that is not plain printable ASCII (so escapes, \uXXXX and UTF-8
 * checks are its own); such a string is copied as is. check_events
 * compares both forms with the trees byte for byte.
 */
struct out {
	char *p;
	size_t len, cap;
	size_t flags; /* jansson's, for what it writes */
	bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 512;
		char *p;
		while (cap < o->len + n + 1)
			cap *= 2;
		p = realloc(o->p, cap);
		if (!p) {
			o->failed = true;
			return;
		}
		o->p = p, o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static int put_cb(const char *buf, size_t n, void *data)
{
	put(data, buf, n);
	return ((struct out *)data)->failed ? -1 : 0;
}

/* Any JSON value, as jansson writes it with o->flags. */
static void put_json(struct out *o, const json_t *v)
{
	if (json_dump_callback(v, put_cb, o, o->flags | JSON_ENCODE_ANY))
		o->failed = true;
}

/* A JSON string; NULL or "" as null when nullable. */
static void put_str(struct out *o, const char *s, bool nullable)
{
	size_t n;
	json_t *v;

	if (nullable && (!s || !*s)) {
		puts_(o, "null");
		return;
	}
	n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
			goto escaped;
	put(o, "\"", 1);
	put(o, s, n);
	put(o, "\"", 1);
	return;
escaped:
	v = json_string(s); /* NULL for invalid UTF-8, as json_pack's */
	if (!v)
		o->failed = true;
	else
		put_json(o, v);
	json_decref(v);
}

static void put_member(struct out *o, const char *key, const char *str, bool nullable)
{
	put(o, ",\"", 2);
	puts_(o, key);
	put(o, "\":", 2);
	put_str(o, str, nullable);
}

static void put_int_member(struct out *o, const char *key, long long v)
{
	char n[48];

	snprintf(n, sizeof(n), ",\"%s\":%lld", key, v);
	puts_(o, n);
}

/*
 * data's convenience members, each from the body's member when it has it;
 * a later row for the same data member counts only when no earlier one did
 * (fee_charged, on landing, when the body has no fee).
 */
static const char *const copied[][2] = {
	{"attempt_no", "attempt"}, {"tx_hash", "tx_hash"}, {"fee", "fee"},
	{"fee_charged", "fee"},    {"error", "error"},     {"result_code", "result_code"},
};
#define N_COPIED (sizeof(copied) / sizeof(copied[0]))

/* Which rows of copied the body gives: each data member once, the first row that has it. */
static void copied_from(const json_t *body, const json_t *vals[N_COPIED])
{
	for (size_t i = 0; i < N_COPIED; i++) {
		vals[i] = json_object_get(body, copied[i][0]);
		for (size_t j = 0; vals[i] && j < i; j++)
			if (vals[j] && !strcmp(copied[j][1], copied[i][1]))
				vals[i] = NULL;
	}
}

/* The members copy_from_body adds, in its order. */
static void put_copied(struct out *o, const json_t *body)
{
	const json_t *vals[N_COPIED];

	copied_from(body, vals);
	for (size_t i = 0; i < N_COPIED; i++) {
		if (!vals[i])
			continue;
		put(o, ",\"", 2);
		puts_(o, copied[i][1]);
		put(o, "\":", 2);
		put_json(o, vals[i]);
	}
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

char *event_canonical(const struct event_rec *e)
{
	char time[EVENT_TIME_MAX], num[64];
	struct out o = {.flags = JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII};

	if (!event_time_format(e->at_us, time))
		return NULL;
	/* the members in sorted order: body, from, id, op, seq, time, to, type */
	puts_(&o, "{\"body\":");
	if (e->body)
		put_json(&o, e->body);
	else
		puts_(&o, "{}");
	put_member(&o, "from", e->from, true);
	snprintf(num, sizeof(num), ",\"id\":\"%lld\"", (long long)e->id);
	puts_(&o, num);
	if (e->op_id) {
		put_int_member(&o, "op", (long long)e->op_id);
		put_int_member(&o, "seq", (long long)e->seq);
	} else {
		puts_(&o, ",\"op\":null,\"seq\":null");
	}
	put_member(&o, "time", time, false);
	put_member(&o, "to", e->to, true);
	put_member(&o, "type", e->type, false);
	puts_(&o, "}");
	if (o.failed) {
		free(o.p);
		return NULL;
	}
	return o.p;
}

int event_seal(struct event_rec *e, const uint8_t prev[32])
{
	char *c = event_canonical(e);

	if (!c)
		return -ENOMEM;
	memcpy(e->prev, prev, 32);
	outbox_sha256_2(e->hash, prev, 32, c, strlen(c));
	free(c);
	return 0;
}

void event_ce_type(const char *type, char *out, size_t cap)
{
	char low[EVENT_TYPE_MAX + 1];
	size_t i;

	if (!strcmp(type, "FEE_SNAPSHOT")) {
		snprintf(out, cap, "outbox.fee.snapshot.v1");
		return;
	}
	for (i = 0; type[i] && i < EVENT_TYPE_MAX; i++)
		low[i] = (char)tolower((unsigned char)type[i]);
	low[i] = '\0';
	snprintf(out, cap, "outbox.op.%s.v1", low);
}

void event_key(const struct event_rec *e, char *out, size_t cap)
{
	if (e->op_id)
		snprintf(out, cap, "%lld", (long long)e->op_id);
	else
		snprintf(out, cap, "fee");
}

/* data's convenience members, from the body when it has them (copied, above). */
static void copy_from_body(json_t *data, const json_t *body)
{
	const json_t *vals[N_COPIED];

	copied_from(body, vals);
	for (size_t i = 0; i < N_COPIED; i++)
		if (vals[i])
			json_object_set(data, copied[i][1], (json_t *)vals[i]);
}

json_t *event_to_cloud(const struct event_rec *e, const char *source)
{
	char type[96], time[EVENT_TIME_MAX], id[24], subject[24], seq[24], prev[65], hash[65];
	json_t *data, *ce;

	if (!event_time_format(e->at_us, time))
		return NULL;
	event_ce_type(e->type, type, sizeof(type));
	snprintf(id, sizeof(id), "%lld", (long long)e->id);
	event_key(e, subject, sizeof(subject));
	snprintf(seq, sizeof(seq), "%010lld", (long long)(e->op_id ? e->seq : e->chain_seq));
	sodium_bin2hex(prev, sizeof(prev), e->prev, 32);
	sodium_bin2hex(hash, sizeof(hash), e->hash, 32);
	data = json_pack("{s:s, s:o, s:o, s:o, s:{s:s, s:I, s:s, s:s}}", "event", e->type, "from",
			 str_or_null(e->from), "to", str_or_null(e->to), "body",
			 e->body ? json_incref(e->body) : json_object(), "chain", "id", e->chain,
			 "seq", (json_int_t)e->chain_seq, "prev", prev, "hash", hash);
	if (!data)
		return NULL;
	if (e->op_id) {
		json_object_set_new(data, "op_id", json_integer(e->op_id));
		json_object_set_new(data, "idempotency_key", json_string(e->idempotency_key));
		json_object_set_new(data, "kind", json_string(e->kind));
		json_object_set_new(data, "priority", json_string(e->priority));
	}
	copy_from_body(data, e->body);
	ce = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "specversion", "1.0", "id",
		       id, "source", source, "type", type, "time", time, "subject", subject,
		       "datacontenttype", "application/json", "sequence", seq, "data", data);
	return ce;
}

char *event_cloud_json(const struct event_rec *e, const char *source)
{
	char type[96], time[EVENT_TIME_MAX], subject[24], head[256], prev[65], hash[65];
	struct out o = {.flags = JSON_COMPACT};

	if (!event_time_format(e->at_us, time))
		return NULL;
	event_ce_type(e->type, type, sizeof(type));
	event_key(e, subject, sizeof(subject));
	snprintf(head, sizeof(head), "{\"specversion\":\"1.0\",\"id\":\"%lld\"", (long long)e->id);
	puts_(&o, head);
	put_member(&o, "source", source, false);
	put_member(&o, "type", type, false);
	put_member(&o, "time", time, false);
	put_member(&o, "subject", subject, false);
	put_member(&o, "datacontenttype", "application/json", false);
	snprintf(head, sizeof(head), ",\"sequence\":\"%010lld\",\"data\":{\"event\":",
		 (long long)(e->op_id ? e->seq : e->chain_seq));
	puts_(&o, head);
	put_str(&o, e->type, false);
	put_member(&o, "from", e->from, true);
	put_member(&o, "to", e->to, true);
	puts_(&o, ",\"body\":");
	if (e->body)
		put_json(&o, e->body);
	else
		puts_(&o, "{}");
	puts_(&o, ",\"chain\":{\"id\":");
	put_str(&o, e->chain, false);
	sodium_bin2hex(prev, sizeof(prev), e->prev, 32);
	sodium_bin2hex(hash, sizeof(hash), e->hash, 32);
	snprintf(head, sizeof(head), ",\"seq\":%lld,\"prev\":\"%s\",\"hash\":\"%s\"}",
		 (long long)e->chain_seq, prev, hash);
	puts_(&o, head);
	if (e->op_id) {
		put_int_member(&o, "op_id", (long long)e->op_id);
		put_member(&o, "idempotency_key", e->idempotency_key, false);
		put_member(&o, "kind", e->kind, false);
		put_member(&o, "priority", e->priority, false);
	}
	put_copied(&o, e->body);
	puts_(&o, "}}");
	if (o.failed) {
		free(o.p);
		return NULL;
	}
	return o.p;
}

/* ---- reading a CloudEvent back ---- */

static int bad(struct outbox_error *err, const char *member, const char *what)
{
	return outbox_error_set(err, OUTBOX_EPROTO, member, "%s", what);
}

static const char *get_str(const json_t *o, const char *k, size_t max)
{
	const json_t *v = json_object_get(o, k);
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;

	return s && strlen(s) <= max ? s : NULL;
}

/* A status or null into out (16 bytes); false when it is neither. */
static bool get_status(const json_t *o, const char *k, char out[16])
{
	const json_t *v = json_object_get(o, k);

	out[0] = '\0';
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) || strlen(json_string_value(v)) > 15)
		return false;
	snprintf(out, 16, "%s", json_string_value(v));
	return true;
}

/* "2026-12-03T13:05:07.123456Z" -> unix microseconds. */
static bool parse_time(const char *s, int64_t *us)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, n = 0;
	char frac[7];
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (!s || strlen(s) != 27 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6[0-9]Z%n", &y, &mo, &d, &h, &mi, &sec, frac, &n) !=
		    7 ||
	    n != 27 || strlen(frac) != 6)
		return false;
	tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
	tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
	t = timegm(&tm);
	if (t < 0)
		return false;
	*us = (int64_t)t * 1000000 + atoll(frac);
	return true;
}

static bool hex32(const char *s, uint8_t out[32])
{
	size_t n = 0;

	return s && strlen(s) == 64 && !sodium_hex2bin(out, 32, s, 64, NULL, &n, NULL) && n == 32;
}

static bool digits_to_i64(const char *s, int64_t *v)
{
	char *end;

	if (!s || !*s || strlen(s) > 18 || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !*end && !errno;
}

int event_from_cloud(struct event_rec *e, const json_t *ce, struct outbox_error *err)
{
	const json_t *data = json_object_get(ce, "data"), *chain, *body, *op;
	const char *s;
	int64_t seq;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(ce) || !json_is_object(data))
		return bad(err, "data", "is not an object");
	if (!digits_to_i64(get_str(ce, "id", 20), &e->id))
		return bad(err, "id", "is not a decimal event id");
	if (!parse_time(get_str(ce, "time", 27), &e->at_us))
		return bad(err, "time", "is not RFC 3339 UTC with 6 fraction digits");
	if (!(s = get_str(data, "event", EVENT_TYPE_MAX)))
		return bad(err, "data.event", "is not a type of at most 48 characters");
	snprintf(e->type, sizeof(e->type), "%s", s);
	if (!get_status(data, "from", e->from) || !get_status(data, "to", e->to))
		return bad(err, "data.from", "or data.to is not a status or null");
	op = json_object_get(data, "op_id");
	if (op && !json_is_null(op)) {
		if (!json_is_integer(op) || json_integer_value(op) <= 0)
			return bad(err, "data.op_id", "is not a positive integer");
		e->op_id = json_integer_value(op);
		if (!digits_to_i64(get_str(ce, "sequence", 10), &seq) || seq < 1 || seq > INT32_MAX)
			return bad(err, "sequence", "is not a per-op sequence 1..2147483647");
		e->seq = (int32_t)seq;
		snprintf(e->idempotency_key, sizeof(e->idempotency_key), "%s",
			 (s = get_str(data, "idempotency_key", 420)) ? s : "");
		snprintf(e->kind, sizeof(e->kind), "%s", (s = get_str(data, "kind", 23)) ? s : "");
		snprintf(e->priority, sizeof(e->priority), "%s",
			 (s = get_str(data, "priority", 11)) ? s : "");
	}
	body = json_object_get(data, "body");
	if (!json_is_object(body))
		return bad(err, "data.body", "is not an object");
	chain = json_object_get(data, "chain");
	if (!json_is_object(chain) || !(s = get_str(chain, "id", EVENT_CHAIN_MAX)))
		return bad(err, "data.chain.id", "is missing");
	snprintf(e->chain, sizeof(e->chain), "%s", s);
	if (!json_is_integer(json_object_get(chain, "seq")) ||
	    (e->chain_seq = json_integer_value(json_object_get(chain, "seq"))) < 1)
		return bad(err, "data.chain.seq", "is not a positive integer");
	if (!hex32(get_str(chain, "prev", 64), e->prev) ||
	    !hex32(get_str(chain, "hash", 64), e->hash))
		return bad(err, "data.chain.prev", "or data.chain.hash is not 64 hex characters");
	e->body = json_deep_copy(body);
	return e->body ? 0 : bad(err, "data.body", "out of memory");
}
