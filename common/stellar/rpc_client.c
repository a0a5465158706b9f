/*
 * rpc_client.c - the curl multi engine behind rpc.h.
 *
 * Each call is one easy handle on the client's multi handle; connections
 * live in the multi handle's cache, so consecutive calls to the same server
 * reuse keep-alive connections. curl tells us which sockets to watch through
 * CURLMOPT_SOCKETFUNCTION (we mirror them into a private epoll set, the fd the
 * caller watches) and when to wake up through CURLMOPT_TIMERFUNCTION (we keep
 * an absolute CLOCK_MONOTONIC deadline). rpc_client_perform() hands every ready
 * socket and a due timer to curl_multi_socket_action(), then completes the
 * finished transfers: HTTP status, size limit and JSON parsing decide the
 * result, and the call's callback runs.
 *
 * A finished call's easy handle and response buffer go to a small free list
 * (RPC_POOL_MAX) instead of being freed: curl_easy_init, the options that
 * never change and the buffer's growth were ~4% of outboxd's CPU when every
 * call made them anew. A reused handle gets the per-call options (body,
 * size limit) again before every transfer; the rest stay as first set.
 *
 * Single-threaded by contract: a client is used from one thread only, so no
 * locking. Callbacks never run inside curl's own callbacks (only after
 * curl_multi_socket_action() returned), which is what lets a callback start
 * new calls.
 */
#include "common/stellar/rpc.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

/*
 * Idle calls kept for reuse, and the largest response buffer one may keep:
 * enough for a worker's burst of calls, without holding a huge body.
 */
#define RPC_POOL_MAX      64
#define RPC_POOL_RESP_MAX (64u << 10)

struct rpc_call {
	struct rpc_client *client;
	CURL *easy;
	struct rpc_request req; /* method + account key; pointers cleared */
	uint64_t id;
	char *body; /* request JSON, owned until the transfer ends */
	char *resp; /* response bytes so far */
	size_t resp_len, resp_cap;
	size_t max_response; /* this call's body limit */
	bool too_big;
	rpc_done_fn cb;
	void *arg;
	struct rpc_call *prev, *next; /* all calls in flight, or the free list (next) */
	char errbuf[CURL_ERROR_SIZE];
};

struct rpc_client {
	CURLM *multi;
	int epfd;
	bool timer_armed;
	struct timespec deadline;
	char *url;
	char *ca_file;
	long connect_timeout_ms, timeout_ms;
	size_t max_response;
	struct curl_slist *headers;
	uint64_t next_id;
	size_t pending;
	struct rpc_call *calls;
	struct rpc_call *idle; /* finished calls kept for reuse */
	size_t n_idle;
	bool freeing; /* rpc_client_free() is cancelling: no new calls */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- curl -> epoll glue ------------------------------------------------- */

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct rpc_client *c = userp;
	struct epoll_event ev = {.data.fd = s};

	if (what == CURL_POLL_REMOVE) {
		/* Fails harmlessly if curl already closed the socket. */
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	/*
	 * socketp is what we assigned when we added the socket; curl forgets it
	 * at CURL_POLL_REMOVE. A kept-alive connection is removed after every
	 * answer and added again for the next request: ADD at once instead of a
	 * MOD that fails first (one syscall less per request). The fallbacks
	 * cover a socket curl forgot without a REMOVE, or one already closed.
	 */
	if (!socketp) {
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
			epoll_ctl(c->epfd, EPOLL_CTL_MOD, s, &ev);
		curl_multi_assign(c->multi, s, c);
	} else if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT) {
		epoll_ctl(c->epfd, EPOLL_CTL_ADD, s, &ev);
	}
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct rpc_client *c = userp;

