/*
 * audit.h - checking an event stream as a consumer reads it (outboxd's
 * Kafka topic, or outbox.events): pure, events in, a report out.
 *
 * What must hold (a violation is counted and the first one described):
 *   - at least once is allowed: an event id seen again is a duplicate and
 *     dropped (counted), unless its content differs, which is a conflict;
 *   - each op's events carry sequence numbers 1, 2, 3, ... with no gap and
 *     no number used twice (events not yet written at the end are no gap);
 *   - each op's statuses form a legal path through the lifecycle
 *     (common/lifecycle.h): the first event enters PENDING from nothing,
 *     each later event leaves the status the previous one entered, by a
 *     move op_transition() allows; events with neither status (annotations
 *     such as LANDED_LATE) do not move it;
 *   - each chain (common/events.h) links: sequence 1, 2, 3, ... with no gap,
 *     each row's prev equal to the previous row's hash (zero for the first),
 *     and each hash equal to SHA-256(prev || canonical(event)) recomputed.
 */
#ifndef OUTBOX_COMMON_AUDIT_H
#define OUTBOX_COMMON_AUDIT_H

#include "common/events.h"

#include <stddef.h>
#include <stdint.h>

struct audit;

struct audit_report {
	size_t events;     /* distinct event ids */
	size_t duplicates; /* the same event again (dropped) */
	size_t conflicts;  /* the same event id with other content */
	size_t ops;        /* ops seen */
	size_t gaps;       /* missing or repeated per-op sequence numbers */
	size_t illegal;    /* moves the lifecycle does not have */
	size_t chains;     /* chains seen */
	size_t broken;     /* chain links that do not hold */
	char first[320];   /* the first problem found, "" when none */
};

struct audit *audit_new(void);
void audit_free(struct audit *a);

/* Account one event (its content is copied; e stays the caller's). 0 or -ENOMEM. */
int audit_add(struct audit *a, const struct event_rec *e);

/*
 * The head a chain must reach (from outbox.chain_heads): a hash chain on
 * its own cannot show that its newest links were cut off. 0 or -ENOMEM.
 */
int audit_expect_head(struct audit *a, const char *chain, int64_t seq, const uint8_t hash[32]);

/* Check everything added so far. */
void audit_finish(struct audit *a, struct audit_report *r);

/* True when the report found nothing wrong. */
static inline int audit_clean(const struct audit_report *r)
{
	return !r->conflicts && !r->gaps && !r->illegal && !r->broken;
}

/* The newest link of each chain seen, after audit_finish. */
struct audit_chain_end {
	char chain[EVENT_CHAIN_MAX + 1];
	int64_t seq;
	uint8_t hash[32];
};
size_t audit_chain_ends(const struct audit *a, struct audit_chain_end *out, size_t cap);

/*
 * One op's events after audit_finish, in sequence order: its i-th event's
 * seq, type, from, to and time (unix us). n = 0 when the op was not seen.
 */
struct audit_step {
	int64_t id;
	int32_t seq;
	char type[EVENT_TYPE_MAX + 1];
	char from[16], to[16];
	int64_t at_us;
};
size_t audit_op_steps(const struct audit *a, int64_t op_id, struct audit_step *out, size_t cap);

#endif
