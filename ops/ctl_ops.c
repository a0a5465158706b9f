/*
 * ctl_ops.c - `outboxctl ops`: the HTTP admin API's op endpoints from a
 * shell, through PostgreSQL (OUTBOX_DATABASE_URL):
 *
 *	ops list [--status S] [--kind K] [--priority P] [--user U] [--limit N]
 *	         [--cursor ID] [--json]      newest first, keyset paging
 *	ops show ID [--json]                 the op, its attempts, its event trail
 *	ops why ID [--json] [--instance I]   why it is not on the network (yet)
 *	ops retry ID [--json]                outbox.admin_retry
 *	ops cancel ID [--json]               outbox.admin_cancel
 *
 * Each command calls the same api_* function the gateway calls for the
 * endpoint (schema/0010_gateway.sql), so it answers the same JSON and
 * leaves the same audit row in one transaction: key_id NULL, actor
 * "outboxctl:<user>@<host>", request {"via": "outboxctl", ...}. An operator
 * at a shell is audited like a key holder at the API, and nothing here can
 * do what the API could not.
 *
 * `why` needs what only the running instance knows (congestion, the
 * chain's ledger and clock, transactions in flight): it reads them from the
 * instance's segment when one is running (read-only, like `stats`), and
 * the two limits from this shell's OUTBOX_GLOBAL_MAX_IN_FLIGHT and
 * OUTBOX_LOW_MAX_DEFER_MS (else the defaults); without a running instance
 * the reasons that need those facts are left out, and it says so.
 *
 * Exit codes: 0 ok; 1 refused (404 unknown op, 409 with its reason) or a
 * database failure; 2 usage error or bad input (400).
 */
#include "ops/ctl.h"

#include "common/clock.h"
#include "common/config.h"
#include "common/enqueue.h"
#include "common/fee_view.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/inflight.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ops_args {
	const char *sub;
	long long id;
	bool json;
	const char *status, *kind, *priority, *user, *instance;
	int limit;
	long long cursor;
};

static int usage(void)
{
	fprintf(stderr,
		"usage: outboxctl ops list [--status S] [--kind K] [--priority P] [--user U]\n"
		"                          [--limit 1..500] [--cursor ID] [--json]\n"
		"       outboxctl ops show ID [--json]\n"
		"       outboxctl ops why ID [--json] [--instance NAME]\n"
		"       outboxctl ops retry ID [--json]\n"
		"       outboxctl ops cancel ID [--json]\n"
		"(OUTBOX_DATABASE_URL; every call is audited in outbox.audit_log)\n");
	return 2;
}

static int parse_id(const char *what, const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno || end == s || *end || *out <= 0) {
		fprintf(stderr, "outboxctl ops: %s '%s' is not a positive integer\n", what, s);
		return 2;
	}
	return 0;
}

/* s is one of the NULL-terminated names, or NULL (no filter). */
static int one_of(const char *opt, const char *s, const char *const *names)
{
	if (!s)
		return 0;
	for (const char *const *n = names; *n; n++)
		if (!strcmp(s, *n))
			return 0;
	fprintf(stderr, "outboxctl ops: %s '%s' is not one of", opt, s);
	for (const char *const *n = names; *n; n++)
		fprintf(stderr, " %s", *n);
	fprintf(stderr, "\n");
	return 2;
}

static int check_filters(const struct ops_args *a)
{
	static const char *const statuses[] = {"PENDING",   "SUBMITTED", "CONFIRMED", "FAILED",
					       "CANCELLED", "HELD",      NULL};
	static const char *const kinds[] = {"DEPOSIT", "WITHDRAW", "REBALANCE", "REFERRAL_REWARD",
					    NULL};
	static const char *const prios[] = {"CRITICAL", "NORMAL", "LOW", NULL};

	if (a->user && (!*a->user || strlen(a->user) > 128)) {
		fprintf(stderr, "outboxctl ops: --user must be 1..128 characters\n");
		return 2;
	}
	return one_of("--status", a->status, statuses) || one_of("--kind", a->kind, kinds) ||
			       one_of("--priority", a->priority, prios)
		       ? 2
		       : 0;
}

