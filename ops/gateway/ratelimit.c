/*
 * ratelimit.c - one token bucket per client address (an IPv6 client: per
 * /64, what one host usually holds), in a lock-free RCU hash table
 * (liburcu's cds_lfht, urcu-memb flavour).
 *
 * Lookups and inserts from every HTTP thread run inside rcu_read_lock and
 * never block each other; a bucket's own state is behind its own small
 * mutex, which only requests of the same client share. The loop thread
 * removes buckets idle for LIMIT_IDLE_MS (cds_lfht_del, freed by call_rcu
 * after every reader left). The table is bounded: past LIMIT_MAX_CLIENTS
 * clients, new ones share one overflow bucket, so a flood of addresses
 * costs memory up to the bound and then throttles itself.
 */
#include "ops/gateway/gateway.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#define LIMIT_IDLE_MS     60000
#define LIMIT_MAX_CLIENTS 65536

struct bucket {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint8_t addr[17]; /* family byte + up to 16 address bytes */
	pthread_mutex_t lock;
	double tokens;
	int64_t at_ms;           /* last refill */
	_Atomic int64_t used_ms; /* last request, for the idle sweep */
};

struct gw_limiter {
	struct cds_lfht *ht;
	_Atomic int64_t rate, burst; /* per second, tokens */
	_Atomic long n;
	struct bucket overflow;
};

static void key_of(const struct sockaddr *sa, uint8_t key[17])
{
	memset(key, 0, 17);
	key[0] = (uint8_t)sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 8); /* the /64 */
}

static unsigned long hash_key(const uint8_t key[17])
{
	unsigned long h = 1469598103934665603UL; /* FNV-1a */

	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 1099511628211UL;
	return h;
}

static int match(struct cds_lfht_node *node, const void *key)
{
	return !memcmp(caa_container_of(node, struct bucket, node)->addr, key, 17);
}

struct gw_limiter *gw_limiter_new(void)
{
	struct gw_limiter *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->ht = cds_lfht_new_flavor(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				    &urcu_memb_flavor, NULL);
	if (!l->ht) {
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->overflow.lock, NULL);
	l->rate = 50;
	l->burst = 100;
	return l;
}

void gw_limiter_config(struct gw_limiter *l, int64_t rate, int64_t burst)
{
	atomic_store(&l->rate, rate);
	atomic_store(&l->burst, burst);
}

static struct bucket *bucket_get(struct gw_limiter *l, const uint8_t key[17], int64_t now)
{
	unsigned long h = hash_key(key);
	struct cds_lfht_iter it;
	struct cds_lfht_node *found;
	struct bucket *b;

	cds_lfht_lookup(l->ht, h, match, key, &it);
	if ((found = cds_lfht_iter_get_node(&it)))
		return caa_container_of(found, struct bucket, node);
	if (atomic_load(&l->n) >= LIMIT_MAX_CLIENTS || !(b = calloc(1, sizeof(*b))))
		return &l->overflow;
	memcpy(b->addr, key, 17);
	pthread_mutex_init(&b->lock, NULL);
	b->tokens = (double)atomic_load(&l->burst);
	b->at_ms = now;
	cds_lfht_node_init(&b->node);
	found = cds_lfht_add_unique(l->ht, h, match, key, &b->node);
	if (found != &b->node) { /* another thread added it first */
		pthread_mutex_destroy(&b->lock);
		free(b);
		return caa_container_of(found, struct bucket, node);
	}
	atomic_fetch_add(&l->n, 1);
	return b;
}

/* Refill, then take one token; the seconds until one is there when none is. */
static unsigned take(struct gw_limiter *l, struct bucket *b, int64_t now)
{
	double rate = (double)atomic_load(&l->rate), burst = (double)atomic_load(&l->burst);
	unsigned wait = 0;

	pthread_mutex_lock(&b->lock);
	if (now > b->at_ms) {
		b->tokens += rate * (double)(now - b->at_ms) / 1000.0;
		if (b->tokens > burst)
			b->tokens = burst;
		b->at_ms = now;
	}
	if (b->tokens >= 1.0)
		b->tokens -= 1.0;
	else
		wait = (unsigned)((1.0 - b->tokens) / rate) + 1;
	pthread_mutex_unlock(&b->lock);
	atomic_store_explicit(&b->used_ms, now, memory_order_relaxed);
	return wait;
}

unsigned gw_limiter_take(struct gw_limiter *l, const struct sockaddr *addr, int64_t now_ms)
{
	uint8_t key[17];
	unsigned wait;

	key_of(addr, key);
	urcu_memb_read_lock();
	wait = take(l, bucket_get(l, key, now_ms), now_ms);
	urcu_memb_read_unlock();
	return wait;
}

static void bucket_free(struct rcu_head *h)
{
	struct bucket *b = caa_container_of(h, struct bucket, rcu);

	pthread_mutex_destroy(&b->lock);
	free(b);
}

void gw_limiter_gc(struct gw_limiter *l, int64_t now_ms)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	urcu_memb_read_lock();
	/* node by node: cds_lfht_for_each_entry forms a pointer from NULL at the end */
	cds_lfht_for_each(l->ht, &it, n)
	{
		struct bucket *b = caa_container_of(n, struct bucket, node);

		if (now_ms - atomic_load_explicit(&b->used_ms, memory_order_relaxed) <
		    LIMIT_IDLE_MS)
			continue;
		if (cds_lfht_del(l->ht, &b->node) == 0) {
			atomic_fetch_sub(&l->n, 1);
			urcu_memb_call_rcu(&b->rcu, bucket_free);
		}
	}
	urcu_memb_read_unlock();
}

void gw_limiter_free(struct gw_limiter *l)
{
	if (!l)
		return;
	gw_limiter_gc(l, INT64_MAX); /* every bucket */
	urcu_memb_barrier();         /* their call_rcu callbacks ran */
	cds_lfht_destroy(l->ht, NULL);
	pthread_mutex_destroy(&l->overflow.lock);
	free(l);
}
