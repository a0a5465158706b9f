/*
 * check_oracle.c - the fee oracle against stellar-sim: drive the sim's
 * background fee load up and down and watch, through `outboxctl fee --json`,
 * the published congestion level and fees follow, with the dwell respected
 * (FEE_ORACLE_DWELL_MS=2000 so the test runs in seconds), fees clamped at
 * FEE_ORACLE_MAX and counted; then a stalled RPC: the snapshot goes stale,
 * readers fall back and their staleness gauge grows, and it recovers; a slow
 * getTransactions does not make the oracle's loop spin.
 *
 * The sim: 250 ms ledgers, 10 transactions per ledger, a Soroban fee window
 * of 4 ledgers; the oracle is told FEE_ORACLE_LEDGER_MAX_TX=10.
 *
 * And a database server that accepts connections and never answers, with a
 * heartbeat timeout (2 s) below the follower's connect deadline
 * (PGQ_CONNECT_TIMEOUT_MS, 3 s): transactions land, the ledger follower
 * wants their lookup and connects, and while its connects time out the
 * oracle keeps its heartbeat and its fee snapshots (same pid, no restart,
 * the generation advancing).
 */
#include "tests/support/proc_harness.h"
#include "tests/support/check_main.h"

#include "common/pgq.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/stellar/txbuild.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DWELL_MS 2000

static struct proc_harness h;

static const char *env[] = {"OUTBOX_WORKERS=1",
			    "FEE_ORACLE_DWELL_MS=2000",
			    "FEE_ORACLE_LEDGER_MAX_TX=10",
			    "FEE_ORACLE_MAX=2000",
			    "FEE_ORACLE_POLL_MS=200",
			    "FEE_ORACLE_TTL_MS=1000",
			    NULL};

static void setup(void)
{
	ph_setup(&h, "ora");
	ph_start_sim(&h, "--ledger-ms 250 --ledger-capacity 10 --fee-window-soroban 4");
	ph_start_outboxd(&h, env);
	json_decref(ph_wait_all_running(&h, 2, 5000));
}

static void teardown(void)
{
	ph_teardown(&h);
}

