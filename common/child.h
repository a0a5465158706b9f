/*
 * child.h - the contract between the supervisor and the processes it forks.
 *
 * The supervisor forks with every signal blocked and calls the role's entry
 * point in the child (B1: one executable, fork only):
 *
 *	int oracle_main(struct child_ctx *ctx);
 *	int worker_main(struct child_ctx *ctx);
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
 * lives; see common/shm/segment.h).
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
	enum shm_role role;
	uint32_t index;       /* role-local index (worker i -> i) */
	uint32_t proc;        /* process index in the segment */
	int death_fd;         /* EOF when the supervisor is gone */
	pid_t supervisor_pid; /* getppid() must stay equal to this */
};

int oracle_main(struct child_ctx *ctx);
int worker_main(struct child_ctx *ctx);

/* See above. Returns the signalfd, or a negative code (then exit 1). */
int child_init(const struct child_ctx *ctx);

/* Next pending signal from the signalfd, or 0 when none. */
int child_signal_next(int sfd);

/* True when the supervisor that forked us is gone. */
bool child_supervisor_gone(const struct child_ctx *ctx);

/* Re-read the configuration into ctx->cfg; logs the outcome. 0 or < 0. */
int child_reload(struct child_ctx *ctx);

/* Role name for logs ("oracle", "worker", ...). */
const char *child_role_name(enum shm_role role);

#endif
