/*
 * worker.h - the dispatch engine (one worker process): its state and every
 * function one of its files calls in another. worker/README.md tells the
 * story; in short, an op travels one way:
 *
 *	worker_main.c  the event loop (common/loop.h); hints from the rings (hints.c)
 *	leases.c       vshard leases; reconcile.c adopts a vshard's SUBMITTED ops
 *	claim.c        claims PENDING ops of our reconciled vshards -> jobs
 *	build.c        fee policy, account, simulate, build, sign, write-ahead row
 *	follow.c       send, re-send, fee-bump, follow and prove the fate
 *	job.c          a job's life: fenced SQL, the final write, the end
 *	common/pgq.c   PostgreSQL, group-committed
 *	common/relay.c the leased vshards' events to Kafka (OUTBOX_KAFKA_BROKERS)
 *
 * One thread, one epoll loop. Every step of a job is asynchronous and a job
 * has at most one call outstanding (job->busy), so its life is a sequence of
 * callbacks, each starting with job_gone().
 *
 * Ownership: the worker holds leases on vshards. A job belongs to a vshard;
 * when the lease is lost, or the outcome of a write to PostgreSQL is
 * unknown, every job of the vshard is abandoned (no further writes; its
 * outstanding callback frees it) and, if the lease is still ours, the
 * vshard is reconciled again from PostgreSQL, which is the truth.
 *
 * Exactly once (common/fate.h is the rule): a job sends only envelopes whose
 * attempt row committed (build.c records before follow.c sends), re-sends
 * only those same envelopes or fee bumps of the same inner transaction, and
 * lets an op have a new transaction only when common/fate.c decides its
 * inner transaction DEAD from an account read after its last chance.
 */
#ifndef OUTBOX_WORKER_WORKER_H
#define OUTBOX_WORKER_WORKER_H

#include "common/child.h"
#include "common/relay.h"
#include "common/fate.h"
#include "common/fee_view.h"
#include "common/keys.h"
#include "common/loop.h"
#include "common/pace.h"
#include "common/priority.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/proc_table.h"
#include "common/shm/spsc_ring.h"
#include "common/shm/stats.h"
#include "common/stellar/rpc.h"
#include "common/stellar/sign.h"
#include "common/stellar/txbuild.h"
#include "common/pgq.h"
#include "worker/trace.h"

#include <stdbool.h>
#include <stdint.h>

#define WORKER_LEASE_TTL_MS   10000
#define WORKER_FOREIGN_TRY_MS 3000 /* try expired leases of other owners this often */
#define WORKER_FOLLOW_MIN_MS  150  /* first getTransaction after a send */
#define WORKER_FOLLOW_MAX_MS  1000 /* polling interval grows to this */
#define WORKER_RESEND_MS      2000 /* re-send the same envelope while its fate is unknown */
#define WORKER_ACCOUNT_MS     5000 /* read the signer's account at least this often */
#define WORKER_LANE_POLL_MS   5    /* NORMAL/LOW latency: claim poll while busy, unwatched */
#define WORKER_BUSY_MS        2000 /* busy: a claim found work this recently */
#define WORKER_WATCHED_MS     3000 /* the lane watcher counts while its word is this recent */
#define WORKER_MIN_HORIZON_S  30   /* validity after the last fee bump's chance (build.c) */
#define WORKER_QUEUE_LEDGERS  4    /* the network drops a queued tx after this many ledgers */
#define WORKER_FOLLOWED_MS    2000 /* the follower's coverage counts while this recent (hints.c) */
#define WORKER_MAX_BUMPS      16
#define WORKER_OWNER_MAX      128
#define WORKER_MARKS          64 /* recent (ledger, close time) pairs kept */
/*
 * PostgreSQL connections per worker. Connection 0 is the control
 * connection: it claims, acquires and renews leases, so a claim never
 * queues behind writes. Every statement about one vshard's ops (job
 * writes, reconcile, claim_release, lease_release) goes through that
 * vshard's data connection (worker_pg), so they keep the FIFO order they
 * would have on a single connection (attempt rows and CRITICAL ops' writes
 * excepted: the write-ahead and express connections below), while other
 * vshards' writes do not queue behind them, and queued job writes share
 * commits (common/pgq.h, group commit): one for control, three commit
 * queues (the top-level README.md, Benchmarks, Dispatch performance).
 *
 * The write-ahead connection carries the attempt rows of NORMAL and LOW
 * ops (build.c, attempt_record): each is what an op waits for before its
 * envelope goes out. On a data connection it queued behind the landings
 * of a ledger close, one group-commit batch of tens of ops (bench_dispatch
 * at 500 ops/s offered: the write's p99 30 ms of an enqueue-to-send p99 of
 * 43, worker/README.md's trace).
 *
 * The last one, the express connection, carries only what CRITICAL ops
 * wait for: their NOTIFY (LISTEN), the CRITICAL-only claim (claim.c) and
 * their writes (job_sql). On a backlog the control connection is claiming
 * most of the time (PostgreSQL delivers a NOTIFY only between commands)
 * and each data connection runs group-commit batches of tens of
 * statements, tens of milliseconds each on a busy server: a CRITICAL op
 * would wait for them. The order that
 * matters survives both: a job's own statements are sequential (one call
 * outstanding), they are about its own op and its signer's lane, which no
 * other job holds; and a vshard's reconcile, which must see every write its
 * jobs sent before it, waits until the write-ahead and express connections
 * have run everything queued on them (reconcile.c).
 */
