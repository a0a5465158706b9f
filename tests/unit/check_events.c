/*
 * check_events.c - an event's canonical form and chain link (checked
 * against a hash computed here from the documented form, not through
 * events.c), its CloudEvent and the way back, and the audit of a stream:
 * every single deletion, change, repeat or reordering of a valid history
 * is caught, and nothing is reported on the history itself.
 */
#include "common/audit.h"
#include "common/events.h"

#include <check.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

static void make(struct event_rec *e, int64_t id, int64_t op, int32_t seq, const char *type,
		 const char *from, const char *to, const char *body)
{
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->op_id = op;
	e->seq = seq;
	snprintf(e->type, sizeof(e->type), "%s", type);
	snprintf(e->from, sizeof(e->from), "%s", from);
	snprintf(e->to, sizeof(e->to), "%s", to);
	e->at_us = 1764767107123456LL; /* 2025-12-03T13:05:07.123456Z */
	e->body = json_loads(body, 0, NULL);
	ck_assert_ptr_nonnull(e->body);
	if (op) {
		snprintf(e->idempotency_key, sizeof(e->idempotency_key), "DEPOSIT:u:%lld",
			 (long long)op);
		snprintf(e->kind, sizeof(e->kind), "DEPOSIT");
		snprintf(e->priority, sizeof(e->priority), "NORMAL");
	}
	snprintf(e->chain, sizeof(e->chain), "vshard:3");
}

START_TEST(test_canonical_and_link_are_the_documented_ones)
{
	struct event_rec e;
	uint8_t prev[32], want[32];
	const char *canon =
		"{\"body\":{\"attempt_no\":1,\"tx_hash\":\"ab\"},\"from\":\"PENDING\","
		"\"id\":\"42\",\"op\":7,\"seq\":2,\"time\":\"2025-12-03T13:05:07.123456Z\","
		"\"to\":\"SUBMITTED\",\"type\":\"SUBMITTED\"}";
	char *c;
	crypto_hash_sha256_state st;

	make(&e, 42, 7, 2, "SUBMITTED", "PENDING", "SUBMITTED",
	     "{\"tx_hash\": \"ab\", \"attempt_no\": 1}");
	c = event_canonical(&e);
	ck_assert_str_eq(c, canon);
	free(c);
	memset(prev, 0xa5, 32);
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, prev, 32);
	crypto_hash_sha256_update(&st, (const unsigned char *)canon, strlen(canon));
	crypto_hash_sha256_final(&st, want);
	ck_assert_int_eq(event_seal(&e, prev), 0);
	ck_assert(!memcmp(e.hash, want, 32));
	ck_assert(!memcmp(e.prev, prev, 32));
	event_rec_clear(&e);
	/* no op: op and seq are null, statuses null */
	make(&e, 9, 0, 0, "FEE_SNAPSHOT", "", "", "{\"recommended\": 100}");
	c = event_canonical(&e);
	ck_assert_str_eq(c,
			 "{\"body\":{\"recommended\":100},\"from\":null,\"id\":\"9\",\"op\":null,"
			 "\"seq\":null,\"time\":\"2025-12-03T13:05:07.123456Z\",\"to\":null,"
			 "\"type\":\"FEE_SNAPSHOT\"}");
	free(c);
	event_rec_clear(&e);
}
END_TEST

