/*
 * relay.c - see relay.h. One state at a time per step: a seal read and its
 * seal statements, a resend page, a mark statement; each is one statement
 * in flight on the relay's connection, and each leaves the relay in a state
 * from which the next tick continues whatever happened (a lost connection
 * only means rows to produce again: at least once).
 */
#include "common/relay.h"

#include "common/clock.h"
#include "common/crashpoint.h"
#include "common/events.h"
#include "common/log.h"
#include "common/pgq.h"
#include "common/publish_window.h"

#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/*
 * Rows per seal read or resend page. A page was split into one seal
 * statement per chain, and each statement has a fixed cost (the fence, the
 * chain head, its plan): with 64 vshards a page of 500 left ~8 rows per
 * statement, and the relay's backend spent a third more CPU per event than
 * with 2000. The vshard chains of a page now share one statement
 * (seal_vshards) unless the last such statement failed.
 */
#define RELAY_PAGE       2000
#define RELAY_IDLE_MS    100   /* look for unsealed rows this often when there were none */
#define RELAY_MARK_MS    50    /* move the published cursors at least this often */
#define RELAY_MARK_MAX   1000  /* ... or as soon as this many delivered links wait */
#define RELAY_FIFO_MAX   5000  /* sealed rows waiting for the producer */
#define RELAY_BACKLOG_MS 5000  /* count the unpublished backlog this often */
#define RELAY_QUEUE_MAX  20000 /* the producer's own queue */
#define RELAY_VSHARDS    4096
#define RELAY_SLOTS      (RELAY_VSHARDS + 1) /* a chain's slot: vshard v at v, the named one last */
/*
 * A message's opaque is its chain's slot and link: seq << SLOT_BITS | slot.
 * 2^50 links per chain is ~35 years at a million events a second.
 */
#define SLOT_BITS 13
#define SEQ_MAX   ((INT64_C(1) << 50) - 1)
_Static_assert(sizeof(uintptr_t) >= 8, "a delivery tag needs 64 bits");

struct sealed {
	struct event_rec e;
	int64_t batch; /* the seal statement that links it, 0 once sealed, -1 none */
	/* while being sealed: its chain's vshard (-1: the named chain) and head */
	int vshard;
	int64_t head_seq;
	uint8_t head[32];
};

struct relay {
	struct relay_config cfg;
	char brokers[1024], topic[256], database[1024], client[64];
	struct pgq pg;
	rd_kafka_t *rk;
	int pipe[2];
	char source[64]; /* "urn:uuid:<deployment>", "" until read */

	char owner[128];
	int vshards[RELAY_VSHARDS];
	int64_t epochs[RELAY_VSHARDS];
	int n_vshards;
	char chain[EVENT_CHAIN_MAX + 1]; /* a named chain, "" when none */

	struct sealed *fifo; /* sealed (or being sealed), to produce, in order */
	size_t n_fifo, cap_fifo;
	int64_t next_batch;
	int seals_out;    /* seal statements in flight */
	bool seal_singly; /* the next read seals chain by chain (events_seal_vshards failed) */
	bool reading;     /* a seal read or a resend page in flight */
	bool more;        /* the last seal read was full: read again at once */
	bool resend;      /* produce every sealed unpublished row again, once it is safe */
	bool resending;   /* paging through them */
	char resend_chain[EVENT_CHAIN_MAX + 1]; /* the last link read: (chain, seq) */
	int64_t resend_seq;
	uint64_t in_flight; /* produced, no delivery report yet */
	bool queue_full;    /* the producer refused: wait for a delivery report */
	/*
	 * Per chain slot: the links produced since the last resend and their
	 * reports (win), and the delivered prefix whose cursor move is not sent
	 * yet (marks, from = 0: none). n_marks counts the links in marks.
	 */
	struct publish_window *win;
	struct mark_range {
		int64_t from, to;
	} * marks;
	size_t n_marks;
	bool marking, counting;
	/*
	 * Stopping (relay_drain): reads run back to back, and caught_up says a
	 * seal read sent after the drain began found nothing, so every event
	 * the owner committed before it is sealed or in the FIFO.
	 */
	bool draining, read_in_drain, caught_up;
	int64_t next_read_ms, next_mark_ms, next_count_ms;
	unsigned failing; /* periodic statements failed in a row (failed()) */
};

/*
 * The periodic statements (reads, resend pages, marks) run again about once
 * a second while they fail - a lock held by another session, a
 * statement_timeout - so a failure is a warning once per episode and debug
 * after that, and the first success says how many failed.
 */
static void failed(struct relay *r, const char *what, const PGresult *res)
{
	log_msg(r->failing++ ? LOG_LVL_DEBUG : LOG_LVL_WARN, "relay: %s: %s", what,
		PQresultErrorMessage(res));
}

static void succeeded(struct relay *r)
{
	if (r->failing)
		log_info("relay: statements succeed again after %u failures", r->failing);
	r->failing = 0;
}

/*
 * The owner's stats block is optional (relay.h): a relay without one, as in
 * a tool or a test, counts nothing.
 */
static void metric_add(const struct relay *r, enum shm_counter_id id, uint64_t n)
{
	if (r->cfg.stats)
		stats_counter_add(r->cfg.stats, id, n);
}

static void metric_set(const struct relay *r, enum shm_gauge_id id, int64_t v)
{
	if (r->cfg.stats)
		stats_gauge_set(r->cfg.stats, id, v);
}

/* ---- Kafka ---- */

/* The chain of slot i: "vshard:<i>", or the named chain. */
static void slot_chain(const struct relay *r, int i, char *out, size_t cap)
{
	if (i < RELAY_VSHARDS)
		snprintf(out, cap, "vshard:%d", i);
	else
		snprintf(out, cap, "%s", r->chain);
}

