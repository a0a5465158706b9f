/*
 * lane_watch.h - wake the workers whose vshards hold work to claim.
 *
 * NORMAL and LOW ops have no NOTIFY (schema/0003_wakeup.sql: it would
 * serialize every enqueue's commit on the notification queue's lock). So
 * that they are claimed within milliseconds all the same, one watcher per
 * outboxd instance asks PostgreSQL which vshards hold lane signals
 * (outbox.lanes_waiting, schema/0030_lanes_waiting.sql: new work) and, every
 * LANE_WATCH_DUE_MS, which hold lanes that became due (an ended backoff or
 * deferral). For each such vshard leased to a worker of this instance it
 * pushes a NEW_OP hint into the worker that owns it (outbox_vshard_owner,
 * common/vshard.h) and rings its doorbell; the worker claims at once.
 *
 * The promise to the workers: while a worker keeps receiving this watcher's
 * WATCHING word (every LANE_WATCH_ALIVE_MS, pushed only after a look that
 * PostgreSQL answered), a vshard of its that holds a lane signal is rung
 * within LANE_WATCH_MAX_MS plus one look. A worker that hears it stops
 * polling its lanes every few milliseconds (worker/claim.c); one that stops
 * hearing it polls again. Hints are hints: a lost or wrong one costs
 * latency or an empty claim, never an op, and the workers' sweep still runs.
 *
 * Cost: one read-only statement a look (a skip scan of the signals: one
 * index probe per signalled vshard and one more), every OUTBOX_LANE_WATCH_MS
 * (5 by default; read at each look, so SIGHUP changes it) while a look woke
 * a worker within LANE_WATCH_BUSY_MS, the wait doubling to LANE_WATCH_MAX_MS
 * after that. An op that arrives while looks stream waits half the interval
 * on average before its worker hears of it; each look costs PostgreSQL a
 * read (README.md, Sizing, has the trade measured). Work comes in streams: a watcher that
 * backed off after each look that found nothing added its wait to the next
 * op of the stream (bench_dispatch at 100 ops/s offered: enqueue-to-send
 * p50 11 ms against 8.5 ms with the busy window). The due lanes take one
 * probe per leased vshard and priority.
 *
 * Non-blocking, like the archiver: its own PostgreSQL connection through
 * common/pgq.h; a failure is logged once per episode and the look tried
 * again after LANE_WATCH_MAX_MS. It pushes through the follower's ring
 * handles (follower_push_soft), and does not run without the follower.
 */
#ifndef OUTBOX_ORACLE_LANE_WATCH_H
#define OUTBOX_ORACLE_LANE_WATCH_H

#include "common/child.h"
#include "oracle/follower.h"

#include <stdint.h>

#define LANE_WATCH_BUSY_MS  2000 /* busy: a look woke a worker this recently */
#define LANE_WATCH_MAX_MS   40   /* between looks after a quiet spell (doubling) */
#define LANE_WATCH_DUE_MS   100  /* due lanes are looked for this often */
#define LANE_WATCH_ALIVE_MS 250  /* a WATCHING word to every worker this often */

struct lane_watch;

/* Its PostgreSQL socket goes into the epoll set ep under tag; NULL when out of memory. */
struct lane_watch *lane_watch_new(struct child_ctx *ctx, struct follower *f, int ep, uint64_t tag);
/* Drive: start a look when due, (re)connect when due. */
void lane_watch_tick(struct lane_watch *lw);
/* Milliseconds until lane_watch_tick must run. */
int lane_watch_timeout_ms(const struct lane_watch *lw);
/* The PostgreSQL socket is ready. */
void lane_watch_on_ready(struct lane_watch *lw, uint32_t events);
void lane_watch_free(struct lane_watch *lw);

#endif
