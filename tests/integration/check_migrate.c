/*
 * check_migrate.c - outboxctl migrate against a real PostgreSQL: applies
 * everything once and then nothing, refuses changed history and a changed
 * vshard count, and is safe when several migrators race.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/migrate.h"
#include "common/vshard.h"
#include "tests/support/pgtest.h"

static struct pgtest_db db;

static void setup_empty(void)
{
	pgtest_setup_empty(&db);
}

static void teardown(void)
{
	pgtest_teardown(&db);
}

static int migrate(PGconn *c, size_t n, int vshards, struct outbox_error *err)
{
	return outbox_migrate_run(c, outbox_migrations, n, vshards, NULL, NULL, err);
}

/*
 * Run the real outboxctl binary with OUTBOX_DATABASE_URL (NULL = unset) and
 * OUTBOX_VSHARDS (NULL = unset); returns its exit code, output in out.
 */
static int run_ctl(const char *url, const char *vshards, char *out, size_t n)
{
	const char *dir = getenv("OUTBOX_BUILD_DIR");
	char path[1024];
	int fd[2], status;
	size_t len = 0;
	ssize_t r;
	pid_t pid;

	ck_assert_msg(dir != NULL, "OUTBOX_BUILD_DIR is not set (run through ctest)");
	snprintf(path, sizeof(path), "%s/outboxctl", dir);
	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		close(fd[0]);
		if (url)
			setenv("OUTBOX_DATABASE_URL", url, 1);
		else
			unsetenv("OUTBOX_DATABASE_URL");
		if (vshards)
			setenv("OUTBOX_VSHARDS", vshards, 1);
		else
			unsetenv("OUTBOX_VSHARDS");
		execl(path, "outboxctl", "migrate", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (len + 1 < n && (r = read(fd[0], out + len, n - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "outboxctl died");
	return WEXITSTATUS(status);
}

START_TEST(test_applies_all_then_nothing)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);
	char sum[65], sql[256];
	long long at;

	ck_assert_int_ge(outbox_migrations_count, 2);
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), outbox_migrations_count);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.schema_migrations"),
			 outbox_migrations_count);
	for (size_t i = 0; i < outbox_migrations_count; i++) {
		outbox_migration_checksum(&outbox_migrations[i], sum);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM outbox.schema_migrations WHERE version = %d "
			 "AND name = '%s' AND checksum = '%s'",
			 outbox_migrations[i].version, outbox_migrations[i].name, sum);
		ck_assert_int_eq(pgtest_scalar(c, sql), 1);
	}
	ck_assert_int_eq(pgtest_scalar(c, "SELECT vshards FROM outbox.settings"), 64);
	at = pgtest_scalar(c, "SELECT sum(extract(epoch FROM applied_at) * 1e6)::bigint "
			      "FROM outbox.schema_migrations");
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), 0);
	ck_assert_int_eq(pgtest_scalar(c,
				       "SELECT sum(extract(epoch FROM applied_at) * 1e6)::bigint "
				       "FROM outbox.schema_migrations"),
			 at);
	ck_assert_int_eq(PQtransactionStatus(c), PQTRANS_IDLE);
	PQfinish(c);
}
END_TEST

START_TEST(test_applies_only_missing)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);

	ck_assert_int_eq(migrate(c, 1, 0, &err), 1);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT max(version) FROM outbox.schema_migrations"), 1);
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), outbox_migrations_count - 1);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT max(version) FROM outbox.schema_migrations"),
			 outbox_migrations_count);
	PQfinish(c);
}
END_TEST

START_TEST(test_cli_applies_and_is_noop)
{
	char out[4096];

	ck_assert_int_eq(run_ctl(db.conninfo, NULL, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "applied 0001_schema\n") != NULL, "output: %s", out);
	ck_assert_msg(strstr(out, "applied 0002_enqueue\n") != NULL, "output: %s", out);
	ck_assert_int_eq(run_ctl(db.conninfo, NULL, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "up to date") != NULL && !strstr(out, "applied 0"), "output: %s",
		      out);
}
END_TEST

