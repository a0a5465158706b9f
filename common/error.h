/*
 * error.h - the one error idiom of outboxd.
 *
 * Every fallible function in common/ returns 0 on success or a negative code
 * (-errno, or one of the OUTBOX_E* codes below) and never exits. When the
 * caller passes a struct outbox_error, the function also fills it with a
 * one-line, lowercase message that names the offending field and value, e.g.
 *
 *	payload.amount: '-5' is not a positive integer of stroops
 *
 * The process main()s own the policy: they log the message and map failures
 * onto exit codes (0 ok, 1 failure, 2 do not restart / bad configuration).
 *
 * Messages never contain secrets: callers pass names of secret fields, never
 * their values.
 */
#ifndef OUTBOX_COMMON_ERROR_H
#define OUTBOX_COMMON_ERROR_H

#include <stddef.h>

/* Codes beyond errno's range, for failures that are not system errors. */
enum outbox_error_code {
	OUTBOX_EINVAL = -22, /* bad input: message names the field */
	OUTBOX_EBASE = -10000,
	OUTBOX_ECONFLICT, /* idempotency key reused with other content */
	OUTBOX_EDB,       /* PostgreSQL reported an error */
	OUTBOX_EPROTO,    /* a peer answered something malformed */
	OUTBOX_ETOOBIG,   /* a size bound was exceeded */
	OUTBOX_ESTATE,    /* operation not allowed in the current state */
};

#define OUTBOX_ERROR_MSG_MAX 512

struct outbox_error {
	int code;                       /* 0 when no error */
	char field[64];                 /* offending field, "" when none */
	char msg[OUTBOX_ERROR_MSG_MAX]; /* full one-line message */
};

#define OUTBOX_ERROR_INIT                                                                          \
	{                                                                                          \
		0, "", ""                                                                          \
	}

/* Clear err (NULL allowed). */
void outbox_error_clear(struct outbox_error *err);

/*
 * Record an error and return code, so callers can write
 *	return outbox_error_set(err, OUTBOX_EINVAL, "amount", "'%s' is not ...", s);
 * The message becomes "<field>: <formatted>" when field is non-empty.
 * err may be NULL; code is returned either way.
 */
int outbox_error_set(struct outbox_error *err, int code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Short name of a code, for logs: "einval", "econflict", or strerror text. */
const char *outbox_error_name(int code);

#endif
