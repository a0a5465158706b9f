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
