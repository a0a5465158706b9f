/*
 * check_top.c - `outboxctl top` against a running outboxd: --once prints
 * the processes, the queue depth and the confirmations the database and the
 * segment show; the live view, driven in tmux (send-keys, capture-pane),
 * shows every running process by pid, follows a killed worker's restart,
 * fits a narrowed window, and quits on q giving the terminal back.
 */
#include "tests/integration/dispatch_harness.h"
#include "tests/support/check_main.h"

#include <stdarg.h>

#define N_SIGNERS 4
#define N_OPS     12

/* A tmux server of this test's own (-L), so nothing else is touched. */
struct tmux {
	char sock[64];
};

static int tmux(const struct tmux *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tmux(const struct tmux *t, const char *fmt, ...)
{
	char args[1500], cmd[1700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "tmux -L %s %s", t->sock, args);
	return system(cmd);
}

/* The pane's visible text (static buffer). */
static const char *capture(const struct tmux *t)
{
	static char text[64 * 1024];
	char cmd[200];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "tmux -L %s capture-pane -p -t top 2>/dev/null", t->sock);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(text, 1, sizeof(text) - 1, p);
	text[n] = '\0';
	pclose(p);
	return text;
}

/* Wait until the pane shows every needle; the last capture on timeout. */
static int wait_screen(const struct tmux *t, const char *const *needles, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	do {
		const char *s = capture(t);
		int all = 1;

		for (const char *const *n = needles; *n; n++)
			all &= strstr(s, *n) != NULL;
		if (all)
			return 1;
		ph_sleep_ms(200);
	} while (ph_now_ms() < end);
	return 0;
}

static void load(struct fixture *f)
{
	char rec[32];

	for (int i = 0; i < N_OPS; i++) {
		snprintf(rec, sizeof(rec), "r%d", i);
		enqueue(f, "DEPOSIT", "u1", rec, i % N_SIGNERS, f->signer[(i + 1) % N_SIGNERS],
			"1000", i % 2 ? "CRITICAL" : NULL);
	}
	ck_assert_msg(wait_terminal(f, 60000), "ops still open");
}

/* Run outboxctl top --once for f's instance; its stdout (static) and exit code. */
static const char *top_once(struct fixture *f, const char *instance, int *rc)
{
	static char out[64 * 1024];
	char cmd[3000];
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "COLUMNS=150 %s/outboxctl top --once --interval 300 --instance '%s' --db '%s' "
		 "2>&1",
		 f->h.build, instance, f->db.conninfo);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

START_TEST(test_top_once)
{
	struct fixture f;
	char want[200];
	const char *out;
	json_t *stats;
	int rc;

	memset(&f, 0, sizeof(f));
	f.n_signers = N_SIGNERS;
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	load(&f);
	stats = ph_wait_all_running(&f.h, 3, 30000);
	out = top_once(&f, f.h.instance, &rc);
	ck_assert_msg(rc == 0, "top --once exited %d:\n%s", rc, out);
	for (int w = 0; w < 2; w++) {
		snprintf(want, sizeof(want), "%-10s %3d %8lld running", "worker", w,
			 ph_int(ph_proc(stats, "worker", w), "pid"));
		ck_assert_msg(strstr(out, want), "no '%s' in:\n%s", want, out);
	}
	ck_assert_msg(strstr(out, "queue    CRITICAL 0/0  NORMAL 0/0  LOW 0/0"), "%s", out);
	snprintf(want, sizeof(want), "total    confirmed %d ", N_OPS);
	ck_assert_msg(strstr(out, want), "no '%s' in:\n%s", want, out);
	ck_assert_msg(strstr(out, "congestion "), "%s", out);
	json_decref(stats);
	/* an instance that does not run: exit 2, named */
	out = top_once(&f, "no-such-instance", &rc);
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(out, "no instance 'no-such-instance' is running"), "%s", out);
	stop(&f);
}
END_TEST

