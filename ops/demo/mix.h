/*
 * mix.h - the demo's business: its population (signers, customers, agents)
 * and the money movements it asks for, in a realistic mix.
 *
 * Pure: a seeded PRNG and no I/O, so a run is repeatable (--seed) and the
 * outcome of every intent is known before it is sent. Only an overdraft
 * (a withdrawal beyond the customer's balance, record id "wdx-...") is meant
 * to fail, on chain; everything else must confirm.
 *
 *	user deposit        DEPOSIT          NORMAL    dep-N
 *	user withdrawal     WITHDRAW         CRITICAL  wd-N (1 in 25: wdx-N, an overdraft)
 *	recurring deposit   DEPOSIT          LOW       rec-P-N, every plan each 10 s, in a burst
 *	referral payout     REFERRAL_REWARD  NORMAL    two legs per conversion, conv-N:referrer|referee
 *	agent rebalance     REBALANCE        LOW       rb-N
 *
 * Referral payouts and rebalances come from other services than the core
 * application (marketing, treasury); they go through the gateway's HTTP
 * enqueue when the driver has one (intent.via_http), else through SQL.
 */
#ifndef OUTBOX_OPS_DEMO_MIX_H
#define OUTBOX_OPS_DEMO_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIX_STRKEY_LEN    56
#define MIX_ID_MAX        32
#define MIX_MAX_SIGNERS   256
#define MIX_MAX_CUSTOMERS 1024
#define MIX_MAX_AGENTS    64
#define MIX_RECURRING_S   10 /* the recurring-deposit scheduler's period */

struct mix_customer {
	char user[MIX_ID_MAX];
	char account[MIX_STRKEY_LEN + 1];
	int64_t balance; /* stroops, as funded in the sim */
};

struct population {
	char signers[MIX_MAX_SIGNERS][MIX_STRKEY_LEN + 1];
	size_t n_signers;
	struct mix_customer customers[MIX_MAX_CUSTOMERS];
	size_t n_customers;
	char agents[MIX_MAX_AGENTS][MIX_ID_MAX];
	size_t n_agents;
};

enum intent_what {
	IW_DEPOSIT,
	IW_WITHDRAW,
	IW_OVERDRAFT,
	IW_RECURRING,
	IW_REFERRAL,
	IW_REBALANCE,
	IW__COUNT
};

struct intent {
	enum intent_what what;
	const char *kind;     /* DEPOSIT, WITHDRAW, REBALANCE, REFERRAL_REWARD */
	const char *priority; /* NULL: the kind's default */
	const char *signer;
	char user[MIX_ID_MAX];
	char record[2 * MIX_ID_MAX]; /* business_record_id (conversion:leg for referrals) */
	char account[MIX_STRKEY_LEN + 1];
	char amount[24]; /* stroops, decimal */
	char conversion[MIX_ID_MAX];
	char leg[16];
	bool expect_fail; /* an overdraft: must FAIL on chain */
	bool via_http;    /* sent by another service than the core application */
};

struct mix {
	const struct population *pop;
	uint64_t rng;
	uint64_t seq[IW__COUNT];
	uint64_t rounds; /* recurring scheduler rounds so far */
};

/*
 * Read the population file bash wrote: one record per line,
 *	signer G...
 *	customer USER G... BALANCE_STROOPS
 *	agent AGENT
 * '#' lines and blank lines are skipped. Returns 0, or -1 with errbuf
 * naming the line and what is wrong (also when a part is empty).
 */
int population_load(struct population *p, const char *path, char *errbuf, size_t errlen);

void mix_init(struct mix *m, const struct population *pop, uint64_t seed);

/* The next steady-stream business event: 1 intent, or 2 for a referral's two legs. */
int mix_next(struct mix *m, struct intent out[2]);

/*
 * One round of the recurring-deposit scheduler: a LOW deposit for each of
 * `plans` plans (customers taken in turn). Writes at most cap intents and
 * returns how many.
 */
int mix_recurring(struct mix *m, int plans, struct intent *out, int cap);

/* Plans the scheduler runs each round so that recurring deposits are share of rate. */
int mix_plans_for(double rate, double share);

/* "user deposit", "overdraft", ... */
const char *mix_what_name(enum intent_what w);

/* The enqueue payload as JSON text; returns 0, or -1 when cap is too small. */
int intent_payload(const struct intent *it, char *buf, size_t cap);

#endif
