/*
 * check_demo.c - the demo's pure parts (ops/demo/mix.h, ops/demo/chart.h):
 * the business mix is repeatable and only its overdrafts can fail, its
 * payloads are what outbox.enqueue() wants, the population file is read
 * defensively, and the charts render exactly and line up.
 */
#include "ops/demo/chart.h"
#include "ops/demo/mix.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/support/check_main.h"

#define XLM    10000000LL
#define ACCT_A "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH"
#define ACCT_B "GCKTG4SCXDPCUKGZM4Y33S32AU7BUWYIJQ3Y2KS44XE3ISK7K2PNLZLY"

static struct population pop;

static void small_population(void)
{
	memset(&pop, 0, sizeof(pop));
	snprintf(pop.signers[0], sizeof(pop.signers[0]), "%s", ACCT_A);
	snprintf(pop.signers[1], sizeof(pop.signers[1]), "%s", ACCT_B);
	pop.n_signers = 2;
	for (int i = 0; i < 3; i++) {
		snprintf(pop.customers[i].user, MIX_ID_MAX, "user-%02d", i + 1);
		snprintf(pop.customers[i].account, MIX_STRKEY_LEN + 1, "%s",
			 i % 2 ? ACCT_B : ACCT_A);
		pop.customers[i].balance = 5000 * XLM;
	}
	pop.n_customers = 3;
	snprintf(pop.agents[0], MIX_ID_MAX, "agent-1");
	pop.n_agents = 1;
}

/* The intent's payload as JSON, checked against the kind's fields. */
static void check_payload(const struct intent *it)
{
	char buf[512];
	json_t *j;

	ck_assert_int_eq(intent_payload(it, buf, sizeof(buf)), 0);
	j = json_loads(buf, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "amount")), it->amount);
	if (!strcmp(it->kind, "REBALANCE"))
		ck_assert_int_eq((int)json_object_size(j), 1);
	else
		ck_assert_str_eq(json_string_value(json_object_get(j, "account")), it->account);
	if (!strcmp(it->kind, "REFERRAL_REWARD")) {
		ck_assert_int_eq((int)json_object_size(j), 4);
		ck_assert_str_eq(json_string_value(json_object_get(j, "leg")), it->leg);
	}
	json_decref(j);
}

START_TEST(test_mix_repeatable)
{
	struct mix a, b;
	struct intent x[2], y[2];

	small_population();
	mix_init(&a, &pop, 42);
	mix_init(&b, &pop, 42);
	for (int i = 0; i < 500; i++) {
		int n = mix_next(&a, x);

		ck_assert_int_eq(mix_next(&b, y), n);
		for (int k = 0; k < n; k++) {
			ck_assert_str_eq(x[k].record, y[k].record);
			ck_assert_str_eq(x[k].amount, y[k].amount);
			ck_assert_ptr_eq(x[k].signer, y[k].signer);
		}
	}
	mix_init(&b, &pop, 43);
	for (int i = 0; i < 50; i++) {
		mix_next(&a, x);
		mix_next(&b, y);
		if (strcmp(x[0].record, y[0].record) || strcmp(x[0].amount, y[0].amount))
			return; /* another seed, another run */
	}
	ck_abort_msg("seeds 42 and 43 gave the same 50 events");
}
END_TEST

/* Only overdrafts can fail; every record id is unique; referrals come in two legs. */
START_TEST(test_mix_outcomes)
{
	static char seen[8000][3 * MIX_ID_MAX];
	char key[3 * MIX_ID_MAX];
	int n_seen = 0, overdrafts = 0, legs = 0;
	struct mix m;
	struct intent it[2];

	small_population();
	mix_init(&m, &pop, 7);
	for (int i = 0; i < 3000; i++) {
		int n = mix_next(&m, it);

		for (int k = 0; k < n; k++) {
			long long amount = atoll(it[k].amount);

			check_payload(&it[k]);
			ck_assert_int_gt(amount, 0);
			if (it[k].what == IW_OVERDRAFT) {
				overdrafts++;
				ck_assert(it[k].expect_fail);
				ck_assert(strncmp(it[k].record, "wdx-", 4) == 0);
				ck_assert_int_gt(amount, 5000 * XLM);
			} else {
				ck_assert(!it[k].expect_fail);
				ck_assert(strncmp(it[k].record, "wdx-", 4) != 0);
			}
			if (it[k].what == IW_WITHDRAW)
				ck_assert_int_le(amount, 50 * XLM);
			/* the idempotency key is kind:user:record: a record id never repeats in a kind */
			snprintf(key, sizeof(key), "%s:%s", it[k].kind, it[k].record);
			for (int s = 0; s < n_seen; s++)
				if (!strcmp(seen[s],
					    key)) /* not ck_assert: each one marks a point */
					ck_abort_msg("%s twice", key);
			ck_assert_int_lt(n_seen, 8000);
			snprintf(seen[n_seen++], sizeof(seen[0]), "%s", key);
		}
		if (n == 2) {
			legs += 2;
			ck_assert_str_eq(it[0].conversion, it[1].conversion);
			ck_assert_str_eq(it[0].leg, "referrer");
			ck_assert_str_eq(it[1].leg, "referee");
			ck_assert(it[0].via_http && it[1].via_http);
		}
	}
	ck_assert_int_gt(overdrafts, 0);
	ck_assert_int_gt(legs, 0);
}
END_TEST