START_TEST(test_cloud_event_round_trip)
{
	struct event_rec e, back;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t zero[32] = {0};
	char type[96];
	json_t *ce;

	make(&e, 1001, 55, 3, "CONFIRMED", "SUBMITTED", "CONFIRMED",
	     "{\"tx_hash\": \"cd\", \"ledger\": 12, \"fee_charged\": 300, \"note\": \"\\u00e9\"}");
	e.chain_seq = 17;
	ck_assert_int_eq(event_seal(&e, zero), 0);
	ce = event_to_cloud(&e, "/outboxd/test");
	ck_assert_ptr_nonnull(ce);
	ck_assert_str_eq(json_string_value(json_object_get(ce, "specversion")), "1.0");
	ck_assert_str_eq(json_string_value(json_object_get(ce, "id")), "1001");
	ck_assert_str_eq(json_string_value(json_object_get(ce, "type")), "outbox.op.confirmed.v1");
	ck_assert_str_eq(json_string_value(json_object_get(ce, "subject")), "55");
	ck_assert_str_eq(json_string_value(json_object_get(ce, "sequence")), "0000000003");
	ck_assert_str_eq(json_string_value(json_object_get(ce, "time")),
			 "2025-12-03T13:05:07.123456Z");
	json_t *data = json_object_get(ce, "data");
	ck_assert_int_eq(json_integer_value(json_object_get(data, "fee")), 300);
	ck_assert_str_eq(json_string_value(json_object_get(data, "tx_hash")), "cd");
	ck_assert_str_eq(json_string_value(json_object_get(data, "kind")), "DEPOSIT");
	ck_assert_int_eq(event_from_cloud(&back, ce, &err), 0);
	ck_assert_int_eq(back.id, 1001);
	ck_assert_int_eq(back.op_id, 55);
	ck_assert_int_eq(back.seq, 3);
	ck_assert_int_eq(back.at_us, e.at_us);
	ck_assert_str_eq(back.from, "SUBMITTED");
	ck_assert_int_eq(back.chain_seq, 17);
	/* the chain rebuilt from the topic is the chain sealed from the table */
	struct event_rec again = back;
	again.body = json_incref(back.body);
	ck_assert_int_eq(event_seal(&again, back.prev), 0);
	ck_assert(!memcmp(again.hash, e.hash, 32));
	json_decref(again.body);
	event_rec_clear(&back);
	json_decref(ce);
	event_ce_type("FEE_SNAPSHOT", type, sizeof(type));
	ck_assert_str_eq(type, "outbox.fee.snapshot.v1");
	event_rec_clear(&e);
}
END_TEST

/*
 * The canonical form as a jansson tree: the definition event_canonical
 * writes without building it.
 */
static char *canonical_tree(const struct event_rec *e)
{
	char time[EVENT_TIME_MAX], id[24], *s;
	json_t *o;

	ck_assert(event_time_format(e->at_us, time));
	snprintf(id, sizeof(id), "%lld", (long long)e->id);
	o = json_pack("{s:O?, s:o, s:s, s:o, s:o, s:s, s:o, s:s}", "body", e->body, "from",
		      e->from[0] ? json_string(e->from) : json_null(), "id", id, "op",
		      e->op_id ? json_integer(e->op_id) : json_null(), "seq",
		      e->op_id ? json_integer(e->seq) : json_null(), "time", time, "to",
		      e->to[0] ? json_string(e->to) : json_null(), "type", e->type);
	if (!o)
		return NULL;
	if (!e->body)
		json_object_set_new(o, "body", json_object());
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	json_decref(o);
	return s;
}

/*
 * The relay's bytes (event_cloud_json) are the tree's (event_to_cloud
 * dumped by jansson), and event_canonical's the tree's above, for every
 * shape of event: each combination of the
 * members copied from the body, null and absent bodies and statuses, events
 * of no op, and keys, sources and chains with quotes, backslashes, control
 * characters and non-ASCII text. A string that is not UTF-8 is refused.
 */
static void expect_cloud_as_tree(const struct event_rec *e, const char *source)
{
	json_t *ce = event_to_cloud(e, source);
	char *want = ce ? json_dumps(ce, JSON_COMPACT) : NULL, *got = event_cloud_json(e, source);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	json_decref(ce);
	want = canonical_tree(e);
	got = event_canonical(e);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
}