#define WORKER_PG_DATA    3
#define WORKER_PG_AHEAD   (1 + WORKER_PG_DATA)
#define WORKER_PG_EXPRESS (2 + WORKER_PG_DATA)
#define WORKER_PG_CONNS   (3 + WORKER_PG_DATA)
/*
 * A new NORMAL or LOW job waits while the write-ahead connection has this
 * many statements queued (two group-commit batches): its envelope's maxTime
 * is fixed when it is built, before the attempt row commits, and with fast
 * ledgers 30 s of ledger time can be a few seconds of wall time.
 */
#define WORKER_PG_QUEUE_MAX     (2 * PGQ_BATCH_MAX)
#define WORKER_PG_QUEUE_WAIT_MS 2

struct job;

/*
 * The claims a worker may have on the wire at once (claim.c): the regular
 * one, of every priority, on the control connection, and a CRITICAL-only
 * one on the express connection.
 */
enum claim_kind { CLAIM_ALL, CLAIM_CRITICAL, CLAIM_KINDS };

struct lease {
	int64_t epoch; /* 0 = not held */
	bool reconciled;
	bool reconciling;
	bool acquiring;
	uint32_t gen; /* bumped when its jobs are abandoned: stale callbacks notice */
	uint32_t claim_gen[CLAIM_KINDS];  /* gen when each claim in flight was sent */
	bool claim_resynced[CLAIM_KINDS]; /* its answer already sent the vshard to a reconcile */
	uint32_t rec_seq; /* bumped by each reconcile_start: a waiting one that is stale drops */
};

struct signer {
	char id[57];
	uint8_t pub[32];
	long key;    /* index into worker.keys, -1 when we hold no key */
	int64_t seq; /* the account's sequence number, when seq_valid */
	bool seq_valid;
};

/* "ledger `ledger` closed at `close` (unix s)": a chain fact from an RPC answer. */
struct chain_mark {
	uint32_t ledger;
	int64_t close;
};

struct worker {
	struct child_ctx *ctx;
	const struct outbox_config *cfg;
	struct fee_reader reader;
	struct shm_proc_slot *slot;
	struct shm_stats_block *stats;
	struct shm_doorbell *db;
	int db_fd;
	struct loop loop; /* its timer fires every OUTBOX_DISPATCH_INTERVAL_MS: the sweep */

	struct pgq pg[WORKER_PG_CONNS];
	bool pg_up; /* every connection is up */
	struct rpc_client *rpc;
	uint8_t network_id[32];
	char owner[WORKER_OWNER_MAX];
	struct signer_keys keys;
	struct stellar_keypair sign_kp; /* the signing buffer (signers.c) */
	struct signer **signers;        /* open addressing by id */
	size_t signers_cap, signers_n;

	int nvshards;
	struct lease *leases; /* [nvshards] */
	int64_t next_renew_ms, next_foreign_ms, next_claim_ms;
	bool renewing, claiming, claim_again;
	bool urgent_claiming, urgent_again; /* the CRITICAL-only claim (claim.c) */
	int64_t last_found_ms;              /* the last claim that returned rows (monotonic) */
	int64_t claim_batch;                /* the rows the regular claim on the wire may take */
	struct pace pace;                   /* OUTBOX_NORMAL_LOW_MAX_RATE's share (claim.c) */
	bool claim_budget, claim_paced; /* the regular claim on the wire: spends tokens; has none */
	int64_t claim_sent_us[CLAIM_KINDS]; /* when each claim on the wire was sent (mono_us) */
	int64_t watched_ms; /* the oracle's lane watcher's last WATCHING word (monotonic) */

