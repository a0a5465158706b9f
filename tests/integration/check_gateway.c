/*
 * check_gateway.c - the HTTP gateway over real HTTP (libcurl) against a
 * running outboxd + stellar-sim + PostgreSQL: every endpoint, the whole auth
 * matrix and the audit rows it leaves, bad input, the rate limiter, the
 * synchronous enqueue answering CONFIRMED and FAILED, cancel and retry
 * racing the workers, /metrics through `promtool check metrics`, the role
 * in the supervisor (restart, off). Conditions are awaited with generous
 * deadlines; nothing is timed.
 */
#include "tests/integration/gateway_harness.h"

#include <pthread.h>
#include <signal.h>

/* ---- the auth matrix ---- */

struct route_case {
	const char *method, *path;
	unsigned scope; /* APIKEY_SCOPE_* bit it needs: 1 read, 2 write, 4 enqueue */
	long ok;        /* the answer with the scope */
};

START_TEST(test_auth_matrix)
{
	struct gw g;
	char get[64], why[64], body[1024];
	struct route_case rc[] = {
		{"GET", "/api/admin/outbox", 1, 200},
		{"GET", "/api/admin/outbox/stats", 1, 200},
		{"GET", get, 1, 200},
		{"GET", why, 1, 200},
		{"POST", "/api/admin/outbox/999999/retry", 2, 404},
		{"POST", "/api/admin/outbox/999999/cancel", 2, 404},
		{"POST", "/api/v1/ops", 4, 201},
	};
	const char *keys[4];
	unsigned scopes[4] = {1, 2, 4, 7};
	long long mark, calls = 0, refused = 0;
	struct resp r;

	gw_start(&g, "1000000", 2);
	gw_keys(&g);
	keys[0] = g.key_read, keys[1] = g.key_write, keys[2] = g.key_enqueue, keys[3] = g.key_all;
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "DEPOSIT", "u1", "m0", 0, g.f.signer[1], "10", NULL));
	ck_assert_int_eq(r.status, 201);
	free(r.body);
	long long op = pgtest_scalar(g.f.c, "SELECT max(id) FROM outbox.ops");
	snprintf(get, sizeof(get), "/api/admin/outbox/%lld", op);
	snprintf(why, sizeof(why), "/api/admin/outbox/%lld/why", op);
	mark = pgtest_scalar(g.f.c, "SELECT coalesce(max(id), 0) FROM outbox.audit_log");
	for (size_t i = 0; i < sizeof(rc) / sizeof(rc[0]); i++) {
		int n = 0;
		const char *b = strcmp(rc[i].method, "POST") ? NULL : "{}";

		if (!strcmp(rc[i].path, "/api/v1/ops"))
			b = body;
		/* no key, a malformed header, an unknown key, a revoked key: 401 */
		const char *bad[] = {
			NULL, "Basic dXNlcjpwYXNz",
			"Bearer obx_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			bearer(g.key_revoked)};
		for (int k = 0; k < 4; k++, calls++, refused++) {
			snprintf(body, sizeof(body), "%s",
				 enqueue_body(&g, "DEPOSIT", "u1", "m1", 0, g.f.signer[1], "10",
					      NULL));
			expect(&g, rc[i].method, rc[i].path, bad[k], b, 401);
		}
		for (int k = 0; k < 4; k++, calls++) {
			bool allowed = scopes[k] & rc[i].scope;
			char rec[32];

			snprintf(rec, sizeof(rec), "m-%zu-%d", i, n++);
			snprintf(body, sizeof(body), "%s",
				 enqueue_body(&g, "DEPOSIT", "u1", rec, 0, g.f.signer[1], "10",
					      NULL));
			expect(&g, rc[i].method, rc[i].path, bearer(keys[k]), b,
			       allowed ? rc[i].ok : 403);
			refused += !allowed;
		}
	}
	/* every call left one audit row; the refusals say so, with the key when it is known */
	ck_assert_int_eq(audit_count(&g, mark, "true"), calls);
	ck_assert_int_eq(audit_count(&g, mark, "result->>'status' IN ('401', '403')"), refused);
	ck_assert_int_eq(audit_count(&g, mark, "result->>'status' = '401'"), 4 * 7);
	char where[128];
	snprintf(where, sizeof(where), "key_id = %lld AND result->>'status' = '401'", g.revoked_id);
	ck_assert_int_eq(audit_count(&g, mark, where), 7);
	ck_assert_int_eq(audit_count(&g, mark, "result->>'status' = '403' AND key_id IS NOT NULL"),
			 refused - 4 * 7);
	ck_assert_int_eq(audit_count(&g, mark,
				     "action = 'op.enqueue' AND result->>'status' = '201' "
				     "AND actor IN ('app', 'ops') AND target IS NOT NULL"),
			 2);
	ck_assert_int_eq(audit_count(&g, mark, "action = 'api.why'"), 8);
	ck_assert_int_eq(audit_count(&g, mark,
				     "action = 'api.why' AND result->>'status' = '200' "
				     "AND actor IN ('reader', 'ops')"),
			 2);
	/* keys list names every key, never one's secret part */
	char cmd[3000], listed[8192] = "";
	snprintf(cmd, sizeof(cmd), "OUTBOX_DATABASE_URL='%s' %s/outboxctl keys list --json",
		 g.f.db.conninfo, g.f.h.build);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t got = fread(listed, 1, sizeof(listed) - 1, p);
	ck_assert_int_eq(pclose(p), 0);
	listed[got] = '\0';
	json_t *kl = json_loads(listed, 0, NULL);
	ck_assert_int_eq(json_array_size(kl), 5);
	json_decref(kl);
	ck_assert_ptr_null(strstr(listed, g.key_all + 17));
	ck_assert_ptr_nonnull(strstr(listed, "revokedAt"));
	/* the key never reaches the log */
	ck_assert_int_eq(audit_count(&g, mark, "request::text LIKE '%AAAAAAAAAAAA%'"), 0);
	ck_assert(!ph_log_contains(&g.f.h, g.key_all + 17));
	stop(&g.f);
}
END_TEST

