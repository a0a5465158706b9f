/*
 * gateway_harness.h - what the gateway suites share (check_gateway.c,
 * check_console.c): outboxd + stellar-sim + PostgreSQL with the gateway on a
 * free loopback port, API keys made with `outboxctl keys create` and
 * awaited until the gateway knows them, one HTTP request with libcurl, and
 * the audit rows counted. A header of static inline helpers, like
 * dispatch_harness.h.
 */
#ifndef OUTBOX_TESTS_GATEWAY_HARNESS_H
#define OUTBOX_TESTS_GATEWAY_HARNESS_H

#include "tests/integration/dispatch_harness.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

struct gw {
	struct fixture f;
	int port;
	char key_read[64], key_write[64], key_enqueue[64], key_all[64], key_revoked[64];
	long long revoked_id;
};

struct resp {
	long status;
	char *body;
	size_t len;
	char retry_after[16];
};

static inline int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &n), 0);
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

static inline size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	char *b = realloc(r->body, r->len + size * n + 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b + r->len, p, size * n);
	r->body = b;
	r->len += size * n;
	r->body[r->len] = '\0';
	return size * n;
}

static inline size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;

	if (size * n > 13 && !strncasecmp(p, "Retry-After: ", 13))
		snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)(size * n - 13 - 2),
			 p + 13);
	return size * n;
}

/* One request; auth is a whole Authorization value or NULL. */
static inline struct resp req(struct gw *g, const char *method, const char *path, const char *auth,
			      const char *body)
{
	struct resp r = {0};
	char url[512], hdr[160];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", g->port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 150L);
	if (auth) {
		snprintf(hdr, sizeof(hdr), "Authorization: %s", auth);
		h = curl_slist_append(h, hdr);
	}
	if (body) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(c);
	ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (!r.body)
		r.body = strdup("");
	return r;
}

static inline const char *bearer(const char *key)
{
	static __thread char b[128];

	snprintf(b, sizeof(b), "Bearer %s", key);
	return b;
}

static inline json_t *json_of(const struct resp *r)
{
	json_error_t e;
	json_t *j = json_loads(r->body, 0, &e);

	ck_assert_msg(j, "not JSON (%ld): %.200s", r->status, r->body);
	return j;
}

/* status, and the body freed; prints the body when it is not the expected status */
static inline long expect(struct gw *g, const char *method, const char *path, const char *auth,
			  const char *body, long status)
{
	struct resp r = req(g, method, path, auth, body);

	ck_assert_msg(r.status == status, "%s %s: %ld, not %ld: %.300s", method, path, r.status,
		      status, r.body);
	free(r.body);
	return r.status;
}

static inline void wait_ready(struct gw *g)
{
	uint64_t end = ph_now_ms() + 30000;
	struct resp r;

	for (;;) {
		CURL *c = curl_easy_init();
		char url[128];
		long st = 0;

		snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", g->port);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
		r = (struct resp){0};
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
		if (curl_easy_perform(c) == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
		curl_easy_cleanup(c);
		free(r.body);
		if (st == 200)
			return;
		ck_assert_msg(ph_now_ms() < end, "the gateway never became ready");
		ph_sleep_ms(100);
	}
}

/* outboxctl keys create; waits until the gateway knows the key. */
static inline void make_key(struct gw *g, const char *name, const char *scopes, char out[64])
{
	char cmd[3000];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "OUTBOX_DATABASE_URL='%s' %s/outboxctl keys create --name %s --scopes %s "
		 "2>/dev/null",
		 g->f.db.conninfo, g->f.h.build, name, scopes);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(out, 64, p));
	ck_assert_int_eq(pclose(p), 0);
	out[strcspn(out, "\n")] = '\0';
	ck_assert_int_eq(strlen(out), 60);
	for (uint64_t end = ph_now_ms() + 20000;; ph_sleep_ms(50)) {
		struct resp r = req(g, "GET", "/api/admin/outbox/stats", bearer(out), NULL);
		long st = r.status;

		free(r.body);
		if (st != 401)
			return;
		ck_assert_msg(ph_now_ms() < end, "key %s never accepted", name);
	}
}

/* outboxd with its gateway on a free port; extra: more NAME=value settings (NULL-ended) or NULL. */
static inline void gw_start_env(struct gw *g, const char *rate, int n_signers,
				const char *const *extra)
{
	static char addr[64], ratev[64];
	const char *env[16] = {addr, ratev, "OUTBOX_HTTP_RATE_BURST=1000000", NULL};

	for (int i = 0, n = 3; extra && extra[i] && n < 15; i++)
		env[n++] = extra[i];
	memset(g, 0, sizeof(*g));
	g->f.n_signers = n_signers;
	g->port = free_port();
	snprintf(addr, sizeof(addr), "OUTBOX_HTTP_ADDR=127.0.0.1:%d", g->port);
	snprintf(ratev, sizeof(ratev), "OUTBOX_HTTP_RATE_LIMIT=%s", rate);
	if (strcmp(rate, "1000000"))
		env[2] = "OUTBOX_HTTP_RATE_BURST=2";
	start(&g->f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	wait_ready(g);
}

static inline void gw_start(struct gw *g, const char *rate, int n_signers)
{
	gw_start_env(g, rate, n_signers, NULL);
}

static inline void gw_keys(struct gw *g)
{
	char cmd[3000];

	make_key(g, "reader", "outbox:read", g->key_read);
	make_key(g, "writer", "outbox:write", g->key_write);
	make_key(g, "app", "outbox:enqueue", g->key_enqueue);
	make_key(g, "ops", "outbox:read,outbox:write,outbox:enqueue", g->key_all);
	make_key(g, "old", "outbox:read,outbox:write,outbox:enqueue", g->key_revoked);
	g->revoked_id =
		pgtest_scalar(g->f.c, "SELECT id FROM outbox.admin_keys WHERE name = 'old'");
	snprintf(cmd, sizeof(cmd),
		 "OUTBOX_DATABASE_URL='%s' %s/outboxctl keys revoke old >/dev/null",
		 g->f.db.conninfo, g->f.h.build);
	ck_assert_int_eq(system(cmd), 0);
	for (uint64_t end = ph_now_ms() + 20000;; ph_sleep_ms(50)) {
		struct resp r =
			req(g, "GET", "/api/admin/outbox/stats", bearer(g->key_revoked), NULL);
		long st = r.status;

		free(r.body);
		if (st == 401)
			break;
		ck_assert_msg(ph_now_ms() < end, "revocation never took effect");
	}
}

static inline char *enqueue_body(struct gw *g, const char *kind, const char *user, const char *rec,
				 int signer, const char *account, const char *amount,
				 const char *extra)
{
	static __thread char b[1024];

	snprintf(b, sizeof(b),
		 "{\"kind\": \"%s\", \"userId\": \"%s\", \"businessRecordId\": \"%s\", "
		 "\"signer\": \"%s\", \"payload\": {\"account\": \"%s\", \"amount\": \"%s\"}%s}",
		 kind, user, rec, g->f.signer[signer], account, amount, extra ? extra : "");
	return b;
}

static inline long long audit_count(struct gw *g, long long after, const char *where)
{
	char sql[600];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM outbox.audit_log WHERE id > %lld AND (%s)",
		 after, where);
	return pgtest_scalar(g->f.c, sql);
}

#endif
