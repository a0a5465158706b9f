/*
 * faults.c - see faults.h. A small table (at most FAULT_MAX methods) behind
 * its own lock: fault lookups happen on every request, outside the chain
 * lock.
 */
#include "tests/stellar-sim/faults.h"
#include "tests/stellar-sim/chain.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAULT_MAX        32
#define FAULT_METHOD_MAX 48
#define FAULT_DELAY_MAX  600000

struct fault_entry {
	char method[FAULT_METHOD_MAX];
	struct fault f;
};

static struct fault_entry table[FAULT_MAX];
static size_t n_entries;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int get_rate(json_t *body, const char *name, double *out, char *errbuf, size_t errlen)
{
	json_t *v = json_object_get(body, name);

	*out = 0;
	if (!v)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1) {
		snprintf(errbuf, errlen, "%s: expected a number between 0 and 1", name);
		return -1;
	}
	*out = json_number_value(v);
	return 0;
}

/* A non-negative whole number <= max, written as an integer or e.g. 100.0. */
static bool whole(json_t *v, double max, unsigned *out)
{
	double d;

	if (!json_is_number(v))
		return false;
	d = json_number_value(v);
	if (d < 0 || d > max || d != (double)(unsigned)d)
		return false;
	*out = (unsigned)d;
	return true;
}

static const char *const known[] = {"method",
				    "delay_ms",
				    "timeout_rate",
				    "http_5xx_rate",
				    "garbage_rate",
				    "try_again_later_rate",
				    "blackhole_rate",
				    "huge_rate",
				    "deep_rate",
				    "truncated_rate",
				    "drip_rate",
				    "background_fee_load",
				    "ingest_lag_ledgers",
				    "ingest_lag_alt_ledgers",
				    NULL};

/* Fields that set a global knob rather than a method's fault entry. */
static bool global_field(const char *k)
{
	return !strcmp(k, "background_fee_load") || !strcmp(k, "ingest_lag_ledgers") ||
	       !strcmp(k, "ingest_lag_alt_ledgers");
}

/* The global knobs a body sets, validated before anything changes. */
struct globals {
	bool has_load, has_lag, two_views;
	unsigned load, lag, alt_lag;
};

/* A whole-number knob in 0..max, or -1 with "<name>: <value> is not ..." in errbuf. */
static int get_whole(json_t *body, const char *name, unsigned max, unsigned *out, char *errbuf,
		     size_t errlen)
{
	json_t *v = json_object_get(body, name);
	char *text;

	if (!v || whole(v, max, out))
		return 0;
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	snprintf(errbuf, errlen, "%s: %.32s is not an integer 0..%u", name, text ? text : "?", max);
	free(text);
	return -1;
}

static int parse_globals(json_t *body, struct globals *g, char *errbuf, size_t errlen)
{
	json_t *lag = json_object_get(body, "ingest_lag_ledgers");
	json_t *alt = json_object_get(body, "ingest_lag_alt_ledgers");

	memset(g, 0, sizeof(*g));
	g->has_load = json_object_get(body, "background_fee_load") != NULL;
	g->has_lag = lag != NULL;
	g->two_views = alt != NULL;
	if (get_whole(body, "background_fee_load", 100000, &g->load, errbuf, errlen) ||
	    get_whole(body, "ingest_lag_ledgers", VIEW_MAX_LAG, &g->lag, errbuf, errlen) ||
	    get_whole(body, "ingest_lag_alt_ledgers", VIEW_MAX_LAG, &g->alt_lag, errbuf, errlen))
		return -1;
	if (alt && !lag) {
		snprintf(errbuf, errlen,
			 "ingest_lag_alt_ledgers: only with ingest_lag_ledgers (the other view)");
		return -1;
	}
	return 0;
}

static int check_fields(json_t *body, char *errbuf, size_t errlen)
{
	const char *k;
	json_t *v;

	json_object_foreach(body, k, v)
	{
		size_t i;

		for (i = 0; known[i] && strcmp(known[i], k); i++)
			;
		if (!known[i]) {
			snprintf(errbuf, errlen, "%.64s: unknown field", k);
			return -1;
		}
	}
	return 0;
}

