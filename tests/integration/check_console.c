/*
 * check_console.c - the web console in a real browser: Debian's chromium,
 * headless, driven by puppeteer-core (tests/console/console.mjs), against a
 * running outboxd + stellar-sim + PostgreSQL.
 *
 * This suite prepares what the browser will see (keys, a confirmed op, an op
 * failed on chain whose user is then halted, so that a retry leaves it
 * PENDING for the page to show), runs the browser script, and checks from
 * the database what the clicks did: the audit rows of the console's retry,
 * its refused cancel and a forged retry with a read key, like the HTTP admin
 * API's. It also checks over plain HTTP what the browser cannot see: the
 * security headers, 401 without a key, 403 for a key without outbox:read.
 */
#include "tests/integration/gateway_harness.h"

struct hdrs {
	char csp[256], nosniff[32], referrer[32], frame[32], type[64];
};

static size_t on_hdr(char *p, size_t size, size_t n, void *arg)
{
	struct hdrs *h = arg;
	size_t len = size * n;
	struct {
		const char *name;
		char *out;
		size_t cap;
	} want[] = {
		{"Content-Security-Policy: ", h->csp, sizeof(h->csp)},
		{"X-Content-Type-Options: ", h->nosniff, sizeof(h->nosniff)},
		{"Referrer-Policy: ", h->referrer, sizeof(h->referrer)},
		{"X-Frame-Options: ", h->frame, sizeof(h->frame)},
		{"Content-Type: ", h->type, sizeof(h->type)},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t k = strlen(want[i].name);

		if (len > k + 2 && !strncasecmp(p, want[i].name, k))
			snprintf(want[i].out, want[i].cap, "%.*s", (int)(len - k - 2), p + k);
	}
	return len;
}

static struct hdrs get_headers(struct gw *g, const char *path, long *status)
{
	struct hdrs h = {0};
	struct resp r = {0};
	char url[256];
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", g->port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_hdr);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	free(r.body);
	return h;
}

/* What any browser must be told, on the page and on every other answer. */
static void check_headers(struct gw *g)
{
	static const char *const paths[] = {"/",
					    "/console/console.js",
					    "/console/console.css",
					    "/api/console/overview",
					    "/console/nope.js",
					    "/healthz"};
	static const long want[] = {200, 200, 200, 401, 404, 200};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		long st = 0;
		struct hdrs h = get_headers(g, paths[i], &st);

		ck_assert_msg(st == want[i], "%s: %ld", paths[i], st);
		ck_assert_str_eq(h.csp, "default-src 'none'; script-src 'self'; style-src 'self'; "
					"connect-src 'self'; img-src 'self' data:; "
					"frame-ancestors 'none'");
		ck_assert_str_eq(h.nosniff, "nosniff");
		ck_assert_str_eq(h.referrer, "no-referrer");
		ck_assert_str_eq(h.frame, "DENY");
		if (i == 0)
			ck_assert_str_eq(h.type, "text/html; charset=utf-8");
		if (i == 1)
			ck_assert_str_eq(h.type, "text/javascript; charset=utf-8");
	}
}

/* The overview: read scope, no argument, no audit row. */
static void check_overview_api(struct gw *g, const char *enqueue_key)
{
	long long mark = pgtest_scalar(g->f.c, "SELECT coalesce(max(id), 0) FROM outbox.audit_log");
	struct resp r;
	json_t *j;

	expect(g, "GET", "/api/console/overview", NULL, NULL, 401);
	expect(g, "GET", "/api/console/overview",
	       "Bearer obx_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL, 401);
	expect(g, "GET", "/api/console/overview", bearer(enqueue_key), NULL, 403);
	expect(g, "GET", "/api/console/overview?x=1", bearer(g->key_read), NULL, 400);
	expect(g, "POST", "/api/console/overview", bearer(g->key_read), "{}", 405);
	expect(g, "POST", "/", NULL, "{}", 405);
	expect(g, "GET", "/console/%2e%2e/console/console.js", NULL, NULL, 404);
	r = req(g, "GET", "/api/console/overview", bearer(g->key_read), NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_ptr_null(strstr(r.body, g->key_read)); /* the prefix only, never the key */
	free(r.body);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(json_object_get(j, "depth"), "PENDING"), "LOW")),
			 0);
	ck_assert(json_is_array(json_object_get(j, "processes")));
	ck_assert(json_is_array(json_object_get(j, "latency")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "key"), "name")),
			 "reader");
	json_decref(j);
	ck_assert_int_eq(audit_count(g, mark, "true"), 0);
}

/* The ops the browser looks at: one CONFIRMED, one FAILED on chain (its user then halted). */
static void make_ops(struct gw *g, const char *enqueue_key, long long *confirmed, long long *failed)
{
	char poor[57];

	expect(g, "POST", "/api/v1/ops", bearer(enqueue_key),
	       enqueue_body(g, "DEPOSIT", "alice", "dep-1", 0, g->f.signer[1], "10",
			    ", \"wait\": true, \"waitTimeoutMs\": 60000"),
	       201);
	*confirmed = pgtest_scalar(g->f.c, "SELECT max(id) FROM outbox.ops");
	pgtest_account(93, poor);
	expect(g, "POST", "/api/v1/ops", bearer(enqueue_key),
	       enqueue_body(
		       g, "WITHDRAW", "bob", "wd-1", 1, poor, "5000",
		       ", \"wait\": true, \"waitTimeoutMs\": 60000, \"priority\": \"CRITICAL\""),
	       201);
	*failed = pgtest_scalar(g->f.c, "SELECT max(id) FROM outbox.ops");
	ck_assert(wait_terminal(&g->f, 60000));
	ck_assert_int_eq(pgtest_scalar(g->f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					       "'CONFIRMED'"),
			 1);
	ck_assert_int_eq(pgtest_scalar(g->f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					       "'FAILED'"),
			 1);
	pgtest_exec(g->f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) "
			    "VALUES ('bob', 'console test', 'ops')");
}

