/*
 * check_rpc_client.c - the asynchronous RPC client against a local HTTP
 * server that misbehaves on request.
 *
 * The fixture is a libmicrohttpd server on 127.0.0.1 (ephemeral port, one
 * thread per connection, started inside each test). The URL path picks the
 * behaviour, so one server serves every case:
 *	/ok            canned doc responses per method, echoing the id
 *	/slow?ms=N     the same after N ms
 *	/hang          never answers (until the server stops)
 *	/pad?n=N       a valid getHealth answer padded to exactly N bytes
 *	/big           5 MiB with Content-Length; /bigchunked without it
 *	/garbage       HTTP 200 "this is not json"
 *	/status?code=N HTTP N
 *	/wrongid       a valid result under another id
 *	/rpcerror      a JSON-RPC error object (-32603)
 * It counts TCP connections (MHD_OPTION_NOTIFY_CONNECTION), requests and
 * the JSON-RPC ids it saw, which is what the reuse and uniqueness tests
 * check. Every test drives the client from an outer epoll set holding
 * rpc_client_fd(), waiting exactly rpc_client_timeout_ms(), the way the
 * worker and oracle loops do.
 *
 * The "stellar-sim" case runs the project's local network
 * ($OUTBOX_BUILD_DIR/stellar-sim) and reads every method from it, so the
 * parser and the simulator are held to the same field shapes.
 */
#include "common/stellar/classify.h"
#include "common/stellar/rpc.h"
#include "common/stellar/strkey.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <poll.h>
#include <sodium.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "tests/support/check_main.h"

#define MAX_IDS 4096

/* A test-only self-signed certificate for 127.0.0.1, valid 2020..2120 (not a secret). */
static const char TEST_CERT[] = "-----BEGIN CERTIFICATE-----\n"
				"MIIBaTCCARCgAwIBAgIBATAKBggqhkjOPQQDAjAbMRkwFwYDVQQDDBBvdXRib3hk\n"
				"LXJwYy10ZXN0MCAXDTIwMDEwMTAwMDAwMFoYDzIxMjAwMTAxMDAwMDAwWjAbMRkw\n"
				"FwYDVQQDDBBvdXRib3hkLXJwYy10ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcD\n"
				"QgAEEhCLSMX/TPMJG64r86Jk97QF25QEiLenQirV24clAd9AOZWARebaxMu2ph3b\n"
				"/QH0G+1tIpV3fjoLkDOm2sXAUKNDMEEwDwYDVR0RBAgwBocEfwAAATAPBgNVHRMB\n"
				"Af8EBTADAQH/MB0GA1UdDgQWBBRTA9UnB7YPiedioJ695tIYY8SQnTAKBggqhkjO\n"
				"PQQDAgNHADBEAiAElIx40s260HCsiPKWjxod8zvndN9IR0bDd6OZ2INVlwIgAhDU\n"
				"SdfLpSX4I42nRMbmRVV6u2Uu6OEKhhsgrwnmuUw=\n"
				"-----END CERTIFICATE-----\n";
static const char TEST_KEY[] = "-----BEGIN PRIVATE KEY-----\n"
			       "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1eYLbHPKLk/AUSSe\n"
			       "22E6TLHowR8pzHrPiCL/QHNpQg6hRANCAAQSEItIxf9M8wkbrivzomT3tAXblASI\n"
			       "t6dCKtXbhyUB30A5lYBF5trEy7amHdv9AfQb7W0ilXd+OguQM6baxcBQ\n"
			       "-----END PRIVATE KEY-----\n";

/* ---- the fixture server -------------------------------------------------- */

struct fixture {
	struct MHD_Daemon *d;
	unsigned port;
	atomic_bool stopping;
	atomic_int connections; /* TCP connections accepted */
	atomic_int requests;
	atomic_int in_handler; /* requests being answered right now */
	atomic_int max_in_handler;
	pthread_mutex_t lock;
	int64_t ids[MAX_IDS];
	int n_ids;
};

struct req_state {
	char *body;
	size_t len;
};

static struct fixture fx;

