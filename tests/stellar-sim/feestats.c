/*
 * feestats.c - getFeeStats like stellar-rpc's feewindow: the inclusion fees
 * actually charged in the last N ledgers (10 classic, 50 Soroban by
 * default), per lane. Soroban records the whole tx's inclusion fee, classic
 * the fee per operation. Percentiles are nearest-rank (k = ceil(p*n/100),
 * value sorted[k-1]); mode is the most frequent value, the smallest on a
 * tie. An empty window gives all zeros, ledgerCount 0 included. Under
 * ingest lag the window ends at the view's ledger.
 */
#include "tests/stellar-sim/chain_state.h"

#include <stdio.h>
#include <stdlib.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static json_t *str_i64(int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%lld", (long long)v);
	return json_string(b);
}

static int64_t nearest_rank(const int64_t *v, size_t n, unsigned p)
{
	size_t k = (p * n + 99) / 100;

	return n ? v[k ? k - 1 : 0] : 0;
}

static int64_t mode_of(const int64_t *v, size_t n)
{
	size_t i = 0, best_n = 0;
	int64_t best = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && v[j] == v[i])
			j++;
		if (j - i > best_n) {
			best_n = j - i;
			best = v[i];
		}
		i = j;
	}
	return best;
}

/* The lane's distribution over the window ending at ledger `view`. */
static json_t *distribution(bool soroban, uint32_t view)
{
	static const unsigned ps[] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99};
	unsigned window = soroban ? g_chain.cfg.fee_window_soroban : g_chain.cfg.fee_window_classic;
	size_t n = 0, cap = 0, i;
	int64_t *v = NULL;
	unsigned ledgers = 0;
	uint32_t s;
	json_t *o = json_object();
	char name[8];

	for (s = view; s >= g_chain.genesis && ledgers < window; s--) {
		struct ledger *l = chain_ledger(s);
		const int64_t *f;
		uint32_t m;

		if (!l)
			break;
		ledgers++;
		f = soroban ? l->fees_soroban : l->fees_classic;
		m = soroban ? l->n_soroban : l->n_classic;
		if (n + m > cap) {
			int64_t *nv = realloc(v, (n + m + 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = n + m + 64;
		}
		for (i = 0; i < m; i++)
			v[n++] = f[i];
		if (s == 0)
			break;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_i64);
	else
		ledgers = 0;
	json_object_set_new(o, "max", str_i64(n ? v[n - 1] : 0));
	json_object_set_new(o, "min", str_i64(n ? v[0] : 0));
	json_object_set_new(o, "mode", str_i64(mode_of(v, n)));
	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		snprintf(name, sizeof(name), "p%u", ps[i]);
		json_object_set_new(o, name, str_i64(nearest_rank(v, n, ps[i])));
	}
	json_object_set_new(o, "transactionCount", str_i64((int64_t)n));
	json_object_set_new(o, "ledgerCount", json_integer(ledgers));
	free(v);
	return o;
}

json_t *chain_fee_stats(unsigned lag)
{
	json_t *o = json_object();
	uint32_t view;

	pthread_mutex_lock(&g_chain.lock);
	view = chain_view_ledger(lag);
	json_object_set_new(o, "sorobanInclusionFee", distribution(true, view));
	json_object_set_new(o, "inclusionFee", distribution(false, view));
	json_object_set_new(o, "latestLedger", json_integer(view));
	pthread_mutex_unlock(&g_chain.lock);
	return o;
}
