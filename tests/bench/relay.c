/*
 * bench_relay - how many events per second the event relay (common/relay.h)
 * moves from outbox.events to the local Kafka broker, and how long an event
 * takes from its commit to the broker's acknowledgement.
 *
 * Setup: a fresh database (tests/support/pgtest.h) with BENCH_VSHARDS (16)
 * vshards, a fresh topic of BENCH_PARTITIONS (4) partitions (created by
 * kafka-topic, which is built next to this binary), every vshard's lease
 * taken by one owner, and ONE relay in this process. The main thread drives
 * the relay the way a worker's loop does (relay_tick every turn,
 * relay_on_ready for its fds, relay_timeout_ms as the epoll timeout) and
 * gives it a private stats block. Phases, one JSON line each:
 *
 *	backlog  BENCH_EVENTS (20000) ops enqueued through outbox.enqueue (one
 *	         ENQUEUED event each) in transactions of 1000, while the relay
 *	         is connected but holds no lease. Then it gets the leases and the
 *	         clock starts: events/s until every event is published, i.e.
 *	         until the last published cursor moved (the newest
 *	         outbox.chain_heads.published_at: the now() of the statement
 *	         that moved it), and when the relay's counters reached the
 *	         event count: sealed_s, produced_s, acked_s (the last delivery
 *	         report went into a cursor statement, at most RELAY_MARK_MS
 *	         after the acknowledgement). Also the CPU this process used (the
 *	         relay and librdkafka's threads), the CPU of the relay's PostgreSQL
 *	         backend (from /proc, so the server must be this host's, as
 *	         pgtest.h requires anyway), and the loop turns.
 *	steady   for each rate of BENCH_RATES ("500,2000"; "none" skips the
 *	         phase) events/s, a second thread enqueues on its own blocking
 *	         connection for BENCH_SECONDS (10), one transaction per
 *	         BENCH_TICK_MS (10) holding the events due by then (a commit per
 *	         event cannot reach 2000/s on a loaded 2-core machine). Lag
 *	         p50/p99/max over the phase's events, three ways:
 *	           lag_*          first cursor poll covering the event - at.
 *	                          An event's row keeps no publish time (its
 *	                          chain's cursor covers it: 0028), so while the
 *	                          phase runs the bench polls outbox.chain_heads
 *	                          (chain, published_seq) on its own connection,
 *	                          after a loop turn once CURSOR_POLL_MS (10)
 *	                          have passed since the last poll (a turn waits
 *	                          at most 20 ms), and once more when everything
 *	                          is published. An event's publish time is the
 *	                          time (the server's clock_timestamp()) of the
 *	                          first poll in which its chain's published_seq
 *	                          >= its chain_seq, kept in a temporary table of
 *	                          the bench's connection; at
 *	                          is the enqueue transaction's now() (its start,
 *	                          a few ms before its commit). So it includes
 *	                          the cursor batching (up to RELAY_MARK_MS) and
 *	                          up to one poll interval, which is its
 *	                          resolution: 10-20 ms, more on a loaded
 *	                          machine (lag_poll_gap_max_ms is the longest
 *	                          gap between two polls, lag_polls their count).
 *	                          The polls are not the relay's backend's, so
 *	                          pg_backend_cpu_s does not count them;
 *	           produce_lag_*  the Kafka message's CreateTime (librdkafka
 *	                          stamps it when the relay produces) - the
 *	                          CloudEvent time (events.at): the idle poll and
 *	                          the seal;
 *	           consume_lag_*  when a consumer of the topic (a third thread)
 *	                          got the message - the CloudEvent time: commit
 *	                          to acknowledgement plus the consumer's fetch,
 *	                          without the cursor moves.
 *	         enqueue_txn_p50/p99_ms say how long the enqueue transactions took,
 *	         i.e. how much earlier than its commit an event's time is.
 *
 * Every line carries the 1-minute load average, since the machine is shared.
 * Never asserts on timings; it fails (exit 1) only when it cannot run: no
 * database, no broker, or the relay does not publish everything within
 * BENCH_TIMEOUT_S (300).
 *
 * Run (the broker: ops/kafka.sh start; OUTBOX_KAFKA_BROKERS defaults to
 * 127.0.0.1:9092, OUTBOX_PG_BASE as in pgtest.h):
 *	OUTBOX_PG_BASE=... OUTBOX_KAFKA_BROKERS=127.0.0.1:9092 build/bench_relay
 */
#include "common/clock.h"
#include "common/relay.h"
#include "common/shm/stats.h"
#include "tests/support/pgtest.h"

