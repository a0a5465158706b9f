/*
 * layout.h - THE one header that defines the outboxd shared-memory segment.
 *
 * Everything that lives in the segment `/outboxd-<instance>` is declared here
 * and nowhere else; the daemon, outboxctl and the tests all include it. The
 * golden test (tests/unit/check_shm_layout.c) prints sizeof/offsetof of every
 * struct below and compares the dump with common/shm/layout.golden: a diff
 * means SHM_LAYOUT_MAJOR (bytes reinterpreted) or SHM_LAYOUT_MINOR (fields or
 * sections appended) must change, and outboxctl must be reviewed.
 *
 * Segment shape
 * -------------
 *	+--------------------------------------+ 0
 *	| struct shm_header (incl. 16 TOC rows)| SHM_HEADER_SIZE (1024)
 *	+--------------------------------------+
 *	| section 1 (offset, stride, count)    | every offset a multiple of 128
 *	| section 2 ...                        |
 *	+--------------------------------------+ total_size
 *
 * Offsets only: every reference inside the segment is an offset from the
 * base or an index, never a pointer, fd or process-local object, because
 * outboxctl attaches by name at an unrelated address. Sections are found
 * through the TOC; every lookup is bounds-checked once (segment.c) and the
 * result cached in the process-local struct shm_segment.
 *
 * Process indexes: slot 0 is the supervisor, 1 the oracle, 2 the gateway and
 * 3 + i worker i (SHM_PROC_WORKER0). The process table, the stats blocks and
 * the QSBR reader counters are all indexed by this one number.
 *
 * The gateway (ops/gateway/) runs in slot 2 unless OUTBOX_HTTP_ADDR is off
 * (then its slot stays FREE and outboxctl stats does not list it). It writes
 * its proc slot and stats block, reads every stats block and copies the fee
 * snapshot with the seqcount (its QSBR counter stays offline). Its hint rings
 * (SHM_PRODUCER_GATEWAY) carry a NEW_OP hint for each op enqueued over HTTP
 * (ops/gateway/wake.c). Work enqueued in SQL reaches a worker through the
 * oracle's rings: the lane watcher (oracle/lane_watch.h) pushes NEW_OP and
 * WATCHING hints, since the oracle always runs and the gateway may not.
 *
 * Notes on synchronisation (who writes what)
 * ------------------------------------------
 * Atomics are C11 <stdatomic.h> throughout common/shm/ (liburcu's RCU flavours
 * are per-process, and its uatomic layer adds nothing C11 lacks). Every shared
 * word that is written while another process may read it is _Atomic; the only
 * non-atomic shared payload is the fee snapshot body, which seqcount copiers
 * read word by word with relaxed __atomic loads (fee_snapshot.c).
 *
 * | region                  | writer                          | readers              | protocol
 * |-------------------------|---------------------------------|----------------------|---------------------------
 * | header                  | supervisor (create, heartbeat)  | all                  | state: release/acquire
 * | proc slot p             | supervisor (assign, exited);    | supervisor, outboxctl| single-word atomics
 * |                         | process p (RUNNING, heartbeat)  |                      |
 * | stats block p           | process p only                  | outboxctl            | relaxed single-word atomics
 * | qsbr token              | oracle                          | readers              | DPDK QSBR (qsbr.h)
 * | qsbr reader p           | process p; supervisor (OFFLINE) | oracle               | release/acquire
 * | fee ctl current         | oracle                          | readers, outboxctl   | release/acquire
 * | fee ctl retire_token    | oracle (private bookkeeping)    | oracle after respawn | -
 * | fee slot s (seq, body)  | oracle                          | QSBR readers in place| seqcount for copiers
 * | ring r head, drops      | producer of r (oracle; gateway) | consumer worker      | SPSC release/acquire
 * | ring r tail             | consumer worker                 | producer             | SPSC release/acquire
 * | doorbell w (sleeping)   | worker w                        | producers            | seq_cst fence handshake
 * | in-flight w             | worker w; supervisor (reset)    | all workers          | seq_cst (inflight.h)
 *
 * The supervisor follows PostgreSQL's "don't trust shared memory" rule: it
 * makes only single-word stores into slots it owns and decides from its own
 * private child table.
 */