static const char *const canned[RPC_METHOD_COUNT] = {
	[RPC_GET_HEALTH] =
		"{\"status\":\"healthy\",\"latestLedger\":51234567,"
		"\"latestLedgerCloseTime\":\"1784671485\",\"oldestLedger\":51113608,"
		"\"oldestLedgerCloseTime\":\"1784065656\",\"ledgerRetentionWindow\":120960}",
	[RPC_GET_NETWORK] = "{\"friendbotUrl\":\"https://friendbot-testnet.stellar.org/\","
			    "\"passphrase\":\"Test SDF Network ; September 2015\","
			    "\"protocolVersion\":27}",
	[RPC_GET_LATEST_LEDGER] =
		"{\"id\":\"0a00a9cf845f7af7cff09c66f8ae6480e9971e6e2c7fa4afd8d6266ee13c987b\","
		"\"protocolVersion\":27,\"sequence\":51234567,\"closeTime\":\"1784671645\"}",
	[RPC_GET_FEE_STATS] =
		"{\"sorobanInclusionFee\":{\"max\":\"210\",\"min\":\"100\",\"mode\":\"100\","
		"\"p10\":\"100\",\"p20\":\"100\",\"p30\":\"100\",\"p40\":\"100\",\"p50\":\"100\","
		"\"p60\":\"100\",\"p70\":\"100\",\"p80\":\"120\",\"p90\":\"200\",\"p95\":\"200\","
		"\"p99\":\"210\",\"transactionCount\":\"371\",\"ledgerCount\":50},"
		"\"inclusionFee\":{\"max\":\"133\",\"min\":\"100\",\"mode\":\"100\",\"p10\":"
		"\"100\","
		"\"p20\":\"100\",\"p30\":\"100\",\"p40\":\"100\",\"p50\":\"100\",\"p60\":\"100\","
		"\"p70\":\"100\",\"p80\":\"100\",\"p90\":\"100\",\"p95\":\"100\",\"p99\":\"133\","
		"\"transactionCount\":\"28\",\"ledgerCount\":10},\"latestLedger\":51234567}",
	[RPC_GET_ACCOUNT] =
		"{\"entries\":[{\"key\":\"AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90Mg=="
		"\","
		"\"xdr\":\"AAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAAAAJUC+"
		"QAAAABH3H7BMo"
		"AAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAAAAAAA\",\"lastModifiedLedgerSeq\":51234500,"
		"\"extXdr\":\"AAAAAA==\"}],\"latestLedger\":51234567}",
	[RPC_SIMULATE_TRANSACTION] = "{\"latestLedger\":51234567,\"minResourceFee\":\"61234\","
				     "\"transactionData\":\"AAAA\","
				     "\"results\":[{\"xdr\":\"AAAAAQ==\",\"auth\":[\"AAAA\"]}]}",
	[RPC_SEND_TRANSACTION] =
		"{\"status\":\"ERROR\",\"errorResultXdr\":\"AAAAAAAAxBj////3AAAAAA==\",\"hash\":"
		"\"14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94\","
		"\"latestLedger\":51234567,\"latestLedgerCloseTime\":\"1784671645\"}",
	[RPC_GET_TRANSACTION] =
		"{\"status\":\"NOT_FOUND\",\"txHash\":"
		"\"14f29487790446fcec71dd130613a0737163cd7dd197418c"
		"766b2c149d52ee94\",\"latestLedger\":51234568,\"latestLedgerCloseTime\":"
		"\"1784671650\","
		"\"oldestLedger\":51113609,\"oldestLedgerCloseTime\":\"1784065661\"}",
	[RPC_GET_TRANSACTIONS] = "{\"transactions\":[],\"latestLedger\":120,\"oldestLedger\":10,"
				 "\"cursor\":\"515396075520\"}",
};

static int method_index(const char *name)
{
	for (int m = 0; m < RPC_METHOD_COUNT; m++)
		if (strcmp(rpc_method_name((enum rpc_method)m), name) == 0)
			return m;
	return -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body,
			     size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static ssize_t chunk_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	if (pos >= (5u << 20))
		return MHD_CONTENT_READER_END_OF_STREAM;
	memset(buf, 'x', max);
	return (ssize_t)max;
}

static long arg_long(struct MHD_Connection *conn, const char *key, long dflt)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);

	return v ? atol(v) : dflt;
}

/* Answer one complete request body according to the URL. */
static enum MHD_Result answer(struct MHD_Connection *conn, const char *url,
			      const struct req_state *st)
{
	json_t *req = json_loadb(st->body ? st->body : "", st->len, 0, NULL);
	json_t *jid = req ? json_object_get(req, "id") : NULL;
	json_t *jm = req ? json_object_get(req, "method") : NULL;
	int64_t id = jid && json_is_integer(jid) ? json_integer_value(jid) : -1;
	int m = jm && json_is_string(jm) ? method_index(json_string_value(jm)) : -1;
	char *buf = NULL;
	int len = -1;
	enum MHD_Result ret;

	json_decref(req);
	pthread_mutex_lock(&fx.lock);
	if (fx.n_ids < MAX_IDS)
		fx.ids[fx.n_ids++] = id;
	pthread_mutex_unlock(&fx.lock);
	if (m < 0)
		return reply(conn, 400, "bad request", 11);
	if (strcmp(url, "/slow") == 0)
		sleep_ms(arg_long(conn, "ms", 100));
	if (strcmp(url, "/hang") == 0) {
		while (!atomic_load(&fx.stopping))
			sleep_ms(10);
		return MHD_NO;
	}
	if (strcmp(url, "/garbage") == 0)
		return reply(conn, 200, "this is not json", 16);
	if (strcmp(url, "/status") == 0)
		return reply(conn, (unsigned)arg_long(conn, "code", 500), "{}", 2);
	if (strcmp(url, "/big") == 0) {
		size_t n = 5u << 20;
		char *big = malloc(n);
		memset(big, ' ', n);
		ret = reply(conn, 200, big, n);
		free(big);
		return ret;
	}
	if (strcmp(url, "/bigchunked") == 0) {
		struct MHD_Response *r = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 32 * 1024, chunk_reader, NULL, NULL);
		ret = MHD_queue_response(conn, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strcmp(url, "/rpcerror") == 0)
		len = asprintf(&buf,
			       "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32603,"
			       "\"message\":\"latency too high\"}}",
			       (long long)id);
	else if (strcmp(url, "/wrongid") == 0)
		len = asprintf(&buf, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}",
			       (long long)id + 1, canned[m]);
	else
		len = asprintf(&buf, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}",
			       (long long)id, canned[m]);
	if (len < 0)
		return MHD_NO;
	if (strcmp(url, "/pad") == 0) {
		long want = arg_long(conn, "n", len);
		if (want > len) {
			char *p = realloc(buf, (size_t)want);
			memset(p + len, ' ', (size_t)(want - len));
			buf = p;
			len = (int)want;
		}
	}
	ret = reply(conn, 200, buf, (size_t)len);
	free(buf);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct req_state *st = *con_cls;
	enum MHD_Result ret;
	int now;

	if (!st) {
		*con_cls = calloc(1, sizeof(*st));
		atomic_fetch_add(&fx.requests, 1);
		return *con_cls ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		char *p = realloc(st->body, st->len + *upload_size + 1);
		if (!p)
			return MHD_NO;
		memcpy(p + st->len, upload, *upload_size);
		st->body = p;
		st->len += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}
	now = atomic_fetch_add(&fx.in_handler, 1) + 1;
	for (int m = atomic_load(&fx.max_in_handler); now > m;)
		if (atomic_compare_exchange_weak(&fx.max_in_handler, &m, now))
			break;
	ret = answer(conn, url, st);
	atomic_fetch_sub(&fx.in_handler, 1);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req_state *st = *con_cls;

	if (st) {
		free(st->body);
		free(st);
	}
	*con_cls = NULL;
}