	struct job *jobs; /* doubly linked */
	size_t n_jobs;
	/*
	 * Every job not busy in a call, by due time (due.c: a min-heap with
	 * room for every job); the loop's wait ends at the earliest. tick_no
	 * counts jobs_tick's runs: a job runs at most once per run.
	 */
	struct job **due;
	size_t n_due, cap_due;
	uint64_t tick_no;
	/* The jobs by their envelopes' hashes (tx_index.c); incomplete: walk the jobs instead. */
	struct tx_ref **tx_buckets;
	bool tx_incomplete;
	int64_t inflight; /* slots held in the global cap */
	struct fee_view fees;
	/*
	 * The chain's clock: the newest ledger any answer (or the oracle's
	 * snapshot) reported and its close time, plus recent pairs. Under load
	 * the snapshot can lag, and with fast ledgers the chain's clock runs
	 * ahead of ours (close times rise at least 1 s per ledger).
	 */
	uint32_t chain_ledger;
	int64_t chain_close;
	struct chain_mark marks[WORKER_MARKS];
	unsigned n_marks;
	struct relay *relay;                     /* NULL when OUTBOX_KAFKA_BROKERS is unset */
	struct spsc_ring rings[SHM_N_PRODUCERS]; /* hints: gateway (none), oracle */
	bool ring_ok[SHM_N_PRODUCERS];
	/*
	 * The ledger follower's coverage as this process received it: every
	 * landed hash of ours in ledgers followed_from..followed_to was hinted
	 * to us (SHM_HINT_FOLLOWED), the last word at followed_ms (monotonic).
	 */
	uint32_t followed_from, followed_to;
	int64_t followed_ms;
};

enum job_state {
	J_CLAIMED,   /* claimed: nothing built yet */
	J_BUILDING,  /* fee policy, account, simulate, build, sign */
	J_RECORDING, /* the write-ahead attempt row is being committed */
	J_FOLLOWING, /* an envelope is out, or may be: follow it until its fate is proven */
	J_FINISHING, /* the op's final write is in flight; the job ends with it */
};

/* One envelope of the inner transaction followed: env[0] itself, then its fee bumps. */
struct envelope {
	char hash[65];
	char *b64;
	int64_t fee;
	int bump_no;
	bool recorded; /* its attempt row committed: it may be sent */
	bool refused;  /* a node refused it for good: not sent again */
};

/* What a ledger showed for one of the job's envelopes. */
struct landing {
	char hash[65]; /* which of our envelopes (the inner one when `via` is set) */
	char via[65];  /* an outer hash outboxd did not sign (a third party's fee bump), or "" */
	uint32_t ledger;
	int64_t fee_charged;
	bool success;
	bool need_result; /* a hint said FAILED: fetch the result code first */
	char code[64];    /* the result code of a failure */
	bool retryable;   /* a failure a new transaction may overcome (simulate again) */
};

struct job {
	struct job *prev, *next;
	struct worker *w;
	int vshard;
	uint32_t lease_gen;
	enum job_state st;
	bool busy, abandoned, holds_slot;
	bool adopted;           /* from reconcile: an attempt row, not a claim */
	int64_t due_ms;         /* next scheduled action (monotonic) */
	size_t due_at;          /* its place in w->due, plus one; 0 = not there (due.c) */
	uint64_t tick_no;       /* the jobs_tick run that last ran it */
	struct tx_ref *tx_refs; /* its entries in the worker's tx index */

	/* The op. */
	int64_t op_id;
	struct signer *signer;
	enum op_kind kind;
	enum op_priority prio;
	char key[440];
	char account[64], amount[48];
	int attempts, attempts_base;
	int64_t seq_high; /* highest sequence outboxd recorded for the signer, -1 none */
	int64_t created_ms, claimed_ms;
	int64_t created_us;      /* created_at, microseconds (a claimed job's; 0 adopted) */
	struct send_marks marks; /* its path to the send, for metrics and the trace (trace.h) */

