/*
 * config.h - the whole configuration of outboxd, in one table.
 *
 * Every setting comes from the environment (unset means the default). An
 * optional KEY=VALUE file named by OUTBOX_CONFIG_FILE overrides the
 * environment, variable by variable; it is the only source that can change
 * while the daemon runs, because a running process cannot see a new
 * environment.
 *
 * Loading validates every value and then the relations between values
 * (OUTBOX_BACKOFF_MAX_MS >= OUTBOX_BACKOFF_BASE_MS, ...). The first bad value
 * stops the load with one line naming the variable, the value and what is
 * allowed, e.g.
 *
 *	OUTBOX_WORKERS: '0' is not allowed (an integer in 1..64)
 *
 * Values of secret variables (OUTBOX_DATABASE_URL) are never echoed.
 *
 * Reload (SIGHUP): the supervisor calls config_reload(), which re-reads the
 * environment plus the file, validates the result as a whole and refuses it
 * if it is invalid or if it changes a variable that needs a restart (marked
 * "restart" in --help: instance, workers, vshards, URLs, ...). On success
 * the supervisor signals its children, and each child runs the same
 * config_reload() against its own copy (see supervisor/reload.c for why this
 * is enough). A child forked later inherits the supervisor's current copy.
 *
 * struct outbox_config is plain data (fixed-size strings, no pointers), so it
 * can be copied, compared and inherited across fork().
 */
#ifndef OUTBOX_COMMON_CONFIG_H
#define OUTBOX_COMMON_CONFIG_H

#include "common/error.h"
#include "common/log.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_STR_MAX      1024 /* URLs, paths, broker lists */
#define CONFIG_INSTANCE_MAX 32
#define CONFIG_FILE_MAX     (64 * 1024) /* bound on OUTBOX_CONFIG_FILE's size */

struct outbox_config {
	/* Dispatch policy (reloadable). */
	int64_t dispatch_interval_ms;       /* OUTBOX_DISPATCH_INTERVAL_MS */
	int64_t max_attempts;               /* OUTBOX_MAX_ATTEMPTS */
	int64_t backoff_base_ms;            /* OUTBOX_BACKOFF_BASE_MS */
	int64_t backoff_max_ms;             /* OUTBOX_BACKOFF_MAX_MS */
	int64_t submitted_timeout_ms;       /* OUTBOX_SUBMITTED_TIMEOUT_MS */
	double fee_bump_multiplier;         /* OUTBOX_FEE_BUMP_MULTIPLIER */
	uint32_t fee_bump_multiplier_milli; /* the same in thousandths (common/feemath.h) */
	int64_t fee_bump_max_attempts;      /* OUTBOX_FEE_BUMP_MAX_ATTEMPTS */
	int64_t max_abs_fee;                /* OUTBOX_MAX_ABS_FEE, stroops */
	int64_t low_defer_ms;               /* OUTBOX_LOW_DEFER_MS */
	int64_t low_max_defer_ms;           /* OUTBOX_LOW_MAX_DEFER_MS */
	int64_t global_max_in_flight;       /* OUTBOX_GLOBAL_MAX_IN_FLIGHT */
	int64_t per_account_max_in_flight;  /* OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT */
	int64_t batch_size;                 /* OUTBOX_BATCH_SIZE */
	int64_t lane_watch_ms;              /* OUTBOX_LANE_WATCH_MS */
	int64_t normal_low_max_rate;        /* OUTBOX_NORMAL_LOW_MAX_RATE, ops/s; 0 = none */

	/* Fee oracle (reloadable). */
	int64_t fee_oracle_poll_ms;          /* FEE_ORACLE_POLL_MS */
	int64_t fee_oracle_ttl_ms;           /* FEE_ORACLE_TTL_MS */
	int64_t fee_oracle_min;              /* FEE_ORACLE_MIN, stroops */
	int64_t fee_oracle_max;              /* FEE_ORACLE_MAX, stroops */
	int64_t fee_oracle_default_base_fee; /* FEE_ORACLE_DEFAULT_BASE_FEE */
	int64_t fee_oracle_dwell_ms;         /* FEE_ORACLE_DWELL_MS */
	int64_t fee_oracle_ledger_max_tx;    /* FEE_ORACLE_LEDGER_MAX_TX */
	int64_t archive_after_h;             /* OUTBOX_ARCHIVE_AFTER in hours; 0 = off */

	/* Supervision (reloadable). */
	int64_t heartbeat_timeout_ms;   /* OUTBOX_HEARTBEAT_TIMEOUT_MS */
	int64_t restart_backoff_max_ms; /* OUTBOX_RESTART_BACKOFF_MAX_MS */
	int64_t drain_timeout_ms;       /* OUTBOX_DRAIN_TIMEOUT_MS */
	enum log_level log_level;       /* OUTBOX_LOG_LEVEL */

