/*
 * progress.h - the demo's live line, one a second: ops by state from
 * PostgreSQL, throughput, the fee snapshot and congestion level from the
 * running instance's shared memory (read-only, as outboxctl reads it), and
 * fee bumps and deferrals from outbox.events (durable: a killed worker's
 * shared-memory counters start again from zero, the table does not).
 *
 * Each sample is also written to demo.samples, which outbox-demo-report
 * charts after the run.
 */
#ifndef OUTBOX_OPS_DEMO_PROGRESS_H
#define OUTBOX_OPS_DEMO_PROGRESS_H

#include "common/shm/segment.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct progress_sample {
	int64_t pending, submitted, confirmed, failed, held, cancelled;
	int64_t bumps, deferrals;
	bool fee_ok; /* a snapshot was read */
	uint64_t recommended, aggressive;
	const char *congestion;
	double usage;
};

struct progress {
	PGconn *conn;
	char instance[64];
	struct shm_segment seg;
	bool attached;
	int64_t t0_ms;     /* load start, monotonic */
	int64_t last_ms;   /* previous sample, monotonic */
	int64_t last_enq;  /* intents sent at the previous sample */
	int64_t last_conf; /* CONFIRMED at the previous sample */
	int lines;
};

void progress_init(struct progress *p, PGconn *conn, const char *instance, int64_t t0_ms);
void progress_close(struct progress *p);

/* Read the current state; 0, or -1 when PostgreSQL could not be read (message on stderr). */
int progress_sample(struct progress *p, struct progress_sample *s);

/* Print one line (a header every 20 lines) and record the sample in demo.samples. */
void progress_print(struct progress *p, FILE *out, const struct progress_sample *s,
		    int64_t enqueued, int64_t now_ms);

#endif