static void run_browser(struct gw *g, const char *key_write, long long confirmed, long long failed)
{
	const char *src = getenv("OUTBOX_SOURCE_DIR");
	char code[128], cmd[4096];
	PGresult *res;
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "SELECT result_code FROM outbox.attempts WHERE op_id = %lld AND result_code IS "
		 "NOT NULL ORDER BY attempt_no DESC, bump_no DESC LIMIT 1",
		 failed);
	res = PQexec(g->f.c, cmd);
	ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
	ck_assert_int_eq(PQntuples(res), 1);
	snprintf(code, sizeof(code), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	ck_assert_msg(src && *src, "OUTBOX_SOURCE_DIR is not set (run under ctest)");
	snprintf(cmd, sizeof(cmd),
		 "CONSOLE_URL=http://127.0.0.1:%d/ CONSOLE_KEY_READ=%s CONSOLE_KEY_WRITE=%s "
		 "CONSOLE_OP_CONFIRMED=%lld CONSOLE_OP_FAILED=%lld CONSOLE_RESULT_CODE=%s "
		 "CONSOLE_OUTBOXCTL=%s/outboxctl CONSOLE_INSTANCE=%s node "
		 "%s/tests/console/console.mjs",
		 g->port, g->key_read, key_write, confirmed, failed, code, g->f.h.build,
		 g->f.h.instance, src);
	fflush(stdout);
	rc = system(cmd);
	ck_assert_msg(rc == 0, "the browser test failed (exit status %d)", rc);
}

/* What the clicks left in the audit: the same rows as the HTTP admin API's. */
static void check_audit(struct gw *g, long long mark, long long confirmed, long long failed)
{
	char where[256];

	snprintf(where, sizeof(where),
		 "action = 'op.retry' AND actor = 'writer' AND target = '%lld' AND "
		 "result->>'status' = '200'",
		 failed);
	ck_assert_int_eq(audit_count(g, mark, where), 1);
	snprintf(where, sizeof(where),
		 "action = 'op.retry' AND actor = 'reader' AND target = '%lld' AND "
		 "result->>'status' = '403'",
		 failed);
	ck_assert_int_eq(audit_count(g, mark, where), 1);
	snprintf(where, sizeof(where),
		 "action = 'op.cancel' AND actor = 'writer' AND target = '%lld' AND "
		 "result->>'status' = '409'",
		 confirmed);
	ck_assert_int_eq(audit_count(g, mark, where), 1);
	ck_assert_int_eq(audit_count(g, mark, "action IN ('op.retry', 'op.cancel')"), 3);
	snprintf(where, sizeof(where),
		 "SELECT (status = 'PENDING')::int FROM outbox.ops WHERE id = %lld", failed);
	ck_assert_int_eq(pgtest_scalar(g->f.c, where), 1);
}

/*
 * The chart has the confirmed deposit: an interval with a NORMAL p50 and a
 * confirmation rate, once the loop sampled after it (every 5 s); the totals
 * count both decided ops.
 */
static void check_chart(struct gw *g)
{
	for (uint64_t end = ph_now_ms() + 60000;; ph_sleep_ms(500)) {
		struct resp r = req(g, "GET", "/api/console/overview", bearer(g->key_read), NULL);
		json_t *j = json_of(&r), *pt, *ops = json_object_get(j, "ops");
		bool seen = false;
		size_t i;

		free(r.body);
		ck_assert_int_eq(json_integer_value(json_object_get(ops, "confirmedTotal")), 1);
		ck_assert_int_eq(json_integer_value(json_object_get(ops, "failedTotal")), 1);
		json_array_foreach(json_object_get(j, "latency"), i, pt)
		{
			json_t *p50 = json_object_get(json_object_get(pt, "p50"), "NORMAL");

			ck_assert(json_is_null(json_object_get(json_object_get(pt, "p50"), "LOW")));
			if (json_is_real(p50) && json_real_value(p50) > 0 &&
			    json_real_value(json_object_get(pt, "confirmedPerS")) > 0)
				seen = true;
		}
		json_decref(j);
		if (seen)
			return;
		ck_assert_msg(ph_now_ms() < end, "no chart point has the confirmed op");
	}
}

START_TEST(test_console_in_chromium)
{
	struct gw g;
	char key_write[64], key_app[64];
	long long confirmed, failed, mark;

	gw_start(&g, "1000000", 2);
	make_key(&g, "reader", "outbox:read", g.key_read);
	make_key(&g, "writer", "outbox:read,outbox:write", key_write);
	make_key(&g, "app", "outbox:enqueue", key_app);
	check_headers(&g);
	check_overview_api(&g, key_app);
	make_ops(&g, key_app, &confirmed, &failed);
	mark = pgtest_scalar(g.f.c, "SELECT coalesce(max(id), 0) FROM outbox.audit_log");
	run_browser(&g, key_write, confirmed, failed);
	check_audit(&g, mark, confirmed, failed);
	check_chart(&g);
	check_executions(&g.f, false);
	stop(&g.f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("console");

	dh_add_case(s, "console_in_chromium", test_console_in_chromium, 600);
	return s;
}

int main(void)
{
	SRunner *r;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	curl_global_cleanup();
	return failed ? 1 : 0;
}
