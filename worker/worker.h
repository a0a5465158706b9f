/*
 * worker.h - the dispatch engine's shared state (one worker process).
 *
 * One thread, one epoll loop (worker_main.c) over: the supervisor's signals
 * and death pipe, the ring doorbell, the sweep timer, the PostgreSQL command
 * queue (pgq.h) and the RPC client. Every step of an op is asynchronous; a
 * job has at most one call outstanding (job->busy), so its state machine is
 * a plain sequence of callbacks.
 *
 * Ownership: the worker holds leases on vshards (leases.c). A job belongs to
 * a vshard; when the lease is lost, or the outcome of a write to PostgreSQL
 * is unknown, every job of that vshard is abandoned (no further writes; its
 * outstanding callback frees it) and, if the lease is still ours, the vshard
 * is reconciled again from PostgreSQL (reconcile.c), which resets the lane
 * reservations. PostgreSQL is the truth; memory only caches.
 *
 * Exactly once: a job sends only envelopes whose attempt row committed
 * (attempt.c records before executors.c sends), re-sends only those same
 * envelopes or fee bumps of the same inner tx (follow.c), and leaves an op
 * for a new transaction only after its inner tx provably cannot land.
 */
#ifndef OUTBOX_WORKER_WORKER_H
#define OUTBOX_WORKER_WORKER_H

#include "common/child.h"
#include "common/fee_view.h"
#include "common/keys.h"
#include "common/priority.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/proc_table.h"
#include "common/shm/spsc_ring.h"
#include "common/shm/stats.h"
#include "common/stellar/rpc.h"
#include "common/stellar/txbuild.h"
#include "worker/pgq.h"

#include <stdbool.h>
#include <stdint.h>

#define WORKER_LEASE_TTL_MS   10000
#define WORKER_FOREIGN_TRY_MS 3000 /* try expired leases of other owners this often */
#define WORKER_FOLLOW_MIN_MS  150  /* first getTransaction after a send */
#define WORKER_FOLLOW_MAX_MS  1000 /* polling interval grows to this */
#define WORKER_RESEND_MS      2000 /* re-send the same envelope while NOT_FOUND */
#define WORKER_LANE_POLL_MS   5    /* NORMAL/LOW latency: claim poll while busy */
#define WORKER_BUSY_MS        2000 /* busy: a claim found work this recently */
#define WORKER_MIN_HORIZON_S  30   /* maxTime at least this far past the ledger close time */
#define WORKER_QUEUE_LEDGERS  4    /* a queued tx is dropped after this many ledgers (4.7) */
#define WORKER_MAX_BUMPS      16
#define WORKER_OWNER_MAX      128
/*
 * PostgreSQL connections per worker. Connection 0 is the control
 * connection: it LISTENs, claims, acquires and renews leases, so a claim
 * never queues behind writes. Every statement about one vshard's ops (job
 * writes, reconcile, claim_release, lease_release) goes through that
 * vshard's data connection (worker_pg), so they keep the FIFO order they
 * would have on a single connection, while other vshards' writes do not
 * queue behind them, and queued job writes share commits (pgq.h, group
 * commit). Four: one for control, three commit queues (README, Dispatch
 * performance).
 */
#define WORKER_PG_CONNS 4
/*
 * A new job waits while its data connection has this many statements queued
 * (two group-commit batches): its envelope's maxTime is fixed when it is
 * built, before the attempt row commits, and with fast ledgers 30 s of
 * ledger time can be a few seconds of wall time.
 */
#define WORKER_PG_QUEUE_MAX     (2 * PGQ_BATCH_MAX)
#define WORKER_PG_QUEUE_WAIT_MS 2

struct job;

struct lease {
	int64_t epoch; /* 0 = not held */
	bool reconciled;
	bool reconciling;
	bool acquiring;
	uint32_t gen; /* bumped when its jobs are abandoned: stale callbacks notice */
};

struct signer {
	char id[57];
	uint8_t pub[32];
	long key;    /* index into worker.keys, -1 when we hold no key */
	int64_t seq; /* last sequence number used on chain, when seq_valid */
	bool seq_valid;
};

struct worker {
	struct child_ctx *ctx;
	const struct outbox_config *cfg;
	struct fee_reader reader;
	struct shm_proc_slot *slot;
	struct shm_stats_block *stats;
	struct shm_doorbell *db;
	int db_fd, sig_fd, ep, timer_fd;
	bool draining;

	struct pgq pg[WORKER_PG_CONNS];
	bool pg_up; /* every connection is up */
	struct rpc_client *rpc;
	uint8_t network_id[32];
	char owner[WORKER_OWNER_MAX];
	struct signer_keys keys;
	struct signer **signers; /* open addressing by id */
	size_t signers_cap, signers_n;

	int nvshards;
	struct lease *leases; /* [nvshards] */
	int64_t next_renew_ms, next_foreign_ms, next_claim_ms;
	bool renewing, claiming, claim_again;
	int64_t last_found_ms; /* the last claim that returned rows (monotonic) */

	struct job *jobs; /* doubly linked */
	size_t n_jobs;
	int64_t inflight; /* slots held in the global cap */
	struct fee_view fees;
	/*
	 * The newest ledger close time any RPC answer reported (unix s): under
	 * load the oracle's snapshot can lag, and with fast ledgers the chain's
	 * clock runs ahead of ours (close times rise at least 1 s per ledger).
	 */
	int64_t seen_close_time;
	struct spsc_ring rings[SHM_N_PRODUCERS]; /* hints: gateway (new ops), oracle (landed) */
	bool ring_ok[SHM_N_PRODUCERS];
};

