/*
 * app.h - how the demo's applications hand a money movement to outboxd.
 *
 * The core application (SQL): the business row and the intent in one
 * PostgreSQL transaction, so both commit or neither does:
 *
 *	BEGIN;
 *	SELECT * FROM outbox.enqueue(...);            -- outbox_enqueue(), common/enqueue.h
 *	INSERT INTO app.payments (..., op_id) ...;    -- the business row, with its op
 *	COMMIT;
 *
 * A retried request (the same business record again) finds its row and its
 * op (created = false): nothing is paid twice.
 */
#ifndef OUTBOX_OPS_DEMO_APP_H
#define OUTBOX_OPS_DEMO_APP_H

#include "common/error.h"
#include "ops/demo/mix.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

struct app_result {
	int64_t op_id;
	bool created; /* false: the op existed (a retry) */
	char priority[16];
};

/* The statements app_enqueue runs, for the demo to show (NULL-terminated). */
extern const char *const app_transaction_text[];

/* Enqueue it through the core application's transaction; 0 or an OUTBOX_E* code. */
int app_enqueue(PGconn *conn, const struct intent *it, struct app_result *out,
		struct outbox_error *err);

#endif
