/*
 * check_config.c - the configuration table: defaults, every variable's
 * bad-value message, relations, required variables, secrets never echoed,
 * the OUTBOX_CONFIG_FILE overlay and reload rules.
 */
#include "common/config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/support/check_main.h"

#define CONTRACT "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"

/* A lookup over a small KEY=VALUE list; later entries override earlier. */
struct kv {
	const char *k[64];
	const char *v[64];
	int n;
};

static const char *kv_lookup(void *ctx, const char *name)
{
	struct kv *kv = ctx;

	for (int i = kv->n - 1; i >= 0; i--)
		if (!strcmp(kv->k[i], name))
			return kv->v[i];
	return NULL;
}

static void kv_add(struct kv *kv, const char *k, const char *v)
{
	ck_assert_int_lt(kv->n, 64);
	kv->k[kv->n] = k;
	kv->v[kv->n] = v;
	kv->n++;
}

static void kv_required(struct kv *kv)
{
	kv->n = 0;
	kv_add(kv, "OUTBOX_DATABASE_URL", "postgresql://postgres@127.0.0.1/outboxd");
	kv_add(kv, "STELLAR_RPC_URL", "http://127.0.0.1:8000/rpc");
	kv_add(kv, "STELLAR_NETWORK_PASSPHRASE", "Test SDF Network ; September 2015");
	kv_add(kv, "OUTBOX_SIGNER_KEYS_FILE", "/etc/outboxd/keys");
	kv_add(kv, "OUTBOX_VAULT_CONTRACT", CONTRACT);
}

START_TEST(test_config_defaults)
{
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct kv kv;

	kv_required(&kv);
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), 0);
	ck_assert_int_eq(c.dispatch_interval_ms, 1000);
	ck_assert_int_eq(c.max_attempts, 5);
	ck_assert_int_eq(c.archive_after_h, 7 * 24);
	ck_assert_int_eq(c.backoff_base_ms, 2000);
	ck_assert_int_eq(c.backoff_max_ms, 120000);
	ck_assert_int_eq(c.submitted_timeout_ms, 90000);
	ck_assert(c.fee_bump_multiplier == 2.0);
	ck_assert_uint_eq(c.fee_bump_multiplier_milli, 2000);
	ck_assert_int_eq(c.fee_bump_max_attempts, 3);
	ck_assert_int_eq(c.max_abs_fee, 10000000);
	ck_assert_int_eq(c.low_defer_ms, 15000);
	ck_assert_int_eq(c.low_max_defer_ms, 300000);
	ck_assert_int_eq(c.global_max_in_flight, 1000);
	ck_assert_int_eq(c.per_account_max_in_flight, 1);
	ck_assert_int_eq(c.batch_size, 20);
	ck_assert_int_eq(c.lane_watch_ms, 5);
	ck_assert_int_eq(c.normal_low_max_rate, 0);
	ck_assert_int_eq(c.fee_oracle_poll_ms, 10000);
	ck_assert_int_eq(c.fee_oracle_ttl_ms, 30000);
	ck_assert_int_eq(c.fee_oracle_min, 100);
	ck_assert_int_eq(c.fee_oracle_max, 50000);
	ck_assert_int_eq(c.fee_oracle_default_base_fee, 100);
	ck_assert_int_eq(c.fee_oracle_dwell_ms, 30000);
	ck_assert_str_eq(c.instance, "default");
	ck_assert_int_eq(c.workers, 4);
	ck_assert_int_eq(c.vshards, 64);
	ck_assert_str_eq(c.kafka_brokers, ""); /* unset: no relay, events stay in the table */
	ck_assert_str_eq(c.kafka_topic, "outbox.events");
	ck_assert_str_eq(c.http_addr, "127.0.0.1:8080");
	ck_assert_int_eq(c.log_format, LOG_FMT_KV);
	ck_assert_int_eq(c.log_level, LOG_LVL_INFO);
	ck_assert_int_eq(c.heartbeat_timeout_ms, 5000);
	ck_assert_int_eq(c.restart_backoff_max_ms, 10000);
	ck_assert_int_eq(c.drain_timeout_ms, 10000);
	ck_assert_str_eq(c.vault_contract, CONTRACT);
	ck_assert_str_eq(c.rpc_url, "http://127.0.0.1:8000/rpc");
}
END_TEST

