/*
 * leases.c - vshard leases: acquire, renew, release, and what losing one means.
 *
 * Worker i owns the vshards outbox_vshard_owner() gives it (common/vshard.h). At start (and after every
 * reconnect to PostgreSQL) it asks lease_acquire for each; every
 * WORKER_FOREIGN_TRY_MS it asks again for those it does not hold, which is
 * how a second instance takes over the vshards of a dead one once their
 * leases expired. Held leases are renewed every TTL/3 in one lease_renew.
 *
 * A vshard is claimable only after reconcile (reconcile.c) has adopted its
 * SUBMITTED ops. Losing a lease (renew reports it, or a fenced write fails
 * with OB403) abandons the vshard's jobs at once: no further writes (the
 * fence would refuse them anyway) and no further sends of new envelopes.
 */
#include "worker/worker.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/vshard.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct lease_ctx {
	struct worker *w;
	int vshard;
};

static bool mine(const struct worker *w, int v)
{
	return outbox_vshard_owner(v, (int)w->cfg->workers) == (int)w->ctx->index;
}

static void on_acquire(PGresult *res, void *arg)
{
	struct lease_ctx *c = arg;
	struct worker *w = c->w;
	int v = c->vshard;

	free(c);
	w->leases[v].acquiring = false;
	if (!res)
		return;
	if (!pgq_ok(res)) {
		log_warn("lease_acquire vshard %d: %s", v, PQresultErrorMessage(res));
		return;
	}
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		return; /* another live owner */
	int64_t e = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	if (e <= 0)
		return;
	if (w->leases[v].epoch != e) {
		log_info("vshard %d: lease taken, epoch %lld", v, (long long)e);
		job_abandon_vshard(w, v);
		w->leases[v].epoch = e;
		w->leases[v].reconciled = false;
	}
	if (!w->leases[v].reconciled && !w->leases[v].reconciling)
		reconcile_start(w, v);
}

static void try_acquire(struct worker *w, int v)
{
	struct lease_ctx *c;
	char vs[16], ttl[16];
	const char *p[3] = {w->owner, vs, ttl};

	if (w->leases[v].acquiring || w->leases[v].epoch)
		return;
	c = malloc(sizeof(*c));
	if (!c)
		return;
	*c = (struct lease_ctx){w, v};
	snprintf(vs, sizeof(vs), "%d", v);
	snprintf(ttl, sizeof(ttl), "%d", WORKER_LEASE_TTL_MS);
	if (pgq_send(&w->pg[0], "SELECT outbox.lease_acquire($1, $2::int, $3::int)", 3, p,
		     on_acquire, c)) {
		free(c);
		return;
	}
	w->leases[v].acquiring = true;
}

static void acquire_mine(struct worker *w)
{
	for (int v = 0; v < w->nvshards; v++)
		if (mine(w, v))
			try_acquire(w, v);
	w->next_foreign_ms = mono_ms() + WORKER_FOREIGN_TRY_MS;
	w->next_renew_ms = mono_ms() + WORKER_LEASE_TTL_MS / 3;
}

static void on_release(PGresult *res, void *arg);

/*
 * Leases of our own predecessor (same instance and worker index, another
 * pid that no longer exists on this host: the supervisor respawned us after
 * it died) are released on its behalf before we acquire, instead of waiting
 * up to a TTL for them to expire. Safe: a dead process writes nothing more,
 * and our lease_acquire (an epoch change) waits for any of its transactions
 * the server is still finishing (they hold the lease row FOR KEY SHARE,
 * schema/0006_fence_key_share.sql). Instance names are unique
 * per deployment (the instance lock makes them unique per host; the owner
 * string must not be shared across hosts either).
 */
static void on_predecessors(PGresult *res, void *arg)
{
	struct worker *w = arg;

	if (res && pgq_ok(res)) {
		for (int r = 0; r < PQntuples(res); r++) {
			const char *owner = PQgetvalue(res, r, 1);
			const char *slash = strrchr(owner, '/');
			long pid = slash ? strtol(slash + 1, NULL, 10) : 0;
			const char *p[3] = {owner, PQgetvalue(res, r, 0), PQgetvalue(res, r, 2)};

			if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
			    errno != ESRCH)
				continue;
			log_info("vshard %s: releasing the lease of dead predecessor %s", p[1],
				 owner);
			pgq_send(&w->pg[0], "SELECT outbox.lease_release($1, $2::int, $3::bigint)",
				 3, p, on_release, NULL);
		}
	}
	acquire_mine(w);
}

void leases_start(struct worker *w)
{
	char idx[16];
	const char *p[2] = {w->cfg->instance, idx};

	snprintf(idx, sizeof(idx), "%u", w->ctx->index);
	if (pgq_send(
		    &w->pg[0],
		    "SELECT vshard, owner, epoch FROM outbox.shard_leases WHERE expires_at > now() "
		    "AND split_part(owner, '/', 1) = $1 AND split_part(owner, '/', 2) = $2",
		    2, p, on_predecessors, w))
		acquire_mine(w);
}

void leases_lost(struct worker *w, int v, const char *why)
{
	if (v < 0 || v >= w->nvshards)
		return;
	if (w->leases[v].epoch)
		log_warn("vshard %d: lease lost (%s)", v, why);
	job_abandon_vshard(w, v);
	w->leases[v].epoch = 0;
	w->leases[v].reconciled = false;
}

