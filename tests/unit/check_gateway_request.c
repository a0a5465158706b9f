/*
 * check_gateway_request.c - the gateway's pure request decoding
 * (ops/gateway/request.c): text cleaning checked against jansson's own
 * UTF-8 rules over every string of up to two bytes and a lattice of
 * three- and four-byte ones, routes and ids, Content-Length bounds, the
 * Authorization header's form, list filters and JSON bodies.
 */
#include "ops/gateway/request.h"
#include "tests/support/check_main.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* jansson's verdict: json_string refuses invalid UTF-8 */
static bool jansson_valid(const char *s)
{
	json_t *j = json_string(s);
	bool ok = j != NULL;

	json_decref(j);
	return ok;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* One string: validity agrees with jansson, cleaning yields a valid string
 * and changes exactly the strings that are invalid or hold control bytes. */
static void one(const char *s)
{
	char c[8];
	size_t n = strlen(s), replaced;

	ck_assert_int_eq(gw_utf8_valid(s, 8), jansson_valid(s));
	memcpy(c, s, n + 1);
	replaced = gw_text_clean(c);
	ck_assert_uint_eq(strlen(c), n);
	ck_assert(gw_utf8_valid(c, 8) && jansson_valid(c) && !has_control(c));
	ck_assert_int_eq(replaced == 0, gw_utf8_valid(s, 8) && !has_control(s));
	ck_assert_int_eq(replaced == 0, !strcmp(c, s));
}

START_TEST(test_utf8_exhaustive)
{
	static const unsigned char tails[] = {0x01, 0x41, 0x7f, 0x80, 0x8f, 0x90,
					      0x9f, 0xa0, 0xbf, 0xc0, 0xf5, 0xff};
	char s[5] = {0};

	for (unsigned a = 1; a < 256; a++) {
		s[0] = (char)a;
		s[1] = 0;
		one(s);
		for (unsigned b = 1; b < 256; b++) {
			s[1] = (char)b;
			s[2] = 0;
			one(s);
		}
	}
	for (unsigned a = 0xc0; a < 256; a++)
		for (unsigned b = 0; b < sizeof(tails); b++)
			for (unsigned c = 0; c < sizeof(tails); c++)
				for (unsigned d = 0; d <= sizeof(tails); d++) {
					s[0] = (char)a, s[1] = (char)tails[b];
					s[2] = (char)tails[c];
					s[3] = d < sizeof(tails) ? (char)tails[d] : 0;
					s[4] = 0;
					one(s);
				}
}
END_TEST

START_TEST(test_clean_cases)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain", "plain"},
		{"\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"}, /* été */
		{"a\xff"
		 "b",
		 "a?b"},                                  /* not a lead byte */
		{"\xc3", "?"},                            /* cut short */
		{"\xc0\xaf", "??"},                       /* overlong '/' */
		{"\xed\xa0\x80", "???"},                  /* a UTF-16 surrogate */
		{"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"}, /* U+10FFFF */
		{"\xf4\x90\x80\x80", "????"},             /* past U+10FFFF */
		{"\x01x\x7f\n", "?x??"},                  /* control bytes */
	};
	char buf[32], echo[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		gw_text_clean(buf);
		ck_assert_str_eq(buf, cases[i].out);
	}
	/* cut in the middle of a character: the half is replaced, "..." added */
	gw_text_echo(echo, sizeof(echo), "abcdefgh\xc3\xa9\xc3\xa9", 9);
	ck_assert_str_eq(echo, "abcdefgh?...");
	gw_text_echo(echo, sizeof(echo), "short", 9);
	ck_assert_str_eq(echo, "short");
}
END_TEST

