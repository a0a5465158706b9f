/*
 * lifecycle.h - the operation state machine (pure, no I/O).
 *
 * States (design.md section 5):
 *
 *	            claim+attempt          confirmed on chain
 *	PENDING ---------------------> SUBMITTED --------------> CONFIRMED
 *	  |  ^                           |   |  \ fee bump (stays SUBMITTED)
 *	  |  |  provably not landed,     |   |
 *	  |  +-- transient: retry -------+   +-----------------> FAILED
 *	  |                                   rejected on chain,  |  ^
 *	  +--> CANCELLED (admin)              or provably not     |  |
 *	  +--> FAILED (attempts exhausted     executed and out    |  |
 *	       before any envelope existed)   of attempts         |  |
 *	PENDING <-------------------- admin retry ----------------+  |
 *
 * CONFIRMED and CANCELLED are terminal. FAILED is terminal except for an
 * explicit admin retry. Every legal move has exactly one event type, which is
 * what outbox.events records. Self-moves are events only where the lifecycle
 * has them (a fee bump keeps SUBMITTED; a LOW-priority deferral keeps PENDING).
 */
#ifndef OUTBOX_COMMON_LIFECYCLE_H
#define OUTBOX_COMMON_LIFECYCLE_H

#include <stdbool.h>

enum op_status {
	OP_PENDING = 0,
	OP_SUBMITTED,
	OP_CONFIRMED,
	OP_FAILED,
	OP_CANCELLED,
	OP_STATUS_COUNT
};

enum op_event {
	OP_EV_NONE = 0,        /* not a legal move */
	OP_EV_SUBMITTED,       /* PENDING -> SUBMITTED: attempt committed, envelope sent */
	OP_EV_FEE_BUMPED,      /* SUBMITTED -> SUBMITTED: same inner tx, higher fee */
	OP_EV_CONFIRMED,       /* SUBMITTED -> CONFIRMED */
	OP_EV_FAILED,          /* SUBMITTED|PENDING -> FAILED */
	OP_EV_RETRY_SCHEDULED, /* SUBMITTED -> PENDING: provably not landed, transient */
	OP_EV_DEFERRED,        /* PENDING -> PENDING: LOW work held back by congestion */
	OP_EV_CANCELLED,       /* PENDING -> CANCELLED (admin) */
	OP_EV_ADMIN_RETRY,     /* FAILED -> PENDING (admin) */
	OP_EV_COUNT
};

/* "PENDING", ...; NULL for out-of-range values. */
const char *op_status_name(enum op_status s);
/* Parse an exact, upper-case status name; -1 when unknown. */
int op_status_parse(const char *s, enum op_status *out);

/* "SUBMITTED", "FEE_BUMPED", ... (the outbox.events type); NULL when out of range. */
const char *op_event_name(enum op_event ev);

/* The event that moves from -> to, or OP_EV_NONE when the move is illegal. */
enum op_event op_transition(enum op_status from, enum op_status to);

static inline bool op_transition_allowed(enum op_status from, enum op_status to)
{
	return op_transition(from, to) != OP_EV_NONE;
}

/* CONFIRMED and CANCELLED always; FAILED too (only an admin retry leaves it). */
bool op_status_is_terminal(enum op_status s);

#endif
