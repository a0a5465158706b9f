/*
 * check_fate.c - the fate rule (common/fate.h) against a model of the chain.
 *
 * The model: ledgers 1..N with close time c(k) = k; one account whose
 * sequence number starts at S-1 (or S-2: outboxd's idea of it was ahead);
 * our inner transaction with sequence S, bounds T and M, first sent after
 * ledger B, which lands in ledger l (or never) when it is valid there; and,
 * breaking precondition P1, maybe another party that uses the account at
 * ledger m. Every such world is enumerated; from each, every combination of
 * facts an RPC could report (an account read as of any ledger, a lookup of
 * any window, a ledger known to be past T) is derived, and the verdict is
 * checked for soundness in that world (DEAD only if ours never lands,
 * LANDED/CONSUMED only if something consumed S, ...) and for liveness (a read
 * after the deadline always decides).
 */
#include "common/fate.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

#define N 8  /* ledgers in a world */
#define S 10 /* our sequence number */

struct world {
	int64_t init; /* account sequence before ledger 1 */
	int ours;     /* ledger ours landed in, 0 = never (by ledger N) */
	int other_at; /* ledger another party used the account, 0 = never */
	int other_by; /* ... consuming this many sequence numbers */
	int64_t seq[N + 1];
	bool later; /* ours could still land after ledger N */
};

static bool valid_in(const struct fate_tx *tx, int k)
{
	return (!tx->max_ledger || (uint32_t)k < tx->max_ledger) &&
	       (!tx->max_time || k <= tx->max_time) && (uint32_t)k > tx->sent_after;
}

/* Play the world; false when `ours` names a ledger it cannot land in. */
static bool play(struct world *w, const struct fate_tx *tx)
{
	int64_t s = w->init;

	w->seq[0] = s;
	for (int k = 1; k <= N; k++) {
		if (w->other_at == k)
			s += w->other_by;
		if (w->ours == k) {
			if (s != S - 1 || !valid_in(tx, k))
				return false;
			s = S;
		}
		w->seq[k] = s;
	}
	w->later = false;
	if (!w->ours && s == S - 1)
		for (int k = N + 1; k <= 4 * N; k++)
			w->later |= valid_in(tx, k) || (!tx->max_ledger && !tx->max_time);
	return true;
}

struct tally {
	long verdicts, dead, landed, consumed, held;
};

static void check_one(const struct fate_tx *tx, const struct world *w, const struct fate_facts *f,
		      struct tally *t)
{
	struct fate_verdict v = fate_decide(tx, f);
	bool p1 = !w->other_at;
	bool consumed_by_read = f->have_acct && w->seq[f->acct_ledger] >= S;

	t->verdicts++;
	switch (v.fate) {
	case FATE_LANDED:
		t->landed++;
		ck_assert_msg(w->ours, "LANDED but ours never landed");
		break;
	case FATE_DEAD:
		t->dead++;
		ck_assert_msg(!w->ours && !w->later,
			      "DEAD but ours %s (S=%d T=%lld M=%u B=%u read seq %lld at %u, X %u)",
			      w->ours ? "landed" : "may still land", S, (long long)tx->max_time,
			      tx->max_ledger, tx->sent_after, (long long)f->acct_seq,
			      f->acct_ledger, f->past_max_time);
		break;
	case FATE_CONSUMED:
	case FATE_HELD:
		v.fate == FATE_HELD ? t->held++ : t->consumed++;
		ck_assert_msg(consumed_by_read, "%s without S consumed", fate_name(v.fate));
		if (p1)
			ck_assert_msg(w->ours, "P1 holds, S consumed, so ours landed");
		if (p1)
			ck_assert_int_ne(v.why, FATE_WHY_CONSUMED_NOT_FOUND);
		break;
	case FATE_UNKNOWN:
		break;
	}
	if (v.alarm)
		ck_assert_msg(!p1, "alarm without another user of the account");
	if (f->found)
		ck_assert_int_eq(v.fate, FATE_LANDED);
	/* liveness: a read at or after the deadline always decides */
	if (f->have_acct && v.deadline && f->acct_ledger >= v.deadline)
		ck_assert_msg(v.fate != FATE_UNKNOWN, "read at %u >= deadline %u left UNKNOWN",
			      f->acct_ledger, v.deadline);
	/* a covering lookup after a consuming read always decides (found or held) */
	if (consumed_by_read && f->have_nf && f->nf_latest >= f->acct_ledger)
		ck_assert_int_ne(v.fate, FATE_CONSUMED);
}