/* The slot of a chain the relay seals; -1 for any other. */
static int chain_slot(const struct relay *r, const char *chain)
{
	char *end;
	long v;

	if (!strncmp(chain, "vshard:", 7)) {
		v = strtol(chain + 7, &end, 10);
		return end != chain + 7 && !*end && v >= 0 && v < RELAY_VSHARDS ? (int)v : -1;
	}
	return r->chain[0] && !strcmp(chain, r->chain) ? RELAY_VSHARDS : -1;
}

/*
 * A report moves its chain's window; the acknowledged prefix it completes
 * joins the chain's cursor move waiting to be sent (mark()). A failure
 * stops the window there (nothing after it moves) and starts a resend from
 * the cursor once nothing is in flight.
 */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct relay *r = opaque;
	uint64_t tag = (uint64_t)(uintptr_t)m->_private;
	int slot = (int)(tag & ((1u << SLOT_BITS) - 1));
	int64_t seq = (int64_t)(tag >> SLOT_BITS), from, to;
	struct mark_range *mr;

	(void)rk;
	r->in_flight--;
	r->queue_full = false;
	if (slot >= RELAY_SLOTS)
		return; /* never produced with such a tag */
	pw_acked(&r->win[slot], seq, !m->err);
	if (m->err) {
		char chain[EVENT_CHAIN_MAX + 1];

		r->resend = true;
		metric_add(r, MET_EVENT_DELIVERY_FAILURES, 1);
		slot_chain(r, slot, chain, sizeof(chain));
		log_warn("relay: link %lld of %s not delivered: %s", (long long)seq, chain,
			 rd_kafka_err2str(m->err));
		return;
	}
	if (!pw_take(&r->win[slot], &from, &to))
		return;
	mr = &r->marks[slot];
	if (!mr->from)
		mr->from = from;
	mr->to = to;
	r->n_marks += (size_t)(to - from + 1);
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct relay *r = opaque;
	char why[256];

	if (rd_kafka_fatal_error(rk, why, sizeof(why))) {
		log_err("relay: fatal producer error: %s (recreated)", why);
		r->resend = true;
		return;
	}
	log_warn("relay: kafka: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static rd_kafka_t *producer(struct relay *r, struct outbox_error *err)
{
	static const char *const conf_kv[][2] = {
		{"enable.idempotence", "true"}, /* in order, no duplicates, per partition */
		{"message.timeout.ms", "0"},    /* never give up: an expired message is a gap */
		{"queue.buffering.max.messages", "20000"},
		{"linger.ms", "5"},
		{"partitioner", "murmur2_random"}, /* the Java clients' key -> partition */
	};
	char msg[512];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_t *rk;

	if (rd_kafka_conf_set(c, "bootstrap.servers", r->brokers, msg, sizeof(msg)) ||
	    rd_kafka_conf_set(c, "client.id", r->client, msg, sizeof(msg))) {
		rd_kafka_conf_destroy(c);
		outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_KAFKA_BROKERS", "%s", msg);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(conf_kv) / sizeof(conf_kv[0]); i++)
		if (rd_kafka_conf_set(c, conf_kv[i][0], conf_kv[i][1], msg, sizeof(msg))) {
			rd_kafka_conf_destroy(c);
			outbox_error_set(err, OUTBOX_EINVAL, conf_kv[i][0], "%s", msg);
			return NULL;
		}
	rd_kafka_conf_set_opaque(c, r);
	rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
	rd_kafka_conf_set_error_cb(c, on_kafka_error);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, msg, sizeof(msg));
	if (!rk) {
		outbox_error_set(err, OUTBOX_EINVAL, "OUTBOX_KAFKA_BROKERS", "%s", msg);
		return NULL;
	}
	/* delivery reports wake the owner's loop */
	rd_kafka_queue_t *q = rd_kafka_queue_get_main(rk);
	rd_kafka_queue_io_event_enable(q, r->pipe[1], "1", 1);
	rd_kafka_queue_destroy(q);
	return rk;
}

/* Produce e of chain slot; 0, or a librdkafka error (QUEUE_FULL: try again later). */
static rd_kafka_resp_err_t produce(struct relay *r, const struct event_rec *e, int slot)
{
	char key[24], type[96], id[24], subject[24], *value;
	rd_kafka_resp_err_t rc;

	if (slot < 0 || e->chain_seq < 1 || e->chain_seq > SEQ_MAX)
		return RD_KAFKA_RESP_ERR__INVALID_ARG; /* not a link of a chain it relays */
	value = event_cloud_json(e, r->source);
	if (!value)
		return RD_KAFKA_RESP_ERR__FAIL;
	event_key(e, key, sizeof(key));
	event_ce_type(e->type, type, sizeof(type));
	snprintf(id, sizeof(id), "%lld", (long long)e->id);
	memcpy(subject, key, sizeof(subject));
	rc = rd_kafka_producev(
		r->rk, RD_KAFKA_V_TOPIC(r->topic), RD_KAFKA_V_KEY(key, strlen(key)),
		RD_KAFKA_V_VALUE(value, strlen(value)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
		RD_KAFKA_V_HEADER("content-type", "application/cloudevents+json; charset=UTF-8",
				  -1),
		RD_KAFKA_V_HEADER("ce_id", id, -1), RD_KAFKA_V_HEADER("ce_type", type, -1),
		RD_KAFKA_V_HEADER("ce_subject", subject, -1),
		RD_KAFKA_V_OPAQUE(
			(void *)(uintptr_t)((uint64_t)e->chain_seq << SLOT_BITS | (uint64_t)slot)),
		RD_KAFKA_V_END);
	if (rc)
		free(value);
	return rc;
}

/*
 * Produce the sealed head of the FIFO, in order, while the producer takes
 * them. Each link produced enters its chain's window; one the producer
 * refused enters it failed, so the cursor stops before it.
 */
static void produce_fifo(struct relay *r)
{
	size_t k = 0;

	r->queue_full = false;
	while (k < r->n_fifo && !r->fifo[k].batch) {
		const struct event_rec *e = &r->fifo[k].e;
		int slot = chain_slot(r, e->chain);
		rd_kafka_resp_err_t rc = produce(r, e, slot);

		if (rc == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			r->queue_full = true;
			break;
		}
		if (slot >= 0 && pw_produced(&r->win[slot], e->chain_seq) != 0)
			r->resend = true; /* out of chain order: the cursor stops here */
		if (rc) {
			log_warn("relay: event %lld (link %lld of %s): %s (produced again later)",
				 (long long)e->id, (long long)e->chain_seq, e->chain,
				 rd_kafka_err2str(rc));
			if (slot >= 0)
				pw_acked(&r->win[slot], e->chain_seq, false);
			r->resend = true;
		} else {
			r->in_flight++;
			metric_add(r, MET_EVENTS_PRODUCED, 1);
		}
		event_rec_clear(&r->fifo[k].e);
		k++;
	}
	if (k) {
		memmove(r->fifo, r->fifo + k, (r->n_fifo - k) * sizeof(*r->fifo));
		r->n_fifo -= k;
	}
}

/* ---- rows in and out of PostgreSQL ---- */

static struct sealed *fifo_push(struct relay *r)
{
	if (r->n_fifo == r->cap_fifo) {
		size_t cap = r->cap_fifo ? 2 * r->cap_fifo : 256;
		struct sealed *p = realloc(r->fifo, cap * sizeof(*p));
		if (!p)
			return NULL;
		r->fifo = p;
		r->cap_fifo = cap;
	}
	memset(&r->fifo[r->n_fifo], 0, sizeof(r->fifo[0]));
	return &r->fifo[r->n_fifo++];
}

/* A row of events_unsealed / events_unpublished (columns from c0) into e. */
static bool row_to_event(const PGresult *res, int i, struct event_rec *e)
{
	const char *v;

	memset(e, 0, sizeof(*e));
	e->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
	e->op_id = PQgetisnull(res, i, 1) ? 0 : strtoll(PQgetvalue(res, i, 1), NULL, 10);
	e->seq = PQgetisnull(res, i, 2) ? 0 : atoi(PQgetvalue(res, i, 2));
	snprintf(e->type, sizeof(e->type), "%s", PQgetvalue(res, i, 3));
	snprintf(e->from, sizeof(e->from), "%s", PQgetvalue(res, i, 4));
	snprintf(e->to, sizeof(e->to), "%s", PQgetvalue(res, i, 5));
	e->at_us = strtoll(PQgetvalue(res, i, 6), NULL, 10);
	v = PQgetvalue(res, i, 7);
	e->body = json_loads(v, 0, NULL);
	return e->body != NULL;
}

static void op_columns(const PGresult *res, int i, int c, struct event_rec *e)
{
	snprintf(e->idempotency_key, sizeof(e->idempotency_key), "%s", PQgetvalue(res, i, c));
	snprintf(e->kind, sizeof(e->kind), "%s", PQgetvalue(res, i, c + 1));
	snprintf(e->priority, sizeof(e->priority), "%s", PQgetvalue(res, i, c + 2));
}

static bool bytea_hex(const char *v, uint8_t out[32])
{
	size_t n = 0;

	return v[0] == '\\' && v[1] == 'x' && strlen(v) == 66 &&
	       !sodium_hex2bin(out, 32, v + 2, 64, NULL, &n, NULL) && n == 32;
}

struct seal_ctx {
	struct relay *r;
	int64_t batch;
	bool many; /* events_seal_vshards: on failure, the next read seals chain by chain */
};

static void on_sealed(PGresult *res, void *arg);

/* A growing text array literal: "{a,b,...}". */
struct arr {
	char *s;
	size_t len, cap;
	bool oom;
};

static void arr_add(struct arr *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arr_add(struct arr *a, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (a->oom)
		return;
	if (a->cap - a->len < 96) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		char *p = realloc(a->s, cap);

		if (!p) {
			a->oom = true;
			return;
		}
		a->s = p;
		a->cap = cap;
		if (!a->len)
			a->s[a->len++] = '{';
	}
	if (a->len > 1)
		a->s[a->len++] = ',';
	va_start(ap, fmt);
	n = vsnprintf(a->s + a->len, a->cap - a->len - 2, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= a->cap - a->len - 2) {
		a->oom = true;
		return;
	}
	a->len += (size_t)n;
	a->s[a->len] = '}';
	a->s[a->len + 1] = '\0';
}

/*
 * Link the rows fifo[from..to) of one chain after its head, marking them
 * part of batch, and add their ids and hashes to the arrays. False when a
 * row cannot be linked.
 */
static bool link_rows(struct relay *r, size_t from, size_t to, int64_t head_seq,
		      const uint8_t head[32], int64_t batch, struct arr *ids, struct arr *hashes)
{
	uint8_t link[32];

	memcpy(link, head, 32);
	for (size_t k = from; k < to; k++) {
		struct event_rec *e = &r->fifo[k].e;
		char hex[65];

		r->fifo[k].batch = batch;
		e->chain_seq = head_seq + (int64_t)(k - from) + 1;
		if (event_seal(e, link))
			return false;
		memcpy(link, e->hash, 32);
		sodium_bin2hex(hex, sizeof(hex), e->hash, 32);
		arr_add(ids, "%lld", (long long)e->id);
		arr_add(hashes, "%s", hex);
	}
	return !ids->oom && !hashes->oom;
}

/* Send a seal statement for the rows of batch c->batch; on failure they are not sealed. */
static void send_seal(struct relay *r, struct seal_ctx *c, const char *sql, int n,
		      const char *const *p, bool ok)
{
	if (ok && pgq_send_batch(&r->pg, sql, n, p, on_sealed, c) == 0) {
		r->seals_out++;
		return;
	}
	for (size_t k = 0; k < r->n_fifo; k++)
		if (r->fifo[k].batch == c->batch)
			r->fifo[k].batch = -1;
	free(c);
}

/* Link the rows fifo[from..to) of one chain and send their seal statement. */
static void seal_chain(struct relay *r, size_t from, size_t to, int vshard, int64_t epoch,
		       int64_t head_seq, const uint8_t head[32])
{
	struct arr ids = {0}, hashes = {0};
	char vs[16], es[24], after[24], prev[65];
	const char *p[8] = {r->owner,
			    vshard >= 0 ? vs : NULL,
			    vshard >= 0 ? es : NULL,
			    r->fifo[from].e.chain,
			    after,
			    prev,
			    NULL,
			    NULL};
	struct seal_ctx *c = malloc(sizeof(*c));
	bool ok = c != NULL;

	if (ok) {
		*c = (struct seal_ctx){r, ++r->next_batch, false};
		ok = link_rows(r, from, to, head_seq, head, c->batch, &ids, &hashes);
	}
	if (!c) {
		for (size_t k = from; k < to; k++)
			r->fifo[k].batch = -1;
		return;
	}
	snprintf(vs, sizeof(vs), "%d", vshard);
	snprintf(es, sizeof(es), "%lld", (long long)epoch);
	snprintf(after, sizeof(after), "%lld", (long long)head_seq);
	sodium_bin2hex(prev, sizeof(prev), head, 32);
	p[6] = ids.s;
	p[7] = hashes.s;
	send_seal(r, c,
		  "SELECT outbox.events_seal($1, $2::int, $3::bigint, $4, $5::bigint, "
		  "$6, $7::bigint[], $8::text[])",
		  8, p, ok);
	free(ids.s);
	free(hashes.s);
}

/* Remove the rows of a batch that was not sealed (the next read finds them again). */
static void drop_batch(struct relay *r, int64_t batch)
{
	size_t k = 0;

	for (size_t i = 0; i < r->n_fifo; i++) {
		if (r->fifo[i].batch == batch) {
			event_rec_clear(&r->fifo[i].e);
			continue;
		}
		r->fifo[k++] = r->fifo[i];
	}
	r->n_fifo = k;
}

static void on_sealed(PGresult *res, void *arg)
{
	struct seal_ctx *c = arg;
	struct relay *r = c->r;
	size_t n = 0;

	r->seals_out--;
	if (!pgq_ok(res)) {
		/* unknown (lost connection): it may have committed, so produce again later */
		if (!res)
			r->resend = true;
		else if (strcmp(pgq_sqlstate(res), "OB403"))
			log_msg(c->many ? LOG_LVL_INFO : LOG_LVL_WARN, "relay: %s: %s",
				c->many ? "events_seal_vshards (the next read seals chain by chain)"
					: "events_seal",
				PQresultErrorMessage(res));
		if (res && c->many)
			r->seal_singly = true; /* one chain may be at fault: isolate it */
		drop_batch(r, c->batch);
		free(c);
		return;
	}
	for (size_t i = 0; i < r->n_fifo; i++)
		if (r->fifo[i].batch == c->batch) {
			r->fifo[i].batch = 0;
			n++;
		}
	metric_add(r, MET_EVENTS_SEALED, n);
	free(c);
	CRASHPOINT("relay_after_seal"); /* sealed and committed, nothing produced yet */
	produce_fifo(r);
}

static int lease_of(const struct relay *r, int v, int64_t *epoch)
{
	for (int i = 0; i < r->n_vshards; i++)
		if (r->vshards[i] == v) {
			*epoch = r->epochs[i];
			return 0;
		}
	return -1;
}

/* Reorder fifo[from..) so each chain's rows are together, each in id order. */
static void group_by_chain(struct relay *r, size_t from)
{
	size_t n = r->n_fifo - from, k = 0;
	struct sealed *tmp;
	bool *taken;

	if (n == 0) /* an empty read: fifo may still be NULL, and NULL + 0 is undefined */
		return;
	tmp = malloc(n * sizeof(*tmp));
	taken = calloc(n, 1);
	if (!tmp || !taken) {
		free(tmp);
		free(taken);
		for (size_t i = from; i < r->n_fifo; i++)
			r->fifo[i].batch = -1,
			r->fifo[i].vshard = -2; /* nothing sealed this time */
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (taken[i])
			continue;
		for (size_t j = i; j < n; j++)
			if (!taken[j] &&
			    !strcmp(r->fifo[from + j].e.chain, r->fifo[from + i].e.chain)) {
				tmp[k++] = r->fifo[from + j];
				taken[j] = true;
			}
	}
	memcpy(r->fifo + from, tmp, n * sizeof(*tmp));
	free(tmp);
	free(taken);
}

/* Row i of an events_unsealed answer onto the FIFO; false when it is dropped. */
static bool push_unsealed(struct relay *r, const PGresult *res, int i)
{
	struct sealed *s = fifo_push(r);

	if (!s)
		return false;
	s->batch = -1;
	if (!row_to_event(res, i, &s->e) || !bytea_hex(PQgetvalue(res, i, 13), s->head)) {
		log_err("relay: event %s: unreadable row (body or chain head)",
			PQgetvalue(res, i, 0));
		event_rec_clear(&s->e);
		r->n_fifo--;
		return false;
	}
	s->head_seq = strtoll(PQgetvalue(res, i, 12), NULL, 10);
	s->vshard = PQgetisnull(res, i, 8) ? -1 : atoi(PQgetvalue(res, i, 8));
	if (s->vshard >= 0) {
		op_columns(res, i, 9, &s->e);
		snprintf(s->e.chain, sizeof(s->e.chain), "vshard:%d", s->vshard);
	} else {
		snprintf(s->e.chain, sizeof(s->e.chain), "%s", r->chain);
	}
	return true;
}

/* Past fifo[i]'s chain's rows: the next group's first index. */
static size_t group_end(const struct relay *r, size_t i)
{
	size_t j = i + 1;

	while (j < r->n_fifo && !strcmp(r->fifo[j].e.chain, r->fifo[i].e.chain))
		j++;
	return j;
}

/* The group at fifo[i] can be sealed now: a named chain, or a vshard still leased (epoch). */
static bool sealable(const struct relay *r, size_t i, int64_t *epoch)
{
	const struct sealed *s = &r->fifo[i];

	*epoch = 0;
	return s->vshard != -2 && (s->vshard < 0 || lease_of(r, s->vshard, epoch) == 0);
}

/*
 * Seal every vshard chain of fifo[base..) in one statement
 * (outbox.events_seal_vshards, schema/0025_seal_vshards_at_once.sql). The
 * caller checked that every group there is a vshard chain.
 */
static void seal_vshards(struct relay *r, size_t base)
{
	struct arr vs = {0}, es = {0}, after = {0}, prevs = {0}, lens = {0}, ids = {0},
		   hashes = {0};
	struct seal_ctx *c = malloc(sizeof(*c));
	bool ok = c != NULL;
	char hex[65];

	if (!c)
		return; /* every row keeps batch -1: dropped, read again */
	*c = (struct seal_ctx){r, ++r->next_batch, true};
	for (size_t i = base, j; ok && i < r->n_fifo; i = j) {
		const struct sealed *s = &r->fifo[i];
		int64_t epoch;

		j = group_end(r, i);
		if (!sealable(r, i, &epoch))
			continue; /* the lease went away meanwhile: batch stays -1, dropped */
		sodium_bin2hex(hex, sizeof(hex), s->head, 32);
		arr_add(&vs, "%d", s->vshard);
		arr_add(&es, "%lld", (long long)epoch);
		arr_add(&after, "%lld", (long long)s->head_seq);
		arr_add(&prevs, "%s", hex);
		arr_add(&lens, "%zu", j - i);
		ok = link_rows(r, i, j, s->head_seq, s->head, c->batch, &ids, &hashes);
	}
	ok = ok && vs.s && !vs.oom && !es.oom && !after.oom && !prevs.oom && !lens.oom;
	const char *p[8] = {r->owner, vs.s, es.s, after.s, prevs.s, lens.s, ids.s, hashes.s};
	send_seal(r, c,
		  "SELECT outbox.events_seal_vshards($1, $2::int[], $3::bigint[], $4::bigint[], "
		  "$5::text[], $6::int[], $7::bigint[], $8::text[])",
		  8, p, ok);
	free(vs.s);
	free(es.s);
	free(after.s);
	free(prevs.s);
	free(lens.s);
	free(ids.s);
	free(hashes.s);
}

/*
 * A seal read answered: unsealed rows in id order. They are grouped by
 * chain, each group linked after its chain's head. Two vshard chains or
 * more are sealed by one statement (seal_vshards); otherwise, or when such
 * a statement failed last time, each chain by its own, the statements
 * sharing a commit (group commit) while each one's verdict is its own.
 */
static void on_unsealed(PGresult *res, void *arg)
{
	struct relay *r = arg;
	size_t base = r->n_fifo, i, j, chains = 0, vshard_chains = 0;
	int n;

	r->reading = false;
	if (!pgq_ok(res)) {
		if (res)
			failed(r, "events_unsealed", res);
		return;
	}
	succeeded(r);
	n = PQntuples(res);
	r->more = n == RELAY_PAGE;
	if (r->read_in_drain && n == 0)
		r->caught_up = true;
	for (int k = 0; k < n; k++)
		push_unsealed(r, res, k);
	group_by_chain(r, base);
	for (i = base; i < r->n_fifo; i = j) {
		int64_t epoch;

		j = group_end(r, i);
		if (sealable(r, i, &epoch)) {
			chains++;
			vshard_chains += r->fifo[i].vshard >= 0;
		}
	}
	if (chains >= 2 && vshard_chains == chains && !r->seal_singly) {
		seal_vshards(r, base);
	} else {
		for (i = base; i < r->n_fifo; i = j) {
			const struct sealed *s = &r->fifo[i];
			int64_t epoch;

			j = group_end(r, i);
			if (sealable(r, i, &epoch))
				seal_chain(r, i, j, s->vshard, epoch, s->head_seq, s->head);
		}
		r->seal_singly = false;
	}
	drop_batch(r, -1);
}

/* A page of sealed links past their chains' cursors: produced again, in chain order. */
static void on_unpublished(PGresult *res, void *arg)
{
	struct relay *r = arg;
	int n;

	r->reading = false;
	if (!pgq_ok(res)) {
		if (res)
			failed(r, "events_unpublished", res);
		r->resending = false;
		r->resend = true; /* start over once nothing is in flight */
		return;
	}
	succeeded(r);
	n = PQntuples(res);
	for (int i = 0; i < n; i++) {
		struct sealed *s = fifo_push(r);
		if (!s)
			break;
		if (!row_to_event(res, i, &s->e) || !bytea_hex(PQgetvalue(res, i, 13), s->e.prev) ||
		    !bytea_hex(PQgetvalue(res, i, 14), s->e.hash)) {
			log_err("relay: event %s: unreadable row", PQgetvalue(res, i, 0));
			event_rec_clear(&s->e);
			r->n_fifo--;
			continue;
		}
		if (s->e.op_id)
			op_columns(res, i, 8, &s->e);
		snprintf(s->e.chain, sizeof(s->e.chain), "%s", PQgetvalue(res, i, 11));
		s->e.chain_seq = strtoll(PQgetvalue(res, i, 12), NULL, 10);
		snprintf(r->resend_chain, sizeof(r->resend_chain), "%s", s->e.chain);
		r->resend_seq = s->e.chain_seq;
	}
	if (n < RELAY_PAGE) {
		r->resending = false;
		r->resend_chain[0] = '\0';
		r->resend_seq = 0;
	}
	produce_fifo(r);
}

/*
 * The cursors moved, except for the chains answered: a gap before the
 * range (links this relay never saw delivered) or a range past the head.
 * Those, and every chain after a failed or lost statement, are produced
 * again from their cursors.
 */
static void on_marked(PGresult *res, void *arg)
{
	struct relay *r = arg;

	r->marking = false;
	if (!pgq_ok(res)) {
		if (res)
			failed(r, "events_published_upto", res);
		r->resend = true;
		return;
	}
	succeeded(r);
	for (int i = 0; i < PQntuples(res); i++)
		log_warn("relay: the published cursor of %s did not move (a gap before what was "
			 "delivered): produced again from it",
			 PQgetvalue(res, i, 0));
	if (PQntuples(res))
		r->resend = true;
}

static void on_counted(PGresult *res, void *arg)
{
	struct relay *r = arg;

	r->counting = false;
	if (pgq_ok(res) && PQntuples(res) == 1)
		metric_set(r, MET_EVENTS_BACKLOG, strtoll(PQgetvalue(res, 0, 0), NULL, 10));
}

/* "{v,...}" of the vshards, and "{vshard:v,...,name}" of every chain. */
static bool arrays(const struct relay *r, char *vs, char *chains, size_t cap)
{
	size_t a = 1, b = 1;

	vs[0] = chains[0] = '{';
	for (int i = 0; i < r->n_vshards && a + 16 < cap && b + 20 < cap; i++) {
		a += (size_t)snprintf(vs + a, cap - a, "%s%d", a > 1 ? "," : "", r->vshards[i]);
		b += (size_t)snprintf(chains + b, cap - b, "%s\"vshard:%d\"", b > 1 ? "," : "",
				      r->vshards[i]);
	}
	if (r->chain[0] && b + strlen(r->chain) + 4 < cap)
		b += (size_t)snprintf(chains + b, cap - b, "%s\"%s\"", b > 1 ? "," : "", r->chain);
	snprintf(vs + a, cap - a, "}");
	snprintf(chains + b, cap - b, "}");
	return a > 1 || r->chain[0];
}

/* Send the cursor moves waiting (marks), many chains in one statement. */
static void mark(struct relay *r, int64_t now)
{
	struct arr chains = {0}, froms = {0}, tos = {0};
	char chain[EVENT_CHAIN_MAX + 1];

	if (r->marking || !r->n_marks || (r->n_marks < RELAY_MARK_MAX && now < r->next_mark_ms))
		return;
	for (int i = 0; i < RELAY_SLOTS; i++) {
		if (!r->marks[i].from)
			continue;
		slot_chain(r, i, chain, sizeof(chain));
		arr_add(&chains, "\"%s\"", chain);
		arr_add(&froms, "%lld", (long long)r->marks[i].from);
		arr_add(&tos, "%lld", (long long)r->marks[i].to);
	}
	const char *p[3] = {chains.s, froms.s, tos.s};
	if (!chains.oom && !froms.oom && !tos.oom && chains.s &&
	    pgq_send(&r->pg,
		     "SELECT * FROM outbox.events_published_upto($1::text[], $2::bigint[], "
		     "$3::bigint[])",
		     3, p, on_marked, r) == 0) {
		metric_add(r, MET_EVENTS_PUBLISHED, r->n_marks);
		memset(r->marks, 0, RELAY_SLOTS * sizeof(*r->marks));
		r->n_marks = 0;
		r->marking = true;
	}
	r->next_mark_ms = now + RELAY_MARK_MS;
	free(chains.s);
	free(froms.s);
	free(tos.s);
}

/* Read what to produce next: a resend page once it is safe, else unsealed rows. */
static void read_rows(struct relay *r, int64_t now)
{
	size_t cap = (size_t)r->n_vshards * 24 + EVENT_CHAIN_MAX + 8;
	char *vs, *chains, after_seq[24], lim[16];
	int rc = -1;

	if (r->reading || r->seals_out || r->n_fifo >= RELAY_FIFO_MAX || !r->source[0])
		return;
	if (r->resend && !r->resending && !r->in_flight && !r->n_fifo && !r->marking &&
	    !r->n_marks) {
		r->resend = false; /* nothing of ours is in flight: every unpublished row is due */
		r->resending = true;
		r->resend_chain[0] = '\0';
		r->resend_seq = 0;
		for (int i = 0; i < RELAY_SLOTS; i++)
			pw_reset(&r->win[i]); /* each chain starts again at its cursor */
	}
	/*
	 * A resend waits for what is in flight, and no seal read runs before
	 * it: a predecessor may have sealed an op's first events and died before
	 * producing them; sealing and producing the op's later events first
	 * would put them ahead of the earlier ones on the topic.
	 */
	if (r->resend && !r->resending)
		return;
	if (!r->resending && !r->more && !(r->draining && !r->caught_up) && now < r->next_read_ms)
		return;
	if (!(vs = malloc(cap)) || !(chains = malloc(cap))) {
		free(vs);
		return;
	}
	snprintf(lim, sizeof(lim), "%d", RELAY_PAGE);
	if (arrays(r, vs, chains, cap)) {
		snprintf(after_seq, sizeof(after_seq), "%lld", (long long)r->resend_seq);
		const char *pu[4] = {chains, r->resend_chain, after_seq, lim}, *pv[2] = {vs, lim},
			   *pc[2] = {r->chain, lim};
		if (r->resending)
			rc = pgq_send(&r->pg,
				      "SELECT * FROM outbox.events_unpublished($1::text[], $2, "
				      "$3::bigint, $4::int)",
				      4, pu, on_unpublished, r);
		else if (r->n_vshards)
			rc = pgq_send(&r->pg,
				      "SELECT * FROM outbox.events_unsealed($1::int[], $2::int)", 2,
				      pv, on_unsealed, r);
		else
			rc = pgq_send(&r->pg,
				      "SELECT * FROM outbox.events_unsealed_chain($1, $2::int)", 2,
				      pc, on_unsealed, r);
		r->read_in_drain = r->draining && !r->resending;
	}
	r->reading = rc == 0;
	r->next_read_ms = now + RELAY_IDLE_MS;
	free(vs);
	free(chains);
}

static void count_backlog(struct relay *r, int64_t now)
{
	size_t cap = (size_t)r->n_vshards * 24 + EVENT_CHAIN_MAX + 8;
	char *vs, *chains;

	if (r->counting || now < r->next_count_ms || !(vs = malloc(cap)))
		return;
	r->next_count_ms = now + RELAY_BACKLOG_MS;
	if ((chains = malloc(cap)) && arrays(r, vs, chains, cap)) {
		const char *p[2] = {chains, vs};
		/* the links past the cursors, and the rows not sealed yet */
		r->counting =
			pgq_send(
				&r->pg,
				"SELECT (SELECT coalesce(sum(seq - published_seq), 0) FROM "
				"outbox.chain_heads WHERE chain = ANY ($1::text[])) + (SELECT "
				"count(*) FROM (SELECT 1 FROM outbox.events e LEFT JOIN outbox.ops "
				"o ON o.id = e.op_id WHERE e.chain_seq IS NULL AND (e.chain = ANY "
				"($1::text[]) OR o.vshard = ANY ($2::int[])) LIMIT 1000000) x)",
				2, p, on_counted, r) == 0;
	}
	free(vs);
	free(chains);
}

static void on_source(PGresult *res, void *arg)
{
	struct relay *r = arg;

	if (pgq_ok(res) && PQntuples(res) == 1)
		snprintf(r->source, sizeof(r->source), "urn:uuid:%s", PQgetvalue(res, 0, 0));
	else if (res)
		log_err("relay: cannot read the deployment id: %s", PQresultErrorMessage(res));
}

/* (Re)connected: learn the source once; whatever was in flight on the old connection is unknown. */
static void on_connect(bool up, void *arg)
{
	struct relay *r = arg;

	r->reading = r->marking = r->counting = false;
	if (!up)
		return;
	r->resend = true;
	if (!r->source[0])
		pgq_send(&r->pg, "SELECT deployment FROM outbox.settings", 0, NULL, on_source, r);
}

void relay_tick(struct relay *r, int64_t now)
{
	pgq_tick(&r->pg, now);
	rd_kafka_poll(r->rk, 0);
	if (rd_kafka_fatal_error(r->rk, NULL, 0)) {
		struct outbox_error err = OUTBOX_ERROR_INIT;
		rd_kafka_t *fresh = producer(r, &err);
		if (fresh) {
			rd_kafka_purge(r->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
			rd_kafka_poll(r->rk, 0);
			rd_kafka_destroy(r->rk);
			r->rk = fresh;
			r->in_flight = 0;
			r->queue_full = false;
			r->resend = true;
		}
	}
	metric_set(r, MET_KAFKA_QUEUE, rd_kafka_outq_len(r->rk));
	if (!pgq_connected(&r->pg))
		return;
	produce_fifo(r);
	mark(r, now);
	read_rows(r, now);
	count_backlog(r, now);
}

void relay_on_ready(struct relay *r, uint64_t tag, uint32_t events)
{
	char buf[64];

	if (tag == r->cfg.tag_pg) {
		pgq_on_ready(&r->pg, events);
		return;
	}
	while (read(r->pipe[0], buf, sizeof(buf)) > 0)
		;
	rd_kafka_poll(r->rk, 0);
}

/*
 * 0 only when the next tick has work it can start at once. Whatever waits
 * for an answer (a read, a seal, a mark, room in the producer's queue)
 * wakes the owner through an fd; a zero timeout then would spin the owner's
 * loop, burning the CPU that PostgreSQL and the broker need on a small host.
 */
int relay_timeout_ms(const struct relay *r, int64_t now)
{
	bool can_read, resend_due;
	int64_t t = 1000, m;

	if (!pgq_connected(&r->pg))
		return pgq_timeout_ms(&r->pg, now); /* nothing runs before the reconnect */
	if (r->n_fifo && !r->fifo[0].batch && !r->queue_full)
		return 0; /* sealed rows the producer takes */
	can_read = (r->n_vshards || r->chain[0]) && r->source[0] && !r->reading && !r->seals_out &&
		   r->n_fifo < RELAY_FIFO_MAX;
	resend_due = r->resend && !r->in_flight && !r->n_fifo && !r->marking && !r->n_marks;
	if (r->resend && !r->resending && !resend_due)
		can_read = false; /* no read before the resend (read_rows) */
	if (can_read && (r->more || r->resending || resend_due || (r->draining && !r->caught_up)))
		return 0;
	if (can_read && r->next_read_ms - now < t)
		t = r->next_read_ms - now;
	if (r->n_marks && !r->marking) {
		m = r->n_marks >= RELAY_MARK_MAX ? 0 : r->next_mark_ms - now;
		t = m < t ? m : t;
	}
	return t < 0 ? 0 : (int)t;
}

uint64_t relay_in_flight(const struct relay *r)
{
	return r->in_flight + r->n_fifo;
}

void relay_set_vshards(struct relay *r, const char *owner, const int *vshards,
		       const int64_t *epochs, int n)
{
	if (n > RELAY_VSHARDS)
		n = RELAY_VSHARDS;
	if (n == r->n_vshards && !memcmp(vshards, r->vshards, (size_t)n * sizeof(*vshards)) &&
	    !memcmp(epochs, r->epochs, (size_t)n * sizeof(*epochs)) && !strcmp(owner, r->owner))
		return; /* the usual turn: nothing changed */
	for (int i = 0; i < n; i++) {
		int64_t e;
		/* a lease taken (or taken again): a predecessor may have sealed rows it never produced */
		if (lease_of(r, vshards[i], &e) || e != epochs[i])
			r->resend = true;
	}
	snprintf(r->owner, sizeof(r->owner), "%s", owner);
	memcpy(r->vshards, vshards, (size_t)n * sizeof(*vshards));
	memcpy(r->epochs, epochs, (size_t)n * sizeof(*epochs));
	r->n_vshards = n;
}

void relay_set_chain(struct relay *r, const char *chain)
{
	snprintf(r->chain, sizeof(r->chain), "%s", chain);
	r->resend = true;
}

static void on_written(PGresult *res, void *arg)
{
	(void)arg;
	if (res && !pgq_ok(res))
		log_warn("relay: event write: %s", PQresultErrorMessage(res));
}

int relay_write(struct relay *r, const char *sql, int n, const char *const *params)
{
	if (!pgq_connected(&r->pg))
		return -ENOTCONN;
	return pgq_send(&r->pg, sql, n, params, on_written, r);
}

struct relay *relay_new(const struct relay_config *cfg, struct outbox_error *err)
{
	struct relay *r = calloc(1, sizeof(*r));
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = cfg->tag_kafka};

	if (!r) {
		outbox_error_set(err, -ENOMEM, "relay", "out of memory");
		return NULL;
	}
	r->cfg = *cfg;
	snprintf(r->brokers, sizeof(r->brokers), "%s", cfg->brokers);
	snprintf(r->topic, sizeof(r->topic), "%s", cfg->topic);
	snprintf(r->client, sizeof(r->client), "outboxd-%s", cfg->client);
	r->pipe[0] = r->pipe[1] = -1;
	r->win = calloc(RELAY_SLOTS, sizeof(*r->win));
	r->marks = calloc(RELAY_SLOTS, sizeof(*r->marks));
	if (!r->win || !r->marks) {
		outbox_error_set(err, -ENOMEM, "relay", "out of memory");
		relay_free(r, 0);
		return NULL;
	}
	if (pipe2(r->pipe, O_NONBLOCK | O_CLOEXEC) ||
	    epoll_ctl(cfg->ep, EPOLL_CTL_ADD, r->pipe[0], &ev)) {
		outbox_error_set(err, -errno, "relay", "pipe: %s", strerror(errno));
		relay_free(r, 0);
		return NULL;
	}
	if (!(r->rk = producer(r, err)) ||
	    pgq_init(&r->pg, cfg->database, r->client, cfg->ep, cfg->tag_pg, NULL, on_connect, r)) {
		if (!err->msg[0])
			outbox_error_set(err, -ENOMEM, "relay", "out of memory");
		relay_free(r, 0);
		return NULL;
	}
	return r;
}

/*
 * One turn outside the owner's loop (at the end: relay_drain, relay_free):
 * its connection and the producer's wake-ups.
 */
static void drain_turn(struct relay *r, int ms)
{
	struct pollfd p[2] = {{.fd = r->pg.fd, .events = POLLIN},
			      {.fd = r->pipe[0], .events = POLLIN}};
	uint32_t ev = 0;

	if (r->pg.registered_events & EPOLLOUT)
		p[0].events |= POLLOUT;
	if (poll(p, 2, ms) <= 0)
		return;
	if (p[0].revents & (POLLIN | POLLERR | POLLHUP))
		ev |= EPOLLIN;
	if (p[0].revents & POLLOUT)
		ev |= EPOLLOUT;
	if (ev && r->pg.fd >= 0)
		pgq_on_ready(&r->pg, ev);
	if (p[1].revents)
		relay_on_ready(r, r->cfg.tag_kafka, EPOLLIN);
}

static bool drained(const struct relay *r)
{
	return r->caught_up && !r->n_fifo && !r->seals_out && !r->reading && !r->in_flight &&
	       !r->n_marks && !r->marking && !r->resend && !r->resending;
}

bool relay_drain(struct relay *r, int ms)
{
	int64_t until = mono_ms() + ms, now;
	bool cut_off = false;

	if (!r)
		return true;
	r->draining = true;
	r->caught_up = false;
	while ((now = mono_ms()) < until) {
		int t;

		r->next_mark_ms = 0; /* mark each report as it comes: nothing follows */
		relay_tick(r, now);
		if (drained(r))
			break;
		/* without its connection (or the deployment id) it can neither read nor mark */
		cut_off = pgq_down(&r->pg) ||
			  (pgq_connected(&r->pg) && !r->source[0] && !pgq_pending(&r->pg));
		if (cut_off)
			break;
		t = relay_timeout_ms(r, now);
		drain_turn(r, t < 20 ? t : 20);
	}
	r->draining = false;
	if (cut_off)
		log_warn("relay: stopping without its database connection: what its chains hold "
			 "waits for their next owner");
	else if (!drained(r))
		log_warn("relay: stopping with events of its chains unpublished (%s; %zu read, "
			 "%llu produced without a report): their next owner produces them",
			 r->caught_up ? "every one read" : "not every one read yet", r->n_fifo,
			 (unsigned long long)r->in_flight);
	return drained(r);
}

void relay_free(struct relay *r, int flush_ms)
{
	if (!r)
		return;
	if (r->rk) {
		int64_t until = mono_ms() + flush_ms;
		produce_fifo(r);
		rd_kafka_flush(r->rk, flush_ms);
		/* mark what was delivered, best effort: the rest is produced again later */
		while (pgq_connected(&r->pg) && (r->n_marks || r->marking) && mono_ms() < until) {
			r->next_mark_ms = 0;
			mark(r, mono_ms());
			drain_turn(r, 50);
		}
		rd_kafka_destroy(r->rk);
	}
	pgq_release(&r->pg);
	for (size_t i = 0; i < r->n_fifo; i++)
		event_rec_clear(&r->fifo[i].e);
	free(r->fifo);
	for (int i = 0; r->win && i < RELAY_SLOTS; i++)
		pw_free(&r->win[i]);
	free(r->win);
	free(r->marks);
	if (r->pipe[0] >= 0) {
		epoll_ctl(r->cfg.ep, EPOLL_CTL_DEL, r->pipe[0], NULL);
		close(r->pipe[0]);
		close(r->pipe[1]);
	}
	free(r);
}