enum job_state {
	J_NEW,    /* claimed, nothing done */
	J_FOLLOW, /* an envelope is (or may be) out: follow it */
	J_DONE,   /* finished; freed at the next reap */
};

struct job {
	struct job *prev, *next;
	struct worker *w;
	int vshard;
	uint32_t lease_gen;
	bool abandoned, busy, holds_slot, reconciled; /* reconciled: adopted from attempt rows */
	enum job_state st;
	int64_t due_ms; /* next scheduled action (monotonic) */

	int64_t op_id;
	struct signer *signer;
	enum op_kind kind;
	enum op_priority prio;
	char key[440];
	char account[64], amount[48];
	int attempts, fee_bumps;
	int64_t created_ms; /* realtime ms */
	int64_t claimed_ms;

	/* The live inner transaction and its fee bumps. */
	int attempt_no, bump_no; /* bump_no: bumps recorded so far for this inner tx */
	int cur_bump;            /* reconcile: bump number of cur_b64 */
	int64_t seq, max_time, inner_fee, resource_fee, last_fee;
	char inner_hash[65];
	char *inner_b64;
	int n_live;
	char live_hash[WORKER_MAX_BUMPS + 1][65];
	char *live_b64[WORKER_MAX_BUMPS + 1];
	char *cur_b64; /* what we (re)send: the latest of live_b64 */
	int64_t first_sent_ms, last_sent_ms, last_bump_ms;
	uint32_t sent_ledger;
	int64_t poll_ms;
	int follow_errors;
	bool hint_success; /* the ledger follower saw one of our hashes succeed */
	char hint_hash[65];
	uint32_t hint_ledger;
	int64_t hint_fee;

	/* A send answered ERROR: decided only after getTransaction says NOT_FOUND. */
	bool err_pending;
	int err_action; /* enum outcome_action */
	char err_code[64];
	void (*decide_next)(struct job *j); /* after attempt_decide commits */

	/* For the attempt being built. */
	struct txbuild tb;
	int64_t build_fee;
	bool max_fee_hit;
};

/* worker_main.c */
void worker_schedule_claim(struct worker *w, int64_t in_ms);
/* A close time from an RPC answer; one more than a day ahead of us is ignored. */
static inline void worker_saw_close_time(struct worker *w, int64_t t)
{
	if (t > w->seen_close_time && t < (int64_t)(shm_realtime_ms() / 1000) + 86400)
		w->seen_close_time = t;
}

/* The connection for statements about vshard v's ops (see WORKER_PG_CONNS). */
static inline struct pgq *worker_pg(struct worker *w, int vshard)
{
	return &w->pg[1 + (unsigned)vshard % (WORKER_PG_CONNS - 1)];
}
int64_t worker_epoch(const struct worker *w, int vshard); /* 0 when not held */
void worker_fmt_i64(char *buf, size_t n, int64_t v);

/* leases.c */
void leases_start(struct worker *w);
void leases_tick(struct worker *w, int64_t now);
void leases_lost(struct worker *w, int vshard, const char *why);
void leases_release_all(struct worker *w);
/* Our write's outcome is unknown or refused: drop the vshard's jobs and re-reconcile. */
void leases_resync(struct worker *w, int vshard, const char *why);
/* Handle a failed fenced write: OB403 -> lost, else resync. */
void leases_write_failed(struct worker *w, int vshard, const PGresult *res, const char *what);

/* reconcile.c */
void reconcile_start(struct worker *w, int vshard);

/* claim.c */
void claim_tick(struct worker *w);

/* jobs (attempt.c) */
struct job *job_new(struct worker *w, int vshard);
void job_finish(struct job *j); /* done: release slot, unlink, free */
void job_abandon_vshard(struct worker *w, int vshard);
void job_start(struct job *j); /* J_NEW: build and send an attempt */
void jobs_tick(struct worker *w, int64_t now);
/* The fenced SQL helpers used by attempt.c and follow.c. */
int job_sql(struct job *j, const char *sql, int n, const char *const *params, pgq_cb cb);
bool job_gone(struct job *j); /* abandoned: free if idle, true = stop */
void job_retry_later(struct job *j, int64_t delay_ms, const char *error, bool count);
void job_fail(struct job *j, const char *error, const char *code, const char *landed_hash);

/* follow.c */
void follow_poll(struct job *j);
void follow_hint(struct worker *w, const char *tx_hash, uint32_t ledger, uint64_t aux);

/* signers.c */
int signers_load(struct worker *w, struct outbox_error *err);
struct signer *signers_get(struct worker *w, const char *id);
void signers_release(struct worker *w);
/* Sign b with the signer's key (a keypair lives only for this call). */
int signers_sign(struct worker *w, struct signer *s, struct txbuild *b, struct outbox_error *err);

/* executors.c: the only caller of submit_raw_send. */
int executor_build(struct job *j, const struct txbuild_source *src, const struct txbuild_sim *sim,
		   struct outbox_error *err);
int executor_send(struct job *j, const char *envelope_b64, rpc_done_fn cb,
		  struct outbox_error *err);

/* submit.c */
int submit_raw_send(struct rpc_client *c, const char *envelope_b64, rpc_done_fn cb, void *arg,
		    struct outbox_error *err);

#endif
