/*
 * mix.c - the demo's business events (mix.h); population.c reads who exists.
 */
#include "ops/demo/mix.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XLM ((int64_t)10000000) /* stroops */

/* Weights of the steady stream (recurring deposits come in bursts instead). */
static const struct {
	enum intent_what what;
	unsigned weight;
} steady[] = {
	{IW_DEPOSIT, 40},
	{IW_WITHDRAW, 34},
	{IW_REFERRAL, 8}, /* two intents each */
	{IW_REBALANCE, 10},
};
#define OVERDRAFT_ONE_IN 25

const char *mix_what_name(enum intent_what w)
{
	static const char *const names[IW__COUNT] = {
		"user deposit",      "user withdrawal", "overdraft",
		"recurring deposit", "referral payout", "agent rebalance",
	};
	return (unsigned)w < IW__COUNT ? names[w] : "?";
}

/* splitmix64: small, seedable, good enough for a demo's dice. */
static uint64_t rnd(struct mix *m)
{
	uint64_t z = (m->rng += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static uint64_t below(struct mix *m, uint64_t n)
{
	return n ? rnd(m) % n : 0;
}

void mix_init(struct mix *m, const struct population *pop, uint64_t seed)
{
	memset(m, 0, sizeof(*m));
	m->pop = pop;
	m->rng = seed;
}

static void base(struct mix *m, struct intent *it, enum intent_what w)
{
	memset(it, 0, sizeof(*it));
	it->what = w;
	it->signer = m->pop->signers[below(m, m->pop->n_signers)];
	m->seq[w]++;
}

static const struct mix_customer *customer(struct mix *m)
{
	return &m->pop->customers[below(m, m->pop->n_customers)];
}

static void to_customer(struct intent *it, const struct mix_customer *c, int64_t amount)
{
	snprintf(it->user, sizeof(it->user), "%s", c->user);
	snprintf(it->account, sizeof(it->account), "%s", c->account);
	snprintf(it->amount, sizeof(it->amount), "%" PRId64, amount);
}

static void deposit(struct mix *m, struct intent *it)
{
	base(m, it, IW_DEPOSIT);
	it->kind = "DEPOSIT";
	to_customer(it, customer(m), (int64_t)(10 + below(m, 491)) * XLM);
	snprintf(it->record, sizeof(it->record), "dep-%06" PRIu64, m->seq[IW_DEPOSIT]);
}

/*
 * Withdrawals stay far below what customers hold (1..50 XLM against
 * balances of thousands), so only the deliberate overdraft can fail.
 */
static void withdraw(struct mix *m, struct intent *it)
{
	const struct mix_customer *c = customer(m);

	if (below(m, OVERDRAFT_ONE_IN) == 0) {
		base(m, it, IW_OVERDRAFT);
		it->kind = "WITHDRAW";
		to_customer(it, c, c->balance + 1000000 * XLM); /* far beyond any balance */
		snprintf(it->record, sizeof(it->record), "wdx-%06" PRIu64, m->seq[IW_OVERDRAFT]);
		it->expect_fail = true;
		return;
	}
	base(m, it, IW_WITHDRAW);
	it->kind = "WITHDRAW";
	to_customer(it, c, (int64_t)(1 + below(m, 50)) * XLM);
	snprintf(it->record, sizeof(it->record), "wd-%06" PRIu64, m->seq[IW_WITHDRAW]);
}

/* A conversion pays its referrer and its referee: two ops, one per leg. */
static int referral(struct mix *m, struct intent out[2])
{
	static const char *const legs[2] = {"referrer", "referee"};
	const struct mix_customer *who[2] = {customer(m), customer(m)};
	uint64_t conv;

	base(m, &out[0], IW_REFERRAL);
	conv = m->seq[IW_REFERRAL];
	out[1] = out[0];
	for (int i = 0; i < 2; i++) {
		out[i].kind = "REFERRAL_REWARD";
		out[i].via_http = true;
		to_customer(&out[i], who[i], (int64_t)(i == 0 ? 10 : 5) * XLM);
		snprintf(out[i].conversion, sizeof(out[i].conversion), "conv-%06" PRIu64, conv);
		snprintf(out[i].leg, sizeof(out[i].leg), "%s", legs[i]);
		snprintf(out[i].record, sizeof(out[i].record), "%s:%s", out[i].conversion, legs[i]);
	}
	return 2;
}

static void rebalance(struct mix *m, struct intent *it)
{
	base(m, it, IW_REBALANCE);
	it->kind = "REBALANCE";
	it->via_http = true;
	snprintf(it->user, sizeof(it->user), "%s", m->pop->agents[below(m, m->pop->n_agents)]);
	snprintf(it->amount, sizeof(it->amount), "%" PRId64,
		 (int64_t)(1000 + below(m, 4001)) * XLM);
	snprintf(it->record, sizeof(it->record), "rb-%06" PRIu64, m->seq[IW_REBALANCE]);
}

int mix_next(struct mix *m, struct intent out[2])
{
	unsigned total = 0, pick;

	for (size_t i = 0; i < sizeof(steady) / sizeof(steady[0]); i++)
		total += steady[i].weight;
	pick = (unsigned)below(m, total);
	for (size_t i = 0; i < sizeof(steady) / sizeof(steady[0]); i++) {
		if (pick >= steady[i].weight) {
			pick -= steady[i].weight;
			continue;
		}
		switch (steady[i].what) {
		case IW_WITHDRAW:
			withdraw(m, &out[0]);
			return 1;
		case IW_REFERRAL:
			return referral(m, out);
		case IW_REBALANCE:
			rebalance(m, &out[0]);
			return 1;
		default:
			break;
		}
		break;
	}
	deposit(m, &out[0]);
	return 1;
}

int mix_recurring(struct mix *m, int plans, struct intent *out, int cap)
{
	static const int64_t amounts[3] = {25 * XLM, 50 * XLM, 100 * XLM};
	int n = 0;

	m->rounds++;
	for (int p = 0; p < plans && n < cap; p++, n++) {
		const struct mix_customer *c = &m->pop->customers[(size_t)p % m->pop->n_customers];

		base(m, &out[n], IW_RECURRING);
		out[n].kind = "DEPOSIT";
		out[n].priority = "LOW"; /* a scheduled top-up can wait out congestion */
		to_customer(&out[n], c, amounts[p % 3]);
		snprintf(out[n].record, sizeof(out[n].record), "rec-%03d-%04" PRIu64, p, m->rounds);
	}
	return n;
}

int mix_plans_for(double rate, double share)
{
	double plans = rate * share * MIX_RECURRING_S;

	return plans < 1 ? 1 : (int)lround(plans);
}

int intent_payload(const struct intent *it, char *buf, size_t cap)
{
	int n;

	if (it->what == IW_REBALANCE)
		n = snprintf(buf, cap, "{\"amount\": \"%s\"}", it->amount);
	else if (it->what == IW_REFERRAL)
		n = snprintf(buf, cap,
			     "{\"account\": \"%s\", \"amount\": \"%s\", \"conversion_id\": \"%s\", "
			     "\"leg\": \"%s\"}",
			     it->account, it->amount, it->conversion, it->leg);
	else
		n = snprintf(buf, cap, "{\"account\": \"%s\", \"amount\": \"%s\"}", it->account,
			     it->amount);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}