	if (timeout_ms < 0) {
		c->timer_armed = false;
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &c->deadline);
	c->deadline.tv_sec += timeout_ms / 1000;
	c->deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (c->deadline.tv_nsec >= 1000000000L) {
		c->deadline.tv_sec++;
		c->deadline.tv_nsec -= 1000000000L;
	}
	c->timer_armed = true;
	return 0;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userp)
{
	struct rpc_call *call = userp;
	size_t n = size * nmemb, need = call->resp_len + n;

	if (need > call->max_response) {
		call->too_big = true;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	if (need + 1 > call->resp_cap) {
		size_t cap = call->resp_cap ? call->resp_cap : 4096;
		char *p;
		while (cap < need + 1)
			cap *= 2;
		if (cap > call->max_response + 1)
			cap = call->max_response + 1;
		p = realloc(call->resp, cap);
		if (!p)
			return 0;
		call->resp = p;
		call->resp_cap = cap;
	}
	memcpy(call->resp + call->resp_len, data, n);
	call->resp_len = need;
	return n;
}

/* ---- client lifetime ---------------------------------------------------- */

struct rpc_client *rpc_client_new(const struct rpc_config *cfg, struct outbox_error *err)
{
	struct rpc_client *c;

	if (!cfg || !cfg->url ||
	    (strncmp(cfg->url, "http://", 7) != 0 && strncmp(cfg->url, "https://", 8) != 0)) {
		outbox_error_set(err, OUTBOX_EINVAL, "url", "'%s' is not an http(s) url",
				 cfg && cfg->url ? cfg->url : "");
		return NULL;
	}
	if (cfg->connect_timeout_ms < 0 || cfg->timeout_ms < 0 || cfg->max_host_connections < 0) {
		outbox_error_set(err, OUTBOX_EINVAL, "timeout", "negative timeout or limit");
		return NULL;
	}
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		outbox_error_set(err, OUTBOX_ESTATE, "curl", "global init failed: %s",
				 curl_easy_strerror(curl_init_rc));
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto oom;
	c->epfd = -1;
	c->url = strdup(cfg->url);
	c->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
	c->connect_timeout_ms =
		cfg->connect_timeout_ms ? cfg->connect_timeout_ms : RPC_DEFAULT_CONNECT_TIMEOUT_MS;
	c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : RPC_DEFAULT_TIMEOUT_MS;
	c->max_response =
		cfg->max_response_bytes ? cfg->max_response_bytes : RPC_DEFAULT_MAX_RESPONSE;
	c->next_id = 1;
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (c->headers)
		c->headers = curl_slist_append(c->headers, "Accept: application/json");
	if (!c->url || (cfg->ca_file && !c->ca_file) || !c->headers)
		goto oom;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0) {
		outbox_error_set(err, -errno, "epoll", "epoll_create1: %s", strerror(errno));
		goto fail;
	}
	c->multi = curl_multi_init();
	if (!c->multi)
		goto oom;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, cfg->max_host_connections);
	/* Keep enough idle connections for a burst to be reused afterwards. */
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS,
			  cfg->max_host_connections ? cfg->max_host_connections : 256L);
	return c;
oom:
	outbox_error_set(err, -ENOMEM, "rpc", "out of memory");
fail:
	rpc_client_free(c);
	return NULL;
}

static void call_destroy(struct rpc_call *call)
{
	if (call->easy)
		curl_easy_cleanup(call->easy);
	free(call->body);
	free(call->resp);
	free(call);
}

/* Unlink a finished call and keep it for reuse, or free it. */
static void call_free(struct rpc_call *call)
{
	struct rpc_client *c = call->client;

	if (call->prev)
		call->prev->next = call->next;
	else
		c->calls = call->next;
	if (call->next)
		call->next->prev = call->prev;
	c->pending--;
	curl_multi_remove_handle(c->multi, call->easy);
	free(call->body);
	call->body = NULL;
	if (c->freeing || c->n_idle >= RPC_POOL_MAX) {
		call_destroy(call);
		return;
	}
	if (call->resp_cap > RPC_POOL_RESP_MAX) {
		free(call->resp);
		call->resp = NULL;
		call->resp_cap = 0;
	}
	call->prev = NULL;
	call->next = c->idle;
	c->idle = call;
	c->n_idle++;
}

/* Run the callback with res, then free the call and release res. */
static void call_finish(struct rpc_call *call, struct rpc_result *res)
{
	rpc_done_fn cb = call->cb;
	void *arg = call->arg;

	call_free(call);
	cb(res, arg);
	rpc_result_release(res);
}

