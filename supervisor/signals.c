/*
 * signals.c - the supervisor's signals and the drain.
 *
 * SIGTERM, SIGINT, SIGHUP and SIGCHLD stay blocked for the whole life of the
 * supervisor and are read from a signalfd in the main loop, so no handler
 * ever runs in the middle of the loop's bookkeeping. (SIGCHLD only wakes the
 * loop; reaping is a WNOHANG loop on every turn.)
 *
 * Drain (SIGTERM/SIGINT, or a child that exited 2): workers are told first
 * (SIGTERM: stop taking work, finish or abandon what is in flight, exit),
 * the oracle once every worker is gone (the role table's drains_last,
 * roles.c); whatever still runs when
 * OUTBOX_DRAIN_TIMEOUT_MS has passed since the start of the drain gets
 * SIGKILL. Nothing is restarted during a drain.
 */
#include "supervisor/supervisor.h"

#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int signals_setup(struct supervisor *s)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	s->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return s->sig_fd < 0 ? -errno : 0;
}

void supervisor_stop(struct supervisor *s, int exit_code, const char *why)
{
	if (exit_code > s->exit_code)
		s->exit_code = exit_code;
	if (s->stopping)
		return;
	s->stopping = true;
	s->stop_started_ns = mono_ns();
	log_info("draining: %s (children get %lld ms)", why, (long long)s->cfg.drain_timeout_ms);
	for (size_t i = 0; i < s->n_children; i++)
		if (s->children[i].state == CHILD_BACKOFF)
			s->children[i].state = CHILD_IDLE;
	children_signal(s, CHILDREN_DRAIN_FIRST, SIGTERM);
}

bool drain_step(struct supervisor *s, uint64_t now)
{
	uint64_t elapsed_ms = (now - s->stop_started_ns) / 1000000;

	if (!s->last_told && children_alive(s, CHILDREN_DRAIN_FIRST) == 0) {
		s->last_told = true;
		children_signal(s, CHILDREN_DRAIN_LAST, SIGTERM);
	}
	if (!s->kill_sent && elapsed_ms >= (uint64_t)s->cfg.drain_timeout_ms &&
	    children_alive(s, CHILDREN_ALL)) {
		log_warn("drain timeout: killing %zu children still running",
			 children_alive(s, CHILDREN_ALL));
		children_signal(s, CHILDREN_ALL, SIGKILL);
		s->kill_sent = true;
	}
	if (s->kill_sent && elapsed_ms >= (uint64_t)s->cfg.drain_timeout_ms + SUP_KILL_GRACE_MS) {
		log_err("giving up on %zu children that survived SIGKILL",
			children_alive(s, CHILDREN_ALL));
		return true;
	}
	return children_alive(s, CHILDREN_ALL) == 0;
}

void signals_handle(struct supervisor *s)
{
	struct signalfd_siginfo si;

	while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			supervisor_stop(s, 0, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		case SIGHUP:
			if (!s->stopping)
				reload_run(s);
			break;
		default:
			break; /* SIGCHLD: the loop reaps on every turn */
		}
	}
}
