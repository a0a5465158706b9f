/*
 * poll.c - one poll round: getFeeStats and getLatestLedger, started
 * together on the asynchronous RPC client; the round completes when both
 * callbacks have run (they run inside rpc_client_perform, in the oracle's
 * own loop, never concurrently).
 */
#include "oracle/oracle.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/shm/stats.h"

#include <stdio.h>

static void round_done(struct oracle *o)
{
	uint64_t ms = (mono_ns() - o->round_started_ns) / 1000000;

	o->in_flight = false;
	if (o->loop.draining)
		return;
	stats_hist_observe(o->stats, MET_FEE_POLL_MS, ms);
	if (o->failed) {
		stats_counter_add(o->stats, MET_FEE_POLL_FAILURES, 1);
		o->failures_in_row++;
		/* First failure of a streak, then every 10th: visible, not noisy. */
		if (o->failures_in_row == 1 || o->failures_in_row % 10 == 0)
			log_warn("fee poll failed (%llu in a row), snapshot not republished: %s",
				 (unsigned long long)o->failures_in_row, o->fail_msg);
		return;
	}
	if (o->failures_in_row)
		log_info("fee poll recovered after %llu failures",
			 (unsigned long long)o->failures_in_row);
	o->failures_in_row = 0;
	oracle_publish(o);
}

static void on_result(struct rpc_result *res, void *arg)
{
	struct oracle *o = arg;

	if (res->status != RPC_OK) {
		if (!o->failed)
			snprintf(o->fail_msg, sizeof(o->fail_msg), "%s: %s: %s",
				 rpc_method_name(res->method), rpc_status_name(res->status),
				 res->err.msg);
		o->failed = true;
	} else if (res->method == RPC_GET_FEE_STATS) {
		o->fee_stats = res->u.fee_stats;
	} else {
		o->latest = res->u.latest_ledger;
	}
	if (--o->pending == 0)
		round_done(o);
}

void oracle_poll_start(struct oracle *o)
{
	static const enum rpc_method methods[] = {RPC_GET_FEE_STATS, RPC_GET_LATEST_LEDGER};
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (o->in_flight || o->loop.draining)
		return;
	o->in_flight = true;
	o->failed = false;
	o->fail_msg[0] = '\0';
	o->pending = 1; /* guard: the round cannot complete while we are still starting it */
	o->round_started_ns = mono_ns();
	stats_counter_add(o->stats, MET_FEE_POLLS, 1);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		struct rpc_request req = {.method = methods[i]};

		if (rpc_call_start(o->rpc, &req, on_result, o, &err)) {
			if (!o->failed)
				snprintf(o->fail_msg, sizeof(o->fail_msg), "%s: %s",
					 rpc_method_name(methods[i]), err.msg);
			o->failed = true;
			continue;
		}
		o->pending++;
	}
	if (--o->pending == 0)
		round_done(o);
}
