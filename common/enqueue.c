/*
 * enqueue.c - see enqueue.h. The SQL function does the validating; this file
 * maps its SQLSTATEs onto the error idiom and copies the result with bounds.
 */
#include "common/enqueue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENQUEUE_SQL                                                                                \
	"SELECT id, idempotency_key, status, priority, created "                                   \
	"FROM outbox.enqueue($1, $2, $3, $4, $5::jsonb, $6)"

/* Copy the first line of s into dst (size n); 0 if it fit. */
static int copy_line(char *dst, size_t n, const char *s)
{
	size_t len = strcspn(s ? s : "", "\n");

	if (!s) {
		dst[0] = '\0';
		return 0;
	}
	if (len >= n) {
		memcpy(dst, s, n - 1);
		dst[n - 1] = '\0';
		return -1;
	}
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

/*
 * Is s valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF)? The server would refuse it too, but only with a generic error
 * that cannot name the field.
 */
static int utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s++, n, cp, min;

		if (c < 0x80)
			continue;
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07, min = 0x10000;
		else
			return 0;
		for (; n; n--, s++) {
			if ((*s & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (*s & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
	}
	return 1;
}

static int map_error(PGconn *conn, PGresult *res, struct outbox_error *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *col = res ? PQresultErrorField(res, PG_DIAG_COLUMN_NAME) : NULL;
	int code = OUTBOX_EDB;

	if (state && !strcmp(state, "OB422"))
		code = OUTBOX_EINVAL;
	else if (state && !strcmp(state, "OB409"))
		code = OUTBOX_ECONFLICT;
	else if (state && !strcmp(state, "22P02") && msg && strstr(msg, "json"))
		/* The payload text is not JSON: the cast failed before the call. */
		return outbox_error_set(err, OUTBOX_EINVAL, "payload", "is not valid JSON (%s)",
					msg);
	if (!err)
		return code;
	err->code = code;
	copy_line(err->field, sizeof(err->field), code == OUTBOX_EDB ? NULL : col);
	if (code == OUTBOX_EDB)
		snprintf(err->msg, sizeof(err->msg), "enqueue failed: %s%s%s", state ? state : "",
			 state ? " " : "", msg ? msg : PQerrorMessage(conn));
	else
		copy_line(err->msg, sizeof(err->msg), msg);
	err->msg[strcspn(err->msg, "\n")] = '\0';
	return code;
}

static int copy_result(PGresult *res, struct outbox_enqueued *out, struct outbox_error *err)
{
	const char *id, *created;
	char *end;

	if (PQntuples(res) != 1 || PQnfields(res) != 5)
		return outbox_error_set(err, OUTBOX_EPROTO, "",
					"outbox.enqueue returned %d rows of "
					"%d columns, expected 1 of 5",
					PQntuples(res), PQnfields(res));
	id = PQgetvalue(res, 0, 0);
	created = PQgetvalue(res, 0, 4);
	errno = 0;
	out->id = strtoll(id, &end, 10);
	if (errno || end == id || *end || out->id <= 0)
		return outbox_error_set(err, OUTBOX_EPROTO, "id", "'%.32s' is not an op id", id);
	if (copy_line(out->idempotency_key, sizeof(out->idempotency_key), PQgetvalue(res, 0, 1)) ||
	    copy_line(out->status, sizeof(out->status), PQgetvalue(res, 0, 2)) ||
	    copy_line(out->priority, sizeof(out->priority), PQgetvalue(res, 0, 3)))
		return outbox_error_set(err, OUTBOX_EPROTO, "",
					"outbox.enqueue returned an "
					"over-long key, status or priority");
	if (strcmp(created, "t") && strcmp(created, "f"))
		return outbox_error_set(err, OUTBOX_EPROTO, "created", "'%.8s' is not a boolean",
					created);
	out->created = created[0] == 't';
	return 0;
}

int outbox_enqueue(PGconn *conn, const struct outbox_intent *in, struct outbox_enqueued *out,
		   struct outbox_error *err)
{
	static const char *const names[6] = {
		"kind", "user_id", "business_record_id", "signer", "payload", "priority",
	};
	const char *params[6];
	PGresult *res;
	int rc;

	outbox_error_clear(err);
	memset(out, 0, sizeof(*out));
	if (!conn || !in)
		return outbox_error_set(err, -EINVAL, "",
					"outbox_enqueue needs a connection "
					"and an intent");
	if (in->payload_json &&
	    strnlen(in->payload_json, OUTBOX_PAYLOAD_JSON_MAX + 1) > OUTBOX_PAYLOAD_JSON_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, "payload", "is larger than %d bytes",
					OUTBOX_PAYLOAD_JSON_MAX);
	params[0] = in->kind;
	params[1] = in->user_id;
	params[2] = in->business_record_id;
	params[3] = in->signer;
	params[4] = in->payload_json;
	params[5] = in->priority;
	if (PQclientEncoding(conn) == pg_char_to_encoding("UTF8"))
		for (int i = 0; i < 6; i++)
			if (params[i] && !utf8_valid((const unsigned char *)params[i]))
				return outbox_error_set(err, OUTBOX_EINVAL, names[i],
							"is not valid UTF-8");
	res = PQexecParams(conn, ENQUEUE_SQL, 6, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = map_error(conn, res, err);
	else
		rc = copy_result(res, out, err);
	PQclear(res);
	return rc;
}

int outbox_db_connect(const char *url, PGconn **out, struct outbox_error *err)
{
	PGconn *conn;
	char why[256];

	*out = NULL;
	if (!url || !*url)
		return outbox_error_set(err, OUTBOX_EINVAL, "database url", "is empty");
	conn = PQconnectdb(url);
	if (!conn)
		return outbox_error_set(err, -ENOMEM, "", "cannot allocate a connection");
	if (PQstatus(conn) != CONNECTION_OK) {
		copy_line(why, sizeof(why), PQerrorMessage(conn));
		PQfinish(conn);
		return outbox_error_set(err, OUTBOX_EDB, "", "cannot connect to the database: %s",
					why);
	}
	*out = conn;
	return 0;
}
