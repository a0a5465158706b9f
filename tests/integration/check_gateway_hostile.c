/*
 * check_gateway_hostile.c - hostile HTTP against a running gateway, over
 * raw sockets (no HTTP client library would send this): oversized request
 * lines, headers and bodies, absurd Content-Lengths, truncated requests,
 * invalid UTF-8 and NUL bytes, pipelined garbage, a slow drip of headers
 * and of a body, idle connections beyond the per-address and global limits.
 *
 * After each attack the gateway answers a well-formed request, and at the
 * end of every case it is the same process (same pid: never restarted) and
 * holds no more descriptors than when the case began. Other clients come
 * from other loopback addresses (127.0.0.2, ...), so the per-address
 * limits meet only the attacker. Conditions are awaited with generous
 * deadlines; no duration is asserted.
 */
#include "tests/integration/dispatch_harness.h"
#include "tests/support/check_main.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

struct hs {
	struct fixture f;
	int port;
	long long pid; /* the gateway's */
	int fds;       /* its descriptors once ready */
	char key[64];
};

/* ---- raw sockets ---- */

/* A connection from src (a loopback address), -1 when refused. */
static int hs_try_connect(struct hs *h, const char *src)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)h->port)};
	struct sockaddr_in s = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	inet_pton(AF_INET, src, &s.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&s, sizeof(s)), 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int hs_connect(struct hs *h, const char *src)
{
	int fd = hs_try_connect(h, src);

	ck_assert_msg(fd >= 0, "connect from %s: %s", src, strerror(errno));
	return fd;
}

/* Send it all; false when the gateway closed the connection meanwhile. */
static bool hs_send(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Whether buf holds a whole response (a head, then Content-Length bytes). */
static bool response_whole(const char *buf, size_t len)
{
	const char *end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "\r\nContent-Length:");

	return end && cl && cl < end &&
	       len >= (size_t)(end + 4 - buf) + strtoull(cl + 17, NULL, 10);
}

/*
 * Read until the gateway closes (or, with first, until its first response
 * is whole); false when timeout_ms passes first.
 */
static bool hs_read(int fd, char *buf, size_t cap, size_t *len, bool first, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	*len = 0;
	buf[0] = '\0';
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(end - ph_now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			return false;
		r = recv(fd, buf + *len, cap - 1 - *len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) /* EOF, or a reset: closed either way */
			return true;
		*len += (size_t)r;
		buf[*len] = '\0';
		if (first && response_whole(buf, *len))
			return true;
		if (*len == cap - 1)
			*len = 0; /* only the end matters past that: keep reading */
	}
}

static bool hs_read_all(int fd, char *buf, size_t cap, size_t *len, unsigned timeout_ms)
{
	return hs_read(fd, buf, cap, len, false, timeout_ms);
}

/* The status of the first response in buf, 0 when there is none. */
static int status_of(const char *buf)
{
	int st = 0;

	if (sscanf(buf, "HTTP/1.%*d %d", &st) != 1)
		return 0;
	return st;
}

/* The body of the first response (after the blank line), or "". */
static const char *body_of(const char *buf)
{
	const char *b = strstr(buf, "\r\n\r\n");

	return b ? b + 4 : "";
}

struct answer {
	int status; /* 0: closed without an answer */
	char text[65536];
};

/*
 * Send raw from src; the first response (or until the gateway closes,
 * with all). The client never half-closes: libmicrohttpd takes that for a
 * client gone and drops a request still being answered.
 */
static void hs_send_read(struct hs *h, const char *src, const void *raw, size_t n, bool all,
			 struct answer *a)
{
	int fd = hs_connect(h, src);
	size_t len;

	hs_send(fd, raw, n); /* it may close before reading it all: the answer says */
	ck_assert_msg(hs_read(fd, a->text, sizeof(a->text), &len, !all, 120000),
		      "the gateway neither answered nor closed within 120 s");
	close(fd);
	a->status = status_of(a->text);
}

static void hs_raw(struct hs *h, const char *src, const void *raw, size_t n, struct answer *a)
{
	hs_send_read(h, src, raw, n, false, a);
}