void rpc_client_free(struct rpc_client *c)
{
	if (!c)
		return;
	c->freeing = true;
	while (c->calls) {
		struct rpc_result res;
		rpc_result_init(&res, c->calls->req.method);
		res.status = RPC_E_CANCELLED;
		outbox_error_set(&res.err, -ECANCELED, "rpc", "client freed with call in flight");
		call_finish(c->calls, &res);
	}
	while (c->idle) {
		struct rpc_call *next = c->idle->next;
		call_destroy(c->idle);
		c->idle = next;
	}
	if (c->multi)
		curl_multi_cleanup(c->multi);
	if (c->epfd >= 0)
		close(c->epfd);
	curl_slist_free_all(c->headers);
	free(c->url);
	free(c->ca_file);
	free(c);
}

/* ---- calls -------------------------------------------------------------- */

/* The options every call of c shares: set once per easy handle. */
static int easy_setup(struct rpc_client *c, struct rpc_call *call)
{
	CURL *e = call->easy;
	CURLcode rc = CURLE_OK;

#define SET(opt, val)                                                                              \
	do {                                                                                       \
		if (rc == CURLE_OK)                                                                \
			rc = curl_easy_setopt(e, opt, val);                                        \
	} while (0)
	SET(CURLOPT_URL, c->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_HTTPHEADER, c->headers);
	SET(CURLOPT_USERAGENT, "outboxd");
	SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, c->timeout_ms);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, call);
	SET(CURLOPT_PRIVATE, call);
	SET(CURLOPT_ERRORBUFFER, call->errbuf);
	if (c->ca_file)
		SET(CURLOPT_CAINFO, c->ca_file);
#undef SET
	return rc == CURLE_OK ? 0 : -EINVAL;
}

/* The options of this call: its body and its size limit. */
static int easy_setup_call(struct rpc_call *call)
{
	CURL *e = call->easy;

	if (curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(call->body)) !=
		    CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)call->max_response) !=
		    CURLE_OK)
		return -EINVAL;
	return 0;
}

/* A call with a ready easy handle: from the free list, or new. */
static struct rpc_call *call_get(struct rpc_client *c)
{
	struct rpc_call *call = c->idle;

	if (call) {
		c->idle = call->next;
		c->n_idle--;
		call->next = NULL;
		call->resp_len = 0;
		call->too_big = false;
		call->errbuf[0] = '\0';
		return call;
	}
	call = calloc(1, sizeof(*call));
	if (!call)
		return NULL;
	call->client = c;
	call->easy = curl_easy_init();
	if (!call->easy || easy_setup(c, call) < 0) {
		call_destroy(call);
		return NULL;
	}
	return call;
}

int rpc_call_start(struct rpc_client *c, const struct rpc_request *req, rpc_done_fn cb, void *arg,
		   struct outbox_error *err)
{
	struct rpc_call *call;
	int rc;

	if (!cb)
		return outbox_error_set(err, OUTBOX_EINVAL, "cb", "no callback");
	if (c->freeing)
		return outbox_error_set(err, OUTBOX_ESTATE, "rpc", "client is being freed");
	call = call_get(c);
	if (!call)
		return outbox_error_set(err, -ENOMEM, "curl", "cannot set up transfer");
	call->id = c->next_id;
	call->body = rpc_request_body(req, call->id, err);
	if (!call->body) {
		rc = err && err->code ? err->code : -ENOMEM;
		goto fail;
	}
	call->req = (struct rpc_request){.method = req->method};
	memcpy(call->req.account, req->account, sizeof(call->req.account));
	call->max_response = req->max_response ? req->max_response : c->max_response;
	if (!req->max_response && req->method == RPC_GET_LATEST_LEDGER &&
	    call->max_response < RPC_LATEST_LEDGER_MAX_RESPONSE)
		call->max_response = RPC_LATEST_LEDGER_MAX_RESPONSE;
	call->cb = cb;
	call->arg = arg;
	if (easy_setup_call(call) < 0) {
		rc = outbox_error_set(err, -ENOMEM, "curl", "cannot set up transfer");
		goto fail;
	}
	if (curl_multi_add_handle(c->multi, call->easy) != CURLM_OK) {
		rc = outbox_error_set(err, -ENOMEM, "curl", "cannot add transfer");
		goto fail;
	}
	c->next_id++;
	call->next = c->calls;
	if (c->calls)
		c->calls->prev = call;
	c->calls = call;
	c->pending++;
	return 0;
fail:
	/* never added to the multi handle: keep nothing that was half set up */
	call_destroy(call);
	return rc;
}