static void notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
			enum MHD_ConnectionNotificationCode toe)
{
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add(&fx.connections, 1);
}

static void fixture_start(bool tls)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
	const union MHD_DaemonInfo *info;

	memset(&fx, 0, sizeof(fx));
	pthread_mutex_init(&fx.lock, NULL);
	if (tls)
		flags |= MHD_USE_TLS;
	fx.d = MHD_start_daemon(
		flags, 0, NULL, NULL, handler, NULL, MHD_OPTION_CONNECTION_LIMIT, 2000u,
		MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_THREAD_STACK_SIZE,
		(size_t)(256 * 1024), MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, notify_conn, NULL, MHD_OPTION_SOCK_ADDR,
		&(struct sockaddr_in){.sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
		tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, TEST_KEY,
		MHD_OPTION_HTTPS_MEM_CERT, TEST_CERT, MHD_OPTION_END);
	ck_assert_ptr_nonnull(fx.d);
	info = MHD_get_daemon_info(fx.d, MHD_DAEMON_INFO_BIND_PORT);
	ck_assert_ptr_nonnull(info);
	fx.port = info->port;
}

static void fixture_stop(void)
{
	atomic_store(&fx.stopping, true);
	if (fx.d)
		MHD_stop_daemon(fx.d);
	fx.d = NULL;
}

static void setup(void)
{
	fixture_start(false);
}

static void teardown(void)
{
	fixture_stop();
}

/* ---- client side helpers ------------------------------------------------- */

struct tally {
	struct rpc_client *client; /* for callbacks that start calls */
	int done;
	int by_status[RPC_E_CANCELLED + 1];
	enum rpc_status last;
	long last_http;
	char last_msg[OUTBOX_ERROR_MSG_MAX];
	int64_t last_rpc_code;
	uint32_t last_latest; /* getHealth latestLedger of the last good answer */
};

static void on_done(struct rpc_result *res, void *arg)
{
	struct tally *t = arg;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (res->status == RPC_E_CANCELLED) {
		/* The client is going away: it refuses new calls. */
		struct rpc_request req = {.method = RPC_GET_HEALTH};
		ck_assert_int_eq(rpc_call_start(t->client, &req, on_done, t, &err), OUTBOX_ESTATE);
	}

	t->done++;
	t->by_status[res->status]++;
	t->last = res->status;
	t->last_http = res->http_status;
	t->last_rpc_code = res->rpc_code;
	snprintf(t->last_msg, sizeof(t->last_msg), "%s", res->err.msg);
	if (res->status == RPC_OK && res->method == RPC_GET_HEALTH)
		t->last_latest = res->u.health.latest_ledger;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The caller-side loop: an outer epoll holding rpc_client_fd(), waiting
 * exactly as long as rpc_client_timeout_ms() says (capped by the test's own
 * deadline), then rpc_client_perform().
 */
static void run_until(struct rpc_client *c, const int *done, int want, int max_ms)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	double end = now_ms() + max_ms;

	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, rpc_client_fd(c), &ev), 0);
	while (*done < want && now_ms() < end) {
		int t = rpc_client_timeout_ms(c);
		int left = (int)(end - now_ms()) + 1;
		if (t < 0 || t > left)
			t = left;
		epoll_wait(ep, &ev, 1, t);
		rpc_client_perform(c);
	}
	close(ep);
}

