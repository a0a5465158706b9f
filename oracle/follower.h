/*
 * follower.h - the ledger follower: the second confirmation path.
 *
 * The oracle already follows every ledger; the follower reads each closed
 * ledger's transactions (getTransactions, paged by cursor), asks PostgreSQL
 * which of their hashes are ours (outbox.attempt_lookup) and pushes a
 * TX_LANDED hint for each into the hint ring of the worker that owns the
 * op's vshard (outbox_vshard_owner, common/vshard.h), then rings that
 * worker's doorbell. The hint carries the outcome (aux, below): a worker
 * following that hash confirms a SUCCESS from the hint alone, without its
 * own getTransaction (so confirmation survives a failing getTransaction),
 * and polls at once for a FAILED one (it needs the result code). A worker
 * that died is replaced, and its successor's reconcile adopts the op
 * anyway. Hints are only hints: a dropped one (full ring, follower down)
 * costs latency, never an op. After each page every worker gets a
 * FOLLOWED record (SHM_HINT_FOLLOWED: the ledgers whose hints it has all
 * received), so that it need not poll getTransaction for transactions
 * those ledgers cover; a hint lost for a worker starts its coverage anew
 * past it.
 *
 * One getTransactions call and one PostgreSQL query at a time, both
 * non-blocking in the oracle's epoll loop: PostgreSQL goes through
 * common/pgq.h, whose connect never blocks and gives up at its deadline
 * (PGQ_CONNECT_TIMEOUT_MS), so a database that does not answer never stops
 * the oracle's heartbeat or its fee snapshots. The connection is made when
 * the first page of hashes needs it and re-made with pgq's backoff; while
 * it is down the follower keeps its place (the page and the cursor) and
 * resumes where it stopped, within the RPC's retention window.
 */
#ifndef OUTBOX_ORACLE_FOLLOWER_H
#define OUTBOX_ORACLE_FOLLOWER_H

#include "common/child.h"
#include "common/shm/layout.h"
#include "common/stellar/rpc.h"

#include <stdbool.h>
#include <stdint.h>

struct follower;

/*
 * Its PostgreSQL socket goes into the epoll set ep under tag. NULL when out
 * of memory (the oracle then runs without it).
 */
struct follower *follower_new(struct child_ctx *ctx, struct rpc_client *rpc, int ep, uint64_t tag);
/* Drive: start the next page when due, (re)connect when due. */
void follower_tick(struct follower *f);
/* Milliseconds until follower_tick must run. */
int follower_timeout_ms(const struct follower *f);
/* The PostgreSQL socket is ready. */
void follower_on_ready(struct follower *f, uint32_t events);

/*
 * The follower holds the oracle's producer end of every worker's ring (a
 * ring has one producer handle: two in one process would each keep their
 * own head). For another part of the oracle (the lane watcher): push h into
 * worker w's ring, counted as a hint sent, and with ring set ring w's
 * doorbell. Only while the ring is at most a quarter full, so that such
 * hints never crowd out the follower's TX_LANDED hints, whose loss costs a
 * worker its coverage; the caller's hint is one a later look repeats.
 * 0 when pushed, -ENOSPC when left out, -EINVAL for no such ring.
 */
int follower_push_soft(struct follower *f, int w, const struct shm_hint *h, bool ring);
void follower_free(struct follower *f);

#endif
