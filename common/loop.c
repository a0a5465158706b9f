/*
 * loop.c - see loop.h.
 */
#include "common/loop.h"

#include "common/log.h"

#include <errno.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

enum { TAG_SIGNAL = 1, TAG_DEATH, TAG_TIMER };

static int add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int loop_open(struct loop *l, struct child_ctx *ctx)
{
	int rc;

	*l = (struct loop){.ctx = ctx, .ep = -1, .sig_fd = -1, .timer_fd = -1};
	l->sig_fd = child_init(ctx);
	if (l->sig_fd < 0)
		return l->sig_fd;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->ep < 0 || l->timer_fd < 0)
		return -errno;
	if ((rc = add(l->ep, l->sig_fd, TAG_SIGNAL)) ||
	    (rc = add(l->ep, ctx->death_fd, TAG_DEATH)) ||
	    (rc = add(l->ep, l->timer_fd, TAG_TIMER)))
		return rc;
	return 0;
}

void loop_close(struct loop *l)
{
	if (l->timer_fd >= 0)
		close(l->timer_fd);
	if (l->ep >= 0)
		close(l->ep);
	if (l->sig_fd >= 0)
		close(l->sig_fd);
	l->timer_fd = l->ep = l->sig_fd = -1;
}

int loop_add(struct loop *l, int fd, uint64_t tag)
{
	return tag < LOOP_TAG_ROLE ? -EINVAL : add(l->ep, fd, tag);
}

int loop_timer(struct loop *l, int64_t first_ms, int64_t interval_ms)
{
	struct itimerspec its = {
		.it_interval = {interval_ms / 1000, (interval_ms % 1000) * 1000000},
		.it_value = {first_ms / 1000, (first_ms % 1000) * 1000000},
	};

	if (first_ms <= 0)
		its.it_value = (struct timespec){0, 1}; /* zero would disarm it */
	return timerfd_settime(l->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Every pending signal: SIGHUP reloads, the others drain. */
static enum loop_event on_signals(struct loop *l)
{
	enum loop_event e = LOOP_HANDLED;
	int sig;

	while ((sig = child_signal_next(l->sig_fd)) > 0) {
		if (sig == SIGHUP) {
			if (!child_reload(l->ctx))
				e = LOOP_RELOADED;
		} else {
			log_info("draining on signal %d", sig);
			l->draining = true;
		}
	}
	return e;
}

enum loop_event loop_event(struct loop *l, const struct epoll_event *ev)
{
	uint64_t n;

	switch (ev->data.u64) {
	case TAG_SIGNAL:
		return on_signals(l);
	case TAG_DEATH:
		log_warn("supervisor gone: draining");
		l->draining = true;
		return LOOP_HANDLED;
	case TAG_TIMER:
		if (read(l->timer_fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
			return LOOP_HANDLED;
		return LOOP_TIMER;
	default:
		return LOOP_ROLE;
	}
}

void loop_check_supervisor(struct loop *l)
{
	if (!l->draining && child_supervisor_gone(l->ctx)) {
		log_warn("supervisor gone: draining");
		l->draining = true;
	}
}
