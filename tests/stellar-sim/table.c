/*
 * table.c - see table.h. Keys are hashes or ed25519 keys, so their first
 * eight bytes are already uniformly distributed; that is the hash.
 */
#include "tests/stellar-sim/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot(const struct table *t, const uint8_t key[32])
{
	uint64_t h;

	memcpy(&h, key, sizeof(h));
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (size_t)h & (t->nbuckets - 1);
}

int table_init(struct table *t)
{
	t->nbuckets = 1024;
	t->count = 0;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	return t->buckets ? 0 : -ENOMEM;
}

void table_release(struct table *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = 0;
	t->count = 0;
}

struct table_node *table_find(const struct table *t, const uint8_t key[32])
{
	struct table_node *n;

	for (n = t->buckets[slot(t, key)]; n; n = n->next)
		if (!memcmp(n->key, key, 32))
			return n;
	return NULL;
}

static int grow(struct table *t)
{
	struct table old = *t;
	size_t i;

	t->nbuckets = old.nbuckets * 2;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		*t = old;
		return -ENOMEM;
	}
	for (i = 0; i < old.nbuckets; i++) {
		struct table_node *n = old.buckets[i], *next;

		for (; n; n = next) {
			size_t s = slot(t, n->key);

			next = n->next;
			n->next = t->buckets[s];
			t->buckets[s] = n;
		}
	}
	free(old.buckets);
	return 0;
}

int table_insert(struct table *t, struct table_node *n)
{
	size_t s;

	if (t->count >= t->nbuckets && grow(t) < 0)
		return -ENOMEM;
	s = slot(t, n->key);
	n->next = t->buckets[s];
	t->buckets[s] = n;
	t->count++;
	return 0;
}

void table_remove(struct table *t, struct table_node *n)
{
	struct table_node **pp = &t->buckets[slot(t, n->key)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			n->next = NULL;
			t->count--;
			return;
		}
	}
}

void table_each(const struct table *t, void (*fn)(struct table_node *n, void *arg), void *arg)
{
	size_t i;

	for (i = 0; i < t->nbuckets; i++) {
		struct table_node *n = t->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			fn(n, arg);
		}
	}
}
