/*
 * rpc.h - asynchronous Stellar RPC client (JSON-RPC 2.0 over HTTP POST).
 *
 * One struct rpc_client drives any number of calls through one libcurl multi
 * handle, from one thread, without ever blocking. It plugs into the caller's
 * own epoll loop through a single file descriptor:
 *
 *	struct rpc_client *c = rpc_client_new(&cfg, &err);
 *	epoll_ctl(loop, EPOLL_CTL_ADD, rpc_client_fd(c), &ev);   (EPOLLIN)
 *	rpc_call_start(c, &req, on_done, arg, &err);
 *	for (;;) {
 *		epoll_wait(loop, ..., min(my_timeout, rpc_client_timeout_ms(c)));
 *		rpc_client_perform(c);   (whenever the fd is readable OR the
 *		                           timeout expired; calling it spuriously
 *		                           is harmless)
 *	}
 *
 * rpc_client_fd() is an internal epoll set holding curl's sockets (nested
 * epoll is valid); rpc_client_timeout_ms() is curl's next timer. Both can
 * change after every rpc_call_start() and rpc_client_perform(), so re-read the
 * timeout each turn of the loop.
 *
 * Callbacks run only from inside rpc_client_perform() / rpc_client_poll() /
 * rpc_call_blocking() / rpc_client_free(), never from rpc_call_start(). A
 * callback may start new calls; it must not free the client, nor drive the
 * loop itself (rpc_client_perform/poll, rpc_call_blocking).
 *
 * Every response is parsed defensively (rpc_parse.c): sizes bounded, numbers
 * range-checked, wrong JSON types rejected with a message naming the field
 * path, e.g. "result.inclusionFee.p70: expected decimal string, got number".
 *
 * The only global state is curl_global_init(), done once on first use.
 */
#ifndef OUTBOX_STELLAR_RPC_H
#define OUTBOX_STELLAR_RPC_H

#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RPC_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define RPC_DEFAULT_TIMEOUT_MS         15000
#define RPC_DEFAULT_MAX_RESPONSE       (4u << 20)
#define RPC_LATEST_LEDGER_MAX_RESPONSE (32u << 20)  /* see struct rpc_request */
#define RPC_XDR_MAX                    (256u << 10) /* any base64 XDR field, in or out */
#define RPC_MESSAGE_MAX                4096         /* simulate error text, JSON-RPC message */
#define RPC_PASSPHRASE_MAX             256
#define RPC_CURSOR_MAX                 128
#define RPC_GET_TXS_MAX                10000 /* transactions accepted in one page */

struct rpc_config {
	const char *url;           /* http:// or https://; copied */
	long connect_timeout_ms;   /* 0 = RPC_DEFAULT_CONNECT_TIMEOUT_MS */
	long timeout_ms;           /* whole call; 0 = RPC_DEFAULT_TIMEOUT_MS */
	size_t max_response_bytes; /* body limit, transfer aborted beyond; 0 = default */
	long max_host_connections; /* 0 = unlimited; beyond, calls queue inside curl */
	const char *ca_file;       /* NULL = libcurl's default CA store; copied */
};

enum rpc_method {
	RPC_GET_HEALTH,
	RPC_GET_NETWORK,
	RPC_GET_LATEST_LEDGER,
	RPC_GET_FEE_STATS,
	RPC_GET_ACCOUNT, /* getLedgerEntries for one account key */
	RPC_SIMULATE_TRANSACTION,
	RPC_SEND_TRANSACTION,
	RPC_GET_TRANSACTION,
	RPC_GET_TRANSACTIONS,
	RPC_METHOD_COUNT
};

/* JSON-RPC method name of m ("getHealth", ...). */
const char *rpc_method_name(enum rpc_method m);

/*
 * What to call. Only the fields of the chosen method are read, and only
 * during rpc_call_start() (the request body is built there and then).
 */
struct rpc_request {
	enum rpc_method method;
	uint8_t account[32];     /* RPC_GET_ACCOUNT: raw ed25519 key */
	const char *transaction; /* SIMULATE / SEND: base64 TransactionEnvelope */
	const char *hash;        /* GET_TRANSACTION: 64 hex characters */
	uint32_t start_ledger;   /* GET_TRANSACTIONS: used when cursor is NULL */
	const char *cursor;      /* GET_TRANSACTIONS: continue a previous page */
	uint32_t limit;          /* GET_TRANSACTIONS: page size, 0 = server default */
	/*
	 * Body limit for this call; 0 = the client's max_response_bytes, except
	 * getLatestLedger, whose answer carries the whole LedgerCloseMeta
	 * (metadataXdr, megabytes on a busy network) and so defaults to the
	 * larger of the client's limit and RPC_LATEST_LEDGER_MAX_RESPONSE.
	 * getTransactions pages carry every tx's meta too: keep pages small or
	 * raise this.
	 */
	size_t max_response;
};

