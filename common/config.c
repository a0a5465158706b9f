/*
 * config.c - see config.h. The table below is the single source of truth
 * for every variable: its name, type, default, bounds, whether it may change
 * on reload, and its help text. Loading, --help and reload all walk it.
 */
#include "common/config.h"

#include "common/feemath.h"
#include "common/stellar/strkey.h"
#include "common/vshard.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum var_type {
	V_INT,      /* int64 in [min, max] */
	V_MULT,     /* double in (1.0, 100] */
	V_STR,      /* non-empty printable string */
	V_SECRET,   /* like V_STR, value never echoed */
	V_URL,      /* http:// or https:// URL */
	V_INSTANCE, /* [A-Za-z0-9_-]{1,32} */
	V_CONTRACT, /* C... strkey */
	V_HOSTPORT, /* host:port */
	V_LISTEN,   /* host:port or off */
	V_BROKERS,  /* host:port[,host:port...] */
	V_LOGFMT,   /* kv|json */
	V_LOGLEVEL, /* debug|info|warn|error */
	V_AGE,      /* off | <n>h | <n>d, stored in hours */
};

enum var_flags {
	VF_RELOAD = 1 << 0,   /* may change on SIGHUP */
	VF_REQUIRED = 1 << 1, /* must be set for a run */
};

struct var {
	const char *name;
	enum var_type type;
	unsigned flags;
	size_t off;      /* offsetof(struct outbox_config, ...) */
	size_t size;     /* sizeof the field (strings: buffer size) */
	const char *def; /* default as text; NULL = no default */
	int64_t min, max;
	const char *help;
};

#define F(field) offsetof(struct outbox_config, field), sizeof(((struct outbox_config *)0)->field)
#define MS_DAY   86400000LL
#define U32_MAX  4294967295LL

