/*
 * fate.h - what became of a submitted transaction, decided only from proof.
 *
 * THE PROMISE. outboxd executes every op on chain at most once. A new
 * transaction for an op is built only after the earlier one is DEAD: it can
 * never be included and it was not. Nothing weaker than the two proofs below
 * ever decides an envelope's fate; in particular an RPC's silence
 * (getTransaction NOT_FOUND: it covers only the ledgers that node has
 * ingested and still retains) and a resend's refusal (txBAD_SEQ and
 * txTOO_LATE are exactly what a resend of a transaction that already landed
 * answers) prove nothing on their own.
 *
 * Preconditions (checked where they can be, see schema/0007_exactly_once.sql):
 *   P1. outboxd is the only user of its signer accounts.
 *   P2. An account's sequence number S is bound to one inner transaction at a
 *       time: a new inner transaction with (account, S) is recorded only when
 *       every earlier one with it is proven dead; a fee bump only wraps that
 *       inner transaction (same S, so at most one of them can execute).
 *   P3. The account's sequence number only grows, and a transaction with
 *       sequence S is valid only while the account's is S - 1 (the strict
 *       sequence rule: outboxd never sets minSeqNum).
 *
 * For an inner transaction of account A with sequence S, time bound maxTime T
 * and ledger bound maxLedger M (valid only in ledgers < M), the verdict is:
 *
 *   LANDED    a getTransaction(s) answer shows one of its envelopes (inner or
 *             fee bump) in a ledger. The answer carries the outcome.
 *   CONSUMED  A's sequence number, read from a ledger entry, is >= S. By P1
 *             and P2 one of its envelopes consumed S, so the op's call ran:
 *             find which envelope and how it ended (hash lookups). Never
 *             re-sent, never failed as if unexecuted.
 *   HELD      consumed, and no answer can show the outcome: the lookups cover
 *             every ledger it could have landed in and found nothing (a
 *             precondition is broken), or they no longer reach back to the
 *             ledger it was sent in (outside the RPC's retention). Also when
 *             A's sequence number moved past S (past anything outboxd
 *             recorded: P1 is broken) or A no longer exists. An operator
 *             resolves it.
 *   DEAD      A's sequence number, read as of a ledger L that closed after the
 *             transaction's last chance, is < S: it did not consume S (P3), and
 *             no ledger after L can include it. "After its last chance" is a
 *             comparison of ledger numbers: L >= M, or L >= X where X is a
 *             ledger whose close time is > T (close times strictly increase,
 *             so no ledger from X on can include it). Both comparisons keep a
 *             margin of one ledger over the exact rule (L >= M - 1): a doubt
 *             about how a bound is read costs a ledger of waiting, not money.
 *   UNKNOWN   anything else: keep following (resend the same envelope while
 *             it can land, fee-bump the same inner transaction).
 *
 * Facts are chain facts whatever RPC node reported them: a ledger's sequence
 * number and close time, an account's sequence number as of a ledger, a hash
 * found in a ledger. A node that lags the chain only reports older facts,
 * which is why the newest account read (by ledger, not by arrival) is kept
 * and a lookup that found nothing counts only for the ledgers it covered.
 *
 * Pure: no I/O, no clock, no globals. tests/unit/check_fate.c checks every
 * verdict against a model of the chain over every small world.
 */
#ifndef OUTBOX_COMMON_FATE_H
#define OUTBOX_COMMON_FATE_H

#include <stdbool.h>
#include <stdint.h>

enum fate {
	FATE_UNKNOWN,
	FATE_LANDED,
	FATE_CONSUMED,
	FATE_HELD,
	FATE_DEAD,
};

/* Why: for logs, events and the operator's "why" view. */
enum fate_why {
	FATE_WHY_NO_PROOF,        /* UNKNOWN: nothing decides yet */
	FATE_WHY_BEFORE_DEADLINE, /* UNKNOWN: the newest account read predates its last chance */
	FATE_WHY_FOUND,           /* LANDED */
	FATE_WHY_SEQ_CONSUMED,    /* CONSUMED: look its envelopes up */
	FATE_WHY_LOOKUP_LAGS,     /* CONSUMED: the lookups have not reached the consuming ledger */
	FATE_WHY_OUTSIDE_RETENTION, /* HELD: the lookups no longer reach back to its first ledger */
	FATE_WHY_CONSUMED_NOT_FOUND, /* HELD: consumed, yet no ledger in range holds any envelope */
	FATE_WHY_SEQ_MOVED_PAST,     /* HELD: the account's sequence is past S */
	FATE_WHY_ACCOUNT_GONE,       /* HELD: the account does not exist */
	FATE_WHY_SEQ_BELOW_AFTER_DEADLINE, /* DEAD */
	FATE_WHY_COUNT
};

/* The inner transaction, as its attempt row recorded it. */
struct fate_tx {
	int64_t seq;         /* S */
	int64_t max_time;    /* T, unix seconds; 0 = no time bound */
	uint32_t max_ledger; /* M: valid only in ledgers < M; 0 = no ledger bound */
	/*
	 * A ledger known to have closed before the transaction was first sent:
	 * it can only be in a later ledger. 0 when unknown (then no lookup can
	 * ever cover it, and a consumed sequence holds the op).
	 */
	uint32_t sent_after;
};

/* What RPC answers have shown so far. Zeroed = nothing known. */
struct fate_facts {
	/* A getTransaction(s) answer showed one of its envelopes in a ledger. */
	bool found;
	bool found_success;
	uint32_t found_ledger;
	/* The newest account read (by ledger): seqNum as of acct_ledger. */
	bool have_acct;
	bool acct_missing; /* the read said the account does not exist */
	int64_t acct_seq;
	uint32_t acct_ledger;
	/* The lowest ledger known to have a close time > max_time; 0 = none known. */
	uint32_t past_max_time;
	/*
	 * The last complete round of lookups of every envelope that found none
	 * of them: every answer was NOT_FOUND and together they covered the
	 * ledgers [nf_oldest, nf_latest] (the intersection of their windows).
	 */
	bool have_nf;
	uint32_t nf_oldest, nf_latest;
};

struct fate_verdict {
	enum fate fate;
	enum fate_why why;
	/*
	 * The account's sequence moved past S (P1 broken): raise the alarm even
	 * when the outcome is then found.
	 */
	bool alarm;
	/*
	 * The first ledger whose account state proves death (an account read as
	 * of this ledger or later decides DEAD or CONSUMED); 0 = no bound known,
	 * so it can never be proven dead.
	 */
	uint32_t deadline;
};

struct fate_verdict fate_decide(const struct fate_tx *tx, const struct fate_facts *f);

/* The deadline of fate_verdict, on its own: min(M, past_max_time), 0 if neither is known. */
uint32_t fate_deadline(const struct fate_tx *tx, const struct fate_facts *f);

/*
 * Fold an account read into f: kept only when it is as new as the one held
 * (reads from a lagging node must not hide a newer fact). Returns false when
 * it contradicts the held read (same or older ledger, higher sequence;
 * a sequence number never falls): the caller raises the alarm.
 */
bool fate_note_account(struct fate_facts *f, bool missing, int64_t seq, uint32_t ledger);

/* Fold "ledger `ledger` closed at `close_time`" into f for tx. */
void fate_note_close(struct fate_facts *f, const struct fate_tx *tx, uint32_t ledger,
		     int64_t close_time);

/* "CONSUMED", ...; "FATE_WHY_..." names for logs. */
const char *fate_name(enum fate f);
const char *fate_why_name(enum fate_why w);

#endif
