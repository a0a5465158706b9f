/*
 * send.c - one intent to outboxd through its public entry points (load.h):
 * the core application's SQL transaction (app.c), or, for the intents of
 * other services (via_http: referral payouts, treasury rebalances), the
 * gateway's HTTP enqueue (http.c) when the driver was given one.
 */
#include "ops/demo/app.h"
#include "ops/demo/http.h"
#include "ops/demo/load.h"

#include <inttypes.h>
#include <stdio.h>

static int fail(const struct intent *it, const struct outbox_error *err)
{
	fprintf(stderr, "outbox-demo-load: enqueue of %s %s:%s:%s failed: %s\n",
		mix_what_name(it->what), it->kind, it->user, it->record, err->msg);
	return -1;
}

static int enqueue(const struct load_sinks *s, const struct intent *it, struct app_result *r,
		   struct outbox_error *err)
{
	if (it->via_http && s->gw)
		return gw_enqueue(s->gw, it, r, err);
	return app_enqueue(s->conn, it, r, err);
}

int load_send(const struct load_sinks *s, struct mix *m, const struct intent *it,
	      struct load_tally *t)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct app_result r, again;

	if (enqueue(s, it, &r, &err))
		return fail(it, &err);
	if (!r.created) {
		/* Every business record is new: an existing op means a bug in the mix. */
		outbox_error_set(&err, OUTBOX_ESTATE, "", "op %" PRId64 " already existed",
				 r.op_id);
		return fail(it, &err);
	}
	t->sent++;
	t->by_what[it->what]++;
	t->via_http += it->via_http && s->gw;
	/* The client timed out and sent the same request again: same op, nothing new. */
	if (m->seq[it->what] % LOAD_RETRY_ONE_IN == 0) {
		if (enqueue(s, it, &again, &err))
			return fail(it, &err);
		if (again.created || again.op_id != r.op_id) {
			outbox_error_set(&err, OUTBOX_ESTATE, "",
					 "the retry made op %" PRId64
					 " (created=%d), not op %" PRId64,
					 again.op_id, again.created, r.op_id);
			return fail(it, &err);
		}
		t->retries++;
	}
	return 0;
}
