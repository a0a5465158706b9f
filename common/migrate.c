/*
 * migrate.c - see migrate.h. One advisory lock serializes migrators; every
 * decision (what is applied, whether checksums match) is taken under it, so
 * two concurrent runs neither apply a migration twice nor interleave.
 */
#include "common/migrate.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "outbox" in ASCII: the key every migrator locks. */
#define MIGRATE_LOCK_KEY "122519212142712"

#define MIGRATE_SETUP_SQL                                                                          \
	"SET LOCAL client_min_messages = warning;"                                                 \
	"SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ");"

#define MIGRATE_BOOTSTRAP_SQL                                                                      \
	"CREATE SCHEMA IF NOT EXISTS outbox;"                                                      \
	"CREATE TABLE IF NOT EXISTS outbox.schema_migrations ("                                    \
	" version integer PRIMARY KEY CHECK (version >= 1),"                                       \
	" name text NOT NULL CHECK (name ~ '^[a-z0-9_]{1,100}$'),"                                 \
	" checksum text NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),"                             \
	" applied_at timestamptz NOT NULL DEFAULT now())"

void outbox_migration_checksum(const struct outbox_migration *m, char out[65])
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, (const unsigned char *)m->sql, m->len);
	sodium_bin2hex(out, 65, h, sizeof(h));
}

/* Fill err from a failed result; what says what we were doing. */
static int db_error(PGresult *res, PGconn *conn, struct outbox_error *err, const char *what)
{
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char line[OUTBOX_ERROR_MSG_MAX];

	snprintf(line, sizeof(line), "%s", m ? m : PQerrorMessage(conn));
	line[strcspn(line, "\n")] = '\0';
	return outbox_error_set(err, OUTBOX_EDB, "", "%s: %s", what, line);
}

/* Run sql (no parameters); 0 when it succeeded, else err filled. */
static int exec_cmd(PGconn *conn, const char *sql, struct outbox_error *err, const char *what)
{
	PGresult *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);
	int rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = db_error(res, conn, err, what);
	PQclear(res);
	return rc;
}

static void rollback(PGconn *conn)
{
	PQclear(PQexec(conn, "ROLLBACK"));
}

/* Open a migrator transaction: BEGIN, quiet notices, take the lock. */
static int begin_locked(PGconn *conn, struct outbox_error *err)
{
	if (PQtransactionStatus(conn) != PQTRANS_IDLE)
		return outbox_error_set(
			err, OUTBOX_ESTATE, "",
			"migrate must run outside a transaction on an idle connection");
	if (exec_cmd(conn, "BEGIN", err, "begin"))
		return OUTBOX_EDB;
	if (exec_cmd(conn, MIGRATE_SETUP_SQL, err, "take the migration lock")) {
		rollback(conn);
		return OUTBOX_EDB;
	}
	return 0;
}

/* Refuse a vshards count that differs from the deployment's. */
static int check_vshards(PGconn *conn, int vshards, struct outbox_error *err)
{
	PGresult *res;
	int rc = 0, have;

	if (vshards <= 0)
		return 0;
	/* Before the first migrate the table does not exist: nothing to compare. */
	res = PQexec(conn, "SELECT vshards FROM outbox.settings");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = db_error(res, conn, err, "read outbox.settings");
	} else if (PQntuples(res) == 1) {
		have = atoi(PQgetvalue(res, 0, 0));
		if (have != vshards)
			rc = outbox_error_set(
				err, OUTBOX_EINVAL, "OUTBOX_VSHARDS",
				"'%d' differs from this deployment's vshard count %d, "
				"which is fixed at the first migrate",
				vshards, have);
	}
	PQclear(res);
	return rc;
}

static int settings_exist(PGconn *conn, int *exists, struct outbox_error *err)
{
	PGresult *res = PQexec(conn, "SELECT to_regclass('outbox.settings') IS NOT NULL");
	int rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = db_error(res, conn, err, "look for outbox.settings");
	else
		*exists = !strcmp(PQgetvalue(res, 0, 0), "t");
	PQclear(res);
	return rc;
}

/*
 * Compare what the database says is applied with list: every applied version
 * must be known here with the same checksum. Sets *applied_upto to the
 * highest applied version (0 when none).
 */
static int check_applied(PGconn *conn, const struct outbox_migration *list, size_t n,
			 int *applied_upto, struct outbox_error *err)
{
	PGresult *res = PQexec(conn, "SELECT version, name, checksum "
				     "FROM outbox.schema_migrations ORDER BY version");
	int rc = 0;

	*applied_upto = 0;
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = db_error(res, conn, err, "read outbox.schema_migrations");
		PQclear(res);
		return rc;
	}
	for (int i = 0; i < PQntuples(res) && !rc; i++) {
		int v = atoi(PQgetvalue(res, i, 0));
		const char *name = PQgetvalue(res, i, 1);
		char sum[65];

		if (v < 1 || (size_t)v > n) {
			rc = outbox_error_set(
				err, OUTBOX_ESTATE, "schema_migrations",
				"the database has migration %04d_%.100s, which this binary does "
				"not know (it is older than the schema)",
				v, name);
			break;
		}
		outbox_migration_checksum(&list[v - 1], sum);
		if (strcmp(sum, PQgetvalue(res, i, 2)) || strcmp(name, list[v - 1].name))
			rc = outbox_error_set(
				err, OUTBOX_ESTATE, "schema_migrations",
				"migration %04d_%.100s was applied with checksum %.64s, but this "
				"binary's %04d_%s has checksum %s; applied migrations must never "
				"change (add a new one)",
				v, name, PQgetvalue(res, i, 2), v, list[v - 1].name, sum);
		*applied_upto = v;
	}
	PQclear(res);
	return rc;
}

