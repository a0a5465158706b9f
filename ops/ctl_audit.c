/*
 * ctl_audit.c - outboxctl audit: read outboxd's event topic and check it.
 *
 *	outboxctl audit [--topic T] [--brokers B] [--group G] [--json] [--op ID]
 *	                [--verify] [--timeout-ms N]
 *
 * Reads every partition of the topic from the beginning up to the end it had
 * when the audit started (its high watermarks), or, with --group, from that
 * consumer group's committed offsets (and commits what it read). Each event
 * is checked by common/audit.h: duplicates dropped (at least once), per-op
 * sequences without gaps, legal paths through the lifecycle, chain links.
 * --verify also rebuilds every chain from outbox.events_all (outbox.events and
 * the archived ops' outbox.events_archive, OUTBOX_DATABASE_URL),
 * checks it against outbox.chain_heads, and checks that each event on the
 * topic is the row it claims to be.
 *
 * Exit: 0 clean, 1 a problem found, 2 usage or a broker/database that cannot
 * be read.
 */
#include "ops/ctl.h"

#include "common/audit.h"
#include "common/events.h"

#include <errno.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AUDIT_MAX_PARTITIONS 1024
#define AUDIT_STEPS_MAX      4096

struct audit_opts {
	const char *topic, *brokers, *group;
	bool json, verify;
	int64_t op;
	int timeout_ms;
};

struct topic_read {
	size_t messages, unreadable;
	char first_unreadable[200];
};

static int usage(FILE *f)
{
	fprintf(f, "usage: outboxctl audit [--topic T] [--brokers B] [--group G] [--json] "
		   "[--op ID] [--verify] [--timeout-ms N]\n");
	return 2;
}

static int parse(int argc, char **argv, struct audit_opts *o)
{
	const char *t = getenv("OUTBOX_KAFKA_TOPIC"), *b = getenv("OUTBOX_KAFKA_BROKERS");

	*o = (struct audit_opts){.topic = t && *t ? t : "outbox.events",
				 .brokers = b && *b ? b : NULL,
				 .timeout_ms = 30000};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--json"))
			o->json = true;
		else if (!strcmp(a, "--verify"))
			o->verify = true;
		else if (!strcmp(a, "--topic") && v)
			o->topic = argv[++i];
		else if (!strcmp(a, "--brokers") && v)
			o->brokers = argv[++i];
		else if (!strcmp(a, "--group") && v)
			o->group = argv[++i];
		else if (!strcmp(a, "--op") && v && (o->op = strtoll(v, &end, 10)) > 0 && !*end)
			i++;
		else if (!strcmp(a, "--timeout-ms") && v &&
			 (o->timeout_ms = (int)strtol(v, &end, 10)) > 0 && !*end)
			i++;
		else if (!strcmp(a, "--help"))
			return usage(stdout), 1;
		else {
			fprintf(stderr, "outboxctl audit: bad argument '%s'\n", a);
			return usage(stderr);
		}
	}
	if (!o->brokers) {
		fprintf(stderr,
			"outboxctl audit: no brokers (--brokers or OUTBOX_KAFKA_BROKERS)\n");
		return 2;
	}
	return 0;
}

static rd_kafka_t *consumer(const struct audit_opts *o)
{
	char msg[512], group[96];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_t *rk;

	snprintf(group, sizeof(group), "outboxctl-audit-%d-%ld", (int)getpid(), (long)time(NULL));
	if (rd_kafka_conf_set(c, "bootstrap.servers", o->brokers, msg, sizeof(msg)) ||
	    rd_kafka_conf_set(c, "group.id", o->group ? o->group : group, msg, sizeof(msg)) ||
	    rd_kafka_conf_set(c, "enable.auto.commit", "false", msg, sizeof(msg)) ||
	    rd_kafka_conf_set(c, "auto.offset.reset", "earliest", msg, sizeof(msg)) ||
	    rd_kafka_conf_set(c, "enable.partition.eof", "true", msg, sizeof(msg))) {
		fprintf(stderr, "outboxctl audit: %s\n", msg);
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, msg, sizeof(msg))))
		fprintf(stderr, "outboxctl audit: %s\n", msg);
	return rk;
}

/*
 * Assign every partition of the topic, from the beginning (or the group's
 * offsets), and note where each ends now. Returns the partition count, or -1.
 */