/*
 * How a call ended. Everything but RPC_OK carries a message in rpc_result.err,
 * whose code is -ETIMEDOUT, -ECONNREFUSED (any connect failure), -EIO,
 * OUTBOX_ETOOBIG, OUTBOX_EPROTO (HTTP status, malformed body, JSON-RPC error)
 * or -ECANCELED. classify_transport() (classify.h) says what to do next.
 */
enum rpc_status {
	RPC_OK = 0,
	RPC_E_CONNECT,   /* could not resolve or connect */
	RPC_E_TIMEOUT,   /* connect or total timeout */
	RPC_E_TRANSPORT, /* any other transfer failure (reset, TLS, ...) */
	RPC_E_HTTP,      /* HTTP status other than 200 (rpc_result.http_status) */
	RPC_E_TOOBIG,    /* response larger than max_response_bytes */
	RPC_E_PROTOCOL,  /* body is not valid JSON-RPC or a field is malformed */
	RPC_E_JSONRPC,   /* the server answered a JSON-RPC error object */
	RPC_E_CANCELLED, /* the client was freed with the call in flight */
};

const char *rpc_status_name(enum rpc_status s);

struct rpc_health {
	char status[32]; /* "healthy" */
	uint32_t latest_ledger;
	uint32_t oldest_ledger;
	uint32_t ledger_retention_window;
	int64_t latest_ledger_close_time; /* -1 when absent (before v27.1) */
	int64_t oldest_ledger_close_time; /* -1 when absent */
};

struct rpc_network {
	char passphrase[RPC_PASSPHRASE_MAX];
	uint32_t protocol_version;
};

struct rpc_latest_ledger {
	char id[65]; /* hex ledger hash */
	uint32_t sequence;
	uint32_t protocol_version;
	int64_t close_time; /* -1 when absent (before v25) */
	char *header_xdr;   /* base64 LedgerHeader (holds baseFee, maxTxSetSize), or NULL */
};

/* All zero (ledger_count 0) when the window holds no transactions. */
struct rpc_fee_distribution {
	uint64_t max, min, mode;
	uint64_t p10, p20, p30, p40, p50, p60, p70, p80, p90, p95, p99;
	uint64_t transaction_count;
	uint32_t ledger_count;
};

struct rpc_fee_stats {
	struct rpc_fee_distribution soroban; /* sorobanInclusionFee */
	struct rpc_fee_distribution classic; /* inclusionFee */
	uint32_t latest_ledger;
};

struct rpc_account {
	bool found;      /* false: the account does not exist */
	int64_t seq_num; /* last sequence number used; next tx uses seq_num + 1 */
	int64_t balance;
	uint32_t num_sub_entries;
	uint32_t last_modified_ledger;
	uint32_t latest_ledger;
};

struct rpc_simulate {
	uint32_t latest_ledger;
	char *error;            /* non-NULL: simulation failed (HTTP 200), nothing below is set */
	char *transaction_data; /* base64 SorobanTransactionData */
	uint64_t min_resource_fee;
	char *result_xdr; /* base64 ScVal return value, or NULL */
	char **auth;      /* base64 SorobanAuthorizationEntry[n_auth] */
	size_t n_auth;
	char *restore_transaction_data; /* restorePreamble, or NULL */
	uint64_t restore_min_resource_fee;
};

enum rpc_send_status {
	RPC_SEND_PENDING,
	RPC_SEND_DUPLICATE,
	RPC_SEND_TRY_AGAIN_LATER,
	RPC_SEND_ERROR,
};

struct rpc_send {
	enum rpc_send_status status;
	char hash[65];
	uint32_t latest_ledger;
	int64_t latest_ledger_close_time;
	char *error_result_xdr; /* base64 TransactionResult; set (required) on ERROR only */
};

enum rpc_tx_status {
	RPC_TX_SUCCESS,
	RPC_TX_FAILED,
	RPC_TX_NOT_FOUND,
};

struct rpc_get_tx {
	enum rpc_tx_status status;
	char tx_hash[65]; /* "" if the server did not echo it */
	uint32_t latest_ledger;
	uint32_t oldest_ledger;
	int64_t latest_ledger_close_time;
	int64_t oldest_ledger_close_time;
	/* The rest only for SUCCESS and FAILED. */
	uint32_t ledger;
	int64_t created_at; /* ledger close time */
	uint32_t application_order;
	bool fee_bump;
	char *envelope_xdr;
	char *result_xdr; /* base64 TransactionResult */
};