/* Every fact combination this world can produce. */
static void facts_of(const struct fate_tx *tx, const struct world *w, struct tally *t)
{
	uint32_t xmin = 0;

	for (int k = 1; k <= N && tx->max_time; k++)
		if (k > tx->max_time) {
			xmin = (uint32_t)k;
			break;
		}
	uint32_t xs[3] = {0, xmin, xmin && xmin + 2 <= N ? xmin + 2 : 0};

	for (int read = -1; read <= N; read++) {
		for (int wo = 0; wo <= N; wo++) {
			for (int wl = wo ? wo : 0; wl <= (wo ? N : 0); wl++) {
				for (int xi = 0; xi < 3; xi++) {
					struct fate_facts f;

					if (xi && !xs[xi])
						continue;
					memset(&f, 0, sizeof(f));
					if (read >= 0) {
						f.have_acct = true;
						f.acct_seq = w->seq[read];
						f.acct_ledger = (uint32_t)read;
					}
					if (wo) {
						if (w->ours >= wo && w->ours <= wl) {
							f.found = true;
							f.found_ledger = (uint32_t)w->ours;
						} else {
							f.have_nf = true;
							f.nf_oldest = (uint32_t)wo;
							f.nf_latest = (uint32_t)wl;
						}
					}
					f.past_max_time = xs[xi];
					check_one(tx, w, &f, t);
				}
			}
		}
	}
}

START_TEST(test_fate_sound_and_live_in_every_small_world)
{
	static const int64_t inits[] = {S - 1, S - 2};
	static const uint32_t ms[] = {0, 3, 5, 7};
	static const int64_t ts[] = {0, 2, 5};
	static const uint32_t bs[] = {0, 1, 3};
	struct tally t = {0};
	long worlds = 0;

	for (size_t ii = 0; ii < 2; ii++)
		for (size_t mi = 0; mi < 4; mi++)
			for (size_t ti = 0; ti < 3; ti++)
				for (size_t bi = 0; bi < 3; bi++)
					for (int ours = 0; ours <= N; ours++)
						for (int oa = 0; oa <= N; oa++)
							for (int ob = 1; ob <= (oa ? 2 : 1); ob++) {
								struct fate_tx tx = {
									.seq = S,
									.max_time = ts[ti],
									.max_ledger = ms[mi],
									.sent_after = bs[bi]};
								struct world w = {
									.init = inits[ii],
									.ours = ours,
									.other_at = oa,
									.other_by = oa ? ob : 0};
								if (!play(&w, &tx))
									continue;
								worlds++;
								facts_of(&tx, &w, &t);
							}
	printf("{\"test\":\"fate_model\",\"worlds\":%ld,\"verdicts\":%ld,\"dead\":%ld,"
	       "\"landed\":%ld,\"consumed\":%ld,\"held\":%ld}\n",
	       worlds, t.verdicts, t.dead, t.landed, t.consumed, t.held);
	/* the enumeration reaches every verdict, so the checks above bite */
	ck_assert_int_gt(worlds, 1000);
	ck_assert_int_gt(t.dead, 1000);
	ck_assert_int_gt(t.landed, 1000);
	ck_assert_int_gt(t.consumed, 1000);
	ck_assert_int_gt(t.held, 1000);
}
END_TEST

/* Silence and refusals that look like proof, spelled out: none decides anything. */
START_TEST(test_fate_silence_and_refusals_prove_nothing)
{
	struct fate_tx tx = {.seq = 500, .max_time = 1000, .max_ledger = 80, .sent_after = 40};
	struct fate_facts f = {0};
	struct fate_verdict v;

	/* a resend said txBAD_SEQ, getTransaction said NOT_FOUND: nothing is decided */
	f.have_nf = true;
	f.nf_oldest = 60; /* retention no longer reaches ledger 41 */
	f.nf_latest = 200;
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_UNKNOWN);
	/* a lagging node's read before the deadline: still nothing */
	ck_assert(fate_note_account(&f, false, 499, 70));
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_UNKNOWN);
	ck_assert_int_eq(v.why, FATE_WHY_BEFORE_DEADLINE);
	ck_assert_uint_eq(v.deadline, 80);
	/* the sequence was consumed: the call ran; outside retention: held */
	ck_assert(fate_note_account(&f, false, 500, 150));
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_HELD);
	ck_assert_int_eq(v.why, FATE_WHY_OUTSIDE_RETENTION);
	ck_assert(!v.alarm);
}
END_TEST

START_TEST(test_fate_dead_only_after_deadline)
{
	struct fate_tx tx = {.seq = 7, .max_time = 1000, .max_ledger = 50, .sent_after = 10};
	struct fate_facts f = {0};

	fate_note_account(&f, false, 6, 49);
	ck_assert_int_eq(fate_decide(&tx, &f).fate, FATE_UNKNOWN);
	fate_note_account(&f, false, 6, 50);
	ck_assert_int_eq(fate_decide(&tx, &f).fate, FATE_DEAD);
	/* a close time past maxTime moves the deadline earlier */
	memset(&f, 0, sizeof(f));
	fate_note_close(&f, &tx, 30, 1000); /* not past: close time == maxTime */
	ck_assert_uint_eq(f.past_max_time, 0);
	fate_note_close(&f, &tx, 31, 1001);
	fate_note_close(&f, &tx, 35, 1009);
	ck_assert_uint_eq(f.past_max_time, 31);
	fate_note_account(&f, false, 6, 31);
	ck_assert_int_eq(fate_decide(&tx, &f).fate, FATE_DEAD);
	/* no bounds at all: never provably dead */
	struct fate_tx unbounded = {.seq = 7};
	ck_assert_int_eq(fate_decide(&unbounded, &f).fate, FATE_UNKNOWN);
	ck_assert_uint_eq(fate_decide(&unbounded, &f).deadline, 0);
}
END_TEST

