/*
 * kafkatest.c - see kafkatest.h.
 */
#include "tests/support/kafkatest.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned kafkatest_counter;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *kafkatest_brokers(void)
{
	const char *b = getenv("OUTBOX_KAFKA_BROKERS");

	return b && *b ? b : KAFKATEST_BROKERS_DEFAULT;
}

void kafkatest_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
	char err[512];

	if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK)
		ck_abort_msg("librdkafka: %s=%s: %s", key, value, err);
}

rd_kafka_conf_t *kafkatest_conf(void)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();

	kafkatest_conf_set(conf, "bootstrap.servers", kafkatest_brokers());
	kafkatest_conf_set(conf, "client.id", "outboxd-test");
	return conf;
}

void kafkatest_require_broker(void)
{
	char err[512];
	rd_kafka_conf_t *conf = kafkatest_conf();
	rd_kafka_t *rk;
	rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
	long long deadline = now_ms() + 30000;
	int brokers = 0;

	kafkatest_conf_set(conf, "allow.auto.create.topics", "false");
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
	if (!rk)
		ck_abort_msg("librdkafka: %s", err);
	while (now_ms() < deadline) {
		const struct rd_kafka_metadata *md = NULL;

		e = rd_kafka_metadata(rk, 0, NULL, &md, 5000);
		if (!e) {
			brokers = md->broker_cnt;
			rd_kafka_metadata_destroy(md);
			if (brokers > 0)
				break;
		}
		usleep(200 * 1000);
	}
	rd_kafka_destroy(rk);
	ck_assert_msg(brokers > 0,
		      "no Kafka broker answers on %s (OUTBOX_KAFKA_BROKERS) within 30 s: %s. "
		      "ops/test.sh starts one; alone, run `ops/kafka.sh start` first",
		      kafkatest_brokers(), e ? rd_kafka_err2str(e) : "no brokers in the metadata");
}

/* The port of the first broker of kafkatest_brokers(), as a string. */
static void broker_port(char *out, size_t n)
{
	const char *b = kafkatest_brokers();
	size_t len = strcspn(b, ",");
	const char *colon = memrchr(b, ':', len);
	size_t plen = colon ? len - (size_t)(colon + 1 - b) : 0;

	if (!colon || plen == 0 || plen >= n || strspn(colon + 1, "0123456789") < plen)
		ck_abort_msg("OUTBOX_KAFKA_BROKERS '%s': want 127.0.0.1:<port> for ops/kafka.sh",
			     b);
	memcpy(out, colon + 1, plen);
	out[plen] = '\0';
}

