/*
 * ctl_migrate.c - `outboxctl migrate`: bring the database named by
 * OUTBOX_DATABASE_URL (libpq URI or conninfo) up to the migrations embedded
 * in this binary, and say what was applied. OUTBOX_VSHARDS (1..4096) is the
 * deployment's vshard count: set at the first migrate (default 64), refused
 * later when it differs. Exit 0 when the schema is current, 1 on failure,
 * 2 on bad configuration.
 */
#include "ops/ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/enqueue.h"
#include "common/migrate.h"
#include "common/vshard.h"

static void print_applied(const struct outbox_migration *m, void *arg)
{
	int *n = arg;

	printf("applied %04d_%s\n", m->version, m->name);
	fflush(stdout);
	(*n)++;
}

int ctl_migrate(int argc, char **argv)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const char *url = getenv("OUTBOX_DATABASE_URL");
	PGconn *conn = NULL;
	int vshards = 0, n = 0, rc;

	if (argc > 1) {
		fprintf(stderr, "usage: outboxctl migrate (reads OUTBOX_DATABASE_URL, "
				"OUTBOX_VSHARDS)\n");
		return 2;
	}
	if (!url || !*url) {
		fprintf(stderr, "outboxctl migrate: OUTBOX_DATABASE_URL is not set "
				"(a libpq URI or conninfo string)\n");
		return 2;
	}
	if (outbox_vshards_parse(getenv("OUTBOX_VSHARDS"), &vshards, &err)) {
		fprintf(stderr, "outboxctl migrate: %s\n", err.msg);
		return 2;
	}
	if (outbox_db_connect(url, &conn, &err)) {
		fprintf(stderr, "outboxctl migrate: %s\n", err.msg);
		return 1;
	}
	rc = outbox_migrate_run(conn, outbox_migrations, outbox_migrations_count, vshards,
				print_applied, &n, &err);
	PQfinish(conn);
	if (rc < 0) {
		fprintf(stderr, "outboxctl migrate: %s\n", err.msg);
		return err.code == OUTBOX_EINVAL ? 2 : 1;
	}
	if (n == 0)
		printf("schema is up to date (%zu migrations)\n", outbox_migrations_count);
	else
		printf("applied %d of %zu migrations\n", n, outbox_migrations_count);
	return 0;
}
