/*
 * tx_index.c - the jobs by the hashes of their envelopes.
 *
 * A TX_LANDED hint names a transaction hash, and hint_landed must find the
 * job following it: before, by comparing the hash with every envelope of
 * every job, one walk of all the worker's jobs per op landed. Here each
 * envelope's hash is added when the envelope is made (build.c, follow.c,
 * reconcile.c) and a job's entries go when the job is freed.
 *
 * An entry keeps its own copy of the hash, and a job the list of its
 * entries, so removing them never depends on the envelopes being as they
 * were. A lookup still checks that the job has an envelope of that hash,
 * which is what the walk checked. If an entry cannot be allocated the index
 * is marked incomplete and every lookup walks the jobs, as before: slower,
 * never wrong.
 */
#include "worker/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tx_ref {
	char hash[65];
	struct job *job;
	struct tx_ref *next;     /* in its bucket */
	struct tx_ref *job_next; /* the job's entries */
};

/* The hashes are SHA-256 in hex: their first 16 digits are as good as any hash of them. */
static size_t bucket_of(const char *hash)
{
	uint64_t h = 1469598103934665603ULL;

	for (int i = 0; i < 16 && hash[i]; i++)
		h = (h ^ (unsigned char)hash[i]) * 1099511628211ULL;
	return (size_t)(h & (TX_INDEX_BUCKETS - 1));
}

void tx_index_add(struct job *j, const char *hash)
{
	struct worker *w = j->w;
	struct tx_ref *r;
	size_t b;

	if (!w->tx_buckets && !w->tx_incomplete) {
		w->tx_buckets = calloc(TX_INDEX_BUCKETS, sizeof(*w->tx_buckets));
		w->tx_incomplete = !w->tx_buckets;
	}
	if (w->tx_incomplete)
		return;
	r = malloc(sizeof(*r));
	if (!r) {
		w->tx_incomplete = true;
		return;
	}
	snprintf(r->hash, sizeof(r->hash), "%s", hash);
	r->job = j;
	b = bucket_of(r->hash);
	r->next = w->tx_buckets[b];
	w->tx_buckets[b] = r;
	r->job_next = j->tx_refs;
	j->tx_refs = r;
}

void tx_index_drop_job(struct job *j)
{
	struct worker *w = j->w;

	while (j->tx_refs) {
		struct tx_ref *r = j->tx_refs, **p = &w->tx_buckets[bucket_of(r->hash)];
		while (*p != r)
			p = &(*p)->next;
		*p = r->next;
		j->tx_refs = r->job_next;
		free(r);
	}
}

static bool follows(const struct job *j, const char *hash)
{
	if (j->abandoned)
		return false;
	for (int i = 0; i < j->n_env; i++)
		if (!strcmp(j->env[i].hash, hash))
			return true;
	return false;
}

struct job *tx_index_find(struct worker *w, const char *hash)
{
	if (w->tx_incomplete || !w->tx_buckets) {
		for (struct job *j = w->jobs; j; j = j->next)
			if (follows(j, hash))
				return j;
		return NULL;
	}
	for (struct tx_ref *r = w->tx_buckets[bucket_of(hash)]; r; r = r->next)
		if (!strcmp(r->hash, hash) && follows(r->job, hash))
			return r->job;
	return NULL;
}

void tx_index_free(struct worker *w)
{
	for (struct job *j = w->jobs; j; j = j->next)
		tx_index_drop_job(j);
	free(w->tx_buckets);
	w->tx_buckets = NULL;
}