START_TEST(test_top_live_in_tmux)
{
	struct fixture f;
	struct tmux t;
	char pid[3][32], restarted[32];
	json_t *stats;
	long long old_pid;
	const char *screen;

	memset(&f, 0, sizeof(f));
	f.n_signers = N_SIGNERS;
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	load(&f);
	stats = ph_wait_all_running(&f.h, 3, 30000);
	snprintf(t.sock, sizeof(t.sock), "outboxd-top-%d", (int)getpid());
	snprintf(pid[0], sizeof(pid[0]), " %lld running",
		 ph_int(ph_proc(stats, "oracle", 0), "pid"));
	snprintf(pid[1], sizeof(pid[1]), " %lld running",
		 ph_int(ph_proc(stats, "worker", 0), "pid"));
	snprintf(pid[2], sizeof(pid[2]), " %lld running",
		 ph_int(ph_proc(stats, "worker", 1), "pid"));
	old_pid = ph_int(ph_proc(stats, "worker", 0), "pid");
	json_decref(stats);

	ck_assert_int_eq(tmux(&t,
			      "new-session -d -s top -x 140 -y 40 "
			      "\"env OUTBOX_DATABASE_URL='%s' LANG=C.UTF-8 %s/outboxctl top "
			      "--instance %s; echo top-exited-$?; sleep 120\"",
			      f.db.conninfo, f.h.build, f.h.instance),
			 0);
	{
		const char *want[] = {pid[0], pid[1], pid[2], "q quit", "CRITICAL 0/0", NULL};

		ck_assert_msg(wait_screen(&t, want, 30000), "top never showed the processes:\n%s",
			      capture(&t));
		printf("outboxctl top, 140x40:\n%s\n", capture(&t)); /* for the log */
	}
	/* a worker killed: top follows the new pid and counts the restart */
	kill((pid_t)old_pid, SIGKILL);
	stats = NULL;
	ph_wait_respawn(&f.h, "worker", 0, old_pid, 30000, &stats);
	snprintf(restarted, sizeof(restarted), " %lld running",
		 ph_int(ph_proc(stats, "worker", 0), "pid"));
	json_decref(stats);
	{
		const char *want[] = {restarted, NULL};

		ck_assert_msg(wait_screen(&t, want, 30000),
			      "top never showed worker 0's new pid:\n%s", capture(&t));
	}
	/* a narrow window: every line fits, nothing wraps */
	ck_assert_int_eq(tmux(&t, "resize-window -t top -x 50 -y 20"), 0);
	{
		const char *want[] = {"q quit", NULL};
		uint64_t end = ph_now_ms() + 30000;
		int fits = 0;

		while (!fits && ph_now_ms() < end) {
			char *s, *save = NULL;

			ck_assert(wait_screen(&t, want, 30000));
			screen = capture(&t);
			s = strdup(screen);
			fits = 1;
			for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
				fits &= strstr(l, "worker ") != l || strlen(l) <= 50;
			free(s);
			/* the old 140-column frame may still be on screen for one refresh */
			fits &= strstr(screen, "INFLIGHT") == NULL;
			if (!fits)
				ph_sleep_ms(300);
		}
		ck_assert_msg(fits, "the frame does not fit 50 columns:\n%s", capture(&t));
	}
	/* q quits with 0 and gives the terminal back (the main screen again) */
	ck_assert_int_eq(tmux(&t, "send-keys -t top q"), 0);
	{
		const char *want[] = {"top-exited-0", NULL};

		ck_assert_msg(wait_screen(&t, want, 30000), "top did not quit on q:\n%s",
			      capture(&t));
	}
	ck_assert_msg(strstr(capture(&t), "q quit") == NULL,
		      "the alternate screen was left on:\n%s", capture(&t));
	tmux(&t, "kill-server");
	stop(&f);
}
END_TEST

static Suite *top_suite(void)
{
	Suite *s = suite_create("top");

	dh_add_case(s, "once", test_top_once, 180);
	dh_add_case(s, "live_in_tmux", test_top_live_in_tmux, 240);
	return s;
}

OUTBOX_CHECK_MAIN(top_suite)