START_TEST(test_routes)
{
	static const struct {
		const char *path, *method;
		enum gw_route route;
		bool method_ok, audited, bad_id;
		int64_t op_id;
	} cases[] = {
		{"/healthz", "GET", R_HEALTHZ, true, false, false, 0},
		{"/healthz", "POST", R_HEALTHZ, false, false, false, 0},
		{"/metrics", "GET", R_METRICS, true, false, false, 0},
		{"/api/v1/ops", "POST", R_ENQUEUE, true, true, false, 0},
		{"/api/v1/ops", "GET", R_ENQUEUE, false, true, false, 0},
		{"/api/admin/outbox", "GET", R_LIST, true, true, false, 0},
		{"/api/admin/outbox/stats", "GET", R_STATS, true, true, false, 0},
		{"/api/admin/outbox/42", "GET", R_GET, true, true, false, 42},
		{"/api/admin/outbox/42/why", "GET", R_WHY, true, true, false, 42},
		{"/api/admin/outbox/42/retry", "POST", R_RETRY, true, true, false, 42},
		{"/api/admin/outbox/42/cancel", "GET", R_CANCEL, false, true, false, 42},
		{"/api/admin/outbox/999999999999999999", "GET", R_GET, true, true, false,
		 999999999999999999},
		{"/api/admin/outbox/1000000000000000000", "GET", R_GET, true, true, true, 0},
		{"/api/admin/outbox/042", "GET", R_GET, true, true, true, 0},
		{"/api/admin/outbox/0", "GET", R_GET, true, true, true, 0},
		{"/api/admin/outbox/-1/why", "GET", R_WHY, true, true, true, 0},
		{"/api/admin/outbox/4?2", "GET", R_GET, true, true, true, 0},
		{"/api/admin/outbox//why", "GET", R_WHY, true, true, true, 0},
		{"/api/admin/outbox/1/what", "GET", R_NONE, false, true, false, 0},
		{"/api/admin/other", "GET", R_NONE, false, true, false, 0},
		{"/api/v1/ops/", "POST", R_NONE, false, false, false, 0},
		{"", "GET", R_NONE, false, false, false, 0},
		{"/", "GET", R_CONSOLE, true, false, false, 0},
		{"/console/app.js", "GET", R_CONSOLE, true, false, false, 0},
		{"/console/", "POST", R_CONSOLE, false, false, false, 0},
		{"/api/console/overview", "GET", R_OVERVIEW, true, false, false, 0},
	};
	struct gw_target t;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gw_route_find(cases[i].path, cases[i].method, &t);
		ck_assert_msg(t.route == cases[i].route, "%s: route %d", cases[i].path, t.route);
		ck_assert_msg(t.method_ok == cases[i].method_ok, "%s %s: method_ok",
			      cases[i].method, cases[i].path);
		ck_assert_msg(t.audited == cases[i].audited, "%s: audited", cases[i].path);
		ck_assert_msg(t.bad_id == cases[i].bad_id, "%s: bad_id", cases[i].path);
		ck_assert_msg(t.op_id == cases[i].op_id, "%s: op_id %lld", cases[i].path,
			      (long long)t.op_id);
	}
}
END_TEST

START_TEST(test_content_length)
{
	ck_assert(!gw_content_length_too_big("16384"));
	ck_assert(gw_content_length_too_big("16385"));
	ck_assert(!gw_content_length_too_big("0"));
	ck_assert(!gw_content_length_too_big("0000000000016384"));
	ck_assert(gw_content_length_too_big("0000000000016385"));
	ck_assert(gw_content_length_too_big(" 20000"));
	ck_assert(gw_content_length_too_big("4294967296"));           /* 2^32: no wrap */
	ck_assert(gw_content_length_too_big("18446744073709551616")); /* 2^64 */
	ck_assert(gw_content_length_too_big("99999999999999999999999999999"));
	ck_assert(!gw_content_length_too_big("-1")); /* not a number: libmicrohttpd's 400 */
	ck_assert(!gw_content_length_too_big(""));
}
END_TEST

#define KEY "obx_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

START_TEST(test_auth_parse)
{
	char prefix[APIKEY_PREFIX_LEN + 1];
	const char *key;

	ck_assert_int_eq(gw_auth_parse("Bearer " KEY, prefix, &key), AUTH_OK);
	ck_assert_str_eq(prefix, "obx_0123456789ab");
	ck_assert_str_eq(key, KEY);
	ck_assert_int_eq(gw_auth_parse("bearer " KEY, prefix, &key), AUTH_OK);
	ck_assert_int_eq(gw_auth_parse(NULL, prefix, &key), AUTH_MISSING);
	ck_assert_int_eq(gw_auth_parse("", prefix, &key), AUTH_MISSING);
	ck_assert_ptr_null(key);
	ck_assert_str_eq(prefix, "");
	static const char *const bad[] = {
		"Basic dXNlcjpwYXNz",
		"Bearer",
		"Bearer ",
		"Bearer  " KEY,
		"Bearer " KEY "x",
		"Bearer " KEY " ",
		"Bearer obx_0123456789ab_AAAA",
		"Token " KEY,
		"Bearer obx_0123456789ab-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(gw_auth_parse(bad[i], prefix, &key) == AUTH_MALFORMED, "%s", bad[i]);
		ck_assert_str_eq(prefix, "");
		ck_assert_ptr_null(key);
	}
}
END_TEST

/* The list query of pairs (key, value; a NULL key ends it): 0 or the field refused. */
static const char *list(const char *const *kv, struct gw_list_q *q)
{
	static struct gw_bad b;

	memset(q, 0, sizeof(*q));
	for (; kv[0]; kv += 2)
		gw_list_arg(q, kv[0], kv[1]);
	if (!gw_list_check(q, &b))
		return NULL;
	ck_assert(gw_utf8_valid(b.msg, sizeof(b.msg)) && b.msg[0]);
	return b.field;
}

