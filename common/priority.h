/*
 * priority.h - op kinds, priorities and dispatch order (pure, no I/O).
 *
 * Dispatch order is priority (CRITICAL < NORMAL < LOW), then creation time,
 * then id. Nothing else enters the comparison, so no amount of NORMAL or LOW
 * work can sort ahead of a CRITICAL op: starvation of CRITICAL is impossible
 * by construction. The numeric priority values are the ones stored in
 * outbox.ops.priority, by which ops_signer_pending_idx orders a signer's
 * PENDING ops (schema/0004_dispatch.sql; schema/README.md, Conventions
 * other code relies on).
 */
#ifndef OUTBOX_COMMON_PRIORITY_H
#define OUTBOX_COMMON_PRIORITY_H

#include <stdint.h>

enum op_priority { OP_PRIO_CRITICAL = 0, OP_PRIO_NORMAL = 1, OP_PRIO_LOW = 2, OP_PRIO_COUNT };

enum op_kind {
	OP_KIND_DEPOSIT = 0,
	OP_KIND_WITHDRAW,
	OP_KIND_REBALANCE,
	OP_KIND_REFERRAL_REWARD,
	OP_KIND_COUNT
};

const char *op_priority_name(enum op_priority p);            /* NULL when out of range */
int op_priority_parse(const char *s, enum op_priority *out); /* -1 when unknown */
const char *op_kind_name(enum op_kind k);
int op_kind_parse(const char *s, enum op_kind *out);

/* WITHDRAW -> CRITICAL; DEPOSIT, REFERRAL_REWARD -> NORMAL; REBALANCE -> LOW. */
enum op_priority op_kind_default_priority(enum op_kind k);

/* What dispatch order looks at, nothing more. */
struct op_order_key {
	enum op_priority priority;
	int64_t created_us; /* creation time, microseconds since the epoch */
	int64_t id;         /* tie-break: ids grow with insertion order */
};

/* <0 when a dispatches before b, >0 after, 0 when identical (qsort-compatible). */
int op_order_cmp(const struct op_order_key *a, const struct op_order_key *b);

/* Adapter for qsort() over struct op_order_key arrays. */
int op_order_qsort_cmp(const void *a, const void *b);

#endif