/* clang-format off */
static const struct var vars[] = {
	/* dispatch policy */
	{"OUTBOX_DISPATCH_INTERVAL_MS", V_INT, VF_RELOAD, F(dispatch_interval_ms), "1000", 10, 600000,
	 "worker sweep interval in ms"},
	{"OUTBOX_MAX_ATTEMPTS", V_INT, VF_RELOAD, F(max_attempts), "5", 1, 100,
	 "transient failures before an op is FAILED"},
	{"OUTBOX_BACKOFF_BASE_MS", V_INT, VF_RELOAD, F(backoff_base_ms), "2000", 1, MS_DAY,
	 "full-jitter retry backoff base in ms"},
	{"OUTBOX_BACKOFF_MAX_MS", V_INT, VF_RELOAD, F(backoff_max_ms), "120000", 1, MS_DAY,
	 "retry backoff cap in ms (>= OUTBOX_BACKOFF_BASE_MS)"},
	{"OUTBOX_SUBMITTED_TIMEOUT_MS", V_INT, VF_RELOAD, F(submitted_timeout_ms), "90000", 1000, MS_DAY,
	 "time in SUBMITTED before a fee bump, in ms"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", V_MULT, VF_RELOAD, F(fee_bump_multiplier), "2.0", 0, 0,
	 "fee multiplier per bump, compounding"},
	{"OUTBOX_FEE_BUMP_MAX_ATTEMPTS", V_INT, VF_RELOAD, F(fee_bump_max_attempts), "3", 0, 20,
	 "fee bumps per op at most"},
	{"OUTBOX_MAX_ABS_FEE", V_INT, VF_RELOAD, F(max_abs_fee), "10000000", 100, 1000000000000LL,
	 "absolute fee cap in stroops"},
	{"OUTBOX_LOW_DEFER_MS", V_INT, VF_RELOAD, F(low_defer_ms), "15000", 0, MS_DAY,
	 "LOW priority deferral step while congestion >= high, in ms"},
	{"OUTBOX_LOW_MAX_DEFER_MS", V_INT, VF_RELOAD, F(low_max_defer_ms), "300000", 0, 7 * MS_DAY,
	 "total LOW deferral at most, in ms (>= OUTBOX_LOW_DEFER_MS)"},
	{"OUTBOX_GLOBAL_MAX_IN_FLIGHT", V_INT, VF_RELOAD, F(global_max_in_flight), "1000", 1, 1000000,
	 "transactions in flight across all workers at most"},
	{"OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT", V_INT, VF_RELOAD, F(per_account_max_in_flight), "1", 1, 1,
	 "transactions in flight per source account at most"},
	{"OUTBOX_BATCH_SIZE", V_INT, VF_RELOAD, F(batch_size), "20", 1, 1000,
	 "ops claimed per sweep"},
	{"OUTBOX_LANE_WATCH_MS", V_INT, VF_RELOAD, F(lane_watch_ms), "5", 1, 40,
	 "between the lane watcher's looks for new NORMAL and LOW work while it streams in, in ms: "
	 "lower claims it sooner, at one more read of PostgreSQL per look"},
	{"OUTBOX_NORMAL_LOW_MAX_RATE", V_INT, VF_RELOAD, F(normal_low_max_rate), "0", 0, 1000000,
	 "NORMAL and LOW ops this instance's workers claim per second at most, shared evenly; "
	 "0: no cap. A cap keeps cores free for CRITICAL ops on a backlog"},
	/* fee oracle */
	{"FEE_ORACLE_POLL_MS", V_INT, VF_RELOAD, F(fee_oracle_poll_ms), "10000", 100, 600000,
	 "fee oracle poll interval in ms"},
	{"FEE_ORACLE_TTL_MS", V_INT, VF_RELOAD, F(fee_oracle_ttl_ms), "30000", 100, 3600000,
	 "snapshot validity in ms (>= FEE_ORACLE_POLL_MS); readers add 1 s grace"},
	{"FEE_ORACLE_MIN", V_INT, VF_RELOAD, F(fee_oracle_min), "100", 1, U32_MAX,
	 "published fee lower clamp in stroops (the floor is 100 regardless)"},
	{"FEE_ORACLE_MAX", V_INT, VF_RELOAD, F(fee_oracle_max), "50000", 1, U32_MAX,
	 "published fee upper clamp in stroops (>= FEE_ORACLE_MIN)"},
	{"FEE_ORACLE_DEFAULT_BASE_FEE", V_INT, VF_RELOAD, F(fee_oracle_default_base_fee), "100", 100,
	 U32_MAX, "base fee readers use when the snapshot is stale, in stroops"},
	{"FEE_ORACLE_DWELL_MS", V_INT, VF_RELOAD, F(fee_oracle_dwell_ms), "30000", 0, 3600000,
	 "a new congestion level must hold this long before it is published, in ms"},
	{"FEE_ORACLE_LEDGER_MAX_TX", V_INT, VF_RELOAD, F(fee_oracle_ledger_max_tx), "2000", 1, 1000000,
	 "Soroban transactions per ledger at capacity (ledgerMaxTxCount) for capacity usage"},
	{"OUTBOX_ARCHIVE_AFTER", V_AGE, VF_RELOAD, F(archive_after_h), "7d", 0, 0,
	 "CONFIRMED, FAILED and CANCELLED ops whose events are all on Kafka move from outbox.ops "
	 "to outbox.ops_archive this long after their last change (the oracle, every minute); "
	 "off: they stay"},
	/* supervision */
	{"OUTBOX_HEARTBEAT_TIMEOUT_MS", V_INT, VF_RELOAD, F(heartbeat_timeout_ms), "5000", 100, 600000,
	 "a child silent this long is killed and restarted, in ms"},
	{"OUTBOX_RESTART_BACKOFF_MAX_MS", V_INT, VF_RELOAD, F(restart_backoff_max_ms), "10000", 10,
	 600000, "cap of the exponential restart backoff per child, in ms"},
	{"OUTBOX_DRAIN_TIMEOUT_MS", V_INT, VF_RELOAD, F(drain_timeout_ms), "10000", 100, 600000,
	 "on SIGTERM, children get this long before SIGKILL, in ms"},
	{"OUTBOX_LOG_LEVEL", V_LOGLEVEL, VF_RELOAD, F(log_level), "info", 0, 0,
	 "debug|info|warn|error"},
	/* process group and connections */
	{"OUTBOX_DATABASE_URL", V_SECRET, VF_REQUIRED, F(database_url), NULL, 0, 0,
	 "PostgreSQL conninfo or URL (value never logged)"},
	{"OUTBOX_INSTANCE", V_INSTANCE, 0, F(instance), "default", 0, 0,
	 "instance name, [A-Za-z0-9_-]{1,32}; the segment is /outboxd-<instance>"},
	{"OUTBOX_WORKERS", V_INT, 0, F(workers), "4", 1, 64, "worker processes"},
	{"OUTBOX_VSHARDS", V_INT, 0, F(vshards), "64", 1, OUTBOX_VSHARDS_MAX,
	 "virtual shards"},
	{"STELLAR_RPC_URL", V_URL, VF_REQUIRED, F(rpc_url), NULL, 0, 0, "Stellar RPC endpoint, http(s)://"},
	{"STELLAR_NETWORK_PASSPHRASE", V_STR, VF_REQUIRED, F(network_passphrase), NULL, 0, 0,
	 "network passphrase"},
	{"OUTBOX_SIGNER_KEYS_FILE", V_STR, VF_REQUIRED, F(signer_keys_file), NULL, 0, 0,
	 "file of S... seeds, one per line, mode 0600 or stricter"},
	{"OUTBOX_VAULT_CONTRACT", V_CONTRACT, VF_REQUIRED, F(vault_contract), NULL, 0, 0,
	 "vault contract id, C... strkey"},
	{"OUTBOX_KAFKA_BROKERS", V_BROKERS, 0, F(kafka_brokers), NULL, 0, 0,
	 "Kafka bootstrap brokers, host:port[,host:port...]; unset: events stay in outbox.events"},
	{"OUTBOX_KAFKA_TOPIC", V_STR, 0, F(kafka_topic), "outbox.events", 0, 0, "Kafka topic"},
	{"OUTBOX_HTTP_ADDR", V_LISTEN, 0, F(http_addr), "127.0.0.1:8080", 0, 0,
	 "listen address of the HTTP gateway (admin API, /metrics, network conditions, "
	 "enqueue), host:port; off: no gateway process is forked"},
	{"OUTBOX_HTTP_THREADS", V_INT, 0, F(http_threads), "2", 1, 64,
	 "the gateway's HTTP threads (libmicrohttpd's pool, epoll)"},
	{"OUTBOX_HTTP_TIMEOUT_S", V_INT, 0, F(http_timeout_s), "30", 1, 3600,
	 "seconds an HTTP request may take to arrive whole (head and body), and a connection may stay idle"},
	{"OUTBOX_HTTP_MAX_CONNS", V_INT, 0, F(http_max_conns), "1000", 4, 60000,
	 "HTTP connections the gateway holds at once; more wait in the listen backlog"},
	{"OUTBOX_HTTP_MAX_CONNS_PER_IP", V_INT, 0, F(http_max_conns_per_ip), "256", 1, 60000,
	 "HTTP connections one client address may hold at once; more are closed at once"},
	{"OUTBOX_HTTP_RATE_LIMIT", V_INT, VF_RELOAD, F(http_rate_limit), "50", 1, 1000000,
	 "HTTP requests per second per client address (IPv6: per /64); more answer 429"},
	{"OUTBOX_HTTP_RATE_BURST", V_INT, VF_RELOAD, F(http_rate_burst), "100", 1, 1000000,
	 "HTTP requests a client may send at once before OUTBOX_HTTP_RATE_LIMIT applies"},
	{"OUTBOX_LOG_FORMAT", V_LOGFMT, 0, F(log_format), "kv", 0, 0, "kv|json"},
	{"OUTBOX_RUN_DIR", V_STR, 0, F(run_dir), NULL, 0, 0,
	 "directory of the instance lock file (unset: /run/outboxd if usable, else /tmp)"},
};
/* clang-format on */

