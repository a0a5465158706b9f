/*
 * follower.h - the ledger follower: the second confirmation path.
 *
 * The oracle already follows every ledger; the follower reads each closed
 * ledger's transactions (getTransactions, paged by cursor), asks PostgreSQL
 * which of their hashes are ours (outbox.attempt_lookup) and pushes a
 * TX_LANDED hint for each into the hint ring of the worker that owns the
 * op's vshard (vshard % OUTBOX_WORKERS, the static split), then rings that
 * worker's doorbell. The hint carries the outcome (aux, below): a worker
 * following that hash confirms a SUCCESS from the hint alone, without its
 * own getTransaction (so confirmation survives a failing getTransaction),
 * and polls at once for a FAILED one (it needs the result code). A worker
 * that died is replaced, and its successor's reconcile adopts the op anyway. Hints are only hints: a
 * dropped one (full ring, follower down) costs latency, never an op.
 *
 * One getTransactions call and one PostgreSQL query at a time, both
 * non-blocking in the oracle's epoll loop. The PostgreSQL connection is made
 * lazily and re-made with backoff; while it is down the follower keeps its
 * place (the cursor) and resumes where it stopped, within the RPC's
 * retention window.
 */
#ifndef OUTBOX_ORACLE_FOLLOWER_H
#define OUTBOX_ORACLE_FOLLOWER_H

#include "common/child.h"
#include "common/stellar/rpc.h"

#include <stdint.h>

#define FOLLOWER_EV_TAG 0x466f6c6c6f77ull /* epoll tag of the follower's PG socket */

struct follower;

/* NULL when out of memory (the oracle then runs without it). */
struct follower *follower_new(struct child_ctx *ctx, struct rpc_client *rpc, int ep);
/* Drive: start the next page when due, reconnect when due. */
void follower_tick(struct follower *f);
/* Milliseconds until follower_tick must run. */
int follower_timeout_ms(const struct follower *f);
/* The PostgreSQL socket is ready. */
void follower_on_ready(struct follower *f, uint32_t events);
void follower_free(struct follower *f);

#endif
