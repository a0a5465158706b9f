/*
 * main.c - stellar-sim's command line, start-up and shutdown.
 *
 * Threads: libmicrohttpd's pool (requests), the parker (delayed and held
 * requests), the ledger clock (closes a ledger every --ledger-ms) and main,
 * which waits for SIGTERM/SIGINT and then stops everything cleanly.
 */
#include "common/log.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "tests/stellar-sim/chain.h"
#include "tests/stellar-sim/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The default vault contract id is SHA-256 of this string (README.md). */
#define DEFAULT_VAULT_SEED "outboxd vault contract"

static bool clock_stop;
static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t clock_cond;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stellar-sim [options]\n"
		"  --listen HOST:PORT          address to serve JSON-RPC on (default "
		"127.0.0.1:8000;\n"
		"                              port 0 picks a free one; stdout says \"listening "
		"HOST:PORT\")\n"
		"  --passphrase TEXT           network passphrase (default \"Standalone Network ; "
		"February 2017\")\n"
		"  --ledger-ms N               ledger close interval in ms (default 5000)\n"
		"  --ledger-capacity N         transactions per ledger (default 100)\n"
		"  --queue-capacity N          pending transactions (default 2 x ledger capacity)\n"
		"  --vault-contract C...       the vault contract id (default: see README.md)\n"
		"  --vault-reserve N           the vault's starting reserve in stroops (default "
		"100000000000000)\n"
		"  --base-fee N                base fee per operation in stroops (default 100)\n"
		"  --queue-ledgers N           ledgers a queued tx waits before it is dropped "
		"(default 4)\n"
		"  --ban-ledgers N             ledgers a dropped hash stays banned (default 10)\n"
		"  --retention-ledgers N       ledgers getTransaction(s) remembers (default 1440)\n"
		"  --fee-window-classic N      ledgers in the classic fee stats window (default "
		"10)\n"
		"  --fee-window-soroban N      ledgers in the Soroban fee stats window (default "
		"50)\n"
		"  --start-ledger N            sequence of the first ledger (default 100)\n"
		"  --seed N                    seed of every random choice (default 1)\n"
		"  --threads N                 HTTP worker threads (default 2)\n"
		"  --hold-max-ms N             how long a timeout fault holds a connection "
		"(default 300000)\n"
		"  --accounts FILE             create the accounts of FILE (the body of POST\n"
		"                              /debug/accounts) before serving anything\n"
		"  --debug                     enable the /debug/* endpoints (default off)\n"
		"  --strict-simulate           simulateTransaction refuses vault calls whose\n"
		"                              preconditions fail (default off: they fail on "
		"chain)\n"
		"  --help                      this text\n");
}

static int parse_uint(const char *name, const char *s, unsigned long long min,
		      unsigned long long max, unsigned long long *out)
{
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == '+')
		goto bad;
	*out = strtoull(s, &end, 10);
	if (errno || *end || *out < min || *out > max)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "stellar-sim: %s: '%s' is not an integer in %llu..%llu\n", name, s ? s : "",
		min, max);
	return -1;
}

static int parse_listen(struct sim_config *c, const char *s)
{
	const char *colon = strrchr(s, ':');
	unsigned long long port;
	struct in_addr probe;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(c->listen_host)) {
		fprintf(stderr, "stellar-sim: --listen: '%s' is not HOST:PORT\n", s);
		return -1;
	}
	memcpy(c->listen_host, s, (size_t)(colon - s));
	c->listen_host[colon - s] = '\0';
	if (inet_pton(AF_INET, c->listen_host, &probe) != 1) {
		fprintf(stderr, "stellar-sim: --listen: '%s' is not an IPv4 address\n",
			c->listen_host);
		return -1;
	}
	if (parse_uint("--listen port", colon + 1, 0, 65535, &port))
		return -1;
	c->port = (unsigned)port;
	return 0;
}

static void defaults(struct sim_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->listen_host, "127.0.0.1");
	c->port = 8000;
	strcpy(c->passphrase, "Standalone Network ; February 2017");
	c->ledger_ms = 5000;
	c->ledger_capacity = 100;
	c->base_fee = 100;
	c->queue_ledgers = 4;
	c->ban_ledgers = 10;
	c->retention_ledgers = 1440;
	c->seed = 1;
	c->threads = 2;
	c->vault_reserve = 100000000000000LL;
	c->start_ledger = 100;
	c->hold_max_ms = 300000;
	c->fee_window_classic = 10;
	c->fee_window_soroban = 50;
	crypto_hash_sha256(c->vault_contract, (const uint8_t *)DEFAULT_VAULT_SEED,
			   strlen(DEFAULT_VAULT_SEED));
}

