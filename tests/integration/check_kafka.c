/*
 * check_kafka.c - the Kafka plumbing against the real single-node broker of
 * ops/kafka.sh (ops/test.sh starts it; OUTBOX_KAFKA_BROKERS says where).
 *
 * What the event relay (common/relay.h) relies on, with an idempotent
 * producer as the relay's (enable.idempotence=true, which implies acks=all):
 *
 * - produce_consume: 16 keys x 125 messages, interleaved, into a fresh
 *   4-partition topic; every delivery report is a success, in produce order
 *   per key; read back from the beginning, every message is there exactly
 *   once, each key in one partition and in produce order, with its payload
 *   and headers (text, binary with a NUL byte, a null value) intact.
 * - outage: one producer writes a first batch, the broker is stopped
 *   (ops/kafka.sh stop) and a second batch is produced into the outage: it
 *   queues (no delivery report, success or failure, while the broker is
 *   down), the client reports all brokers down, nothing fatal. After
 *   ops/kafka.sh start a third batch follows; all three are delivered, and
 *   the topic holds each key's messages once, in order, across the outage.
 *
 * Nothing is timed: every wait has a generous deadline and only its
 * outcome is asserted. With no broker the suite fails, it never skips.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/check_main.h"
#include "tests/support/kafkatest.h"

#define KEYS       16
#define CE_TYPE    "com.outboxd.test.kafka.v1"
#define FLUSH_MS   90000 /* deadline for every delivery report */
#define CONSUME_MS 60000 /* deadline for reading a topic back */
#define DOWN_MS    30000 /* deadline for the client to notice the outage */

/* What the callbacks saw; they run in rd_kafka_poll/flush, on this thread. */
struct prod {
	rd_kafka_t *rk;
	char topic[160];
	int next_seq[KEYS]; /* next sequence number to produce, per key */
	int dr_seq[KEYS];   /* last sequence number reported delivered, per key */
	int32_t dr_part[KEYS];
	int64_t dr_off[KEYS];
	size_t produced, delivered, failed, dr_misordered;
	char first_failure[256];
	int all_brokers_down, fatal;
	char fatal_msg[512];
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* msg_opaque carries (key, seq) so the delivery report can check order. */
#define OPAQUE(key, seq) ((void *)(uintptr_t)((uintptr_t)(key) << 24 | (uintptr_t)(seq)))
#define OPAQUE_KEY(op)   ((int)((uintptr_t)(op) >> 24))
#define OPAQUE_SEQ(op)   ((int)((uintptr_t)(op)&0xffffff))

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *arg)
{
	struct prod *p = arg;
	int key = OPAQUE_KEY(m->_private), seq = OPAQUE_SEQ(m->_private);

	if (m->err) {
		if (!p->failed++)
			snprintf(p->first_failure, sizeof p->first_failure, "key %d seq %d: %s",
				 key, seq, rd_kafka_err2str(m->err));
		return;
	}
	p->delivered++;
	/* Per key: produce order, one partition, growing offsets. */
	if (seq != p->dr_seq[key] + 1 || (p->dr_seq[key] >= 0 && (m->partition != p->dr_part[key] ||
								  m->offset <= p->dr_off[key])))
		p->dr_misordered++;
	if (rd_kafka_message_status(m) != RD_KAFKA_MSG_STATUS_PERSISTED)
		p->dr_misordered++;
	p->dr_seq[key] = seq;
	p->dr_part[key] = m->partition;
	p->dr_off[key] = m->offset;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *arg)
{
	struct prod *p = arg;
	char buf[256];

	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
		p->all_brokers_down = 1;
	if (err == RD_KAFKA_RESP_ERR__FATAL || rd_kafka_fatal_error(rk, buf, sizeof buf)) {
		if (!p->fatal++)
			snprintf(p->fatal_msg, sizeof p->fatal_msg, "%s: %s",
				 rd_kafka_err2name(err), reason);
	}
}

/* The idempotent producer under test, writing to a fresh topic. */
static void prod_open(struct prod *p, const char *prefix, int partitions,
		      const char *message_timeout_ms)
{
	char err[512];
	rd_kafka_conf_t *conf;

	memset(p, 0, sizeof *p);
	for (int k = 0; k < KEYS; k++)
		p->dr_seq[k] = -1;
	kafkatest_fresh_topic(p->topic, sizeof p->topic, prefix, partitions);
	conf = kafkatest_conf();
	kafkatest_conf_set(conf, "enable.idempotence", "true");
	kafkatest_conf_set(conf, "acks", "all");
	kafkatest_conf_set(conf, "linger.ms", "5");
	kafkatest_conf_set(conf, "message.timeout.ms", message_timeout_ms);
	/* Reconnect within a second of the broker's return (default up to 10 s). */
	kafkatest_conf_set(conf, "reconnect.backoff.max.ms", "1000");
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_error_cb(conf, on_error);
	rd_kafka_conf_set_opaque(conf, p);
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
	ck_assert_msg(p->rk != NULL, "producer: %s", err);
}

