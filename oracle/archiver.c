/*
 * archiver.c - see archiver.h.
 */
#include "oracle/archiver.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/pgq.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

struct archiver {
	struct child_ctx *ctx;
	struct pgq pg;
	int64_t next_ms; /* monotonic: when the next batch may start */
	bool busy;       /* a batch is on the wire */
	bool failing;    /* the last batch failed (logged once per episode) */
	int batches;     /* of the current run */
	long long moved; /* by the current run */
};

struct archiver *archiver_new(struct child_ctx *ctx, int ep, uint64_t tag)
{
	struct archiver *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (pgq_init(&a->pg, ctx->cfg->database_url, "outboxd-archiver", ep, tag, NULL, NULL, a)) {
		free(a);
		return NULL;
	}
	a->ctx = ctx;
	/* the first run one period after the start, not in the start's rush */
	a->next_ms = mono_ms() + ARCHIVER_PERIOD_MS;
	return a;
}

static void run_over(struct archiver *a)
{
	if (a->moved)
		log_info("archiver: %lld terminal ops moved to outbox.ops_archive in %d batches",
			 a->moved, a->batches);
	a->batches = 0;
	a->moved = 0;
	a->next_ms = mono_ms() + ARCHIVER_PERIOD_MS;
}

static void batch_done(PGresult *res, void *arg)
{
	struct archiver *a = arg;
	long long n;

	a->busy = false;
	if (!res || !pgq_ok(res) || PQntuples(res) != 1) {
		if (!a->failing)
			log_warn(
				"archiver: outbox.archive_terminal failed: %s (retried every %d s)",
				res ? PQresultErrorMessage(res) : "connection lost",
				ARCHIVER_PERIOD_MS / 1000);
		a->failing = true;
		run_over(a);
		return;
	}
	if (a->failing)
		log_info("archiver: outbox.archive_terminal works again");
	a->failing = false;
	n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	a->moved += n;
	if (n >= ARCHIVER_BATCH && ++a->batches < ARCHIVER_BATCHES_PER_RUN)
		a->next_ms = mono_ms(); /* more waiting: the next batch at once */
	else
		run_over(a);
}

void archiver_tick(struct archiver *a)
{
	int64_t hours = a->ctx->cfg->archive_after_h; /* SIGHUP may change it */
	char arg[24], batch[16];
	const char *p[2] = {arg, batch};

	if (hours <= 0 || a->busy || mono_ms() < a->next_ms) {
		if (a->pg.conn)
			pgq_tick(&a->pg, mono_ms());
		return;
	}
	pgq_tick(&a->pg, mono_ms());
	if (!pgq_connected(&a->pg))
		return; /* pgq connects with its backoff; tried again next tick */
	snprintf(arg, sizeof(arg), "%lld", (long long)hours);
	snprintf(batch, sizeof(batch), "%d", ARCHIVER_BATCH);
	if (pgq_send(&a->pg,
		     "SELECT outbox.archive_terminal(make_interval(hours => $1::integer), "
		     "$2::integer)",
		     2, p, batch_done, a) == 0)
		a->busy = true;
	else
		run_over(a);
}

int archiver_timeout_ms(const struct archiver *a)
{
	/* a batch's answer arrives as an event on the socket; off: nothing is due */
	if (a->busy || a->ctx->cfg->archive_after_h <= 0)
		return 1000;
	return pgq_due_wait_ms(&a->pg, a->next_ms, mono_ms(), 1000);
}

void archiver_on_ready(struct archiver *a, uint32_t events)
{
	pgq_on_ready(&a->pg, events);
}

void archiver_free(struct archiver *a)
{
	if (!a)
		return;
	pgq_release(&a->pg);
	free(a);
}