static struct rpc_client *client_for(const char *path, long timeout_ms, size_t max_resp,
				     long max_conns)
{
	char url[256];
	struct rpc_config cfg = {.url = url,
				 .timeout_ms = timeout_ms,
				 .max_response_bytes = max_resp,
				 .max_host_connections = max_conns};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_client *c;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", fx.port, path);
	c = rpc_client_new(&cfg, &err);
	ck_assert_msg(c != NULL, "%s", err.msg);
	return c;
}

static void start(struct rpc_client *c, enum rpc_method m, struct tally *t)
{
	struct rpc_request req = {.method = m};
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_msg(rpc_call_start(c, &req, on_done, t, &err) == 0, "%s", err.msg);
}

/* ---- tests ----------------------------------------------------------------- */

/* Every method end to end through the blocking helper, parsed as documented. */
START_TEST(test_blocking_every_method)
{
	struct rpc_client *c = client_for("/ok", 5000, 0, 0);
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_result r;
	struct rpc_request req = {.method = RPC_GET_HEALTH};
	static const uint8_t acct[32] = {0x2e, 0x3c, 0x35, 0x01, 0x07, 0x49, 0xc1, 0xde,
					 0x3d, 0x9a, 0x5b, 0xdd, 0x6a, 0x31, 0xc1, 0x24,
					 0x58, 0x76, 0x8d, 0xa5, 0xce, 0x87, 0xcc, 0xa6,
					 0xaa, 0xd6, 0x3e, 0xbb, 0xaa, 0xef, 0x74, 0x32};

	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_str_eq(r.u.health.status, "healthy");
	rpc_result_release(&r);
	req.method = RPC_GET_NETWORK;
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_str_eq(r.u.network.passphrase, "Test SDF Network ; September 2015");
	rpc_result_release(&r);
	req.method = RPC_GET_LATEST_LEDGER;
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_uint_eq(r.u.latest_ledger.sequence, 51234567);
	rpc_result_release(&r);
	req.method = RPC_GET_FEE_STATS;
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_uint_eq(r.u.fee_stats.soroban.p99, 210);
	rpc_result_release(&r);
	req.method = RPC_GET_ACCOUNT;
	memcpy(req.account, acct, 32);
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_int_eq(r.u.account.seq_num, 1234567890122LL);
	rpc_result_release(&r);
	req.method = RPC_SIMULATE_TRANSACTION;
	req.transaction = "AAAAAgAA";
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_uint_eq(r.u.simulate.min_resource_fee, 61234);
	rpc_result_release(&r);
	req.method = RPC_SEND_TRANSACTION;
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_int_eq(r.u.send.status, RPC_SEND_ERROR);
	rpc_result_release(&r);
	req.method = RPC_GET_TRANSACTION;
	req.hash = "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94";
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_int_eq(r.u.get_tx.status, RPC_TX_NOT_FOUND);
	rpc_result_release(&r);
	req.method = RPC_GET_TRANSACTIONS;
	req.start_ledger = 100;
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_str_eq(r.u.get_txs.cursor, "515396075520");
	rpc_result_release(&r);
	/* A bad request never reaches the wire. */
	req.method = RPC_GET_TRANSACTION;
	req.hash = "nope";
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "hash: expected 64 hex digits");
	rpc_result_release(&r);
	ck_assert_int_eq(atomic_load(&fx.requests), 9);
	/* Sequential calls on one client share one keep-alive connection. */
	ck_assert_int_eq(atomic_load(&fx.connections), 1);
	rpc_client_free(c);
}
END_TEST

/* Hundreds of calls in flight at once, all completed by one loop. */
START_TEST(test_many_in_flight)
{
	enum { N = 300 };
	struct rpc_client *c = client_for("/slow?ms=400", 20000, 0, 0);
	struct tally t = {0};
	double t0;

	for (int i = 0; i < N; i++)
		start(c, (enum rpc_method)(i % 2 ? RPC_GET_HEALTH : RPC_GET_FEE_STATS), &t);
	ck_assert_uint_eq(rpc_client_pending(c), N);
	t0 = now_ms();
	run_until(c, &t.done, N, 30000);
	ck_assert_int_eq(t.done, N);
	ck_assert_int_eq(t.by_status[RPC_OK], N);
	ck_assert_uint_eq(t.last_latest, 51234567);
	ck_assert_uint_eq(rpc_client_pending(c), 0);
	/* Serially this would take N * 400 ms = 120 s. */
	ck_assert_msg(now_ms() - t0 < 15000, "took %.0f ms", now_ms() - t0);
	fprintf(stderr,
		"{\"test\":\"many_in_flight\",\"calls\":%d,\"server_delay_ms\":400,"
		"\"elapsed_ms\":%.0f,\"max_concurrent_at_server\":%d}\n",
		N, now_ms() - t0, atomic_load(&fx.max_in_handler));
	ck_assert_int_ge(atomic_load(&fx.max_in_handler), 100);
	/* Request ids are unique. */
	ck_assert_int_eq(fx.n_ids, N);
	for (int i = 0; i < fx.n_ids; i++)
		for (int j = i + 1; j < fx.n_ids; j++)
			ck_assert_msg(fx.ids[i] != fx.ids[j], "id %lld repeated",
				      (long long)fx.ids[i]);
	rpc_client_free(c);
}
END_TEST

