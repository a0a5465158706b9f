/*
 * child.c - see child.h.
 */
#include "common/child.h"

#include "common/log.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

int child_init(const struct child_ctx *ctx)
{
	sigset_t set;
	int sfd;

	log_init(ctx->name, (int)ctx->index, ctx->cfg->log_format, ctx->cfg->log_level);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		return -errno;
	if (child_supervisor_gone(ctx))
		return -ESRCH;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		return -errno;
	/* Everything else is unblocked (fork happened with all signals blocked). */
	if (sigprocmask(SIG_SETMASK, &set, NULL) < 0) {
		close(sfd);
		return -errno;
	}
	return sfd;
}

int child_signal_next(int sfd)
{
	struct signalfd_siginfo si;
	ssize_t r = read(sfd, &si, sizeof(si));

	return r == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}

bool child_supervisor_gone(const struct child_ctx *ctx)
{
	return getppid() != ctx->supervisor_pid;
}

int child_reload(struct child_ctx *ctx)
{
	struct outbox_config next;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int rc = config_reload(ctx->cfg, &next, &err);

	if (rc) {
		log_err("reload refused, keeping the running configuration: %s", err.msg);
		return rc;
	}
	if (!config_reloadable_differs(ctx->cfg, &next)) {
		log_info("reload: configuration unchanged");
		return 0;
	}
	*ctx->cfg = next;
	log_init(ctx->name, (int)ctx->index, ctx->cfg->log_format, ctx->cfg->log_level);
	log_info("reload: configuration applied");
	return 0;
}