static void prod_close(struct prod *p)
{
	rd_kafka_destroy(p->rk);
	p->rk = NULL;
}

static void expected_key(int key, char *out, size_t n)
{
	snprintf(out, n, "entity-%02d", key);
}

/* A payload of a size that varies with (key, seq), pad drawn from both. */
static int expected_value(int key, int seq, char *out, size_t n)
{
	static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	char pad[400];
	int padlen = (seq * 37 + key * 11) % 300;

	for (int i = 0; i < padlen; i++)
		pad[i] = alphabet[(i + seq + key) % (int)(sizeof alphabet - 1)];
	pad[padlen] = '\0';
	return snprintf(out, n, "{\"key\":\"entity-%02d\",\"seq\":%d,\"pad\":\"%s\"}", key, seq,
			pad);
}

/* Binary header: a NUL byte, a high byte, the key and the low bits of seq. */
static void expected_bin(int key, int seq, unsigned char out[4])
{
	out[0] = 0x00;
	out[1] = 0xff;
	out[2] = (unsigned char)key;
	out[3] = (unsigned char)(seq & 0xff);
}

/* Enqueue the next message of key; the delivery report comes through poll. */
static void produce_next(struct prod *p, int key)
{
	char k[32], value[512], ce_id[64], seqs[16];
	unsigned char bin[4];
	int seq = p->next_seq[key]++, len;
	rd_kafka_resp_err_t e;

	expected_key(key, k, sizeof k);
	len = expected_value(key, seq, value, sizeof value);
	snprintf(ce_id, sizeof ce_id, "%s/%d", k, seq);
	snprintf(seqs, sizeof seqs, "%d", seq);
	expected_bin(key, seq, bin);
	for (;;) {
		e = rd_kafka_producev(
			p->rk, RD_KAFKA_V_TOPIC(p->topic), RD_KAFKA_V_KEY(k, strlen(k)),
			RD_KAFKA_V_VALUE(value, (size_t)len),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_HEADER("ce_type", CE_TYPE, -1),
			RD_KAFKA_V_HEADER("ce_id", ce_id, -1), RD_KAFKA_V_HEADER("seq", seqs, -1),
			RD_KAFKA_V_HEADER("bin", bin, sizeof bin),
			RD_KAFKA_V_HEADER("null", NULL, 0), RD_KAFKA_V_OPAQUE(OPAQUE(key, seq)),
			RD_KAFKA_V_END);
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		rd_kafka_poll(p->rk, 100);
	}
	ck_assert_msg(!e, "produce %s seq %d: %s", k, seq, rd_kafka_err2str(e));
	p->produced++;
	rd_kafka_poll(p->rk, 0);
}

/* per_key more messages for every key, interleaved across keys. */
static void produce_batch(struct prod *p, int per_key)
{
	for (int i = 0; i < per_key; i++)
		for (int k = 0; k < KEYS; k++)
			produce_next(p, k);
}

/* Wait for every delivery report; each must be a success, in order per key. */
static void flush_all(struct prod *p)
{
	rd_kafka_resp_err_t e = rd_kafka_flush(p->rk, FLUSH_MS);

	ck_assert_msg(!e, "flush: %s after %d ms, %d messages still queued", rd_kafka_err2str(e),
		      FLUSH_MS, rd_kafka_outq_len(p->rk));
	ck_assert_msg(p->failed == 0, "%zu delivery failures, first: %s", p->failed,
		      p->first_failure);
	ck_assert_msg(!p->fatal, "fatal producer error: %s", p->fatal_msg);
	ck_assert_uint_eq(p->delivered, p->produced);
	ck_assert_msg(p->dr_misordered == 0,
		      "%zu delivery reports out of produce order (or not persisted)",
		      p->dr_misordered);
}

/*
 * Read the topic back: exactly what was produced, each key in one partition,
 * in produce order, payload and headers intact.
 */