static int parse(json_t *body, struct fault *f, const char **method, char *errbuf, size_t errlen)
{
	json_t *m = json_object_get(body, "method"), *d = json_object_get(body, "delay_ms");

	memset(f, 0, sizeof(*f));
	*method = "*";
	if (m) {
		if (!json_is_string(m) || !json_string_length(m) ||
		    json_string_length(m) >= FAULT_METHOD_MAX) {
			snprintf(errbuf, errlen, "method: expected a method name or \"*\"");
			return -1;
		}
		*method = json_string_value(m);
	}
	if (d && !whole(d, FAULT_DELAY_MAX, &f->delay_ms)) {
		snprintf(errbuf, errlen, "delay_ms: expected an integer 0..%d", FAULT_DELAY_MAX);
		return -1;
	}
	if (get_rate(body, "timeout_rate", &f->timeout_rate, errbuf, errlen) ||
	    get_rate(body, "http_5xx_rate", &f->http_5xx_rate, errbuf, errlen) ||
	    get_rate(body, "garbage_rate", &f->garbage_rate, errbuf, errlen) ||
	    get_rate(body, "try_again_later_rate", &f->try_again_later_rate, errbuf, errlen) ||
	    get_rate(body, "blackhole_rate", &f->blackhole_rate, errbuf, errlen) ||
	    get_rate(body, "huge_rate", &f->huge_rate, errbuf, errlen) ||
	    get_rate(body, "deep_rate", &f->deep_rate, errbuf, errlen) ||
	    get_rate(body, "truncated_rate", &f->truncated_rate, errbuf, errlen) ||
	    get_rate(body, "drip_rate", &f->drip_rate, errbuf, errlen))
		return -1;
	return 0;
}

static int store(const char *method, const struct fault *f, char *errbuf, size_t errlen)
{
	size_t i;

	for (i = 0; i < n_entries; i++)
		if (!strcmp(table[i].method, method))
			break;
	if (i == n_entries) {
		if (n_entries == FAULT_MAX) {
			snprintf(errbuf, errlen, "method: at most %d fault entries", FAULT_MAX);
			return -1;
		}
		n_entries++;
		snprintf(table[i].method, sizeof(table[i].method), "%s", method);
	}
	table[i].f = *f;
	return 0;
}

/* Does the body carry any per-method field (so a method entry is stored)? */
static bool has_method_fields(json_t *body)
{
	const char *k;
	json_t *v;

	json_object_foreach(body, k, v)
	{
		if (!global_field(k))
			return true;
	}
	return false;
}

static void apply_globals(const struct globals *g)
{
	if (g->has_load)
		chain_set_background_load(g->load);
	if (g->has_lag)
		view_set(g->lag, g->two_views, g->alt_lag);
}

int faults_set(json_t *body, char *errbuf, size_t errlen)
{
	struct globals g;
	struct fault f;
	const char *method;
	int rc = 0;

	if (!json_is_object(body)) {
		snprintf(errbuf, errlen, "body: expected a JSON object");
		return -1;
	}
	if (check_fields(body, errbuf, errlen) || parse_globals(body, &g, errbuf, errlen) ||
	    parse(body, &f, &method, errbuf, errlen))
		return -1;
	if (json_object_size(body) == 0) {
		pthread_mutex_lock(&lock);
		n_entries = 0;
		pthread_mutex_unlock(&lock);
		chain_set_background_load(0);
		view_set(0, false, 0);
		return 0;
	}
	/* the method entry first: it is the one part that can still fail */
	if (has_method_fields(body)) {
		pthread_mutex_lock(&lock);
		rc = store(method, &f, errbuf, errlen);
		pthread_mutex_unlock(&lock);
	}
	if (rc == 0)
		apply_globals(&g);
	return rc;
}

void faults_get(const char *method, struct fault *out)
{
	size_t i, star = FAULT_MAX;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&lock);
	for (i = 0; i < n_entries; i++) {
		if (method && !strcmp(table[i].method, method)) {
			*out = table[i].f;
			pthread_mutex_unlock(&lock);
			return;
		}
		if (!strcmp(table[i].method, "*"))
			star = i;
	}
	if (star < FAULT_MAX)
		*out = table[star].f;
	pthread_mutex_unlock(&lock);
}

bool faults_roll(double rate)
{
	return rate > 0 && sim_rand_unit() < rate;
}

json_t *faults_json(void)
{
	json_t *o = json_object();
	unsigned lag, alt;
	bool two;
	size_t i;

	/* the ingest lag, when one is in force, beside the method entries */
	view_get(&lag, &two, &alt);
	if (lag || two)
		json_object_set_new(o, "ingest_lag_ledgers", json_integer(lag));
	if (two)
		json_object_set_new(o, "ingest_lag_alt_ledgers", json_integer(alt));

	pthread_mutex_lock(&lock);
	for (i = 0; i < n_entries; i++) {
		const struct fault *f = &table[i].f;

		json_object_set_new(
			o, table[i].method,
			json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "delay_ms",
				  (int)f->delay_ms, "timeout_rate", f->timeout_rate,
				  "http_5xx_rate", f->http_5xx_rate, "garbage_rate",
				  f->garbage_rate, "try_again_later_rate", f->try_again_later_rate,
				  "blackhole_rate", f->blackhole_rate, "huge_rate", f->huge_rate,
				  "deep_rate", f->deep_rate, "truncated_rate", f->truncated_rate,
				  "drip_rate", f->drip_rate));
	}
	pthread_mutex_unlock(&lock);
	return o;
}