START_TEST(test_json_bytes_are_the_trees)
{
	static const char *const members[] = {
		"\"attempt_no\": 3",
		"\"tx_hash\": \"ab\\\"c\"",
		"\"fee\": 100",
		"\"fee_charged\": 250",
		"\"error\": \"tx\\nfailed \\u00e9\\ud83d\\ude00\"",
		"\"result_code\": null",
	};
	static const char *const keys[] = {
		"DEPOSIT:u:1",
		"DEPOSIT:u\"q\\b:1",
		"DEPOSIT:u\\v:1",
		"DEPOSIT:\x01\x1f\x7f:1",
		"DEPOSIT:\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80:1",
		"DEPOSIT:a/b\t\r:1",
	};
	static const char *const sources[] = {"/outboxd/test", "/o\"u\\t", "/\xc3\xa9"};
	static const char *const froms[] = {"SUBMITTED", "A\"B", "\xc3\xa9\xf0\x9f\x98\x80",
					    "a\\b\x01/", "~\x7f"};
	struct event_rec e;
	char body[512];

	for (unsigned mask = 0; mask < 64; mask++) {
		size_t n = (size_t)snprintf(body, sizeof(body), "{\"ledger\": 12");
		for (unsigned b = 0; b < 6; b++)
			if (mask & (1u << b))
				n += (size_t)snprintf(body + n, sizeof(body) - n, ", %s",
						      members[b]);
		snprintf(body + n, sizeof(body) - n, ", \"nested\": {\"a\": [1, 2.5, true]}}");
		make(&e, 1000 + mask, mask % 3 ? 55 : 0, 3, mask % 2 ? "CONFIRMED" : "FEE_SNAPSHOT",
		     mask % 4 ? "SUBMITTED" : "", mask % 5 ? "CONFIRMED" : "", body);
		e.chain_seq = (int64_t)mask * 1000003;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			snprintf(e.idempotency_key, sizeof(e.idempotency_key), "%s", keys[k]);
			if (mask % 4)
				snprintf(e.from, sizeof(e.from), "%s", froms[k % 5]);
			snprintf(e.chain, sizeof(e.chain), k % 2 ? "vshard:%zu" : "oracle:a\"%zu",
				 k);
			expect_cloud_as_tree(&e, sources[k % 3]);
		}
		json_decref(e.body);
		e.body = NULL;
		expect_cloud_as_tree(&e, "/t");
		event_rec_clear(&e);
	}
	make(&e, 1, 2, 1, "ENQUEUED", "", "PENDING", "{}");
	snprintf(e.idempotency_key, sizeof(e.idempotency_key), "DEPOSIT:\xff:1");
	ck_assert_ptr_null(event_cloud_json(&e, "/t"));
	ck_assert_ptr_null(event_cloud_json(&e, "/\xc3"));
	snprintf(e.to, sizeof(e.to), "PEND\xe9");
	ck_assert_ptr_null(canonical_tree(&e));
	ck_assert_ptr_null(event_canonical(&e));
	event_rec_clear(&e);
}
END_TEST

/* Hostile input: every member the reader needs, wrong, named in the error. */
START_TEST(test_from_cloud_refuses_bad_members)
{
	static const struct {
		const char *path, *json, *member;
	} bad[] = {
		{"id", "\"x1\"", "id"},
		{"id", "\"123456789012345678901\"", "id"},
		{"time", "\"2025-12-03T13:05:07Z\"", "time"},
		{"sequence", "\"0\"", "sequence"},
		{"data.event", "5", "data.event"},
		{"data.from", "7", "data.from"},
		{"data.op_id", "-3", "data.op_id"},
		{"data.body", "[1]", "data.body"},
		{"data.chain.seq", "0", "data.chain.seq"},
		{"data.chain.hash", "\"abc\"", "data.chain.prev"},
	};
	struct event_rec e;
	uint8_t zero[32] = {0};

	make(&e, 5, 6, 1, "ENQUEUED", "", "PENDING", "{}");
	e.chain_seq = 1;
	event_seal(&e, zero);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *ce = event_to_cloud(&e, "/t"), *o = ce,
		       *v = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
		char path[64], *p, *dot;
		struct event_rec back;
		struct outbox_error err = OUTBOX_ERROR_INIT;

		snprintf(path, sizeof(path), "%s", bad[i].path);
		for (p = path; (dot = strchr(p, '.')); p = dot + 1) {
			*dot = '\0';
			o = json_object_get(o, p);
		}
		json_object_set_new(o, p, v);
		ck_assert_msg(event_from_cloud(&back, ce, &err) != 0, "%s accepted", bad[i].path);
		ck_assert_msg(strstr(err.msg, bad[i].member) || !strcmp(err.field, bad[i].member),
			      "%s: %s", bad[i].path, err.msg);
		event_rec_clear(&back);
		json_decref(ce);
	}
	event_rec_clear(&e);
}
END_TEST

