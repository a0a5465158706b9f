/*
 * http.c - see http.h. Request life: the body is collected (bounded by
 * SIM_MAX_BODY, 413 beyond), parsed, the method's faults are rolled, and the
 * answer is queued. A delayed or held request is suspended and put on the
 * park list; the parker thread resumes it when its time comes, and MHD
 * calls the handler again, which picks up where the request state says.
 * A held ("timeout" fault) request is released, unanswered, when its client
 * hangs up (polled once a second) or after --hold-max-ms. A dripped answer
 * (the "drip" fault) is parked the same way between its chunks.
 */
#include "tests/stellar-sim/http.h"
#include "common/log.h"
#include "tests/stellar-sim/chain.h"
#include "tests/stellar-sim/faults.h"
#include "tests/stellar-sim/rpc.h"

#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

enum req_state { REQ_NEW, REQ_DELAYED, REQ_RESUMED, REQ_HELD, REQ_RELEASED, REQ_DRIP };

/*
 * Hostile answers: what a broken or malicious RPC node, or a proxy in front
 * of one, may send. HUGE streams a body larger than any client limit (the
 * largest, getLatestLedger's, is 32 MiB); DEEP nests arrays far beyond any
 * JSON parser's depth limit; TRUNCATED announces the real answer's length
 * and closes the connection halfway through it; DRIP sends the real answer
 * HOSTILE_DRIP_BYTES at a time, HOSTILE_DRIP_MS apart (a 300-byte answer
 * takes about 5 s, a 2.6 KiB getLatestLedger over 40 s).
 */
enum hostile { H_NONE, H_HUGE, H_DEEP, H_TRUNCATED, H_DRIP };
#define HOSTILE_HUGE_BYTES  ((uint64_t)64 << 20)
#define HOSTILE_DEEP_LEVELS 100000
#define HOSTILE_DRIP_BYTES  16
#define HOSTILE_DRIP_MS     250

struct req {
	enum req_state state;
	char *body;
	size_t len;
	bool too_big;
	json_t *json;
	struct fault f;
	struct MHD_Connection *conn;
	uint64_t resume_at;
	struct req *next; /* park list */
	char *answer;     /* TRUNCATED, DRIP: the real answer being sent */
	size_t answer_len;
	bool drip_ready; /* DRIP: the pause before the next chunk is over */
};

static struct MHD_Daemon *daemon_;
static const struct sim_config *cfg;
static pthread_t parker;
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static struct req *parked;
static unsigned n_held; /* under park_lock */
static bool stopping;

/*
 * JSON-RPC requests received, by method (GET /debug/requests): what a
 * client costs the network, counted once per request whatever fault
 * answers it. Tests and benchmarks read deltas (RPC calls per op).
 */
static const char *const counted[] = {"getHealth",           "getNetwork",      "getVersionInfo",
				      "getLatestLedger",     "getFeeStats",     "getLedgerEntries",
				      "simulateTransaction", "sendTransaction", "getTransaction",
				      "getTransactions"};
#define N_COUNTED (sizeof(counted) / sizeof(counted[0]))
static unsigned long n_requests[N_COUNTED + 1]; /* the last: any other method (atomic) */

static void count_request(const char *m)
{
	size_t i = 0;

	while (m && i < N_COUNTED && strcmp(m, counted[i]))
		i++;
	__atomic_add_fetch(&n_requests[m ? i : N_COUNTED], 1, __ATOMIC_RELAXED);
}