START_TEST(test_cli_needs_url)
{
	char out[4096];

	ck_assert_int_eq(run_ctl(NULL, NULL, out, sizeof(out)), 2);
	ck_assert_msg(strstr(out, "OUTBOX_DATABASE_URL is not set") != NULL, "output: %s", out);
	ck_assert_int_eq(run_ctl("", NULL, out, sizeof(out)), 2);
	ck_assert_int_eq(run_ctl("host=127.0.0.1 port=1 connect_timeout=2", NULL, out, sizeof(out)),
			 1);
	ck_assert_msg(strstr(out, "cannot connect") != NULL, "output: %s", out);
}
END_TEST

START_TEST(test_refuses_changed_checksum)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);
	char out[4096];

	/* History as applied by an older build: 0001 only, then it "changed". */
	ck_assert_int_eq(migrate(c, 1, 0, &err), 1);
	pgtest_exec(c, "UPDATE outbox.schema_migrations SET checksum = repeat('0', 64) "
		       "WHERE version = 1");
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), OUTBOX_ESTATE);
	ck_assert_msg(strstr(err.msg, "0001_schema") && strstr(err.msg, "checksum"), "%s", err.msg);
	/* Refused before applying anything else. */
	ck_assert_int_eq(pgtest_scalar(c, "SELECT max(version) FROM outbox.schema_migrations"), 1);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM pg_proc "
					  "WHERE proname = 'enqueue'"),
			 0);
	ck_assert_int_eq(run_ctl(db.conninfo, NULL, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "0001_schema") && strstr(out, "checksum"), "output: %s", out);
	ck_assert_int_eq(PQtransactionStatus(c), PQTRANS_IDLE);
	PQfinish(c);
}
END_TEST

START_TEST(test_refuses_changed_sql)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_migration edited[64];
	PGconn *c = pgtest_connect(&db);
	static const char sql[] = "SELECT 1;";

	ck_assert_int_le(outbox_migrations_count, 64);
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), outbox_migrations_count);
	memcpy(edited, outbox_migrations, outbox_migrations_count * sizeof(edited[0]));
	edited[1].sql = sql;
	edited[1].len = strlen(sql);
	ck_assert_int_eq(
		outbox_migrate_run(c, edited, outbox_migrations_count, 0, NULL, NULL, &err),
		OUTBOX_ESTATE);
	ck_assert_msg(strstr(err.msg, "0002_enqueue"), "%s", err.msg);
	PQfinish(c);
}
END_TEST

/*
 * 0018 numbers events from ops.event_seq: migrating a database that already
 * has events sets each op's counter to its newest seq (0 for an op with
 * none), so the next event continues the op's numbering without a gap.
 */
START_TEST(test_event_seq_backfilled)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);
	char s[57], a[57], sql[1024];
	size_t before = 0;

	while (before < outbox_migrations_count &&
	       strcmp(outbox_migrations[before].name, "event_seq_on_op") != 0)
		before++;
	ck_assert_int_lt(before, outbox_migrations_count);
	ck_assert_int_eq(migrate(c, before, 1, &err), (int)before);
	pgtest_account(1, s);
	pgtest_account(2, a);
	for (int i = 1; i <= 3; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT outbox.enqueue('DEPOSIT', 'u', 'r%d', '%s', "
			 "'{\"account\": \"%s\", \"amount\": \"5\"}')",
			 i, s, a);
		pgtest_exec(c, sql);
	}
	/* r2 has three events, r3 none (an earlier version's op) */
	pgtest_exec(c, "INSERT INTO outbox.events (op_id, seq, type) SELECT id, n, 'NOTE' "
		       "FROM outbox.ops, generate_series(2, 3) n WHERE business_record_id = 'r2'");
	pgtest_exec(c, "DELETE FROM outbox.events WHERE op_id = "
		       "(SELECT id FROM outbox.ops WHERE business_record_id = 'r3')");
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 1, &err),
			 (int)(outbox_migrations_count - before));
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.ops WHERE event_seq <> "
					  "CASE business_record_id WHEN 'r1' THEN 1 "
					  "WHEN 'r2' THEN 3 ELSE 0 END"),
			 0);
	/* the next event of each op continues its numbering */
	pgtest_exec(c, "SELECT outbox.admin_cancel(id, 'ops@example') FROM outbox.ops");
	ck_assert_int_eq(pgtest_scalar(c,
				       "SELECT count(*) FROM outbox.events e JOIN outbox.ops o "
				       "ON o.id = e.op_id WHERE e.type = 'CANCELLED' AND e.seq = "
				       "CASE o.business_record_id WHEN 'r1' THEN 2 "
				       "WHEN 'r2' THEN 4 ELSE 1 END AND o.event_seq = e.seq"),
			 3);
	PQfinish(c);
}
END_TEST