	/* Process group and connections (restart needed). */
	char database_url[CONFIG_STR_MAX];      /* OUTBOX_DATABASE_URL (secret) */
	char instance[CONFIG_INSTANCE_MAX + 1]; /* OUTBOX_INSTANCE */
	int64_t workers;                        /* OUTBOX_WORKERS */
	int64_t vshards;                        /* OUTBOX_VSHARDS */
	char rpc_url[CONFIG_STR_MAX];           /* STELLAR_RPC_URL */
	char network_passphrase[256];           /* STELLAR_NETWORK_PASSPHRASE */
	char signer_keys_file[CONFIG_STR_MAX];  /* OUTBOX_SIGNER_KEYS_FILE */
	char vault_contract[64];                /* OUTBOX_VAULT_CONTRACT, C... */
	char kafka_brokers[CONFIG_STR_MAX];     /* OUTBOX_KAFKA_BROKERS */
	char kafka_topic[256];                  /* OUTBOX_KAFKA_TOPIC */
	char http_addr[256];                    /* OUTBOX_HTTP_ADDR ("off": no gateway) */
	int64_t http_threads;                   /* OUTBOX_HTTP_THREADS */
	int64_t http_timeout_s;                 /* OUTBOX_HTTP_TIMEOUT_S */
	int64_t http_max_conns;                 /* OUTBOX_HTTP_MAX_CONNS */
	int64_t http_max_conns_per_ip;          /* OUTBOX_HTTP_MAX_CONNS_PER_IP */
	int64_t http_rate_limit;                /* OUTBOX_HTTP_RATE_LIMIT (reloadable) */
	int64_t http_rate_burst;                /* OUTBOX_HTTP_RATE_BURST (reloadable) */
	enum log_format log_format;             /* OUTBOX_LOG_FORMAT */
	char run_dir[CONFIG_STR_MAX];           /* OUTBOX_RUN_DIR (read by common/shm too) */
	char config_file[CONFIG_STR_MAX];       /* OUTBOX_CONFIG_FILE */
};

/*
 * Where values come from: returns the raw value of variable name, or NULL
 * when it is unset. config_load_env() uses getenv() overlaid with the file.
 */
typedef const char *(*config_lookup_fn)(void *ctx, const char *name);

enum config_flags {
	/* Do not insist on the variables a run needs (for --help, tests). */
	CONFIG_NO_REQUIRED = 1 << 0,
};

/* Fill cfg with every default (required strings left empty). */
void config_defaults(struct outbox_config *cfg);

/*
 * Load and validate every variable through lookup, then the relations.
 * Returns 0, or OUTBOX_EINVAL with err naming the variable and the value.
 * cfg is fully written on success and unspecified on failure.
 */
int config_load(struct outbox_config *cfg, config_lookup_fn lookup, void *ctx, unsigned flags,
		struct outbox_error *err);

/*
 * The real thing: the environment, overlaid by OUTBOX_CONFIG_FILE when it is
 * set (a missing or malformed file is an error naming its path and line).
 */
int config_load_env(struct outbox_config *cfg, unsigned flags, struct outbox_error *err);

/*
 * Build next from the environment + the file again and accept it only if
 * it is valid and every restart-only variable equals cur's. On failure next
 * is unspecified and err names the first problem; the caller keeps cur.
 */
int config_reload(const struct outbox_config *cur, struct outbox_config *next,
		  struct outbox_error *err);

/* True when a and b differ in some reloadable variable (used for logging). */
bool config_reloadable_differs(const struct outbox_config *a, const struct outbox_config *b);

/* The table, for tests and tools: number of variables and the i-th name. */
size_t config_var_count(void);
const char *config_var_name(size_t i);

/* Print every variable, its default and what it accepts (outboxd --help). */
void config_print_help(FILE *f);

/*
 * Strict unsigned decimal: digits only (no sign, space, or trailing bytes),
 * at most INT64_MAX. Returns 0 or -EINVAL / -ERANGE. Exported for other
 * parsers that want the same rules.
 */
int config_parse_i64(const char *s, int64_t *out);
/*
 * An archive retention: "off" (0), "<n>h" or "<n>d" (hours, days), 1 h to
 * 3650 d; *hours receives it. 0 on success, -EINVAL otherwise.
 */
int config_parse_age(const char *s, int64_t *hours);

/*
 * Parse a KEY=VALUE file body (bounded, NUL-terminated): '#' comments and
 * blank lines allowed, spaces around KEY and VALUE trimmed, KEY must be a
 * known variable, no KEY twice. Calls set(ctx, key, value) per line.
 * Errors name the file (label) and the line number.
 */
int config_parse_file_text(const char *label, char *text,
			   int (*set)(void *ctx, const char *key, const char *value), void *ctx,
			   struct outbox_error *err);

#endif
