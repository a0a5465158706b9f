/*
 * check_supervisor.c - the real outboxd (4 workers) against stellar-sim,
 * observed only from outside (outboxctl --json, its log, /dev/shm):
 * restarts after kill -9 within a second with counters continuing, the
 * watchdog, restart backoff and the crash-loop line, clean SIGTERM (no
 * process, no segment), segment mode, a second supervisor refused, a stale
 * segment of a SIGKILLed group replaced, children dying with the
 * supervisor, exit 2 of a child stopping the group, SIGHUP reload, and the
 * configuration errors.
 */
#include "tests/support/proc_harness.h"
#include "tests/support/check_main.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct proc_harness h;

static void setup(void)
{
	ph_setup(&h, "sup");
	ph_start_sim(&h, "--ledger-ms 250");
}

static void teardown(void)
{
	ph_teardown(&h);
}

static long long realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Kill (role, index) with SIGKILL and assert it is back within 1 s: the new
 * process was forked (started_at_ms, stamped by the supervisor) less than
 * 1000 ms after the kill, and is seen running. The observation itself goes
 * through outboxctl and may lag on a loaded machine, so it gets 5 s.
 */
static json_t *kill_and_wait(const char *role, int index, long long *restarts_out)
{
	json_t *s = ph_ctl(&h, "stats", NULL), *row = ph_proc(s, role, index), *after;
	long long pid = ph_int(row, "pid"), restarts = ph_int(row, "restarts"), killed_at, back;

	ck_assert_msg(ph_is_running(row), "%s %d not running", role, index);
	json_decref(s);
	killed_at = realtime_ms();
	ck_assert_int_eq(kill((pid_t)pid, SIGKILL), 0);
	ph_wait_respawn(&h, role, index, pid, 5000, &after);
	row = ph_proc(after, role, index);
	back = ph_int(row, "started_at_ms") - killed_at;
	ck_assert_msg(back < 1000, "%s %d back after %lld ms", role, index, back);
	ck_assert_int_eq(ph_int(row, "restarts"), restarts + 1);
	ck_assert_int_eq(ph_int(row, "last_exit_signal"), SIGKILL);
	if (restarts_out)
		*restarts_out = ph_int(row, "restarts");
	return after;
}

