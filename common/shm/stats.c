/*
 * stats.c - per-process stats blocks (see stats.h for the read/write rules).
 *
 * Notes on synchronisation: the owner is the only writer of its block, so
 * an update is a relaxed load plus a relaxed store of one aligned 64-bit
 * word; readers load each word with relaxed ordering. No ordering between
 * words is promised or needed: each metric stands alone.
 */
#include <stdint.h>

#include "common/shm/stats.h"

#define RLX memory_order_relaxed

_Static_assert(SHM_N_COUNTERS <= SHM_COUNTER_CAP, "too many counters: raise SHM_COUNTER_CAP");
_Static_assert(SHM_N_GAUGES <= SHM_GAUGE_CAP, "too many gauges: raise SHM_GAUGE_CAP");
_Static_assert(SHM_N_HISTS <= SHM_HIST_CAP, "too many histograms: raise SHM_HIST_CAP");

/* The values of each label dimension: kinds and priorities as common/priority.c names them. */
static const char *const dim_labels[SHM_N_DIMS] = {"", "kind", "priority", "outcome"};
static const unsigned dim_sizes[SHM_N_DIMS] = {SHM_DIM_NONE_N, SHM_DIM_KIND_N, SHM_DIM_PRIORITY_N,
					       SHM_DIM_OUTCOME_N};
static const char *const dim_kind[SHM_DIM_KIND_N] = {"DEPOSIT", "WITHDRAW", "REBALANCE",
						     "REFERRAL_REWARD"};
static const char *const dim_prio[SHM_DIM_PRIORITY_N] = {"CRITICAL", "NORMAL", "LOW"};
static const char *const dim_outcome[SHM_DIM_OUTCOME_N] = {"confirmed", "retry", "failed"};