/* With a per-host connection cap, calls queue in curl and connections are reused. */
START_TEST(test_connection_cap_and_reuse)
{
	enum { N = 200 };
	struct rpc_client *c = client_for("/slow?ms=20", 20000, 0, 4);
	struct tally t = {0};

	for (int i = 0; i < N; i++)
		start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, N, 30000);
	ck_assert_int_eq(t.by_status[RPC_OK], N);
	ck_assert_int_le(atomic_load(&fx.connections), 4);
	ck_assert_int_le(atomic_load(&fx.max_in_handler), 4);
	/* A second burst reuses the same connections. */
	t.done = 0;
	for (int i = 0; i < N; i++)
		start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, N, 30000);
	ck_assert_int_eq(t.by_status[RPC_OK], 2 * N);
	ck_assert_int_le(atomic_load(&fx.connections), 4);
	rpc_client_free(c);
}
END_TEST

/* A server that never answers: the total timeout fires via curl's timer. */
START_TEST(test_timeout_honoured)
{
	struct rpc_client *c = client_for("/hang", 300, 0, 0);
	struct tally t = {0};
	double t0 = now_ms(), el;

	start(c, RPC_GET_HEALTH, &t);
	start(c, RPC_GET_LATEST_LEDGER, &t);
	run_until(c, &t.done, 2, 10000);
	el = now_ms() - t0;
	ck_assert_int_eq(t.by_status[RPC_E_TIMEOUT], 2);
	ck_assert_msg(el >= 290 && el < 2000, "timed out after %.0f ms", el);
	{
		struct rpc_request req = {.method = RPC_GET_HEALTH};
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct rpc_result r;
		ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), -ETIMEDOUT);
		ck_assert_int_eq(r.status, RPC_E_TIMEOUT);
		rpc_result_release(&r);
	}
	rpc_client_free(c);
}
END_TEST

/* A slow answer inside the timeout still succeeds while others time out. */
START_TEST(test_timeout_mixed)
{
	struct rpc_client *fast = client_for("/slow?ms=100", 2000, 0, 0);
	struct rpc_client *hang = client_for("/hang", 500, 0, 0);
	struct tally t = {0}, th = {0};

	start(fast, RPC_GET_HEALTH, &t);
	start(hang, RPC_GET_HEALTH, &th);
	run_until(fast, &t.done, 1, 5000);
	ck_assert_int_eq(t.by_status[RPC_OK], 1);
	ck_assert_int_eq(th.done, 0);
	run_until(hang, &th.done, 1, 5000);
	ck_assert_int_eq(th.by_status[RPC_E_TIMEOUT], 1);
	rpc_client_free(fast);
	rpc_client_free(hang);
}
END_TEST

/* The connect timeout: a listener whose accept queue is full drops SYNs. */
START_TEST(test_connect_timeout)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), fill[8];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	struct rpc_config cfg = {.connect_timeout_ms = 300, .timeout_ms = 8000};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_client *c;
	struct tally t = {0};
	char url[64];
	double t0, el;

	ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(l, 0), 0);
	getsockname(l, (struct sockaddr *)&a, &alen);
	for (int i = 0; i < 8; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fill[i], (struct sockaddr *)&a, sizeof(a));
	}
	sleep_ms(50);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", ntohs(a.sin_port));
	cfg.url = url;
	c = rpc_client_new(&cfg, &err);
	ck_assert_ptr_nonnull(c);
	t0 = now_ms();
	start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, 1, 10000);
	el = now_ms() - t0;
	ck_assert_int_eq(t.done, 1);
	ck_assert_msg(t.last == RPC_E_TIMEOUT, "status %s: %s", rpc_status_name(t.last),
		      t.last_msg);
	ck_assert_msg(el < 3000, "connect timeout took %.0f ms", el);
	rpc_client_free(c);
	for (int i = 0; i < 8; i++)
		close(fill[i]);
	close(l);
}
END_TEST

START_TEST(test_connect_refused)
{
	struct rpc_client *c;
	struct tally t = {0};
	unsigned port = fx.port;

	fixture_stop(); /* nothing listens on the port any more */
	fx.port = port;
	c = client_for("/ok", 2000, 0, 0);
	start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, 1, 5000);
	ck_assert_int_eq(t.by_status[RPC_E_CONNECT], 1);
	{
		struct rpc_request req = {.method = RPC_GET_HEALTH};
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct rpc_result r;
		ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), -ECONNREFUSED);
		ck_assert_int_eq(classify_transport(r.status, r.rpc_code).action,
				 OUTCOME_TRANSIENT);
		rpc_result_release(&r);
	}
	rpc_client_free(c);
}
END_TEST

