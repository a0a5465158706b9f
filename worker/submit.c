/*
 * submit.c - the raw send: one sendTransaction of an envelope, nothing else.
 *
 * Only worker/executors.c may call submit_raw_send (tests/worker.cmake fails
 * the build when any other object references the symbol): every envelope
 * that leaves the process goes through the executors table, after its
 * attempt row committed.
 */
#include "worker/worker.h"

int submit_raw_send(struct rpc_client *c, const char *envelope_b64, rpc_done_fn cb, void *arg,
		    struct outbox_error *err)
{
	struct rpc_request req = {.method = RPC_SEND_TRANSACTION, .transaction = envelope_b64};

	return rpc_call_start(c, &req, cb, arg, err);
}