static json_t *requests_json(void)
{
	json_t *o = json_object();

	for (size_t i = 0; i <= N_COUNTED; i++)
		json_object_set_new(o, i < N_COUNTED ? counted[i] : "other",
				    json_integer((json_int_t)__atomic_load_n(&n_requests[i],
									     __ATOMIC_RELAXED)));
	return o;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
			       char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond_json(struct MHD_Connection *c, unsigned status, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (!s)
		return MHD_NO;
	return respond(c, status, "application/json", s, strlen(s));
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	char *s = strdup(text);

	return s ? respond(c, status, "text/plain", s, strlen(s)) : MHD_NO;
}

/* Suspend the connection until `at` (monotonic ms). */
static enum MHD_Result park(struct req *q, enum req_state st, uint64_t at)
{
	q->state = st;
	q->resume_at = at;
	MHD_suspend_connection(q->conn);
	pthread_mutex_lock(&park_lock);
	q->next = parked;
	parked = q;
	if (st == REQ_HELD)
		n_held++;
	pthread_cond_signal(&park_cond);
	pthread_mutex_unlock(&park_lock);
	return MHD_YES;
}

/* Has the client of a held request gone away? Then its connection can go. */
static bool client_gone(struct req *q)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p;

	if (!ci)
		return false;
	p.fd = ci->connect_fd;
	p.events = POLLRDHUP;
	p.revents = 0;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void *parker_main(void *arg)
{
	pthread_mutex_lock(&park_lock);
	for (;;) {
		uint64_t now = sim_now_ms(), next = now + 1000;
		struct req **pp = &parked;
		struct timespec ts;

		while (*pp) {
			struct req *q = *pp;

			if (stopping || q->resume_at <= now ||
			    (q->state == REQ_HELD && client_gone(q))) {
				*pp = q->next;
				if (q->state == REQ_HELD) {
					q->state = REQ_RELEASED;
					n_held--;
				}
				if (q->state == REQ_DRIP)
					q->drip_ready = true;
				MHD_resume_connection(q->conn);
				continue;
			}
			if (q->resume_at < next)
				next = q->resume_at;
			pp = &q->next;
		}
		if (stopping)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		next -= now;
		ts.tv_sec += (time_t)(next / 1000);
		ts.tv_nsec += (long)(next % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&park_cond, &park_lock, &ts);
	}
	pthread_mutex_unlock(&park_lock);
	return NULL;
}

static enum MHD_Result garbage(struct MHD_Connection *c)
{
	static const char junk[] =
		"<html><body>502 upstream sent garbage \x01\x02\xff{\"jsonrpc\":";

	return respond_text(c, 200, junk);
}

static const char huge_head[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"status\":\"PENDING\",\"pad\":\"";

/* HUGE: a valid-looking JSON-RPC answer padded to HOSTILE_HUGE_BYTES, made as it is sent. */
static ssize_t huge_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	const uint64_t head = sizeof(huge_head) - 1, tail = HOSTILE_HUGE_BYTES - 3;
	size_t n = 0;

	(void)cls;
	if (pos >= HOSTILE_HUGE_BYTES)
		return MHD_CONTENT_READER_END_OF_STREAM;
	for (; n < max && pos + n < HOSTILE_HUGE_BYTES; n++) {
		uint64_t at = pos + n;
		buf[n] = at < head ? huge_head[at] : at >= tail ? "\"}}"[at - tail] : 'A';
	}
	return (ssize_t)n;
}

/* TRUNCATED: the first half of the answer, then the connection is cut. */
static ssize_t truncated_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct req *q = cls;
	size_t half = q->answer_len / 2, n;

	if (pos >= half)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = half - (size_t)pos < max ? half - (size_t)pos : max;
	memcpy(buf, q->answer + pos, n);
	return (ssize_t)n;
}

/*
 * DRIP: one chunk, then the connection is suspended and parked until the
 * next one is due (libmicrohttpd allows suspending from a content reader; a
 * reader that returned 0 without suspending would make its thread spin).
 */
static ssize_t drip_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct req *q = cls;
	size_t n;

	if (pos >= q->answer_len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!q->drip_ready) {
		park(q, REQ_DRIP, sim_now_ms() + HOSTILE_DRIP_MS);
		return 0;
	}
	q->drip_ready = false;
	n = q->answer_len - (size_t)pos;
	if (n > HOSTILE_DRIP_BYTES)
		n = HOSTILE_DRIP_BYTES;
	if (n > max)
		n = max;
	memcpy(buf, q->answer + pos, n);
	return (ssize_t)n;
}

static enum MHD_Result respond_stream(struct MHD_Connection *c, uint64_t size,
				      MHD_ContentReaderCallback reader, void *cls)
{
	struct MHD_Response *r =
		MHD_create_response_from_callback(size, 32 * 1024, reader, cls, NULL);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* DEEP: {"jsonrpc":"2.0","id":1,"result":[[[...]]]} nested HOSTILE_DEEP_LEVELS deep. */
static enum MHD_Result deep(struct MHD_Connection *c)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":";
	size_t hl = sizeof(head) - 1, len = hl + 2 * HOSTILE_DEEP_LEVELS + 1;
	char *s = malloc(len + 1);

	if (!s)
		return MHD_NO;
	memcpy(s, head, hl);
	memset(s + hl, '[', HOSTILE_DEEP_LEVELS);
	memset(s + hl + HOSTILE_DEEP_LEVELS, ']', HOSTILE_DEEP_LEVELS);
	s[len - 1] = '}';
	s[len] = '\0';
	return respond(c, 200, "application/json", s, len);
}