#include <errno.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSIGNERS       256
#define STR(x)         #x
#define XSTR(x)        STR(x)
#define MAX_VSHARDS    4096
#define MAX_PARTS      256
#define LEASE_TTL_MS   600000 /* renewed every LEASE_RENEW_MS: a long run keeps them */
#define LEASE_RENEW_MS 60000
#define TAG_PG         1
#define TAG_KAFKA      2
#define CURSOR_POLL_MS 10 /* a steady phase's polls of the published cursors */

struct bench {
	struct pgtest_db db;
	PGconn *admin;
	const char *brokers;
	char topic[160];
	char owner[64];
	int ep;
	struct relay *relay;
	struct shm_stats_block *stats;
	int vshards[MAX_VSHARDS];
	int64_t epochs[MAX_VSHARDS];
	int n_vshards;
	int64_t leases_renewed_ms;
	bool relaying;          /* the relay has the leases */
	long turns, zero_waits; /* loop turns, and those relay_timeout_ms made 0 */
	long timeout_s;
};

/* ---- small helpers ---- */

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || x < lo || x > hi) {
		fprintf(stderr, "bench_relay: %s: '%s' is not an integer in %ld..%ld\n", name, v,
			lo, hi);
		exit(2);
	}
	return x;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double load1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static double cpu_self_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* utime + stime of a process, from /proc/<pid>/stat; -1 when unreadable. */