/* Bootstrap the bookkeeping table and verify history; one transaction. */
static int verify(PGconn *conn, const struct outbox_migration *list, size_t n, int vshards,
		  int *applied_upto, struct outbox_error *err)
{
	int rc, exists = 0;

	if ((rc = begin_locked(conn, err)))
		return rc;
	rc = exec_cmd(conn, MIGRATE_BOOTSTRAP_SQL, err, "create outbox.schema_migrations");
	if (!rc)
		rc = check_applied(conn, list, n, applied_upto, err);
	if (!rc)
		rc = settings_exist(conn, &exists, err);
	if (!rc && exists)
		rc = check_vshards(conn, vshards, err);
	if (rc) {
		rollback(conn);
		return rc;
	}
	return exec_cmd(conn, "COMMIT", err, "commit") ? OUTBOX_EDB : 0;
}

/* Apply one migration in its own transaction, unless a concurrent run did. */
static int apply_one(PGconn *conn, const struct outbox_migration *list, size_t n,
		     const struct outbox_migration *m, int vshards, int *did,
		     struct outbox_error *err)
{
	char sum[65], ver[16], vs[16], what[160];
	const char *params[3];
	int rc, upto = 0;
	PGresult *res;

	*did = 0;
	if ((rc = begin_locked(conn, err)))
		return rc;
	/* Under the lock: someone may have applied it since we looked. */
	if ((rc = check_applied(conn, list, n, &upto, err)))
		goto fail;
	if (upto >= m->version)
		return exec_cmd(conn, "COMMIT", err, "commit") ? OUTBOX_EDB : 0;
	snprintf(vs, sizeof(vs), "%d", vshards > 0 ? vshards : OUTBOX_VSHARDS_DEFAULT);
	params[0] = vs;
	res = PQexecParams(conn, "SELECT set_config('outbox.vshards', $1, true)", 1, NULL, params,
			   NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = db_error(res, conn, err, "set outbox.vshards");
	PQclear(res);
	if (rc)
		goto fail;
	snprintf(what, sizeof(what), "migration %04d_%s", m->version, m->name);
	if ((rc = exec_cmd(conn, m->sql, err, what)))
		goto fail;
	outbox_migration_checksum(m, sum);
	snprintf(ver, sizeof(ver), "%d", m->version);
	params[0] = ver;
	params[1] = m->name;
	params[2] = sum;
	res = PQexecParams(conn,
			   "INSERT INTO outbox.schema_migrations (version, name, checksum) VALUES "
			   "($1, $2, $3)",
			   3, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = db_error(res, conn, err, "record the migration");
	PQclear(res);
	if (rc)
		goto fail;
	if (exec_cmd(conn, "COMMIT", err, what))
		return OUTBOX_EDB;
	*did = 1;
	return 0;
fail:
	rollback(conn);
	return rc;
}

int outbox_migrate_run(PGconn *conn, const struct outbox_migration *list, size_t n, int vshards,
		       outbox_migrate_applied_fn *applied, void *arg, struct outbox_error *err)
{
	int rc, upto = 0, count = 0, pending;

	if (vshards < 0 || vshards > OUTBOX_VSHARDS_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_VSHARDS",
					"'%d' is not an integer in 1..%d", vshards,
					OUTBOX_VSHARDS_MAX);
	for (size_t i = 0; i < n; i++)
		if (list[i].version != (int)i + 1)
			return outbox_error_set(
				err, OUTBOX_EINVAL, "migrations",
				"'%s' has version %d at position %zu (expected %zu)", list[i].name,
				list[i].version, i, i + 1);
	if (sodium_init() < 0)
		return outbox_error_set(err, -ENOSYS, "", "libsodium failed to initialize");
	if ((rc = verify(conn, list, n, vshards, &upto, err)))
		return rc;
	pending = (size_t)upto < n;
	for (size_t i = (size_t)upto; i < n; i++) {
		int did = 0;

		if ((rc = apply_one(conn, list, n, &list[i], vshards, &did, err)))
			return rc;
		if (did) {
			count++;
			if (applied)
				applied(&list[i], arg);
		}
	}
	/*
	 * A concurrent first migrate may have created outbox.settings with
	 * another count while we waited for the lock: check again now.
	 */
	if (pending && (rc = verify(conn, list, n, vshards, &upto, err)))
		return rc;
	return count;
}