#ifndef OUTBOX_SHM_LAYOUT_H
#define OUTBOX_SHM_LAYOUT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/shm/metrics.h"

#define SHM_MAGIC        0x4f5554424f584431ULL /* "OUTBOXD1" */
#define SHM_LAYOUT_MAJOR 1      /* bump = existing bytes reinterpreted; attachers refuse */
#define SHM_LAYOUT_MINOR 1      /* bump = fields/sections appended; tolerated (1: stats families) */
#define SHM_ENDIAN_MARK  0x1234 /* written natively */
#define SHM_CACHELINE    64
#define SHM_ALIGN        128 /* section alignment and hot per-writer lines */
#define SHM_HEADER_SIZE  1024
#define SHM_TOC_MAX      16

/* Configuration bounds, checked by shm_segment_size(). */
#define SHM_MAX_WORKERS       256
#define SHM_RING_MIN_CAPACITY 2
#define SHM_RING_MAX_CAPACITY (1u << 20)
#define SHM_FEE_MIN_SLOTS     3
#define SHM_FEE_MAX_SLOTS     8

enum shm_state {
	SHM_INIT = 0,  /* being built: attachers say "daemon starting" */
	SHM_READY = 1, /* fully built; stored with release by the supervisor */
	SHM_DEAD = 2,  /* clean shutdown in progress or done */
};

/* Section ids: never renumbered; new sections get new ids (minor bump). */
enum shm_section_id {
	SHM_SEC_PROCS = 1,        /* struct shm_proc_slot x n_procs */
	SHM_SEC_STATS = 2,        /* struct shm_stats_block x n_procs */
	SHM_SEC_QSBR_TOKEN = 3,   /* struct shm_qsbr_token x 1 */
	SHM_SEC_QSBR_READERS = 4, /* struct shm_qsbr_reader x n_procs */
	SHM_SEC_FEE_CTL = 5,      /* struct shm_fee_ctl x 1 */
	SHM_SEC_FEE_SLOTS = 6,    /* struct shm_fee_slot x fee_slots */
	SHM_SEC_RINGS = 7,        /* (struct shm_ring + records) x 2*n_workers */
	SHM_SEC_DOORBELLS = 8,    /* struct shm_doorbell x n_workers */
	SHM_SEC_INFLIGHT = 9,     /* struct shm_inflight x n_workers */
};

/* Per-section layout versions (struct shm_section.version). */
#define SHM_SEC_VERSION 1

struct shm_section {      /* 32 bytes, never reordered; written once by the supervisor */
	uint32_t id;      /* enum shm_section_id; 0 = unused row */
	uint32_t version; /* per-section layout version */
	uint64_t offset;  /* from segment base; multiple of SHM_ALIGN, >= header_size */
	uint64_t stride;  /* bytes per element (>= what a reader needs; may grow) */
	uint32_t count;   /* elements */
	uint32_t flags;   /* reserved, 0 */
};

struct shm_header {
	uint64_t magic;                      /* SHM_MAGIC; supervisor at create */
	uint16_t major;                      /* SHM_LAYOUT_MAJOR */
	uint16_t minor;                      /* SHM_LAYOUT_MINOR */
	uint16_t endian;                     /* SHM_ENDIAN_MARK, native order */
	uint8_t word_size;                   /* sizeof(void *) */
	uint8_t cacheline;                   /* SHM_CACHELINE */
	uint32_t header_size;                /* SHM_HEADER_SIZE, includes the TOC */
	uint32_t n_sections;                 /* used TOC rows */
	uint64_t total_size;                 /* must equal fstat().st_size */
	uint64_t instance_id;                /* random per creation: detects restarts */
	int32_t supervisor_pid;              /* advisory only (pid reuse) */
	_Atomic uint32_t state;              /* enum shm_state; supervisor, release/acquire */
	_Atomic uint64_t heartbeat_ns;       /* supervisor, CLOCK_MONOTONIC, ~1/s */
	uint64_t created_at_ms;              /* CLOCK_REALTIME ms since epoch at create */
	uint32_t n_workers;                  /* config: worker count */
	uint32_t n_procs;                    /* SHM_PROC_WORKER0 + n_workers */
	uint32_t ring_capacity;              /* config: records per hint ring (power of 2) */
	uint32_t fee_slots;                  /* config: snapshot slots (3..8) */
	char instance[40];                   /* NUL-terminated instance name */
	uint32_t reserved[98];               /* zero; room to grow without a major bump */
	struct shm_section toc[SHM_TOC_MAX]; /* at offset 512, ends at SHM_HEADER_SIZE */
};