static int parse(int argc, char **argv, struct ops_args *a)
{
	int i = 2;

	memset(a, 0, sizeof(*a));
	a->limit = 50;
	if (argc < 2)
		return usage();
	a->sub = argv[1];
	if (strcmp(a->sub, "list") && strcmp(a->sub, "show") && strcmp(a->sub, "why") &&
	    strcmp(a->sub, "retry") && strcmp(a->sub, "cancel"))
		return usage();
	if (strcmp(a->sub, "list")) {
		if (argc < 3)
			return usage();
		if (parse_id("op id", argv[2], &a->id))
			return 2;
		i = 3;
	}
	for (; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool list = !strcmp(a->sub, "list");

		if (!strcmp(o, "--json")) {
			a->json = true;
			continue;
		}
		if (!v)
			return usage();
		if (list && !strcmp(o, "--status"))
			a->status = v;
		else if (list && !strcmp(o, "--kind"))
			a->kind = v;
		else if (list && !strcmp(o, "--priority"))
			a->priority = v;
		else if (list && !strcmp(o, "--user"))
			a->user = v;
		else if (list && !strcmp(o, "--cursor")) {
			if (parse_id("--cursor", v, &a->cursor))
				return 2;
		} else if (list && !strcmp(o, "--limit")) {
			long long n;

			if (parse_id("--limit", v, &n) || n > 500) {
				fprintf(stderr, "outboxctl ops: --limit '%s' is not in 1..500\n",
					v);
				return 2;
			}
			a->limit = (int)n;
		} else if (!strcmp(a->sub, "why") && !strcmp(o, "--instance"))
			a->instance = v;
		else
			return usage();
		i++;
	}
	return check_filters(a);
}

/* "outboxctl:<user>@<host>": who did it, for the audit row. */
static void actor_of(char *buf, size_t cap)
{
	struct passwd *pw = getpwuid(getuid());
	char host[64] = "?";

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(buf, cap, "outboxctl:%s@%s", pw ? pw->pw_name : "?", host);
}

/*
 * The facts `why` reads from a running instance; NULL (and a note on
 * stderr) when none runs. The caller frees the JSON text.
 */
static char *why_facts(const char *instance)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct outbox_config cfg;
	struct shm_segment seg;
	struct fee_snapshot s;
	struct fee_view v = {0};
	const char *e;
	int64_t n;
	json_t *j;
	char *out;

	if (!instance)
		instance = getenv("OUTBOX_INSTANCE") && *getenv("OUTBOX_INSTANCE")
				   ? getenv("OUTBOX_INSTANCE")
				   : "default";
	if (shm_segment_attach(&seg, instance, SHM_ATTACH_RDONLY, &err)) {
		fprintf(stderr,
			"outboxctl ops why: no instance '%s' is running here: the reasons that "
			"need its congestion, ledger and in-flight count are left out\n",
			instance);
		return NULL;
	}
	if (fee_snapshot_copy(&seg, &s, FEE_COPY_MAX_TRIES, &err) == 0)
		fee_view_eval(&v, &s, wall_ms(), 0);
	config_defaults(&cfg);
	if ((e = getenv("OUTBOX_GLOBAL_MAX_IN_FLIGHT")) && config_parse_i64(e, &n) == 0)
		cfg.global_max_in_flight = n;
	if ((e = getenv("OUTBOX_LOW_MAX_DEFER_MS")) && config_parse_i64(e, &n) == 0)
		cfg.low_max_defer_ms = n;
	j = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}", "congestion", (int)v.congestion,
		      "latestLedger", (json_int_t)v.latest_ledger, "closeTime",
		      (json_int_t)v.close_time, "inFlight", (json_int_t)inflight_total(&seg),
		      "maxInFlight", (json_int_t)cfg.global_max_in_flight, "lowMaxDeferMs",
		      (json_int_t)cfg.low_max_defer_ms);
	shm_segment_detach(&seg);
	out = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return out;
}

