/*
 * archiver.h - terminal ops leave outbox.ops (schema/0012_archive.sql).
 *
 * Every ARCHIVER_PERIOD_MS, while OUTBOX_ARCHIVE_AFTER is not off, the
 * oracle calls outbox.archive_terminal(OUTBOX_ARCHIVE_AFTER,
 * ARCHIVER_BATCH): CONFIRMED, FAILED and CANCELLED ops last changed longer
 * ago than that, whose events are all on Kafka, move to outbox.ops_archive
 * with their attempts and events. A full batch is followed at once by the
 * next one, up to ARCHIVER_BATCHES_PER_RUN a run, so a backlog drains in
 * bounded steps and the rest waits for the next run. The oracle runs it
 * because it is the one role that already does periodic database work
 * with nothing per op in the way; several instances may run it together
 * (the function serializes them and skips each other's rows).
 *
 * Non-blocking, like the follower: its own PostgreSQL connection through
 * common/pgq.h, made when a run is due. A failed run is logged once per
 * episode and tried again at the next period; it never delays the fee
 * snapshots or the heartbeat.
 */
#ifndef OUTBOX_ORACLE_ARCHIVER_H
#define OUTBOX_ORACLE_ARCHIVER_H

#include "common/child.h"

#include <stdint.h>

#define ARCHIVER_PERIOD_MS       60000
#define ARCHIVER_BATCH           1000
#define ARCHIVER_BATCHES_PER_RUN 20

struct archiver;

/* Its PostgreSQL socket goes into the epoll set ep under tag; NULL when out of memory. */
struct archiver *archiver_new(struct child_ctx *ctx, int ep, uint64_t tag);
/* Drive: start a batch when due, (re)connect when due. */
void archiver_tick(struct archiver *a);
/* Milliseconds until archiver_tick must run. */
int archiver_timeout_ms(const struct archiver *a);
/* The PostgreSQL socket is ready. */
void archiver_on_ready(struct archiver *a, uint32_t events);
void archiver_free(struct archiver *a);

#endif
