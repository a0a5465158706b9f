/*
 * child.h - the contract between the supervisor and the processes it forks.
 *
 * One executable, fork only: the supervisor forks with every signal blocked
 * and calls a role's entry point (a child_entry_fn) in the child. Which
 * roles exist and which function each one runs is the supervisor's role
 * table (supervisor/roles.c); common/ knows no role.
 *
 * The return value becomes the exit code: 0 clean stop, 1 failure (the
 * supervisor restarts it with backoff), 2 bad configuration (the supervisor
 * does not restart it and shuts the group down).
 *
 * Every child first calls child_init(), which
 *	- asks the kernel for SIGTERM when the supervisor dies (PR_SET_PDEATHSIG)
 *	  and then checks getppid(), closing the race of a supervisor that died
 *	  before the prctl;
 *	- keeps SIGTERM, SIGINT and SIGHUP blocked and returns a signalfd for
 *	  them (children run epoll loops), ignores SIGPIPE, unblocks the rest;
 *	- sets the log identity (role, index) from ctx.
 * Children also keep ctx->death_fd (the read end of a pipe whose write end
 * only the supervisor holds) in their epoll set: EOF means the supervisor is
 * gone, even if the PDEATHSIG was lost. Children never touch the instance
 * lock fd they inherit (it keeps the instance locked while any of them
 * lives; see common/shm/segment.h). common/loop.h builds the epoll set
 * every role's main runs on, with the signalfd and the death pipe in it.
 *
 * Reload: on SIGHUP a child calls child_reload(), which re-reads the
 * environment + OUTBOX_CONFIG_FILE exactly as the supervisor did and keeps
 * its old configuration if that fails (see supervisor/reload.c).
 */
#ifndef OUTBOX_COMMON_CHILD_H
#define OUTBOX_COMMON_CHILD_H

#include "common/config.h"
#include "common/shm/doorbell.h"
#include "common/shm/segment.h"

#include <stdbool.h>
#include <sys/types.h>

struct child_ctx {
	struct outbox_config *cfg;            /* this process's copy (inherited at fork) */
	struct shm_segment *seg;              /* inherited read-write mapping */
	const struct doorbell_fds *doorbells; /* one eventfd per worker, made before fork */
	const char *name;                     /* the role's name, for logs (shm_role_name) */
	uint32_t index;                       /* role-local index (worker i -> i) */
	uint32_t proc;                        /* process index in the segment */
	int death_fd;                         /* EOF when the supervisor is gone */
	pid_t supervisor_pid;                 /* getppid() must stay equal to this */
};

/* A role's entry point, run in the forked child; returns its exit code. */
typedef int child_entry_fn(struct child_ctx *ctx);

/* See above. Returns the signalfd, or a negative code (then exit 1). */
int child_init(const struct child_ctx *ctx);

/* Next pending signal from the signalfd, or 0 when none. */
int child_signal_next(int sfd);

/* True when the supervisor that forked us is gone. */
bool child_supervisor_gone(const struct child_ctx *ctx);

/* Re-read the configuration into ctx->cfg; logs the outcome. 0 or < 0. */
int child_reload(struct child_ctx *ctx);

#endif