/* ---- endpoints and bad input ---- */

static void check_error_shape(const struct resp *r, const char *code, const char *field)
{
	json_t *j = json_of(r), *e = json_object_get(j, "error");

	ck_assert_msg(json_is_object(e), "no error object: %s", r->body);
	ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
	ck_assert(json_is_string(json_object_get(e, "message")));
	if (field)
		ck_assert_str_eq(json_string_value(json_object_get(e, "field")), field);
	json_decref(j);
}

static void bad_input(struct gw *g)
{
	const char *k = bearer(g->key_all);
	char big[17000];
	struct resp r;

	r = req(g, "POST", "/api/v1/ops", k, "{\"kind\": ");
	ck_assert_int_eq(r.status, 400);
	check_error_shape(&r, "invalid", "body");
	free(r.body);
	r = req(g, "POST", "/api/v1/ops", k, "{\"kind\": \"DEPOSIT\", \"colour\": 1}");
	ck_assert_int_eq(r.status, 400);
	check_error_shape(&r, "invalid", "colour");
	free(r.body);
	r = req(g, "POST", "/api/v1/ops", k, "{\"kind\": 7}");
	ck_assert_int_eq(r.status, 400);
	check_error_shape(&r, "invalid", "kind");
	free(r.body);
	r = req(g, "POST", "/api/v1/ops", k,
		enqueue_body(g, "DEPOSIT", "u:x", "r", 0, g->f.signer[1], "10", NULL));
	ck_assert_int_eq(r.status, 400);
	check_error_shape(&r, "invalid", "userId");
	free(r.body);
	r = req(g, "POST", "/api/v1/ops", k,
		enqueue_body(g, "DEPOSIT", "u", "r", 0, g->f.signer[1], "-5", NULL));
	ck_assert_int_eq(r.status, 400);
	check_error_shape(&r, "invalid", "payload.amount");
	free(r.body);
	r = req(g, "GET", "/api/admin/outbox?status=BOGUS", k, NULL);
	ck_assert_int_eq(r.status, 400);
	check_error_shape(&r, "invalid", "status");
	free(r.body);
	r = req(g, "GET", "/api/admin/outbox?sort=id", k, NULL);
	check_error_shape(&r, "invalid", "sort");
	free(r.body);
	r = req(g, "GET", "/api/admin/outbox?limit=501", k, NULL);
	check_error_shape(&r, "invalid", "limit");
	free(r.body);
	expect(g, "GET", "/api/admin/outbox/abc", k, NULL, 400);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	expect(g, "POST", "/api/v1/ops", k, big, 413);
	expect(g, "GET", "/nope", NULL, NULL, 404);
	expect(g, "GET", "/api/admin/outbox/1/nope", k, NULL, 404);
	expect(g, "POST", "/metrics", NULL, "{}", 405);
	r = req(g, "GET", "/api/v1/ops", k, NULL);
	ck_assert_int_eq(r.status, 405);
	check_error_shape(&r, "method_not_allowed", NULL);
	free(r.body);
}

static void paging(struct gw *g)
{
	const char *k = bearer(g->key_read);
	char path[128];
	json_t *j;
	int seen = 0, pages = 0;
	const char *cursor = NULL;
	char cur[32] = "";

	do {
		snprintf(path, sizeof(path), "/api/admin/outbox?userId=pager&limit=2%s%s",
			 cursor ? "&cursor=" : "", cursor ? cursor : "");
		struct resp r = req(g, "GET", path, k, NULL);
		ck_assert_int_eq(r.status, 200);
		j = json_of(&r);
		free(r.body);
		seen += (int)json_array_size(json_object_get(j, "items"));
		pages++;
		cursor = json_string_value(json_object_get(j, "nextCursor"));
		if (cursor) {
			snprintf(cur, sizeof(cur), "%s", cursor);
			cursor = cur;
		}
		json_decref(j);
	} while (cursor && pages < 10);
	ck_assert_int_eq(seen, 5);
	ck_assert_int_eq(pages, 3);
	struct resp r = req(
		g, "GET", "/api/admin/outbox?kind=REBALANCE&priority=LOW&status=PENDING", k, NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	free(r.body);
	ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 0);
	json_decref(j);
}