#define N_VARS (sizeof(vars) / sizeof(vars[0]))

static const struct var *var_find(const char *name)
{
	for (size_t i = 0; i < N_VARS; i++)
		if (!strcmp(vars[i].name, name))
			return &vars[i];
	return NULL;
}

int config_parse_age(const char *s, int64_t *hours)
{
	char num[16];
	size_t n = strlen(s);
	int64_t v;

	if (!strcmp(s, "off")) {
		*hours = 0;
		return 0;
	}
	if (n < 2 || n > sizeof(num) || (s[n - 1] != 'h' && s[n - 1] != 'd'))
		return -EINVAL;
	memcpy(num, s, n - 1);
	num[n - 1] = '\0';
	if (config_parse_i64(num, &v) || v < 1 || v > (s[n - 1] == 'd' ? 3650 : 3650 * 24))
		return -EINVAL;
	*hours = s[n - 1] == 'd' ? v * 24 : v;
	return 0;
}

int config_parse_i64(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	return 0;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static bool valid_port(const char *p)
{
	int64_t port;

	return config_parse_i64(p, &port) == 0 && port <= 65535;
}

/* host:port, host non-empty without spaces or commas; [v6]:port allowed. */
static bool valid_hostport(const char *s, size_t n)
{
	const char *colon = NULL;
	char port[8];

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (isspace((unsigned char)s[i]) || s[i] == ',' || (unsigned char)s[i] < 0x20)
			return false;
		if (s[i] == ':')
			colon = s + i;
	}
	if (!colon || colon == s || (size_t)(s + n - colon - 1) >= sizeof(port) ||
	    colon + 1 == s + n)
		return false;
	memcpy(port, colon + 1, (size_t)(s + n - colon - 1));
	port[s + n - colon - 1] = '\0';
	return valid_port(port);
}