/*
 * 0028 replaces the per-row published_at with one cursor per chain: each
 * chain's cursor starts before its first sealed row not marked published
 * (at its head when every row was), so nothing unacknowledged is ever
 * taken for published; a marked row after that gap is produced once more.
 */
START_TEST(test_published_cursor_backfilled)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);
	size_t before = 0;

	while (before < outbox_migrations_count &&
	       strcmp(outbox_migrations[before].name, "published_cursor") != 0)
		before++;
	ck_assert_int_lt(before, outbox_migrations_count);
	ck_assert_int_eq(migrate(c, before, 1, &err), (int)before);
	/* chains a (4 links, the 3rd not marked), b (2, both marked), c (3, none) */
	pgtest_exec(c, "SELECT outbox.fee_event(i, jsonb_build_object('base_fee', n)) FROM (VALUES "
		       "('a', 1), ('a', 2), ('a', 3), ('a', 4), ('b', 5), ('b', 6), ('c', 7), "
		       "('c', 8), ('c', 9)) v (i, n)");
	pgtest_exec(c, "SELECT outbox.events_seal('', NULL, NULL, x.chain, 0, repeat('0', 64), "
		       "x.ids, ARRAY(SELECT lpad(to_hex(i), 64, 'a') FROM unnest(x.ids) i)) FROM "
		       "(SELECT chain, array_agg(id ORDER BY id) ids FROM outbox.events GROUP BY "
		       "chain) x");
	pgtest_exec(c, "SELECT outbox.events_published(ARRAY(SELECT id FROM outbox.events WHERE "
		       "(chain = 'oracle:a' AND chain_seq <> 3) OR chain = 'oracle:b'))");
	/* a fifth event of a, never sealed */
	pgtest_exec(c, "SELECT outbox.fee_event('a', '{\"base_fee\": 10}')");
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 1, &err),
			 (int)(outbox_migrations_count - before));
	ck_assert_int_eq(pgtest_scalar(c,
				       "SELECT (string_agg(chain || '=' || published_seq || '/' "
				       "|| seq, ',' ORDER BY chain) = 'oracle:a=2/4,oracle:b=2/2,"
				       "oracle:c=0/3')::int FROM outbox.chain_heads"),
			 1);
	/* a's links 3 and 4, its unsealed fifth event and all of c */
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_not_published"), 6);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_unpublished("
					  "'{oracle:a,oracle:b,oracle:c}', '', 0, 100)"),
			 5);
	PQfinish(c);
}
END_TEST

START_TEST(test_refuses_unknown_version)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);

	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), outbox_migrations_count);
	pgtest_exec(c, "INSERT INTO outbox.schema_migrations (version, name, checksum) "
		       "VALUES (999, 'future', repeat('a', 64))");
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), OUTBOX_ESTATE);
	ck_assert_msg(strstr(err.msg, "0999_future"), "%s", err.msg);
	PQfinish(c);
}
END_TEST

