/*
 * rpc.h - JSON-RPC 2.0 dispatch of the Stellar RPC methods outboxd uses,
 * in stellar-rpc's shapes (README.md lists them).
 */
#ifndef OUTBOX_SIM_RPC_H
#define OUTBOX_SIM_RPC_H

#include <jansson.h>
#include <stdbool.h>

/* Fault dice already rolled by the HTTP layer for this request. */
struct rpc_faults {
	bool try_again_later; /* sendTransaction: answer TRY_AGAIN_LATER, do nothing */
	bool blackhole;       /* sendTransaction: PENDING, never included */
};

/* The method name of a request object, or NULL when it has none. */
const char *rpc_method(json_t *req);

/* Handle one parsed request; returns the response object (new reference). */
json_t *rpc_handle(json_t *req, const struct rpc_faults *f);

/* A JSON-RPC error response with a null id (parse errors). */
json_t *rpc_error(json_t *id, int code, const char *message);

#endif
