/*
 * proc_harness.c - running the real outboxd and stellar-sim from Check
 * suites; see proc_harness.h.
 */
#include "tests/support/proc_harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t ph_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void ph_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * A failed ck_assert _exit()s the forked test process without running the
 * checked teardown. Its processes die anyway (PR_SET_PDEATHSIG), but the
 * segment and the temporary directory would stay, so each test gets a guard
 * process that waits for the test process to go away (EOF on a pipe) and
 * then removes them, unless the normal teardown said "done" first.
 */
static void ph_guard_start(struct proc_harness *h)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char buf[8] = "", path[128];
		ssize_t n;

		setpgid(0, 0); /* Check SIGKILLs the test's process group when it ends */
		close(p[1]);
		while ((n = read(p[0], buf, sizeof(buf) - 1)) < 0 && errno == EINTR)
			;
		if (n > 0)
			_exit(0); /* "done": the teardown ran */
		ph_sleep_ms(200); /* let the dying group go first */
		snprintf(path, sizeof(path), "/dev/shm/outboxd-%s", h->instance);
		unlink(path);
		if (!getenv("PH_KEEP"))
			execlp("rm", "rm", "-rf", h->dir, (char *)NULL);
		_exit(0);
	}
	close(p[0]);
	h->guard_fd = p[1];
	h->guard_pid = pid;
}

