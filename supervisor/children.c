/*
 * children.c - the child table: spawn, reap, restart backoff, watchdog.
 *
 * Policy (supervisor/README.md, The loop):
 *	- exit 2: configuration fatal; never restarted, the group shuts down;
 *	- any other exit or death by signal: restarted, the first time at once,
 *	  then after 100 ms, 200 ms, ... capped at OUTBOX_RESTART_BACKOFF_MAX_MS,
 *	  per child; a run of SUP_STABLE_RUN_MS resets the backoff. Deaths in a
 *	  row are logged as a crash loop from the SUP_CRASH_LOOP-th on, and the
 *	  backoff makes sure a loop never becomes a busy loop;
 *	- a child whose heartbeat is older than OUTBOX_HEARTBEAT_TIMEOUT_MS
 *	  (including one that never announced itself) gets SIGKILL and is then
 *	  reaped and restarted like any crash.
 * When a child is reaped, its QSBR reader counter is stored OFFLINE and (for
 * a worker) its in-flight slot reset, before anything else can happen, so the
 * oracle never waits for a dead reader and the global cap never counts a
 * dead worker's transactions.
 *
 * Ordering around fork: the proc slot is assigned (STARTING, restarts+1)
 * BEFORE fork and only the pid is stored after it, so the child's own
 * RUNNING store can never be overwritten by the supervisor.
 */
#include "supervisor/supervisor.h"

#include "common/child.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/shm/inflight.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *child_name(const struct child *c, char *buf, size_t len)
{
	if (c->role->per_worker)
		snprintf(buf, len, "%s %u", shm_role_name(c->role->role), c->index);
	else
		snprintf(buf, len, "%s", shm_role_name(c->role->role));
	return buf;
}

static uint32_t role_count(const struct supervisor *s, const struct role *r)
{
	if (r->wanted && !r->wanted(&s->cfg))
		return 0;
	return r->per_worker ? (uint32_t)s->cfg.workers : 1;
}

/* One child per process of the role table, each with its slot in the segment. */
int children_init(struct supervisor *s)
{
	size_t n = 0;

	for (size_t r = 0; r < sup_n_roles; r++)
		n += role_count(s, &sup_roles[r]);
	s->children = calloc(n, sizeof(*s->children));
	if (!s->children)
		return -ENOMEM;
	s->n_children = 0;
	for (size_t r = 0; r < sup_n_roles; r++) {
		for (uint32_t i = 0; i < role_count(s, &sup_roles[r]); i++) {
			struct child *c = &s->children[s->n_children++];
			int proc = shm_proc_index(&s->seg, sup_roles[r].role, i);

			if (proc < 0)
				return proc;
			c->role = &sup_roles[r];
			c->index = i;
			c->proc = (uint32_t)proc;
		}
	}
	return 0;
}

void children_release(struct supervisor *s)
{
	free(s->children);
	s->children = NULL;
	s->n_children = 0;
}

/* In the child, right after fork: never returns. */
static void child_run(struct supervisor *s, struct child *c)
{
	struct child_ctx ctx = {
		.cfg = &s->cfg,
		.seg = &s->seg,
		.doorbells = &s->doorbells,
		.name = shm_role_name(c->role->role),
		.index = c->index,
		.proc = c->proc,
		.death_fd = s->death_r,
		.supervisor_pid = s->pid,
	};
	/* The supervisor's own fds; the lock fd and death_r are kept on purpose. */
	close(s->sig_fd);
	close(s->death_w);
	_exit(c->role->entry(&ctx));
}

int children_spawn(struct supervisor *s, struct child *c)
{
	struct shm_proc_slot *slot = shm_proc_slot(&s->seg, c->proc);
	sigset_t all, old;
	char name[32];
	pid_t pid;

	proc_slot_assign(slot, 0, c->ever_started);
	fflush(NULL);
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		child_run(s, c);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		int e = errno;

		log_err("fork %s: %s; retrying in 1 s", child_name(c, name, sizeof(name)),
			strerror(e));
		proc_slot_exited(slot, -1, 0);
		c->state = CHILD_BACKOFF;
		c->next_start_ns = mono_ns() + 1000000000ull;
		return -e;
	}
	atomic_store_explicit(&slot->pid, pid, memory_order_relaxed);
	if (c->ever_started)
		c->restarts++;
	c->pid = pid;
	c->state = CHILD_RUNNING;
	c->started_ns = mono_ns();
	c->watchdog_killed = false;
	c->term_sent = false;
	c->ever_started = true;
	stats_counter_add(s->stats, MET_CHILD_SPAWNS, 1);
	log_detail(LOG_LVL_INFO, "started %s", "child_pid=%d restarts=%llu",
		   child_name(c, name, sizeof(name)), (int)pid, (unsigned long long)c->restarts);
	return 0;
}

static struct child *child_by_pid(struct supervisor *s, pid_t pid)
{
	for (size_t i = 0; i < s->n_children; i++)
		if (s->children[i].state == CHILD_RUNNING && s->children[i].pid == pid)
			return &s->children[i];
	return NULL;
}

static uint64_t backoff_ms(const struct supervisor *s, uint32_t quick_deaths)
{
	uint64_t cap = (uint64_t)s->cfg.restart_backoff_max_ms, d;

	if (quick_deaths == 0)
		return 0;
	d = quick_deaths - 1 >= 30 ? cap : (uint64_t)SUP_BACKOFF_FIRST_MS << (quick_deaths - 1);
	return d < cap ? d : cap;
}