/*
 * At least one bad value per variable, and the text of what is allowed.
 * test_config_every_variable_covered fails when a variable is added to the
 * table without a row here.
 */
static const struct bad {
	const char *name, *value, *allowed;
} bads[] = {
	{"OUTBOX_DISPATCH_INTERVAL_MS", "9", "an integer in 10..600000"},
	{"OUTBOX_DISPATCH_INTERVAL_MS", "1000ms", "an integer in 10..600000"},
	{"OUTBOX_MAX_ATTEMPTS", "0", "an integer in 1..100"},
	{"OUTBOX_MAX_ATTEMPTS", "101", "an integer in 1..100"},
	{"OUTBOX_BACKOFF_BASE_MS", "-1", "an integer in 1..86400000"},
	{"OUTBOX_BACKOFF_MAX_MS", "0", "an integer in 1..86400000"},
	{"OUTBOX_SUBMITTED_TIMEOUT_MS", "999", "an integer in 1000..86400000"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", "1.0", "a number x with 1.0 < x <= 100"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", "100.5", "a number x with 1.0 < x <= 100"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", "2x", "a number x with 1.0 < x <= 100"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", "nan", "a number x with 1.0 < x <= 100"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", "1.2345", "at most 3 decimals"},
	{"OUTBOX_FEE_BUMP_MULTIPLIER", "1e1", "a number x with 1.0 < x <= 100"},
	{"OUTBOX_FEE_BUMP_MAX_ATTEMPTS", "21", "an integer in 0..20"},
	{"OUTBOX_MAX_ABS_FEE", "99", "an integer in 100..1000000000000"},
	{"OUTBOX_LOW_DEFER_MS", "1e3", "an integer in 0..86400000"},
	{"OUTBOX_LOW_MAX_DEFER_MS", "604800001", "an integer in 0..604800000"},
	{"OUTBOX_GLOBAL_MAX_IN_FLIGHT", "0", "an integer in 1..1000000"},
	{"OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT", "2", "1 only: the network queues one transaction"},
	{"OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT", "0", "1 only: the network queues one transaction"},
	{"OUTBOX_BATCH_SIZE", "1001", "an integer in 1..1000"},
	{"OUTBOX_BATCH_SIZE", " 50", "an integer in 1..1000"},
	{"OUTBOX_LANE_WATCH_MS", "0", "an integer in 1..40"},
	{"OUTBOX_LANE_WATCH_MS", "41", "an integer in 1..40"},
	{"OUTBOX_NORMAL_LOW_MAX_RATE", "-1", "an integer in 0..1000000"},
	{"OUTBOX_NORMAL_LOW_MAX_RATE", "1000001", "an integer in 0..1000000"},
	{"FEE_ORACLE_POLL_MS", "99", "an integer in 100..600000"},
	{"FEE_ORACLE_TTL_MS", "3600001", "an integer in 100..3600000"},
	{"FEE_ORACLE_MIN", "0", "an integer in 1..4294967295"},
	{"FEE_ORACLE_MAX", "4294967296", "an integer in 1..4294967295"},
	{"FEE_ORACLE_DEFAULT_BASE_FEE", "99", "an integer in 100..4294967295"},
	{"FEE_ORACLE_DWELL_MS", "+5", "an integer in 0..3600000"},
	{"FEE_ORACLE_LEDGER_MAX_TX", "0", "an integer in 1..1000000"},
	{"OUTBOX_ARCHIVE_AFTER", "7", "<n>h or <n>d (hours or days), 1h to 3650d, or off"},
	{"OUTBOX_ARCHIVE_AFTER", "0d", "<n>h or <n>d"},
	{"OUTBOX_ARCHIVE_AFTER", "3651d", "<n>h or <n>d"},
	{"OUTBOX_ARCHIVE_AFTER", "1w", "<n>h or <n>d"},
	{"OUTBOX_ARCHIVE_AFTER", "OFF", "<n>h or <n>d"},
	{"OUTBOX_HEARTBEAT_TIMEOUT_MS", "99", "an integer in 100..600000"},
	{"OUTBOX_RESTART_BACKOFF_MAX_MS", "9", "an integer in 10..600000"},
	{"OUTBOX_DRAIN_TIMEOUT_MS", "600001", "an integer in 100..600000"},
	{"OUTBOX_LOG_LEVEL", "verbose", "debug, info, warn or error"},
	{"OUTBOX_INSTANCE", "a/b", "1 to 32 characters from [A-Za-z0-9_-]"},
	{"OUTBOX_INSTANCE", "", "1 to 32 characters from [A-Za-z0-9_-]"},
	{"OUTBOX_INSTANCE", "abcdefghijabcdefghijabcdefghijabc", "1 to 32 characters"},
	{"OUTBOX_WORKERS", "65", "an integer in 1..64"},
	{"OUTBOX_WORKERS", "0", "an integer in 1..64"},
	{"OUTBOX_VSHARDS", "4097", "an integer in 1..4096"},
	{"STELLAR_RPC_URL", "ftp://x", "an http:// or https:// URL"},
	{"STELLAR_RPC_URL", "http://", "an http:// or https:// URL"},
	{"STELLAR_RPC_URL", "http://a b", "an http:// or https:// URL"},
	{"STELLAR_NETWORK_PASSPHRASE", "", "a non-empty printable string"},
	{"OUTBOX_SIGNER_KEYS_FILE", "", "a non-empty printable string"},
	{"OUTBOX_VAULT_CONTRACT", "GA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQHES5",
	 "a contract id strkey"},
	{"OUTBOX_VAULT_CONTRACT", "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXA",
	 "a contract id strkey"},
	{"OUTBOX_KAFKA_BROKERS", "127.0.0.1", "host:port[,host:port...]"},
	{"OUTBOX_KAFKA_BROKERS", "a:1,", "host:port[,host:port...]"},
	{"OUTBOX_KAFKA_TOPIC", "", "a non-empty printable string"},
	{"OUTBOX_HTTP_ADDR", "127.0.0.1:70000", "IPv4:port, [IPv6]:port or localhost:port"},
	{"OUTBOX_HTTP_ADDR", "Off", "IPv4:port, [IPv6]:port or localhost:port"},
	{"OUTBOX_HTTP_ADDR", "gateway.example:80", "IPv4:port, [IPv6]:port or localhost:port"},
	{"OUTBOX_HTTP_ADDR", "[::1:80", "IPv4:port, [IPv6]:port or localhost:port"},
	{"OUTBOX_HTTP_THREADS", "0", "an integer in 1..64"},
	{"OUTBOX_HTTP_TIMEOUT_S", "0", "an integer in 1..3600"},
	{"OUTBOX_HTTP_MAX_CONNS", "3", "an integer in 4..60000"},
	{"OUTBOX_HTTP_MAX_CONNS_PER_IP", "60001", "an integer in 1..60000"},
	{"OUTBOX_HTTP_RATE_LIMIT", "0", "an integer in 1..1000000"},
	{"OUTBOX_HTTP_RATE_BURST", "1000001", "an integer in 1..1000000"},
	{"OUTBOX_LOG_FORMAT", "xml", "kv or json"},
	{"OUTBOX_RUN_DIR", "", "a non-empty printable string"},
};

#define N_BADS (sizeof(bads) / sizeof(bads[0]))

START_TEST(test_config_bad_value_message)
{
	const struct bad *b = &bads[_i];
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char want[512];
	struct kv kv;

	kv_required(&kv);
	kv_add(&kv, b->name, b->value);
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), OUTBOX_EINVAL);
	snprintf(want, sizeof(want), "%s: '%s' is not allowed", b->name, b->value);
	ck_assert_msg(!strncmp(err.msg, want, strlen(want)), "got '%s', want prefix '%s'", err.msg,
		      want);
	ck_assert_msg(strstr(err.msg, b->allowed), "'%s' lacks '%s'", err.msg, b->allowed);
	ck_assert_str_eq(err.field, b->name);
	ck_assert_ptr_null(strchr(err.msg, '\n'));
}
END_TEST