static void hs_raw_str(struct hs *h, const char *raw, struct answer *a)
{
	hs_raw(h, "127.0.0.1", raw, strlen(raw), a);
}

/* GET /healthz from src answers 200. */
static void hs_served(struct hs *h, const char *src)
{
	static const char q[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static struct answer a;

	hs_raw(h, src, q, sizeof(q) - 1, &a);
	ck_assert_msg(a.status == 200, "GET /healthz from %s: %d: %.300s", src, a.status, a.text);
}

/* GET /healthz from src answers 200, once the gateway has noticed closes. */
static void hs_served_eventually(struct hs *h, const char *src)
{
	static const char q[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static struct answer a;

	for (uint64_t end = ph_now_ms() + 120000;; ph_sleep_ms(200)) {
		hs_raw(h, src, q, sizeof(q) - 1, &a);
		if (a.status == 200)
			return;
		ck_assert_msg(ph_now_ms() < end, "GET /healthz from %s: never served: %d", src,
			      a.status);
	}
}

/* The error body of an answer: JSON with error.code (and error.field). */
static void hs_error(const struct answer *a, int status, const char *code, const char *field)
{
	json_error_t e;
	json_t *j, *err;

	ck_assert_msg(a->status == status, "%d, not %d: %.400s", a->status, status, a->text);
	j = json_loads(body_of(a->text), 0, &e);
	ck_assert_msg(j, "not JSON (%s): %.400s", e.text, a->text);
	err = json_object_get(j, "error");
	ck_assert_str_eq(json_string_value(json_object_get(err, "code")), code);
	if (field)
		ck_assert_str_eq(json_string_value(json_object_get(err, "field")), field);
	json_decref(j);
}

/* ---- the gateway ---- */

static int free_port(void)
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

static int fd_count(long long pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%lld/fd", pid);
	dir = opendir(path);
	ck_assert_msg(dir, "the gateway (pid %lld) is gone", pid);
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

static long long gateway_pid(struct hs *h)
{
	json_t *s = ph_wait_all_running(&h->f.h, 4, 30000); /* oracle, gateway, two workers */
	long long pid = ph_int(ph_proc(s, "gateway", 0), "pid");

	json_decref(s);
	ck_assert_int_gt(pid, 0);
	return pid;
}

static void wait_ready(struct hs *h)
{
	static const char q[] = "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static struct answer a;
	int fd;

	for (uint64_t end = ph_now_ms() + 60000;; ph_sleep_ms(100)) {
		ck_assert_msg(ph_now_ms() < end, "the gateway never became ready");
		if ((fd = hs_try_connect(h, "127.0.0.2")) < 0)
			continue; /* not listening yet */
		close(fd);
		hs_raw(h, "127.0.0.2", q, sizeof(q) - 1, &a);
		if (a.status == 200)
			return;
	}
}

/* An API key made with outboxctl, known to the gateway once this returns. */
static void make_key(struct hs *h)
{
	char cmd[3000], q[256];
	static struct answer a;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "OUTBOX_DATABASE_URL='%s' %s/outboxctl keys create --name hostile --scopes "
		 "outbox:read,outbox:write,outbox:enqueue 2>/dev/null",
		 h->f.db.conninfo, h->f.h.build);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(h->key, sizeof(h->key), p));
	ck_assert_int_eq(pclose(p), 0);
	h->key[strcspn(h->key, "\n")] = '\0';
	snprintf(q, sizeof(q),
		 "GET /api/admin/outbox/stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
		 "%s\r\nConnection: close\r\n\r\n",
		 h->key);
	for (uint64_t end = ph_now_ms() + 30000;; ph_sleep_ms(100)) {
		hs_raw(h, "127.0.0.2", q, strlen(q), &a);
		if (a.status == 200)
			return;
		ck_assert_msg(ph_now_ms() < end, "the key is never accepted: %.200s", a.text);
	}
}

static void hs_start(struct hs *h, const char *const *limits)
{
	static char addr[64];
	const char *env[16] = {addr, "OUTBOX_HTTP_RATE_LIMIT=1000000",
			       "OUTBOX_HTTP_RATE_BURST=1000000"};
	int n = 3;

	memset(h, 0, sizeof(*h));
	h->f.n_signers = 2;
	h->port = free_port();
	snprintf(addr, sizeof(addr), "OUTBOX_HTTP_ADDR=127.0.0.1:%d", h->port);
	for (; *limits && n < 15; limits++)
		env[n++] = *limits;
	start(&h->f, "--ledger-ms 300 --vault-contract " PH_CONTRACT, env);
	wait_ready(h);
	make_key(h);
	h->pid = gateway_pid(h);
	h->fds = fd_count(h->pid);
}

/*
 * The end of every case: the gateway still serves, is the same process,
 * and its descriptors are back to what it held at the start (the
 * connections of the attacks are all closed).
 */
static void hs_end(struct hs *h)
{
	int fds = 0;

	hs_served_eventually(h, "127.0.0.1");
	ck_assert_int_eq(gateway_pid(h), h->pid);
	for (uint64_t end = ph_now_ms() + 60000;; ph_sleep_ms(200)) {
		fds = fd_count(h->pid);
		if (fds <= h->fds)
			break;
		ck_assert_msg(ph_now_ms() < end,
			      "the gateway holds %d descriptors, %d at the start", fds, h->fds);
	}
	ck_assert_int_eq(ph_log_count(&h->f.h, "restart in"), 0); /* no child died */
	stop(&h->f);
}

/* A buffer of n bytes of c, NUL-terminated (freed by the caller). */
static char *filled(size_t n, char c)
{
	char *b = malloc(n + 1);

	ck_assert_ptr_nonnull(b);
	memset(b, c, n);
	b[n] = '\0';
	return b;
}

/* What libmicrohttpd answers when a request's head does not fit its buffer. */
static void head_refused(const struct answer *a, const char *what)
{
	ck_assert_msg(a->status == 414 || a->status == 431 || a->status == 0,
		      "%s: %d, not 414, 431 or a close: %.300s", what, a->status, a->text);
}

/*
 * Oversized: the request line, one header, many headers (past the
 * connection's 64 KiB buffer: 414/431 or a close); a body announced too
 * large (413 before any of it is read), sent too large without a length
 * (chunked: 413 once 16 KiB are passed, a close past 256 KiB), absurd and
 * negative Content-Lengths.
 */
static void oversized(struct hs *h)
{
	char *big = filled(100000, 'a'), *req = malloc(300000), *chunk;
	static struct answer a;
	size_t n;

	snprintf(req, 300000, "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n", big);
	hs_raw_str(h, req, &a);
	head_refused(&a, "a 100 kB request line");
	snprintf(req, 300000, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big);
	hs_raw_str(h, req, &a);
	head_refused(&a, "a 100 kB header");
	n = (size_t)snprintf(req, 300000, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
	for (int i = 0; i < 5000; i++)
		n += (size_t)snprintf(req + n, 300000 - n, "X-H%d: %.10s\r\n", i, big);
	snprintf(req + n, 300000 - n, "\r\n");
	hs_raw_str(h, req, &a);
	head_refused(&a, "5000 headers");
	hs_served(h, "127.0.0.2");

	/* a body announced too large: 413 at once, none of it read */
	snprintf(req, 300000,
		 "POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
		 "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
		 h->key);
	hs_raw_str(h, req, &a);
	hs_error(&a, 413, "too_large", NULL);
	/* chunked, 20 kB: read, found too large, refused (audited) */
	chunk = filled(20000, ' ');
	snprintf(req, 300000,
		 "POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
		 "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n%zx\r\n%s\r\n0\r\n\r\n",
		 h->key, strlen(chunk), chunk);
	hs_raw_str(h, req, &a);
	hs_error(&a, 413, "too_large", NULL);
	free(chunk);
	/* chunked, 1 MB: past what is discarded, the connection is closed */
	{
		int fd = hs_connect(h, "127.0.0.1");
		char head[256], end[8192];
		size_t len;
		bool sent = true;

		chunk = filled(65536, ' ');
		snprintf(head, sizeof(head),
			 "POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
			 "Transfer-Encoding: chunked\r\n\r\n",
			 h->key);
		hs_send(fd, head, strlen(head));
		for (int i = 0; i < 16 && sent; i++) {
			sent = hs_send(fd, "10000\r\n", 7) && hs_send(fd, chunk, 65536) &&
			       hs_send(fd, "\r\n", 2);
		}
		ck_assert_msg(hs_read_all(fd, end, sizeof(end), &len, 120000),
			      "a 1 MB chunked body: the connection is never closed");
		close(fd);
		free(chunk);
	}
	/* absurd lengths: libmicrohttpd's 400, or our 413; never a crash */
	for (int i = 0; i < 4; i++) {
		static const char *const cls[] = {"99999999999999999999999999", "-1",
						  "18446744073709551615", "1e9"};

		snprintf(req, 300000,
			 "POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
			 "Content-Length: %s\r\n\r\n{}",
			 h->key, cls[i]);
		hs_raw_str(h, req, &a);
		ck_assert_msg(a.status == 400 || a.status == 413,
			      "Content-Length %s: %d, not 400 or 413: %.300s", cls[i], a.status,
			      a.text);
	}
	hs_served(h, "127.0.0.2");
	free(req);
	free(big);
}

/* Truncated: the client goes mid-line, mid-header, mid-body. */
static void truncated(struct hs *h)
{
	static const char *const cuts[] = {
		"GET /heal",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Half: abc",
		"POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"kind\":",
		("POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "40\r\n{\"kind\""),
	};

	for (int i = 0; i < 4; i++) {
		int fd = hs_connect(h, "127.0.0.1");

		hs_send(fd, cuts[i], strlen(cuts[i]));
		close(fd);
	}
	/* and the same with a reset instead of a close */
	for (int i = 0; i < 4; i++) {
		int fd = hs_connect(h, "127.0.0.1");
		struct linger l = {.l_onoff = 1, .l_linger = 0};

		hs_send(fd, cuts[i], strlen(cuts[i]));
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(fd);
	}
	hs_served(h, "127.0.0.2");
}

/* Invalid UTF-8 and NUL bytes: 400 naming the field, as JSON; 404 for a path. */
static void bad_bytes(struct hs *h)
{
	static const struct {
		const char *body;
		size_t len;
		const char *field;
	} bodies[] = {
		{"{\"kind\": \"DEP\xff\xfeOSIT\"}", 21, "body"},
		{"{\"kind\": \"DEP\0OSIT\"}", 20, "body"},
		{"{\"kind\": \"DEP\\u0000OSIT\"}", 25, "body"},
		{"{\"k\xc3\x28\": 1}", 11, "body"},
		{"\0\0\0\0", 4, "body"},
		{"{\"kind\": \"\xed\xa0\x80\"}", 15, "body"}, /* a UTF-16 surrogate */
	};
	char req[1024];
	static struct answer a;

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		int n = snprintf(req, sizeof(req),
				 "POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
				 "%s\r\nContent-Type: application/json\r\nContent-Length: "
				 "%zu\r\nConnection: close\r\n\r\n",
				 h->key, bodies[i].len);

		memcpy(req + n, bodies[i].body, bodies[i].len);
		hs_raw(h, "127.0.0.1", req, (size_t)n + bodies[i].len, &a);
		hs_error(&a, 400, "invalid", bodies[i].field);
	}
	/* in a filter: 400 naming it (PostgreSQL would refuse the bytes) */
	snprintf(req, sizeof(req),
		 "GET /api/admin/outbox?userId=%%C3%%28%%FF HTTP/1.1\r\nHost: x\r\n"
		 "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
		 h->key);
	hs_raw_str(h, req, &a);
	hs_error(&a, 400, "invalid", "userId");
	snprintf(req, sizeof(req),
		 "GET /api/admin/outbox?st%%FFatus=1 HTTP/1.1\r\nHost: x\r\n"
		 "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
		 h->key);
	hs_raw_str(h, req, &a);
	hs_error(&a, 400, "invalid", "st?atus");
	/* in a path: the 404 quotes it, cleaned */
	hs_raw_str(h, "GET /x%FF%C3%28%00y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &a);
	hs_error(&a, 404, "not_found", NULL);
	hs_raw_str(h,
		   "GET /api/admin/outbox/1%00/why HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
		   "x\xff\r\nConnection: close\r\n\r\n",
		   &a);
	ck_assert_msg(a.status == 400 || a.status == 401, "%d: %.300s", a.status, a.text);
	hs_served(h, "127.0.0.2");
}

/* Send raw and count the 200s in all the gateway answers until it closes. */
static int answers_200(struct hs *h, const char *raw)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int fd = hs_connect(h, "127.0.0.1"), n = 0;

	ck_assert_ptr_nonnull(buf);
	hs_send(fd, raw, strlen(raw));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		ck_assert_msg(poll(&p, 1, 120000) == 1, "pipelined requests: never closed");
		if (len + 4096 + 1 > cap) {
			buf = realloc(buf, cap *= 2);
			ck_assert_ptr_nonnull(buf);
		}
		r = recv(fd, buf + len, 4096, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	for (const char *q = buf; (q = strstr(q, "HTTP/1.1 200")); q++)
		n++;
	close(fd);
	free(buf);
	return n;
}

/* Garbage, alone and after a good request on the same connection. */
static void garbage(struct hs *h)
{
	static const char tls[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n";
	static const char pipelined[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
					"\x01\x02\x03 \xff\xfe /%%% HTTP/9.9\r\n:::\r\n\r\n"
					"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	static struct answer a;
	char *many;

	hs_raw(h, "127.0.0.1", tls, sizeof(tls) - 1, &a);
	ck_assert_msg(a.status == 0 || a.status == 400, "a TLS hello: %d", a.status);
	hs_raw(h, "127.0.0.1", pipelined, sizeof(pipelined) - 1, &a);
	ck_assert_msg(a.status == 200, "the good request before the garbage: %d: %.300s", a.status,
		      a.text);
	/* 200 pipelined requests, the last one garbage */
	many = malloc(200 * 64);
	ck_assert_ptr_nonnull(many);
	many[0] = '\0';
	for (int i = 0; i < 199; i++)
		strcat(many, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	strcat(many, "\xff\xff\xff\r\n\r\n");
	ck_assert_int_eq(answers_200(h, many), 199);
	free(many);
	hs_served(h, "127.0.0.2");
}

START_TEST(test_oversized_truncated_garbage)
{
	static const char *const limits[] = {NULL};
	struct hs h;

	hs_start(&h, limits);
	oversized(&h);
	truncated(&h);
	bad_bytes(&h);
	garbage(&h);
	hs_end(&h);
}
END_TEST

/*
 * Slow drip: headers a byte a second, then a body a byte a second, with
 * OUTBOX_HTTP_TIMEOUT_S=3. Each byte is activity, so libmicrohttpd's
 * inactivity timeout never fires: the request deadline closes them. Other
 * clients are served all along.
 */
static void drip(struct hs *h, const char *head)
{
	int fd = hs_connect(h, "127.0.0.1");
	char buf[4096];
	size_t len;
	int served = 0;
	uint64_t end = ph_now_ms() + 180000;

	ck_assert(hs_send(fd, head, strlen(head)));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		ck_assert_msg(ph_now_ms() < end, "a dripping request is never closed");
		if (!hs_send(fd, "a", 1))
			break; /* closed */
		hs_served(h, "127.0.0.2");
		served++;
		if (poll(&p, 1, 1000) == 1)
			break; /* closed (or answered: checked below) */
	}
	hs_read_all(fd, buf, sizeof(buf), &len, 120000);
	ck_assert_msg(status_of(buf) != 200, "a request that never arrived whole was answered");
	close(fd);
	ck_assert_int_gt(served, 0);
}

START_TEST(test_slow_drip)
{
	static const char *const limits[] = {"OUTBOX_HTTP_TIMEOUT_S=3", NULL};
	char head[256];
	struct hs h;

	hs_start(&h, limits);
	drip(&h, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Drip: ");
	snprintf(head, sizeof(head),
		 "POST /api/v1/ops HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
		 "Content-Length: 10000\r\n\r\n",
		 h.key);
	drip(&h, head);
	ck_assert(ph_log_contains(&h.f.h, "did not arrive whole"));
	hs_end(&h);
}
END_TEST

/* Open n idle connections from src; how many the gateway closed within the wait. */
static int idle_open(struct hs *h, const char *src, int *fds, int n)
{
	for (int i = 0; i < n; i++)
		fds[i] = hs_connect(h, src);
	return n;
}

/* Whether the gateway closed fd (a read sees EOF or a reset), waiting up to ms. */
static bool closed_by_gateway(int fd, unsigned ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&p, 1, (int)ms) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/*
 * Idle connections with OUTBOX_HTTP_MAX_CONNS_PER_IP=16 and
 * OUTBOX_HTTP_MAX_CONNS=64 (the timeout is long: nothing here times out).
 * The 17th connection of an address and beyond are closed at once; other
 * addresses are served. Past 64 in all, libmicrohttpd accepts no more:
 * new connections wait in the listen backlog and are served once some
 * close.
 */
START_TEST(test_idle_limits)
{
	static const char *const limits[] = {"OUTBOX_HTTP_TIMEOUT_S=600",
					     "OUTBOX_HTTP_MAX_CONNS_PER_IP=16",
					     "OUTBOX_HTTP_MAX_CONNS=64", NULL};
	static const char q[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	int one[24], more[4][16], closed = 0, waiting;
	char buf[4096];
	size_t len;
	struct hs h;

	hs_start(&h, limits);
	idle_open(&h, "127.0.0.1", one, 24);
	/* exactly 8 are closed: the limit, not a timeout */
	for (uint64_t end = ph_now_ms() + 120000; closed < 8; ph_sleep_ms(100)) {
		closed = 0;
		for (int i = 0; i < 24; i++)
			closed += one[i] >= 0 && closed_by_gateway(one[i], 0);
		ck_assert_msg(ph_now_ms() < end, "%d of 24 idle connections closed, not 8", closed);
	}
	ck_assert_int_eq(closed, 8);
	hs_served(&h, "127.0.0.2");
	/* every slot taken: 16 each from four more addresses, 80 in all */
	for (int a = 0; a < 4; a++) {
		char src[16];

		snprintf(src, sizeof(src), "127.0.0.%d", 3 + a);
		idle_open(&h, src, more[a], 16);
	}
	/* past 64, libmicrohttpd accepts no more: they wait in the listen
	 * backlog, and so does a new client's request */
	waiting = hs_connect(&h, "127.0.0.7");
	ck_assert(hs_send(waiting, q, sizeof(q) - 1));
	ck_assert_msg(!hs_read(waiting, buf, sizeof(buf), &len, true, 1000),
		      "answered with every slot taken: %.200s", buf);
	/* 32 slots free again: the 16 of the backlog, then it, are served */
	for (int a = 0; a < 2; a++)
		for (int i = 0; i < 16; i++)
			close(more[a][i]);
	ck_assert_msg(hs_read(waiting, buf, sizeof(buf), &len, true, 120000),
		      "the waiting client is never answered");
	ck_assert_msg(status_of(buf) == 200, "the waiting client: %.300s", buf);
	close(waiting);
	for (int i = 0; i < 24; i++)
		close(one[i]);
	for (int a = 2; a < 4; a++)
		for (int i = 0; i < 16; i++)
			close(more[a][i]);
	hs_end(&h);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gateway_hostile");

	dh_add_case(s, "oversized_truncated_garbage", test_oversized_truncated_garbage, 300);
	dh_add_case(s, "slow_drip", test_slow_drip, 400);
	dh_add_case(s, "idle_limits", test_idle_limits, 300);
	return s;
}

OUTBOX_CHECK_MAIN(suite)
