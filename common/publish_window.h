/*
 * publish_window.h - how far one event chain is on Kafka (pure, no I/O).
 *
 * A chain's events are marked published by one cursor per chain
 * (outbox.chain_heads.published_seq): every link up to it is on the topic,
 * and a relay taking the chain over produces again only what follows it.
 * So the cursor may move over a link only once that link and every link
 * before it were acknowledged: a cursor past an unacknowledged link would
 * leave it off the topic for ever. The relay produces a chain's links in
 * chain order, but Kafka acknowledges them per partition (the key is the op),
 * so the reports of one chain come back in any order.
 *
 * A window holds the links of one chain produced since it was last reset,
 * from its first (start) on, each in flight, acknowledged or failed.
 *
 * The promise: pw_take() hands out [from, to] only when every link from
 * the window's start up to `to` was passed to pw_produced() in order and
 * then acknowledged by pw_acked(.., true), and never hands out a link twice.
 * A failed report stops the window at that link until pw_reset(); so does a
 * link produced out of order (pw_produced() refuses it: -EINVAL). Reports
 * for links the window does not hold are ignored.
 */
#ifndef OUTBOX_COMMON_PUBLISH_WINDOW_H
#define OUTBOX_COMMON_PUBLISH_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct publish_window {
	int64_t start; /* the chain seq of st[head] */
	uint8_t *st;   /* PW_* state per link, st[head .. head + n) */
	size_t head, n, cap;
	bool anchored; /* start is set: the next link must be start + n */
	bool stopped;  /* a failed report or a link out of order: nothing moves until reset */
};

/* Link seq was produced. 0; -EINVAL when it is not the next link (the
 * window stops); -ENOMEM (the window stops: the link can never be handed out). */
int pw_produced(struct publish_window *w, int64_t seq);

/* The report for link seq: acknowledged (ok) or failed. */
void pw_acked(struct publish_window *w, int64_t seq, bool ok);

/*
 * The acknowledged prefix not handed out yet: true with [*from, *to] (and
 * the window then starts after *to), false when there is none.
 */
bool pw_take(struct publish_window *w, int64_t *from, int64_t *to);

/* Links produced and not handed out (in flight, acknowledged or failed). */
size_t pw_held(const struct publish_window *w);

/* Forget every link: the next pw_produced() starts the window anywhere. */
void pw_reset(struct publish_window *w);

/* Free its memory (the window is then empty). */
void pw_free(struct publish_window *w);

#endif