START_TEST(test_config_every_variable_covered)
{
	for (size_t i = 0; i < config_var_count(); i++) {
		const char *n = config_var_name(i);
		int found = 0;

		if (!strcmp(n, "OUTBOX_DATABASE_URL"))
			continue; /* secret: its own test */
		for (size_t k = 0; k < N_BADS; k++)
			found |= !strcmp(bads[k].name, n);
		ck_assert_msg(found, "no bad-value test for %s", n);
	}
	ck_assert_ptr_null(config_var_name(config_var_count()));
}
END_TEST

/* OUTBOX_ARCHIVE_AFTER: off, hours or days, within 1 h .. 3650 d. */
START_TEST(test_config_age)
{
	static const struct {
		const char *s;
		int rc;
		int64_t hours;
	} cases[] = {
		{"off", 0, 0},         {"1h", 0, 1},
		{"7d", 0, 168},        {"3650d", 0, 87600},
		{"87600h", 0, 87600},  {"87601h", -EINVAL, 0},
		{"3651d", -EINVAL, 0}, {"0h", -EINVAL, 0},
		{"h", -EINVAL, 0},     {"", -EINVAL, 0},
		{"7", -EINVAL, 0},     {"-1d", -EINVAL, 0},
		{"1.5d", -EINVAL, 0},  {" 1d", -EINVAL, 0},
		{"1dd", -EINVAL, 0},   {"99999999999999999999d", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t h = -1;

		ck_assert_msg(config_parse_age(cases[i].s, &h) == cases[i].rc, "'%s'", cases[i].s);
		if (!cases[i].rc)
			ck_assert_int_eq(h, cases[i].hours);
	}
}
END_TEST

START_TEST(test_config_int_strict)
{
	int64_t v;

	ck_assert_int_eq(config_parse_i64("0", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(config_parse_i64("9223372036854775807", &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(config_parse_i64("9223372036854775808", &v), -ERANGE);
	ck_assert_int_eq(config_parse_i64("99999999999999999999999", &v), -ERANGE);
	ck_assert_int_eq(config_parse_i64("", &v), -EINVAL);
	ck_assert_int_eq(config_parse_i64("1 ", &v), -EINVAL);
	ck_assert_int_eq(config_parse_i64("0x10", &v), -EINVAL);
	ck_assert_int_eq(config_parse_i64("-1", &v), -EINVAL);
	ck_assert_int_eq(config_parse_i64("+1", &v), -EINVAL);
}
END_TEST

START_TEST(test_config_overflow_message)
{
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct kv kv;

	kv_required(&kv);
	kv_add(&kv, "OUTBOX_BATCH_SIZE", "99999999999999999999");
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "OUTBOX_BATCH_SIZE: '99999999999999999999' is not allowed: out "
				  "of range (an integer in 1..1000)");
}
END_TEST

static const struct rel {
	const char *k1, *v1, *k2, *v2, *msg;
} rels[] = {
	{"OUTBOX_BACKOFF_BASE_MS", "5000", "OUTBOX_BACKOFF_MAX_MS", "4000",
	 "OUTBOX_BACKOFF_MAX_MS: '4000' is not allowed (must be >= OUTBOX_BACKOFF_BASE_MS = 5000)"},
	{"OUTBOX_LOW_DEFER_MS", "1000", "OUTBOX_LOW_MAX_DEFER_MS", "999",
	 "OUTBOX_LOW_MAX_DEFER_MS: '999' is not allowed (must be >= OUTBOX_LOW_DEFER_MS = 1000)"},
	{"FEE_ORACLE_MIN", "500", "FEE_ORACLE_MAX", "400",
	 "FEE_ORACLE_MAX: '400' is not allowed (must be >= FEE_ORACLE_MIN = 500)"},
	{"FEE_ORACLE_POLL_MS", "20000", "FEE_ORACLE_TTL_MS", "10000",
	 "FEE_ORACLE_TTL_MS: '10000' is not allowed (must be >= FEE_ORACLE_POLL_MS = 20000)"},
};

START_TEST(test_config_relations)
{
	const struct rel *r = &rels[_i];
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct kv kv;

	kv_required(&kv);
	kv_add(&kv, r->k1, r->v1);
	kv_add(&kv, r->k2, r->v2);
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, r->msg);
	/* equal is fine */
	kv_add(&kv, r->k2, r->v1);
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), 0);
}
END_TEST

START_TEST(test_config_required)
{
	static const char *req[] = {"OUTBOX_DATABASE_URL", "STELLAR_RPC_URL",
				    "STELLAR_NETWORK_PASSPHRASE", "OUTBOX_SIGNER_KEYS_FILE",
				    "OUTBOX_VAULT_CONTRACT"};

	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		struct outbox_config c;
		struct outbox_error err = OUTBOX_ERROR_INIT;
		struct kv kv, some = {.n = 0};
		char want[128];

		kv_required(&kv);
		for (int k = 0; k < kv.n; k++)
			if (strcmp(kv.k[k], req[i]))
				kv_add(&some, kv.k[k], kv.v[k]);
		ck_assert_int_eq(config_load(&c, kv_lookup, &some, 0, &err), OUTBOX_EINVAL);
		snprintf(want, sizeof(want), "%s: is required and not set", req[i]);
		ck_assert_str_eq(err.msg, want);
		ck_assert_int_eq(config_load(&c, kv_lookup, &some, CONFIG_NO_REQUIRED, &err), 0);
	}
}
END_TEST