START_TEST(test_supervisor_restarts_within_a_second)
{
	json_t *s, *w, *o;
	long long reads, publishes, spawns;
	struct stat st;

	ph_start_outboxd(&h, NULL);
	s = ph_wait_all_running(&h, 5, 5000);
	ck_assert_int_eq(json_array_size(json_object_get(s, "processes")), 6);
	ck_assert(ph_segment_exists(&h, &st));
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	json_decref(s);

	/* let counters grow, then kill worker 1: back within 1 s, counters continue */
	ph_sleep_ms(1000);
	s = ph_ctl(&h, "stats", NULL);
	reads = ph_counter(ph_proc(s, "worker", 1), "outbox_snapshot_reads_total");
	spawns = ph_counter(ph_proc(s, "supervisor", 0), "outbox_child_spawns_total");
	ck_assert_int_gt(reads, 0);
	ck_assert_int_eq(spawns, 5);
	json_decref(s);
	s = kill_and_wait("worker", 1, NULL);
	ph_sleep_ms(300);
	json_decref(s);
	s = ph_ctl(&h, "stats", NULL);
	w = ph_proc(s, "worker", 1);
	ck_assert_int_gt(ph_counter(w, "outbox_snapshot_reads_total"), reads);
	ck_assert_int_eq(ph_counter(ph_proc(s, "supervisor", 0), "outbox_child_spawns_total"), 6);
	ck_assert_int_eq(ph_counter(ph_proc(s, "supervisor", 0), "outbox_child_crashes_total"), 1);
	json_decref(s);

	/* the oracle: back within 1 s and publishing again, its counters continue */
	ph_sleep_ms(500);
	s = ph_ctl(&h, "stats", NULL);
	publishes = ph_counter(ph_proc(s, "oracle", 0), "outbox_fee_publishes_total");
	ck_assert_int_gt(publishes, 0);
	json_decref(s);
	json_decref(kill_and_wait("oracle", 0, NULL));
	ph_sleep_ms(800);
	s = ph_ctl(&h, "stats", NULL);
	o = ph_proc(s, "oracle", 0);
	ck_assert_int_gt(ph_counter(o, "outbox_fee_publishes_total"), publishes);
	json_decref(s);

	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_kill_each_in_a_loop)
{
	static const struct {
		const char *role;
		int index;
	} who[] = {{"oracle", 0}, {"worker", 0}, {"worker", 1}, {"worker", 2}, {"worker", 3}};
	long long restarts = 0;
	json_t *s;

	ph_start_outboxd(&h, NULL);
	json_decref(ph_wait_all_running(&h, 5, 5000));
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof(who) / sizeof(who[0]); i++) {
			json_decref(kill_and_wait(who[i].role, who[i].index, &restarts));
			ck_assert_int_eq(restarts, round + 1);
		}
	}
	/* every child still runs, counters kept growing, no crash loop of the others */
	s = ph_wait_all_running(&h, 5, 2000);
	ck_assert_int_eq(ph_counter(ph_proc(s, "supervisor", 0), "outbox_child_spawns_total"),
			 5 + 15);
	ck_assert_int_gt(ph_counter(ph_proc(s, "worker", 3), "outbox_heartbeats_total"), 0);
	json_decref(s);
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_watchdog_kills_silent_child)
{
	static const char *env[] = {"OUTBOX_HEARTBEAT_TIMEOUT_MS=500", NULL};
	json_t *s, *row;
	long long pid;
	uint64_t ms;

	ph_start_outboxd(&h, env);
	s = ph_wait_all_running(&h, 5, 5000);
	pid = ph_int(ph_proc(s, "worker", 2), "pid");
	json_decref(s);
	ck_assert_int_eq(kill((pid_t)pid, SIGSTOP), 0); /* alive but silent */
	ms = ph_wait_respawn(&h, "worker", 2, pid, 3000, &s);
	ck_assert_msg(ms >= 400, "restarted after only %llu ms", (unsigned long long)ms);
	row = ph_proc(s, "worker", 2);
	ck_assert_int_eq(ph_int(row, "restarts"), 1);
	ck_assert_int_eq(ph_int(row, "last_exit_signal"), SIGKILL);
	json_decref(s);
	ck_assert(ph_log_contains(&h, "started worker 2\" child_pid="));
	ck_assert(ph_log_contains(&h, "(limit 500 ms): killing it"));
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_backoff_and_crash_loop)
{
	static const char *env[] = {"OUTBOX_RESTART_BACKOFF_MAX_MS=400", NULL};
	json_t *s;

	ph_start_outboxd(&h, env);
	json_decref(ph_wait_all_running(&h, 5, 5000));
	for (int i = 0; i < 5; i++)
		json_decref(kill_and_wait("worker", 0, NULL));
	/* first restart at once, then 100, 200, 400 (capped), 400 ms */
	ck_assert(ph_log_contains(&h, "after") && ph_log_contains(&h, "restart in 0 ms"));
	ck_assert(ph_log_contains(&h, "restart in 100 ms"));
	ck_assert(ph_log_contains(&h, "restart in 200 ms"));
	ck_assert(ph_log_contains(&h, "restart in 400 ms"));
	ck_assert(!ph_log_contains(&h, "restart in 800 ms"));
	ck_assert(ph_log_contains(&h, "crash loop: worker 0 died 3 times in a row"));
	ck_assert(ph_log_contains(&h, "crash loop: worker 0 died 5 times in a row"));
	/* no busy loop: exactly one spawn per death */
	s = ph_ctl(&h, "stats", NULL);
	ck_assert_int_eq(ph_counter(ph_proc(s, "supervisor", 0), "outbox_child_spawns_total"), 10);
	json_decref(s);
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_drain_timeout_kills_stragglers)
{
	static const char *env[] = {"OUTBOX_DRAIN_TIMEOUT_MS=700", NULL};
	uint64_t t0, took;
	json_t *s;
	long long pid;
	int status = 0;

	ph_start_outboxd(&h, env);
	s = ph_wait_all_running(&h, 5, 5000);
	pid = ph_int(ph_proc(s, "worker", 1), "pid");
	json_decref(s);
	/* worker 1 cannot drain; the oracle waits for the workers, so both get SIGKILL */
	ck_assert_int_eq(kill((pid_t)pid, SIGSTOP), 0);
	t0 = ph_now_ms();
	ck_assert_int_eq(kill(h.sup_pid, SIGINT), 0);
	ck_assert(ph_wait_exit(h.sup_pid, 10000, &status));
	took = ph_now_ms() - t0;
	ck_assert_msg(took >= 650 && took < 5000, "drain took %llu ms", (unsigned long long)took);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert(ph_log_contains(&h, "draining: SIGINT"));
	ck_assert(ph_log_contains(&h, "drain timeout: killing 2 children still running"));
	ck_assert(!ph_group_alive(h.sup_pid));
	ck_assert(!ph_segment_exists(&h, NULL));
	h.sup_pid = 0;
}
END_TEST