static int assign(rd_kafka_t *rk, const struct audit_opts *o, int64_t *high)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *t = rd_kafka_topic_new(rk, o->topic, NULL);
	rd_kafka_topic_partition_list_t *l;
	rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, o->timeout_ms);
	int n;

	rd_kafka_topic_destroy(t);
	if (e || md->topic_cnt != 1 || md->topics[0].err) {
		fprintf(stderr, "outboxctl audit: topic %s: %s\n", o->topic,
			rd_kafka_err2str(e               ? e
					 : md->topic_cnt ? md->topics[0].err
							 : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
		if (!e)
			rd_kafka_metadata_destroy(md);
		return -1;
	}
	n = md->topics[0].partition_cnt;
	if (n > AUDIT_MAX_PARTITIONS)
		n = AUDIT_MAX_PARTITIONS;
	l = rd_kafka_topic_partition_list_new(n);
	for (int p = 0; p < n; p++) {
		int64_t low;
		int id = md->topics[0].partitions[p].id;
		rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, o->topic, id);
		tp->offset = o->group ? RD_KAFKA_OFFSET_STORED : RD_KAFKA_OFFSET_BEGINNING;
		if (rd_kafka_query_watermark_offsets(rk, o->topic, id, &low, &high[p],
						     o->timeout_ms)) {
			fprintf(stderr, "outboxctl audit: partition %d: no watermarks\n", id);
			n = -1;
			break;
		}
	}
	rd_kafka_metadata_destroy(md);
	if (n > 0 && rd_kafka_assign(rk, l)) {
		fprintf(stderr, "outboxctl audit: cannot assign %s's partitions\n", o->topic);
		n = -1;
	}
	rd_kafka_topic_partition_list_destroy(l);
	return n;
}

static void take(struct audit *a, const rd_kafka_message_t *m, struct topic_read *tr)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	json_error_t je;
	json_t *ce = json_loadb(m->payload, m->len, 0, &je);
	struct event_rec e;

	tr->messages++;
	if (!ce || event_from_cloud(&e, ce, &err) || audit_add(a, &e)) {
		if (!tr->unreadable++)
			snprintf(tr->first_unreadable, sizeof(tr->first_unreadable),
				 "partition %d offset %lld: %.120s", m->partition,
				 (long long)m->offset, ce ? err.msg : je.text);
	}
	if (ce)
		event_rec_clear(&e);
	json_decref(ce);
}

/* Read until every partition reached the end it had at the start. */
static int read_topic(const struct audit_opts *o, struct audit *a, struct topic_read *tr)
{
	rd_kafka_t *rk = consumer(o);
	int64_t high[AUDIT_MAX_PARTITIONS], done = 0, deadline;
	int n, rc = 0;

	if (!rk)
		return 2;
	if ((n = assign(rk, o, high)) < 0) {
		rd_kafka_destroy(rk);
		return 2;
	}
	for (int p = 0; p < n; p++)
		done += high[p] == 0;
	deadline = (int64_t)time(NULL) * 1000 + o->timeout_ms;
	while (done < n) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
		if ((int64_t)time(NULL) * 1000 > deadline) {
			fprintf(stderr, "outboxctl audit: timed out before the end of %s\n",
				o->topic);
			rc = 2;
			break;
		}
		if (!m)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			if (m->partition < n && m->offset >= high[m->partition] &&
			    high[m->partition] >= 0) {
				high[m->partition] = -1;
				done++;
			}
		} else if (m->err) {
			fprintf(stderr, "outboxctl audit: %s\n", rd_kafka_message_errstr(m));
		} else {
			take(a, m, tr);
			if (m->partition < n && m->offset + 1 >= high[m->partition] &&
			    high[m->partition] >= 0) {
				high[m->partition] = -1;
				done++;
			}
		}
		rd_kafka_message_destroy(m);
	}
	if (o->group && !rc)
		rd_kafka_commit(rk, NULL, 0);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return rc;
}

/* ---- --verify: the chains of outbox.events ---- */

static bool hex_of_bytea(const char *v, uint8_t out[32])
{
	size_t n = 0;

	return v[0] == '\\' && v[1] == 'x' && strlen(v) == 66 &&
	       !sodium_hex2bin(out, 32, v + 2, 64, NULL, &n, NULL) && n == 32;
}

/* One sealed row of the table (the column order of the SELECT below) into the audit. */
static int table_row(struct audit *a, const PGresult *r)
{
	struct event_rec e;
	int rc;

	memset(&e, 0, sizeof(e));
	e.id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	e.op_id = PQgetisnull(r, 0, 1) ? 0 : strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	e.seq = PQgetisnull(r, 0, 2) ? 0 : atoi(PQgetvalue(r, 0, 2));
	snprintf(e.type, sizeof(e.type), "%s", PQgetvalue(r, 0, 3));
	snprintf(e.from, sizeof(e.from), "%s", PQgetvalue(r, 0, 4));
	snprintf(e.to, sizeof(e.to), "%s", PQgetvalue(r, 0, 5));
	e.at_us = strtoll(PQgetvalue(r, 0, 6), NULL, 10);
	snprintf(e.chain, sizeof(e.chain), "%s", PQgetvalue(r, 0, 8));
	e.chain_seq = strtoll(PQgetvalue(r, 0, 9), NULL, 10);
	if (!(e.body = json_loads(PQgetvalue(r, 0, 7), 0, NULL)) ||
	    !hex_of_bytea(PQgetvalue(r, 0, 10), e.prev) ||
	    !hex_of_bytea(PQgetvalue(r, 0, 11), e.hash))
		rc = -EINVAL;
	else
		rc = audit_add(a, &e);
	event_rec_clear(&e);
	return rc;
}

