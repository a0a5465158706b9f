/*
 * proc_harness.h - running the real outboxd and stellar-sim from Check
 * suites (check_supervisor.c, check_oracle.c, the dispatch suites through
 * tests/integration/dispatch_harness.h).
 *
 * Every test gets a temporary directory (keys file, lock dir, logs, config
 * file) and a unique instance name. outboxd and stellar-sim each run in
 * their OWN process group (setpgid in the child) with PR_SET_PDEATHSIG, and
 * ph_teardown() SIGKILLs both groups, so nothing outlives a test, even one
 * that failed or timed out. Everything about the daemon is observed from
 * the outside: `outboxctl stats|fee --json`, its log file, /dev/shm.
 *
 * The binaries come from OUTBOX_BUILD_DIR (ctest sets it; default "build").
 * The helpers ck_assert/ck_abort_msg on failure; PH_KEEP (set to anything)
 * keeps the temporary directory for a post-mortem.
 */
#ifndef OUTBOX_TESTS_PROC_HARNESS_H
#define OUTBOX_TESTS_PROC_HARNESS_H

#include <jansson.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PH_SEED       "SBU2RRGLXH3E5CQHTD3ODLDF2BWDCYUSSBLLZ5GNW7JXHDIYKXZWHOKR"
#define PH_CONTRACT   "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"
#define PH_PASSPHRASE "Standalone Network ; February 2017"

struct proc_harness {
	char dir[64];
	char instance[33];
	char build[512];
	char keys[128], log[128], conf[128];
	pid_t sim_pid;
	int sim_port;
	pid_t sup_pid; /* also its process group id */
	int guard_fd;
	pid_t guard_pid;
};

/* CLOCK_MONOTONIC in ms; sleep ms (EINTR-proof). */
uint64_t ph_now_ms(void);
void ph_sleep_ms(unsigned ms);

/* A fresh directory with a keys file (PH_SEED), an instance name, a cleanup guard. */
void ph_setup(struct proc_harness *h, const char *tag);
/* Kill both process groups, remove the segment and (unless PH_KEEP) the directory. */
void ph_teardown(struct proc_harness *h);

/* Start <build>/stellar-sim on an ephemeral port; extra args split on spaces. */
void ph_start_sim(struct proc_harness *h, const char *extra);
/* POST body to the sim's path (e.g. /debug/faults) with curl(1). */
void ph_sim_post(struct proc_harness *h, const char *path, const char *body);

/*
 * Fork outboxd (or outboxd + arg) in its own process group with the test
 * environment plus extra "KEY=VALUE" strings (NULL-terminated); its stdout
 * and stderr go to h->log (appended). Returns its pid.
 */
pid_t ph_spawn_outboxd(struct proc_harness *h, const char *arg, const char *const *extra);
/* ph_spawn_outboxd without an argument; the pid goes to h->sup_pid. */
void ph_start_outboxd(struct proc_harness *h, const char *const *extra);
/* SIGTERM outboxd; assert exit 0 in time, no process and no segment left. */
void ph_stop_clean(struct proc_harness *h);

/* Wait up to timeout_ms for pid to exit; returns 1 and *status, or 0. */
int ph_wait_exit(pid_t pid, unsigned timeout_ms, int *status);
/* True while any process of group pgid exists. */
int ph_group_alive(pid_t pgid);
/* True while the instance's segment exists in /dev/shm (its stat in *st, may be NULL). */
int ph_segment_exists(struct proc_harness *h, struct stat *st);

/* Run outboxctl <cmd> --json for our instance; parsed stdout (or NULL), *rc. */
json_t *ph_ctl(struct proc_harness *h, const char *cmd, int *rc);
/* The process row (role, index) of a stats document, borrowed. */
json_t *ph_proc(json_t *stats, const char *role, int index);
/* o[k] as an integer; a row's counters[name]. */
long long ph_int(json_t *o, const char *k);
long long ph_counter(json_t *row, const char *name);
/* The row says "running" with a pid. */
int ph_is_running(json_t *row);
/* Wait until every non-supervisor process in stats runs (n_children of them). */
json_t *ph_wait_all_running(struct proc_harness *h, int n_children, unsigned timeout_ms);
/* Wait for (role, index) to run with a pid other than old_pid; returns ms waited. */
uint64_t ph_wait_respawn(struct proc_harness *h, const char *role, int index, long long old_pid,
			 unsigned timeout_ms, json_t **out);

/* The whole log file, NUL-terminated (static buffer, overwritten by the next call). */
const char *ph_log_text(struct proc_harness *h);
int ph_log_contains(struct proc_harness *h, const char *needle);
/* How many times needle occurs in the log. */
int ph_log_count(struct proc_harness *h, const char *needle);

#endif
