/*
 * trace.h - where the time went between an op's enqueue and its send.
 *
 * A job marks each step of its path on the monotonic clock (microseconds):
 *
 *	claim_sent  the claim statement that took it was sent
 *	claimed     the claim's answer was read (the job exists)
 *	build       build.c started on it (fee policy, account, first build)
 *	sim_sent    its simulateTransaction was sent
 *	sim_done    the simulation's answer was read
 *	rec_sent    its attempt row was sent (signed, write-ahead)
 *	rec_done    the attempt row committed: the envelope goes out now
 *
 * send_split() turns the marks and the op's age at the send into
 * consecutive parts that add up to that age, and on every new inner
 * transaction the worker writes them on one debug line (OUTBOX_LOG_LEVEL=
 * debug), `op N sent` with op_id, priority, attempt and the parts as
 * integer *_us keys (worker/README.md lists them). /metrics has each step's
 * distribution over all ops (outbox_claim_seconds, outbox_simulate_seconds,
 * outbox_attempt_write_seconds); this line explains one slow op: it shows
 * whether it waited before the claim (the enqueue's commit, the wake-up: a
 * NOTIFY or the lane watcher, a backlog), in the claim statement, in the
 * worker's queue, at the RPC node or in the write-ahead commit.
 *
 * Pure: no clock, no I/O. The age comes from two clocks (the database's
 * created_at, this host's wall clock), so it may disagree with the marks;
 * the promise is only that the parts are never negative and add up to
 * total_us.
 */
#ifndef OUTBOX_WORKER_TRACE_H
#define OUTBOX_WORKER_TRACE_H

#include <stdint.h>

struct send_marks {
	int64_t claim_sent, claimed, build, sim_sent, sim_done, rec_sent, rec_done;
};

struct send_split {
	int64_t total_us;        /* the op's age at the send: before_claim_us + the rest */
	int64_t before_claim_us; /* enqueue (or its last retry's due time) -> claim sent */
	int64_t claim_us;        /* claim sent -> answered */
	int64_t queued_us;       /* answered -> build started (the worker's queue) */
	int64_t prepare_us;      /* fee policy, the signer's account when not cached, first build */
	int64_t simulate_us;     /* simulateTransaction's round trip */
	int64_t sign_us;         /* build with the simulation, sign, attempt row sent */
	int64_t write_us;        /* the attempt row's write and commit */
};

/*
 * The parts of age_us (the op's age at rec_done, from its created_at). A
 * step whose marks run backwards counts 0; before_claim_us is what the
 * age leaves after the steps, 0 when the steps alone exceed it, and then
 * total_us is their sum.
 */
void send_split(struct send_split *s, const struct send_marks *m, int64_t age_us);

#endif