START_TEST(test_config_secret_never_echoed)
{
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	static char url[4096];
	struct kv kv;

	snprintf(url, sizeof(url), "postgresql://app:hunter2@db/outboxd?x=");
	memset(url + strlen(url), 'a', 2000);
	kv_required(&kv);
	kv_add(&kv, "OUTBOX_DATABASE_URL", url);
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), OUTBOX_EINVAL);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	ck_assert_msg(strstr(err.msg, "OUTBOX_DATABASE_URL: value (hidden) is not allowed"), "%s",
		      err.msg);
	kv_add(&kv, "OUTBOX_DATABASE_URL", "host=db password=hunter2\x01");
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), OUTBOX_EINVAL);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
}
END_TEST

START_TEST(test_config_good_values)
{
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct kv kv;

	kv_required(&kv);
	kv_add(&kv, "OUTBOX_FEE_BUMP_MULTIPLIER", "1.5");
	kv_add(&kv, "OUTBOX_FEE_BUMP_MULTIPLIER", "1.500");
	kv_add(&kv, "OUTBOX_INSTANCE", "blue_2-a");
	kv_add(&kv, "OUTBOX_KAFKA_BROKERS", "k1:9092,k2:9093,[::1]:9094");
	kv_add(&kv, "OUTBOX_LOG_FORMAT", "json");
	kv_add(&kv, "OUTBOX_LOG_LEVEL", "debug");
	kv_add(&kv, "STELLAR_RPC_URL", "https://rpc.example.org:443/");
	kv_add(&kv, "OUTBOX_WORKERS", "64");
	ck_assert_int_eq(config_load(&c, kv_lookup, &kv, 0, &err), 0);
	ck_assert(c.fee_bump_multiplier == 1.5);
	ck_assert_uint_eq(c.fee_bump_multiplier_milli, 1500);
	ck_assert_str_eq(c.instance, "blue_2-a");
	ck_assert_int_eq(c.log_format, LOG_FMT_JSON);
	ck_assert_int_eq(c.log_level, LOG_LVL_DEBUG);
	ck_assert_int_eq(c.workers, 64);
}
END_TEST