/*
 * A hostile answer in place of the real one. The request is handled first
 * when the answer is needed (TRUNCATED, DRIP) and always for
 * sendTransaction: as with a timeout, the envelope may land, and only the
 * answer is spoiled.
 */
static enum MHD_Result hostile(struct req *q, enum hostile h, const char *method)
{
	struct rpc_faults rf = {false, false};
	json_t *answer = NULL;

	if (h == H_TRUNCATED || h == H_DRIP || (method && !strcmp(method, "sendTransaction")))
		answer = rpc_handle(q->json, &rf);
	if (h == H_HUGE || h == H_DEEP) {
		json_decref(answer);
		return h == H_HUGE ? respond_stream(q->conn, MHD_SIZE_UNKNOWN, huge_reader, NULL)
				   : deep(q->conn);
	}
	q->answer = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
	json_decref(answer);
	if (!q->answer)
		return MHD_NO;
	q->answer_len = strlen(q->answer);
	return respond_stream(q->conn, q->answer_len,
			      h == H_TRUNCATED ? truncated_reader : drip_reader, q);
}

static enum MHD_Result rpc(struct req *q)
{
	enum hostile h;
	struct rpc_faults rf = {false, false};
	const char *m;

	if (q->state == REQ_NEW) {
		json_error_t je;

		q->json = json_loadb(q->body ? q->body : "", q->len, 0, &je);
		if (!q->json)
			return respond_json(q->conn, 200, rpc_error(NULL, -32700, "parse error"));
		if (!json_is_object(q->json))
			return respond_json(
				q->conn, 200,
				rpc_error(NULL, -32600,
					  "invalid request: batches are not supported"));
		count_request(rpc_method(q->json));
		faults_get(rpc_method(q->json), &q->f);
		if (q->f.delay_ms)
			return park(q, REQ_DELAYED, sim_now_ms() + q->f.delay_ms);
	}
	m = rpc_method(q->json);
	if (faults_roll(q->f.timeout_rate)) {
		/*
		 * A timeout is a lost answer, not a lost request: a submitted
		 * envelope is processed (it may land) and only the answer is
		 * withheld - the mirror image of the black hole.
		 */
		if (m && !strcmp(m, "sendTransaction"))
			json_decref(rpc_handle(q->json, &rf));
		return park(q, REQ_HELD, sim_now_ms() + cfg->hold_max_ms);
	}
	if (faults_roll(q->f.http_5xx_rate))
		return respond_text(q->conn, 503, "503 Service Unavailable (injected)\n");
	if (faults_roll(q->f.garbage_rate))
		return garbage(q->conn);
	h = faults_roll(q->f.huge_rate)        ? H_HUGE
	    : faults_roll(q->f.deep_rate)      ? H_DEEP
	    : faults_roll(q->f.truncated_rate) ? H_TRUNCATED
	    : faults_roll(q->f.drip_rate)      ? H_DRIP
					       : H_NONE;
	if (h != H_NONE)
		return hostile(q, h, m);
	if (m && !strcmp(m, "sendTransaction")) {
		rf.try_again_later = faults_roll(q->f.try_again_later_rate);
		rf.blackhole = faults_roll(q->f.blackhole_rate);
	}
	return respond_json(q->conn, 200, rpc_handle(q->json, &rf));
}

/* POST /debug/close {"ledgers": n}: close n ledgers now (default 1). */
static enum MHD_Result debug_close(struct req *q, json_t *body)
{
	json_t *n = json_object_get(body, "ledgers");
	json_int_t i, count = 1;
	uint32_t seq;
	uint64_t t;

	if (n &&
	    (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > 1000)) {
		json_decref(body);
		return respond_json(
			q->conn, 400,
			json_pack("{s:s}", "error", "ledgers: expected an integer 1..1000"));
	}
	if (n)
		count = json_integer_value(n);
	json_decref(body);
	for (i = 0; i < count; i++)
		chain_close_ledger();
	chain_latest(&seq, &t);
	return respond_json(q->conn, 200, json_pack("{s:i}", "latest_ledger", (json_int_t)seq));
}

static enum MHD_Result debug_post(struct req *q, const char *url)
{
	json_error_t je;
	json_t *body = json_loadb(q->body ? q->body : "", q->len, 0, &je);
	char err[256] = "";
	int rc;

