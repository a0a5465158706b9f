/*
 * events.h - an outbox.events row as it leaves PostgreSQL: its CloudEvents
 * 1.0 form on the Kafka topic, and its link in a tamper-evident hash chain.
 * Pure: no I/O (jansson values in and out).
 *
 * The event stream (schema/0009_event_relay.sql, common/relay.h):
 *   - every lifecycle transition of an op is a row of outbox.events, written
 *     in the transaction that made it; an oracle that relays (with
 *     OUTBOX_KAFKA_BROKERS set) adds FEE_SNAPSHOT rows;
 *   - the one writer of a chain seals its rows in order: each vshard's op
 *     events form the chain "vshard:<v>" (sealed by the worker holding the
 *     vshard's lease), an oracle's fee events the chain "oracle:<instance>";
 *   - a sealed row is produced to Kafka (key: the op id, or "fee"), and
 *     marked published from the delivery report. At least once: consumers
 *     dedupe by the CloudEvent id.
 *
 * THE CHAIN. hash(n) = SHA-256(hash(n - 1) || canonical(event n)), with
 * hash(0) = 32 zero bytes, where canonical(event) is the compact JSON
 * object, keys sorted, of exactly these members:
 *
 *	{"body": <the row's body>, "from": <status or null>, "id": "<event id>",
 *	 "op": <op id or null>, "seq": <per-op sequence or null>,
 *	 "time": "<RFC 3339 UTC, 6 fraction digits>", "to": <status or null>,
 *	 "type": "<TYPE>"}
 *
 * Everything in it travels in the CloudEvent too, so a verifier rebuilds
 * the chain from the topic exactly as from the table (outboxctl audit
 * --verify): a changed, removed or reordered row breaks the next link.
 */
#ifndef OUTBOX_COMMON_EVENTS_H
#define OUTBOX_COMMON_EVENTS_H

#include "common/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVENT_HASH_HEX  65
#define EVENT_TYPE_MAX  48
#define EVENT_CHAIN_MAX 64
#define EVENT_TIME_MAX  64 /* "2026-12-03T13:05:07.123456Z" and room */

/* One row of outbox.events with what the CloudEvent adds from its op. */
struct event_rec {
	int64_t id;
	int64_t op_id; /* 0: not an op's event (FEE_SNAPSHOT) */
	int32_t seq;   /* the op's event sequence, 1.. (0 without an op) */
	char type[EVENT_TYPE_MAX + 1];
	char from[16], to[16]; /* statuses, "" when NULL */
	int64_t at_us;         /* unix microseconds */
	json_t *body;          /* an object; owned by the record */
	/* From the op (identity columns never change); empty without an op. */
	char idempotency_key[421];
	char kind[24];
	char priority[12];
	/* The chain link, once sealed. */
	char chain[EVENT_CHAIN_MAX + 1];
	int64_t chain_seq;
	uint8_t prev[32], hash[32];
};

void event_rec_clear(struct event_rec *e); /* releases body */

/* "2026-12-03T13:05:07.123456Z"; false when at_us is out of range. */
bool event_time_format(int64_t at_us, char out[EVENT_TIME_MAX]);

/* canonical(e) (see above) as a malloc'd NUL-terminated string, or NULL (ENOMEM). */
char *event_canonical(const struct event_rec *e);

/* e->hash = SHA-256(prev || canonical(e)); e->prev = prev. 0 or -ENOMEM. */
int event_seal(struct event_rec *e, const uint8_t prev[32]);

/* "outbox.op.confirmed.v1" for CONFIRMED, "outbox.fee.snapshot.v1" for FEE_SNAPSHOT. */
void event_ce_type(const char *type, char *out, size_t cap);

/*
 * The structured-mode CloudEvent of a sealed event (a new reference):
 * specversion, id, source, type, time, subject (the op id, or "fee"),
 * datacontenttype, sequence (the per-op sequence, zero-padded to 10 digits;
 * the chain sequence for events of no op), and data: op_id,
 * idempotency_key, kind, priority, event, from, to, attempt, tx_hash, fee,
 * error (each when known), body, and chain {id, seq, prev, hash}.
 */
json_t *event_to_cloud(const struct event_rec *e, const char *source);

/*
 * The same CloudEvent as the relay produces it: the bytes of
 * json_dumps(event_to_cloud(e, source), JSON_COMPACT), written without the
 * tree. A malloc'd string, or NULL (ENOMEM, or a string that is not UTF-8).
 */
char *event_cloud_json(const struct event_rec *e, const char *source);

/*
 * The other way, for consumers of the topic: fills e from a CloudEvent this
 * project produced, validating every member it needs (hostile input: sizes,
 * types, ranges); fails with OUTBOX_EPROTO naming the member.
 */
int event_from_cloud(struct event_rec *e, const json_t *ce, struct outbox_error *err);

/* The Kafka key of an event: the op id, or "fee". */
void event_key(const struct event_rec *e, char *out, size_t cap);

#endif