/* The size limit: exactly at the limit passes, one byte over aborts. */
START_TEST(test_size_limit)
{
	char path[64];
	struct rpc_client *c;
	struct tally t = {0};

	snprintf(path, sizeof(path), "/pad?n=%d", 8192);
	c = client_for(path, 5000, 8192, 0);
	start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, 1, 5000);
	ck_assert_msg(t.last == RPC_OK, "%s", t.last_msg);
	rpc_client_free(c);

	snprintf(path, sizeof(path), "/pad?n=%d", 8193);
	c = client_for(path, 5000, 8192, 0);
	start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, 2, 5000);
	ck_assert_int_eq(t.last, RPC_E_TOOBIG);
	ck_assert_str_eq(t.last_msg, "response: body exceeds 8192 bytes");
	rpc_client_free(c);
}
END_TEST

/* A per-call limit overrides the client's; getLatestLedger gets room for its meta. */
START_TEST(test_size_limit_per_call)
{
	struct rpc_client *c = client_for("/pad?n=9000", 5000, 8192, 0);
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_HEALTH};
	struct rpc_result r;

	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), OUTBOX_ETOOBIG);
	ck_assert_int_eq(r.status, RPC_E_TOOBIG);
	rpc_result_release(&r);
	req.max_response = 16384;
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	rpc_result_release(&r);
	req.max_response = 0;
	req.method = RPC_GET_LATEST_LEDGER;
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(r.u.latest_ledger.sequence, 51234567);
	rpc_result_release(&r);
	req.max_response = 4096;
	ck_assert_int_eq(rpc_call_blocking(c, &req, &r, &err), OUTBOX_ETOOBIG);
	rpc_result_release(&r);
	rpc_client_free(c);
}
END_TEST

/* 5 MiB against the default 4 MiB limit, with and without Content-Length. */
START_TEST(test_oversized_bodies)
{
	struct rpc_client *c = client_for("/big", 10000, 0, 0);
	struct rpc_client *cc = client_for("/bigchunked", 10000, 0, 0);
	struct tally t = {0}, tc = {0};

	start(c, RPC_GET_HEALTH, &t);
	start(cc, RPC_GET_HEALTH, &tc);
	run_until(c, &t.done, 1, 10000);
	run_until(cc, &tc.done, 1, 10000);
	ck_assert_int_eq(t.by_status[RPC_E_TOOBIG], 1);
	ck_assert_int_eq(tc.by_status[RPC_E_TOOBIG], 1);
	rpc_client_free(c);
	rpc_client_free(cc);
}
END_TEST

START_TEST(test_http_errors_and_garbage)
{
	struct rpc_client *c500 = client_for("/status?code=500", 5000, 0, 0);
	struct rpc_client *c503 = client_for("/status?code=503", 5000, 0, 0);
	struct rpc_client *cg = client_for("/garbage", 5000, 0, 0);
	struct rpc_client *cw = client_for("/wrongid", 5000, 0, 0);
	struct rpc_client *ce = client_for("/rpcerror", 5000, 0, 0);
	struct tally t = {0};

	start(c500, RPC_GET_HEALTH, &t);
	run_until(c500, &t.done, 1, 5000);
	ck_assert_int_eq(t.last, RPC_E_HTTP);
	ck_assert_int_eq(t.last_http, 500);
	ck_assert_str_eq(t.last_msg, "http: status 500");
	start(c503, RPC_GET_HEALTH, &t);
	run_until(c503, &t.done, 2, 5000);
	ck_assert_int_eq(t.last, RPC_E_HTTP);
	ck_assert_int_eq(t.last_http, 503);
	start(cg, RPC_GET_HEALTH, &t);
	run_until(cg, &t.done, 3, 5000);
	ck_assert_int_eq(t.last, RPC_E_PROTOCOL);
	ck_assert(strncmp(t.last_msg, "response: invalid json", 22) == 0);
	start(cw, RPC_GET_HEALTH, &t);
	run_until(cw, &t.done, 4, 5000);
	ck_assert_int_eq(t.last, RPC_E_PROTOCOL);
	ck_assert(strncmp(t.last_msg, "id: response id does not match", 30) == 0);
	start(ce, RPC_GET_HEALTH, &t);
	run_until(ce, &t.done, 5, 5000);
	ck_assert_int_eq(t.last, RPC_E_JSONRPC);
	ck_assert_int_eq(t.last_rpc_code, -32603);
	rpc_client_free(c500);
	rpc_client_free(c503);
	rpc_client_free(cg);
	rpc_client_free(cw);
	rpc_client_free(ce);
}
END_TEST

/* Freeing the client cancels calls in flight: each callback runs once. */
START_TEST(test_free_cancels)
{
	struct rpc_client *c = client_for("/hang", 30000, 0, 0);
	struct tally t = {.client = c};

	for (int i = 0; i < 5; i++)
		start(c, RPC_GET_HEALTH, &t);
	run_until(c, &t.done, 1, 200); /* let the requests reach the server */
	ck_assert_int_eq(t.done, 0);
	rpc_client_free(c);
	ck_assert_int_eq(t.done, 5);
	ck_assert_int_eq(t.by_status[RPC_E_CANCELLED], 5);
}
END_TEST

/* A callback may start the next call (the worker's claim -> submit chain). */
struct chain {
	struct rpc_client *c;
	int done;
	int ok;
};

