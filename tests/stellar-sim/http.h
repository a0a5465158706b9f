/*
 * http.h - the HTTP face: libmicrohttpd with an epoll thread pool.
 * POST / is JSON-RPC; the debug endpoints only with --debug (404 otherwise).
 * Delays and "timeout" faults park the connection (suspend) instead of
 * blocking a thread, so they never hold up other requests.
 */
#ifndef OUTBOX_SIM_HTTP_H
#define OUTBOX_SIM_HTTP_H

#include "tests/stellar-sim/sim.h"

/* Start serving; *port receives the bound port. 0 or -1 (logged). */
int http_start(const struct sim_config *cfg, unsigned *port);
/* Close held connections and stop. */
void http_stop(void);

#endif