/* A listen address: host:port with a numeric host (IPv4, [IPv6]) or localhost. */
static bool valid_listen(const char *s)
{
	const char *colon = strrchr(s, ':');
	char host[64];
	unsigned char addr[16];
	size_t n;

	if (!colon || !valid_hostport(s, strlen(s)))
		return false;
	n = (size_t)(colon - s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		if (n - 2 >= sizeof(host))
			return false;
		memcpy(host, s + 1, n - 2);
		host[n - 2] = '\0';
		return inet_pton(AF_INET6, host, addr) == 1;
	}
	if (n >= sizeof(host))
		return false;
	memcpy(host, s, n);
	host[n] = '\0';
	return !strcmp(host, "localhost") || inet_pton(AF_INET, host, addr) == 1;
}

static bool valid_url(const char *s)
{
	const char *host;

	if (!strncmp(s, "http://", 7))
		host = s + 7;
	else if (!strncmp(s, "https://", 8))
		host = s + 8;
	else
		return false;
	if (!*host || *host == '/' || *host == ':')
		return false;
	for (const char *p = s; *p; p++)
		if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* What a variable accepts, for the error message and --help. */
static void describe(const struct var *v, char *buf, size_t cap)
{
	switch (v->type) {
	case V_INT:
		if (v->min ==
		    v->max) /* one value: the only one is OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT */
			snprintf(
				buf, cap,
				"%lld only: the network queues one transaction per source account, "
				"and a second would sign the next sequence number before the first "
				"is "
				"proven to have used its own",
				(long long)v->min);
		else
			snprintf(buf, cap, "an integer in %lld..%lld", (long long)v->min,
				 (long long)v->max);
		break;
	case V_MULT:
		snprintf(buf, cap, "a number x with 1.0 < x <= 100, at most 3 decimals");
		break;
	case V_STR:
	case V_SECRET:
		snprintf(buf, cap, "a non-empty printable string of at most %zu bytes",
			 v->size - 1);
		break;
	case V_URL:
		snprintf(buf, cap, "an http:// or https:// URL of at most %zu bytes", v->size - 1);
		break;
	case V_INSTANCE:
		snprintf(buf, cap, "1 to 32 characters from [A-Za-z0-9_-]");
		break;
	case V_CONTRACT:
		snprintf(buf, cap, "a contract id strkey (C..., 56 characters)");
		break;
	case V_HOSTPORT:
		snprintf(buf, cap, "host:port with port 0..65535");
		break;
	case V_LISTEN:
		snprintf(buf, cap,
			 "IPv4:port, [IPv6]:port or localhost:port with port 0..65535, or off");
		break;
	case V_BROKERS:
		snprintf(buf, cap, "host:port[,host:port...]");
		break;
	case V_LOGFMT:
		snprintf(buf, cap, "kv or json");
		break;
	case V_LOGLEVEL:
		snprintf(buf, cap, "debug, info, warn or error");
		break;
	case V_AGE:
		snprintf(buf, cap, "<n>h or <n>d (hours or days), 1h to 3650d, or off");
		break;
	}
}

static int bad_value(const struct var *v, const char *val, const char *why,
		     struct outbox_error *err)
{
	char allowed[256];

	describe(v, allowed, sizeof(allowed));
	if (v->type == V_SECRET)
		return outbox_error_set(err, OUTBOX_EINVAL, v->name,
					"value (hidden) is not allowed%s%s (%s)", why ? ": " : "",
					why ? why : "", allowed);
	return outbox_error_set(err, OUTBOX_EINVAL, v->name, "'%.200s' is not allowed%s%s (%s)",
				val, why ? ": " : "", why ? why : "", allowed);
}

static int set_string(const struct var *v, void *field, const char *val, struct outbox_error *err)
{
	size_t n = strlen(val);

	if (n == 0)
		return bad_value(v, val, "empty", err);
	if (n >= v->size)
		return bad_value(v, v->type == V_SECRET ? "" : val, "too long", err);
	if (!printable(val))
		return bad_value(v, "", "control character", err);
	memcpy(field, val, n + 1);
	return 0;
}

static int parse_one(const struct var *v, struct outbox_config *cfg, const char *val,
		     struct outbox_error *err)
{
	void *field = (char *)cfg + v->off;
	int64_t i;
	int rc;

	switch (v->type) {
	case V_INT:
		rc = config_parse_i64(val, &i);
		if (rc == -ERANGE)
			return bad_value(v, val, "out of range", err);
		if (rc || i < v->min || i > v->max)
			return bad_value(v, val, NULL, err);
		*(int64_t *)field = i;
		return 0;
	case V_MULT: {
		/* feemath's parser: exactly what the bump arithmetic computes with */
		uint32_t milli;

		if (fee_multiplier_parse(val, &milli))
			return bad_value(v, val, NULL, err);
		cfg->fee_bump_multiplier_milli = milli;
		*(double *)field = (double)milli / FEE_MULT_SCALE;
		return 0;
	}
	case V_STR:
	case V_SECRET:
		return set_string(v, field, val, err);
	case V_URL:
		if (strlen(val) >= v->size || !valid_url(val))
			return bad_value(v, val, NULL, err);
		return set_string(v, field, val, err);
	case V_INSTANCE: {
		size_t n = strlen(val);

		if (n < 1 || n > CONFIG_INSTANCE_MAX)
			return bad_value(v, val, NULL, err);
		for (size_t k = 0; k < n; k++)
			if (!isalnum((unsigned char)val[k]) && val[k] != '_' && val[k] != '-')
				return bad_value(v, val, NULL, err);
		return set_string(v, field, val, err);
	}
	case V_CONTRACT: {
		uint8_t id[32];
		struct outbox_error e2 = OUTBOX_ERROR_INIT;

		if (strlen(val) >= v->size)
			return bad_value(v, val, NULL, err);
		rc = strkey_decode_contract(val, id, v->name, &e2);
		if (rc < 0)
			return bad_value(v, val, strkey_status_name(rc), err);
		return set_string(v, field, val, err);
	}
	case V_LISTEN:
		if (!strcmp(val, "off"))
			return set_string(v, field, val, err);
		if (strlen(val) >= v->size || !valid_listen(val))
			return bad_value(v, val, NULL, err);
		/* fall through */
	case V_HOSTPORT:
		if (strlen(val) >= v->size || !valid_hostport(val, strlen(val)))
			return bad_value(v, val, NULL, err);
		return set_string(v, field, val, err);
	case V_BROKERS: {
		const char *p = val;

		if (strlen(val) >= v->size)
			return bad_value(v, val, NULL, err);
		for (;;) {
			const char *comma = strchr(p, ',');
			size_t n = comma ? (size_t)(comma - p) : strlen(p);

			if (!valid_hostport(p, n))
				return bad_value(v, val, NULL, err);
			if (!comma)
				break;
			p = comma + 1;
		}
		return set_string(v, field, val, err);
	}
	case V_LOGFMT:
		if (log_format_parse(val, (enum log_format *)field))
			return bad_value(v, val, NULL, err);
		return 0;
	case V_LOGLEVEL:
		if (log_level_parse(val, (enum log_level *)field))
			return bad_value(v, val, NULL, err);
		return 0;
	case V_AGE:
		if (config_parse_age(val, (int64_t *)field))
			return bad_value(v, val, NULL, err);
		return 0;
	}
	return bad_value(v, val, NULL, err);
}

void config_defaults(struct outbox_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_VARS; i++)
		if (vars[i].def && parse_one(&vars[i], cfg, vars[i].def, NULL))
			abort(); /* a default outside its own bounds is a bug in the table */
}