static double cpu_pid_s(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (pid <= 0 || !(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold spaces: fields count from its closing ')' */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int exec_ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

	if (!ok)
		fprintf(stderr, "bench_relay: %.120s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	return ok ? 0 : -1;
}

/* The first column of the first row as a double; -1 when NULL or on error. */
static double scalar(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	double v = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		v = strtod(PQgetvalue(r, 0, 0), NULL);
	else if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fprintf(stderr, "bench_relay: %.120s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array; -1 when empty. */
static double pct(const double *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (!n)
		return -1;
	k = k < 1 ? 1 : k > n ? n : k;
	return v[k - 1];
}

/* ---- enqueueing ---- */

/*
 * count enqueued; ops brid <tag><i> for i in [$1, $2], signers rotating over
 * bench.signers so every vshard gets its share.
 */
static const char enqueue_sql[] =
	"SELECT count(outbox.enqueue('DEPOSIT', 'bench', $3 || i, s.key, "
	"jsonb_build_object('account', d.key, 'amount', '1000'))) "
	"FROM generate_series($1::bigint, $2::bigint) i "
	"JOIN bench.signers s ON s.n = i % " XSTR(
		NSIGNERS) " "
			  "JOIN bench.signers d ON d.n = (i + 1) % " XSTR(NSIGNERS);

static int enqueue_range(PGconn *c, const char *tag, long from, long to)
{
	char a[24], b[24];
	const char *p[3] = {a, b, tag};
	PGresult *r;
	int rc;

	snprintf(a, sizeof(a), "%ld", from);
	snprintf(b, sizeof(b), "%ld", to);
	r = PQexecParams(c, enqueue_sql, 3, NULL, p, NULL, NULL, 0);
	rc = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
			     atol(PQgetvalue(r, 0, 0)) == to - from + 1
		     ? 0
		     : -1;
	if (rc)
		fprintf(stderr, "bench_relay: enqueue %s%ld..%ld: %s", tag, from, to,
			PQresultErrorMessage(r));
	PQclear(r);
	return rc;
}

static int setup_signers(PGconn *c)
{
	char sql[NSIGNERS * 80 + 256];
	size_t a;

	a = (size_t)snprintf(sql, sizeof(sql),
			     "CREATE SCHEMA bench; CREATE TABLE bench.signers (n int PRIMARY KEY, "
			     "key text NOT NULL); INSERT INTO bench.signers VALUES ");
	for (uint32_t i = 0; i < NSIGNERS; i++) {
		char key[57];

		pgtest_account(i, key);
		a += (size_t)snprintf(sql + a, sizeof(sql) - a, "%s(%u, '%s')", i ? "," : "", i,
				      key);
	}
	return exec_ok(c, sql);
}

/*
 * The paced enqueuer of a steady phase. A transaction holds at most two
 * ticks' worth of events: an enqueuer that fell behind and caught up in one
 * big transaction would date all its events at that transaction's start
 * (events.at), and the lag would measure the enqueue, not the relay. Behind
 * schedule it stays behind: achieved_per_s says so.
 */
struct inserter {
	const char *conninfo;
	char tag[32];
	long rate, tick_ms;
	double seconds;
	long inserted;
	double elapsed;
	double *txn_ms; /* each transaction's duration: how far events.at is from the commit */
	long n_txn, cap_txn;
	bool failed;
	atomic_bool done;
	pthread_t th;
};

static void *insert_main(void *arg)
{
	struct inserter *in = arg;
	PGconn *c = PQconnectdb(in->conninfo);
	long k = 1, most = 2 * in->rate * in->tick_ms / 1000;
	double t0, el;

	if (most < 1)
		most = 1;
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "bench_relay: inserter: %s", PQerrorMessage(c));
		in->failed = true;
		goto out;
	}
	t0 = wall_s();
	while ((el = wall_s() - t0) < in->seconds) {
		double next = (double)(k * in->tick_ms) / 1000.0, t;
		long due;

		if (next > el)
			usleep((useconds_t)((next - el) * 1e6));
		k++;
		el = wall_s() - t0;
		if (el > in->seconds)
			el = in->seconds;
		due = (long)(el * (double)in->rate);
		if (due - in->inserted > most)
			due = in->inserted + most;
		if (due <= in->inserted)
			continue;
		t = wall_s();
		if (enqueue_range(c, in->tag, in->inserted, due - 1)) {
			in->failed = true;
			break;
		}
		if (in->n_txn < in->cap_txn)
			in->txn_ms[in->n_txn++] = (wall_s() - t) * 1000.0;
		in->inserted = due;
	}
	in->elapsed = wall_s() - t0;
out:
	PQfinish(c);
	atomic_store(&in->done, true);
	return NULL;
}

/* ---- the consumer of a steady phase ---- */

struct consumer {
	rd_kafka_t *rk;
	long expect;
	atomic_bool stop;
	double *produce_ms, *consume_ms; /* per message */
	atomic_long n;                   /* read by the main thread while the consumer runs */
	long cap, bad; /* bad: messages without a CloudEvent time or a CreateTime */
	pthread_t th;
};

/* "2026-12-03T13:05:07.123456Z" as unix seconds; -1 when it is not that. */
static double rfc3339_s(const char *s)
{
	struct tm tm = {0};
	int us = 0, n = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us, &n) != 7 ||
	    (size_t)n != strlen(s))
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + (double)us / 1e6;
}

static void consumed(struct consumer *k, const rd_kafka_message_t *m, double got)
{
	rd_kafka_timestamp_type_t tt;
	int64_t created = rd_kafka_message_timestamp(m, &tt);
	json_t *ce = json_loadb(m->payload, m->len, 0, NULL);
	const char *t = json_string_value(json_object_get(ce, "time"));
	double at = t ? rfc3339_s(t) : -1;
	long i = atomic_load(&k->n);

	json_decref(ce);
	if (at < 0 || tt != RD_KAFKA_TIMESTAMP_CREATE_TIME) {
		k->bad++;
		return;
	}
	if (i == k->cap) {
		long cap = k->cap ? 2 * k->cap : 4096;
		double *p = realloc(k->produce_ms, (size_t)cap * sizeof(*p)),
		       *q = p ? realloc(k->consume_ms, (size_t)cap * sizeof(*q)) : NULL;
		if (p)
			k->produce_ms = p;
		if (!q) {
			k->bad++;
			return;
		}
		k->consume_ms = q;
		k->cap = cap;
	}
	k->produce_ms[i] = (double)created - at * 1000.0;
	k->consume_ms[i] = (got - at) * 1000.0;
	atomic_store(&k->n, i + 1);
}

static void *consume_main(void *arg)
{
	struct consumer *k = arg;

	while (atomic_load(&k->n) < k->expect && !atomic_load(&k->stop)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, 100);

		if (!m)
			continue;
		if (!m->err)
			consumed(k, m, wall_s());
		else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
			fprintf(stderr, "bench_relay: consumer: %s\n", rd_kafka_message_errstr(m));
		rd_kafka_message_destroy(m);
	}
	return NULL;
}

/*
 * A consumer of the topic from its current end (the high watermarks, read
 * now: nothing of the phase has been produced yet), no group offsets.
 */