START_TEST(test_endpoints)
{
	struct gw g;
	struct resp r;
	json_t *j, *op;
	char path[128], rec[16];
	long long id;

	gw_start(&g, "1000000", 2);
	gw_keys(&g);
	/* enqueue: 201, the same key again 200, other content 409 */
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "DEPOSIT", "alice", "d-1", 0, g.f.signer[1], "10", NULL));
	ck_assert_int_eq(r.status, 201);
	j = json_of(&r);
	free(r.body);
	op = json_object_get(j, "op");
	id = json_integer_value(json_object_get(op, "id"));
	ck_assert_str_eq(json_string_value(json_object_get(op, "priority")), "NORMAL");
	ck_assert(json_is_integer(json_object_get(j, "estFee")));
	ck_assert(json_object_get(j, "estConfirmationSeconds") != NULL);
	json_decref(j);
	expect(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
	       enqueue_body(&g, "DEPOSIT", "alice", "d-1", 0, g.f.signer[1], "10", NULL), 200);
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "DEPOSIT", "alice", "d-1", 0, g.f.signer[1], "11", NULL));
	ck_assert_int_eq(r.status, 409);
	check_error_shape(&r, "conflict", "payload.amount");
	free(r.body);
	/* get: the op, its attempts and events, once it ran */
	ck_assert(wait_terminal(&g.f, 30000));
	snprintf(path, sizeof(path), "/api/admin/outbox/%lld", id);
	r = req(&g, "GET", path, bearer(g.key_read), NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	free(r.body);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "op"), "status")),
			 "CONFIRMED");
	ck_assert_int_ge(json_array_size(json_object_get(j, "attempts")), 1);
	ck_assert_int_ge(json_array_size(json_object_get(j, "events")), 3);
	json_decref(j);
	expect(&g, "GET", "/api/admin/outbox/987654", bearer(g.key_read), NULL, 404);
	/* why: a halted user */
	pgtest_exec(g.f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) "
			   "VALUES ('halted', 'compliance review', 'alice@ops')");
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "DEPOSIT", "halted", "h-1", 1, g.f.signer[0], "10", NULL));
	ck_assert_int_eq(r.status, 201);
	j = json_of(&r);
	free(r.body);
	id = json_integer_value(json_object_get(json_object_get(j, "op"), "id"));
	json_decref(j);
	snprintf(path, sizeof(path), "/api/admin/outbox/%lld/why", id);
	r = req(&g, "GET", path, bearer(g.key_read), NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	free(r.body);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "reason"), "code")),
			 "user_halted");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "why")), "halted"));
	json_decref(j);
	/* stats: the halted op waits PENDING at NORMAL */
	r = req(&g, "GET", "/api/admin/outbox/stats", bearer(g.key_read), NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	free(r.body);
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(j, "depth"), "PENDING"), "NORMAL")),
		1);
	json_decref(j);
	/* cancel it; a second cancel is refused with the reason */
	snprintf(path, sizeof(path), "/api/admin/outbox/%lld/cancel", id);
	expect(&g, "POST", path, bearer(g.key_write), NULL, 200);
	r = req(&g, "POST", path, bearer(g.key_write), NULL);
	ck_assert_int_eq(r.status, 409);
	check_error_shape(&r, "conflict", NULL);
	ck_assert_ptr_nonnull(strstr(r.body, "CANCELLED"));
	free(r.body);
	/* paging and filters */
	for (int i = 0; i < 5; i++) {
		snprintf(rec, sizeof(rec), "p-%d", i);
		expect(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		       enqueue_body(&g, "DEPOSIT", "pager", rec, 0, g.f.signer[1], "10", NULL),
		       201);
	}
	paging(&g);
	bad_input(&g);
	/* public: health, readiness, conditions */
	expect(&g, "GET", "/healthz", NULL, NULL, 200);
	expect(&g, "GET", "/readyz", NULL, NULL, 200);
	r = req(&g, "GET", "/api/v1/network/conditions", NULL, NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	free(r.body);
	ck_assert(json_is_integer(json_object_get(j, "recommendedBaseFee")));
	ck_assert(json_is_integer(json_object_get(j, "aggressiveBaseFee")));
	ck_assert(json_is_string(json_object_get(j, "congestionLevel")));
	ck_assert(json_is_boolean(json_object_get(j, "stale")));
	ck_assert(json_object_get(j, "sampledAt") && json_object_get(j, "ttlMs") &&
		  json_object_get(j, "ledgerCapacityUsage"));
	ck_assert(json_is_object(json_object_get(json_object_get(j, "etaBands"), "CRITICAL")));
	json_decref(j);
	ph_stop_clean(&g.f.h); /* the drain: exit 0, nothing left */
	PQfinish(g.f.c);
	pgtest_teardown(&g.f.db);
	ph_teardown(&g.f.h);
}
END_TEST

/* ---- the rate limiter ---- */

START_TEST(test_rate_limit)
{
	struct gw g;
	struct resp r;
	int limited = 0;

	gw_start(&g, "1", 1);
	for (int i = 0; i < 10 && !limited; i++) {
		r = req(&g, "GET", "/api/v1/network/conditions", NULL, NULL);
		if (r.status == 429) {
			limited = 1;
			ck_assert_int_ge(atoi(r.retry_after), 1);
			check_error_shape(&r, "rate_limited", NULL);
		}
		free(r.body);
	}
	ck_assert_msg(limited, "no 429 with a rate of 1/s and a burst of 2");
	stop(&g.f);
}
END_TEST

/* ---- "wait": true ---- */