static int relation(const char *name, int64_t v, const char *op, const char *other, int64_t ov,
		    struct outbox_error *err)
{
	return outbox_error_set(err, OUTBOX_EINVAL, name,
				"'%lld' is not allowed (must be %s %s = %lld)", (long long)v, op,
				other, (long long)ov);
}

static int check_relations(const struct outbox_config *c, struct outbox_error *err)
{
	if (c->backoff_max_ms < c->backoff_base_ms)
		return relation("OUTBOX_BACKOFF_MAX_MS", c->backoff_max_ms,
				">=", "OUTBOX_BACKOFF_BASE_MS", c->backoff_base_ms, err);
	if (c->low_max_defer_ms < c->low_defer_ms)
		return relation("OUTBOX_LOW_MAX_DEFER_MS", c->low_max_defer_ms,
				">=", "OUTBOX_LOW_DEFER_MS", c->low_defer_ms, err);
	if (c->fee_oracle_max < c->fee_oracle_min)
		return relation("FEE_ORACLE_MAX", c->fee_oracle_max, ">=", "FEE_ORACLE_MIN",
				c->fee_oracle_min, err);
	if (c->fee_oracle_ttl_ms < c->fee_oracle_poll_ms)
		return relation("FEE_ORACLE_TTL_MS", c->fee_oracle_ttl_ms,
				">=", "FEE_ORACLE_POLL_MS", c->fee_oracle_poll_ms, err);
	return 0;
}