enum opt {
	O_LISTEN = 256,
	O_PASS,
	O_LEDGER_MS,
	O_CAP,
	O_QCAP,
	O_VAULT,
	O_RESERVE,
	O_BASE,
	O_QL,
	O_BAN,
	O_RET,
	O_FWC,
	O_FWS,
	O_START,
	O_SEED,
	O_THREADS,
	O_HOLD,
	O_DEBUG,
	O_HELP,
	O_STRICT,
	O_ACCOUNTS,
};

static const struct option opts[] = {
	{"listen", 1, 0, O_LISTEN},
	{"passphrase", 1, 0, O_PASS},
	{"ledger-ms", 1, 0, O_LEDGER_MS},
	{"ledger-capacity", 1, 0, O_CAP},
	{"queue-capacity", 1, 0, O_QCAP},
	{"vault-contract", 1, 0, O_VAULT},
	{"vault-reserve", 1, 0, O_RESERVE},
	{"base-fee", 1, 0, O_BASE},
	{"queue-ledgers", 1, 0, O_QL},
	{"ban-ledgers", 1, 0, O_BAN},
	{"retention-ledgers", 1, 0, O_RET},
	{"fee-window-classic", 1, 0, O_FWC},
	{"fee-window-soroban", 1, 0, O_FWS},
	{"start-ledger", 1, 0, O_START},
	{"seed", 1, 0, O_SEED},
	{"threads", 1, 0, O_THREADS},
	{"hold-max-ms", 1, 0, O_HOLD},
	{"debug", 0, 0, O_DEBUG},
	{"accounts", 1, 0, O_ACCOUNTS},
	{"strict-simulate", 0, 0, O_STRICT},
	{"help", 0, 0, O_HELP},
	{0, 0, 0, 0},
};

static int set_uint(int o, const char *a, struct sim_config *c)
{
	static const struct {
		int o;
		const char *name;
		unsigned long long min, max;
	} lim[] = {
		{O_LEDGER_MS, "--ledger-ms", 10, 3600000},
		{O_CAP, "--ledger-capacity", 1, 1000000},
		{O_QCAP, "--queue-capacity", 1, 10000000},
		{O_RESERVE, "--vault-reserve", 0, INT64_MAX},
		{O_BASE, "--base-fee", 1, 100000000},
		{O_QL, "--queue-ledgers", 1, 1000},
		{O_BAN, "--ban-ledgers", 0, 1000},
		{O_RET, "--retention-ledgers", 1, 1000000},
		{O_FWC, "--fee-window-classic", 1, 1000},
		{O_FWS, "--fee-window-soroban", 1, 1000},
		{O_START, "--start-ledger", 2, 1000000000},
		{O_SEED, "--seed", 0, UINT64_MAX},
		{O_THREADS, "--threads", 1, 64},
		{O_HOLD, "--hold-max-ms", 1, 3600000},
	};
	unsigned long long v;
	size_t i;

	for (i = 0; i < sizeof(lim) / sizeof(lim[0]) && lim[i].o != o; i++)
		;
	if (parse_uint(lim[i].name, a, lim[i].min, lim[i].max, &v))
		return -1;
	switch (o) {
	case O_LEDGER_MS:
		c->ledger_ms = (unsigned)v;
		break;
	case O_CAP:
		c->ledger_capacity = (unsigned)v;
		break;
	case O_QCAP:
		c->queue_capacity = (unsigned)v;
		break;
	case O_RESERVE:
		c->vault_reserve = (int64_t)v;
		break;
	case O_BASE:
		c->base_fee = (uint32_t)v;
		break;
	case O_QL:
		c->queue_ledgers = (unsigned)v;
		break;
	case O_BAN:
		c->ban_ledgers = (unsigned)v;
		break;
	case O_RET:
		c->retention_ledgers = (unsigned)v;
		break;
	case O_FWC:
		c->fee_window_classic = (unsigned)v;
		break;
	case O_FWS:
		c->fee_window_soroban = (unsigned)v;
		break;
	case O_START:
		c->start_ledger = (uint32_t)v;
		break;
	case O_SEED:
		c->seed = v;
		break;
	case O_THREADS:
		c->threads = (unsigned)v;
		break;
	default:
		c->hold_max_ms = (unsigned)v;
		break;
	}
	return 0;
}

