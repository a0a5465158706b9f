/*
 * http.h - the other services' enqueue: POST /api/v1/ops on outboxd's
 * gateway with an API key of scope outbox:enqueue (outboxctl keys create).
 *
 *	POST /api/v1/ops   Authorization: Bearer <key>
 *	{"kind": ..., "userId": ..., "businessRecordId": ..., "signer": ...,
 *	 "payload": {...}, "priority": ...}
 *	-> 201 {"op": {"id": N, "status": ..., ...}, ...} a new op
 *	-> 200 the same for the op the key already names (a retried request)
 *
 * Services without access to the outbox's database (marketing's referral
 * payouts, treasury's rebalances) have no business row in its transaction:
 * their record of the request is the op itself.
 */
#ifndef OUTBOX_OPS_DEMO_HTTP_H
#define OUTBOX_OPS_DEMO_HTTP_H

#include "common/error.h"
#include "ops/demo/app.h"
#include "ops/demo/mix.h"

#include <stddef.h>

struct gw_client {
	void *curl; /* CURL *, one connection kept alive */
	void *hdrs; /* struct curl_slist * */
	char url[256];
};

/*
 * base: http://HOST:PORT of the gateway; key_file: the API key on its first
 * line (a file, so it never shows in ps). Returns 0, or -1 with errbuf set.
 */
int gw_open(struct gw_client *g, const char *base, const char *key_file, char *errbuf,
	    size_t errlen);
void gw_close(struct gw_client *g);

/* Enqueue it over HTTP; 0 with *out filled, or an OUTBOX_E* code with err naming the problem. */
int gw_enqueue(struct gw_client *g, const struct intent *it, struct app_result *out,
	       struct outbox_error *err);

#endif
