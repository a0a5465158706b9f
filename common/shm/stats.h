/*
 * stats.h - per-process stats blocks: counters, gauges, histograms.
 *
 * Each process owns exactly one struct shm_stats_block (layout.h), indexed by
 * its process index, and is its only writer, so updates are a relaxed load
 * plus a relaxed store (no locked read-modify-write). Readers (outboxctl;
 * the gateway's /metrics) load each word atomically with
 * relaxed ordering; that is enough because every counter is independent and
 * monotonic: a reader may see a slightly old value, never a torn one, and
 * never one that goes backwards. A histogram's buckets, count and sum are read one by one and
 * can disagree by the observations that raced the read; Prometheus tolerates
 * that (sum of buckets is reported as the count when exporting).
 *
 * The gateway's own block has several writer threads (its HTTP pool): they
 * add with atomic_fetch_add, which readers see the same way.
 *
 * Restarts keep the counters: a respawned process continues from the values
 * in its block (stats_block_restart only bumps the generation).
 *
 * Metric ids and their names/help text come from metrics.h (X-macros).
 */
#ifndef OUTBOX_SHM_STATS_H
#define OUTBOX_SHM_STATS_H

#include <stdint.h>

#include "common/shm/segment.h"

/* Stats block of process index p; NULL when p >= seg->n_procs. */
struct shm_stats_block *shm_stats_block(const struct shm_segment *seg, uint32_t p);

/* owner: note a (re)start of the owning process. */
void stats_block_restart(struct shm_stats_block *b);

/* owner: counters (monotonic), gauges, histograms. Out-of-range ids are ignored. */
void stats_counter_add(struct shm_stats_block *b, enum shm_counter_id id, uint64_t n);
void stats_gauge_set(struct shm_stats_block *b, enum shm_gauge_id id, int64_t v);
void stats_gauge_add(struct shm_stats_block *b, enum shm_gauge_id id, int64_t d);
void stats_hist_observe(struct shm_stats_block *b, enum shm_hist_id id, uint64_t v);

/* readers */
uint64_t stats_counter_read(const struct shm_stats_block *b, enum shm_counter_id id);
int64_t stats_gauge_read(const struct shm_stats_block *b, enum shm_gauge_id id);

struct stats_hist_view {
	uint64_t bucket[SHM_HIST_BUCKETS]; /* non-cumulative */
	uint64_t count;
	uint64_t sum;
};
void stats_hist_read(const struct shm_stats_block *b, enum shm_hist_id id,
		     struct stats_hist_view *out);

/* Sum of counter id over all processes (e.g. hints dropped). */
uint64_t stats_counter_sum(const struct shm_segment *seg, enum shm_counter_id id);

/* Metadata from the X-macro tables; NULL for an unknown id. */
const char *stats_counter_name(unsigned id);
const char *stats_counter_help(unsigned id);
const char *stats_gauge_name(unsigned id);
const char *stats_gauge_help(unsigned id);
const char *stats_hist_name(unsigned id);
const char *stats_hist_help(unsigned id);
/* Upper bound of bucket i (UINT64_MAX for the last, +Inf). */
uint64_t stats_hist_bound(unsigned id, unsigned i);
/* Bucket index a value falls in (bound(i-1) < v <= bound(i)). */
unsigned stats_hist_bucket(unsigned id, uint64_t v);

/*
 * Labeled families (metrics.h): a cell per combination of label values
 * (l1, l2, l3 index the family's dimensions; 0 for NONE). Out-of-range ids
 * or values are ignored.
 */
void stats_family_add(struct shm_stats_block *b, enum shm_family_id f, unsigned l1, unsigned l2,
		      unsigned l3, uint64_t n);
void stats_hfamily_observe(struct shm_stats_block *b, enum shm_hfamily_id f, unsigned l1,
			   unsigned l2, unsigned l3, uint64_t v);

/* readers: cells are numbered 0..stats_family_cells(f)-1 (l1 slowest) */
unsigned stats_family_cells(unsigned f);
uint64_t stats_family_read(const struct shm_stats_block *b, unsigned f, unsigned cell);
unsigned stats_hfamily_cells(unsigned f);
void stats_hfamily_read(const struct shm_stats_block *b, unsigned f, unsigned cell,
			struct stats_hist_view *out);

/* Metadata; NULL for an unknown id. */
const char *stats_family_name(unsigned f);
const char *stats_family_help(unsigned f);
const char *stats_hfamily_name(unsigned f);
const char *stats_hfamily_help(unsigned f);
/* Dimension i (0..2) of a family; SHM_DIM_NONE past its last. */
enum shm_dim stats_family_dim(unsigned f, unsigned i);
enum shm_dim stats_hfamily_dim(unsigned f, unsigned i);
/* Upper bound of bucket i in observed units (UINT64_MAX: +Inf), and the divisor. */
uint64_t stats_hfamily_bound(unsigned f, unsigned i);
uint64_t stats_hfamily_divisor(unsigned f);
/* Label name ("kind") and value count and names of a dimension. */
const char *stats_dim_label(enum shm_dim d);
unsigned stats_dim_size(enum shm_dim d);
const char *stats_dim_value(enum shm_dim d, unsigned i);
/* Which value of dimension i (0..2) cell `cell` of a family with dims d has. */
unsigned stats_cell_value(const enum shm_dim d[3], unsigned cell, unsigned i);

#endif