	/* The inner transaction followed, its envelopes, and what is known of its fate. */
	int attempt_no;
	struct fate_tx tx;
	struct fate_facts facts;
	char inner_hash[65];
	int64_t inner_fee, resource_fee;
	struct envelope env[WORKER_MAX_BUMPS + 1];
	int n_env;
	int bump_high; /* highest bump number recorded (refused ones too): never reused */
	struct landing landed;
	int64_t first_sent_ms, last_sent_ms, last_bump_ms, last_acct_ms, poll_ms;
	uint32_t sent_ledger; /* latest ledger at the first send: the queue's clock */
	int sending;          /* the envelope whose sendTransaction is in flight */
	bool want_account;    /* a re-send said txBAD_SEQ or txTOO_LATE: read the account now */
	bool too_late;        /* a node said txTOO_LATE: nothing is sent any more */
	bool consumed;        /* its sequence number is consumed: look every envelope up */
	int lookup_i;         /* the lookup round's next envelope */
	uint32_t round_oldest, round_latest;
	char refusal[64]; /* the last refusal at submission, for the op's error if it is DEAD */
	bool refusal_final;
	bool alarmed;

	/* The attempt being built. */
	struct txbuild tb;
	int64_t build_fee;
	bool max_fee_hit;
	bool aggressive; /* bid from the aggressive fee (a metric only) */
};

/* ---- worker_main.c ---- */
void worker_schedule_claim(struct worker *w, int64_t in_ms);
int64_t worker_epoch(const struct worker *w, int vshard); /* 0 when not held */
/* A chain fact from an RPC answer: ledger closed at close_time (unix s; <= 0 unknown). */
void worker_saw_ledger(struct worker *w, uint32_t ledger, int64_t close_time);
/* The lowest ledger known to have closed after t, 0 when none is known. */
uint32_t worker_first_ledger_after(const struct worker *w, int64_t t);

/* The connection for statements about vshard v's ops (see WORKER_PG_CONNS). */
static inline struct pgq *worker_pg(struct worker *w, int vshard)
{
	return &w->pg[1 + (unsigned)vshard % WORKER_PG_DATA];
}

/* ---- leases.c ---- */
void leases_start(struct worker *w);
void leases_tick(struct worker *w, int64_t now);
void leases_lost(struct worker *w, int vshard, const char *why);
void leases_release_all(struct worker *w);
/* Our write's outcome is unknown or refused: drop the vshard's jobs and re-reconcile. */
void leases_resync(struct worker *w, int vshard, const char *why);
/* Handle a failed fenced write: OB403 -> lost, else resync. */
void leases_write_failed(struct worker *w, int vshard, const PGresult *res, const char *what);
/* "{v,...}" and "{epoch,...}" of the leases held; false when none. */
bool leases_arrays(const struct worker *w, char *vs, char *es, size_t cap);

/* ---- reconcile.c ---- */
void reconcile_start(struct worker *w, int vshard);

/* ---- claim.c ---- */
void claim_tick(struct worker *w);
/* A CRITICAL op is ready (its NOTIFY): claim it without waiting for the regular claim. */
void claim_critical(struct worker *w);

/* ---- job.c: a job's life ---- */
struct job *job_new(struct worker *w, int vshard);
void job_abandon_vshard(struct worker *w, int vshard);
/* First thing in every callback: the job is no longer busy; true = it is gone, stop. */
bool job_gone(struct job *j);
/* ---- tx_index.c: the jobs by their envelopes' hashes ---- */
#define TX_INDEX_BUCKETS 4096
struct tx_ref;
void tx_index_add(struct job *j, const char *hash); /* an envelope of j has this hash */
void tx_index_drop_job(struct job *j);              /* j's entries go (job_free) */
/* The job, not abandoned, with an envelope of this hash; or NULL. */
struct job *tx_index_find(struct worker *w, const char *hash);
void tx_index_free(struct worker *w);

/* ---- due.c: the jobs by due time ---- */
int due_reserve(struct worker *w, size_t n); /* room for n jobs; -1 out of memory */
void due_set(struct job *j, int64_t at);     /* (re)place j at due time at */
void due_drop(struct job *j);                /* j leaves the heap (if there) */
/* The earliest job due at or before now that has not run in this tick, taken out; or NULL. */
struct job *due_pop(struct worker *w, int64_t now);
int64_t due_next(const struct worker *w); /* the earliest due time, INT64_MAX if none */
void due_free(struct worker *w);