void leases_resync(struct worker *w, int v, const char *why)
{
	if (v < 0 || v >= w->nvshards)
		return;
	log_warn("vshard %d: resync (%s)", v, why);
	stats_counter_add(w->stats, MET_RESYNCS, 1);
	job_abandon_vshard(w, v);
	w->leases[v].reconciled = false;
	/* one in flight is now stale: its answer starts it again (reconcile.c) */
	reconcile_start(w, v);
}

bool leases_arrays(const struct worker *w, char *vs, char *es, size_t cap)
{
	size_t a = 1, b = 1;

	vs[0] = es[0] = '{';
	for (int v = 0; v < w->nvshards; v++) {
		if (!w->leases[v].epoch || a + 16 > cap || b + 24 > cap)
			continue;
		a += (size_t)snprintf(vs + a, cap - a, "%s%d", a > 1 ? "," : "", v);
		b += (size_t)snprintf(es + b, cap - b, "%s%lld", b > 1 ? "," : "",
				      (long long)w->leases[v].epoch);
	}
	snprintf(vs + a, cap - a, "}");
	snprintf(es + b, cap - b, "}");
	return a > 1;
}

void leases_write_failed(struct worker *w, int v, const PGresult *res, const char *what)
{
	const char *st = pgq_sqlstate(res);

	if (!res) {
		leases_resync(w, v, "outcome of a write unknown");
		return;
	}
	if (!strcmp(st, "OB403")) {
		leases_lost(w, v, what);
		return;
	}
	log_err("vshard %d: %s failed: %s %s", v, what, st, PQresultErrorMessage(res));
	leases_resync(w, v, what);
}

static void on_renew(PGresult *res, void *arg)
{
	struct worker *w = arg;
	char *s, *end;

	w->renewing = false;
	if (!res || !pgq_ok(res) || PQntuples(res) != 1) {
		if (res)
			log_warn("lease_renew: %s", PQresultErrorMessage(res));
		return;
	}
	if (PQgetisnull(res, 0, 0))
		return;
	s = PQgetvalue(res, 0, 0); /* "{3,17}" */
	for (s += *s == '{'; *s && *s != '}';) {
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		leases_lost(w, (int)v, "renew refused");
		s = end + (*end == ',');
	}
}

static void renew(struct worker *w)
{
	size_t cap = (size_t)w->nvshards * 24 + 4, a = 0, b = 0;
	char *vs = malloc(cap), *es = malloc(cap), ttl[16];
	const char *p[4] = {w->owner, vs, es, ttl};

	if (!vs || !es)
		goto out;
	vs[a++] = '{';
	es[b++] = '{';
	for (int v = 0; v < w->nvshards; v++) {
		if (!w->leases[v].epoch)
			continue;
		a += (size_t)snprintf(vs + a, cap - a, "%s%d", a > 1 ? "," : "", v);
		b += (size_t)snprintf(es + b, cap - b, "%s%lld", b > 1 ? "," : "",
				      (long long)w->leases[v].epoch);
	}
	if (a == 1)
		goto out;
	snprintf(vs + a, cap - a, "}");
	snprintf(es + b, cap - b, "}");
	snprintf(ttl, sizeof(ttl), "%d", WORKER_LEASE_TTL_MS);
	if (!pgq_send(&w->pg[0], "SELECT outbox.lease_renew($1, $2::int[], $3::bigint[], $4::int)",
		      4, p, on_renew, w))
		w->renewing = true;
out:
	free(vs);
	free(es);
}

void leases_tick(struct worker *w, int64_t now)
{
	if (!w->pg_up || w->loop.draining)
		return;
	if (now >= w->next_renew_ms && !w->renewing) {
		w->next_renew_ms = now + WORKER_LEASE_TTL_MS / 3;
		renew(w);
	}
	if (now >= w->next_foreign_ms) {
		w->next_foreign_ms = now + WORKER_FOREIGN_TRY_MS;
		for (int v = 0; v < w->nvshards; v++) {
			if (mine(w, v))
				try_acquire(w, v);
			if (w->leases[v].epoch && !w->leases[v].reconciled &&
			    !w->leases[v].reconciling)
				reconcile_start(w, v);
		}
	}
}

static void on_release(PGresult *res, void *arg)
{
	(void)res;
	(void)arg;
}

void leases_release_all(struct worker *w)
{
	for (int v = 0; v < w->nvshards; v++) {
		char vs[16], es[24];
		const char *p[3] = {w->owner, vs, es};

		if (!w->leases[v].epoch)
			continue;
		job_abandon_vshard(w, v);
		snprintf(vs, sizeof(vs), "%d", v);
		snprintf(es, sizeof(es), "%lld", (long long)w->leases[v].epoch);
		/*
		 * On v's data connection: after the writes of v's jobs queued there.
		 * An attempt row still queued on the write-ahead or express
		 * connection may run after the release; its fence then fails
		 * (the lease has expired) and it rolls back: no envelope goes out.
		 */
		pgq_send(worker_pg(w, v), "SELECT outbox.lease_release($1, $2::int, $3::bigint)", 3,
			 p, on_release, NULL);
		w->leases[v].epoch = 0;
	}
}