static char tmpdir[64];

static void setup_env(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	setenv("OUTBOX_DATABASE_URL", "postgresql:///x", 1);
	setenv("STELLAR_RPC_URL", "http://127.0.0.1:1/", 1);
	setenv("STELLAR_NETWORK_PASSPHRASE", "p", 1);
	setenv("OUTBOX_SIGNER_KEYS_FILE", "/k", 1);
	setenv("OUTBOX_VAULT_CONTRACT", CONTRACT, 1);
	setenv("OUTBOX_BATCH_SIZE", "10", 1);
}

static void teardown_env(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *write_file(const char *body)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/outboxd.conf", tmpdir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(body, f);
	fclose(f);
	return path;
}

START_TEST(test_config_file_overlay)
{
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(config_load_env(&c, 0, &err), 0);
	ck_assert_int_eq(c.batch_size, 10);
	setenv("OUTBOX_CONFIG_FILE",
	       write_file("# comment\n\n  OUTBOX_BATCH_SIZE = 20 \r\nFEE_ORACLE_MIN=200\n"), 1);
	ck_assert_int_eq(config_load_env(&c, 0, &err), 0);
	ck_assert_int_eq(c.batch_size, 20);
	ck_assert_int_eq(c.fee_oracle_min, 200);
	ck_assert_str_eq(c.config_file, getenv("OUTBOX_CONFIG_FILE"));
}
END_TEST