int config_load(struct outbox_config *cfg, config_lookup_fn lookup, void *ctx, unsigned flags,
		struct outbox_error *err)
{
	int rc;

	config_defaults(cfg);
	for (size_t i = 0; i < N_VARS; i++) {
		const struct var *v = &vars[i];
		const char *val = lookup(ctx, v->name);

		if (!val) {
			if ((v->flags & VF_REQUIRED) && !(flags & CONFIG_NO_REQUIRED))
				return outbox_error_set(err, OUTBOX_EINVAL, v->name,
							"is required and not set");
			continue;
		}
		rc = parse_one(v, cfg, val, err);
		if (rc)
			return rc;
	}
	return check_relations(cfg, err);
}

/* ---- the environment overlaid by OUTBOX_CONFIG_FILE ------------------- */

#define FILE_VARS_MAX N_VARS

struct overlay {
	const char *key[FILE_VARS_MAX];
	const char *val[FILE_VARS_MAX];
	size_t n;
	char *text; /* owns the strings above */
};

static const char *overlay_lookup(void *ctx, const char *name)
{
	struct overlay *o = ctx;

	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->key[i], name))
			return o->val[i];
	return getenv(name);
}

static int overlay_set(void *ctx, const char *key, const char *value)
{
	struct overlay *o = ctx;

	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->key[i], key))
			return -EEXIST;
	if (o->n == FILE_VARS_MAX)
		return -E2BIG;
	o->key[o->n] = key;
	o->val[o->n] = value;
	o->n++;
	return 0;
}

static char *trim(char *s, char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*end = '\0';
	return s;
}

int config_parse_file_text(const char *label, char *text,
			   int (*set)(void *ctx, const char *key, const char *value), void *ctx,
			   struct outbox_error *err)
{
	unsigned line = 0;
	char *p = text;

	while (*p) {
		char *nl = strchr(p, '\n');
		char *end = nl ? nl : p + strlen(p);
		char *next = nl ? nl + 1 : end;
		char *eq, *key, *val;
		int rc;

		line++;
		key = trim(p, end);
		p = next;
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq)
			return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
						"'%s' line %u: expected KEY=VALUE", label, line);
		val = trim(eq + 1, eq + 1 + strlen(eq + 1));
		key = trim(key, eq);
		if (!var_find(key) || !strcmp(key, "OUTBOX_CONFIG_FILE"))
			return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
						"'%s' line %u: unknown variable '%.64s'", label,
						line, key);
		rc = set(ctx, key, val);
		if (rc == -EEXIST)
			return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
						"'%s' line %u: '%s' set twice", label, line, key);
		if (rc)
			return outbox_error_set(err, rc, "OUTBOX_CONFIG_FILE",
						"'%s' line %u: too many settings", label, line);
	}
	return 0;
}