/* POST an enqueue that waits: 201 with the op CONFIRMED; its answer (the caller frees it). */
static json_t *post_confirmed(struct gw *g, const char *body)
{
	struct resp r = req(g, "POST", "/api/v1/ops", bearer(g->key_enqueue), body);
	json_t *j;

	ck_assert_int_eq(r.status, 201);
	j = json_of(&r);
	free(r.body);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "op"), "status")),
			 "CONFIRMED");
	return j;
}

START_TEST(test_wait_confirmed_and_failed)
{
	struct gw g;
	struct resp r;
	json_t *j;
	char poor[57];

	gw_start(&g, "1000000", 2);
	gw_keys(&g);
	j = post_confirmed(&g, enqueue_body(&g, "DEPOSIT", "w", "dep-1", 0, g.f.signer[1], "10",
					    ", \"wait\": true, \"waitTimeoutMs\": 60000"));
	ck_assert(json_is_false(json_object_get(j, "timedOut")));
	json_decref(j);
	pgtest_account(91, poor);
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "WITHDRAW", "w", "wd-1", 1, poor, "5000", ", \"wait\": true"));
	ck_assert_int_eq(r.status, 201);
	j = json_of(&r);
	free(r.body);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "op"), "status")),
			 "FAILED");
	json_decref(j);
	/* the same key again, already over: answered at once, 200 */
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "WITHDRAW", "w", "wd-1", 1, poor, "5000", ", \"wait\": true"));
	ck_assert_int_eq(r.status, 200);
	free(r.body);
	/* a halted user's op never ends: the wait times out, 202 */
	pgtest_exec(g.f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) "
			   "VALUES ('frozen', 'review', 'ops')");
	r = req(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		enqueue_body(&g, "DEPOSIT", "frozen", "f-1", 0, g.f.signer[1], "10",
			     ", \"wait\": true, \"waitTimeoutMs\": 1000"));
	ck_assert_int_eq(r.status, 202);
	j = json_of(&r);
	free(r.body);
	ck_assert(json_is_true(json_object_get(j, "timedOut")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "op"), "status")),
			 "PENDING");
	json_decref(j);
	check_executions(&g.f, false);
	stop(&g.f);
}
END_TEST

/* ---- cancel and retry racing the workers ---- */

#define RACE_OPS 40

struct racer {
	struct gw *g;
	long long first;
	int from, step;
	long status[RACE_OPS];
};

static void *race_cancel(void *arg)
{
	struct racer *rc = arg;
	char path[96];

	for (int i = rc->from; i < RACE_OPS; i += rc->step) {
		snprintf(path, sizeof(path), "/api/admin/outbox/%lld/cancel", rc->first + i);
		struct resp r = req(rc->g, "POST", path, bearer(rc->g->key_write), NULL);
		rc->status[i] = r.status;
		free(r.body);
	}
	return NULL;
}

START_TEST(test_cancel_retry_race)
{
	struct gw g;
	struct racer rc[2];
	pthread_t t[2];
	char rec[16], sql[256], poor[57], path[96];
	long long first;

	gw_start(&g, "1000000", 4);
	gw_keys(&g);
	first = pgtest_scalar(g.f.c, "SELECT coalesce(max(id), 0) + 1 FROM outbox.ops");
	for (int i = 0; i < RACE_OPS; i++) {
		snprintf(rec, sizeof(rec), "race-%d", i);
		expect(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
		       enqueue_body(&g, "DEPOSIT", "racer", rec, i % 4, g.f.signer[(i + 1) % 4],
				    "10", NULL),
		       201);
	}
	for (int k = 0; k < 2; k++) {
		memset(rc[k].status, 0, sizeof(rc[k].status));
		rc[k] = (struct racer){&g, first, k, 2, {0}};
		pthread_create(&t[k], NULL, race_cancel, &rc[k]);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	ck_assert(wait_terminal(&g.f, 60000));
	for (int i = 0; i < RACE_OPS; i++) {
		long st = rc[i % 2].status[i];

		snprintf(sql, sizeof(sql),
			 "SELECT (status = 'CANCELLED')::int FROM outbox.ops WHERE id = %lld",
			 first + i);
		ck_assert_msg(st == 200 || st == 409, "cancel of op %lld: %ld", first + i, st);
		ck_assert_int_eq(pgtest_scalar(g.f.c, sql), st == 200);
	}
	/* a worker holds the claim (its simulation delayed): the cancel wins, nothing runs */
	ph_sim_post(&g.f.h, "/debug/faults",
		    "{\"method\": \"simulateTransaction\", \"delay_ms\": 1500}");
	expect(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
	       enqueue_body(&g, "DEPOSIT", "racer", "held-claim", 2, g.f.signer[3], "10",
			    ", \"priority\": \"CRITICAL\""),
	       201);
	long long claimed = pgtest_scalar(g.f.c, "SELECT max(id) FROM outbox.ops");
	snprintf(sql, sizeof(sql),
		 "SELECT coalesce((SELECT in_flight FROM outbox.lanes WHERE signer = '%s'), -1)",
		 g.f.signer[2]);
	for (uint64_t end = ph_now_ms() + 30000; pgtest_scalar(g.f.c, sql) != 1; ph_sleep_ms(20))
		ck_assert_msg(ph_now_ms() < end, "never claimed");
	snprintf(path, sizeof(path), "/api/admin/outbox/%lld/cancel", claimed);
	expect(&g, "POST", path, bearer(g.key_write), NULL, 200);
	for (uint64_t end = ph_now_ms() + 30000; pgtest_scalar(g.f.c, sql) != 0; ph_sleep_ms(20))
		ck_assert_msg(ph_now_ms() < end, "the claim was never given back");
	ph_sim_post(&g.f.h, "/debug/faults", "{}");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM outbox.attempts WHERE op_id = %lld",
		 claimed);
	ck_assert_int_eq(pgtest_scalar(g.f.c, sql), 0);
	/* retry: two at once on a FAILED op, one wins */
	pgtest_account(92, poor);
	expect(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
	       enqueue_body(&g, "WITHDRAW", "racer", "wd-r", 0, poor, "5000", ", \"wait\": true"),
	       201);
	long long wd = pgtest_scalar(g.f.c, "SELECT max(id) FROM outbox.ops");
	ck_assert_int_eq(pgtest_scalar(g.f.c, "SELECT count(*) FROM outbox.ops WHERE status = "
					      "'FAILED'"),
			 1);
	snprintf(path, sizeof(path), "/api/admin/outbox/%lld/retry", wd);
	long a = expect(&g, "POST", path, bearer(g.key_write), NULL, 200);
	struct resp r2 = req(&g, "POST", path, bearer(g.key_write), NULL);
	ck_assert_msg(a == 200 && (r2.status == 409 || r2.status == 200), "second retry: %ld",
		      r2.status);
	free(r2.body);
	ck_assert(wait_terminal(&g.f, 60000));
	check_executions(&g.f, false);
	stop(&g.f);
}
END_TEST