START_TEST(test_config_file_errors)
{
	struct outbox_config c;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char want[256];
	const char *p;

	p = write_file("OUTBOX_BATCH_SIZE=20\nOUTBOX_BATCHSIZE=3\n");
	setenv("OUTBOX_CONFIG_FILE", p, 1);
	ck_assert_int_eq(config_load_env(&c, 0, &err), OUTBOX_EINVAL);
	snprintf(want, sizeof(want),
		 "OUTBOX_CONFIG_FILE: '%s' line 2: unknown variable 'OUTBOX_BATCHSIZE'", p);
	ck_assert_str_eq(err.msg, want);

	write_file("# x\nOUTBOX_BATCH_SIZE=20\nOUTBOX_BATCH_SIZE=21\n");
	ck_assert_int_eq(config_load_env(&c, 0, &err), OUTBOX_EINVAL);
	snprintf(want, sizeof(want),
		 "OUTBOX_CONFIG_FILE: '%s' line 3: 'OUTBOX_BATCH_SIZE' set twice", p);
	ck_assert_str_eq(err.msg, want);

	write_file("OUTBOX_BATCH_SIZE 20\n");
	ck_assert_int_eq(config_load_env(&c, 0, &err), OUTBOX_EINVAL);
	snprintf(want, sizeof(want), "OUTBOX_CONFIG_FILE: '%s' line 1: expected KEY=VALUE", p);
	ck_assert_str_eq(err.msg, want);

	write_file("OUTBOX_BATCH_SIZE=0\n");
	ck_assert_int_eq(config_load_env(&c, 0, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "OUTBOX_BATCH_SIZE: '0' is not allowed (an integer in 1..1000)");

	setenv("OUTBOX_CONFIG_FILE", "/nonexistent/outboxd.conf", 1);
	ck_assert_int_lt(config_load_env(&c, 0, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot open '/nonexistent/outboxd.conf'"));
}
END_TEST

START_TEST(test_config_reload)
{
	struct outbox_config cur, next;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	setenv("OUTBOX_CONFIG_FILE", write_file("OUTBOX_BATCH_SIZE=20\n"), 1);
	ck_assert_int_eq(config_load_env(&cur, 0, &err), 0);

	/* a reloadable change is accepted */
	write_file("OUTBOX_BATCH_SIZE=30\nFEE_ORACLE_DWELL_MS=0\n");
	ck_assert_int_eq(config_reload(&cur, &next, &err), 0);
	ck_assert_int_eq(next.batch_size, 30);
	ck_assert_int_eq(next.fee_oracle_dwell_ms, 0);
	ck_assert(config_reloadable_differs(&cur, &next));
	ck_assert(!config_reloadable_differs(&cur, &cur));

	/* a restart-only change is refused as a whole */
	write_file("OUTBOX_BATCH_SIZE=40\nOUTBOX_WORKERS=8\n");
	ck_assert_int_eq(config_reload(&cur, &next, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "OUTBOX_WORKERS: cannot change while running (restart needed)");

	/* an invalid file is refused */
	write_file("OUTBOX_BATCH_SIZE=40\nOUTBOX_MAX_ATTEMPTS=0\n");
	ck_assert_int_eq(config_reload(&cur, &next, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.msg, "OUTBOX_MAX_ATTEMPTS: '0' is not allowed (an integer in 1..100)");
}
END_TEST

START_TEST(test_config_help_lists_everything)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	config_print_help(f);
	fclose(f);
	for (size_t i = 0; i < config_var_count(); i++)
		ck_assert_msg(strstr(buf, config_var_name(i)), "help lacks %s", config_var_name(i));
	ck_assert_ptr_nonnull(strstr(buf, "OUTBOX_DISPATCH_INTERVAL_MS        default: 1000"));
	ck_assert_ptr_nonnull(
		strstr(buf, "OUTBOX_DATABASE_URL                default: (none; required)"));
	free(buf);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_config_defaults);
	tcase_add_loop_test(tc, test_config_bad_value_message, 0, N_BADS);
	tcase_add_test(tc, test_config_every_variable_covered);
	tcase_add_test(tc, test_config_int_strict);
	tcase_add_test(tc, test_config_overflow_message);
	tcase_add_loop_test(tc, test_config_relations, 0, sizeof(rels) / sizeof(rels[0]));
	tcase_add_test(tc, test_config_required);
	tcase_add_test(tc, test_config_secret_never_echoed);
	tcase_add_test(tc, test_config_good_values);
	tcase_add_test(tc, test_config_help_lists_everything);
	suite_add_tcase(s, tc);

	tc = tcase_create("file");
	tcase_add_checked_fixture(tc, setup_env, teardown_env);
	tcase_add_test(tc, test_config_file_overlay);
	tcase_add_test(tc, test_config_file_errors);
	tcase_add_test(tc, test_config_reload);
	tcase_add_test(tc, test_config_age);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(config_suite)