static int level_of(json_t *fee)
{
	static const char *names[] = {"low", "elevated", "high", "severe"};
	const char *s = json_string_value(json_object_get(fee, "congestionLevel"));

	for (int i = 0; s && i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	ck_abort_msg("bad congestionLevel in fee json");
	return -1;
}

/* A fresh fee snapshot (waits for one). */
static json_t *fresh_fee(void)
{
	for (int i = 0; i < 300; i++) {
		int rc;
		json_t *f = ph_ctl(&h, "fee", &rc);

		if (f && rc == 0 && json_is_true(json_object_get(f, "published")) &&
		    !json_is_true(json_object_get(f, "stale")))
			return f;
		json_decref(f);
		ph_sleep_ms(20);
	}
	ck_abort_msg("no fresh fee snapshot");
	return NULL;
}

/*
 * Watch the level from t0 until it reaches `target`: it must move only in
 * direction dir (+1/-1), not before t0 + DWELL_MS, and two changes must be
 * at least DWELL_MS apart. Returns the last snapshot.
 */
static json_t *follow(uint64_t t0, int start, int target, int dir, unsigned timeout_ms)
{
	uint64_t last_change = t0;
	int level = start;
	json_t *f = NULL;

	while (ph_now_ms() - t0 < timeout_ms) {
		int l;

		json_decref(f);
		f = fresh_fee();
		l = level_of(f);
		if (l != level) {
			uint64_t now = ph_now_ms();

			ck_assert_msg(dir > 0 ? l > level : l < level, "level went %d -> %d", level,
				      l);
			ck_assert_msg(now - last_change >= DWELL_MS - 400,
				      "level %d -> %d only %llu ms after the previous change",
				      level, l, (unsigned long long)(now - last_change));
			last_change = now;
			level = l;
		}
		if (level == target)
			return f;
		ph_sleep_ms(50);
	}
	ck_abort_msg("level %d never reached %d (stuck at %d)", start, target, level);
	return f;
}

START_TEST(test_oracle_follows_fee_load)
{
	json_t *f, *s, *o;
	long long ledger, fee_hi;
	uint64_t t0;

	/* quiet network: low, the fee floor, ledgers advancing */
	f = fresh_fee();
	ck_assert_int_eq(level_of(f), 0);
	ck_assert_int_eq(ph_int(f, "recommendedBaseFee"), 100);
	ck_assert_int_eq(ph_int(f, "aggressiveBaseFee"), 100);
	ck_assert(json_real_value(json_object_get(f, "ledgerCapacityUsage")) == 0.0);
	ledger = ph_int(f, "latestLedger");
	ck_assert_int_gt(ledger, 0);
	ck_assert_int_eq(ph_int(f, "ttlMs"), 1000);
	json_decref(f);
	ph_sleep_ms(600);
	f = fresh_fee();
	ck_assert_int_gt(ph_int(f, "latestLedger"), ledger);
	json_decref(f);

	/* load 3x capacity: congestion rises to severe, never before the dwell */
	t0 = ph_now_ms();
	ph_sim_post(&h, "/debug/faults", "{\"background_fee_load\": 30}");
	f = follow(t0, 0, 3, +1, 20000);
	ck_assert(json_real_value(json_object_get(f, "ledgerCapacityUsage")) >= 0.95);
	ck_assert_int_gt(ph_int(f, "recommendedBaseFee"), 100);
	ck_assert_int_ge(ph_int(f, "aggressiveBaseFee"), ph_int(f, "recommendedBaseFee"));
	json_decref(f);
	/* surge fees keep climbing (the sim raises bids every loaded ledger) until the clamp */
	for (int i = 0; i < 200; i++) {
		f = fresh_fee();
		fee_hi = ph_int(f, "aggressiveBaseFee");
		json_decref(f);
		if (fee_hi == 2000)
			break;
		ph_sleep_ms(50);
	}
	ck_assert_int_eq(fee_hi, 2000);
	s = ph_ctl(&h, "stats", NULL);
	o = ph_proc(s, "oracle", 0);
	ck_assert_int_gt(ph_counter(o, "outbox_fee_clamp_max_total"), 0);
	ck_assert_int_gt(ph_counter(o, "outbox_fee_clamp_min_total"), 0); /* the quiet phase */
	ck_assert_int_eq(ph_int(json_object_get(o, "gauges"), "outbox_fee_congestion_level"), 3);
	json_decref(s);
	/* the worker reads what the oracle published (at its next loop turn) */
	long long seen = -1;
	for (int i = 0; i < 40 && seen != 2000; i++) {
		if (i)
			ph_sleep_ms(50);
		s = ph_ctl(&h, "stats", NULL);
		seen = ph_int(json_object_get(ph_proc(s, "worker", 0), "gauges"),
			      "outbox_fee_aggressive_stroops");
		json_decref(s);
	}
	ck_assert_int_eq(seen, 2000);

	/* a respawned oracle resumes at the published level: no reset, no new dwell */
	s = ph_ctl(&h, "stats", NULL);
	ck_assert_int_eq(kill((pid_t)ph_int(ph_proc(s, "oracle", 0), "pid"), SIGKILL), 0);
	json_decref(s);
	ph_sleep_ms(300);
	for (int i = 0; i < 20; i++) {
		f = fresh_fee();
		ck_assert_int_eq(level_of(f), 3);
		json_decref(f);
		ph_sleep_ms(50);
	}
	ck_assert(ph_log_contains(&h, "resuming at congestion severe from the previous snapshot"));

	/* load off: back to low and the floor, again never faster than the dwell */
	t0 = ph_now_ms();
	ph_sim_post(&h, "/debug/faults", "{\"background_fee_load\": 0}");
	f = follow(t0, 3, 0, -1, 20000);
	json_decref(f);
	for (int i = 0; i < 100; i++) {
		f = fresh_fee();
		fee_hi = ph_int(f, "recommendedBaseFee");
		json_decref(f);
		if (fee_hi == 100)
			break;
		ph_sleep_ms(50);
	}
	ck_assert_int_eq(fee_hi, 100);
	ph_stop_clean(&h);
}
END_TEST

/* The oracle's loop turns, from its stats block. */
static long long oracle_turns(void)
{
	json_t *s = ph_ctl(&h, "stats", NULL);
	long long n;

	ck_assert_ptr_nonnull(s);
	n = ph_counter(ph_proc(s, "oracle", 0), "outbox_loop_iterations_total");
	json_decref(s);
	return n;
}

/*
 * The ledger follower's getTransactions answered slowly: while its call is
 * in flight there is nothing for the follower to do until the answer (an
 * event on the RPC client's fds), so the oracle's loop sleeps. It used to
 * ask for an immediate turn whenever its next page was due, so a slow RPC
 * (or a slow lookup in PostgreSQL) made it spin for the whole call.
 */
START_TEST(test_oracle_slow_rpc_does_not_spin)
{
	long long t0, t1;

	json_decref(fresh_fee());
	ph_sim_post(&h, "/debug/faults", "{\"method\": \"getTransactions\", \"delay_ms\": 3000}");
	ph_sleep_ms(1000); /* a call is in flight now */
	t0 = oracle_turns();
	ph_sleep_ms(4000);
	t1 = oracle_turns();
	ph_sim_post(&h, "/debug/faults", "{}");
	/* a turn per tick, poll and answer: hundreds; spinning: hundreds of thousands */
	ck_assert_msg(t1 - t0 < 20000, "%lld oracle loop turns in 4 s of a slow RPC", t1 - t0);
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_oracle_snapshot_goes_stale_and_recovers)
{
	json_t *f, *s;
	long long stale1, stale2, age1, age2;
	int rc;

	json_decref(fresh_fee());
	ck_assert_int_eq(kill(h.sim_pid, SIGSTOP), 0); /* the RPC hangs: polls time out */
	ph_sleep_ms(2600);
	f = ph_ctl(&h, "fee", &rc);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(rc, 1);
	ck_assert(json_is_true(json_object_get(f, "stale")));
	ck_assert_int_gt(ph_int(f, "ageMs"), 2000);
	json_decref(f);

	s = ph_ctl(&h, "stats", NULL);
	stale1 = ph_counter(ph_proc(s, "worker", 0), "outbox_snapshot_stale_total");
	age1 = ph_int(json_object_get(ph_proc(s, "worker", 0), "gauges"), "outbox_snapshot_age_ms");
	/* the fallback fee is what the worker uses now */
	ck_assert_int_eq(ph_int(json_object_get(ph_proc(s, "worker", 0), "gauges"),
				"outbox_fee_recommended_stroops"),
			 100);
	ck_assert_int_gt(ph_counter(ph_proc(s, "oracle", 0), "outbox_fee_poll_failures_total"), 0);
	json_decref(s);
	ph_sleep_ms(500);
	s = ph_ctl(&h, "stats", NULL);
	stale2 = ph_counter(ph_proc(s, "worker", 0), "outbox_snapshot_stale_total");
	age2 = ph_int(json_object_get(ph_proc(s, "worker", 0), "gauges"), "outbox_snapshot_age_ms");
	json_decref(s);
	ck_assert_int_gt(stale1, 0);
	ck_assert_int_gt(stale2, stale1);
	ck_assert_int_gt(age2, age1);
	ck_assert(ph_log_contains(&h, "fee poll failed"));

	ck_assert_int_eq(kill(h.sim_pid, SIGCONT), 0);
	f = fresh_fee();
	ck_assert_int_lt(ph_int(f, "ageMs"), 1000);
	json_decref(f);
	ck_assert(ph_log_contains(&h, "fee poll recovered"));
	ph_stop_clean(&h);
}
END_TEST

/* ---------- a database server that never answers ---------- */

#define SILENT_HEARTBEAT_MS 2000 /* below PGQ_CONNECT_TIMEOUT_MS */
#define SILENT_MAX_CONNS    256

static int silent_ls = -1;
static int silent_conns[SILENT_MAX_CONNS], n_silent_conns;

/* Accept every pending connection and keep it open, unanswered. */
static void silent_accept(void)
{
	int fd;

	while (n_silent_conns < SILENT_MAX_CONNS &&
	       (fd = accept4(silent_ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		silent_conns[n_silent_conns++] = fd;
}

static void setup_silent(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	static char url[128], hb[64];
	/* debug: a connect that times out again for the same reason is a debug
	 * line (common/pgq.c logs an outage once per episode), and the test
	 * counts both timeouts */
	const char *env_silent[] = {"OUTBOX_WORKERS=1", url, hb, "OUTBOX_LOG_LEVEL=debug", NULL};

	_Static_assert(SILENT_HEARTBEAT_MS < PGQ_CONNECT_TIMEOUT_MS,
		       "heartbeat below the deadline");
	silent_ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(silent_ls, 0);
	ck_assert_int_eq(bind(silent_ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(silent_ls, 128), 0);
	ck_assert_int_eq(getsockname(silent_ls, (struct sockaddr *)&a, &len), 0);
	snprintf(hb, sizeof(hb), "OUTBOX_HEARTBEAT_TIMEOUT_MS=%d", SILENT_HEARTBEAT_MS);
	snprintf(url, sizeof(url),
		 "OUTBOX_DATABASE_URL=host=127.0.0.1 port=%d dbname=outbox user=outbox",
		 ntohs(a.sin_port));
	n_silent_conns = 0;
	ph_setup(&h, "sdb");
	ph_start_sim(&h, "--ledger-ms 250");
	ph_start_outboxd(&h, env_silent);
	json_decref(ph_wait_all_running(&h, 2, 5000));
}

static void teardown_silent(void)
{
	ph_teardown(&h);
	for (int i = 0; i < n_silent_conns; i++)
		close(silent_conns[i]);
	close(silent_ls);
}

/* Land n self-payments of the test signer (PH_SEED) in the sim's ledgers. */
static void land_payments(int n)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct stellar_keypair kp;
	uint8_t net[32];
	char g[STRKEY_BUF], body[4096];
	const int64_t seq = 4294967296LL * 5;

	ck_assert_int_eq(stellar_keypair_from_secret(&kp, PH_SEED, "seed", &err), 0);
	stellar_keypair_address(&kp, g);
	stellar_network_id(PH_PASSPHRASE, net);
	snprintf(body, sizeof(body),
		 "{\"accounts\":[{\"id\":\"%s\",\"seq\":\"%lld\",\"balance\":\"1000000000\"}]}", g,
		 (long long)seq);
	ph_sim_post(&h, "/debug/accounts", body);
	for (int i = 1; i <= n; i++) {
		struct txbuild_source src = {
			.account = g, .seq_num = seq + i, .fee = 100, .max_time = time(NULL) + 300};
		struct txbuild b;
		char *b64;

		txbuild_init(&b);
		ck_assert_msg(txbuild_payment(&b, &src, g, 1, NULL, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(txbuild_sign(&b, &kp, net, &err), 0);
		ck_assert_int_eq(txbuild_to_b64(&b, &b64), 0);
		snprintf(body, sizeof(body),
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"sendTransaction\","
			 "\"params\":{\"transaction\":\"%s\"}}",
			 i, b64);
		ph_sim_post(&h, "/", body);
		free(b64);
		txbuild_release(&b);
	}
	stellar_keypair_release(&kp);
}

/* Log lines of the oracle (role=oracle) that contain needle. */
static int oracle_lines(const char *needle)
{
	const char *p = ph_log_text(&h);
	int n = 0;

	while (*p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[2048];

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		n += strstr(line, "role=oracle") && strstr(line, needle);
		p += len + (end != NULL);
	}
	return n;
}

/*
 * One look at the oracle while its database is silent: it runs as the same
 * process, was never restarted, its heartbeat is within the supervisor's
 * limit and its snapshot is fresh. Returns the snapshot's generation.
 */
static long long oracle_fine(long long pid)
{
	json_t *s = ph_ctl(&h, "stats", NULL), *f, *o;
	long long gen;
	int rc;

	ck_assert_ptr_nonnull(s);
	o = ph_proc(s, "oracle", 0);
	ck_assert(ph_is_running(o));
	ck_assert_int_eq(ph_int(o, "pid"), pid);
	ck_assert_int_eq(ph_int(o, "restarts"), 0);
	ck_assert_int_lt(ph_int(o, "heartbeat_age_ms"), SILENT_HEARTBEAT_MS);
	json_decref(s);
	f = ph_ctl(&h, "fee", &rc);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(rc, 0);
	ck_assert(!json_is_true(json_object_get(f, "stale")));
	gen = ph_int(f, "generation");
	json_decref(f);
	return gen;
}

START_TEST(test_oracle_publishes_while_database_is_silent)
{
	const char *timeout = "no answer within the connect timeout";
	json_t *s = ph_ctl(&h, "stats", NULL);
	long long pid = ph_int(ph_proc(s, "oracle", 0), "pid"), gen0, gen = 0;
	uint64_t end;

	json_decref(s);
	json_decref(fresh_fee());
	gen0 = oracle_fine(pid);
	land_payments(3);
	/*
	 * The follower reads the landed page and connects for its lookup; the
	 * connect times out twice (a reconnect after backoff), each attempt
	 * longer than the heartbeat timeout. Meanwhile the oracle must stay
	 * the same healthy process, publishing.
	 */
	end = ph_now_ms() + 60000;
	while (oracle_lines(timeout) < 2) {
		ck_assert_msg(ph_now_ms() < end, "the follower never timed out twice connecting");
		silent_accept();
		gen = oracle_fine(pid);
		ph_sleep_ms(250);
	}
	silent_accept();
	ck_assert_int_gt(n_silent_conns, 0);
	ck_assert_int_gt(oracle_fine(pid), gen0);
	ck_assert_int_ge(oracle_fine(pid), gen);
	ph_stop_clean(&h);
}
END_TEST

static Suite *oracle_suite(void)
{
	Suite *s = suite_create("oracle");
	TCase *tc = tcase_create("stellar-sim");
	TCase *silent = tcase_create("silent database");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_oracle_follows_fee_load);
	tcase_add_test(tc, test_oracle_snapshot_goes_stale_and_recovers);
	tcase_add_test(tc, test_oracle_slow_rpc_does_not_spin);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(silent, setup_silent, teardown_silent);
	tcase_set_timeout(silent, 120);
	tcase_add_test(silent, test_oracle_publishes_while_database_is_silent);
	suite_add_tcase(s, silent);
	return s;
}

OUTBOX_CHECK_MAIN(oracle_suite)
