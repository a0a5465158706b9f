/*
 * table.h - a chained hash table keyed by 32-byte values (account keys,
 * transaction hashes). Nodes are embedded in the caller's structs (intrusive,
 * container_of style); the table never allocates nodes, only its bucket
 * array, which doubles when the load passes 1. Not thread-safe: the chain
 * lock guards every table.
 */
#ifndef OUTBOX_SIM_TABLE_H
#define OUTBOX_SIM_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct table_node {
	struct table_node *next;
	uint8_t key[32];
};

struct table {
	struct table_node **buckets;
	size_t nbuckets; /* power of two */
	size_t count;
};

#define table_entry(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

int table_init(struct table *t);
void table_release(struct table *t); /* frees buckets, not nodes */
struct table_node *table_find(const struct table *t, const uint8_t key[32]);
/* Insert n (n->key set by the caller); duplicates are the caller's problem. */
int table_insert(struct table *t, struct table_node *n);
/* Remove exactly n (by identity); no-op when absent. */
void table_remove(struct table *t, struct table_node *n);
/* Visit every node; fn may not modify the table. */
void table_each(const struct table *t, void (*fn)(struct table_node *n, void *arg), void *arg);

#endif