START_TEST(test_supervisor_second_instance_refused)
{
	int status = 0;
	pid_t second;

	ph_start_outboxd(&h, NULL);
	json_decref(ph_wait_all_running(&h, 5, 5000));
	second = ph_spawn_outboxd(&h, NULL, NULL);
	ck_assert(ph_wait_exit(second, 5000, &status));
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 2);
	ck_assert(ph_log_contains(&h, "refusing to start"));
	ck_assert(ph_log_contains(&h, "is locked by pid"));
	/* the first one is undisturbed */
	json_decref(ph_wait_all_running(&h, 5, 1000));
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_stale_segment_replaced)
{
	json_t *s;
	long long id1, id2;
	int status;

	ph_start_outboxd(&h, NULL);
	s = ph_wait_all_running(&h, 5, 5000);
	id1 = ph_int(s, "instance_id");
	json_decref(s);
	/* crash the whole group: nobody cleans up */
	ck_assert_int_eq(kill(-h.sup_pid, SIGKILL), 0);
	ck_assert(ph_wait_exit(h.sup_pid, 5000, &status));
	for (int i = 0; i < 200 && ph_group_alive(h.sup_pid); i++)
		ph_sleep_ms(10);
	ck_assert(!ph_group_alive(h.sup_pid));
	ck_assert(ph_segment_exists(&h, NULL));

	/* outboxctl still sees the dead group's segment, with a silent supervisor */
	ph_sleep_ms(3100);
	s = ph_ctl(&h, "stats", &status);
	ck_assert_int_eq(status, 1);
	ck_assert(!json_is_true(json_object_get(s, "supervisor_alive")));
	json_decref(s);

	ph_start_outboxd(&h, NULL);
	for (int i = 0; i < 500; i++) {
		s = ph_ctl(&h, "stats", NULL);
		id2 = s ? ph_int(s, "instance_id") : id1;
		json_decref(s);
		if (id2 != id1)
			break;
		ph_sleep_ms(10);
	}
	ck_assert(id1 != id2);
	json_decref(ph_wait_all_running(&h, 5, 5000));
	ck_assert(ph_log_contains(&h, "replacing the stale segment"));
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_children_die_with_it)
{
	json_t *s;
	int status;

	ph_start_outboxd(&h, NULL);
	json_decref(ph_wait_all_running(&h, 5, 5000));
	ck_assert_int_eq(kill(h.sup_pid, SIGKILL), 0); /* only the supervisor */
	ck_assert(ph_wait_exit(h.sup_pid, 5000, &status));
	for (int i = 0; i < 300 && ph_group_alive(h.sup_pid); i++)
		ph_sleep_ms(10);
	ck_assert_msg(!ph_group_alive(h.sup_pid), "children outlived the supervisor");
	ck_assert(ph_log_contains(&h, "draining on signal 15") ||
		  ph_log_contains(&h, "supervisor gone"));
	/* the lock went with the last child: a new supervisor starts */
	ph_start_outboxd(&h, NULL);
	s = ph_wait_all_running(&h, 5, 5000);
	json_decref(s);
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_child_exit_2_stops_group)
{
	json_t *s;
	long long pid;
	int status = 0;

	ph_start_outboxd(&h, NULL);
	s = ph_wait_all_running(&h, 5, 5000);
	pid = ph_int(ph_proc(s, "worker", 3), "pid");
	json_decref(s);
	/* the keys file becomes unusable: a respawned worker exits 2 */
	ck_assert_int_eq(chmod(h.keys, 0644), 0);
	ck_assert_int_eq(kill((pid_t)pid, SIGKILL), 0);
	ck_assert(ph_wait_exit(h.sup_pid, 15000, &status));
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 2);
	ck_assert(ph_log_contains(
		&h, "worker 3 exited with code 2 (configuration): not restarting it\" child_pid="));
	ck_assert(ph_log_contains(&h, "exited with code 2 (configuration): not restarting it"));
	ck_assert(ph_log_contains(&h, "has mode 0644"));
	for (int i = 0; i < 100 && ph_group_alive(h.sup_pid); i++)
		ph_sleep_ms(10);
	ck_assert(!ph_group_alive(h.sup_pid));
	ck_assert(!ph_segment_exists(&h, NULL));
	h.sup_pid = 0;
}
END_TEST

static void write_conf(const char *body)
{
	FILE *f = fopen(h.conf, "w");

	ck_assert_ptr_nonnull(f);
	fputs(body, f);
	fclose(f);
}