/* ---- why ---- */

static struct gw g_why; /* the why cases' gateway (a Check case runs in its own process) */

static const char *why_code(struct gw *g, long long id, json_t **out)
{
	char path[96];
	struct resp r;
	json_t *j;

	snprintf(path, sizeof(path), "/api/admin/outbox/%lld/why", id);
	r = req(g, "GET", path, bearer(g->key_read), NULL);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	free(r.body);
	*out = j;
	return json_string_value(json_object_get(json_object_get(j, "reason"), "code"));
}

/*
 * With 4 s ledgers an op stays SUBMITTED a while: the next op of its signer
 * waits for it (signer_busy names it). An op made to back off says until when.
 */
START_TEST(test_why)
{
	static char addr[64];
	const char *env[] = {addr, "OUTBOX_HTTP_RATE_LIMIT=1000000", NULL};
	struct gw g;
	long long first, second;
	char sql[200];
	json_t *j;
	bool seen = false;

	memset(&g, 0, sizeof(g));
	g.f.n_signers = 2;
	g.port = free_port();
	snprintf(addr, sizeof(addr), "OUTBOX_HTTP_ADDR=127.0.0.1:%d", g.port);
	start(&g.f, "--ledger-ms 4000 --vault-contract " PH_CONTRACT, env);
	wait_ready(&g);
	make_key(&g, "reader", "outbox:read", g.key_read);
	enqueue(&g.f, "DEPOSIT", "w", "a-1", 0, g.f.signer[1], "10", NULL);
	first = pgtest_scalar(g.f.c, "SELECT max(id) FROM outbox.ops");
	enqueue(&g.f, "DEPOSIT", "w", "a-2", 0, g.f.signer[1], "10", NULL);
	second = first + 1;
	snprintf(sql, sizeof(sql),
		 "SELECT (status = 'SUBMITTED')::int FROM outbox.ops WHERE id = %lld", first);
	for (uint64_t end = ph_now_ms() + 60000; !seen; ph_sleep_ms(50)) {
		ck_assert_msg(ph_now_ms() < end, "never saw op %lld SUBMITTED and op %lld waiting",
			      first, second);
		if (pgtest_scalar(g.f.c, sql) != 1)
			continue;
		const char *code = why_code(&g, second, &j);
		/* only an answer given while the first op was still in flight counts */
		if (code && !strcmp(code, "signer_busy") && pgtest_scalar(g.f.c, sql) == 1) {
			ck_assert_int_eq(json_integer_value(json_object_get(
						 json_object_get(j, "reason"), "opId")),
					 first);
			ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "why")),
						     "busy with op"));
			seen = true;
		}
		json_decref(j);
	}
	ck_assert(wait_terminal(&g.f, 60000));
	/* a terminal op: nothing more is sent */
	ck_assert_str_eq(why_code(&g, first, &j), "terminal");
	json_decref(j);
	/* backoff: due in an hour */
	pgtest_exec(g.f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) "
			   "VALUES ('later', 'hold while the test sets the op up', 'test')");
	enqueue(&g.f, "DEPOSIT", "later", "b-1", 1, g.f.signer[0], "10", NULL);
	long long third = pgtest_scalar(g.f.c, "SELECT max(id) FROM outbox.ops");
	snprintf(
		sql, sizeof(sql),
		"UPDATE outbox.ops SET next_attempt_at = now() + interval '1 hour' WHERE id = %lld",
		third);
	pgtest_exec(g.f.c, sql);
	pgtest_exec(g.f.c, "DELETE FROM outbox.user_holds WHERE user_id = 'later'");
	ck_assert_str_eq(why_code(&g, third, &j), "backoff");
	ck_assert(json_object_get(json_object_get(j, "reason"), "until") != NULL);
	json_decref(j);
	stop(&g.f);
}
END_TEST