/* 0 ok, 1 --help, -1 bad usage. */
static int parse_args(int argc, char **argv, struct sim_config *c)
{
	int o;

	defaults(c);
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case O_LISTEN:
			if (parse_listen(c, optarg))
				return -1;
			break;
		case O_PASS:
			if (!*optarg || strlen(optarg) >= sizeof(c->passphrase)) {
				fprintf(stderr, "stellar-sim: --passphrase: empty or too long\n");
				return -1;
			}
			strcpy(c->passphrase, optarg);
			break;
		case O_VAULT:
			if (strkey_decode_contract(optarg, c->vault_contract, "--vault-contract",
						   NULL) < 0) {
				fprintf(stderr,
					"stellar-sim: --vault-contract: '%s' is not a C... "
					"contract strkey\n",
					optarg);
				return -1;
			}
			break;
		case O_DEBUG:
			c->debug = true;
			break;
		case O_STRICT:
			c->strict_simulate = true;
			break;
		case O_ACCOUNTS:
			c->accounts_file = optarg;
			break;
		case O_HELP:
			return 1;
		case '?':
			return -1;
		default:
			if (set_uint(o, optarg, c))
				return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "stellar-sim: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	stellar_network_id(c->passphrase, c->network_id);
	return 0;
}

static void *clock_main(void *arg)
{
	const struct sim_config *c = arg;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&clock_lock);
	while (!clock_stop) {
		next.tv_sec += c->ledger_ms / 1000;
		next.tv_nsec += (long)(c->ledger_ms % 1000) * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!clock_stop &&
		       pthread_cond_timedwait(&clock_cond, &clock_lock, &next) != ETIMEDOUT)
			;
		if (clock_stop)
			break;
		pthread_mutex_unlock(&clock_lock);
		chain_close_ledger();
		pthread_mutex_lock(&clock_lock);
	}
	pthread_mutex_unlock(&clock_lock);
	return NULL;
}

/*
 * --accounts: the accounts exist before the first request is answered (a
 * sim restarted in place of another must never say that a known account
 * does not exist, not even for a moment).
 */
static int load_accounts(const char *path)
{
	json_error_t je;
	json_t *body = json_load_file(path, 0, &je);
	char err[256] = "";
	int rc;

	if (!body) {
		fprintf(stderr, "stellar-sim: --accounts: %s: %s\n", path, je.text);
		return -1;
	}
	rc = json_is_object(body) ? chain_debug_accounts(body, err, sizeof(err)) : -1;
	json_decref(body);
	if (rc < 0)
		fprintf(stderr, "stellar-sim: --accounts: %s: %s\n", path,
			*err ? err : "expected a JSON object");
	return rc;
}

int main(int argc, char **argv)
{
	struct sim_config c;
	sigset_t set;
	pthread_t clk;
	unsigned port;
	char vault[STRKEY_BUF];
	int rc, sig;

	log_init("stellar-sim", 0, LOG_FMT_KV, LOG_LVL_INFO);
	if (sodium_init() < 0)
		return 1;
	rc = parse_args(argc, argv, &c);
	if (rc) {
		usage(rc > 0 ? stdout : stderr);
		return rc > 0 ? 0 : 2;
	}
	sim_rand_seed(c.seed);
	if (chain_init(&c) < 0) {
		log_err("out of memory");
		return 1;
	}
	if (c.accounts_file && load_accounts(c.accounts_file) < 0)
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (http_start(&c, &port) < 0)
		return 1;
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&clock_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (pthread_create(&clk, NULL, clock_main, &c)) {
		http_stop();
		return 1;
	}
	strkey_encode_contract(c.vault_contract, vault);
	log_info("serving passphrase=\"%s\" vault=%s ledger_ms=%u capacity=%u debug=%d",
		 c.passphrase, vault, c.ledger_ms, c.ledger_capacity, c.debug);
	printf("listening %s:%u\n", c.listen_host, port);
	fflush(stdout);
	sigdelset(&set, SIGPIPE);
	while (sigwait(&set, &sig) == 0 && sig != SIGTERM && sig != SIGINT)
		;
	pthread_mutex_lock(&clock_lock);
	clock_stop = true;
	pthread_cond_signal(&clock_cond);
	pthread_mutex_unlock(&clock_lock);
	pthread_join(clk, NULL);
	http_stop();
	log_info("stopped");
	return 0;
}