static int consumer_start(struct bench *b, struct consumer *k, long expect)
{
	char err[512], group[64];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_topic_partition_list_t *parts;
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt;
	int nparts = 0;

	memset(k, 0, sizeof(*k));
	k->expect = expect;
	/* librdkafka's consumer wants a group even when partitions are assigned */
	snprintf(group, sizeof(group), "outboxd-bench-relay-%d", (int)getpid());
	if (rd_kafka_conf_set(conf, "bootstrap.servers", b->brokers, err, sizeof(err)) ||
	    rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err)) ||
	    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err)) ||
	    rd_kafka_conf_set(conf, "fetch.wait.max.ms", "50", err, sizeof(err))) {
		fprintf(stderr, "bench_relay: consumer: %s\n", err);
		rd_kafka_conf_destroy(conf);
		return -1;
	}
	if (!(k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err)))) {
		fprintf(stderr, "bench_relay: consumer: %s\n", err);
		return -1;
	}
	rkt = rd_kafka_topic_new(k->rk, b->topic, NULL);
	if (rkt && !rd_kafka_metadata(k->rk, 0, rkt, &md, 10000)) {
		if (md->topic_cnt == 1 && !md->topics[0].err)
			nparts = md->topics[0].partition_cnt;
		rd_kafka_metadata_destroy(md);
	}
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	if (nparts <= 0 || nparts > MAX_PARTS) {
		fprintf(stderr, "bench_relay: no metadata for topic %s\n", b->topic);
		goto fail;
	}
	parts = rd_kafka_topic_partition_list_new(nparts);
	for (int p = 0; p < nparts; p++) {
		int64_t lo, hi;
		rd_kafka_resp_err_t e =
			rd_kafka_query_watermark_offsets(k->rk, b->topic, p, &lo, &hi, 10000);
		if (e) {
			fprintf(stderr, "bench_relay: watermarks of %s/%d: %s\n", b->topic, p,
				rd_kafka_err2str(e));
			rd_kafka_topic_partition_list_destroy(parts);
			goto fail;
		}
		rd_kafka_topic_partition_list_add(parts, b->topic, p)->offset = hi;
	}
	if (rd_kafka_assign(k->rk, parts)) {
		rd_kafka_topic_partition_list_destroy(parts);
		goto fail;
	}
	rd_kafka_topic_partition_list_destroy(parts);
	if (pthread_create(&k->th, NULL, consume_main, k) == 0)
		return 0;
fail:
	rd_kafka_destroy(k->rk);
	return -1;
}

static void consumer_stop(struct consumer *k)
{
	atomic_store(&k->stop, true);
	pthread_join(k->th, NULL);
	rd_kafka_consumer_close(k->rk);
	rd_kafka_destroy(k->rk);
}

/* ---- the relay and its leases ---- */

static int take_leases(struct bench *b)
{
	char owner_sql[256];
	PGresult *r;
	int n = 0;

	snprintf(owner_sql, sizeof(owner_sql),
		 "SELECT v, outbox.lease_acquire('%s', v, %d) FROM generate_series(0, "
		 "(SELECT vshards FROM outbox.settings) - 1) v ORDER BY v",
		 b->owner, LEASE_TTL_MS);
	r = PQexec(b->admin, owner_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "bench_relay: lease_acquire: %s", PQresultErrorMessage(r));
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < PQntuples(r) && n < MAX_VSHARDS; i++) {
		if (PQgetisnull(r, i, 1))
			continue; /* nobody else runs on this database: only if it expired */
		b->vshards[n] = atoi(PQgetvalue(r, i, 0));
		b->epochs[n++] = strtoll(PQgetvalue(r, i, 1), NULL, 10);
	}
	PQclear(r);
	b->n_vshards = n;
	b->leases_renewed_ms = mono_ms();
	return n ? 0 : -1;
}

/* One turn of the owner's loop: wait at most max_ms for the relay's fds. */
static void turn(struct bench *b, int max_ms)
{
	struct epoll_event ev[16];
	int t = relay_timeout_ms(b->relay, mono_ms()), n;

	if (t > max_ms)
		t = max_ms < 0 ? 0 : max_ms; /* a negative epoll timeout waits forever */
	b->turns++;
	b->zero_waits += t == 0;
	n = epoll_wait(b->ep, ev, 16, t);
	for (int i = 0; i < n; i++)
		relay_on_ready(b->relay, ev[i].data.u64, ev[i].events);
	relay_tick(b->relay, mono_ms());
	if (b->n_vshards && mono_ms() - b->leases_renewed_ms > LEASE_RENEW_MS) {
		/* the same owner re-acquiring a live lease renews it (same epoch) */
		if (take_leases(b) == 0 && b->relaying)
			relay_set_vshards(b->relay, b->owner, b->vshards, b->epochs, b->n_vshards);
	}
}

/* Drive the relay for ms milliseconds. */
static void drive_for(struct bench *b, int ms)
{
	int64_t until = mono_ms() + ms;

	while (mono_ms() < until)
		turn(b, (int)(until - mono_ms()));
}

/* Events with id > after that Kafka has not acknowledged; -1 on error. */
static long unpublished_after(struct bench *b, long after)
{
	char a[24];
	const char *p[1] = {a};

	snprintf(a, sizeof(a), "%ld", after);
	return (long)scalar(
		b->admin, "SELECT count(*) FROM outbox.events_not_published WHERE id > $1::bigint",
		1, p);
}