START_TEST(test_list_query)
{
	struct gw_list_q q;
	char user[200];

	ck_assert_ptr_null(list(
		(const char *const[]){"status", "PENDING", "limit", "500", "cursor", "123", NULL},
		&q));
	ck_assert_int_eq(q.limit, 500);
	ck_assert_int_eq(q.cursor, 123);
	ck_assert_ptr_null(list((const char *const[]){NULL}, &q));
	ck_assert_int_eq(q.limit, GW_PAGE_DEFAULT);
	ck_assert_int_eq(q.cursor, 0);
	static const char *const limits[] = {"0", "501", "+5", " 5", "5x", "", "99999"};
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		ck_assert_str_eq(list((const char *const[]){"limit", limits[i], NULL}, &q),
				 "limit");
	static const char *const cursors[] = {"0", "-1", "1234567890123456789", "1e3"};
	for (size_t i = 0; i < sizeof(cursors) / sizeof(cursors[0]); i++)
		ck_assert_str_eq(list((const char *const[]){"cursor", cursors[i], NULL}, &q),
				 "cursor");
	ck_assert_str_eq(list((const char *const[]){"limit", "1", "limit", "2", NULL}, &q),
			 "limit");
	ck_assert(q.dup);
	ck_assert_str_eq(list((const char *const[]){"st\xff"
						    "atus",
						    "x", NULL},
			      &q),
			 "st?atus");
	ck_assert_str_eq(list((const char *const[]){"status", NULL, NULL}, &q), "status");
	ck_assert_str_eq(list((const char *const[]){"kind", "deposit", NULL}, &q), "kind");
	ck_assert_str_eq(list((const char *const[]){"userId", "\xc3\x28", NULL}, &q), "userId");
	ck_assert_str_eq(list((const char *const[]){"userId", "a\tb", NULL}, &q), "userId");
	memset(user, 'u', 129);
	user[129] = '\0';
	ck_assert_str_eq(list((const char *const[]){"userId", user, NULL}, &q), "userId");
	user[128] = '\0';
	ck_assert_ptr_null(list((const char *const[]){"userId", user, NULL}, &q));
	ck_assert_ptr_null(list((const char *const[]){"userId", "\xc3\xa9t\xc3\xa9", NULL}, &q));
}
END_TEST

/* The enqueue's body: NULL accepted, or the field refused. */
static const char *enqueue(const char *body, size_t n)
{
	static struct gw_bad b;
	struct gw_enqueue e;
	json_t *j = gw_body_object(body, n, &b);
	int rc;

	if (!j)
		return b.field;
	rc = gw_enqueue_check(j, &e, &b);
	json_decref(j);
	return rc ? b.field : NULL;
}

#define GOOD "\"kind\": \"DEPOSIT\", \"userId\": \"u\", \"signer\": \"G\", \"payload\": {}"

START_TEST(test_bodies)
{
	static const struct {
		const char *body, *field; /* NULL: accepted */
	} cases[] = {
		{"{" GOOD "}", NULL},
		{"{" GOOD ", \"wait\": true, \"waitTimeoutMs\": 120000}", NULL},
		{"{" GOOD ", \"waitTimeoutMs\": 0}", "waitTimeoutMs"},
		{"{" GOOD ", \"waitTimeoutMs\": 120001}", "waitTimeoutMs"},
		{"{" GOOD ", \"waitTimeoutMs\": 1.5}", "waitTimeoutMs"},
		{"{" GOOD ", \"wait\": 1}", "wait"},
		{"{" GOOD ", \"extra\": 1}", "extra"},
		{"{" GOOD ", \"priority\": null, \"businessRecordId\": null}", NULL},
		{"{\"kind\": \"DEPOSIT\", \"userId\": \"u\", \"payload\": {}}", "signer"},
		{"{" GOOD ", \"kind\": \"x\"}", "body"}, /* a duplicate key */
		{"{\"kind\": \"a\\u0000b\"}", "body"},
		{"[]", "body"},
		{"{", "body"},
		{"{\"k\xc3\x28\": 1}", "body"},
	};
	char big[1200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *f = enqueue(cases[i].body, strlen(cases[i].body));

		if (!cases[i].field)
			ck_assert_msg(!f, "%s: refused (%s)", cases[i].body, f);
		else
			ck_assert_msg(f && !strcmp(f, cases[i].field), "%s: %s, not %s",
				      cases[i].body, f ? f : "accepted", cases[i].field);
	}
	ck_assert_str_eq(enqueue("", 0), "kind"); /* an empty body is {}: kind is missing */
	snprintf(big, sizeof(big), "{\"kind\": \"%01025d\"}", 0);
	ck_assert_str_eq(enqueue(big, strlen(big)), "kind");
	ck_assert_str_eq(enqueue("{\"a\":\0}", 7), "body");
}
END_TEST

static Suite *gateway_request_suite(void)
{
	Suite *s = suite_create("gateway_request");
	TCase *t = tcase_create("request");

	tcase_set_timeout(t, 280); /* exhaustive, and under ASan in CI */
	tcase_add_test(t, test_utf8_exhaustive);
	tcase_add_test(t, test_clean_cases);
	tcase_add_test(t, test_routes);
	tcase_add_test(t, test_content_length);
	tcase_add_test(t, test_auth_parse);
	tcase_add_test(t, test_list_query);
	tcase_add_test(t, test_bodies);
	suite_add_tcase(s, t);
	return s;
}

OUTBOX_CHECK_MAIN(gateway_request_suite)