START_TEST(test_supervisor_sighup_reload)
{
	static char conf_env[160];
	const char *env[] = {conf_env, NULL};

	snprintf(conf_env, sizeof(conf_env), "OUTBOX_CONFIG_FILE=%s", h.conf);
	write_conf("OUTBOX_BATCH_SIZE=20\n");
	ph_start_outboxd(&h, env);
	json_decref(ph_wait_all_running(&h, 5, 5000));

	write_conf("OUTBOX_BATCH_SIZE=30\nFEE_ORACLE_POLL_MS=300\n");
	ck_assert_int_eq(kill(h.sup_pid, SIGHUP), 0);
	ph_sleep_ms(500);
	/* the supervisor and each of its 5 children applied it */
	ck_assert_int_eq(ph_log_count(&h, "reload: configuration applied"), 6);

	write_conf("OUTBOX_BATCH_SIZE=30\nOUTBOX_WORKERS=2\n");
	ck_assert_int_eq(kill(h.sup_pid, SIGHUP), 0);
	ph_sleep_ms(300);
	ck_assert(ph_log_contains(&h,
				  "reload refused, keeping the running configuration: "
				  "OUTBOX_WORKERS: cannot change while running (restart needed)"));
	write_conf("OUTBOX_BATCH_SIZE=0\n");
	ck_assert_int_eq(kill(h.sup_pid, SIGHUP), 0);
	ph_sleep_ms(300);
	ck_assert(ph_log_contains(&h, "OUTBOX_BATCH_SIZE: '0' is not allowed"));
	/* refused reloads are not passed on */
	ck_assert_int_eq(ph_log_count(&h, "reload: configuration applied"), 6);
	json_decref(ph_wait_all_running(&h, 5, 1000));
	ph_stop_clean(&h);
}
END_TEST

START_TEST(test_supervisor_configuration_errors)
{
	static const char *bad[] = {"OUTBOX_WORKERS=65", NULL};
	int status = 0;
	pid_t pid;

	pid = ph_spawn_outboxd(&h, NULL, bad);
	ck_assert(ph_wait_exit(pid, 5000, &status));
	ck_assert_int_eq(WEXITSTATUS(status), 2);
	ck_assert(ph_log_contains(&h, "OUTBOX_WORKERS: '65' is not allowed (an integer in 1..64)"));
	ck_assert_int_eq(ph_log_count(&h, "level="), 1); /* one line */
	ck_assert_int_eq(ph_log_count(&h, "\n"), 1);
	ck_assert(!ph_segment_exists(&h, NULL));

	pid = ph_spawn_outboxd(&h, "--check-config", NULL);
	ck_assert(ph_wait_exit(pid, 5000, &status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert(ph_log_contains(&h, "configuration ok"));

	ck_assert_int_eq(chmod(h.keys, 0640), 0);
	pid = ph_spawn_outboxd(&h, "--check-config", NULL);
	ck_assert(ph_wait_exit(pid, 5000, &status));
	ck_assert_int_eq(WEXITSTATUS(status), 2);
	ck_assert(ph_log_contains(&h, "has mode 0640"));
	ck_assert(!ph_log_contains(&h, "SBU2RRGL"));

	pid = ph_spawn_outboxd(&h, "--help", NULL);
	ck_assert(ph_wait_exit(pid, 5000, &status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert(ph_log_contains(&h, "FEE_ORACLE_DEFAULT_BASE_FEE"));
}
END_TEST

START_TEST(test_outboxctl_without_instance)
{
	int rc = 0;
	json_t *j = ph_ctl(&h, "stats", &rc);

	ck_assert_ptr_null(j);
	ck_assert_int_eq(rc, 2);
	j = ph_ctl(&h, "fee", &rc);
	ck_assert_ptr_null(j);
	ck_assert_int_eq(rc, 2);
}
END_TEST

static Suite *supervisor_suite(void)
{
	Suite *s = suite_create("supervisor");
	TCase *tc = tcase_create("process group");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_supervisor_restarts_within_a_second);
	tcase_add_test(tc, test_supervisor_kill_each_in_a_loop);
	tcase_add_test(tc, test_supervisor_watchdog_kills_silent_child);
	tcase_add_test(tc, test_supervisor_backoff_and_crash_loop);
	tcase_add_test(tc, test_supervisor_drain_timeout_kills_stragglers);
	tcase_add_test(tc, test_supervisor_second_instance_refused);
	tcase_add_test(tc, test_supervisor_stale_segment_replaced);
	tcase_add_test(tc, test_supervisor_children_die_with_it);
	tcase_add_test(tc, test_supervisor_child_exit_2_stops_group);
	tcase_add_test(tc, test_supervisor_sighup_reload);
	tcase_add_test(tc, test_supervisor_configuration_errors);
	tcase_add_test(tc, test_outboxctl_without_instance);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(supervisor_suite)
