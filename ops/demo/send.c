/*
 * send.c - one intent to outboxd through its public entry point (load.h).
 *
 * Today every intent goes through SQL, in the core application's
 * transaction (app.c). Intents marked via_http (other services: referral
 * payouts, treasury rebalances) are where the gateway's HTTP enqueue plugs
 * in once it exists; until then they take the SQL path too.
 */
#include "ops/demo/app.h"
#include "ops/demo/load.h"

#include <inttypes.h>
#include <stdio.h>

static int fail(const struct intent *it, const struct outbox_error *err)
{
	fprintf(stderr, "outbox-demo-load: enqueue of %s %s:%s:%s failed: %s\n",
		mix_what_name(it->what), it->kind, it->user, it->record, err->msg);
	return -1;
}

int load_send(PGconn *conn, struct mix *m, const struct intent *it, struct load_tally *t)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct app_result r, again;

	if (app_enqueue(conn, it, &r, &err))
		return fail(it, &err);
	if (!r.created) {
		/* Every business record is new: an existing op means a bug in the mix. */
		outbox_error_set(&err, OUTBOX_ESTATE, "", "op %" PRId64 " already existed",
				 r.op_id);
		return fail(it, &err);
	}
	t->sent++;
	t->by_what[it->what]++;
	/* The client timed out and sent the same request again: same op, nothing new. */
	if (m->seq[it->what] % LOAD_RETRY_ONE_IN == 0) {
		if (app_enqueue(conn, it, &again, &err))
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
