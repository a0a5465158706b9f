/*
 * app.c - the core application's enqueue: business row and intent in one
 * transaction (app.h).
 */
#include "ops/demo/app.h"

#include "common/enqueue.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *const app_transaction_text[] = {
	"BEGIN;",
	"SELECT * FROM outbox.enqueue('WITHDRAW', 'user-07', 'wd-000042', <signer G...>,",
	"        '{\"account\": \"G...\", \"amount\": \"250000000\"}');  -- its id, status",
	"INSERT INTO app.payments (kind, user_id, record_id, amount, account, op_id)",
	"        VALUES ('WITHDRAW', 'user-07', 'wd-000042', 250000000, 'G...', <id>)",
	"        ON CONFLICT DO NOTHING;                             -- a retry finds its row",
	"COMMIT;                                                     -- both, or neither",
	NULL,
};

/* libpq's message without its trailing newline. */
static int msg_len(PGconn *conn)
{
	const char *m = PQerrorMessage(conn);
	int n = (int)strlen(m);

	while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
		n--;
	return n;
}

static int exec_simple(PGconn *conn, const char *sql, struct outbox_error *err)
{
	PGresult *r = PQexec(conn, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK;

	if (!ok)
		outbox_error_set(err, OUTBOX_EDB, "", "%s: %.*s", sql, msg_len(conn),
				 PQerrorMessage(conn));
	PQclear(r);
	return ok ? 0 : OUTBOX_EDB;
}

static int insert_row(PGconn *conn, const struct intent *it, int64_t op_id,
		      struct outbox_error *err)
{
	char id[24];
	const char *record = it->record;
	const char *params[6] = {
		it->kind, it->user, record, it->amount, it->account[0] ? it->account : NULL, id};
	PGresult *r;
	int ok;

	snprintf(id, sizeof(id), "%" PRId64, op_id);
	r = PQexecParams(
		conn,
		"INSERT INTO app.payments (kind, user_id, record_id, amount, account, op_id) "
		"VALUES ($1, $2, $3, $4::numeric, $5, $6::bigint) ON CONFLICT DO NOTHING",
		6, NULL, params, NULL, NULL, 0);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		outbox_error_set(err, OUTBOX_EDB, "", "insert into app.payments: %.*s",
				 msg_len(conn), PQerrorMessage(conn));
	PQclear(r);
	return ok ? 0 : OUTBOX_EDB;
}

int app_enqueue(PGconn *conn, const struct intent *it, struct app_result *out,
		struct outbox_error *err)
{
	char payload[OUTBOX_PAYLOAD_JSON_MAX];
	struct outbox_intent in = {
		.kind = it->kind,
		.user_id = it->user,
		/* a referral's record id is derived (conversion:leg) by outbox.enqueue() */
		.business_record_id = it->what == IW_REFERRAL ? NULL : it->record,
		.signer = it->signer,
		.payload_json = payload,
		.priority = it->priority,
	};
	struct outbox_enqueued e;
	int rc;

	if (intent_payload(it, payload, sizeof(payload)))
		return outbox_error_set(err, OUTBOX_ETOOBIG, "payload", "payload too long");
	if ((rc = exec_simple(conn, "BEGIN", err)))
		return rc;
	rc = outbox_enqueue(conn, &in, &e, err);
	if (!rc)
		rc = insert_row(conn, it, e.id, err);
	if (!rc)
		rc = exec_simple(conn, "COMMIT", err);
	if (rc) {
		PQclear(PQexec(conn, "ROLLBACK"));
		return rc;
	}
	out->op_id = e.id;
	out->created = e.created;
	snprintf(out->priority, sizeof(out->priority), "%s", e.priority);
	return 0;
}
