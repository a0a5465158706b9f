/*
 * keys.c - the API-key cache and authentication.
 *
 * The cache is an immutable array sorted by key prefix, published through
 * one RCU pointer (urcu-memb): the loop thread builds a new array from
 * outbox.api_keys() (at start, on NOTIFY outbox_keys, every
 * GW_KEYS_REFRESH_MS), swaps the pointer and frees the old array with
 * call_rcu once no HTTP thread can still read it. An HTTP thread reads it
 * inside rcu_read_lock: no lock, no write to shared memory, whatever the
 * number of threads. A revoked key is kept (marked) so that its refusal
 * says so and its audit row names it.
 *
 * Only hashes are cached; a presented key is hashed and compared in
 * constant time (common/apikey.h). Its prefix is public: it may appear in
 * audit rows, never the rest.
 */
#include "ops/gateway/gateway.h"

#include "common/log.h"

#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-memb.h>

struct api_key {
	int64_t id;
	char name[72];
	char prefix[APIKEY_PREFIX_LEN + 1];
	uint8_t hash[APIKEY_HASH_LEN];
	unsigned scopes;
	bool revoked;
};

struct key_set {
	struct rcu_head rcu;
	size_t n;
	struct api_key k[];
};

/* ---- urcu-memb registration of the HTTP threads (MHD makes them) ---- */

static pthread_key_t rcu_key;
static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;

static void rcu_thread_exit(void *unused)
{
	(void)unused;
	urcu_memb_unregister_thread();
}

static void rcu_key_make(void)
{
	pthread_key_create(&rcu_key, rcu_thread_exit);
}

void gw_rcu_thread(void)
{
	pthread_once(&rcu_once, rcu_key_make);
	if (pthread_getspecific(rcu_key))
		return;
	urcu_memb_register_thread();
	pthread_setspecific(rcu_key, (void *)1); /* unregistered by the destructor at exit */
}

/* ---- the loop thread: loading ---- */

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct api_key *)a)->prefix, ((const struct api_key *)b)->prefix);
}

static void free_set(struct rcu_head *h)
{
	struct key_set *s = caa_container_of(h, struct key_set, rcu);

	sodium_memzero(s->k, s->n * sizeof(s->k[0]));
	free(s);
}

static int row_load(struct api_key *k, const PGresult *res, int i)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	size_t hlen = 0;

	k->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
	snprintf(k->name, sizeof(k->name), "%s", PQgetvalue(res, i, 1));
	snprintf(k->prefix, sizeof(k->prefix), "%s", PQgetvalue(res, i, 2));
	if (sodium_hex2bin(k->hash, sizeof(k->hash), PQgetvalue(res, i, 3),
			   strlen(PQgetvalue(res, i, 3)), NULL, &hlen, NULL) ||
	    hlen != sizeof(k->hash))
		return -1;
	if (apikey_scopes_parse(PQgetvalue(res, i, 4), &k->scopes, &err))
		return -1;
	k->revoked = PQgetvalue(res, i, 5)[0] == 't';
	return 0;
}

int gw_keys_load(struct gateway *g, const PGresult *res)
{
	size_t n = (size_t)PQntuples(res), m = 0;
	struct key_set *s = calloc(1, sizeof(*s) + n * sizeof(s->k[0])), *old;

	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (row_load(&s->k[m], res, (int)i) == 0)
			m++;
		else
			log_warn("gateway: key row %zu is malformed: skipped", i);
	s->n = m;
	qsort(s->k, m, sizeof(s->k[0]), cmp_key);
	old = rcu_xchg_pointer(&g->keys, s);
	if (old)
		urcu_memb_call_rcu(&old->rcu, free_set);
	return 0;
}

void gw_keys_free(struct gateway *g)
{
	struct key_set *old = rcu_xchg_pointer(&g->keys, NULL);

	if (old) {
		urcu_memb_synchronize_rcu();
		free_set(&old->rcu);
	}
}

/* ---- HTTP threads: authentication ---- */

static const struct api_key *find(const struct key_set *s, const char *prefix)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(prefix, s->k[mid].prefix);

		if (c == 0)
			return &s->k[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

enum auth_result gw_keys_auth(struct gateway *g, struct gw_req *r, const char *header,
			      unsigned *scopes)
{
	uint8_t hash[APIKEY_HASH_LEN];
	const struct api_key *k;
	enum auth_result a;
	const char *key;

	*scopes = 0;
	a = gw_auth_parse(header, r->key_prefix, &key);
	if (a != AUTH_OK)
		return a;
	apikey_hash(key, APIKEY_LEN, hash);
	urcu_memb_read_lock();
	k = find(rcu_dereference(g->keys), r->key_prefix);
	if (!k || !apikey_hash_equal(hash, k->hash)) {
		a = AUTH_UNKNOWN;
	} else {
		r->key_id = k->id;
		snprintf(r->actor, sizeof(r->actor), "%s", k->name);
		a = k->revoked ? AUTH_REVOKED : AUTH_OK;
		*scopes = k->revoked ? 0 : k->scopes;
	}
	urcu_memb_read_unlock();
	sodium_memzero(hash, sizeof(hash));
	return a;
}