/* Run `bash ops/kafka.sh argv...` with --port; exit status or -1. */
static int run_script(const char *const *args, int nargs)
{
	const char *src = getenv("OUTBOX_SOURCE_DIR");
	char script[1024], port[16];
	const char *argv[16];
	int status, a = 0;
	pid_t pid;

	if (!src || !*src) {
		fprintf(stderr, "kafkatest: OUTBOX_SOURCE_DIR is not set (ctest sets it)\n");
		return -1;
	}
	snprintf(script, sizeof script, "%s/ops/kafka.sh", src);
	broker_port(port, sizeof port);
	argv[a++] = "bash";
	argv[a++] = script;
	for (int i = 0; i < nargs && a < 12; i++)
		argv[a++] = args[i];
	argv[a++] = "--port";
	argv[a++] = port;
	argv[a] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "kafkatest: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execvp("bash", (char *const *)argv);
		fprintf(stderr, "kafkatest: exec bash: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int kafkatest_script(const char *cmd)
{
	return run_script(&cmd, 1);
}

void kafkatest_fresh_topic(char *out, size_t n, const char *prefix, int partitions)
{
	char parts[16];
	const char *args[3] = {"topic", out, parts};
	int rc;

	if ((size_t)snprintf(out, n, "outboxd.test.%s.%lld.%d.%u", prefix, (long long)time(NULL),
			     (int)getpid(), kafkatest_counter++) >= n)
		ck_abort_msg("topic name buffer too small");
	snprintf(parts, sizeof parts, "%d", partitions);
	rc = run_script(args, 3);
	ck_assert_msg(rc == 0, "ops/kafka.sh topic %s %d exited %d", out, partitions, rc);
}

/*
 * The restart guard's marker: named by the guard's setup (in the process
 * that runs the suite), so forked tests inherit the name; a test creates the
 * file before it stops the broker and removes it once the broker is back.
 */
static char guard_marker[128];

void kafkatest_restart_guard_setup(void)
{
	snprintf(guard_marker, sizeof guard_marker, "/tmp/outboxd-kafkatest.%d.stopped",
		 (int)getpid());
	unlink(guard_marker);
}

void kafkatest_restart_guard_teardown(void)
{
	if (guard_marker[0] && access(guard_marker, F_OK) == 0) {
		fprintf(stderr, "kafkatest: a test left the broker stopped; starting it again\n");
		if (kafkatest_script("start") == 0)
			unlink(guard_marker);
	}
}

void kafkatest_broker_stop(void)
{
	int rc;

	if (guard_marker[0]) {
		FILE *f = fopen(guard_marker, "w");

		ck_assert_msg(f != NULL, "%s: %s", guard_marker, strerror(errno));
		fclose(f);
	}
	rc = kafkatest_script("stop");

	ck_assert_msg(rc == 0, "ops/kafka.sh stop exited %d", rc);
	rc = kafkatest_script("status");
	ck_assert_msg(rc == 1, "ops/kafka.sh status exited %d after stop: the broker still answers",
		      rc);
}

void kafkatest_broker_start(void)
{
	int rc = kafkatest_script("start");

	ck_assert_msg(rc == 0, "ops/kafka.sh start exited %d", rc);
	if (guard_marker[0])
		unlink(guard_marker);
}

static char *dup_bytes(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	ck_assert_ptr_nonnull(s);
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* The partition count of topic, from the broker's metadata. */
static int topic_partitions(rd_kafka_t *rk, const char *topic)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e;
	int n = 0;

	ck_assert_ptr_nonnull(rkt);
	e = rd_kafka_metadata(rk, 0, rkt, &md, 30000);
	ck_assert_msg(!e, "metadata of %s: %s", topic, rd_kafka_err2str(e));
	ck_assert_msg(md->topic_cnt == 1 && !md->topics[0].err, "metadata of %s: %s", topic,
		      md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "no such topic");
	n = md->topics[0].partition_cnt;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	return n;
}

size_t kafkatest_consume_all(const char *topic, size_t expect, int timeout_ms,
			     struct kafkatest_msgs *out)
{
	char err[512];
	rd_kafka_conf_t *conf = kafkatest_conf();
	rd_kafka_topic_partition_list_t *parts;
	rd_kafka_t *rk;
	rd_kafka_resp_err_t e;
	long long deadline = now_ms() + timeout_ms;
	size_t cap = expect > 16 ? expect + 16 : 32;
	int nparts, at_end = 0;
	char *eof, group[64];

	out->m = calloc(cap, sizeof *out->m);
	out->n = 0;
	ck_assert_ptr_nonnull(out->m);
	/* librdkafka's consumer wants a group even when partitions are assigned. */
	snprintf(group, sizeof group, "outboxd-test-%d-%u", (int)getpid(), kafkatest_counter++);
	kafkatest_conf_set(conf, "group.id", group);
	kafkatest_conf_set(conf, "enable.partition.eof", "true");
	kafkatest_conf_set(conf, "enable.auto.commit", "false");
	kafkatest_conf_set(conf, "auto.offset.reset", "earliest");
	kafkatest_conf_set(conf, "allow.auto.create.topics", "false");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
	if (!rk)
		ck_abort_msg("librdkafka consumer: %s", err);
	nparts = topic_partitions(rk, topic);
	eof = calloc((size_t)nparts, 1);
	ck_assert_ptr_nonnull(eof);
	parts = rd_kafka_topic_partition_list_new(nparts);
	for (int p = 0; p < nparts; p++)
		rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
	e = rd_kafka_assign(rk, parts);
	rd_kafka_topic_partition_list_destroy(parts);
	ck_assert_msg(!e, "assign %s: %s", topic, rd_kafka_err2str(e));

	while (!(out->n >= expect && at_end == nparts) && now_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
		struct kafkatest_msg *k;
		rd_kafka_headers_t *h = NULL;

		if (!m)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			if (m->partition >= 0 && m->partition < nparts && !eof[m->partition]) {
				eof[m->partition] = 1;
				at_end++;
			}
			rd_kafka_message_destroy(m);
			continue;
		}
		/* Anything else but a message is transient (the client retries). */
		if (m->err) {
			fprintf(stderr, "kafkatest: consuming %s: %s\n", topic,
				rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
			continue;
		}
		if (m->partition >= 0 && m->partition < nparts && eof[m->partition]) {
			eof[m->partition] = 0;
			at_end--;
		}
		if (out->n == cap) {
			cap *= 2;
			out->m = realloc(out->m, cap * sizeof *out->m);
			ck_assert_ptr_nonnull(out->m);
		}
		k = &out->m[out->n++];
		memset(k, 0, sizeof *k);
		k->key = m->key ? dup_bytes(m->key, m->key_len) : NULL;
		k->key_len = m->key_len;
		k->value = m->payload ? dup_bytes(m->payload, m->len) : NULL;
		k->len = m->len;
		k->partition = m->partition;
		k->offset = m->offset;
		if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
			k->headers = rd_kafka_headers_copy(h);
		rd_kafka_message_destroy(m);
	}
	free(eof);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return out->n;
}

void kafkatest_msgs_free(struct kafkatest_msgs *msgs)
{
	for (size_t i = 0; i < msgs->n; i++) {
		free(msgs->m[i].key);
		free(msgs->m[i].value);
		if (msgs->m[i].headers)
			rd_kafka_headers_destroy(msgs->m[i].headers);
	}
	free(msgs->m);
	msgs->m = NULL;
	msgs->n = 0;
}

const char *kafkatest_header(const struct kafkatest_msg *msg, const char *name, char *buf, size_t n,
			     size_t *len, int *is_null)
{
	const void *v = NULL;
	size_t size = 0;
	rd_kafka_resp_err_t e = msg->headers
					? rd_kafka_header_get_last(msg->headers, name, &v, &size)
					: RD_KAFKA_RESP_ERR__NOENT;

	ck_assert_msg(!e, "partition %d offset %lld: no header %s", (int)msg->partition,
		      (long long)msg->offset, name);
	ck_assert_msg(size < n, "header %s: %zu bytes do not fit", name, size);
	if (v)
		memcpy(buf, v, size);
	buf[size] = '\0';
	if (len)
		*len = size;
	if (is_null)
		*is_null = v == NULL;
	return buf;
}