/* ---- process table ---------------------------------------------------- */

enum shm_role {
	SHM_ROLE_SUPERVISOR = 0,
	SHM_ROLE_ORACLE = 1,
	SHM_ROLE_GATEWAY = 2,
	SHM_ROLE_WORKER = 3,
};

#define SHM_PROC_SUPERVISOR 0
#define SHM_PROC_ORACLE     1
#define SHM_PROC_GATEWAY    2
#define SHM_PROC_WORKER0    3

enum shm_proc_state {
	SHM_PROC_FREE = 0,     /* never started */
	SHM_PROC_STARTING = 1, /* supervisor forked it; child not yet up */
	SHM_PROC_RUNNING = 2,  /* child announced itself (proc_slot_running) */
	SHM_PROC_STOPPING = 3, /* child draining */
	SHM_PROC_EXITED = 4,   /* supervisor reaped it; may be respawned */
	SHM_PROC_BACKOFF = 5,  /* supervisor waits before respawning */
};

/*
 * One row per process; 128 bytes. Heartbeats are CLOCK_MONOTONIC ns (the
 * clock is system-wide, so outboxctl computes ages with its own
 * clock_gettime(CLOCK_MONOTONIC)); started_at is CLOCK_REALTIME ms since the
 * epoch for display. Every field is one atomic word: no reader ever needs two
 * fields to agree.
 */
struct shm_proc_slot {
	_Atomic uint32_t role;          /* enum shm_role; supervisor at create */
	_Atomic uint32_t index;         /* role-local index (worker i -> i); supervisor at create */
	_Atomic int32_t pid;            /* supervisor at fork; 0 when none */
	_Atomic uint32_t state;         /* enum shm_proc_state; supervisor + the child */
	_Atomic uint64_t heartbeat_ns;  /* the child (supervisor for slot 0), CLOCK_MONOTONIC */
	_Atomic uint64_t restarts;      /* supervisor: respawns after the first start */
	_Atomic uint64_t started_at_ms; /* supervisor at fork, CLOCK_REALTIME ms */
	_Atomic int32_t last_exit_status; /* supervisor: exit code, -1 when none */
	_Atomic int32_t last_exit_signal; /* supervisor: killing signal, 0 when none */
	_Atomic uint64_t exits;           /* supervisor: total exits/crashes seen */
	uint8_t pad[128 - 56];
};

/* ---- stats blocks ----------------------------------------------------- */

/*
 * One block per process, single writer (the process itself), starting on its
 * own 128-byte line. The metric ids come from the X-macro tables in
 * metrics.h; the arrays have fixed capacities so that adding a metric is a
 * one-line change that leaves the layout alone.
 */
struct shm_histogram {
	_Atomic uint64_t bucket[SHM_HIST_BUCKETS]; /* non-cumulative; last = +Inf */
	_Atomic uint64_t count;                    /* observations */
	_Atomic uint64_t sum;                      /* sum of observed values */
};

struct shm_stats_block {
	_Atomic uint64_t generation; /* owner: bumped at each (re)start */
	uint8_t pad0[SHM_ALIGN - 8];
	_Atomic uint64_t counter[SHM_COUNTER_CAP]; /* owner; monotonic */
	_Atomic int64_t gauge[SHM_GAUGE_CAP];      /* owner */
	struct shm_histogram hist[SHM_HIST_CAP];   /* owner */
	/* 1.1, appended: the labeled families of metrics.h */
	_Atomic uint64_t family[SHM_FAMILY_CAP];               /* owner; monotonic */
	struct shm_histogram family_hist[SHM_FAMILY_HIST_CAP]; /* owner */
};

/* ---- QSBR (fee snapshot readers) -------------------------------------- */

