/*
 * lifecycle.c - the transition table. Kept as data so that the unit test can
 * compare it, pair by pair, with an independently written expectation.
 */
#include "common/lifecycle.h"

#include <string.h>

static const char *const status_names[OP_STATUS_COUNT] = {
	"PENDING", "SUBMITTED", "CONFIRMED", "FAILED", "CANCELLED", "HELD",
};

static const char *const event_names[OP_EV_COUNT] = {
	"NONE",     "SUBMITTED", "FEE_BUMPED",  "CONFIRMED", "FAILED", "RETRY_SCHEDULED",
	"DEFERRED", "CANCELLED", "ADMIN_RETRY", "HELD",      "RESOLVED",
};

/* transitions[from][to]: the event for the move, OP_EV_NONE when illegal. */
static const enum op_event transitions[OP_STATUS_COUNT][OP_STATUS_COUNT] = {
	[OP_PENDING] =
		{
			[OP_PENDING] = OP_EV_DEFERRED,
			[OP_SUBMITTED] = OP_EV_SUBMITTED,
			[OP_FAILED] = OP_EV_FAILED,
			[OP_CANCELLED] = OP_EV_CANCELLED,
			[OP_HELD] = OP_EV_HELD,
		},
	[OP_SUBMITTED] =
		{
			[OP_PENDING] = OP_EV_RETRY_SCHEDULED,
			[OP_SUBMITTED] = OP_EV_FEE_BUMPED,
			[OP_CONFIRMED] = OP_EV_CONFIRMED,
			[OP_FAILED] = OP_EV_FAILED,
			[OP_HELD] = OP_EV_HELD,
		},
	[OP_FAILED] =
		{
			[OP_PENDING] = OP_EV_ADMIN_RETRY,
			[OP_HELD] = OP_EV_HELD,
		},
	[OP_CANCELLED] =
		{
			[OP_HELD] = OP_EV_HELD,
		},
	[OP_HELD] =
		{
			[OP_PENDING] = OP_EV_ADMIN_RETRY,
			[OP_CONFIRMED] = OP_EV_RESOLVED,
			[OP_FAILED] = OP_EV_RESOLVED,
		},
};

const char *op_status_name(enum op_status s)
{
	return (unsigned)s < OP_STATUS_COUNT ? status_names[s] : NULL;
}

int op_status_parse(const char *s, enum op_status *out)
{
	for (int i = 0; i < OP_STATUS_COUNT; i++) {
		if (!strcmp(s, status_names[i])) {
			*out = (enum op_status)i;
			return 0;
		}
	}
	return -1;
}

const char *op_event_name(enum op_event ev)
{
	return (unsigned)ev < OP_EV_COUNT ? event_names[ev] : NULL;
}

enum op_event op_transition(enum op_status from, enum op_status to)
{
	if ((unsigned)from >= OP_STATUS_COUNT || (unsigned)to >= OP_STATUS_COUNT)
		return OP_EV_NONE;
	return transitions[from][to];
}

bool op_status_is_terminal(enum op_status s)
{
	return s == OP_CONFIRMED || s == OP_CANCELLED || s == OP_FAILED;
}