/* A valid history: 3 ops on one chain, each ENQUEUED -> SUBMITTED -> ... */
#define N_EV 11
static struct event_rec hist[N_EV];

static void history(void)
{
	static const struct {
		int op, seq;
		const char *type, *from, *to;
	} h[N_EV] = {
		{1, 1, "ENQUEUED", "", "PENDING"},
		{2, 1, "ENQUEUED", "", "PENDING"},
		{1, 2, "SUBMITTED", "PENDING", "SUBMITTED"},
		{3, 1, "ENQUEUED", "", "PENDING"},
		{1, 3, "FEE_BUMPED", "SUBMITTED", "SUBMITTED"},
		{2, 2, "DEFERRED", "PENDING", "PENDING"},
		{1, 4, "CONFIRMED", "SUBMITTED", "CONFIRMED"},
		{2, 3, "SUBMITTED", "PENDING", "SUBMITTED"},
		{1, 5, "LANDED_LATE", "", ""},
		{2, 4, "HELD", "SUBMITTED", "HELD"},
		{3, 2, "CANCELLED", "PENDING", "CANCELLED"},
	};
	uint8_t prev[32] = {0};

	for (int i = 0; i < N_EV; i++) {
		make(&hist[i], 100 + i, h[i].op, h[i].seq, h[i].type, h[i].from, h[i].to,
		     "{\"n\": 1}");
		hist[i].at_us += i;
		hist[i].chain_seq = i + 1;
		event_seal(&hist[i], prev);
		memcpy(prev, hist[i].hash, 32);
	}
}

static void no_history(void)
{
	for (int i = 0; i < N_EV; i++)
		event_rec_clear(&hist[i]);
}

/* Audit hist without event `skip` and with event `dup` twice (-1: none). */
static struct audit_report audit_with(int skip, int dup)
{
	struct audit *a = audit_new();
	struct audit_report r;

	for (int i = N_EV - 1; i >= 0; i--) { /* arrival order does not matter */
		if (i == skip)
			continue;
		ck_assert_int_eq(audit_add(a, &hist[i]), 0);
		if (i == dup)
			ck_assert_int_eq(audit_add(a, &hist[i]), 0);
	}
	audit_finish(a, &r);
	audit_free(a);
	return r;
}

START_TEST(test_audit_clean_history)
{
	struct audit_report r = audit_with(-1, -1);

	ck_assert_msg(audit_clean(&r), "%s", r.first);
	ck_assert_int_eq(r.events, N_EV);
	ck_assert_int_eq(r.ops, 3);
	ck_assert_int_eq(r.chains, 1);
	/* every event delivered twice (at least once): still clean */
	for (int k = 0; k < N_EV; k++) {
		r = audit_with(-1, k);
		ck_assert_msg(audit_clean(&r), "dup %d: %s", k, r.first);
		ck_assert_int_eq(r.duplicates, 1);
	}
}
END_TEST

/* Every deletion: the chain notices, the newest link only against the recorded head. */
START_TEST(test_audit_catches_every_deletion)
{
	for (int k = 0; k < N_EV; k++) {
		struct audit_report r = audit_with(k, -1);
		ck_assert_msg(k == N_EV - 1 ? audit_clean(&r) : r.broken > 0,
			      "deleting event %d: %s", k, r.first);
	}
	struct audit *a = audit_new();
	struct audit_report r;
	for (int i = 0; i < N_EV - 1; i++)
		audit_add(a, &hist[i]);
	audit_expect_head(a, "vshard:3", N_EV, hist[N_EV - 1].hash);
	audit_finish(a, &r);
	ck_assert_int_eq(r.broken, 1);
	ck_assert_ptr_nonnull(strstr(r.first, "recorded head"));
	audit_free(a);
	a = audit_new();
	for (int i = 0; i < N_EV; i++)
		audit_add(a, &hist[i]);
	audit_expect_head(a, "vshard:3", N_EV, hist[N_EV - 1].hash);
	audit_finish(a, &r);
	ck_assert_msg(audit_clean(&r), "%s", r.first);
	audit_free(a);
}
END_TEST

