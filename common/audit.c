/*
 * audit.c - see audit.h. Events are kept compact (no body: the chain hash
 * is recomputed when an event is added), sorted by id to drop duplicates,
 * by (op, seq) for the paths and by (chain, seq) for the links.
 */
#include "common/audit.h"

#include "common/lifecycle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item {
	int64_t id, op_id, chain_seq, at_us;
	int32_t seq;
	uint32_t chain; /* index into chains[] */
	char type[EVENT_TYPE_MAX + 1];
	char from[16], to[16];
	uint8_t prev[32], hash[32];
	bool hash_ok; /* hash == SHA-256(prev || canonical) */
};

struct head {
	int64_t seq; /* 0 = no head expected */
	uint8_t hash[32];
	int64_t last_seq; /* the newest link seen (after audit_finish) */
	uint8_t last_hash[32];
};

struct audit {
	struct item *v;
	size_t n, cap;
	char (*chains)[EVENT_CHAIN_MAX + 1];
	struct head *heads; /* [cap_chains] */
	size_t n_chains, cap_chains;
};

struct audit *audit_new(void)
{
	return calloc(1, sizeof(struct audit));
}

void audit_free(struct audit *a)
{
	if (!a)
		return;
	free(a->v);
	free(a->chains);
	free(a->heads);
	free(a);
}

static long chain_index(struct audit *a, const char *chain)
{
	for (size_t i = 0; i < a->n_chains; i++)
		if (!strcmp(a->chains[i], chain))
			return (long)i;
	if (a->n_chains == a->cap_chains) {
		size_t cap = a->cap_chains ? 2 * a->cap_chains : 16;
		void *p = realloc(a->chains, cap * sizeof(*a->chains));
		void *h = p ? realloc(a->heads, cap * sizeof(*a->heads)) : NULL;
		if (p)
			a->chains = p;
		if (!h)
			return -1;
		a->heads = h;
		a->cap_chains = cap;
	}
	snprintf(a->chains[a->n_chains], sizeof(a->chains[0]), "%s", chain);
	a->heads[a->n_chains].seq = 0;
	a->heads[a->n_chains].last_seq = 0;
	return (long)a->n_chains++;
}

int audit_add(struct audit *a, const struct event_rec *e)
{
	struct event_rec copy = *e;
	struct item *it;
	long c;

	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 256;
		void *p = realloc(a->v, cap * sizeof(*a->v));
		if (!p)
			return -ENOMEM;
		a->v = p;
		a->cap = cap;
	}
	if ((c = chain_index(a, e->chain)) < 0 || event_seal(&copy, e->prev))
		return -ENOMEM;
	it = &a->v[a->n++];
	*it = (struct item){.id = e->id,
			    .op_id = e->op_id,
			    .chain_seq = e->chain_seq,
			    .at_us = e->at_us,
			    .seq = e->seq,
			    .chain = (uint32_t)c,
			    .hash_ok = !memcmp(copy.hash, e->hash, 32)};
	memcpy(it->type, e->type, sizeof(it->type));
	memcpy(it->from, e->from, sizeof(it->from));
	memcpy(it->to, e->to, sizeof(it->to));
	memcpy(it->prev, e->prev, 32);
	memcpy(it->hash, e->hash, 32);
	return 0;
}

int audit_expect_head(struct audit *a, const char *chain, int64_t seq, const uint8_t hash[32])
{
	long c = chain_index(a, chain);

	if (c < 0)
		return -ENOMEM;
	a->heads[c].seq = seq;
	memcpy(a->heads[c].hash, hash, 32);
	return 0;
}

static int by_id(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	return (a->id > b->id) - (a->id < b->id);
}