START_TEST(test_mix_recurring)
{
	struct intent out[8];
	struct mix m;
	int n;

	small_population();
	mix_init(&m, &pop, 1);
	ck_assert_int_eq(mix_plans_for(10, 0.15), 15);
	ck_assert_int_eq(mix_plans_for(0.1, 0.15), 1); /* never zero plans */
	n = mix_recurring(&m, 5, out, 8);
	ck_assert_int_eq(n, 5);
	for (int i = 0; i < n; i++) {
		ck_assert_str_eq(out[i].kind, "DEPOSIT");
		ck_assert_str_eq(out[i].priority, "LOW");
		check_payload(&out[i]);
	}
	ck_assert_str_eq(out[0].record, "rec-000-0001");
	ck_assert_str_eq(out[4].user, "user-02");           /* customers taken in turn */
	ck_assert_int_eq(mix_recurring(&m, 20, out, 8), 8); /* never beyond cap */
	ck_assert_str_eq(out[0].record, "rec-000-0002");
}
END_TEST

static int load_text(const char *text, char *err, size_t errlen)
{
	char path[] = "/tmp/check_demo_pop.XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f = fdopen(fd, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	rc = population_load(&pop, path, err, errlen);
	unlink(path);
	return rc;
}

START_TEST(test_population)
{
	char err[256];

	ck_assert_int_eq(load_text("# demo\nsigner " ACCT_A "\ncustomer user-01 " ACCT_B
				   " 50000000000\n\nagent agent-1\n",
				   err, sizeof(err)),
			 0);
	ck_assert_int_eq((int)pop.n_signers, 1);
	ck_assert(pop.customers[0].balance == 50000000000LL);
	ck_assert_int_eq(load_text("signer GBAD\n", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, ":1: signer"));
	ck_assert_int_eq(
		load_text("signer " ACCT_A "\ncustomer user-01 " ACCT_B "\n", err, sizeof(err)),
		-1);
	ck_assert_ptr_nonnull(strstr(err, ":2: customer user-01: bad or missing balance"));
	ck_assert_int_eq(load_text("customer us:er " ACCT_B " 5\n", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "bad or missing user id"));
	ck_assert_int_eq(load_text("payee x\n", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown record 'payee'"));
	ck_assert_int_eq(load_text("signer " ACCT_A "\n", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "needs at least one signer, customer and agent"));
}
END_TEST

START_TEST(test_pctl)
{
	double v[100];

	for (int i = 0; i < 100; i++)
		v[i] = i + 1;
	ck_assert(chart_pctl(v, 100, 0.5) == 50);
	ck_assert(chart_pctl(v, 100, 0.99) == 99);
	ck_assert(chart_pctl(v, 100, 1.0) == 100);
	ck_assert(chart_pctl(v, 1, 0.99) == 1);
	ck_assert(chart_pctl(v, 0, 0.5) == 0);
}
END_TEST

START_TEST(test_chart_bars_ascii)
{
	const double v[4] = {0, 1, 2, 4}, marks[4] = {1, 4, 0, 0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	chart_bars(f, v, marks, 4, 2, false, "%.0f/s");
	fclose(f); /* buf now holds what was rendered */
	/* 4 is the top of 2 rows (16 eighths): 1 -> 4 eighths ('+'), 2 -> a full
	 * lower cell, 4 -> both; the mark at 4 shows above the bar of 1, the
	 * mark at 1 (in the lowest row) does not show */
	ck_assert_str_eq(buf, "               4/s | o #\n"
			      "                 0 | +##\n");
	free(buf);
}
END_TEST

START_TEST(test_chart_rows_line_up)
{
	const double fee[5] = {CHART_NONE, 100, 100, 400, 100};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char *line[6];
	int n = 0;

	chart_axis(f, 5, 5, false); /* 5 s buckets: a tick every 30 s, 6 columns */
	chart_strip(f, "fee", fee, 5, 0, false);
	chart_span(f, "killed", 6, 7, 5, 5, false);
	chart_span(f, "congestion", 5, 19, 5, 5, false);
	fclose(f); /* buf now holds what was rendered */
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t && n < 6;
	     t = strtok_r(NULL, "\n", &save))
		line[n++] = t;
	ck_assert_int_eq(n, 5);
	/* every row: a CHART_LABEL_W-wide label column, then one cell per bucket */
	ck_assert_str_eq(line[0], "                   ++----");
	ck_assert_str_eq(line[1], "                    0s");
	ck_assert_str_eq(line[2], "   fee               ..#.");
	ck_assert_str_eq(line[3], "   killed            ^   ");
	ck_assert_str_eq(line[4], "   congestion        === "); /* 5..19 s: buckets 1..3 */
	free(buf);
}
END_TEST

static Suite *demo_suite(void)
{
	Suite *s = suite_create("demo");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_mix_repeatable);
	tcase_add_test(tc, test_mix_outcomes);
	tcase_add_test(tc, test_mix_recurring);
	tcase_add_test(tc, test_population);
	tcase_add_test(tc, test_pctl);
	tcase_add_test(tc, test_chart_bars_ascii);
	tcase_add_test(tc, test_chart_rows_line_up);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(demo_suite)