/* Two events swapped in the chain: the links break. */
START_TEST(test_audit_catches_reordering)
{
	for (int k = 0; k + 1 < N_EV; k++) {
		int64_t s = hist[k].chain_seq;
		struct audit_report r;

		hist[k].chain_seq = hist[k + 1].chain_seq;
		hist[k + 1].chain_seq = s;
		r = audit_with(-1, -1);
		ck_assert_msg(r.broken > 0, "swapping links %d and %d went unnoticed", k, k + 1);
		hist[k + 1].chain_seq = hist[k].chain_seq;
		hist[k].chain_seq = s;
	}
}
END_TEST

START_TEST(test_audit_catches_every_change)
{
	for (int k = 0; k < N_EV; k++) {
		for (int what = 0; what < 4; what++) {
			struct event_rec saved = hist[k];
			struct audit_report r;

			hist[k].body = json_deep_copy(saved.body);
			switch (what) {
			case 0:
				json_object_set_new(hist[k].body, "n", json_integer(2));
				break;
			case 1:
				hist[k].at_us++;
				break;
			case 2:
				snprintf(hist[k].type, sizeof(hist[k].type), "TAMPERED");
				break;
			default:
				hist[k].seq++;
			}
			r = audit_with(-1, -1);
			ck_assert_msg(r.broken > 0, "change %d of event %d went unnoticed", what,
				      k);
			json_decref(hist[k].body);
			hist[k] = saved;
		}
	}
}
END_TEST

START_TEST(test_audit_paths_and_gaps)
{
	/* Re-seal a chain after rewriting statuses: only the path check can notice. */
	struct event_rec saved = hist[6];
	uint8_t prev[32] = {0};
	struct audit_report r;

	snprintf(hist[6].from, sizeof(hist[6].from), "PENDING"); /* PENDING -> CONFIRMED */
	for (int i = 0; i < N_EV; i++) {
		event_seal(&hist[i], prev);
		memcpy(prev, hist[i].hash, 32);
	}
	r = audit_with(-1, -1);
	ck_assert_int_eq(r.broken, 0);
	ck_assert_int_eq(r.illegal, 1);
	ck_assert_ptr_nonnull(strstr(r.first, "op 1"));
	hist[6] = saved;
	/* a gap in one op's sequence, the chain re-sealed around it */
	hist[7].seq = 4;
	memset(prev, 0, 32);
	for (int i = 0; i < N_EV; i++) {
		event_seal(&hist[i], prev);
		memcpy(prev, hist[i].hash, 32);
	}
	r = audit_with(-1, -1);
	ck_assert_int_eq(r.broken, 0);
	ck_assert_int_eq(r.gaps, 1);
	/* the same id with different content */
	struct audit *a = audit_new();
	struct event_rec other = hist[0];
	other.seq = 9;
	audit_add(a, &hist[0]);
	audit_add(a, &other);
	audit_finish(a, &r);
	ck_assert_int_eq(r.conflicts, 1);
	struct audit_step steps[8];
	audit_free(a);
	a = audit_new();
	for (int i = 0; i < N_EV; i++)
		audit_add(a, &hist[i]);
	audit_finish(a, &r);
	ck_assert_int_eq(audit_op_steps(a, 1, steps, 8), 5);
	ck_assert_str_eq(steps[3].type, "CONFIRMED");
	ck_assert_int_eq(audit_op_steps(a, 99, steps, 8), 0);
	audit_free(a);
}
END_TEST

static Suite *events_suite(void)
{
	Suite *s = suite_create("events");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_canonical_and_link_are_the_documented_ones);
	tcase_add_test(tc, test_cloud_event_round_trip);
	tcase_add_test(tc, test_json_bytes_are_the_trees);
	tcase_add_test(tc, test_from_cloud_refuses_bad_members);
	suite_add_tcase(s, tc);
	tc = tcase_create("audit");
	tcase_add_checked_fixture(tc, history, no_history);
	tcase_add_test(tc, test_audit_clean_history);
	tcase_add_test(tc, test_audit_catches_every_deletion);
	tcase_add_test(tc, test_audit_catches_every_change);
	tcase_add_test(tc, test_audit_catches_reordering);
	tcase_add_test(tc, test_audit_paths_and_gaps);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(events_suite)