#define FDIMS_(id, name, help, d1, d2, d3, ...) {SHM_DIM_##d1, SHM_DIM_##d2, SHM_DIM_##d3},
#define FCELLS_(id, name, help, d1, d2, d3, ...)                                                   \
	(SHM_DIM_##d1##_N * SHM_DIM_##d2##_N * SHM_DIM_##d3##_N) +
#define FNAME_(id, name, ...)                         name,
#define FHELP_(id, name, help, ...)                   help,
#define HBASE_(id, name, help, d1, d2, d3, base, div) base,
#define HDIV_(id, name, help, d1, d2, d3, base, div)  div,
static const enum shm_dim fam_dims[][3] = {SHM_COUNTER_FAMILIES(FDIMS_)};
static const char *const fam_names[] = {SHM_COUNTER_FAMILIES(FNAME_)};
static const char *const fam_helps[] = {SHM_COUNTER_FAMILIES(FHELP_)};
static const enum shm_dim hfam_dims[][3] = {SHM_HIST_FAMILIES(FDIMS_)};
static const char *const hfam_names[] = {SHM_HIST_FAMILIES(FNAME_)};
static const char *const hfam_helps[] = {SHM_HIST_FAMILIES(FHELP_)};
static const uint64_t hfam_bases[] = {SHM_HIST_FAMILIES(HBASE_)};
static const uint64_t hfam_divs[] = {SHM_HIST_FAMILIES(HDIV_)};
_Static_assert(SHM_COUNTER_FAMILIES(FCELLS_) 0 <= SHM_FAMILY_CAP,
	       "too many family cells: raise SHM_FAMILY_CAP");
_Static_assert(SHM_HIST_FAMILIES(FCELLS_) 0 <= SHM_FAMILY_HIST_CAP,
	       "too many family histograms: raise SHM_FAMILY_HIST_CAP");

#define NAME_(id, name, ...)        name,
#define HELP_(id, name, help, ...)  help,
#define BASE_(id, name, help, base) base,
static const char *const counter_names[] = {SHM_COUNTERS(NAME_)};
static const char *const counter_helps[] = {SHM_COUNTERS(HELP_)};
static const char *const gauge_names[] = {SHM_GAUGES(NAME_)};
static const char *const gauge_helps[] = {SHM_GAUGES(HELP_)};
static const char *const hist_names[] = {SHM_HISTOGRAMS(NAME_)};
static const char *const hist_helps[] = {SHM_HISTOGRAMS(HELP_)};
static const uint64_t hist_bases[] = {SHM_HISTOGRAMS(BASE_)};

struct shm_stats_block *shm_stats_block(const struct shm_segment *seg, uint32_t p)
{
	if (p >= seg->n_procs)
		return NULL;
	return (struct shm_stats_block *)((unsigned char *)seg->stats +
					  (size_t)p * seg->stats_stride);
}

void stats_block_restart(struct shm_stats_block *b)
{
	atomic_store_explicit(&b->generation, atomic_load_explicit(&b->generation, RLX) + 1, RLX);
}

void stats_counter_add(struct shm_stats_block *b, enum shm_counter_id id, uint64_t n)
{
	if ((unsigned)id >= SHM_N_COUNTERS)
		return;
	atomic_store_explicit(&b->counter[id], atomic_load_explicit(&b->counter[id], RLX) + n, RLX);
}

void stats_gauge_set(struct shm_stats_block *b, enum shm_gauge_id id, int64_t v)
{
	if ((unsigned)id < SHM_N_GAUGES)
		atomic_store_explicit(&b->gauge[id], v, RLX);
}

void stats_gauge_add(struct shm_stats_block *b, enum shm_gauge_id id, int64_t d)
{
	if ((unsigned)id < SHM_N_GAUGES)
		atomic_store_explicit(&b->gauge[id], atomic_load_explicit(&b->gauge[id], RLX) + d,
				      RLX);
}

uint64_t stats_hist_bound(unsigned id, unsigned i)
{
	if (id >= SHM_N_HISTS || i >= SHM_HIST_BUCKETS - 1)
		return UINT64_MAX;
	return hist_bases[id] << i;
}

unsigned stats_hist_bucket(unsigned id, uint64_t v)
{
	unsigned i = 0;

	while (i < SHM_HIST_BUCKETS - 1 && v > stats_hist_bound(id, i))
		i++;
	return i;
}

void stats_hist_observe(struct shm_stats_block *b, enum shm_hist_id id, uint64_t v)
{
	struct shm_histogram *h;
	unsigned i;

	if ((unsigned)id >= SHM_N_HISTS)
		return;
	h = &b->hist[id];
	i = stats_hist_bucket(id, v);
	atomic_store_explicit(&h->bucket[i], atomic_load_explicit(&h->bucket[i], RLX) + 1, RLX);
	atomic_store_explicit(&h->sum, atomic_load_explicit(&h->sum, RLX) + v, RLX);
	atomic_store_explicit(&h->count, atomic_load_explicit(&h->count, RLX) + 1, RLX);
}

uint64_t stats_counter_read(const struct shm_stats_block *b, enum shm_counter_id id)
{
	if ((unsigned)id >= SHM_N_COUNTERS)
		return 0;
	return atomic_load_explicit((_Atomic uint64_t *)&b->counter[id], RLX);
}

int64_t stats_gauge_read(const struct shm_stats_block *b, enum shm_gauge_id id)
{
	if ((unsigned)id >= SHM_N_GAUGES)
		return 0;
	return atomic_load_explicit((_Atomic int64_t *)&b->gauge[id], RLX);
}

void stats_hist_read(const struct shm_stats_block *b, enum shm_hist_id id,
		     struct stats_hist_view *out)
{
	struct shm_histogram *h;

	*out = (struct stats_hist_view){0};
	if ((unsigned)id >= SHM_N_HISTS)
		return;
	h = (struct shm_histogram *)&b->hist[id];
	for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++)
		out->bucket[i] = atomic_load_explicit(&h->bucket[i], RLX);
	out->count = atomic_load_explicit(&h->count, RLX);
	out->sum = atomic_load_explicit(&h->sum, RLX);
}