static long max_event_id(struct bench *b)
{
	double v = scalar(b->admin, "SELECT coalesce(max(id), 0) FROM outbox.events", 0, NULL);

	return (long)v;
}

static long backend_pid(struct bench *b)
{
	const char *p[1] = {b->db.name};

	return (long)scalar(b->admin,
			    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND "
			    "application_name = 'outboxd-bench'",
			    1, p);
}

/*
 * Turn the relay until every event after `after` is published (checked
 * every 100 ms, once the inserter, if any, is done); false after the timeout.
 */
static bool drive_until_published(struct bench *b, long after, struct inserter *in,
				  void (*each_turn)(struct bench *, void *), void *arg)
{
	int64_t deadline = mono_ms() + b->timeout_s * 1000, next_check = 0;

	for (;;) {
		turn(b, 20);
		if (each_turn)
			each_turn(b, arg);
		if (mono_ms() < next_check || (in && !atomic_load(&in->done)))
			continue;
		next_check = mono_ms() + 100;
		if (unpublished_after(b, after) == 0)
			return true;
		if (mono_ms() > deadline)
			return false;
	}
}

/* ---- phases ---- */

struct timeline {
	long n;
	int64_t t0;
	double first_sealed, sealed, produced, acked;
};

static void watch_counters(struct bench *b, void *arg)
{
	struct timeline *tl = arg;
	double s = (double)(mono_ms() - tl->t0) / 1000.0;
	uint64_t sealed = stats_counter_read(b->stats, MET_EVENTS_SEALED);

	if (tl->first_sealed < 0 && sealed)
		tl->first_sealed = s;
	if (tl->sealed < 0 && sealed >= (uint64_t)tl->n)
		tl->sealed = s;
	if (tl->produced < 0 &&
	    stats_counter_read(b->stats, MET_EVENTS_PRODUCED) >= (uint64_t)tl->n)
		tl->produced = s;
	if (tl->acked < 0 && stats_counter_read(b->stats, MET_EVENTS_PUBLISHED) >= (uint64_t)tl->n)
		tl->acked = s;
}

static int phase_backlog(struct bench *b, long events)
{
	struct timeline tl = {events, 0, -1, -1, -1, -1};
	long first = max_event_id(b), pid;
	double t0_wall, cpu0, pg0, last, enqueue_s = wall_s();

	/* the relay connected (PostgreSQL and the broker) and idle: no lease, no chain */
	drive_for(b, 1000);
	for (long i = 0; i < events; i += 1000)
		if (enqueue_range(b->admin, "b", i, (i + 1000 < events ? i + 1000 : events) - 1))
			return -1;
	enqueue_s = wall_s() - enqueue_s;
	exec_ok(b->admin, "VACUUM ANALYZE outbox.ops, outbox.events");
	pid = backend_pid(b);
	pg0 = cpu_pid_s(pid);
	cpu0 = cpu_self_s();
	b->turns = b->zero_waits = 0;
	tl.t0 = mono_ms();
	t0_wall = wall_s();
	relay_set_vshards(b->relay, b->owner, b->vshards, b->epochs, b->n_vshards);
	b->relaying = true;
	if (!drive_until_published(b, first, NULL, watch_counters, &tl)) {
		fprintf(stderr, "bench_relay: backlog not published within %ld s\n", b->timeout_s);
		return -1;
	}
	{
		double cpu = cpu_self_s() - cpu0, pg = cpu_pid_s(pid) - pg0;

		last = scalar(b->admin,
			      "SELECT extract(epoch FROM max(published_at)) FROM "
			      "outbox.chain_heads",
			      0, NULL) -
		       t0_wall;
		printf("{\"bench\":\"relay\",\"phase\":\"backlog\",\"events\":%ld,"
		       "\"enqueue_s\":%.2f,\"seconds\":%.3f,\"events_per_s\":%.0f,"
		       "\"first_sealed_s\":%.3f,\"sealed_s\":%.3f,\"produced_s\":%.3f,"
		       "\"acked_s\":%.3f,\"produced\":%llu,\"delivery_failures\":%llu,"
		       "\"bench_cpu_s\":%.2f,\"pg_backend_cpu_s\":%.2f,"
		       "\"pg_backend_us_per_event\":%.0f,\"loop_turns\":%ld,"
		       "\"zero_timeout_turns\":%ld,\"vshards\":%d,\"load1\":%.2f}\n",
		       events, enqueue_s, last, (double)events / last, tl.first_sealed, tl.sealed,
		       tl.produced, tl.acked,
		       (unsigned long long)stats_counter_read(b->stats, MET_EVENTS_PRODUCED),
		       (unsigned long long)stats_counter_read(b->stats,
							      MET_EVENT_DELIVERY_FAILURES),
		       cpu, pg, pg >= 0 ? pg * 1e6 / (double)events : -1, b->turns, b->zero_waits,
		       b->n_vshards, load1());
		fflush(stdout);
	}
	return 0;
}