struct rpc_tx_info {
	enum rpc_tx_status status; /* SUCCESS or FAILED */
	char tx_hash[65];
	uint32_t ledger;
	int64_t created_at; /* a JSON number here, unlike getTransaction */
	uint32_t application_order;
	bool fee_bump;
	char *envelope_xdr;
	char *result_xdr;
};

struct rpc_get_txs {
	struct rpc_tx_info *txs;
	size_t n_txs;
	uint32_t latest_ledger;
	uint32_t oldest_ledger;
	int64_t latest_ledger_close_time; /* -1 when absent */
	int64_t oldest_ledger_close_time; /* -1 when absent */
	char cursor[RPC_CURSOR_MAX];      /* pass back to get the next page */
};

/*
 * The outcome of one call. Strings that may be large are heap-allocated and
 * owned by the result: rpc_result_release() frees them. Inside a callback the
 * result belongs to the client and is released when the callback returns;
 * keep it with rpc_result_move().
 */
struct rpc_result {
	enum rpc_method method;
	enum rpc_status status;
	long http_status;        /* 0 if no HTTP response arrived */
	int64_t rpc_code;        /* RPC_E_JSONRPC: error.code (e.g. -32603) */
	char *rpc_message;       /* RPC_E_JSONRPC: error.message, or NULL */
	struct outbox_error err; /* message for every status but RPC_OK */
	union {
		struct rpc_health health;
		struct rpc_network network;
		struct rpc_latest_ledger latest_ledger;
		struct rpc_fee_stats fee_stats;
		struct rpc_account account;
		struct rpc_simulate simulate;
		struct rpc_send send;
		struct rpc_get_tx get_tx;
		struct rpc_get_txs get_txs;
	} u;
};

void rpc_result_init(struct rpc_result *r, enum rpc_method m);
void rpc_result_release(struct rpc_result *r);
/* Move src into dst (dst must be released or fresh); src is left empty. */
void rpc_result_move(struct rpc_result *dst, struct rpc_result *src);

typedef void (*rpc_done_fn)(struct rpc_result *res, void *arg);

struct rpc_client;

/* NULL on failure, with err filled (bad config, curl or epoll setup). */
struct rpc_client *rpc_client_new(const struct rpc_config *cfg, struct outbox_error *err);

/*
 * Abort every call in flight (each callback runs once with RPC_E_CANCELLED,
 * so callers can release their arg; rpc_call_start() fails with
 * OUTBOX_ESTATE from those callbacks), then free. NULL is allowed.
 */
void rpc_client_free(struct rpc_client *c);

/*
 * Queue a call. Returns 0 and guarantees exactly one later invocation of cb;
 * or returns a negative code (bad request fields, out of memory), fills err
 * and cb is never invoked.
 */
int rpc_call_start(struct rpc_client *c, const struct rpc_request *req, rpc_done_fn cb, void *arg,
		   struct outbox_error *err);

/* Epoll fd to watch for EPOLLIN; owned by the client. */
int rpc_client_fd(const struct rpc_client *c);

/* Milliseconds until rpc_client_perform() must run anyway; -1 = no timer. */
int rpc_client_timeout_ms(const struct rpc_client *c);

/* Drive ready sockets and due timers; run the callbacks of finished calls. */
void rpc_client_perform(struct rpc_client *c);

/* Calls started and not yet completed. */
size_t rpc_client_pending(const struct rpc_client *c);

/*
 * Stand-alone loop turn: wait up to max_ms (-1 = until something happens)
 * on the client's own fd and timer, then perform. For tools and tests that
 * have no loop of their own.
 */
void rpc_client_poll(struct rpc_client *c, int max_ms);

/*
 * Blocking helper (rpc_blocking.c): run one call to completion on c, driving
 * c's loop (other calls in flight on c progress and complete too). out is
 * initialised here and must be released by the caller. Returns 0 when
 * out->status is RPC_OK; otherwise a negative code, with out->err copied
 * into err.
 */
int rpc_call_blocking(struct rpc_client *c, const struct rpc_request *req, struct rpc_result *out,
		      struct outbox_error *err);

/*
 * Parse one HTTP 200 body for req (rpc_parse.c). expect_id is the JSON-RPC
 * id the request carried. Sets out->status to RPC_OK, RPC_E_PROTOCOL or
 * RPC_E_JSONRPC and returns 0 for RPC_OK, else a negative code. out must be
 * initialised for req->method. Exposed for tests and fuzzers.
 */
int rpc_response_parse(const struct rpc_request *req, uint64_t expect_id, const char *body,
		       size_t len, struct rpc_result *out);

/*
 * Build the JSON-RPC request body for req with the given id (rpc_parse.c).
 * Returns a malloc'd NUL-terminated string, or NULL with err filled when a
 * request field is invalid.
 */
char *rpc_request_body(const struct rpc_request *req, uint64_t id, struct outbox_error *err);

#endif
