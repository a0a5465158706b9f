/*
 * kafka-topic BROKERS TOPIC [PARTITIONS] - make sure TOPIC exists with
 * PARTITIONS partitions (default 3, replication factor 1), through
 * librdkafka's admin API: the broker ops/kafka.sh runs has no Kafka CLI
 * tools (see ops/kafka/pom.xml). `ops/kafka.sh topic NAME [PARTITIONS]` runs
 * it against that broker.
 *
 * Creates the topic, or accepts an existing one with the same partition
 * count; then waits until the broker's metadata shows every partition with
 * a leader, so a producer or consumer started next finds it ready. Prints
 * one line, "TOPIC: created, N partitions" or "TOPIC: exists, N partitions".
 *
 * Exit status: 0 when the topic is there with PARTITIONS partitions; 1 when
 * it cannot be created, exists with another partition count, or is not
 * ready within OUTBOX_KAFKA_TOPIC_TIMEOUT_MS (default 30000); 2 on usage
 * errors.
 */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *prog = "kafka-topic";

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long parse_long(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: %s '%s' is not an integer in %ld..%ld\n", prog, what, s, lo,
			hi);
		exit(2);
	}
	return v;
}

/*
 * Ask the admin API to create the topic. Returns 0 when it was created or
 * already existed (*existed tells which), -1 with a message printed.
 */
static int create_topic(rd_kafka_t *rk, const char *topic, int partitions, int timeout_ms,
			int *existed)
{
	char err[512];
	rd_kafka_NewTopic_t *nt;
	rd_kafka_AdminOptions_t *opt;
	rd_kafka_queue_t *q;
	rd_kafka_event_t *ev;
	int rc = -1;

	nt = rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof err);
	if (!nt) {
		fprintf(stderr, "%s: %s: %s\n", prog, topic, err);
		return -1;
	}
	opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	if (rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, err, sizeof err) ||
	    rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, err, sizeof err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		rd_kafka_AdminOptions_destroy(opt);
		rd_kafka_NewTopic_destroy(nt);
		return -1;
	}
	q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	/* The request times out by itself; the margin only guards a lost event. */
	ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
	if (!ev) {
		fprintf(stderr, "%s: %s: no answer to CreateTopics within %d ms\n", prog, topic,
			timeout_ms);
	} else if (rd_kafka_event_error(ev)) {
		fprintf(stderr, "%s: %s: CreateTopics failed: %s\n", prog, topic,
			rd_kafka_event_error_string(ev));
	} else {
		size_t n = 0;
		const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
			rd_kafka_event_CreateTopics_result(ev), &n);
		rd_kafka_resp_err_t e =
			n == 1 ? rd_kafka_topic_result_error(res[0]) : RD_KAFKA_RESP_ERR__FAIL;

		if (e == RD_KAFKA_RESP_ERR_NO_ERROR ||
		    e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
			*existed = e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
			rc = 0;
		} else {
			const char *msg =
				n == 1 ? rd_kafka_topic_result_error_string(res[0]) : NULL;

			fprintf(stderr, "%s: %s: %s\n", prog, topic,
				msg && *msg ? msg : rd_kafka_err2str(e));
		}
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewTopic_destroy(nt);
	return rc;
}

/*
 * The topic's partition count once every partition has a leader; 0 while
 * the broker does not know it completely yet; -1 on a metadata error
 * (printed once per distinct error).
 */
static int ready_partitions(rd_kafka_t *rk, const char *topic, rd_kafka_resp_err_t *last)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e;
	int n = 0;

	if (!rkt)
		return -1;
	e = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
	if (e) {
		if (e != *last)
			fprintf(stderr, "%s: %s: metadata: %s (retrying)\n", prog, topic,
				rd_kafka_err2str(e));
		*last = e;
		n = e == RD_KAFKA_RESP_ERR__TIMED_OUT || e == RD_KAFKA_RESP_ERR__TRANSPORT ? 0 : -1;
	} else if (md->topic_cnt == 1 && !md->topics[0].err) {
		n = md->topics[0].partition_cnt;
		for (int i = 0; i < md->topics[0].partition_cnt; i++)
			if (md->topics[0].partitions[i].err ||
			    md->topics[0].partitions[i].leader < 0)
				n = 0;
	}
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	return n;
}

int main(int argc, char **argv)
{
	char err[512];
	const char *brokers, *topic, *env;
	int partitions = 3, timeout_ms = 30000, existed = 0, n = 0, rc = 1;
	rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR_NO_ERROR;
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	long long deadline;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s BROKERS TOPIC [PARTITIONS]\n", prog);
		return 2;
	}
	brokers = argv[1];
	topic = argv[2];
	if (argc == 4)
		partitions = (int)parse_long(argv[3], 1, 10000, "PARTITIONS");
	env = getenv("OUTBOX_KAFKA_TOPIC_TIMEOUT_MS");
	if (env && *env)
		timeout_ms = (int)parse_long(env, 100, 3600000, "OUTBOX_KAFKA_TOPIC_TIMEOUT_MS");

	conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err) ||
	    rd_kafka_conf_set(conf, "client.id", prog, err, sizeof err) ||
	    /* auto-creation would make the metadata probe create the topic with
	       the broker's default partition count */
	    rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", err, sizeof err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		rd_kafka_conf_destroy(conf);
		return 2;
	}
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
	if (!rk) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}

	deadline = now_ms() + timeout_ms;
	if (create_topic(rk, topic, partitions, timeout_ms, &existed) == 0) {
		while ((n = ready_partitions(rk, topic, &last)) == 0 && now_ms() < deadline) {
			struct timespec pause = {0, 100 * 1000000};

			nanosleep(&pause, NULL);
		}
		if (n == 0)
			fprintf(stderr, "%s: %s: partitions without a leader after %d ms\n", prog,
				topic, timeout_ms);
		else if (n > 0 && n != partitions)
			fprintf(stderr, "%s: %s: exists with %d partitions, not %d\n", prog, topic,
				n, partitions);
		else if (n > 0)
			rc = 0;
	}
	if (rc == 0)
		printf("%s: %s, %d partitions\n", topic, existed ? "exists" : "created", n);
	rd_kafka_destroy(rk);
	return rc;
}