struct shm_qsbr_token {
	_Atomic uint64_t token; /* oracle: starts at 1, fetch_add at each retire */
	uint8_t pad[SHM_ALIGN - 8];
};

struct shm_qsbr_reader {
	_Atomic uint64_t cnt; /* process p: last token seen; 0 = offline. supervisor: 0 on death */
	uint8_t pad[SHM_ALIGN - 8];
};

/* ---- fee snapshot ----------------------------------------------------- */

enum fee_congestion {
	FEE_CONGESTION_LOW = 0,
	FEE_CONGESTION_ELEVATED = 1,
	FEE_CONGESTION_HIGH = 2,
	FEE_CONGESTION_SEVERE = 3,
};

#define FEE_CAPACITY_SCALE 1000000u /* ledger_capacity_usage fixed point: ppm */

/*
 * The published fee facts; exactly 8 words so the seqcount copier reads it
 * word by word. Immutable once published (until the slot is reused, which
 * QSBR makes safe for registered readers).
 */
struct fee_snapshot {
	uint64_t recommended_base_fee;     /* stroops, p70, clamped */
	uint64_t aggressive_base_fee;      /* stroops, p95, clamped */
	uint32_t congestion;               /* enum fee_congestion */
	uint32_t capacity_ppm;             /* ledger capacity usage, 0..FEE_CAPACITY_SCALE */
	uint64_t sampled_at_ms;            /* CLOCK_REALTIME ms since epoch */
	uint32_t ttl_ms;                   /* validity after sampled_at */
	uint32_t latest_ledger;            /* latest ledger sequence */
	uint64_t latest_ledger_close_time; /* unix seconds */
	uint64_t generation;               /* publish number, >= 1; set by fee_snapshot_publish */
	uint64_t checksum;                 /* fee_snapshot_checksum() of the words above */
};

struct shm_fee_ctl {
	_Atomic uint64_t current; /* oracle: (generation << 8) | slot; 0 = none yet */
	uint8_t pad0[SHM_ALIGN - 8];
	_Atomic uint64_t
		retire_token[SHM_FEE_MAX_SLOTS]; /* oracle: QSBR token at unpublish; 0 = free */
	_Atomic uint64_t publishes;              /* oracle: snapshots published */
	_Atomic uint64_t waits; /* oracle: publishes that had to wait for readers */
	uint8_t pad1[SHM_ALIGN - 8 * SHM_FEE_MAX_SLOTS - 16];
};

struct shm_fee_slot {
	_Atomic uint64_t seq; /* oracle: odd while the slot is being filled */
	uint8_t pad0[SHM_CACHELINE - 8];
	struct fee_snapshot snap; /* oracle: body, 64 bytes */
};

/* ---- hint rings ------------------------------------------------------- */

enum shm_producer {
	SHM_PRODUCER_GATEWAY = 0, /* new ops enqueued over HTTP (see the top) */
	SHM_PRODUCER_ORACLE = 1,  /* landed tx hashes (follower); new work (lane watcher) */
	SHM_N_PRODUCERS = 2,
};

enum shm_hint_type {
	SHM_HINT_NONE = 0,
	SHM_HINT_NEW_OP = 1,    /* work to claim in vshard `ledger` (op_id 0: not one op) */
	SHM_HINT_TX_LANDED = 2, /* tx_hash landed in ledger `ledger` */
	/*
	 * The follower pushed every TX_LANDED hint of this worker's for ledgers
	 * aux..ledger into this ring before this record (none was dropped), so
	 * a hash of ours not hinted by now did not land in them.
	 */
	SHM_HINT_FOLLOWED = 3,
	/*
	 * The oracle's lane watcher is looking at this worker's vshards (aux:
	 * its longest wait between looks, ms), and will push a NEW_OP hint and
	 * ring the doorbell when a claim could take something there; a worker
	 * that hears this no longer polls its lanes by itself.
	 */
	SHM_HINT_WATCHING = 4,
};

/*
 * A TX_LANDED hint's aux: how the transaction ended and the fee it was
 * charged, so the owning worker can confirm from the hint alone (the ledger
 * is closed: getTransactions lists only applied transactions). Defined here,
 * beside the record, because producer (oracle) and consumer (worker) are
 * different roles and meet only in shared memory.
 */