static void check_topic(const struct prod *p)
{
	struct kafkatest_msgs got;
	int seen[KEYS];
	int32_t part[KEYS];
	size_t n = kafkatest_consume_all(p->topic, p->produced, CONSUME_MS, &got);

	ck_assert_msg(n == p->produced, "read %zu messages back from %s, produced %zu", n, p->topic,
		      p->produced);
	for (int k = 0; k < KEYS; k++)
		seen[k] = 0;
	for (size_t i = 0; i < got.n; i++) {
		const struct kafkatest_msg *m = &got.m[i];
		char want_key[32], want_value[512], want_id[64], buf[512];
		unsigned char bin[4];
		size_t len;
		int key = -1, seq, is_null, vlen;

		ck_assert_msg(m->key && sscanf(m->key, "entity-%d", &key) == 1 && key >= 0 &&
				      key < KEYS,
			      "partition %d offset %" PRId64 ": unexpected key '%s'",
			      (int)m->partition, m->offset, m->key ? m->key : "(null)");
		expected_key(key, want_key, sizeof want_key);
		ck_assert_str_eq(m->key, want_key);
		ck_assert_uint_eq(m->key_len, strlen(want_key));
		seq = seen[key]++;
		if (seq == 0)
			part[key] = m->partition;
		ck_assert_msg(m->partition == part[key], "%s in partitions %d and %d", want_key,
			      (int)part[key], (int)m->partition);

		/* seq header first: it names the message a mismatch is about */
		kafkatest_header(m, "seq", buf, sizeof buf, NULL, NULL);
		ck_assert_msg(atoi(buf) == seq, "%s: message %d of the key carries seq %s",
			      want_key, seq, buf);
		vlen = expected_value(key, seq, want_value, sizeof want_value);
		ck_assert_msg(m->value && m->len == (size_t)vlen && !strcmp(m->value, want_value),
			      "%s seq %d: payload '%s', want '%s'", want_key, seq,
			      m->value ? m->value : "(null)", want_value);
		ck_assert_str_eq(kafkatest_header(m, "ce_type", buf, sizeof buf, NULL, NULL),
				 CE_TYPE);
		snprintf(want_id, sizeof want_id, "%s/%d", want_key, seq);
		ck_assert_str_eq(kafkatest_header(m, "ce_id", buf, sizeof buf, NULL, NULL),
				 want_id);
		expected_bin(key, seq, bin);
		kafkatest_header(m, "bin", buf, sizeof buf, &len, &is_null);
		ck_assert_msg(!is_null && len == sizeof bin && !memcmp(buf, bin, sizeof bin),
			      "%s seq %d: binary header mangled (%zu bytes)", want_key, seq, len);
		kafkatest_header(m, "null", buf, sizeof buf, &len, &is_null);
		ck_assert_msg(is_null && len == 0, "%s seq %d: null header arrived as %zu bytes",
			      want_key, seq, len);
	}
	for (int k = 0; k < KEYS; k++)
		ck_assert_msg(seen[k] == p->next_seq[k], "entity-%02d: read %d, produced %d", k,
			      seen[k], p->next_seq[k]);
	kafkatest_msgs_free(&got);
}

static void setup(void)
{
	kafkatest_require_broker();
}

START_TEST(test_produce_consume)
{
	struct prod p;

	prod_open(&p, "kafka.roundtrip", 4, "60000");
	produce_batch(&p, 125);
	flush_all(&p);
	ck_assert_uint_eq(p.delivered, KEYS * 125);
	prod_close(&p);
	check_topic(&p);
}
END_TEST

START_TEST(test_outage)
{
	struct prod p;
	long long deadline;
	size_t before;

	/* 0: never give up on a queued message; a timeout would leave a gap. */
	prod_open(&p, "kafka.outage", 3, "0");
	produce_batch(&p, 20);
	flush_all(&p);
	before = p.delivered;

	kafkatest_broker_stop();
	produce_batch(&p, 20);
	deadline = now_ms() + DOWN_MS;
	while (!p.all_brokers_down && now_ms() < deadline)
		rd_kafka_poll(p.rk, 100);
	ck_assert_msg(p.all_brokers_down, "no ALL_BROKERS_DOWN within %d ms of the stop", DOWN_MS);
	/* Down for a while longer: a few reconnect attempts fail. */
	deadline = now_ms() + 3000;
	while (now_ms() < deadline)
		rd_kafka_poll(p.rk, 100);
	ck_assert_msg(p.delivered == before && p.failed == 0,
		      "during the outage: %zu delivered (before: %zu), %zu failed (%s)",
		      p.delivered, before, p.failed, p.first_failure);
	ck_assert_msg(!p.fatal, "fatal producer error during the outage: %s", p.fatal_msg);
	ck_assert_int_ge(rd_kafka_outq_len(p.rk), KEYS * 20);

	kafkatest_broker_start();
	produce_batch(&p, 20);
	flush_all(&p);
	ck_assert_uint_eq(p.delivered, KEYS * 60);
	prod_close(&p);
	check_topic(&p);
}
END_TEST

static Suite *kafka_suite(void)
{
	Suite *s = suite_create("kafka");
	TCase *tc = tcase_create("broker");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_unchecked_fixture(tc, kafkatest_restart_guard_setup,
				    kafkatest_restart_guard_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_produce_consume);
	tcase_add_test(tc, test_outage);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(kafka_suite)