void ph_setup(struct proc_harness *h, const char *tag)
{
	static unsigned n;
	const char *b = getenv("OUTBOX_BUILD_DIR");
	FILE *f;

	memset(h, 0, sizeof(*h));
	snprintf(h->build, sizeof(h->build), "%s", b ? b : "build");
	snprintf(h->dir, sizeof(h->dir), "/tmp/ph_%s.XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(h->dir));
	snprintf(h->instance, sizeof(h->instance), "t%s_%d_%u", tag, (int)getpid(), n++);
	snprintf(h->keys, sizeof(h->keys), "%s/keys", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/outboxd.log", h->dir);
	snprintf(h->conf, sizeof(h->conf), "%s/outboxd.conf", h->dir);
	f = fopen(h->keys, "w");
	ck_assert_ptr_nonnull(f);
	fputs("# test signer\n" PH_SEED "\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(h->keys, 0600), 0);
	ph_guard_start(h);
}

void ph_start_sim(struct proc_harness *h, const char *extra)
{
	char path[600], args[512], *argv[40], line[128];
	int out[2], argc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/stellar-sim", h->build);
	ck_assert_msg(access(path, X_OK) == 0, "%s missing", path);
	snprintf(args, sizeof(args), "%s", extra ? extra : "");
	argv[argc++] = path;
	argv[argc++] = "--listen";
	argv[argc++] = "127.0.0.1:0";
	argv[argc++] = "--debug";
	for (char *t = strtok(args, " "); t && argc < 38; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	ck_assert_int_eq(pipe(out), 0);
	h->sim_pid = fork();
	ck_assert_int_ge(h->sim_pid, 0);
	if (h->sim_pid == 0) {
		char log[160];
		int fd;

		snprintf(log, sizeof(log), "%s/sim.log", h->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 2);
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		execv(path, argv);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_int_eq(sscanf(line, "listening 127.0.0.1:%d", &h->sim_port), 1);
	fclose(f);
}

void ph_sim_post(struct proc_harness *h, const char *path, const char *body)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "
		 "--data '%s' http://127.0.0.1:%d%s",
		 body, h->sim_port, path);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

pid_t ph_spawn_outboxd(struct proc_harness *h, const char *arg, const char *const *extra)
{
	char path[600], rpc[64], workers[8];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/outboxd", h->build);
	snprintf(rpc, sizeof(rpc), "http://127.0.0.1:%d/", h->sim_port ? h->sim_port : 9);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		snprintf(workers, sizeof(workers), "4");
		setenv("OUTBOX_DATABASE_URL", "postgresql:///unused", 1);
		setenv("STELLAR_RPC_URL", rpc, 1);
		setenv("STELLAR_NETWORK_PASSPHRASE", PH_PASSPHRASE, 1);
		setenv("OUTBOX_SIGNER_KEYS_FILE", h->keys, 1);
		setenv("OUTBOX_VAULT_CONTRACT", PH_CONTRACT, 1);
		setenv("OUTBOX_INSTANCE", h->instance, 1);
		setenv("OUTBOX_RUN_DIR", h->dir, 1);
		setenv("OUTBOX_WORKERS", workers, 1);
		setenv("OUTBOX_RESTART_BACKOFF_MAX_MS", "300", 1);
		setenv("FEE_ORACLE_POLL_MS", "200", 1);
		setenv("FEE_ORACLE_TTL_MS", "1000", 1);
		setenv("OUTBOX_HTTP_ADDR", "off", 1); /* a gateway only where a test asks (extra) */
		unsetenv("OUTBOX_CONFIG_FILE");
		for (; extra && *extra; extra++)
			putenv((char *)*extra);
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

void ph_start_outboxd(struct proc_harness *h, const char *const *extra)
{
	h->sup_pid = ph_spawn_outboxd(h, NULL, extra);
}

int ph_wait_exit(pid_t pid, unsigned timeout_ms, int *status)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	do {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 1;
		ph_sleep_ms(10);
	} while (ph_now_ms() < end);
	return 0;
}

int ph_group_alive(pid_t pgid)
{
	return kill(-pgid, 0) == 0 || errno != ESRCH;
}

json_t *ph_ctl(struct proc_harness *h, const char *cmd, int *rc)
{
	char line[1024];
	static char buf[1 << 16];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(line, sizeof(line), "%s/outboxctl %s --json --instance %s 2>/dev/null", h->build,
		 cmd, h->instance);
	p = popen(line, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	st = pclose(p);
	if (rc)
		*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return n ? json_loads(buf, 0, NULL) : NULL;
}

json_t *ph_proc(json_t *stats, const char *role, int index)
{
	json_t *row;
	size_t i;

	json_array_foreach(json_object_get(stats, "processes"), i, row)
	{
		if (!strcmp(json_string_value(json_object_get(row, "role")), role) &&
		    json_integer_value(json_object_get(row, "index")) == index)
			return row;
	}
	return NULL;
}

long long ph_int(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

long long ph_counter(json_t *row, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(row, "counters"), name));
}

int ph_is_running(json_t *row)
{
	return row && !strcmp(json_string_value(json_object_get(row, "state")), "running") &&
	       ph_int(row, "pid") > 0;
}

json_t *ph_wait_all_running(struct proc_harness *h, int n_children, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	do {
		json_t *s = ph_ctl(h, "stats", NULL), *row;
		int running = 0;
		size_t i;

		if (s) {
			json_array_foreach(json_object_get(s, "processes"), i, row) running +=
				strcmp(json_string_value(json_object_get(row, "role")),
				       "supervisor") &&
				ph_is_running(row);
			if (running == n_children)
				return s;
			json_decref(s);
		}
		ph_sleep_ms(20);
	} while (ph_now_ms() < end);
	ck_abort_msg("not all %d children running within %u ms", n_children, timeout_ms);
	return NULL;
}

uint64_t ph_wait_respawn(struct proc_harness *h, const char *role, int index, long long old_pid,
			 unsigned timeout_ms, json_t **out)
{
	uint64_t start = ph_now_ms();

	do {
		json_t *s = ph_ctl(h, "stats", NULL), *row = s ? ph_proc(s, role, index) : NULL;

		if (ph_is_running(row) && ph_int(row, "pid") != old_pid) {
			if (out)
				*out = s;
			else
				json_decref(s);
			return ph_now_ms() - start;
		}
		json_decref(s);
		ph_sleep_ms(10);
	} while (ph_now_ms() - start < timeout_ms);
	ck_abort_msg("%s %d not back within %u ms", role, index, timeout_ms);
	return 0;
}

const char *ph_log_text(struct proc_harness *h)
{
	static char buf[1 << 20];
	size_t n = 0;
	FILE *f = fopen(h->log, "r");

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

int ph_log_contains(struct proc_harness *h, const char *needle)
{
	return strstr(ph_log_text(h), needle) != NULL;
}

int ph_log_count(struct proc_harness *h, const char *needle)
{
	const char *p = ph_log_text(h);
	int n = 0;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

int ph_segment_exists(struct proc_harness *h, struct stat *st)
{
	char p[128];
	struct stat tmp;

	snprintf(p, sizeof(p), "/dev/shm/outboxd-%s", h->instance);
	return stat(p, st ? st : &tmp) == 0;
}

void ph_stop_clean(struct proc_harness *h)
{
	int status = 0;

	ck_assert_int_eq(kill(h->sup_pid, SIGTERM), 0);
	ck_assert_msg(ph_wait_exit(h->sup_pid, 15000, &status), "outboxd did not exit");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "outboxd status %d", status);
	ck_assert_msg(!ph_group_alive(h->sup_pid), "processes left in the group");
	ck_assert_msg(!ph_segment_exists(h, NULL), "segment left behind");
	h->sup_pid = 0;
}

void ph_teardown(struct proc_harness *h)
{
	char cmd[128], name[64];

	if (h->sup_pid > 0) {
		kill(-h->sup_pid, SIGKILL);
		waitpid(h->sup_pid, NULL, 0);
	}
	if (h->sim_pid > 0) {
		kill(-h->sim_pid, SIGKILL);
		waitpid(h->sim_pid, NULL, 0);
	}
	if (h->guard_pid > 0) {
		(void)!write(h->guard_fd, "done", 4);
		close(h->guard_fd);
		waitpid(h->guard_pid, NULL, 0);
		h->guard_pid = 0;
	}
	snprintf(name, sizeof(name), "/dev/shm/outboxd-%s", h->instance);
	unlink(name);
	if (getenv("PH_KEEP"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", h->dir);
	(void)!system(cmd);
}