	if (!body || !json_is_object(body)) {
		json_decref(body);
		return respond_json(q->conn, 400,
				    json_pack("{s:s}", "error", "body: expected a JSON object"));
	}
	if (!strcmp(url, "/debug/close"))
		return debug_close(q, body);
	if (!strcmp(url, "/debug/accounts"))
		rc = chain_debug_accounts(body, err, sizeof(err));
	else
		rc = faults_set(body, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return respond_json(q->conn, 400, json_pack("{s:s}", "error", err));
	return respond_json(q->conn, 200, json_pack("{s:b}", "ok", 1));
}

static enum MHD_Result route(struct req *q, const char *url, const char *method)
{
	bool post = !strcmp(method, "POST"), get = !strcmp(method, "GET");

	if (q->too_big)
		return respond_text(q->conn, 413, "request body too large\n");
	if (!strcmp(url, "/") && post)
		return rpc(q);
	if (!cfg->debug || strncmp(url, "/debug/", 7))
		return respond_text(q->conn, 404, "not found\n");
	if (post && (!strcmp(url, "/debug/accounts") || !strcmp(url, "/debug/faults") ||
		     !strcmp(url, "/debug/close")))
		return debug_post(q, url);
	if (get && !strcmp(url, "/debug/state")) {
		json_t *o = chain_debug_state();
		unsigned held;

		pthread_mutex_lock(&park_lock);
		held = n_held;
		pthread_mutex_unlock(&park_lock);
		json_object_set_new(o, "held_connections", json_integer(held));
		return respond_json(q->conn, 200, o);
	}
	if (get && !strcmp(url, "/debug/executions"))
		return respond_json(q->conn, 200, chain_debug_executions());
	if (get && !strcmp(url, "/debug/requests"))
		return respond_json(q->conn, 200, requests_json());
	if (get && !strcmp(url, "/debug/faults"))
		return respond_json(q->conn, 200, faults_json());
	return respond_text(q->conn, 404, "not found\n");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct req *q = *con_cls;

	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		q->conn = c;
		*con_cls = q;
		return MHD_YES;
	}
	if (*data_size) {
		if (q->len + *data_size > SIM_MAX_BODY) {
			q->too_big = true;
		} else if (!q->too_big) {
			char *nb = realloc(q->body, q->len + *data_size + 1);

			if (!nb)
				return MHD_NO;
			memcpy(nb + q->len, data, *data_size);
			q->body = nb;
			q->len += *data_size;
		}
		*data_size = 0;
		return MHD_YES;
	}
	switch (q->state) {
	case REQ_RELEASED:
		return MHD_NO; /* a held request: close without an answer */
	case REQ_HELD:
		return MHD_YES;
	case REQ_DELAYED:
		q->state = REQ_RESUMED;
		return rpc(q);
	default:
		return route(q, url, method);
	}
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req *q = *con_cls;

	if (!q)
		return;
	json_decref(q->json);
	free(q->body);
	free(q->answer);
	free(q);
	*con_cls = NULL;
}

/*
 * libmicrohttpd's messages, to our log; "internal error" is how it reports
 * the unanswered close of a held connection and "error generating data" the
 * cut of a truncated answer, which are the point of them.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	if (strstr(msg, "Application reported internal error") ||
	    strstr(msg, "application reported error generating data"))
		return;
	log_warn("microhttpd: %s", msg);
}

int http_start(const struct sim_config *config, unsigned *port)
{
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *di;

	cfg = config;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)cfg->port);
	if (inet_pton(AF_INET, cfg->listen_host, &sa.sin_addr) != 1) {
		log_err("--listen: '%s' is not an IPv4 address", cfg->listen_host);
		return -1;
	}
	if (pthread_create(&parker, NULL, parker_main, NULL))
		return -1;
	daemon_ = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0,
		NULL, NULL, handler, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_THREAD_POOL_SIZE, cfg->threads,
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_CONNECTION_LIMIT, 4000,
		MHD_OPTION_CONNECTION_TIMEOUT, 120, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024,
		/* MHD clears a connection's pool between requests: keep it small
		 * (bodies are collected in our own buffer, not in the pool) */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)8192, MHD_OPTION_END);
	if (!daemon_) {
		log_err("cannot listen on %s:%u", cfg->listen_host, cfg->port);
		return -1;
	}
	di = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
	*port = di ? di->port : cfg->port;
	return 0;
}

void http_stop(void)
{
	pthread_mutex_lock(&park_lock);
	stopping = true;
	pthread_cond_signal(&park_cond);
	pthread_mutex_unlock(&park_lock);
	pthread_join(parker, NULL);
	if (daemon_)
		MHD_stop_daemon(daemon_);
	daemon_ = NULL;
}