/* One reaped child: record, clean its shared state, decide what next. */
static void child_exited(struct supervisor *s, struct child *c, int status)
{
	struct shm_proc_slot *slot = shm_proc_slot(&s->seg, c->proc);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	uint64_t now = mono_ns(), ran_ms = (now - c->started_ns) / 1000000, delay;
	pid_t pid = c->pid;
	char name[32];

	child_name(c, name, sizeof(name));
	qsbr_mark_offline(&s->qsbr, c->proc);
	if (c->role->role == SHM_ROLE_WORKER)
		inflight_reset(&s->seg, c->index);
	proc_slot_exited(slot, code, sig);
	c->pid = 0;
	if (sig || code != 0)
		stats_counter_add(s->stats, MET_CHILD_CRASHES, 1);

	if (s->stopping) {
		c->state = CHILD_IDLE;
		if (sig)
			log_detail(LOG_LVL_INFO, "%s stopped by signal %d", "child_pid=%d", name,
				   sig, (int)pid);
		else
			log_detail(LOG_LVL_INFO, "%s stopped with exit code %d", "child_pid=%d",
				   name, code, (int)pid);
		return;
	}
	if (code == 2) {
		c->state = CHILD_DISABLED;
		log_detail(LOG_LVL_ERR, "%s exited with code 2 (configuration): not restarting it",
			   "child_pid=%d", name, (int)pid);
		supervisor_stop(s, 2, "a child cannot run with this configuration");
		return;
	}
	if (ran_ms >= SUP_STABLE_RUN_MS)
		c->quick_deaths = 0;
	delay = backoff_ms(s, c->quick_deaths);
	c->quick_deaths++;
	if (sig)
		log_detail(LOG_LVL_ERR,
			   "%s killed by signal %d (%s)%s after %llu ms; restart in %llu ms",
			   "child_pid=%d", name, sig, strsignal(sig),
			   WCOREDUMP(status) ? " (core dumped)" : "", (unsigned long long)ran_ms,
			   (unsigned long long)delay, (int)pid);
	else
		log_detail(LOG_LVL_WARN, "%s exited with code %d after %llu ms; restart in %llu ms",
			   "child_pid=%d", name, code, (unsigned long long)ran_ms,
			   (unsigned long long)delay, (int)pid);
	if (c->quick_deaths >= SUP_CRASH_LOOP)
		log_err("crash loop: %s died %u times in a row, each within %d ms of its start; "
			"restarts are backed off up to %lld ms",
			name, c->quick_deaths, SUP_STABLE_RUN_MS,
			(long long)s->cfg.restart_backoff_max_ms);
	c->state = CHILD_BACKOFF;
	c->next_start_ns = now + delay * 1000000ull;
	if (delay)
		proc_slot_backoff(slot);
}

void children_reap(struct supervisor *s)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		struct child *c;

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		c = child_by_pid(s, pid);
		if (!c) {
			log_detail(LOG_LVL_WARN, "reaped a process that is no child of ours",
				   "child_pid=%d", (int)pid);
			continue;
		}
		child_exited(s, c, status);
	}
}

/* Kill a child whose heartbeat is too old. */
static void watchdog(struct supervisor *s, struct child *c, uint64_t now)
{
	const struct shm_proc_slot *slot = shm_proc_slot(&s->seg, c->proc);
	uint64_t hb = atomic_load_explicit(&((struct shm_proc_slot *)slot)->heartbeat_ns,
					   memory_order_relaxed);
	uint64_t limit = (uint64_t)s->cfg.heartbeat_timeout_ms * 1000000ull;
	uint64_t since = hb > c->started_ns ? hb : c->started_ns;
	char name[32];

	if (c->watchdog_killed || now <= since || now - since <= limit)
		return;
	log_detail(LOG_LVL_ERR, "%s silent for %llu ms (limit %lld ms): killing it", "child_pid=%d",
		   child_name(c, name, sizeof(name)), (unsigned long long)((now - since) / 1000000),
		   (long long)s->cfg.heartbeat_timeout_ms, (int)c->pid);
	kill(c->pid, SIGKILL);
	c->watchdog_killed = true;
}

void children_tick(struct supervisor *s, uint64_t now)
{
	int64_t running = 0;

	for (size_t i = 0; i < s->n_children; i++) {
		struct child *c = &s->children[i];

		if (c->state == CHILD_BACKOFF && now >= c->next_start_ns)
			children_spawn(s, c);
		else if (c->state == CHILD_RUNNING)
			watchdog(s, c, now);
		running += c->state == CHILD_RUNNING;
	}
	stats_gauge_set(s->stats, MET_CHILDREN_RUNNING, running);
}

static bool in_set(const struct child *c, enum child_set set)
{
	return set == CHILDREN_ALL || c->role->drains_last == (set == CHILDREN_DRAIN_LAST);
}

size_t children_alive(const struct supervisor *s, enum child_set set)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_children; i++)
		if (s->children[i].state == CHILD_RUNNING && in_set(&s->children[i], set))
			n++;
	return n;
}

void children_signal(struct supervisor *s, enum child_set set, int sig)
{
	for (size_t i = 0; i < s->n_children; i++) {
		struct child *c = &s->children[i];

		if (c->state != CHILD_RUNNING || !in_set(c, set))
			continue;
		kill(c->pid, sig);
		if (sig == SIGTERM)
			c->term_sent = true;
	}
}