#define SHM_HINT_LANDED_SUCCESS   1u
#define SHM_HINT_LANDED_FAILED    2u
#define SHM_HINT_AUX(status, fee) (((uint64_t)(fee) << 2) | (status))
#define SHM_HINT_AUX_STATUS(aux)  ((unsigned)((aux)&3u))
#define SHM_HINT_AUX_FEE(aux)     ((aux) >> 2)

/* One fixed-size record; 64 bytes. */
struct shm_hint {
	uint32_t type;       /* enum shm_hint_type */
	uint32_t ledger;     /* ledger sequence for TX_LANDED, else 0 */
	uint64_t op_id;      /* the operation (NEW_OP; TX_LANDED: the hash's op) */
	uint8_t tx_hash[32]; /* for TX_LANDED */
	uint64_t aux;        /* producer-defined (e.g. priority) */
	uint64_t reserved;   /* zero */
};

/*
 * Ring r = producer * n_workers + worker. Head and tail are free-running
 * 64-bit counters (head - tail = fill), each on its own 128-byte line.
 * Records follow the header at offset sizeof(struct shm_ring).
 */
struct shm_ring {
	_Atomic uint64_t head;  /* producer: records published */
	_Atomic uint64_t drops; /* producer: hints dropped because the ring was full */
	uint8_t pad0[SHM_ALIGN - 16];
	_Atomic uint64_t tail; /* consumer: records consumed */
	uint8_t pad1[SHM_ALIGN - 8];
	uint32_t capacity; /* supervisor at create: power of two */
	uint32_t rec_size; /* supervisor at create: sizeof(struct shm_hint) */
	uint32_t producer; /* supervisor at create: enum shm_producer */
	uint32_t worker;   /* supervisor at create: consumer worker index */
	uint8_t pad2[SHM_ALIGN - 16];
	/* struct shm_hint records[capacity] follow */
};

/* ---- doorbells and in-flight accounting ------------------------------- */

struct shm_doorbell {
	_Atomic uint32_t sleeping; /* worker w: 1 between doorbell_prepare and doorbell_done */
	uint32_t pad_;
	_Atomic uint64_t rings; /* producers: eventfd writes made (stat, relaxed RMW) */
	uint8_t pad[SHM_ALIGN - 16];
};

struct shm_inflight {
	_Atomic int64_t count; /* worker w: its in-flight transactions; supervisor resets to 0 */
	uint8_t pad[SHM_ALIGN - 8];
};

/* ---- compile-time layout checks (the golden test is the runtime twin) -- */

_Static_assert(sizeof(struct shm_section) == 32, "toc row");
_Static_assert(offsetof(struct shm_header, toc) == 512, "toc offset");
_Static_assert(sizeof(struct shm_header) == SHM_HEADER_SIZE, "header size");
_Static_assert(sizeof(struct shm_proc_slot) == 128, "proc slot");
_Static_assert(sizeof(struct shm_stats_block) % SHM_ALIGN == 0, "stats block");
_Static_assert(offsetof(struct shm_stats_block, counter) == SHM_ALIGN, "stats counters");
_Static_assert(sizeof(struct shm_qsbr_token) == SHM_ALIGN, "qsbr token");
_Static_assert(sizeof(struct shm_qsbr_reader) == SHM_ALIGN, "qsbr reader");
_Static_assert(sizeof(struct fee_snapshot) == 64, "fee snapshot");
_Static_assert(sizeof(struct shm_fee_ctl) == 2 * SHM_ALIGN, "fee ctl");
_Static_assert(sizeof(struct shm_fee_slot) == SHM_ALIGN, "fee slot");
_Static_assert(sizeof(struct shm_hint) == 64, "hint");
_Static_assert(sizeof(struct shm_ring) == 3 * SHM_ALIGN, "ring header");
_Static_assert(sizeof(struct shm_doorbell) == SHM_ALIGN, "doorbell");
_Static_assert(sizeof(struct shm_inflight) == SHM_ALIGN, "inflight");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic uint32_t) == 4, "atomic sizes");

#endif