START_TEST(test_fate_consumed_lookups)
{
	struct fate_tx tx = {.seq = 7, .max_time = 1000, .max_ledger = 50, .sent_after = 10};
	struct fate_facts f = {0};
	struct fate_verdict v;

	fate_note_account(&f, false, 7, 20);
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_CONSUMED);
	f.have_nf = true;
	f.nf_oldest = 5;
	f.nf_latest = 19; /* the lookup node lags the consuming read */
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_CONSUMED);
	ck_assert_int_eq(v.why, FATE_WHY_LOOKUP_LAGS);
	f.nf_latest = 20; /* it covers 11..20 and found nothing: P1 must be broken */
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_HELD);
	ck_assert_int_eq(v.why, FATE_WHY_CONSUMED_NOT_FOUND);
	f.found = true;
	ck_assert_int_eq(fate_decide(&tx, &f).fate, FATE_LANDED);
	/* moved past S: the alarm rings even when the hash is found */
	fate_note_account(&f, false, 9, 25);
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_LANDED);
	ck_assert(v.alarm);
	f.found = false;
	f.nf_latest = 25;
	v = fate_decide(&tx, &f);
	ck_assert_int_eq(v.fate, FATE_HELD);
	ck_assert_int_eq(v.why, FATE_WHY_SEQ_MOVED_PAST);
	/* the account is gone */
	memset(&f, 0, sizeof(f));
	fate_note_account(&f, true, 0, 60);
	ck_assert_int_eq(fate_decide(&tx, &f).fate, FATE_HELD);
	ck_assert_int_eq(fate_decide(&tx, &f).why, FATE_WHY_ACCOUNT_GONE);
	/* unknown first ledger: no lookup can cover it */
	struct fate_tx legacy = {.seq = 7, .max_time = 1000};
	memset(&f, 0, sizeof(f));
	fate_note_account(&f, false, 7, 20);
	f.have_nf = true;
	f.nf_oldest = 1;
	f.nf_latest = 30;
	ck_assert_int_eq(fate_decide(&legacy, &f).why, FATE_WHY_OUTSIDE_RETENTION);
}
END_TEST

/* Reads arrive out of ledger order (two nodes, different lags): the newest ledger wins. */
START_TEST(test_fate_note_account_keeps_the_newest)
{
	struct fate_facts f = {0};

	ck_assert(fate_note_account(&f, false, 6, 40));
	ck_assert(fate_note_account(&f, false, 6, 35)); /* older, consistent: ignored */
	ck_assert_uint_eq(f.acct_ledger, 40);
	ck_assert(fate_note_account(&f, false, 7, 45));
	ck_assert_int_eq(f.acct_seq, 7);
	ck_assert(fate_note_account(&f, false, 6, 41)); /* older view, before ours landed */
	ck_assert_uint_eq(f.acct_ledger, 45);
	ck_assert_int_eq(f.acct_seq, 7);
	/* contradictions: a sequence number never falls */
	ck_assert(!fate_note_account(&f, false, 6, 46));
	ck_assert(!fate_note_account(&f, false, 9, 44));
	/* every pair of reads, in both orders */
	for (int64_t s1 = 5; s1 <= 8; s1++)
		for (int64_t s2 = 5; s2 <= 8; s2++)
			for (uint32_t l1 = 1; l1 <= 4; l1++)
				for (uint32_t l2 = 1; l2 <= 4; l2++) {
					struct fate_facts g = {0};
					bool consistent = (l1 < l2 && s1 <= s2) ||
							  (l1 > l2 && s1 >= s2) ||
							  (l1 == l2 && s1 == s2);
					fate_note_account(&g, false, s1, l1);
					ck_assert_int_eq(fate_note_account(&g, false, s2, l2),
							 consistent);
					ck_assert_uint_eq(g.acct_ledger, l1 > l2 ? l1 : l2);
					ck_assert_int_eq(g.acct_seq, l1 > l2 ? s1 : s2);
				}
}
END_TEST

START_TEST(test_fate_names)
{
	for (int i = 0; i < FATE_WHY_COUNT; i++)
		ck_assert_str_ne(fate_why_name((enum fate_why)i), "?");
	ck_assert_str_eq(fate_name(FATE_DEAD), "DEAD");
	ck_assert_str_eq(fate_why_name(FATE_WHY_COUNT), "?");
}
END_TEST

static Suite *fate_suite(void)
{
	Suite *s = suite_create("fate");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fate_sound_and_live_in_every_small_world);
	tcase_add_test(tc, test_fate_silence_and_refusals_prove_nothing);
	tcase_add_test(tc, test_fate_dead_only_after_deadline);
	tcase_add_test(tc, test_fate_consumed_lookups);
	tcase_add_test(tc, test_fate_note_account_keeps_the_newest);
	tcase_add_test(tc, test_fate_names);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(fate_suite)
