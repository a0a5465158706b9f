/*
 * lanes_vacuum.h - keep outbox.lanes small between autovacuum's visits.
 *
 * outbox.lanes has one row per signer, and every claim and every settle
 * updates it: about two updates per op, most of them not HOT (next_due and
 * pending_best are indexed, the claim reads lanes by them). Autovacuum
 * visits a table at most once per autovacuum_naptime (a minute by default;
 * never where it is off), and meanwhile the dead row versions pile up: after
 * a minute of a backlog at ~400 ops/s, 1 183 pages for 200 rows, and every
 * claim's and settle's lane lookup walks them (tests/chaos/README.md,
 * backlog). So every LANES_VACUUM_PERIOD_MS the oracle runs
 * VACUUM (TRUNCATE false, SKIP_LOCKED) outbox.lanes: a few pages of work on
 * a table that stays a few pages; no truncation, whose exclusive lock would
 * stall the claims; skipped when another vacuum holds the table. A role that
 * does not own the table gets PostgreSQL's warning instead (logged once).
 *
 * Non-blocking, like the archiver: its own PostgreSQL connection through
 * common/pgq.h. A failure is logged once per episode and tried again at the
 * next period; it never delays the fee snapshots or the heartbeat.
 */
#ifndef OUTBOX_ORACLE_LANES_VACUUM_H
#define OUTBOX_ORACLE_LANES_VACUUM_H

#include "common/child.h"

#include <stdint.h>

#define LANES_VACUUM_PERIOD_MS 5000

struct lanes_vacuum;

/* Its PostgreSQL socket goes into the epoll set ep under tag; NULL when out of memory. */
struct lanes_vacuum *lanes_vacuum_new(struct child_ctx *ctx, int ep, uint64_t tag);
/* Drive: start a vacuum when due, (re)connect when due. */
void lanes_vacuum_tick(struct lanes_vacuum *lv);
/* Milliseconds until lanes_vacuum_tick must run. */
int lanes_vacuum_timeout_ms(const struct lanes_vacuum *lv);
/* The PostgreSQL socket is ready. */
void lanes_vacuum_on_ready(struct lanes_vacuum *lv, uint32_t events);
void lanes_vacuum_free(struct lanes_vacuum *lv);

#endif