/* Every sealed row, read one at a time (the table may be large), and the heads. */
static int read_table(PGconn *c, struct audit *a, size_t *rows)
{
	PGresult *r;
	int rc = 0;

	if (!PQsendQuery(c, "SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status, "
			    "(extract(epoch FROM e.at) * 1000000)::bigint, e.body::text, e.chain, "
			    "e.chain_seq, e.chain_prev, e.chain_hash FROM outbox.events_all e "
			    "WHERE e.chain_seq IS NOT NULL") ||
	    !PQsetSingleRowMode(c))
		return -EIO;
	while ((r = PQgetResult(c))) {
		if (PQresultStatus(r) == PGRES_SINGLE_TUPLE) {
			(*rows)++;
			if (table_row(a, r) && !rc)
				rc = -EINVAL;
		} else if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			fprintf(stderr, "outboxctl audit: %s", PQresultErrorMessage(r));
			rc = -EIO;
		}
		PQclear(r);
	}
	if (rc)
		return rc;
	r = PQexec(c,
		   "SELECT chain, seq, encode(hash, 'hex') FROM outbox.chain_heads WHERE seq > 0");
	for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); i++) {
		uint8_t h[32];
		sodium_hex2bin(h, 32, PQgetvalue(r, i, 2), 64, NULL, NULL, NULL);
		audit_expect_head(a, PQgetvalue(r, i, 0), strtoll(PQgetvalue(r, i, 1), NULL, 10),
				  h);
	}
	rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -EIO;
	PQclear(r);
	return rc;
}

struct verify {
	size_t rows, mismatches;
	struct audit_report rep;
	char first_mismatch[200];
};

/*
 * The topic's chains against the table's: each chain's newest link on the
 * topic must be the table's link at that number (the chain property makes
 * that one comparison cover the whole prefix).
 */
static void compare_ends(PGconn *c, const struct audit *topic, struct verify *v)
{
	struct audit_chain_end ends[512];
	size_t n = audit_chain_ends(topic, ends, 512);

	for (size_t i = 0; i < n && i < 512; i++) {
		char seq[24], hex[65];
		const char *p[2] = {ends[i].chain, seq};
		PGresult *r;

		snprintf(seq, sizeof(seq), "%lld", (long long)ends[i].seq);
		sodium_bin2hex(hex, sizeof(hex), ends[i].hash, 32);
		r = PQexecParams(
			c,
			"SELECT encode(chain_hash, 'hex') FROM outbox.events_all WHERE chain = $1 "
			"AND chain_seq = $2::bigint",
			2, NULL, p, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
		    strcmp(PQgetvalue(r, 0, 0), hex)) {
			if (!v->mismatches++)
				snprintf(v->first_mismatch, sizeof(v->first_mismatch),
					 "chain %.64s link %lld on the topic is not the table's",
					 ends[i].chain, (long long)ends[i].seq);
		}
		PQclear(r);
	}
}

static int verify_table(const struct audit *topic, struct verify *v)
{
	const char *url = getenv("OUTBOX_DATABASE_URL");
	PGconn *c;
	struct audit *a;
	int rc;

	if (!url || !*url) {
		fprintf(stderr, "outboxctl audit: --verify needs OUTBOX_DATABASE_URL\n");
		return 2;
	}
	c = PQconnectdb(url);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "outboxctl audit: database: %s", PQerrorMessage(c));
		PQfinish(c);
		return 2;
	}
	if (!(a = audit_new())) {
		PQfinish(c);
		return 2;
	}
	rc = read_table(c, a, &v->rows);
	if (rc == -EINVAL && !v->mismatches++)
		snprintf(v->first_mismatch, sizeof(v->first_mismatch),
			 "a sealed row of outbox.events cannot be read back");
	audit_finish(a, &v->rep);
	if (rc != -EIO)
		compare_ends(c, topic, v);
	audit_free(a);
	PQfinish(c);
	return rc == -EIO ? 2 : 0;
}

/* ---- output ---- */

