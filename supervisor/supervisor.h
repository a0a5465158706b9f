/*
 * supervisor.h - the supervisor's private state, shared by its files:
 *
 *	main.c      arguments, configuration, start-up and shutdown order
 *	roles.c     the role table: what is forked, how many, which entry point
 *	children.c  the child table: spawn, reap, restart backoff, watchdog
 *	signals.c   signalfd for SIGTERM/SIGINT/SIGHUP/SIGCHLD, drain state
 *	reload.c    SIGHUP: validate the new configuration, tell the children
 *
 * The supervisor is a single-threaded poll loop. It decides from its private
 * child table (struct child), never from shared memory; into the segment it
 * only makes single-word stores in slots it owns (proc slot fields, QSBR
 * offline, in-flight reset) and reads the children's heartbeat words.
 */
#ifndef OUTBOX_SUPERVISOR_H
#define OUTBOX_SUPERVISOR_H

#include "common/child.h"
#include "common/config.h"
#include "common/shm/doorbell.h"
#include "common/shm/qsbr.h"
#include "common/shm/segment.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SUP_TICK_MS          50    /* loop period: reaping, watchdog, heartbeat */
#define SUP_BACKOFF_FIRST_MS 100   /* second consecutive restart waits this long */
#define SUP_STABLE_RUN_MS    10000 /* a run this long resets the backoff */
#define SUP_CRASH_LOOP       3     /* consecutive quick deaths that count as a loop */
#define SUP_KILL_GRACE_MS    5000  /* after SIGKILL, wait this long for reaping */

/* A role the supervisor forks (roles.c). */
struct role {
	enum shm_role role;
	child_entry_fn *entry;
	bool per_worker;  /* OUTBOX_WORKERS of them, else one */
	bool drains_last; /* told to stop only once every other child is gone */
	bool (*wanted)(const struct outbox_config *cfg); /* NULL: always; false: none forked */
};

extern const struct role sup_roles[]; /* in spawn order */
extern const size_t sup_n_roles;

enum child_state {
	CHILD_IDLE = 0, /* not running, not scheduled */
	CHILD_RUNNING,  /* forked, not yet reaped */
	CHILD_BACKOFF,  /* waiting for next_start_ns */
	CHILD_DISABLED, /* exited 2: never restarted */
};

struct child {
	const struct role *role;
	uint32_t index; /* role-local */
	uint32_t proc;  /* process index in the segment */
	enum child_state state;
	pid_t pid;
	bool ever_started;
	bool watchdog_killed;  /* SIGKILL sent for missed heartbeats */
	bool term_sent;        /* SIGTERM sent during drain */
	uint32_t quick_deaths; /* consecutive deaths within SUP_STABLE_RUN_MS */
	uint64_t started_ns;
	uint64_t next_start_ns;
	uint64_t restarts;
};

struct supervisor {
	struct outbox_config cfg;
	struct shm_segment seg;
	struct doorbell_fds doorbells;
	struct qsbr qsbr;
	struct shm_stats_block *stats;
	pid_t pid;
	int lock_fd;
	int sig_fd;
	int death_r, death_w; /* children watch death_r for EOF */

	struct child *children;
	size_t n_children;

	/* signals.c */
	bool stopping;
	int exit_code;
	uint64_t stop_started_ns;
	bool last_told; /* drain phase 2: the drains_last roles signalled */
	bool kill_sent;
};

/* children.c */
int children_init(struct supervisor *s);
void children_release(struct supervisor *s);
int children_spawn(struct supervisor *s, struct child *c);
void children_reap(struct supervisor *s);
void children_tick(struct supervisor *s, uint64_t now_ns);
/* Which children a call is about: all, or one drain phase (struct role). */
enum child_set { CHILDREN_ALL, CHILDREN_DRAIN_FIRST, CHILDREN_DRAIN_LAST };
size_t children_alive(const struct supervisor *s, enum child_set set);
void children_signal(struct supervisor *s, enum child_set set, int sig);
const char *child_name(const struct child *c, char *buf, size_t len);

/* signals.c */
int signals_setup(struct supervisor *s);
void signals_handle(struct supervisor *s); /* drain the signalfd, act on each */
void supervisor_stop(struct supervisor *s, int exit_code, const char *why);
/* Drive the drain; true when every child is gone (or given up on). */
bool drain_step(struct supervisor *s, uint64_t now_ns);

/* reload.c */
void reload_run(struct supervisor *s);

#endif