uint64_t stats_counter_sum(const struct shm_segment *seg, enum shm_counter_id id)
{
	uint64_t sum = 0;

	for (uint32_t p = 0; p < seg->n_procs; p++)
		sum += stats_counter_read(shm_stats_block(seg, p), id);
	return sum;
}

const char *stats_counter_name(unsigned id)
{
	return id < SHM_N_COUNTERS ? counter_names[id] : NULL;
}

const char *stats_counter_help(unsigned id)
{
	return id < SHM_N_COUNTERS ? counter_helps[id] : NULL;
}

const char *stats_gauge_name(unsigned id)
{
	return id < SHM_N_GAUGES ? gauge_names[id] : NULL;
}

const char *stats_gauge_help(unsigned id)
{
	return id < SHM_N_GAUGES ? gauge_helps[id] : NULL;
}

const char *stats_hist_name(unsigned id)
{
	return id < SHM_N_HISTS ? hist_names[id] : NULL;
}

const char *stats_hist_help(unsigned id)
{
	return id < SHM_N_HISTS ? hist_helps[id] : NULL;
}

/* ---- labeled families ---- */

static unsigned cells_of(const enum shm_dim d[3])
{
	return dim_sizes[d[0]] * dim_sizes[d[1]] * dim_sizes[d[2]];
}

/* The cell of (l1, l2, l3), or UINT32_MAX when a value is out of range. */
static unsigned cell_of(const enum shm_dim d[3], unsigned l1, unsigned l2, unsigned l3)
{
	if (l1 >= dim_sizes[d[0]] || l2 >= dim_sizes[d[1]] || l3 >= dim_sizes[d[2]])
		return UINT32_MAX;
	return (l1 * dim_sizes[d[1]] + l2) * dim_sizes[d[2]] + l3;
}

unsigned stats_family_cells(unsigned f)
{
	return f < SHM_N_FAMILIES ? cells_of(fam_dims[f]) : 0;
}

unsigned stats_hfamily_cells(unsigned f)
{
	return f < SHM_N_HFAMILIES ? cells_of(hfam_dims[f]) : 0;
}

/* Families are laid out one after the other in the block's arrays. */
static unsigned family_base(unsigned f)
{
	unsigned base = 0;

	for (unsigned i = 0; i < f; i++)
		base += stats_family_cells(i);
	return base;
}

static unsigned hfamily_base(unsigned f)
{
	unsigned base = 0;

	for (unsigned i = 0; i < f; i++)
		base += stats_hfamily_cells(i);
	return base;
}

void stats_family_add(struct shm_stats_block *b, enum shm_family_id f, unsigned l1, unsigned l2,
		      unsigned l3, uint64_t n)
{
	unsigned c;
	_Atomic uint64_t *w;

	if ((unsigned)f >= SHM_N_FAMILIES || (c = cell_of(fam_dims[f], l1, l2, l3)) == UINT32_MAX)
		return;
	w = &b->family[family_base(f) + c];
	atomic_store_explicit(w, atomic_load_explicit(w, RLX) + n, RLX);
}

void stats_hfamily_observe(struct shm_stats_block *b, enum shm_hfamily_id f, unsigned l1,
			   unsigned l2, unsigned l3, uint64_t v)
{
	struct shm_histogram *h;
	unsigned c, i = 0;

	if ((unsigned)f >= SHM_N_HFAMILIES || (c = cell_of(hfam_dims[f], l1, l2, l3)) == UINT32_MAX)
		return;
	h = &b->family_hist[hfamily_base(f) + c];
	while (i < SHM_HIST_BUCKETS - 1 && v > stats_hfamily_bound(f, i))
		i++;
	atomic_store_explicit(&h->bucket[i], atomic_load_explicit(&h->bucket[i], RLX) + 1, RLX);
	atomic_store_explicit(&h->sum, atomic_load_explicit(&h->sum, RLX) + v, RLX);
	atomic_store_explicit(&h->count, atomic_load_explicit(&h->count, RLX) + 1, RLX);
}