static void on_chain(struct rpc_result *res, void *arg)
{
	struct chain *ch = arg;
	struct rpc_request req = {.method = RPC_GET_NETWORK};

	ch->done++;
	ch->ok += res->status == RPC_OK;
	if (ch->done < 20)
		ck_assert_int_eq(rpc_call_start(ch->c, &req, on_chain, ch, NULL), 0);
}

START_TEST(test_callback_starts_calls)
{
	struct chain ch = {.c = client_for("/ok", 5000, 0, 0)};
	struct rpc_request req = {.method = RPC_GET_NETWORK};

	ck_assert_int_eq(rpc_call_start(ch.c, &req, on_chain, &ch, NULL), 0);
	run_until(ch.c, &ch.done, 20, 10000);
	ck_assert_int_eq(ch.ok, 20);
	ck_assert_int_eq(atomic_load(&fx.connections), 1);
	rpc_client_free(ch.c);
}
END_TEST

START_TEST(test_bad_config)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_config cfg = {.url = "ftp://127.0.0.1/"};

	ck_assert_ptr_null(rpc_client_new(&cfg, &err));
	ck_assert_str_eq(err.msg, "url: 'ftp://127.0.0.1/' is not an http(s) url");
	cfg.url = "http://127.0.0.1/";
	cfg.timeout_ms = -1;
	ck_assert_ptr_null(rpc_client_new(&cfg, &err));
	ck_assert_int_eq(err.code, OUTBOX_EINVAL);
	rpc_client_free(NULL);
}
END_TEST

/* HTTPS: verification is on (self-signed fails) and a configured CA works. */
START_TEST(test_https)
{
	char url[128], ca[] = "/tmp/rpc_ca_XXXXXX";
	struct rpc_config cfg = {.url = url, .timeout_ms = 5000};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_HEALTH};
	struct rpc_client *c;
	struct rpc_result r;
	int fd;

	fixture_stop();
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		ck_abort_msg("libmicrohttpd built without TLS");
	}
	fixture_start(true);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/ok", fx.port);
	c = rpc_client_new(&cfg, &err);
	ck_assert_int_lt(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_int_eq(r.status, RPC_E_TRANSPORT);
	rpc_result_release(&r);
	rpc_client_free(c);

	fd = mkstemp(ca);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, TEST_CERT, strlen(TEST_CERT)), (ssize_t)strlen(TEST_CERT));
	close(fd);
	cfg.ca_file = ca;
	c = rpc_client_new(&cfg, &err);
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(r.u.health.status, "healthy");
	rpc_result_release(&r);
	rpc_client_free(c);
	unlink(ca);
}
END_TEST

/* ---- against stellar-sim ------------------------------------------------- */

static pid_t sim_pid = -1;
static char sim_url[64];

static void sim_setup(void)
{
	const char *dir = getenv("OUTBOX_BUILD_DIR");
	char bin[512], line[128] = "";
	int pfd[2];
	size_t n = 0;
	unsigned port = 0;
	struct pollfd pl;
	pid_t parent;

	ck_assert_msg(dir != NULL, "OUTBOX_BUILD_DIR is not set");
	snprintf(bin, sizeof(bin), "%s/stellar-sim", dir);
	ck_assert_msg(access(bin, X_OK) == 0, "%s is not built", bin);
	ck_assert_int_eq(pipe(pfd), 0);
	parent = getpid();
	sim_pid = fork();
	ck_assert_int_ge(sim_pid, 0);
	if (sim_pid == 0) {
		/* Dies with the test process even when a failed check skips teardown. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		setpgid(0, 0);
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		execl(bin, bin, "--listen", "127.0.0.1:0", "--ledger-ms", "200", "--debug",
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	pl.fd = pfd[0];
	pl.events = POLLIN;
	while (n < sizeof(line) - 1 && !strchr(line, '\n') && poll(&pl, 1, 10000) == 1) {
		ssize_t r = read(pfd[0], line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		line[n] = '\0';
	}
	close(pfd[0]);
	ck_assert_msg(sscanf(line, "listening 127.0.0.1:%u", &port) == 1, "sim said '%s'", line);
	snprintf(sim_url, sizeof(sim_url), "http://127.0.0.1:%u/", port);
}

static void sim_teardown(void)
{
	if (sim_pid > 0) {
		kill(-sim_pid, SIGTERM);
		kill(sim_pid, SIGTERM);
		waitpid(sim_pid, NULL, 0);
	}
	sim_pid = -1;
}

/* Create an account through the sim's debug API. */
static void sim_fund(const uint8_t key[32], const char *seq, const char *balance)
{
	char g[STRKEY_BUF], body[256], url[96];
	CURL *e = curl_easy_init();
	long code = 0;

	strkey_encode_account(key, g);
	snprintf(body, sizeof(body),
		 "{\"accounts\":[{\"id\":\"%s\",\"seq\":\"%s\",\"balance\":\"%s\"}]}", g, seq,
		 balance);
	snprintf(url, sizeof(url), "%sdebug/accounts", sim_url);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fwrite);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, stderr);
	ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	ck_assert_int_eq(code, 200);
	curl_easy_cleanup(e);
}

