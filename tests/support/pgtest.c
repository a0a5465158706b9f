/*
 * pgtest.c - see pgtest.h. Database names are built from the pid and a
 * counter only, never from input, so they need no quoting beyond "".
 */
#include "tests/support/pgtest.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/migrate.h"

static unsigned pgtest_counter;

/* Append " key='value'" to out with conninfo quoting; -1 when it is full. */
static int append_kv(char *out, size_t n, const char *key, const char *val)
{
	size_t len = strlen(out);

	if (len + strlen(key) + 4 >= n)
		return -1;
	len += (size_t)snprintf(out + len, n - len, "%s%s='", len ? " " : "", key);
	for (const char *p = val; *p; p++) {
		if (len + 3 >= n)
			return -1;
		if (*p == '\'' || *p == '\\')
			out[len++] = '\\';
		out[len++] = *p;
	}
	out[len++] = '\'';
	out[len] = '\0';
	return 0;
}

/*
 * Rebuild base (conninfo or URI) as a conninfo string naming dbname, so
 * either form of OUTBOX_PG_BASE works.
 */
static int conninfo_for(const char *base, const char *dbname, char *out, size_t n,
			struct outbox_error *err)
{
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(base, &perr);
	int rc = 0;

	if (!opts) {
		rc = outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_PG_BASE", "cannot be parsed: %s",
				      perr ? perr : "out of memory");
		PQfreemem(perr);
		return rc;
	}
	out[0] = '\0';
	for (PQconninfoOption *o = opts; o->keyword && !rc; o++)
		if (o->val && *o->val && strcmp(o->keyword, "dbname"))
			rc = append_kv(out, n, o->keyword, o->val);
	if (!rc)
		rc = append_kv(out, n, "dbname", dbname);
	PQconninfoFree(opts);
	if (rc)
		return outbox_error_set(err, OUTBOX_ETOOBIG, "OUTBOX_PG_BASE", "is too long");
	return 0;
}

static void quiet(void *arg, const char *message)
{
}

static int admin_exec(const struct pgtest_db *db, const char *sql, struct outbox_error *err)
{
	PGconn *c = PQconnectdb(db->admin);
	PGresult *res;
	int rc = 0;

	if (PQstatus(c) != CONNECTION_OK) {
		rc = outbox_error_set(err, OUTBOX_EDB, "",
				      "cannot connect to the maintenance "
				      "database: %s",
				      PQerrorMessage(c));
		PQfinish(c);
		return rc;
	}
	PQsetNoticeProcessor(c, quiet, NULL); /* "does not exist, skipping" */
	res = PQexec(c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = outbox_error_set(err, OUTBOX_EDB, "", "%s: %s", sql,
				      PQresultErrorMessage(res));
	PQclear(res);
	PQfinish(c);
	return rc;
}

/*
 * Drop databases left by pgtest processes that no longer exist. Check
 * _exit()s a forked test on a failed assertion, before its teardown, so
 * a failing test leaks its database; the next create cleans up. Only names
 * of pgtest's own pattern are touched, and only when no process of that pid
 * runs here (the server is this host's, as ops/test.sh arranges).
 */
static void sweep_leftovers(const struct pgtest_db *db)
{
	PGconn *c = PQconnectdb(db->admin);
	PGresult *res;

	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return;
	}
	PQsetNoticeProcessor(c, quiet, NULL);
	res = PQexec(c, "SELECT datname, split_part(datname, '_', 3) FROM pg_database "
			"WHERE datname ~ '^outboxd_pgtest_[0-9]{1,9}_[0-9]{1,9}$'");
	for (int i = 0; PQresultStatus(res) == PGRES_TUPLES_OK && i < PQntuples(res); i++) {
		long pid = strtol(PQgetvalue(res, i, 1), NULL, 10);
		char sql[128];

		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)",
			 PQgetvalue(res, i, 0));
		PQclear(PQexec(c, sql));
	}
	PQclear(res);
	PQfinish(c);
}

int pgtest_db_create_empty(struct pgtest_db *db, struct outbox_error *err)
{
	const char *base = getenv("OUTBOX_PG_BASE");
	char sql[128];
	int rc;

	memset(db, 0, sizeof(*db));
	if (!base || !*base)
		base = PGTEST_BASE_DEFAULT;
	snprintf(db->name, sizeof(db->name), "outboxd_pgtest_%ld_%u", (long)getpid(),
		 pgtest_counter++);
	if ((rc = conninfo_for(base, "postgres", db->admin, sizeof(db->admin), err)) ||
	    (rc = conninfo_for(base, db->name, db->conninfo, sizeof(db->conninfo), err)))
		goto fail;
	sweep_leftovers(db);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", db->name);
	if ((rc = admin_exec(db, sql, err)))
		goto fail;
	snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\"", db->name);
	if ((rc = admin_exec(db, sql, err)))
		goto fail;
	return 0;
