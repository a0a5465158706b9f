/*
 * load.h - outbox-demo-load, the demo's load driver: the options and the
 * tally shared by its files.
 *
 *	load_main.c  options, the paced loop (load phase, then drain), exit code
 *	send.c       one intent to outboxd: SQL (app.c) or HTTP (http.c), a client retry
 *	mix.c        what to send (pure); population.c reads who exists
 *	progress.c   the line a second
 */
#ifndef OUTBOX_OPS_DEMO_LOAD_H
#define OUTBOX_OPS_DEMO_LOAD_H

#include "ops/demo/mix.h"

#include <libpq-fe.h>
#include <stdint.h>

#define LOAD_RECURRING_SHARE 0.15 /* of the rate: the recurring-deposit bursts */
#define LOAD_RETRY_ONE_IN    30   /* core-app requests the client sends twice */

struct load_opts {
	const char *db;
	const char *population;
	const char *instance;
	const char *gateway; /* http://HOST:PORT, or NULL: every intent through SQL */
	const char *api_key_file;
	double rate;       /* intents per second, all sources */
	double duration_s; /* the load phase */
	double drain_s;    /* then at most this long for every op to settle */
	uint64_t seed;
};

struct load_tally {
	int64_t sent; /* ops enqueued (created) */
	int64_t by_what[IW__COUNT];
	int64_t retries; /* requests sent again, answered created = false */
	int64_t via_http;
};

/* Where intents go: the core application's database, the gateway (or NULL). */
struct gw_client;
struct load_sinks {
	PGconn *conn;
	struct gw_client *gw;
};

/* Enqueue it (and, one time in LOAD_RETRY_ONE_IN, again as the client's retry); 0 or -1. */
int load_send(const struct load_sinks *s, struct mix *m, const struct intent *it,
	      struct load_tally *t);

#endif
