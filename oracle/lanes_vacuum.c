/*
 * lanes_vacuum.c - see lanes_vacuum.h.
 */
#include "oracle/lanes_vacuum.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/pgq.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct lanes_vacuum {
	struct child_ctx *ctx;
	struct pgq pg;
	int64_t next_ms; /* monotonic: when the next vacuum may start */
	bool busy;       /* a statement is on the wire */
	bool failing;    /* the last vacuum failed (logged once per episode) */
	int owner;       /* does our role own outbox.lanes: -1 not known yet, 0, 1 */
};

struct lanes_vacuum *lanes_vacuum_new(struct child_ctx *ctx, int ep, uint64_t tag)
{
	struct lanes_vacuum *lv = calloc(1, sizeof(*lv));

	if (!lv)
		return NULL;
	if (pgq_init(&lv->pg, ctx->cfg->database_url, "outboxd-lanes-vacuum", ep, tag, NULL, NULL,
		     lv)) {
		free(lv);
		return NULL;
	}
	lv->ctx = ctx;
	lv->owner = -1;
	lv->next_ms = mono_ms() + LANES_VACUUM_PERIOD_MS;
	return lv;
}

/* Only the owner may vacuum: anyone else gets a warning per call, so it asks once. */
static void on_owner(PGresult *res, void *arg)
{
	struct lanes_vacuum *lv = arg;

	lv->busy = false;
	if (!res || !pgq_ok(res) || PQntuples(res) != 1) {
		lv->next_ms = mono_ms() + LANES_VACUUM_PERIOD_MS; /* asked again then */
		return;
	}
	lv->owner = !strcmp(PQgetvalue(res, 0, 0), "t");
	if (!lv->owner)
		log_info("lanes vacuum: this role does not own outbox.lanes; autovacuum alone "
			 "keeps it (lanes_vacuum.h)");
	lv->next_ms = mono_ms();
}

static void on_vacuumed(PGresult *res, void *arg)
{
	struct lanes_vacuum *lv = arg;

	lv->busy = false;
	lv->next_ms = mono_ms() + LANES_VACUUM_PERIOD_MS;
	if (!res || !pgq_ok(res)) {
		if (!lv->failing)
			log_warn("lanes vacuum: %s (tried every %d s)",
				 res ? PQresultErrorMessage(res) : "connection lost",
				 LANES_VACUUM_PERIOD_MS / 1000);
		lv->failing = true;
		return;
	}
	if (lv->failing)
		log_info("lanes vacuum: works again");
	lv->failing = false;
}

void lanes_vacuum_tick(struct lanes_vacuum *lv)
{
	int rc;

	if (lv->owner == 0 || lv->busy || mono_ms() < lv->next_ms) {
		if (lv->pg.conn)
			pgq_tick(&lv->pg, mono_ms());
		return;
	}
	pgq_tick(&lv->pg, mono_ms());
	if (!pgq_connected(&lv->pg))
		return; /* pgq connects with its backoff; tried again next tick */
	if (lv->owner < 0)
		rc = pgq_send(
			&lv->pg,
			"SELECT pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c "
			"WHERE c.oid = 'outbox.lanes'::regclass",
			0, NULL, on_owner, lv);
	else
		rc = pgq_send(&lv->pg, "VACUUM (TRUNCATE false, SKIP_LOCKED) outbox.lanes", 0, NULL,
			      on_vacuumed, lv);
	if (rc == 0)
		lv->busy = true;
	else
		lv->next_ms = mono_ms() + LANES_VACUUM_PERIOD_MS;
}

int lanes_vacuum_timeout_ms(const struct lanes_vacuum *lv)
{
	/* an answer arrives as an event on the socket; not the owner: nothing is due */
	if (lv->busy || lv->owner == 0)
		return 1000;
	return pgq_due_wait_ms(&lv->pg, lv->next_ms, mono_ms(), 1000);
}

void lanes_vacuum_on_ready(struct lanes_vacuum *lv, uint32_t events)
{
	pgq_on_ready(&lv->pg, events);
}

void lanes_vacuum_free(struct lanes_vacuum *lv)
{
	if (!lv)
		return;
	pgq_release(&lv->pg);
	free(lv);
}