/* why's reason code for op id once it is want (polling), or fails naming the last. */
static json_t *why_until(struct gw *g, long long id, const char *want, const char *still_sql)
{
	const char *code = NULL;
	json_t *j = NULL;

	for (uint64_t end = ph_now_ms() + 90000;; ph_sleep_ms(100)) {
		code = why_code(g, id, &j);
		/* only an answer given while the condition held counts */
		if (code && !strcmp(code, want) && (!still_sql || pgtest_scalar(g->f.c, still_sql)))
			return j;
		ck_assert_msg(ph_now_ms() < end, "op %lld: why says %s, never %s", id,
			      code ? code : "nothing", want);
		json_decref(j);
	}
}

static long long reason_int(json_t *j, const char *k)
{
	return json_integer_value(json_object_get(json_object_get(j, "reason"), k));
}

/*
 * OUTBOX_GLOBAL_MAX_IN_FLIGHT=1 and ledgers that close only when the test
 * says: op 1 (signer 0) is in flight, its transaction lost by the network
 * (the sim's black hole). Op 2 (signer 1) waits for the global cap, op 3
 * (signer 1) behind op 2, op 4 (signer 0) for op 1. Then getLedgerEntries
 * fails and ledgers close past op 1's bounds: op 4 waits for the proof that
 * op 1's transaction expired unexecuted, which no answer can give yet.
 */
START_TEST(test_why_cap_queue_expiry)
{
	static char addr[64];
	const char *env[] = {addr, "OUTBOX_HTTP_RATE_LIMIT=1000000",
			     "OUTBOX_GLOBAL_MAX_IN_FLIGHT=1", NULL};
	long long op[5];
	char busy[160], pending[5][240];
	json_t *j;

	memset(&g_why, 0, sizeof(g_why));
	g_why.f.n_signers = 2;
	g_why.port = free_port();
	snprintf(addr, sizeof(addr), "OUTBOX_HTTP_ADDR=127.0.0.1:%d", g_why.port);
	start(&g_why.f, "--ledger-ms 3600000 --vault-contract " PH_CONTRACT, env);
	wait_ready(&g_why);
	make_key(&g_why, "reader", "outbox:read", g_why.key_read);
	ph_sim_post(&g_why.f.h, "/debug/faults",
		    "{\"method\": \"sendTransaction\", \"blackhole_rate\": 1}");
	enqueue(&g_why.f, "DEPOSIT", "u1", "q-1", 0, g_why.f.signer[1], "10", NULL);
	op[1] = pgtest_scalar(g_why.f.c, "SELECT max(id) FROM outbox.ops");
	snprintf(busy, sizeof(busy),
		 "SELECT (status = 'SUBMITTED')::int FROM outbox.ops WHERE id = %lld", op[1]);
	for (uint64_t end = ph_now_ms() + 60000; !pgtest_scalar(g_why.f.c, busy); ph_sleep_ms(50))
		ck_assert_msg(ph_now_ms() < end, "op %lld never SUBMITTED", op[1]);
	enqueue(&g_why.f, "DEPOSIT", "u2", "q-2", 1, g_why.f.signer[0], "10", NULL);
	enqueue(&g_why.f, "DEPOSIT", "u3", "q-3", 1, g_why.f.signer[0], "10", NULL);
	enqueue(&g_why.f, "DEPOSIT", "u4", "q-4", 0, g_why.f.signer[1], "10", NULL);
	for (int i = 2; i <= 4; i++) {
		op[i] = op[1] + i - 1;
		snprintf(pending[i], sizeof(pending[i]),
			 "SELECT ((SELECT status FROM outbox.ops WHERE id = %lld) = 'PENDING' AND "
			 "(SELECT status FROM outbox.ops WHERE id = %lld) = 'SUBMITTED')::int",
			 op[i], op[1]);
	}
	/* the cap: op 1 is the one transaction in flight */
	j = why_until(&g_why, op[2], "global_cap", pending[2]);
	ck_assert_int_eq(reason_int(j, "maxInFlight"), 1);
	ck_assert_int_ge(reason_int(j, "inFlight"), 1);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "why")), "global cap"));
	json_decref(j);
	/* queued behind op 2, which goes first */
	j = why_until(&g_why, op[3], "queued_behind", pending[3]);
	ck_assert_int_eq(reason_int(j, "opId"), op[2]);
	ck_assert_int_eq(reason_int(j, "ahead"), 1);
	json_decref(j);
	json_decref(why_until(&g_why, op[4], "signer_busy", pending[4]));
	/* past op 1's bounds, with no way to read its signer's sequence number */
	ph_sim_post(&g_why.f.h, "/debug/faults",
		    "{\"method\": \"getLedgerEntries\", \"http_5xx_rate\": 1}");
	for (uint64_t end = ph_now_ms() + 120000;; ph_sleep_ms(200)) {
		const char *code;

		ph_sim_post(&g_why.f.h, "/debug/close", "{\"ledgers\": 20}");
		code = why_code(&g_why, op[4], &j);
		if (code && !strcmp(code, "awaiting_expiry_proof") &&
		    pgtest_scalar(g_why.f.c, pending[4]))
			break;
		json_decref(j);
		ck_assert_msg(ph_now_ms() < end, "op %lld never awaited the expiry proof (%s)",
			      op[4], code ? code : "nothing");
	}
	ck_assert_int_eq(reason_int(j, "opId"), op[1]);
	ck_assert_ptr_nonnull(
		json_string_value(json_object_get(json_object_get(j, "reason"), "txHash")));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "why")), "expired"));
	json_decref(j);
	ph_sim_post(&g_why.f.h, "/debug/faults", "{}");
	stop(&g_why.f);
}
END_TEST

