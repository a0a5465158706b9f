/*
 * relay.h - outbox.events to Kafka, from the role that owns the rows.
 *
 * One relay per process that seals chains (common/events.h explains the
 * chains): a worker relays the op events of the vshards it leases, an
 * oracle its fee events. relay_tick() runs every turn of the owner's loop
 * and never blocks; the owner's loop also watches relay_fd(), which
 * librdkafka makes readable when delivery reports wait.
 *
 *   seal     read the unsealed rows of its chains in id order, link them
 *            (hash chain), write the links back (outbox.events_seal: checked
 *            against the chain's head, fenced by the lease for a vshard;
 *            outbox.events_seal_vshards for the vshard chains of one read
 *            at once, chain by chain on the read after one that failed);
 *   produce  the sealed rows in that order through an idempotent producer:
 *            key the op id (or "fee"), value the CloudEvent (structured
 *            mode), headers ce_id, ce_type, ce_subject and content-type. A
 *            full producer queue stops producing until it drains; the rest
 *            waits in order;
 *   mark     each chain's published cursor (outbox.chain_heads.published_seq)
 *            over the links Kafka acknowledged with every link before them
 *            (common/publish_window.h: reports of one chain come back out of
 *            order across partitions), many chains per statement
 *            (outbox.events_published_upto); no event row is written;
 *   resend   after a start, a lease taken over, a failed delivery, a cursor
 *            that could not move or a lost connection, once nothing is in
 *            flight: every sealed link past its chain's cursor is produced
 *            again, in chain order. At least once:
 *            consumers dedupe by the CloudEvent id. No seal read runs while
 *            a resend is due: a predecessor may have sealed an op's first
 *            events and died before producing them, and the op's later
 *            events must not reach the topic before them.
 *
 * Dispatch never waits for Kafka: a broker outage only grows the producer's
 * queue (messages never time out, so per-key order survives the outage)
 * and, once it is full, the backlog of sealed rows in PostgreSQL. The relay
 * has its own PostgreSQL connection, so its statements never queue in front
 * of dispatch writes.
 *
 * Metrics (the owner's stats block): events sealed, produced, published,
 * delivery failures; the producer's queue and the unpublished backlog.
 */
#ifndef OUTBOX_COMMON_RELAY_H
#define OUTBOX_COMMON_RELAY_H

#include "common/error.h"
#include "common/shm/stats.h"

#include <stdbool.h>
#include <stdint.h>

struct relay;

struct relay_config {
	const char *brokers;  /* bootstrap servers; required */
	const char *topic;    /* OUTBOX_KAFKA_TOPIC */
	const char *database; /* conninfo of the relay's own connection */
	const char
		*client; /* e.g. "worker-3": the producer's client.id and the connection's name */
	int ep;          /* the owner's epoll set: the relay registers its fds in it */
	uint64_t tag_pg; /* epoll tags of its PostgreSQL socket and of relay_fd() */
	uint64_t tag_kafka;
	struct shm_stats_block *stats; /* may be NULL */
};

/* A relay (not connected yet: relay_tick connects), or NULL with err filled. */
struct relay *relay_new(const struct relay_config *cfg, struct outbox_error *err);

/*
 * The owner stops: for at most ms, read its chains until a read finds
 * nothing unsealed, seal and produce what it found, wait for the delivery
 * reports and move the published cursors. Call it after the owner's last
 * event-writing statement has committed and while its leases still hold
 * (a seal is fenced by them). True when everything the owner wrote is
 * published; false (logged once) leaves the rest to the next owner of the
 * chains, whose start resends it. Without its database connection it
 * returns false at once: nothing can be read or marked. It drives its own
 * descriptors, not the owner's loop. NULL is allowed.
 */
bool relay_drain(struct relay *r, int ms);

/*
 * Flush for at most flush_ms (what was produced gets its delivery reports
 * and is marked), then free. NULL is allowed.
 */
void relay_free(struct relay *r, int flush_ms);

/*
 * The chains it seals and relays. Vshard chains are fenced by the lease:
 * owner and the (vshard, epoch) pairs held now; set them whenever they
 * change (a lease taken starts a resend: a predecessor may have sealed rows
 * it never published). A named chain ("oracle:<instance>") needs no lease.
 */
void relay_set_vshards(struct relay *r, const char *owner, const int *vshards,
		       const int64_t *epochs, int n);
void relay_set_chain(struct relay *r, const char *chain);

/*
 * A statement that writes events of the relay's named chain (the oracle's
 * outbox.fee_event), sent on the relay's connection so it orders before the
 * sealing that follows. 0, or -ENOTCONN / -ENOMEM (the event is not written).
 */
int relay_write(struct relay *r, const char *sql, int n, const char *const *params);

/* Drive it: call every loop turn, and when its fds are ready (tag_pg: pass the events). */
void relay_tick(struct relay *r, int64_t now_ms);
void relay_on_ready(struct relay *r, uint64_t tag, uint32_t events);

/* Milliseconds until relay_tick must run anyway. */
int relay_timeout_ms(const struct relay *r, int64_t now_ms);

/* Sealed, produced and not yet acknowledged; for tests and stats. */
uint64_t relay_in_flight(const struct relay *r);

#endif
