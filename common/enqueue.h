/*
 * enqueue.h - the C client of the enqueue contract: record an intent to move
 * money inside the application's own PostgreSQL transaction.
 *
 *	BEGIN;
 *	INSERT INTO withdrawals ...;              -- the business row
 *	outbox_enqueue(conn, &intent, &out, &err); -- the intent, same transaction
 *	COMMIT;                                    -- both, or neither
 *
 * outbox_enqueue() runs SELECT * FROM outbox.enqueue(...) with
 * PQexecParams on conn, in whatever transaction conn is in; it never issues
 * BEGIN or COMMIT (on a connection outside a transaction the call commits on
 * its own, like any single statement). Validation, idempotency and the
 * wake-up are the SQL function's (schema/0002_enqueue.sql), so every client
 * language gets the same rules.
 *
 * Results: 0 with *out filled (out->created false when the key already
 * existed with the same content; out->status is then that op's status), or
 *	OUTBOX_EINVAL     bad input; err->field names it ("kind", "signer",
 *	                  "payload.amount", ...), err->msg is
 *	                  "<field>: '<value>' <what is wrong>"
 *	OUTBOX_ECONFLICT  the idempotency key exists with another kind, signer
 *	                  or payload; err->field names the first difference
 *	OUTBOX_EDB        anything else PostgreSQL reported (connection lost,
 *	                  serialization failure under REPEATABLE READ, ...)
 *	OUTBOX_EPROTO     the server answered with an unexpected shape
 * On any error the server has aborted the caller's transaction (as for any
 * failed statement): roll it back. Nothing of the intent was written.
 */
#ifndef OUTBOX_COMMON_ENQUEUE_H
#define OUTBOX_COMMON_ENQUEUE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* kind ':' user_id (<= 128) ':' business_record_id (<= 257), as the schema bounds it. */
#define OUTBOX_IDEMPOTENCY_KEY_MAX 420
/* Largest payload_json sent to the server; larger is OUTBOX_EINVAL. */
#define OUTBOX_PAYLOAD_JSON_MAX 8192

struct outbox_intent {
	const char *kind;               /* DEPOSIT, WITHDRAW, REBALANCE, REFERRAL_REWARD */
	const char *user_id;            /* 1..128 chars, no ':' */
	const char *business_record_id; /* 1..128; NULL for REFERRAL_REWARD (derived) */
	const char *signer;             /* G... strkey that signs the op */
	const char *payload_json;       /* JSON object text, fields per kind */
	const char *priority;           /* CRITICAL, NORMAL, LOW; NULL = kind's default */
};

struct outbox_enqueued {
	int64_t id;
	char idempotency_key[OUTBOX_IDEMPOTENCY_KEY_MAX + 1];
	char status[16];   /* PENDING for a new op */
	char priority[16]; /* CRITICAL, NORMAL or LOW */
	bool created;      /* false: the key existed (same content) */
};

int outbox_enqueue(PGconn *conn, const struct outbox_intent *intent, struct outbox_enqueued *out,
		   struct outbox_error *err);

/*
 * Connect to url (a libpq URI or conninfo string). Fails with OUTBOX_EINVAL
 * when url is NULL or empty, OUTBOX_EDB when the connection fails; the
 * message carries libpq's reason but never the url (it may hold a
 * password). *out is NULL on failure.
 */
int outbox_db_connect(const char *url, PGconn **out, struct outbox_error *err);

#endif