static struct rpc_client *sim_client(void)
{
	struct rpc_config cfg = {.url = sim_url, .timeout_ms = 5000};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_client *c = rpc_client_new(&cfg, &err);

	ck_assert_msg(c != NULL, "%s", err.msg);
	return c;
}

START_TEST(test_sim_every_method)
{
	struct rpc_client *c = sim_client();
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct rpc_request req = {.method = RPC_GET_HEALTH};
	struct rpc_result r;
	uint32_t oldest, latest;
	uint8_t key[32];

	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(r.u.health.status, "healthy");
	ck_assert_int_gt(r.u.health.latest_ledger_close_time, 0);
	oldest = r.u.health.oldest_ledger;
	latest = r.u.health.latest_ledger;
	rpc_result_release(&r);
	req.method = RPC_GET_NETWORK;
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(r.u.network.passphrase, "Standalone Network ; February 2017");
	rpc_result_release(&r);
	req.method = RPC_GET_FEE_STATS;
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	rpc_result_release(&r);

	/* Ledgers close every 200 ms: the sequence moves. */
	sleep_ms(600);
	req.method = RPC_GET_LATEST_LEDGER;
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert_uint_gt(r.u.latest_ledger.sequence, latest);
	ck_assert_ptr_nonnull(r.u.latest_ledger.header_xdr);
	rpc_result_release(&r);

	/* An account: absent, then funded with a known seqNum. */
	randombytes_buf(key, sizeof(key));
	req.method = RPC_GET_ACCOUNT;
	memcpy(req.account, key, 32);
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert(!r.u.account.found);
	rpc_result_release(&r);
	sim_fund(key, "1234567890122", "10000000000");
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert(r.u.account.found);
	ck_assert_int_eq(r.u.account.seq_num, 1234567890122LL);
	ck_assert_int_eq(r.u.account.balance, 10000000000LL);
	rpc_result_release(&r);

	req.method = RPC_GET_TRANSACTION;
	req.hash = "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94";
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(r.u.get_tx.status, RPC_TX_NOT_FOUND);
	ck_assert_int_eq(classify_get(r.u.get_tx.status, NULL).action, OUTCOME_PENDING);
	rpc_result_release(&r);

	req.method = RPC_GET_TRANSACTIONS;
	req.start_ledger = oldest;
	req.limit = 10;
	ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
	ck_assert(r.u.get_txs.cursor[0]);
	{
		char cursor[RPC_CURSOR_MAX];
		snprintf(cursor, sizeof(cursor), "%s", r.u.get_txs.cursor);
		rpc_result_release(&r);
		req.cursor = cursor;
		ck_assert_msg(rpc_call_blocking(c, &req, &r, &err) == 0, "%s", err.msg);
		rpc_result_release(&r);
	}

	/* Undecodable XDR: a JSON-RPC error, final for the op. */
	req.method = RPC_SEND_TRANSACTION;
	req.transaction = "AAAA";
	ck_assert_int_lt(rpc_call_blocking(c, &req, &r, &err), 0);
	ck_assert_int_eq(r.status, RPC_E_JSONRPC);
	ck_assert_int_eq(r.rpc_code, -32602);
	ck_assert_int_eq(classify_transport(r.status, r.rpc_code).action, OUTCOME_FINAL);
	rpc_result_release(&r);
	rpc_client_free(c);
}
END_TEST

START_TEST(test_sim_many_in_flight)
{
	enum { N = 200 };
	struct rpc_client *c = sim_client();
	struct tally t = {0};

	for (int i = 0; i < N; i++)
		start(c, (enum rpc_method)(i % 3 == 0 ? RPC_GET_HEALTH : RPC_GET_LATEST_LEDGER),
		      &t);
	run_until(c, &t.done, N, 30000);
	ck_assert_msg(t.by_status[RPC_OK] == N, "%d ok of %d: %s", t.by_status[RPC_OK], N,
		      t.last_msg);
	rpc_client_free(c);
}
END_TEST

static Suite *rpc_client_suite(void)
{
	Suite *s = suite_create("rpc_client");
	TCase *tc = tcase_create("transport"), *ts;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_blocking_every_method);
	tcase_add_test(tc, test_many_in_flight);
	tcase_add_test(tc, test_connection_cap_and_reuse);
	tcase_add_test(tc, test_timeout_honoured);
	tcase_add_test(tc, test_timeout_mixed);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_connect_refused);
	tcase_add_test(tc, test_size_limit);
	tcase_add_test(tc, test_size_limit_per_call);
	tcase_add_test(tc, test_oversized_bodies);
	tcase_add_test(tc, test_http_errors_and_garbage);
	tcase_add_test(tc, test_free_cancels);
	tcase_add_test(tc, test_callback_starts_calls);
	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_https);
	suite_add_tcase(s, tc);
	ts = tcase_create("stellar-sim");
	tcase_add_checked_fixture(ts, sim_setup, sim_teardown);
	tcase_set_timeout(ts, 60);
	tcase_add_test(ts, test_sim_every_method);
	tcase_add_test(ts, test_sim_many_in_flight);
	suite_add_tcase(s, ts);
	return s;
}

OUTBOX_CHECK_MAIN(rpc_client_suite)