/* The audit row's request: what was asked, never anything secret. */
static char *request_json(const struct ops_args *a)
{
	json_t *r = json_pack("{s:s, s:s}", "via", "outboxctl", "command", a->sub);
	char *out;

	if (a->id)
		json_object_set_new(r, "opId", json_integer(a->id));
	if (!strcmp(a->sub, "list")) {
		json_t *f = json_object();

		if (a->status)
			json_object_set_new(f, "status", json_string(a->status));
		if (a->kind)
			json_object_set_new(f, "kind", json_string(a->kind));
		if (a->priority)
			json_object_set_new(f, "priority", json_string(a->priority));
		if (a->user)
			json_object_set_new(f, "userId", json_string(a->user));
		if (a->cursor)
			json_object_set_new(f, "cursor", json_integer(a->cursor));
		json_object_set_new(f, "limit", json_integer(a->limit));
		json_object_set_new(r, "filters", f);
	}
	out = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return out;
}

/* Run the sub-command's api_* function: *http and the parsed body, or -1. */
static int call(PGconn *c, const struct ops_args *a, int *http, json_t **body)
{
	char actor[160], id[24], cursor[24], limit[16];
	char *req = request_json(a), *facts = NULL;
	const char *sql, *p[9] = {NULL, actor, req};
	int n = 4;
	PGresult *r;
	json_error_t je;

	actor_of(actor, sizeof(actor));
	snprintf(id, sizeof(id), "%lld", a->id);
	p[3] = id;
	if (!strcmp(a->sub, "list")) {
		snprintf(cursor, sizeof(cursor), "%lld", a->cursor);
		snprintf(limit, sizeof(limit), "%d", a->limit);
		sql = "SELECT http, body FROM outbox.api_list($1::bigint, $2, $3::jsonb, $4, $5, "
		      "$6, "
		      "$7, $8::bigint, $9::integer)";
		p[3] = a->status, p[4] = a->kind, p[5] = a->priority, p[6] = a->user;
		p[7] = a->cursor ? cursor : NULL, p[8] = limit, n = 9;
	} else if (!strcmp(a->sub, "show")) {
		sql = "SELECT http, body FROM outbox.api_op($1::bigint, $2, $3::jsonb, $4::bigint)";
	} else if (!strcmp(a->sub, "why")) {
		facts = why_facts(a->instance);
		sql = "SELECT http, body FROM outbox.api_why($1::bigint, $2, $3::jsonb, "
		      "$4::bigint, "
		      "coalesce($5::jsonb, '{}'))";
		p[4] = facts, n = 5;
	} else if (!strcmp(a->sub, "retry") || !strcmp(a->sub, "cancel")) {
		sql = "SELECT http, body FROM outbox.api_admin($1::bigint, $2, $3::jsonb, $5, "
		      "$4::bigint)";
		p[4] = !strcmp(a->sub, "retry") ? "op.retry" : "op.cancel", n = 5;
	} else {
		free(req);
		return usage();
	}
	r = PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
	free(req);
	free(facts);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		int bad_input = st && !strcmp(st, "OB422");

		fprintf(stderr, "outboxctl ops %s: %s", a->sub, PQerrorMessage(c));
		PQclear(r);
		return bad_input ? -2 : -1;
	}
	*http = atoi(PQgetvalue(r, 0, 0));
	*body = json_loads(PQgetvalue(r, 0, 1), 0, &je);
	PQclear(r);
	return *body ? 0 : -1;
}

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : json_is_null(v) || !v ? "-" : "?";
}

static void print_list(json_t *body)
{
	json_t *items = json_object_get(body, "items"), *op;
	const char *next = json_string_value(json_object_get(body, "nextCursor"));
	size_t i;

	printf("%-8s %-15s %-8s %-9s %-16s %-20s %4s %s\n", "ID", "KIND", "PRIORITY", "STATUS",
	       "USER", "RECORD", "ATT", "UPDATED");
	json_array_foreach(items, i, op)
	{
		printf("%-8lld %-15s %-8s %-9s %-16.16s %-20.20s %4lld %.19s\n",
		       json_integer_value(json_object_get(op, "id")), str(op, "kind"),
		       str(op, "priority"), str(op, "status"), str(op, "userId"),
		       str(op, "businessRecordId"),
		       json_integer_value(json_object_get(op, "attempts")), str(op, "updatedAt"));
	}
	if (next)
		printf("next page: outboxctl ops list --cursor %s (same filters)\n", next);
}