/* ---- the published cursors of a steady phase, as the bench sees them ---- */

/*
 * The polls of outbox.chain_heads of a steady phase (the header). Each poll
 * adds to the temporary table cursor_polls of the bench's connection the
 * chains whose cursor moved since the last poll saw them, with the time of
 * the poll (clock_timestamp(): the server's clock, as events.at's).
 */
struct cursor_watch {
	int64_t next_ms; /* mono_ms() of the next poll */
	long polls;
	double last_t, max_gap_ms;
	bool failed;
};

/* A command of the bench's connection that returns no rows; false (logged) on error. */
static bool watch_exec(struct bench *b, const char *sql)
{
	PGresult *r = PQexec(b->admin, sql);
	bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;

	if (!ok)
		fprintf(stderr, "bench_relay: cursor polls: %s", PQresultErrorMessage(r));
	PQclear(r);
	return ok;
}

/* One poll of every chain's cursor, on the bench's connection. */
static void watch_poll(struct bench *b, struct cursor_watch *w)
{
	double t = wall_s();

	w->next_ms = mono_ms() + CURSOR_POLL_MS;
	w->failed = w->failed ||
		    !watch_exec(b, "INSERT INTO pg_temp.cursor_polls SELECT h.chain, "
				   "h.published_seq, clock_timestamp() FROM outbox.chain_heads h "
				   "WHERE NOT EXISTS (SELECT 1 FROM pg_temp.cursor_polls p WHERE "
				   "p.chain = h.chain AND p.seq >= h.published_seq)");
	if (w->polls++ && (t - w->last_t) * 1000.0 > w->max_gap_ms)
		w->max_gap_ms = (t - w->last_t) * 1000.0;
	w->last_t = t;
}

/* A phase's first poll, into an empty table. */
static void watch_start(struct bench *b, struct cursor_watch *w)
{
	w->failed = !watch_exec(b, "CREATE TEMPORARY TABLE IF NOT EXISTS cursor_polls "
				   "(chain text, seq bigint, at timestamptz)") ||
		    !watch_exec(b, "CREATE INDEX IF NOT EXISTS cursor_polls_idx ON "
				   "pg_temp.cursor_polls (chain, seq, at)") ||
		    !watch_exec(b, "TRUNCATE pg_temp.cursor_polls");
	watch_poll(b, w);
}

/* drive_until_published's each_turn: a poll once CURSOR_POLL_MS have passed. */
static void watch_turn(struct bench *b, void *arg)
{
	struct cursor_watch *w = arg;

	if (!w->failed && mono_ms() >= w->next_ms)
		watch_poll(b, w);
}

/*
 * The lag of the events after `first`: p50, p99, max in ms of the first
 * poll covering each event - its at (the header). -1 (logged) when an
 * event is not covered by any poll or on error.
 */
static int poll_lag(struct bench *b, long first, double ms[3])
{
	char a[24];
	const char *p[1] = {a};
	PGresult *r;
	int rc = -1;

	snprintf(a, sizeof(a), "%ld", first);
	r = PQexecParams(b->admin,
			 "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), "
			 "percentile_disc(0.99) WITHIN GROUP (ORDER BY ms), max(ms), "
			 "count(*) FILTER (WHERE ms IS NULL), count(*) FROM "
			 "(SELECT extract(epoch FROM (SELECT p.at FROM pg_temp.cursor_polls p "
			 "WHERE p.chain = e.chain AND p.seq >= e.chain_seq ORDER BY p.seq, p.at "
			 "LIMIT 1) - e.at) * 1000 AS ms FROM outbox.events e "
			 "WHERE e.id > $1::bigint) s",
			 1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		fprintf(stderr, "bench_relay: lag: %s", PQresultErrorMessage(r));
	} else if (strcmp(PQgetvalue(r, 0, 3), "0")) {
		fprintf(stderr,
			"bench_relay: lag: %s of %s events published but no cursor poll "
			"saw them\n",
			PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 4));
	} else {
		for (int i = 0; i < 3; i++)
			ms[i] = PQgetisnull(r, 0, i) ? -1 : strtod(PQgetvalue(r, 0, i), NULL);
		rc = 0;
	}
	PQclear(r);
	return rc;
}