START_TEST(test_vshards_fixed_at_first_migrate)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	PGconn *c = pgtest_connect(&db);
	PGresult *res;
	char out[4096];

	ck_assert_int_eq(migrate(c, outbox_migrations_count, 16, &err), outbox_migrations_count);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT vshards FROM outbox.settings"), 16);
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 16, &err), 0);
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 0, &err), 0);
	ck_assert_int_eq(migrate(c, outbox_migrations_count, 32, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, "OUTBOX_VSHARDS");
	ck_assert_msg(strstr(err.msg, "'32'") && strstr(err.msg, "16"), "%s", err.msg);

	ck_assert_int_eq(run_ctl(db.conninfo, "32", out, sizeof(out)), 2);
	ck_assert_msg(strstr(out, "OUTBOX_VSHARDS: '32' differs"), "output: %s", out);
	ck_assert_int_eq(run_ctl(db.conninfo, "16", out, sizeof(out)), 0);
	ck_assert_int_eq(run_ctl(db.conninfo, "4097", out, sizeof(out)), 2);
	ck_assert_msg(strstr(out, "OUTBOX_VSHARDS: '4097'"), "output: %s", out);
	ck_assert_int_eq(run_ctl(db.conninfo, "1x", out, sizeof(out)), 2);

	/* Nor can SQL change it behind migrate's back. */
	res = PQexec(c, "UPDATE outbox.settings SET vshards = 8");
	ck_assert_int_eq(PQresultStatus(res), PGRES_FATAL_ERROR);
	PQclear(res);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT vshards FROM outbox.settings"), 16);
	PQfinish(c);
}
END_TEST

START_TEST(test_vshards_parse)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int v = -1;

	ck_assert_int_eq(outbox_vshards_parse(NULL, &v, &err), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(outbox_vshards_parse("", &v, &err), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(outbox_vshards_parse("1", &v, &err), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(outbox_vshards_parse("4096", &v, &err), 0);
	ck_assert_int_eq(v, 4096);
	ck_assert_int_eq(outbox_vshards_parse("0", &v, &err), OUTBOX_EINVAL);
	ck_assert_int_eq(outbox_vshards_parse("4097", &v, &err), OUTBOX_EINVAL);
	ck_assert_int_eq(outbox_vshards_parse("-1", &v, &err), OUTBOX_EINVAL);
	ck_assert_int_eq(outbox_vshards_parse(" 8", &v, &err), OUTBOX_EINVAL);
	ck_assert_int_eq(outbox_vshards_parse("99999999999999999999", &v, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, "OUTBOX_VSHARDS");
}
END_TEST

/* Four migrators at once on an empty database: all succeed, once in total. */
START_TEST(test_concurrent_migrators)
{
	enum { N = 4 };
	int pipes[N][2], applied = 0;
	pid_t pids[N];
	PGconn *c;

	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(pipe(pipes[i]), 0);
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct outbox_error err = OUTBOX_ERROR_INIT;
			PGconn *mine = PQconnectdb(db.conninfo);
			int rc = PQstatus(mine) == CONNECTION_OK
					 ? migrate(mine, outbox_migrations_count, 0, &err)
					 : -1;

			if (write(pipes[i][1], &rc, sizeof(rc)) != sizeof(rc))
				_exit(2);
			if (rc < 0)
				fprintf(stderr, "migrator %d: %s\n", i, err.msg);
			PQfinish(mine);
			_exit(rc < 0);
		}
		close(pipes[i][1]);
	}
	for (int i = 0; i < N; i++) {
		int rc = -1, status;

		ck_assert_int_eq(read(pipes[i][0], &rc, sizeof(rc)), sizeof(rc));
		close(pipes[i][0]);
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(rc >= 0, "migrator %d failed", i);
		applied += rc;
	}
	ck_assert_int_eq(applied, outbox_migrations_count);
	c = pgtest_connect(&db);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.schema_migrations"),
			 outbox_migrations_count);
	PQfinish(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("migrate");
	TCase *tc = tcase_create("migrate");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup_empty, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_applies_all_then_nothing);
	tcase_add_test(tc, test_applies_only_missing);
	tcase_add_test(tc, test_cli_applies_and_is_noop);
	tcase_add_test(tc, test_cli_needs_url);
	tcase_add_test(tc, test_refuses_changed_checksum);
	tcase_add_test(tc, test_refuses_changed_sql);
	tcase_add_test(tc, test_event_seq_backfilled);
	tcase_add_test(tc, test_published_cursor_backfilled);
	tcase_add_test(tc, test_refuses_unknown_version);
	tcase_add_test(tc, test_vshards_fixed_at_first_migrate);
	tcase_add_test(tc, test_vshards_parse);
	tcase_add_test(tc, test_concurrent_migrators);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