/*
 * Congestion high (background bids in the sim, the oracle told a ledger
 * holds 10): a LOW op is deferred by its claim, and why says until when.
 */
START_TEST(test_why_low_deferred)
{
	static char addr[64];
	const char *env[] = {addr,
			     "OUTBOX_HTTP_RATE_LIMIT=1000000",
			     "FEE_ORACLE_DWELL_MS=0",
			     "FEE_ORACLE_LEDGER_MAX_TX=10",
			     "FEE_ORACLE_POLL_MS=200",
			     "OUTBOX_LOW_DEFER_MS=60000",
			     "OUTBOX_LOW_MAX_DEFER_MS=600000",
			     NULL};
	char sql[160];
	long long id;
	json_t *j;

	memset(&g_why, 0, sizeof(g_why));
	g_why.f.n_signers = 2;
	g_why.port = free_port();
	snprintf(addr, sizeof(addr), "OUTBOX_HTTP_ADDR=127.0.0.1:%d", g_why.port);
	start(&g_why.f,
	      "--ledger-ms 250 --ledger-capacity 60 --fee-window-soroban 4 "
	      "--vault-contract " PH_CONTRACT,
	      env);
	wait_ready(&g_why);
	make_key(&g_why, "reader", "outbox:read", g_why.key_read);
	ph_sim_post(&g_why.f.h, "/debug/faults", "{\"background_fee_load\": 30}");
	for (uint64_t end = ph_now_ms() + 60000;; ph_sleep_ms(100)) {
		json_t *fee = ph_ctl(&g_why.f.h, "fee", NULL);
		const char *l =
			fee ? json_string_value(json_object_get(fee, "congestionLevel")) : NULL;
		bool high = l && (!strcmp(l, "high") || !strcmp(l, "severe"));

		json_decref(fee);
		if (high)
			break;
		ck_assert_msg(ph_now_ms() < end, "congestion never reached high");
	}
	enqueue(&g_why.f, "REBALANCE", "ops", "low-1", 0, NULL, "10", NULL);
	id = pgtest_scalar(g_why.f.c, "SELECT max(id) FROM outbox.ops");
	snprintf(sql, sizeof(sql),
		 "SELECT (status = 'PENDING' AND next_attempt_at > now())::int FROM outbox.ops "
		 "WHERE id = %lld",
		 id);
	/* the claim's deferral (a DEFERRED event, a due time): "until" says when;
	 * an answer given just before it may name the deferral to come instead */
	for (uint64_t end = ph_now_ms() + 90000;; ph_sleep_ms(100)) {
		const char *code = why_code(&g_why, id, &j);

		if (code && !strcmp(code, "low_deferred") &&
		    json_object_get(json_object_get(j, "reason"), "until") &&
		    pgtest_scalar(g_why.f.c, sql))
			break;
		json_decref(j);
		ck_assert_msg(ph_now_ms() < end, "op %lld: why never says it is deferred (%s)", id,
			      code ? code : "nothing");
	}
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(j, "why")), "deferred by congestion"));
	json_decref(j);
	ph_sim_post(&g_why.f.h, "/debug/faults", "{}");
	stop(&g_why.f);
}
END_TEST

/* ---- /metrics ---- */

/* The value of a sample line "<series> <value>", -1 when there is none. */
static long long metric(const char *text, const char *series)
{
	char want[300];
	const char *p;

	snprintf(want, sizeof(want), "\n%s ", series);
	p = strstr(text, want);
	return p ? strtoll(p + strlen(want), NULL, 10) : -1;
}