static int phase_steady(struct bench *b, long rate, long seconds, long tick_ms)
{
	struct inserter in = {0};
	struct cursor_watch w = {0};
	struct consumer k;
	long first = max_event_id(b), pid = backend_pid(b), got;
	double cpu0, pg0, ms[3];
	bool started = false, published;
	int rc = -1;

	in.conninfo = b->db.conninfo;
	snprintf(in.tag, sizeof(in.tag), "s%ld-", rate);
	in.rate = rate;
	in.seconds = (double)seconds;
	in.tick_ms = tick_ms;
	in.cap_txn = seconds * 1000 / tick_ms + 16;
	atomic_init(&in.done, false);
	if (!(in.txn_ms = calloc((size_t)in.cap_txn, sizeof(double))) ||
	    consumer_start(b, &k, rate * seconds)) {
		free(in.txn_ms);
		return -1;
	}
	drive_for(b, 500); /* the consumer's fetchers up */
	pg0 = cpu_pid_s(pid);
	cpu0 = cpu_self_s();
	b->turns = b->zero_waits = 0;
	watch_start(b, &w); /* the cursors before the phase's first event */
	if (pthread_create(&in.th, NULL, insert_main, &in))
		goto out;
	started = true;
	published = drive_until_published(b, first, &in, watch_turn, &w);
	pthread_join(in.th, NULL);
	started = false;
	if (!published) {
		fprintf(stderr, "bench_relay: steady %ld/s: not published within %ld s\n", rate,
			b->timeout_s);
		goto out;
	}
	if (!w.failed)
		watch_poll(b, &w); /* the moves since the last poll, seen at once */
	{
		/* the consumer may still be fetching the last messages */
		int64_t until = mono_ms() + 10000;
		while (atomic_load(&k.n) < in.inserted && mono_ms() < until)
			turn(b, 20);
	}
	if (in.failed || w.failed || poll_lag(b, first, ms))
		goto out;
	{
		double cpu = cpu_self_s() - cpu0, pg = cpu_pid_s(pid) - pg0;
		size_t n, nt = (size_t)in.n_txn;

		consumer_stop(&k);
		got = atomic_load(&k.n);
		n = (size_t)got;
		qsort(k.produce_ms, n, sizeof(double), cmp_double);
		qsort(k.consume_ms, n, sizeof(double), cmp_double);
		qsort(in.txn_ms, nt, sizeof(double), cmp_double);
		printf("{\"bench\":\"relay\",\"phase\":\"steady\",\"offered_per_s\":%ld,"
		       "\"achieved_per_s\":%.0f,\"events\":%ld,\"lag_p50_ms\":%.1f,"
		       "\"lag_p99_ms\":%.1f,\"lag_max_ms\":%.1f,\"lag_polls\":%ld,"
		       "\"lag_poll_gap_max_ms\":%.1f,\"consumed\":%ld,\"unreadable\":%"
		       "ld,"
		       "\"produce_lag_p50_ms\":%.1f,\"produce_lag_p99_ms\":%.1f,"
		       "\"consume_lag_p50_ms\":%.1f,\"consume_lag_p99_ms\":%.1f,"
		       "\"consume_lag_max_ms\":%.1f,\"enqueue_txn_p50_ms\":%.1f,"
		       "\"enqueue_txn_p99_ms\":%.1f,\"bench_cpu_s\":%.2f,"
		       "\"pg_backend_cpu_s\":%.2f,\"loop_turns\":%ld,\"zero_timeout_turns\":%ld,"
		       "\"load1\":%.2f}\n",
		       rate, (double)in.inserted / in.elapsed, in.inserted, ms[0], ms[1], ms[2],
		       w.polls, w.max_gap_ms, got, k.bad, pct(k.produce_ms, n, 0.5),
		       pct(k.produce_ms, n, 0.99), pct(k.consume_ms, n, 0.5),
		       pct(k.consume_ms, n, 0.99), n ? k.consume_ms[n - 1] : -1,
		       pct(in.txn_ms, nt, 0.5), pct(in.txn_ms, nt, 0.99), cpu, pg, b->turns,
		       b->zero_waits, load1());
		fflush(stdout);
		rc = 0;
	}
out:
	if (started)
		pthread_join(in.th, NULL);
	if (rc)
		consumer_stop(&k);
	free(k.produce_ms);
	free(k.consume_ms);
	free(in.txn_ms);
	return rc;
}

/* ---- setup ---- */