static enum rpc_status transport_status(CURLcode code, bool too_big)
{
	switch (code) {
	case CURLE_OK:
		return RPC_OK;
	case CURLE_OPERATION_TIMEDOUT:
		return RPC_E_TIMEOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		return RPC_E_CONNECT;
	case CURLE_FILESIZE_EXCEEDED:
		return RPC_E_TOOBIG;
	case CURLE_WRITE_ERROR:
		return too_big ? RPC_E_TOOBIG : RPC_E_TRANSPORT;
	default:
		return RPC_E_TRANSPORT;
	}
}

static void complete(struct rpc_client *c, CURL *easy, CURLcode code)
{
	struct rpc_call *call = NULL;
	struct rpc_result res;
	long http = 0;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&call);
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
	rpc_result_init(&res, call->req.method);
	res.http_status = http;
	res.status = transport_status(code, call->too_big);
	if (res.status == RPC_E_TOOBIG) {
		outbox_error_set(&res.err, OUTBOX_ETOOBIG, "response", "body exceeds %zu bytes",
				 call->max_response);
	} else if (res.status != RPC_OK) {
		int ec = res.status == RPC_E_TIMEOUT   ? -ETIMEDOUT
			 : res.status == RPC_E_CONNECT ? -ECONNREFUSED
						       : -EIO;
		outbox_error_set(&res.err, ec, "transport", "%s",
				 call->errbuf[0] ? call->errbuf : curl_easy_strerror(code));
	} else if (http != 200) {
		res.status = RPC_E_HTTP;
		outbox_error_set(&res.err, OUTBOX_EPROTO, "http", "status %ld", http);
	} else {
		rpc_response_parse(&call->req, call->id, call->resp ? call->resp : "",
				   call->resp_len, &res);
	}
	call_finish(call, &res);
}

int rpc_client_fd(const struct rpc_client *c)
{
	return c->epfd;
}

int rpc_client_timeout_ms(const struct rpc_client *c)
{
	struct timespec now;
	long long ms;

	if (!c->timer_armed)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(c->deadline.tv_sec - now.tv_sec) * 1000 +
	     (c->deadline.tv_nsec - now.tv_nsec) / 1000000;
	if (ms < 0)
		return 0;
	/* Round up so a caller waiting exactly this long finds the timer due. */
	return ms >= 0x7fffffff ? 0x7fffffff : (int)ms + 1;
}

static bool timer_due(const struct rpc_client *c)
{
	struct timespec now;

	if (!c->timer_armed)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > c->deadline.tv_sec ||
	       (now.tv_sec == c->deadline.tv_sec && now.tv_nsec >= c->deadline.tv_nsec);
}

void rpc_client_perform(struct rpc_client *c)
{
	struct epoll_event evs[64];
	int running, n;
	CURLMsg *msg;

	n = epoll_wait(c->epfd, evs, 64, 0);
	for (int i = 0; i < n; i++) {
		int flags = 0;
		if (evs[i].events & EPOLLIN)
			flags |= CURL_CSELECT_IN;
		if (evs[i].events & EPOLLOUT)
			flags |= CURL_CSELECT_OUT;
		if (evs[i].events & (EPOLLERR | EPOLLHUP))
			flags |= CURL_CSELECT_ERR;
		curl_multi_socket_action(c->multi, evs[i].data.fd, flags, &running);
	}
	if (timer_due(c)) {
		c->timer_armed = false; /* curl re-arms through on_timer if needed */
		curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
	while ((msg = curl_multi_info_read(c->multi, &n)))
		if (msg->msg == CURLMSG_DONE)
			complete(c, msg->easy_handle, msg->data.result);
}

size_t rpc_client_pending(const struct rpc_client *c)
{
	return c->pending;
}

void rpc_client_poll(struct rpc_client *c, int max_ms)
{
	struct epoll_event ev;
	int t = rpc_client_timeout_ms(c);

	if (t < 0 || (max_ms >= 0 && max_ms < t))
		t = max_ms;
	if (t != 0)
		epoll_wait(c->epfd, &ev, 1, t);
	rpc_client_perform(c);
}