static int read_bounded(const char *path, char **out, struct outbox_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t n = 0;

	if (fd < 0)
		return outbox_error_set(err, -errno, "OUTBOX_CONFIG_FILE", "cannot open '%s': %s",
					path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CONFIG_FILE_MAX) {
		close(fd);
		return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
					"'%s' is not a regular file of at most %d bytes", path,
					CONFIG_FILE_MAX);
	}
	buf = malloc(CONFIG_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return outbox_error_set(err, -ENOMEM, "OUTBOX_CONFIG_FILE", "out of memory");
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, CONFIG_FILE_MAX + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			free(buf);
			return outbox_error_set(err, -e, "OUTBOX_CONFIG_FILE",
						"cannot read '%s': %s", path, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > CONFIG_FILE_MAX) {
			close(fd);
			free(buf);
			return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
						"'%s' is larger than %d bytes", path,
						CONFIG_FILE_MAX);
		}
	}
	close(fd);
	if (memchr(buf, '\0', n)) {
		free(buf);
		return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
					"'%s' contains a NUL byte", path);
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

int config_load_env(struct outbox_config *cfg, unsigned flags, struct outbox_error *err)
{
	struct overlay o = {.n = 0, .text = NULL};
	const char *path = getenv("OUTBOX_CONFIG_FILE");
	int rc;

	if (path && *path) {
		if (strlen(path) >= sizeof(cfg->config_file))
			return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_CONFIG_FILE",
						"path is longer than %zu bytes",
						sizeof(cfg->config_file) - 1);
		rc = read_bounded(path, &o.text, err);
		if (rc)
			return rc;
		rc = config_parse_file_text(path, o.text, overlay_set, &o, err);
		if (rc)
			goto out;
	}
	rc = config_load(cfg, overlay_lookup, &o, flags, err);
	if (!rc && path)
		snprintf(cfg->config_file, sizeof(cfg->config_file), "%s", path);
out:
	free(o.text);
	return rc;
}

static bool field_equal(const struct var *v, const struct outbox_config *a,
			const struct outbox_config *b)
{
	const char *fa = (const char *)a + v->off, *fb = (const char *)b + v->off;

	switch (v->type) {
	case V_INT:
	case V_AGE:
		return *(const int64_t *)fa == *(const int64_t *)fb;
	case V_MULT:
		return *(const double *)fa == *(const double *)fb;
	case V_LOGFMT:
	case V_LOGLEVEL:
		return !memcmp(fa, fb, v->size);
	default:
		return !strcmp(fa, fb);
	}
}

int config_reload(const struct outbox_config *cur, struct outbox_config *next,
		  struct outbox_error *err)
{
	int rc = config_load_env(next, 0, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < N_VARS; i++) {
		if (vars[i].flags & VF_RELOAD)
			continue;
		if (!field_equal(&vars[i], cur, next))
			return outbox_error_set(err, OUTBOX_EINVAL, vars[i].name,
						"cannot change while running (restart needed)");
	}
	return 0;
}

bool config_reloadable_differs(const struct outbox_config *a, const struct outbox_config *b)
{
	for (size_t i = 0; i < N_VARS; i++)
		if ((vars[i].flags & VF_RELOAD) && !field_equal(&vars[i], a, b))
			return true;
	return false;
}

size_t config_var_count(void)
{
	return N_VARS;
}

const char *config_var_name(size_t i)
{
	return i < N_VARS ? vars[i].name : NULL;
}

void config_print_help(FILE *f)
{
	char allowed[256];

	fprintf(f, "Configuration (environment; OUTBOX_CONFIG_FILE=path adds KEY=VALUE lines that\n"
		   "override it and is re-read on SIGHUP). [reload] variables change on SIGHUP;\n"
		   "the others need a restart. A bad value stops the start.\n\n");
	for (size_t i = 0; i < N_VARS; i++) {
		const struct var *v = &vars[i];

		describe(v, allowed, sizeof(allowed));
		fprintf(f, "  %-34s default: %s%s\n      %s\n      allowed: %s\n", v->name,
			v->def                   ? v->def
			: v->flags & VF_REQUIRED ? "(none; required)"
						 : "(unset)",
			v->flags & VF_RELOAD ? "  [reload]" : "", v->help, allowed);
	}
}
