/*
 * loop.h - the event loop every role's main runs on.
 *
 * One epoll set per process. loop_open() makes it and puts the three fds
 * every child has in it under the loop's own tags: the signalfd of
 * child_init() (child.h), the supervisor's death pipe and a timerfd. The
 * role adds its own fds (RPC client, PostgreSQL sockets, doorbell) with
 * tags from LOOP_TAG_ROLE up, and keeps its own loop body: what it does each
 * turn and how long it may sleep. Every event goes through loop_event()
 * first, so drain and reload mean the same in every role:
 *
 *	SIGTERM, SIGINT, EOF on the death pipe: l->draining becomes true and
 *	  the role leaves its loop at the end of the turn and drains;
 *	SIGHUP: child_reload(); when the new configuration is applied the
 *	  answer is LOOP_RELOADED, and the role re-reads what it derived from
 *	  it (its timer's period);
 *	the timer expired: LOOP_TIMER;
 *	any other tag: LOOP_ROLE, the role's own event.
 *
 * A lost death-pipe EOF is covered by loop_check_supervisor(), called once
 * a turn.
 */
#ifndef OUTBOX_COMMON_LOOP_H
#define OUTBOX_COMMON_LOOP_H

#include "common/child.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#define LOOP_TAG_ROLE 16 /* the role's tags start here; below are the loop's */

struct loop {
	struct child_ctx *ctx;
	int ep, sig_fd, timer_fd; /* -1 when not open */
	bool draining;
};

enum loop_event {
	LOOP_ROLE,     /* not the loop's: the role handles it */
	LOOP_HANDLED,  /* the loop's, nothing for the role to do */
	LOOP_TIMER,    /* the timer expired */
	LOOP_RELOADED, /* SIGHUP applied a new configuration */
};

/* child_init(), then the epoll set with the signalfd, death pipe and timer. 0 or < 0. */
int loop_open(struct loop *l, struct child_ctx *ctx);
void loop_close(struct loop *l);

/* Add fd to the set for EPOLLIN under tag (>= LOOP_TAG_ROLE). 0 or -errno. */
int loop_add(struct loop *l, int fd, uint64_t tag);

/* Arm the timer: first expiry after first_ms (0: at once), then every interval_ms. */
int loop_timer(struct loop *l, int64_t first_ms, int64_t interval_ms);

/* What ev means (see above); acts on the loop's own events. */
enum loop_event loop_event(struct loop *l, const struct epoll_event *ev);

/* Start draining when the supervisor that forked us is gone. */
void loop_check_supervisor(struct loop *l);

#endif