uint64_t stats_family_read(const struct shm_stats_block *b, unsigned f, unsigned cell)
{
	if (f >= SHM_N_FAMILIES || cell >= stats_family_cells(f))
		return 0;
	return atomic_load_explicit((_Atomic uint64_t *)&b->family[family_base(f) + cell], RLX);
}

void stats_hfamily_read(const struct shm_stats_block *b, unsigned f, unsigned cell,
			struct stats_hist_view *out)
{
	struct shm_histogram *h;

	*out = (struct stats_hist_view){0};
	if (f >= SHM_N_HFAMILIES || cell >= stats_hfamily_cells(f))
		return;
	h = (struct shm_histogram *)&b->family_hist[hfamily_base(f) + cell];
	for (unsigned i = 0; i < SHM_HIST_BUCKETS; i++)
		out->bucket[i] = atomic_load_explicit(&h->bucket[i], RLX);
	out->count = atomic_load_explicit(&h->count, RLX);
	out->sum = atomic_load_explicit(&h->sum, RLX);
}

const char *stats_family_name(unsigned f)
{
	return f < SHM_N_FAMILIES ? fam_names[f] : NULL;
}

const char *stats_family_help(unsigned f)
{
	return f < SHM_N_FAMILIES ? fam_helps[f] : NULL;
}

const char *stats_hfamily_name(unsigned f)
{
	return f < SHM_N_HFAMILIES ? hfam_names[f] : NULL;
}

const char *stats_hfamily_help(unsigned f)
{
	return f < SHM_N_HFAMILIES ? hfam_helps[f] : NULL;
}

enum shm_dim stats_family_dim(unsigned f, unsigned i)
{
	return f < SHM_N_FAMILIES && i < 3 ? fam_dims[f][i] : SHM_DIM_NONE;
}

enum shm_dim stats_hfamily_dim(unsigned f, unsigned i)
{
	return f < SHM_N_HFAMILIES && i < 3 ? hfam_dims[f][i] : SHM_DIM_NONE;
}

uint64_t stats_hfamily_bound(unsigned f, unsigned i)
{
	if (f >= SHM_N_HFAMILIES || i >= SHM_HIST_BUCKETS - 1)
		return UINT64_MAX;
	return hfam_bases[f] << i;
}

uint64_t stats_hfamily_divisor(unsigned f)
{
	return f < SHM_N_HFAMILIES ? hfam_divs[f] : 1;
}

const char *stats_dim_label(enum shm_dim d)
{
	return (unsigned)d < SHM_N_DIMS ? dim_labels[d] : NULL;
}

unsigned stats_dim_size(enum shm_dim d)
{
	return (unsigned)d < SHM_N_DIMS ? dim_sizes[d] : 0;
}

const char *stats_dim_value(enum shm_dim d, unsigned i)
{
	switch (d) {
	case SHM_DIM_KIND:
		return i < SHM_DIM_KIND_N ? dim_kind[i] : NULL;
	case SHM_DIM_PRIORITY:
		return i < SHM_DIM_PRIORITY_N ? dim_prio[i] : NULL;
	case SHM_DIM_OUTCOME:
		return i < SHM_DIM_OUTCOME_N ? dim_outcome[i] : NULL;
	default:
		return NULL;
	}
}

unsigned stats_cell_value(const enum shm_dim d[3], unsigned cell, unsigned i)
{
	unsigned n1 = dim_sizes[d[1]], n2 = dim_sizes[d[2]];

	switch (i) {
	case 0:
		return cell / (n1 * n2);
	case 1:
		return cell / n2 % n1;
	default:
		return cell % n2;
	}
}