/* kafka-topic (built next to this binary) creates the topic and waits for its leaders. */
static int create_topic(struct bench *b, int partitions)
{
	char exe[PATH_MAX], tool[PATH_MAX + 16], parts[16], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int st;
	pid_t pid;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')))
		*slash = '\0';
	snprintf(tool, sizeof(tool), "%s/kafka-topic", exe);
	snprintf(parts, sizeof(parts), "%d", partitions);
	snprintf(b->topic, sizeof(b->topic), "outboxd.bench.relay.%lld.%d", (long long)time(NULL),
		 (int)getpid());
	fflush(NULL);
	if ((pid = fork()) == 0) {
		/* its one line of output is not a JSON line: keep stdout for those */
		if (dup2(2, 1) < 0)
			_exit(127);
		execl(tool, tool, b->brokers, b->topic, parts, (char *)NULL);
		fprintf(stderr, "bench_relay: %s: %s\n", tool, strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "bench_relay: cannot create topic %s on %s\n", b->topic,
			b->brokers);
		return -1;
	}
	return 0;
}

int main(void)
{
	static struct bench b;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	long events = env_long("BENCH_EVENTS", 20000, 1, 10000000);
	long seconds = env_long("BENCH_SECONDS", 10, 1, 3600);
	long tick_ms = env_long("BENCH_TICK_MS", 10, 1, 1000);
	int vshards = (int)env_long("BENCH_VSHARDS", 16, 1, MAX_VSHARDS);
	int partitions = (int)env_long("BENCH_PARTITIONS", 4, 1, MAX_PARTS);
	const char *rates = getenv("BENCH_RATES"), *kb = getenv("OUTBOX_KAFKA_BROKERS");
	char rates_buf[256], *save = NULL;
	int rc = 1;

	b.timeout_s = env_long("BENCH_TIMEOUT_S", 300, 10, 86400);
	b.brokers = kb && *kb ? kb : "127.0.0.1:9092";
	snprintf(rates_buf, sizeof(rates_buf), "%s", rates && *rates ? rates : "500,2000");
	snprintf(b.owner, sizeof(b.owner), "bench-relay-%d", (int)getpid());
	b.ep = -1;
	if (!(b.stats = calloc(1, sizeof(*b.stats))))
		return 1;
	if (create_topic(&b, partitions))
		return 1;
	if (pgtest_db_create(&b.db, vshards, &err)) {
		fprintf(stderr, "bench_relay: %s\n", err.msg);
		return 1;
	}
	b.admin = PQconnectdb(b.db.conninfo);
	if (PQstatus(b.admin) != CONNECTION_OK) {
		fprintf(stderr, "bench_relay: %s", PQerrorMessage(b.admin));
		goto done;
	}
	if (setup_signers(b.admin) || take_leases(&b))
		goto done;
	{
		PGresult *r = PQexec(b.admin, "SELECT current_setting('server_version'), "
					      "current_setting('synchronous_commit'), "
					      "current_setting('fsync')");
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
			printf("{\"bench\":\"relay\",\"server_version\":\"%s\","
			       "\"synchronous_commit\":\"%s\",\"fsync\":\"%s\",\"cpus\":%ld,"
			       "\"rdkafka\":\"%s\",\"topic\":\"%s\",\"partitions\":%d,"
			       "\"vshards\":%d,\"load1\":%.2f}\n",
			       PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
			       sysconf(_SC_NPROCESSORS_ONLN), rd_kafka_version_str(), b.topic,
			       partitions, vshards, load1());
		PQclear(r);
		fflush(stdout);
	}
	if ((b.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		goto done;
	{
		struct relay_config cfg = {.brokers = b.brokers,
					   .topic = b.topic,
					   .database = b.db.conninfo,
					   .client = "bench",
					   .ep = b.ep,
					   .tag_pg = TAG_PG,
					   .tag_kafka = TAG_KAFKA,
					   .stats = b.stats};
		if (!(b.relay = relay_new(&cfg, &err))) {
			fprintf(stderr, "bench_relay: relay: %s\n", err.msg);
			goto done;
		}
	}
	if (phase_backlog(&b, events))
		goto done;
	for (char *t = strtok_r(rates_buf, ",", &save); t && strcmp(t, "none");
	     t = strtok_r(NULL, ",", &save)) {
		long rate = strtol(t, NULL, 10);

		if (rate < 1 || rate > 1000000) {
			fprintf(stderr, "bench_relay: BENCH_RATES: '%s' is not a rate\n", t);
			goto done;
		}
		if (phase_steady(&b, rate, seconds, tick_ms))
			goto done;
	}
	rc = 0;
done:
	relay_free(b.relay, 5000);
	if (b.ep >= 0)
		close(b.ep);
	PQfinish(b.admin);
	if (pgtest_db_drop(&b.db, &err))
		fprintf(stderr, "bench_relay: %s\n", err.msg);
	free(b.stats);
	return rc;
}