fail:
	db->name[0] = '\0';
	return rc;
}

int pgtest_db_create(struct pgtest_db *db, int vshards, struct outbox_error *err)
{
	PGconn *c;
	int rc;

	if ((rc = pgtest_db_create_empty(db, err)))
		return rc;
	c = PQconnectdb(db->conninfo);
	if (PQstatus(c) != CONNECTION_OK) {
		rc = outbox_error_set(err, OUTBOX_EDB, "", "cannot connect to %s: %s", db->name,
				      PQerrorMessage(c));
	} else {
		rc = outbox_migrate_run(c, outbox_migrations, outbox_migrations_count, vshards,
					NULL, NULL, err);
		rc = rc < 0 ? rc : 0;
	}
	PQfinish(c);
	if (rc)
		pgtest_db_drop(db, NULL);
	return rc;
}

int pgtest_db_drop(struct pgtest_db *db, struct outbox_error *err)
{
	char sql[128];
	int rc;

	if (!db->name[0])
		return 0;
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", db->name);
	rc = admin_exec(db, sql, err);
	if (!rc)
		db->name[0] = '\0';
	return rc;
}

void pgtest_setup(struct pgtest_db *db, int vshards)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (pgtest_db_create(db, vshards, &err))
		ck_abort_msg("pgtest: %s", err.msg);
}

void pgtest_setup_empty(struct pgtest_db *db)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (pgtest_db_create_empty(db, &err))
		ck_abort_msg("pgtest: %s", err.msg);
}

void pgtest_teardown(struct pgtest_db *db)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (pgtest_db_drop(db, &err))
		ck_abort_msg("pgtest: %s", err.msg);
}

PGconn *pgtest_connect(const struct pgtest_db *db)
{
	PGconn *c = PQconnectdb(db->conninfo);

	if (PQstatus(c) != CONNECTION_OK)
		ck_abort_msg("pgtest: cannot connect to %s: %s", db->name, PQerrorMessage(c));
	return c;
}

void pgtest_exec(PGconn *conn, const char *sql)
{
	PGresult *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		ck_abort_msg("pgtest: %.200s: %s", sql, PQresultErrorMessage(res));
	PQclear(res);
}

long long pgtest_scalar(PGconn *conn, const char *sql)
{
	PGresult *res = PQexec(conn, sql);
	long long v;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) < 1 || PQnfields(res) < 1 ||
	    PQgetisnull(res, 0, 0))
		ck_abort_msg("pgtest: %.200s: no value (%s)", sql, PQresultErrorMessage(res));
	v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

long long pgtest_explain_buffers(PGresult *r, int *rows)
{
	long long total = 0;

	if (rows)
		*rows = -1;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *l = PQgetvalue(r, i, 0), *p;

		if (rows && (p = strstr(l, "(actual rows=")) && *rows < 0)
			*rows = atoi(p + 13);
		if ((p = strstr(l, "Buffers: shared")) && !total)
			for (const char *k = p; (k = strpbrk(k, "=")); k++)
				total += atoll(k + 1);
	}
	PQclear(r);
	return total;
}

static uint16_t crc16_xmodem(const unsigned char *p, size_t n)
{
	uint16_t crc = 0;

	while (n--) {
		crc ^= (uint16_t)(*p++ << 8);
		for (int i = 0; i < 8; i++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

void pgtest_account(uint32_t n, char out[57])
{
	static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	unsigned char raw[35], seed[4] = {n >> 24, n >> 16, n >> 8, n};
	uint16_t crc;
	unsigned acc = 0;
	int bits = 0, o = 0;

	raw[0] = 6 << 3;
	crypto_hash_sha256(raw + 1, seed, sizeof(seed));
	crc = crc16_xmodem(raw, 33);
	raw[33] = crc & 0xff;
	raw[34] = crc >> 8;
	for (int i = 0; i < 35; i++) {
		acc = acc << 8 | raw[i];
		bits += 8;
		while (bits >= 5) {
			bits -= 5;
			out[o++] = b32[(acc >> bits) & 31];
		}
	}
	out[o] = '\0';
}