/* The job's next action is due at `at` (monotonic ms). */
static inline void job_due(struct job *j, int64_t at)
{
	due_set(j, at);
}
/*
 * A fenced statement about the job's op (owner, vshard, epoch are $1..$3),
 * on the vshard's data connection, or a CRITICAL op's on the express
 * connection (WORKER_PG_CONNS).
 */
int job_sql(struct job *j, const char *sql, int n, const char *const *params, pgq_cb cb);
/*
 * job_sql for a statement with a set form m (pgq_send_merge): queued
 * behind others of its kind, they go out as one statement.
 */
int job_sql_merge(struct job *j, const struct pgq_merge *m, const char *sql, int n,
		  const char *const *params, pgq_cb cb);
/* job_sql_merge for an attempt row, on the job's write-ahead connection (job_ahead_pg). */
int job_sql_ahead(struct job *j, const struct pgq_merge *m, const char *sql, int n,
		  const char *const *params, pgq_cb cb);
/* Where the job's attempt rows go: the write-ahead connection, a CRITICAL op's express one. */
struct pgq *job_ahead_pg(struct job *j);
void jobs_tick(struct worker *w, int64_t now);
/* The op's final writes; each ends the job when it commits. */
void job_defer(struct job *j, int64_t delay_ms);
/* Back to PENDING after delay_ms (< 0: backoff); FAILED when the retry budget is spent. */
void job_retry(struct job *j, int64_t delay_ms, const char *error, bool count);
void job_fail(struct job *j, const char *error, const char *code);
/* One of its envelopes is in a ledger (j->landed), with result code `code` (NULL = success). */
void job_settle(struct job *j, const char *code, bool retryable);
void job_hold(struct job *j, const char *reason, const char *detail_json);
/* Its inner transaction is proven dead: record the proof, then retry or fail the op. */
void job_expire(struct job *j, const struct fate_verdict *v);
/* The claim this job holds will not be used: give its lane reservation back. */
void job_give_back(struct job *j);
/* Nothing to write: the database already let the op go (cancelled or held under the claim). */
void job_drop(struct job *j);
/* Tries made with the current retry budget, this one included. */
int job_tries(const struct job *j);

/* ---- build.c ---- */
void build_start(struct job *j);

/* ---- follow.c ---- */
/* The attempt row committed (or was adopted): send and follow. */
void follow_start(struct job *j, bool send_now);
void follow_poll(struct job *j);

/* ---- hints.c ---- */
void hints_read(struct worker *w);
/* The ledger follower saw tx_hash of op op_id applied. */
void hint_landed(struct worker *w, const char *tx_hash, uint32_t ledger, uint64_t aux,
		 int64_t op_id);
/*
 * The follower's hints cover every ledger a transaction built after ledger
 * sent_after can land in, as of a recent word: a landing would have been
 * hinted, so a getTransaction poll would only answer NOT_FOUND.
 */
bool hints_cover(const struct worker *w, uint32_t sent_after);
/*
 * The oracle's lane watcher is watching our vshards (a WATCHING word within
 * WORKER_WATCHED_MS): it rings us when a claim could take something, so an
 * empty claim need not be followed by a poll (claim.c).
 */
bool hints_watched(const struct worker *w);
/* A hint waits in one of our rings (read after doorbell_prepare: no lost wake-up). */
bool hints_waiting(const struct worker *w);

/* ---- signers.c ---- */
int signers_load(struct worker *w, struct outbox_error *err);
struct signer *signers_get(struct worker *w, const char *id);
void signers_release(struct worker *w);
/* Sign b with the signer's key (a keypair lives only for this call). */
int signers_sign(struct worker *w, struct signer *s, struct txbuild *b, struct outbox_error *err);

/* ---- executors.c: the only caller of submit_raw_send ---- */
int executor_build(struct job *j, const struct txbuild_source *src, const struct txbuild_sim *sim,
		   struct outbox_error *err);
int executor_send(struct job *j, const char *envelope_b64, rpc_done_fn cb,
		  struct outbox_error *err);

/* ---- submit.c ---- */
int submit_raw_send(struct rpc_client *c, const char *envelope_b64, rpc_done_fn cb, void *arg,
		    struct outbox_error *err);

#endif
