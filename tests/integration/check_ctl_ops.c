/*
 * check_ctl_ops.c - `outboxctl ops list|show|why|retry|cancel` against a
 * running outboxd + stellar-sim: the answers match the database, paging
 * walks every op once, an op failed on chain shows its result code, retry
 * sends it back to PENDING, cancel of a
 * terminal op is refused with its reason, a halted user's op says why it
 * waits, bad input exits 2 naming the option, and every call leaves its
 * audit row (actor outboxctl:<user>@<host>, request via outboxctl).
 */
#include "tests/integration/dispatch_harness.h"
#include "tests/support/check_main.h"

#define N_SIGNERS 4

/* Run `outboxctl ops ARGS` (OUTBOX_DATABASE_URL of f); stdout+stderr (static), exit code. */
static const char *ops(struct fixture *f, int *rc, const char *args)
{
	static char out[256 * 1024];
	char cmd[4096];
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "OUTBOX_DATABASE_URL='%s' OUTBOX_INSTANCE='%s' %s/outboxctl ops %s 2>&1",
		 f->db.conninfo, f->h.instance, f->h.build, args);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

static json_t *ops_json(struct fixture *f, const char *args)
{
	json_error_t e;
	json_t *j;
	int rc;
	const char *out = ops(f, &rc, args);

	ck_assert_msg(rc == 0, "outboxctl ops %s exited %d: %s", args, rc, out);
	j = json_loads(out, 0, &e);
	ck_assert_msg(j != NULL, "outboxctl ops %s: not JSON (%s): %s", args, e.text, out);
	return j;
}

START_TEST(test_ctl_ops)
{
	struct fixture f;
	char poor[57], args[128];
	const char *out;
	long long failed_id, last = 1LL << 62;
	json_t *j;
	int rc, seen = 0;

	memset(&f, 0, sizeof(f));
	f.n_signers = N_SIGNERS;
	start(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	pgtest_account(77, poor); /* no balance: the withdrawal traps on chain */
	enqueue(&f, "WITHDRAW", "poor", "w1", 0, poor, "5000", NULL);
	for (int i = 0; i < 6; i++) {
		char rec[16];

		snprintf(rec, sizeof(rec), "d%d", i);
		enqueue(&f, "DEPOSIT", "rich", rec, 1 + i % 3, f.signer[(i + 2) % N_SIGNERS],
			"7000", NULL);
	}
	ck_assert(wait_terminal(&f, 60000));
	failed_id = pgtest_scalar(f.c, "SELECT id FROM outbox.ops WHERE kind = 'WITHDRAW'");

	/* list: the filter, and paging that visits every op once, newest first */
	j = ops_json(&f, "list --status FAILED --json");
	ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 1);
	ck_assert_int_eq(ph_int(json_array_get(json_object_get(j, "items"), 0), "id"), failed_id);
	json_decref(j);
	snprintf(args, sizeof(args), "list --limit 3 --json");
	for (;;) {
		json_t *it;
		size_t i;
		const char *next;

		j = ops_json(&f, args);
		json_array_foreach(json_object_get(j, "items"), i, it)
		{
			ck_assert_int_lt(ph_int(it, "id"), last);
			last = ph_int(it, "id");
			seen++;
		}
		next = json_string_value(json_object_get(j, "nextCursor"));
		if (!next) {
			json_decref(j);
			break;
		}
		snprintf(args, sizeof(args), "list --limit 3 --cursor %s --json", next);
		json_decref(j);
	}
	ck_assert_int_eq(seen, 7);
	out = ops(&f, &rc, "list --kind WITHDRAW");
	ck_assert_msg(rc == 0 && strstr(out, "WITHDRAW") && strstr(out, "FAILED"), "%s", out);

	/* show: the attempt's on-chain result code and the event trail */
	snprintf(args, sizeof(args), "show %lld", failed_id);
	out = ops(&f, &rc, args);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, "TRAPPED") || strstr(out, "txFAILED"), "no result code: %s", out);
	ck_assert_msg(strstr(out, "SUBMITTED -> FAILED"), "no trail: %s", out);
	printf("outboxctl ops %s:\n%s\n", args, out); /* for the log */

	/* why: a terminal op, then a halted user's op */
	snprintf(args, sizeof(args), "why %lld", failed_id);
	out = ops(&f, &rc, args);
	ck_assert_msg(rc == 0 && strstr(out, "is not on the network because it is FAILED"), "%s",
		      out);
	pgtest_exec(f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) "
			 "VALUES ('frozen', 'fraud review', 'ops-desk')");
	enqueue(&f, "DEPOSIT", "frozen", "f1", 1, f.signer[2], "10", NULL);
	snprintf(args, sizeof(args), "why %lld --json",
		 pgtest_scalar(f.c, "SELECT id FROM outbox.ops WHERE user_id = 'frozen'"));
	j = ops_json(&f, args);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "reason"), "code")),
			 "user_halted");
	json_decref(j);

	/* cancel of a terminal op: refused with the reason, exit 1 */
	snprintf(args, sizeof(args), "cancel %lld", failed_id);
	out = ops(&f, &rc, args);
	ck_assert_msg(rc == 1 && strstr(out, "409"), "cancel of a FAILED op: %d %s", rc, out);

	/* retry: back to PENDING, audited */
	snprintf(args, sizeof(args), "retry %lld", failed_id);
	out = ops(&f, &rc, args);
	ck_assert_msg(rc == 0 && strstr(out, ": PENDING"), "retry: %d %s", rc, out);
	ck_assert_int_ge(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.audit_log WHERE actor "
					    "LIKE 'outboxctl:%@%' AND request ->> 'via' = "
					    "'outboxctl' AND request ->> 'command' = 'retry'"),
			 1);
	ck_assert_int_ge(pgtest_scalar(f.c, "SELECT count(*) FROM outbox.audit_log WHERE actor "
					    "LIKE 'outboxctl:%' AND key_id IS NULL"),
			 8);

	/* bad input: exit 2, the option named; an unknown op: exit 1 */
	out = ops(&f, &rc, "list --status NOPE");
	ck_assert_msg(rc == 2 && strstr(out, "--status 'NOPE'"), "%d %s", rc, out);
	out = ops(&f, &rc, "show abc");
	ck_assert_msg(rc == 2 && strstr(out, "'abc'"), "%d %s", rc, out);
	out = ops(&f, &rc, "list --limit 501");
	ck_assert_int_eq(rc, 2);
	out = ops(&f, &rc, "frobnicate 1");
	ck_assert_int_eq(rc, 2);
	out = ops(&f, &rc, "show 999999999");
	ck_assert_msg(rc == 1 && strstr(out, "does not exist"), "%d %s", rc, out);
	stop(&f);
}
END_TEST

static Suite *ctl_ops_suite(void)
{
	Suite *s = suite_create("ctl_ops");

	dh_add_case(s, "ops", test_ctl_ops, 240);
	return s;
}

OUTBOX_CHECK_MAIN(ctl_ops_suite)
