/*
 * fate.c - see fate.h. The rules are applied in the order fate.h lists
 * them: a hash in a ledger beats everything; then the account's sequence
 * number decides between consumed and dead; silence decides nothing.
 */
#include "common/fate.h"

#include <stddef.h>

uint32_t fate_deadline(const struct fate_tx *tx, const struct fate_facts *f)
{
	uint32_t d = tx->max_ledger;

	if (tx->max_time && f->past_max_time && (!d || f->past_max_time < d))
		d = f->past_max_time;
	return d;
}

/* Consumed: do the lookups show the outcome, or prove that none can? */
static struct fate_verdict consumed(const struct fate_tx *tx, const struct fate_facts *f,
				    struct fate_verdict v)
{
	uint32_t first = tx->sent_after ? tx->sent_after + 1 : 0;

	v.fate = FATE_CONSUMED;
	v.why = FATE_WHY_SEQ_CONSUMED;
	if (!f->have_nf)
		return v;
	if (!first || f->nf_oldest > first) {
		v.fate = FATE_HELD;
		v.why = FATE_WHY_OUTSIDE_RETENTION;
	} else if (f->nf_latest >= f->acct_ledger) {
		v.fate = FATE_HELD;
		v.why = v.alarm ? FATE_WHY_SEQ_MOVED_PAST : FATE_WHY_CONSUMED_NOT_FOUND;
	} else {
		v.why = FATE_WHY_LOOKUP_LAGS;
	}
	return v;
}

struct fate_verdict fate_decide(const struct fate_tx *tx, const struct fate_facts *f)
{
	struct fate_verdict v = {.fate = FATE_UNKNOWN, .why = FATE_WHY_NO_PROOF};

	v.deadline = fate_deadline(tx, f);
	v.alarm = f->have_acct && !f->acct_missing && f->acct_seq > tx->seq;
	if (f->found) {
		v.fate = FATE_LANDED;
		v.why = FATE_WHY_FOUND;
		return v;
	}
	if (!f->have_acct)
		return v;
	if (f->acct_missing) {
		v.fate = FATE_HELD;
		v.why = FATE_WHY_ACCOUNT_GONE;
		return v;
	}
	if (f->acct_seq >= tx->seq)
		return consumed(tx, f, v);
	if (v.deadline && f->acct_ledger >= v.deadline) {
		v.fate = FATE_DEAD;
		v.why = FATE_WHY_SEQ_BELOW_AFTER_DEADLINE;
		return v;
	}
	v.why = FATE_WHY_BEFORE_DEADLINE;
	return v;
}

bool fate_note_account(struct fate_facts *f, bool missing, int64_t seq, uint32_t ledger)
{
	bool ok = true;

	if (f->have_acct && !f->acct_missing && !missing) {
		if ((ledger >= f->acct_ledger && seq < f->acct_seq) ||
		    (ledger <= f->acct_ledger && seq > f->acct_seq))
			ok = false;
	}
	if (!f->have_acct || ledger >= f->acct_ledger) {
		f->have_acct = true;
		f->acct_missing = missing;
		f->acct_seq = missing ? 0 : seq;
		f->acct_ledger = ledger;
	}
	return ok;
}

void fate_note_close(struct fate_facts *f, const struct fate_tx *tx, uint32_t ledger,
		     int64_t close_time)
{
	if (!tx->max_time || !ledger || close_time <= tx->max_time)
		return;
	if (!f->past_max_time || ledger < f->past_max_time)
		f->past_max_time = ledger;
}

const char *fate_name(enum fate f)
{
	static const char *const names[] = {
		[FATE_UNKNOWN] = "UNKNOWN", [FATE_LANDED] = "LANDED", [FATE_CONSUMED] = "CONSUMED",
		[FATE_HELD] = "HELD",       [FATE_DEAD] = "DEAD",
	};
	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

const char *fate_why_name(enum fate_why w)
{
	static const char *const names[FATE_WHY_COUNT] = {
		[FATE_WHY_NO_PROOF] = "no proof yet",
		[FATE_WHY_BEFORE_DEADLINE] = "the newest account read predates its last chance",
		[FATE_WHY_FOUND] = "found in a ledger",
		[FATE_WHY_SEQ_CONSUMED] = "its sequence number was consumed",
		[FATE_WHY_LOOKUP_LAGS] = "consumed; the lookups lag the consuming ledger",
		[FATE_WHY_OUTSIDE_RETENTION] = "consumed; no RPC answer reaches back to its ledger",
		[FATE_WHY_CONSUMED_NOT_FOUND] =
			"its sequence number was consumed yet no ledger in range holds it",
		[FATE_WHY_SEQ_MOVED_PAST] =
			"the signer's sequence number moved past anything outboxd recorded",
		[FATE_WHY_ACCOUNT_GONE] = "the signer account does not exist",
		[FATE_WHY_SEQ_BELOW_AFTER_DEADLINE] =
			"its sequence number was unused after its last chance",
	};
	return (unsigned)w < FATE_WHY_COUNT ? names[w] : "?";
}
