/*
 * kafkatest.h - the real Kafka broker of the integration tests.
 *
 * ops/test.sh starts a single-node broker with ops/kafka.sh before ctest and
 * exports OUTBOX_KAFKA_BROKERS (its address, "127.0.0.1:<port>") plus
 * OUTBOX_KAFKA_PORT and OUTBOX_KAFKA_DATA (which broker that is, for
 * ops/kafka.sh). Run alone, a suite uses 127.0.0.1:9092, i.e. the broker of
 * a plain `ops/kafka.sh start`. Nothing here skips: a suite that needs the
 * broker fails when none answers.
 *
 *	static void setup(void) { kafkatest_require_broker(); }
 *	...
 *	char topic[128];
 *	kafkatest_fresh_topic(topic, sizeof topic, "relay", 4);
 *	rd_kafka_conf_t *conf = kafkatest_conf();
 *	kafkatest_conf_set(conf, "enable.idempotence", "true");
 *	...
 *	struct kafkatest_msgs got;
 *	kafkatest_consume_all(topic, n, 60000, &got);
 *	ck_assert_uint_eq(got.n, n);
 *	kafkatest_msgs_free(&got);
 *
 * kafkatest_broker_stop() / kafkatest_broker_start() run `ops/kafka.sh stop`
 * / `start` on that broker (found through OUTBOX_SOURCE_DIR, which ctest
 * sets for the integration suites), for outage tests. Check _exit()s a
 * failed test before its checked teardown runs, so a test that fails during
 * an outage would leave the broker down for every later suite: a TCase that
 * stops the broker adds the restart guard as an unchecked fixture,
 *
 *	tcase_add_unchecked_fixture(tc, kafkatest_restart_guard_setup,
 *				    kafkatest_restart_guard_teardown);
 *
 * and the teardown restarts the broker when a test stopped it and did not
 * start it again (never a broker the tests did not stop). Its ctest entry
 * takes RESOURCE_LOCK kafka_broker (tests/kafka.cmake).
 *
 * Every function that can fail ck_abort_msg()s with the reason, except
 * kafkatest_script() and the guard, which also work outside a test.
 */
#ifndef OUTBOX_TESTS_KAFKATEST_H
#define OUTBOX_TESTS_KAFKATEST_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#define KAFKATEST_BROKERS_DEFAULT "127.0.0.1:9092"

/* OUTBOX_KAFKA_BROKERS, else KAFKATEST_BROKERS_DEFAULT. */
const char *kafkatest_brokers(void);

/*
 * Abort the test unless a broker answers a metadata request within 30 s
 * (generous: a broker restarted a moment ago may still be starting).
 */
void kafkatest_require_broker(void);

/* A new configuration with bootstrap.servers and client.id set. */
rd_kafka_conf_t *kafkatest_conf(void);
/* rd_kafka_conf_set or abort naming the key and value. */
void kafkatest_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value);

/*
 * Write a topic name no earlier run used, "outboxd.test.<prefix>.<time>.<pid>.<n>",
 * into out, and create it with the given partition count through
 * `ops/kafka.sh topic`. It is ready (every partition has a leader) on return.
 */
void kafkatest_fresh_topic(char *out, size_t n, const char *prefix, int partitions);

/* One consumed message, copied out of librdkafka. */
struct kafkatest_msg {
	char *key; /* NUL-terminated copy, NULL when the message had none */
	size_t key_len;
	char *value; /* NUL-terminated copy, NULL when the message had none */
	size_t len;
	int32_t partition;
	int64_t offset;
	rd_kafka_headers_t *headers; /* a copy, NULL when there were none */
};

struct kafkatest_msgs {
	struct kafkatest_msg *m;
	size_t n;
};

/*
 * Read topic from the beginning of every partition (assigned, no consumer
 * group) until at least `expect` messages have arrived and every partition
 * is at its end, or timeout_ms passes; messages in arrival order, which is
 * offset order within each partition. Returns the number read, which the
 * caller compares with what it expects (more means duplicates).
 */
size_t kafkatest_consume_all(const char *topic, size_t expect, int timeout_ms,
			     struct kafkatest_msgs *out);
void kafkatest_msgs_free(struct kafkatest_msgs *msgs);

/*
 * The header `name` of msg as a NUL-terminated string in buf (abort when it
 * is missing or does not fit); returns buf. *is_null (may be NULL) tells a
 * header with a null value.
 */
const char *kafkatest_header(const struct kafkatest_msg *msg, const char *name, char *buf, size_t n,
			     size_t *len, int *is_null);

/*
 * Run `ops/kafka.sh <cmd> --port <port of kafkatest_brokers()>`; the data
 * directory comes from OUTBOX_KAFKA_DATA (or the script's default). Returns
 * its exit status, -1 when it could not be run (printed).
 */
int kafkatest_script(const char *cmd);

/* `ops/kafka.sh stop`, then `status` must say the broker is down. */
void kafkatest_broker_stop(void);
/* `ops/kafka.sh start` (which waits until the broker answers). */
void kafkatest_broker_start(void);
/* Unchecked fixture: see above. */
void kafkatest_restart_guard_setup(void);
void kafkatest_restart_guard_teardown(void);

#endif
