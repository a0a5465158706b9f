/*
 * rpc_blocking.c - run one RPC call to completion (for CLIs and tests).
 *
 * Built on the multi engine: the call is started like any other and the
 * client's own loop is turned (rpc_client_poll) until its callback has run.
 * The transfer's own timeouts bound the wait, so this cannot hang longer
 * than connect + total timeout.
 */
#include "common/stellar/rpc.h"

#include <string.h>

struct blocking_slot {
	bool done;
	struct rpc_result *out;
};

static void on_done(struct rpc_result *res, void *arg)
{
	struct blocking_slot *slot = arg;

	rpc_result_move(slot->out, res);
	slot->done = true;
}

int rpc_call_blocking(struct rpc_client *c, const struct rpc_request *req, struct rpc_result *out,
		      struct outbox_error *err)
{
	struct blocking_slot slot = {.done = false, .out = out};
	int rc;

	rpc_result_init(out, req->method);
	rc = rpc_call_start(c, req, on_done, &slot, err);
	if (rc < 0) {
		out->status = RPC_E_PROTOCOL;
		if (err)
			out->err = *err;
		return rc;
	}
	while (!slot.done)
		rpc_client_poll(c, -1);
	if (out->status == RPC_OK)
		return 0;
	if (err)
		*err = out->err;
	return out->err.code ? out->err.code : OUTBOX_EPROTO;
}