static int by_op(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	if (a->op_id != b->op_id)
		return (a->op_id > b->op_id) - (a->op_id < b->op_id);
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static int by_chain(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	if (a->chain != b->chain)
		return (a->chain > b->chain) - (a->chain < b->chain);
	return (a->chain_seq > b->chain_seq) - (a->chain_seq < b->chain_seq);
}

static void problem(struct audit_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->first[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->first, sizeof(r->first), fmt, ap);
	va_end(ap);
}

static bool same_content(const struct item *a, const struct item *b)
{
	return a->op_id == b->op_id && a->seq == b->seq && !strcmp(a->type, b->type) &&
	       !memcmp(a->hash, b->hash, 32) && a->chain_seq == b->chain_seq;
}

/* Sort by id and drop repeats of one event (at least once); count conflicts. */
static void dedupe(struct audit *a, struct audit_report *r)
{
	size_t k = 0;

	qsort(a->v, a->n, sizeof(*a->v), by_id);
	for (size_t i = 0; i < a->n; i++) {
		if (k && a->v[k - 1].id == a->v[i].id) {
			if (same_content(&a->v[k - 1], &a->v[i])) {
				r->duplicates++;
			} else {
				r->conflicts++;
				problem(r, "event %lld: two different contents under one id",
					(long long)a->v[i].id);
			}
			continue;
		}
		a->v[k++] = a->v[i];
	}
	a->n = k;
	r->events = k;
}

static bool status_of(const char *s, enum op_status *st)
{
	return *s && !op_status_parse(s, st);
}

/* One op's events, a[0..n), in seq order. */
static void check_op(const struct item *a, size_t n, struct audit_report *r)
{
	enum op_status cur = OP_PENDING, from, to;
	bool started = false;

	for (size_t i = 0; i < n; i++) {
		if (a[i].seq != (int32_t)(i + 1)) {
			r->gaps++;
			problem(r, "op %lld: event %lld has sequence %d where %zu was due",
				(long long)a[i].op_id, (long long)a[i].id, a[i].seq, i + 1);
			return;
		}
		if (!*a[i].from && !*a[i].to)
			continue; /* an annotation: no move */
		bool ok = status_of(a[i].to, &to) &&
			  (!started ? !*a[i].from && to == OP_PENDING
				    : status_of(a[i].from, &from) && from == cur &&
					      op_transition_allowed(from, to));
		if (!ok) {
			r->illegal++;
			problem(r, "op %lld: event %lld (%s) moves %s -> %s after %s",
				(long long)a[i].op_id, (long long)a[i].id, a[i].type,
				*a[i].from ? a[i].from : "nothing", *a[i].to ? a[i].to : "nothing",
				started ? op_status_name(cur) : "nothing");
			return;
		}
		cur = to;
		started = true;
	}
}

static void check_paths(struct audit *a, struct audit_report *r)
{
	size_t i = 0, j;

	qsort(a->v, a->n, sizeof(*a->v), by_op);
	while (i < a->n) {
		for (j = i; j < a->n && a->v[j].op_id == a->v[i].op_id; j++)
			;
		if (a->v[i].op_id) {
			r->ops++;
			check_op(&a->v[i], j - i, r);
		}
		i = j;
	}
}

/* The last link seen of a chain against the head the table recorded. */
static void check_head(struct audit *a, const struct item *last, struct audit_report *r)
{
	struct head *h = &a->heads[last->chain];

	h->last_seq = last->chain_seq;
	memcpy(h->last_hash, last->hash, 32);
	if (!h->seq || (h->seq == last->chain_seq && !memcmp(h->hash, last->hash, 32)))
		return;
	r->broken++;
	problem(r, "chain %s: ends at link %lld, the recorded head is link %lld%s",
		a->chains[last->chain], (long long)last->chain_seq, (long long)h->seq,
		h->seq == last->chain_seq ? " with another hash" : "");
}

static void check_chains(struct audit *a, struct audit_report *r)
{
	static const uint8_t zero[32];
	size_t i = 0;

	qsort(a->v, a->n, sizeof(*a->v), by_chain);
	for (; i < a->n; i++) {
		const struct item *it = &a->v[i];
		bool first = !i || a->v[i - 1].chain != it->chain;
		const uint8_t *want = first ? zero : a->v[i - 1].hash;
		int64_t due = first ? 1 : a->v[i - 1].chain_seq + 1;

		if (first)
			r->chains++;
		if (i + 1 == a->n || a->v[i + 1].chain != it->chain)
			check_head(a, it, r);
		if (it->chain_seq != due || memcmp(it->prev, want, 32) || !it->hash_ok) {
			r->broken++;
			problem(r, "chain %s: link %lld (event %lld) %s", a->chains[it->chain],
				(long long)it->chain_seq, (long long)it->id,
				it->chain_seq != due ? "is out of sequence (a link is missing)"
				: !it->hash_ok       ? "does not hash to its recorded hash"
						     : "does not follow the previous link's hash");
		}
	}
}

void audit_finish(struct audit *a, struct audit_report *r)
{
	memset(r, 0, sizeof(*r));
	dedupe(a, r);
	check_chains(a, r);
	check_paths(a, r); /* last: leaves the events in (op, seq) order for audit_op_steps */
}

size_t audit_op_steps(const struct audit *a, int64_t op_id, struct audit_step *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct item *it = &a->v[i];
		if (it->op_id != op_id)
			continue;
		if (n < cap) {
			out[n] = (struct audit_step){
				.id = it->id, .seq = it->seq, .at_us = it->at_us};
			memcpy(out[n].type, it->type, sizeof(out[n].type));
			memcpy(out[n].from, it->from, sizeof(out[n].from));
			memcpy(out[n].to, it->to, sizeof(out[n].to));
		}
		n++;
	}
	return n;
}

size_t audit_chain_ends(const struct audit *a, struct audit_chain_end *out, size_t cap)
{
	size_t n = 0;

	for (size_t c = 0; c < a->n_chains; c++) {
		if (!a->heads[c].last_seq)
			continue;
		if (n < cap) {
			snprintf(out[n].chain, sizeof(out[n].chain), "%s", a->chains[c]);
			out[n].seq = a->heads[c].last_seq;
			memcpy(out[n].hash, a->heads[c].last_hash, 32);
		}
		n++;
	}
	return n;
}
