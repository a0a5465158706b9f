/*
 * lifecycle.h - the operation state machine (pure, no I/O).
 *
 *	            claim+attempt          confirmed on chain
 *	PENDING ---------------------> SUBMITTED --------------> CONFIRMED
 *	  |  ^                           |   |  \ fee bump (stays SUBMITTED)
 *	  |  |  proven dead, or failed   |   |
 *	  |  +-- on chain and retryable -+   +-----------------> FAILED
 *	  |                              |    failed on chain,    |  ^
 *	  +--> CANCELLED (admin)         |    or proven dead and  |  |
 *	  +--> FAILED (attempts exhausted|    out of attempts     |  |
 *	       before any envelope)      v                        |  |
 *	                                HELD -- resolved -------->+  |
 *	PENDING <----------- admin retry (FAILED, HELD) -------------+
 *
 * HELD: outboxd cannot tell what happened and will not guess: the op's
 * transaction consumed its sequence number and no RPC answer can show the
 * outcome, or the signer's sequence number moved past anything outboxd
 * recorded (common/fate.h). An operator resolves it (to CONFIRMED or FAILED
 * by what the chain shows; a later answer that shows the outcome resolves it
 * too) or, when no envelope of it can have run, retries it. A landing
 * outboxd did not expect (an envelope of an op that had moved on) also moves
 * a PENDING, FAILED, CANCELLED or SUBMITTED op to HELD, loudly.
 *
 * CONFIRMED is terminal; CANCELLED and FAILED are terminal for the
 * dispatcher (only an admin retry, or the unexpected-landing alarm, leaves
 * them). Every legal move has exactly one event type, which is what
 * outbox.events records. Self-moves are events only where the lifecycle has
 * them (a fee bump keeps SUBMITTED; a deferral or a retry before any
 * envelope keeps PENDING). schema/0007_exactly_once.sql's status trigger
 * allows exactly these moves (check_dispatch_sql compares them pair by pair).
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
	OP_HELD,
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
	OP_EV_ADMIN_RETRY,     /* FAILED|HELD -> PENDING (admin) */
	OP_EV_HELD,            /* PENDING|SUBMITTED|FAILED|CANCELLED -> HELD */
	OP_EV_RESOLVED,        /* HELD -> CONFIRMED|FAILED (an operator, or a late answer) */
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

/* CONFIRMED, CANCELLED and FAILED: the dispatcher is done with them (HELD waits for an operator). */
bool op_status_is_terminal(enum op_status s);

#endif