static void print_timeline(const struct audit *a, int64_t op, bool json)
{
	static struct audit_step steps[AUDIT_STEPS_MAX];
	size_t n = audit_op_steps(a, op, steps, AUDIT_STEPS_MAX);
	json_t *arr = json_array();

	if (n > AUDIT_STEPS_MAX)
		n = AUDIT_STEPS_MAX;
	for (size_t i = 0; i < n; i++) {
		char t[EVENT_TIME_MAX];
		event_time_format(steps[i].at_us, t);
		if (json)
			json_array_append_new(arr, json_pack("{s:I, s:I, s:s, s:s, s:s, s:s}",
							     "seq", (json_int_t)steps[i].seq, "id",
							     (json_int_t)steps[i].id, "time", t,
							     "type", steps[i].type, "from",
							     steps[i].from, "to", steps[i].to));
		else
			printf("  %3d  %s  %-16s %s -> %s\n", steps[i].seq, t, steps[i].type,
			       *steps[i].from ? steps[i].from : "-",
			       *steps[i].to ? steps[i].to : "-");
	}
	if (json)
		json_dumpf(arr, stdout, JSON_INDENT(2)), printf("\n");
	else if (!n)
		printf("  op %lld: no events on the topic\n", (long long)op);
	json_decref(arr);
}

static void print_report(const struct audit_opts *o, const struct topic_read *tr,
			 const struct audit_report *r, const struct verify *v)
{
	if (o->json) {
		json_t *d = json_pack(
			"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "topic",
			o->topic, "messages", (json_int_t)tr->messages, "events",
			(json_int_t)r->events, "duplicates", (json_int_t)r->duplicates, "conflicts",
			(json_int_t)r->conflicts, "unreadable", (json_int_t)tr->unreadable, "ops",
			(json_int_t)r->ops, "gaps", (json_int_t)r->gaps, "illegal",
			(json_int_t)r->illegal, "chains", (json_int_t)r->chains, "broken",
			(json_int_t)r->broken, "first_problem",
			tr->unreadable ? tr->first_unreadable : r->first);
		if (v)
			json_object_set_new(
				d, "verify",
				json_pack("{s:I, s:I, s:I, s:I, s:s}", "table_rows",
					  (json_int_t)v->rows, "chains", (json_int_t)v->rep.chains,
					  "broken", (json_int_t)v->rep.broken, "mismatches",
					  (json_int_t)v->mismatches, "first_problem",
					  v->rep.first[0] ? v->rep.first : v->first_mismatch));
		json_dumpf(d, stdout, JSON_INDENT(2));
		printf("\n");
		json_decref(d);
		return;
	}
	printf("topic %s: %zu messages, %zu events (%zu duplicates dropped), %zu ops, %zu chains\n",
	       o->topic, tr->messages, r->events, r->duplicates, r->ops, r->chains);
	printf("gaps %zu, illegal moves %zu, broken links %zu, conflicts %zu, unreadable %zu\n",
	       r->gaps, r->illegal, r->broken, r->conflicts, tr->unreadable);
	if (r->first[0] || tr->unreadable)
		printf("first problem: %s\n", tr->unreadable ? tr->first_unreadable : r->first);
	if (v) {
		printf("table: %zu sealed events in %zu chains, broken links %zu (heads checked), "
		       "topic/table mismatches %zu\n",
		       v->rows, v->rep.chains, v->rep.broken, v->mismatches);
		if (v->rep.first[0] || v->first_mismatch[0])
			printf("first problem: %s\n",
			       v->rep.first[0] ? v->rep.first : v->first_mismatch);
	}
}

int ctl_audit(int argc, char **argv)
{
	struct audit_opts o;
	struct topic_read tr = {0};
	struct audit_report r;
	struct verify v = {0};
	struct audit *a;
	int rc = parse(argc, argv, &o);
	bool clean;

	if (rc)
		return rc == 1 ? 0 : rc;
	if (sodium_init() < 0 || !(a = audit_new()))
		return 2;
	if ((rc = read_topic(&o, a, &tr))) {
		audit_free(a);
		return rc;
	}
	audit_finish(a, &r);
	if (o.verify && (rc = verify_table(a, &v))) {
		audit_free(a);
		return rc;
	}
	if (o.op)
		print_timeline(a, o.op, o.json);
	else
		print_report(&o, &tr, &r, o.verify ? &v : NULL);
	clean = audit_clean(&r) && !tr.unreadable &&
		(!o.verify || (audit_clean(&v.rep) && !v.mismatches));
	if (!o.json && !o.op)
		printf("audit: %s\n", clean ? "clean" : "PROBLEMS FOUND");
	audit_free(a);
	return clean ? 0 : 1;
}