START_TEST(test_metrics_promtool)
{
	struct gw g;
	struct resp r;
	char path[200], cmd[400];
	FILE *o;

	ck_assert_msg(system("command -v promtool >/dev/null") == 0,
		      "promtool is missing (Debian package prometheus, ops/lib/deps.sh)");
	gw_start(&g, "1000000", 2);
	gw_keys(&g);
	expect(&g, "POST", "/api/v1/ops", bearer(g.key_enqueue),
	       enqueue_body(&g, "DEPOSIT", "m", "d-1", 0, g.f.signer[1], "10", ", \"wait\": true"),
	       201);
	r = req(&g, "GET", "/metrics", NULL, NULL);
	ck_assert_int_eq(r.status, 200);
	snprintf(path, sizeof(path), "%s/metrics.txt", g.f.h.dir);
	o = fopen(path, "w");
	fputs(r.body, o);
	fclose(o);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	ck_assert_msg(system(cmd) == 0, "promtool check metrics found problems (%s)", path);
	ck_assert_int_eq(metric(r.body, "outbox_ops_total{kind=\"DEPOSIT\",priority=\"NORMAL\","
					"outcome=\"confirmed\"}"),
			 1);
	ck_assert_int_eq(metric(r.body, "outbox_op_latency_seconds_count{kind=\"DEPOSIT\"}"), 1);
	ck_assert_int_eq(metric(r.body, "outbox_dispatch_seconds_count{priority=\"NORMAL\"}"), 1);
	ck_assert_int_eq(metric(r.body, "outbox_dispatch_seconds_count{priority=\"CRITICAL\"}"), 0);
	/* the dispatch's steps: one simulate and one write-ahead row for the one op */
	ck_assert_int_eq(metric(r.body, "outbox_simulate_seconds_count"), 1);
	ck_assert_int_eq(metric(r.body, "outbox_attempt_write_seconds_count"), 1);
	ck_assert_int_ge(metric(r.body, "outbox_claim_seconds_count"), 1);
	ck_assert_int_ge(metric(r.body, "outbox_queue_depth{status=\"PENDING\",priority=\"LOW\"}"),
			 0);
	ck_assert_int_ge(metric(r.body, "outbox_stuck_submitted"), 0);
	ck_assert_int_ge(metric(r.body, "fee_oracle_recommended_base_fee"), 100);
	ck_assert_ptr_nonnull(strstr(r.body, "fee_oracle_clamp_total{bound=\"min\"}"));
	ck_assert_ptr_nonnull(strstr(r.body, "outbox_max_fee_hit_total{priority=\"CRITICAL\"}"));
	ck_assert_ptr_nonnull(strstr(r.body, "outbox_fee_bump_total{kind=\"WITHDRAW\"}"));
	ck_assert_int_ge(metric(r.body, "outbox_http_requests_total"), 1);
	free(r.body);
	stop(&g.f);
}
END_TEST

/* ---- the role in the supervisor ---- */

START_TEST(test_role_restart_and_off)
{
	struct gw g;
	json_t *s;
	long long pid;

	gw_start(&g, "1000000", 1);
	s = ph_wait_all_running(&g.f.h, 4, 20000); /* oracle, gateway, two workers */
	pid = ph_int(ph_proc(s, "gateway", 0), "pid");
	json_decref(s);
	ck_assert_int_gt(pid, 0);
	kill((pid_t)pid, SIGKILL);
	ph_wait_respawn(&g.f.h, "gateway", 0, pid, 20000, NULL);
	wait_ready(&g);
	ph_stop_clean(&g.f.h);
	/* OUTBOX_HTTP_ADDR=off: no gateway */
	const char *env[] = {"OUTBOX_HTTP_ADDR=off", NULL};
	launch(&g.f, env);
	s = ph_wait_all_running(&g.f.h, 3, 20000);
	ck_assert_ptr_null(ph_proc(s, "gateway", 0));
	json_decref(s);
	stop(&g.f);
}
END_TEST

/*
 * An op enqueued over HTTP wakes its worker through the gateway's NEW_OP
 * hint (ops/gateway/wake.c). With the sweep at 60 s and the oracle stopped
 * (SIGSTOP: no lane watcher; the heartbeat timeout pushed out, so the
 * supervisor leaves it be), the workers idle, only that hint can get the
 * NORMAL op claimed: the synchronous enqueue answers CONFIRMED, and the
 * gateway counts the hint it pushed.
 */
START_TEST(test_enqueue_wakes_worker)
{
	const char *env[] = {"OUTBOX_DISPATCH_INTERVAL_MS=60000",
			     "OUTBOX_HEARTBEAT_TIMEOUT_MS=600000", NULL};
	struct gw g;
	json_t *s;
	long long oracle;

	gw_start_env(&g, "1000000", 2, env);
	gw_keys(&g);
	s = ph_ctl(&g.f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	oracle = ph_int(ph_proc(s, "oracle", 0), "pid");
	json_decref(s);
	ck_assert_int_gt(oracle, 1);
	ck_assert_int_eq(kill((pid_t)oracle, SIGSTOP), 0);
	ph_sleep_ms(3000); /* idle: the workers stop counting on the watcher */
	json_decref(post_confirmed(&g, enqueue_body(&g, "DEPOSIT", "h", "woken-1", 0, g.f.signer[1],
						    "10",
						    ", \"wait\": true, \"waitTimeoutMs\": 30000")));
	s = ph_ctl(&g.f.h, "stats", NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_ge(ph_counter(ph_proc(s, "gateway", 0), "outbox_hints_sent_total"), 1);
	json_decref(s);
	ck_assert_int_eq(kill((pid_t)oracle, SIGCONT), 0);
	stop(&g.f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gateway");

	dh_add_case(s, "auth_matrix", test_auth_matrix, 240);
	dh_add_case(s, "endpoints", test_endpoints, 240);
	dh_add_case(s, "rate_limit", test_rate_limit, 120);
	dh_add_case(s, "wait", test_wait_confirmed_and_failed, 240);
	dh_add_case(s, "cancel_retry_race", test_cancel_retry_race, 300);
	dh_add_case(s, "why", test_why, 240);
	dh_add_case(s, "why_cap_queue_expiry", test_why_cap_queue_expiry, 300);
	dh_add_case(s, "why_low_deferred", test_why_low_deferred, 240);
	dh_add_case(s, "metrics_promtool", test_metrics_promtool, 240);
	dh_add_case(s, "role", test_role_restart_and_off, 240);
	dh_add_case(s, "enqueue_wakes_worker", test_enqueue_wakes_worker, 240);
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
