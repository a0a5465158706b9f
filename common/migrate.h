/*
 * migrate.h - apply the embedded schema/NNNN_<name>.sql migrations.
 *
 * The SQL files are compiled into outbox_common (schema/embed.cmake), so the
 * binary that migrates is the binary that knows the schema; nothing is read
 * from disk at run time.
 *
 * outbox_migrate_run() promises:
 *  - every missing migration is applied in its own transaction, in version
 *    order, and recorded in outbox.schema_migrations (version, name,
 *    checksum = hex SHA-256 of the SQL text, applied_at);
 *  - running it again applies nothing;
 *  - it refuses, before applying anything, when an applied migration's
 *    checksum differs from the embedded one, or the database records a
 *    version this binary does not know;
 *  - it refuses when vshards is given (> 0) and differs from the count the
 *    deployment was first migrated with (outbox.settings.vshards);
 *  - concurrent runs are safe: each transaction takes the same
 *    pg_advisory_xact_lock and re-checks what is applied under it.
 * It never leaves a transaction open on conn, and must be called outside one.
 */
#ifndef OUTBOX_COMMON_MIGRATE_H
#define OUTBOX_COMMON_MIGRATE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "common/error.h"
#include "common/vshard.h"

struct outbox_migration {
	int version;      /* from the file name, 1.. without gaps */
	const char *name; /* "schema" for 0001_schema.sql */
	const char *sql;  /* NUL-terminated file contents */
	size_t len;       /* bytes of sql, without the NUL */
};

/* The embedded migrations, in version order (generated at build time). */
extern const struct outbox_migration outbox_migrations[];
extern const size_t outbox_migrations_count;

/* Hex SHA-256 of m->sql (64 hex digits and a NUL). */
void outbox_migration_checksum(const struct outbox_migration *m, char out[65]);

/* Called after each migration commits. */
typedef void outbox_migrate_applied_fn(const struct outbox_migration *m, void *arg);

/*
 * Bring the database behind conn up to list[0..n-1] (normally
 * outbox_migrations). vshards: the deployment's count to set at the first
 * migrate and to insist on later, or 0 for "not given" (the first migrate
 * then uses OUTBOX_VSHARDS_DEFAULT, common/vshard.h). Returns the number of migrations applied
 * (0 when up to date) or a negative OUTBOX_E* code with err filled.
 */
int outbox_migrate_run(PGconn *conn, const struct outbox_migration *list, size_t n, int vshards,
		       outbox_migrate_applied_fn *applied, void *arg, struct outbox_error *err);

#endif