static void print_show(json_t *body)
{
	json_t *op = json_object_get(body, "op"), *a, *e;
	size_t i;
	static const char *const fields[] = {
		"idempotencyKey",   "kind",   "priority",  "status",     "userId",
		"businessRecordId", "signer", "createdAt", "updatedAt",  "confirmedAt",
		"nextAttemptAt",    "txHash", "lastError", "holdReason", NULL};

	printf("op %lld\n", json_integer_value(json_object_get(op, "id")));
	/* moved to outbox.ops_archive (schema/0013_archive.sql): shown as it was then */
	if (json_is_true(json_object_get(body, "archived")))
		printf("  %-17s %s\n", "archived", str(body, "archivedAt"));
	for (const char *const *f = fields; *f; f++)
		printf("  %-17s %s\n", *f, str(op, *f));
	printf("  %-17s %lld (fee bumps %lld)\n", "attempts",
	       json_integer_value(json_object_get(op, "attempts")),
	       json_integer_value(json_object_get(op, "feeBumps")));
	printf("\nattempts\n  %-3s %-4s %-64s %-20s %-10s %-12s %s\n", "NO", "BUMP", "TX HASH",
	       "SEQUENCE", "FEE", "OUTCOME", "RESULT");
	json_array_foreach(json_object_get(body, "attempts"), i, a)
	{
		json_t *seq = json_object_get(a, "sourceSequence");
		char seqs[32];

		if (json_is_integer(seq))
			snprintf(seqs, sizeof(seqs), "%lld", json_integer_value(seq));
		else
			snprintf(seqs, sizeof(seqs), "%s", str(a, "sourceSequence"));
		printf("  %-3lld %-4lld %-64s %-20s %-10lld %-12s %s\n",
		       json_integer_value(json_object_get(a, "attemptNo")),
		       json_integer_value(json_object_get(a, "bumpNo")), str(a, "txHash"), seqs,
		       json_integer_value(json_object_get(a, "fee")), str(a, "outcome"),
		       str(a, "resultCode"));
	}
	printf("\nevents\n");
	json_array_foreach(json_object_get(body, "events"), i, e)
	{
		printf("  #%-3lld %.23s  %-12s %s -> %s\n",
		       json_integer_value(json_object_get(e, "seq")), str(e, "at"), str(e, "type"),
		       str(e, "from"), str(e, "to"));
	}
}

static void print_why(json_t *body)
{
	json_t *others = json_object_get(body, "others"), *o;
	size_t i;

	printf("%s\n", str(body, "why"));
	json_array_foreach(others, i, o) printf("  also: %s\n", str(o, "code"));
}

static void print_body(const struct ops_args *a, json_t *body)
{
	if (a->json) {
		char *s = json_dumps(body, JSON_COMPACT);

		printf("%s\n", s ? s : "null");
		free(s);
	} else if (!strcmp(a->sub, "list")) {
		print_list(body);
	} else if (!strcmp(a->sub, "show")) {
		print_show(body);
	} else if (!strcmp(a->sub, "why")) {
		print_why(body);
	} else {
		json_t *op = json_object_get(body, "op");

		printf("op %lld: %s\n", json_integer_value(json_object_get(op, "id")),
		       str(op, "status"));
	}
}

int ctl_ops(int argc, char **argv)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const char *url = getenv("OUTBOX_DATABASE_URL");
	struct ops_args a;
	PGconn *c = NULL;
	json_t *body = NULL;
	int rc = parse(argc, argv, &a), http = 0;

	if (rc)
		return rc;
	if (!url || !*url) {
		fprintf(stderr, "outboxctl ops: OUTBOX_DATABASE_URL is not set\n");
		return 2;
	}
	if (outbox_db_connect(url, &c, &err)) {
		fprintf(stderr, "outboxctl ops: %s\n", err.msg);
		return 1;
	}
	rc = call(c, &a, &http, &body);
	PQfinish(c);
	if (rc)
		return rc == -2 ? 2 : 1;
	if (http != 200) {
		json_t *e = json_object_get(body, "error");

		fprintf(stderr, "outboxctl ops %s: %s (%d %s)\n", a.sub, str(e, "message"), http,
			str(e, "code"));
		json_decref(body);
		return http == 400 ? 2 : 1;
	}
	print_body(&a, body);
	json_decref(body);
	return 0;
}
