/*
 * check_event_relay.c - lifecycle events to a real Apache Kafka broker
 * (ops/kafka.sh), with outboxd + stellar-sim + PostgreSQL:
 *
 *	every transition of a run is on the topic exactly as in outbox.events
 *	    (after dedup), in order per op, with its headers, valid against the
 *	    JSON Schemas, and `outboxctl audit --verify` finds it clean;
 *	the broker stopped for 20 s mid-run: dispatch goes on, and afterwards
 *	    every event is on the topic, no gap;
 *	a worker SIGKILLed between sealing its events and their delivery: they
 *	    arrive after its restart;
 *	a row changed or cut off in outbox.events: audit --verify says where;
 *	a relay whose database is down does not make its owner's loop spin;
 *	reads that keep failing (a lock, a statement_timeout) warn once;
 *	a relay without a stats block (relay.h allows it) seals, produces and
 *	    marks published like any other;
 *	the published cursors (schema/0028) move only over a range that
 *	    continues them, never back, and the resend reads what follows them
 *	    in chain order, page by page.
 */
#include "common/idempotency.h"
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "tests/integration/dispatch_harness.h"
#include "tests/support/kafkatest.h"
#include "tests/support/pgtest.h"
#include "tests/support/check_main.h"
#include "common/clock.h"
#include "common/relay.h"
#include "common/shm/layout.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

static char topic[128];
static char env_brokers[300], env_topic[200];

static long long q1(struct fixture *f, const char *sql)
{
	return pgtest_scalar(f->c, sql);
}

static bool wait_for(struct fixture *f, const char *sql, long long want, unsigned timeout_ms)
{
	uint64_t end = ph_now_ms() + timeout_ms;

	do {
		if (q1(f, sql) == want)
			return true;
		ph_sleep_ms(100);
	} while (ph_now_ms() < end);
	return false;
}

/* outboxd with the relay on a fresh topic of 4 partitions. */
static void start_relaying(struct fixture *f, const char *sim_args, const char **extra)
{
	const char *env[12];
	int n = 0;

	kafkatest_require_broker();
	kafkatest_fresh_topic(topic, sizeof(topic), "relay", 4);
	snprintf(env_brokers, sizeof(env_brokers), "OUTBOX_KAFKA_BROKERS=%s", kafkatest_brokers());
	snprintf(env_topic, sizeof(env_topic), "OUTBOX_KAFKA_TOPIC=%s", topic);
	env[n++] = env_brokers;
	env[n++] = env_topic;
	for (; extra && *extra && n < 11; extra++)
		env[n++] = *extra;
	env[n] = NULL;
	start(f, sim_args, env);
}

static void enqueue_mix(struct fixture *f, const char *tag, int n)
{
	char user[32], rec[32];

	for (int i = 0; i < n; i++) {
		snprintf(user, sizeof(user), "%s%d", tag, i % 5);
		snprintf(rec, sizeof(rec), "%s-%d", tag, i);
		if (i % 9 == 4)
			enqueue(f, "REBALANCE", user, rec, i % f->n_signers, NULL, "10", NULL);
		else
			enqueue(f, i % 4 ? "DEPOSIT" : "WITHDRAW", user, rec, i % f->n_signers,
				f->signer[(i + 1) % f->n_signers], i % 4 ? "100" : "1", NULL);
	}
}

/* Every event published: the relay's work is done. */
static void wait_published(struct fixture *f, unsigned timeout_ms)
{
	ck_assert_msg(
		wait_for(f, "SELECT count(*) FROM outbox.events_not_published", 0, timeout_ms),
		"%lld events not published",
		q1(f, "SELECT count(*) FROM outbox.events_not_published"));
}

/* Run outboxctl audit on the topic; returns its exit status, the JSON in *out. */
static int audit(struct fixture *f, const char *args, json_t **out)
{
	char cmd[4096];
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "OUTBOX_DATABASE_URL='%s' %s/outboxctl audit --json --brokers %s --topic %s %s",
		 f->db.conninfo, f->h.build, kafkatest_brokers(), topic, args);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	*out = json_loadf(p, 0, NULL);
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * The topic against the table: every row once (after dedup) with the same
 * type, statuses and sequence; each op's events in sequence order within
 * its partition; the headers; the values into a file for the schema check.
 */
static void compare_topic(struct fixture *f, const char *dump)
{
	long long rows = q1(f, "SELECT count(*) FROM outbox.events");
	struct kafkatest_msgs got;
	PGresult *r = PQexec(f->c, "SELECT id, coalesce(op_id, 0), coalesce(seq, 0), type, "
				   "coalesce(from_status, ''), coalesce(to_status, '') "
				   "FROM outbox.events ORDER BY id");
	json_t *seen = json_object(), *last_seq = json_object();
	FILE *out = fopen(dump, "w");

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	ck_assert_uint_ge(kafkatest_consume_all(topic, (size_t)rows, 60000, &got), (size_t)rows);
	for (size_t i = 0; i < got.n; i++) {
		json_t *ce = json_loads(got.m[i].value, 0, NULL), *d;
		char buf[128];
		const char *id;

		ck_assert_msg(ce != NULL, "message %zu is not JSON", i);
		id = json_string_value(json_object_get(ce, "id"));
		ck_assert_str_eq(kafkatest_header(&got.m[i], "ce_id", buf, sizeof(buf), NULL, NULL),
				 id);
		ck_assert_str_eq(
			kafkatest_header(&got.m[i], "ce_type", buf, sizeof(buf), NULL, NULL),
			json_string_value(json_object_get(ce, "type")));
		ck_assert_str_eq(
			kafkatest_header(&got.m[i], "ce_subject", buf, sizeof(buf), NULL, NULL),
			got.m[i].key);
		ck_assert_str_eq(
			kafkatest_header(&got.m[i], "content-type", buf, sizeof(buf), NULL, NULL),
			"application/cloudevents+json; charset=UTF-8");
		d = json_object_get(ce, "data");
		if (json_integer_value(json_object_get(d, "op_id"))) {
			/* per op, in order within its partition (a re-delivery may repeat one) */
			const char *op = got.m[i].key;
			long long seq = atoll(json_string_value(json_object_get(ce, "sequence")));
			json_t *prev = json_object_get(last_seq, op);
			ck_assert_msg(!prev || json_integer_value(prev) <= seq,
				      "op %s: event %lld after %lld", op, seq,
				      json_integer_value(prev));
			if (!prev || json_integer_value(prev) < seq)
				json_object_set_new(last_seq, op, json_integer(seq));
		}
		if (!json_object_get(seen, id))
			fprintf(out, "%s\n", got.m[i].value);
		json_object_set(seen, id, ce);
		json_decref(ce);
	}
	fclose(out);
	ck_assert_int_eq((long long)json_object_size(seen), rows);
	for (int i = 0; i < PQntuples(r); i++) {
		json_t *ce = json_object_get(seen, PQgetvalue(r, i, 0)),
		       *d = json_object_get(ce, "data");
		ck_assert_msg(ce != NULL, "event %s is not on the topic", PQgetvalue(r, i, 0));
		ck_assert_str_eq(json_string_value(json_object_get(d, "event")),
				 PQgetvalue(r, i, 3));
		if (atoll(PQgetvalue(r, i, 1))) {
			ck_assert_int_eq(json_integer_value(json_object_get(d, "op_id")),
					 atoll(PQgetvalue(r, i, 1)));
			ck_assert_int_eq(atoll(json_string_value(json_object_get(ce, "sequence"))),
					 atoll(PQgetvalue(r, i, 2)));
		}
		const char *from = json_string_value(json_object_get(d, "from")),
			   *to = json_string_value(json_object_get(d, "to"));
		ck_assert_str_eq(from ? from : "", PQgetvalue(r, i, 4));
		ck_assert_str_eq(to ? to : "", PQgetvalue(r, i, 5));
	}
	PQclear(r);
	json_decref(seen);
	json_decref(last_seq);
	kafkatest_msgs_free(&got);
}

static void validate_schemas(struct fixture *f, const char *dump)
{
	char cmd[1200];
	const char *src = getenv("OUTBOX_SOURCE_DIR");

	(void)f;
	snprintf(cmd, sizeof(cmd), "node %s/tests/events/validate.js %s/schema/events %s", src, src,
		 dump);
	ck_assert_msg(system(cmd) == 0, "%s: events do not match their JSON Schemas", cmd);
}

static void audit_clean(struct fixture *f)
{
	json_t *a = NULL;
	int rc = audit(f, "--verify", &a);

	ck_assert_msg(rc == 0, "audit exit %d: %s", rc,
		      a ? json_string_value(json_object_get(a, "first_problem")) : "(no output)");
	ck_assert_int_eq(json_integer_value(json_object_get(a, "gaps")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "illegal")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "broken")), 0);
	ck_assert_int_eq(
		json_integer_value(json_object_get(json_object_get(a, "verify"), "broken")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "events")),
			 q1(f, "SELECT count(*) FROM outbox.events"));
	json_decref(a);
}

START_TEST(test_every_transition_on_the_topic)
{
	struct fixture f;
	char dump[200];
	char poor[57];

	memset(&f, 0, sizeof(f));
	f.n_signers = 5;
	start_relaying(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	/* a held user's op, cancelled by an operator; an overdraft that fails on chain */
	pgtest_exec(f.c, "INSERT INTO outbox.user_holds (user_id, reason, held_by) VALUES "
			 "('frozen', 'review', 'test')");
	enqueue(&f, "DEPOSIT", "frozen", "x1", 0, f.signer[1], "5", NULL);
	pgtest_exec(f.c, "SELECT outbox.admin_cancel(id, 'ops') FROM outbox.ops");
	pgtest_account(93, poor);
	enqueue(&f, "WITHDRAW", "poor", "w1", 1, poor, "5000", NULL);
	enqueue_mix(&f, "all", 30);
	ck_assert(wait_terminal(&f, 90000));
	wait_published(&f, 60000);
	ck_assert_int_gt(q1(&f, "SELECT count(*) FROM outbox.events WHERE type = 'FEE_SNAPSHOT'"),
			 0);
	snprintf(dump, sizeof(dump), "%s/events.jsonl", f.h.dir);
	compare_topic(&f, dump);
	validate_schemas(&f, dump);
	audit_clean(&f);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* The broker away for 20 s mid-run: dispatch does not wait; nothing is lost. */
START_TEST(test_broker_outage)
{
	struct fixture f;
	char dump[200];
	long long before, during;

	memset(&f, 0, sizeof(f));
	f.n_signers = 8;
	start_relaying(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	enqueue_mix(&f, "out", 120);
	ck_assert(wait_for(&f,
			   "SELECT least(count(*), 20) FROM outbox.ops WHERE status = 'CONFIRMED'",
			   20, 60000));
	kafkatest_broker_stop();
	uint64_t back_at = ph_now_ms() + 20000;
	/*
	 * Ops enqueued while the broker is away end while it is still away. (The
	 * first batch may be done before the stop is: with fast ledgers it takes
	 * about as long as the broker's shutdown, so its progress proves nothing.)
	 */
	before = q1(&f, "SELECT count(*) FROM outbox.ops WHERE status IN ('CONFIRMED', 'FAILED')");
	enqueue_mix(&f, "away", 20);
	ck_assert_msg(wait_for(&f,
			       "SELECT count(*) FROM outbox.ops WHERE status IN ('CONFIRMED', "
			       "'FAILED') AND business_record_id LIKE 'away-%'",
			       20, 60000),
		      "dispatch stalled while the broker was away");
	during = q1(&f, "SELECT count(*) FROM outbox.ops WHERE status IN ('CONFIRMED', 'FAILED')");
	if (ph_now_ms() < back_at) /* an outage of 20 s at least */
		ph_sleep_ms((unsigned)(back_at - ph_now_ms()));
	kafkatest_broker_start();
	ck_assert_int_ge(during, before + 20);
	ck_assert(wait_terminal(&f, 120000));
	wait_published(&f, 120000);
	snprintf(dump, sizeof(dump), "%s/events.jsonl", f.h.dir);
	compare_topic(&f, dump);
	audit_clean(&f);
	check_exactly_once(&f);
	stop(&f);
}
END_TEST

/* SIGKILL after the seal committed, before anything was produced: delivered after the restart. */
START_TEST(test_killed_between_seal_and_delivery)
{
	struct fixture f;
	char once[200], dump[200];
	const char *env[] = {"CRASHPOINT=relay_after_seal", once, NULL};
	const char *file = once + strlen("CRASHPOINT_ONCE_FILE=");

	memset(&f, 0, sizeof(f));
	snprintf(once, sizeof(once), "CRASHPOINT_ONCE_FILE=/tmp/crash_relay_%d", (int)getpid());
	unlink(file);
	start_relaying(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, env);
	enqueue_mix(&f, "kill", 12);
	ck_assert(wait_terminal(&f, 90000));
	wait_published(&f, 60000);
	ck_assert_msg(access(file, F_OK) == 0, "crash point relay_after_seal never reached");
	snprintf(dump, sizeof(dump), "%s/events.jsonl", f.h.dir);
	compare_topic(&f, dump);
	audit_clean(&f);
	unlink(file);
	stop(&f);
}
END_TEST

/* A row changed after it was sealed, then the newest link cut off: --verify says so. */
START_TEST(test_tampering_is_found)
{
	struct fixture f;
	json_t *a = NULL;
	int rc;

	memset(&f, 0, sizeof(f));
	start_relaying(&f, "--ledger-ms 150 --vault-contract " PH_CONTRACT, NULL);
	enqueue_mix(&f, "t", 6);
	ck_assert(wait_terminal(&f, 60000));
	wait_published(&f, 60000);
	ph_stop_clean(&f.h);
	audit_clean(&f);
	pgtest_exec(f.c,
		    "UPDATE outbox.events SET body = body || '{\"amount\": \"999\"}' WHERE id = "
		    "(SELECT min(id) FROM outbox.events WHERE op_id IS NOT NULL)");
	rc = audit(&f, "--verify", &a);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_gt(
		json_integer_value(json_object_get(json_object_get(a, "verify"), "broken")), 0);
	ck_assert_ptr_nonnull(strstr(
		json_string_value(json_object_get(json_object_get(a, "verify"), "first_problem")),
		"does not hash"));
	json_decref(a);
	/* undo it, then cut the newest link of a chain off the table */
	pgtest_exec(f.c,
		    "UPDATE outbox.events SET body = body - 'amount' WHERE id = (SELECT min(id) "
		    "FROM outbox.events WHERE op_id IS NOT NULL)");
	pgtest_exec(f.c, "DELETE FROM outbox.events WHERE id = (SELECT max(id) FROM outbox.events "
			 "WHERE chain LIKE 'vshard:%')");
	rc = audit(&f, "--verify", &a);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(
		json_string_value(json_object_get(json_object_get(a, "verify"), "first_problem")),
		"recorded head"));
	json_decref(a);
	stop(&f);
}
END_TEST

/*
 * A relay of the named chain `chain` outside a role (the tests' own loop: ep,
 * tags 1 and 2), stats may be NULL; aborts the test when it cannot be made.
 */
static struct relay *chain_relay(int ep, const char *database, const char *brokers, const char *to,
				 struct shm_stats_block *stats, const char *chain)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct relay *r = relay_new(&(struct relay_config){.brokers = brokers,
							   .topic = to,
							   .database = database,
							   .client = "check-relay",
							   .ep = ep,
							   .tag_pg = 1,
							   .tag_kafka = 2,
							   .stats = stats},
				    &err);

	ck_assert_msg(r != NULL, "relay_new: %s", err.msg);
	relay_set_chain(r, chain);
	return r;
}

/*
 * A relay whose database is down waits for its next connect attempt: the
 * owner's loop sleeps on relay_timeout_ms(), and a relay that asked for an
 * immediate turn while nothing could run made it spin (a worker or the
 * oracle burned a core for as long as PostgreSQL was away).
 */
START_TEST(test_database_down_does_not_spin)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0), ep = epoll_create1(0);
	char db[128];
	struct relay *r;
	long turns = 0;
	int64_t end;

	/* a port nothing listens on: bound, never listened to */
	ck_assert_int_ge(ls, 0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &len), 0);
	snprintf(db, sizeof(db), "host=127.0.0.1 port=%d dbname=x user=x", ntohs(a.sin_port));
	r = chain_relay(ep, db, "127.0.0.1:9", "check_event_relay.down", NULL,
			"oracle:check"); /* a resend is due, reads too */
	end = mono_ms() + 3000;
	while (mono_ms() < end) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, relay_timeout_ms(r, mono_ms()));

		for (int i = 0; i < n; i++)
			relay_on_ready(r, evs[i].data.u64, evs[i].events);
		relay_tick(r, mono_ms());
		turns++;
	}
	/* a turn per connect attempt or per second, against ~10^5 when spinning */
	ck_assert_msg(turns < 1000, "%ld loop turns in 3 s with the database down", turns);
	/* a stop with the database down gives up at once, not after its budget (tcase: 60 s) */
	ck_assert(!relay_drain(r, 600000));
	relay_free(r, 0);
	close(ep);
	close(ls);
}
END_TEST

/* Run a relay's loop for ms milliseconds; the turns it took. */
static long relay_run(struct relay *r, int ep, int64_t ms)
{
	int64_t end = mono_ms() + ms;
	long turns = 0;

	for (; mono_ms() < end; turns++) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, relay_timeout_ms(r, mono_ms()));

		for (int i = 0; i < n; i++)
			relay_on_ready(r, evs[i].data.u64, evs[i].events);
		relay_tick(r, mono_ms());
	}
	return turns;
}

static int count_in(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * Another session holds outbox.events locked while a statement_timeout
 * cancels the relay's reads: they fail about once a second for as long as
 * it lasts, and that is one warning, not one per attempt; the first read
 * that succeeds again says so. While a read waits on the lock the owner's
 * loop sleeps (it spun while a resend or a full page was pending).
 */
START_TEST(test_failing_reads_warn_once)
{
	static struct shm_stats_block stats;
	struct pgtest_db db;
	char path[] = "/tmp/check_event_relay_log.XXXXXX", text[65536], sql[2300];
	int ep = epoll_create1(0), fd = mkstemp(path), saved = dup(STDERR_FILENO);
	PGconn *c;
	struct relay *r;
	ssize_t n;
	long turns;

	ck_assert_int_ge(ep, 0);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	pgtest_setup(&db, 8);
	c = pgtest_connect(&db);
	snprintf(sql, sizeof(sql), "ALTER DATABASE \"%s\" SET statement_timeout = '200ms'",
		 db.name);
	pgtest_exec(c, sql);
	pgtest_exec(c, "BEGIN");
	pgtest_exec(c, "LOCK TABLE outbox.events IN ACCESS EXCLUSIVE MODE");
	r = chain_relay(ep, db.conninfo, "127.0.0.1:9", "check_event_relay.locked", &stats,
			"oracle:check");
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	turns = relay_run(r, ep, 4000); /* reads time out, again and again */
	pgtest_exec(c, "COMMIT");
	relay_run(r, ep, 2500); /* and succeed */
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	n = pread(fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	ck_assert_msg(count_in(text, "level=warn") >= 1 && count_in(text, "statement timeout") == 1,
		      "want one warning for the episode, got:\n%.3000s", text);
	ck_assert_msg(count_in(text, "statements succeed again after"),
		      "want the episode's end, got:\n%.3000s", text);
	/* a turn per answer, tick or connect attempt, against ~10^5 when spinning */
	ck_assert_msg(turns < 1000, "%ld loop turns in 4 s of reads waiting on a lock", turns);
	relay_free(r, 0);
	PQfinish(c);
	pgtest_teardown(&db);
	close(fd);
	close(saved);
	close(ep);
}
END_TEST

/*
 * relay.h: the stats block may be NULL. Every metric the relay keeps is
 * touched on the way of one event: sealed, produced, delivered, marked
 * published, the backlog gauge and the producer's queue gauge.
 */
START_TEST(test_no_stats_block)
{
	struct pgtest_db db;
	int ep = epoll_create1(0);
	char t[128];
	PGconn *c;
	PGresult *res;
	struct relay *r;
	bool published = false;

	kafkatest_require_broker();
	kafkatest_fresh_topic(t, sizeof(t), "relay-nostats", 1);
	ck_assert_int_ge(ep, 0);
	pgtest_setup(&db, 8);
	c = pgtest_connect(&db);
	pgtest_exec(c, "SELECT outbox.fee_event('nostats', '{\"base_fee\": 100}')");
	r = chain_relay(ep, db.conninfo, kafkatest_brokers(), t, NULL, "oracle:nostats");
	for (int64_t end = mono_ms() + 60000; !published && mono_ms() < end;) {
		relay_run(r, ep, 250);
		res = PQexec(c, "SELECT (SELECT count(*) FROM outbox.events) - (SELECT count(*) "
				"FROM outbox.events_not_published)");
		published =
			PQresultStatus(res) == PGRES_TUPLES_OK && atoi(PQgetvalue(res, 0, 0)) == 1;
		PQclear(res);
	}
	ck_assert_msg(published, "the event was not marked published within 60 s");
	relay_free(r, 1000);
	PQfinish(c);
	pgtest_teardown(&db);
	close(ep);
}
END_TEST

/*
 * relay.h: relay_drain at the owner's stop publishes what the owner wrote
 * last. Events written just before it, never read by a loop turn, are on
 * the topic and marked published when it returns (without it, a stop right
 * after the last writes left them for the next start).
 */
START_TEST(test_drain_publishes_the_last_writes)
{
	struct pgtest_db db;
	int ep = epoll_create1(0);
	char t[128];
	PGconn *c;
	PGresult *res;
	struct relay *r;

	kafkatest_require_broker();
	kafkatest_fresh_topic(t, sizeof(t), "relay-drain", 1);
	ck_assert_int_ge(ep, 0);
	pgtest_setup(&db, 8);
	c = pgtest_connect(&db);
	pgtest_exec(c, "SELECT outbox.fee_event('drain', jsonb_build_object('base_fee', i)) "
		       "FROM generate_series(1, 2500) i"); /* more than a page */
	r = chain_relay(ep, db.conninfo, kafkatest_brokers(), t, NULL, "oracle:drain");
	ck_assert_msg(relay_drain(r, 60000), "relay_drain gave up within 60 s");
	res = PQexec(c, "SELECT (SELECT count(*) FROM outbox.events) - (SELECT count(*) FROM "
			"outbox.events_not_published), (SELECT count(*) FROM outbox.events)");
	ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
	ck_assert_msg(!strcmp(PQgetvalue(res, 0, 0), "2500") &&
			      !strcmp(PQgetvalue(res, 0, 1), "2500"),
		      "published %s of %s events", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	PQclear(res);
	{
		struct kafkatest_msgs got;
		size_t n = kafkatest_consume_all(t, 2500, 60000, &got);
		ck_assert_msg(n == 2500, "%zu messages on the topic, want 2500", n);
		kafkatest_msgs_free(&got);
	}
	relay_free(r, 0);
	PQfinish(c);
	pgtest_teardown(&db);
	close(ep);
}
END_TEST

/* A statement that must fail with SQLSTATE state; its message, for a closer look. */
static void seal_refused(PGconn *c, const char *state, const char *sql, const char *why)
{
	PGresult *r = PQexec(c, sql);
	const char *got = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	ck_assert_msg(PQresultStatus(r) == PGRES_FATAL_ERROR && got && !strcmp(got, state),
		      "%s: want %s, got %s %s", why, state, got ? got : "no error",
		      PQresultErrorMessage(r));
	PQclear(r);
}

/* A seal of the events with these ids (a SQL array) after the chain's head, made-up hashes. */
static void seal_sql(PGconn *c, char *out, size_t n, const char *owner, const char *vshard,
		     long long epoch, const char *chain, const char *ids)
{
	PGresult *r = PQexecParams(
		c,
		"SELECT coalesce((SELECT seq FROM outbox.chain_heads WHERE chain = $1), 0), "
		"encode(coalesce((SELECT hash FROM outbox.chain_heads WHERE chain = $1), "
		"'\\x"
		"0000000000000000000000000000000000000000000000000000000000000000'"
		"::bytea), 'hex')",
		1, NULL, (const char *const[]){chain}, NULL, NULL, 0);

	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	snprintf(out, n,
		 "SELECT outbox.events_seal('%s', %s, %lld, '%s', %s, '%s', '%s'::bigint[], "
		 "ARRAY(SELECT lpad(to_hex(x), 64, 'a') FROM unnest('%s'::bigint[]) x))",
		 owner, vshard, epoch, chain, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), ids, ids);
	PQclear(r);
}

static long long scalar(PGconn *c, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	return pgtest_scalar(c, sql);
}

/* Two signers a and b whose vshards va and vb differ. */
static void two_vshards(PGconn *c, char a[57], int *va, char b[57], int *vb)
{
	*va = *vb = -1;
	for (uint32_t i = 1; i < 64 && *vb < 0; i++) {
		char x[57];
		int v;

		pgtest_account(i, x);
		v = (int)scalar(c, "SELECT outbox.vshard_of('%s')", x);
		if (*va < 0) {
			*va = v;
			memcpy(a, x, 57);
		} else if (v != *va) {
			*vb = v;
			memcpy(b, x, 57);
		}
	}
	ck_assert_int_ge(*vb, 0);
}

/*
 * outbox.events_seal (schema/0019) links only unsealed events of the chain
 * it is asked to extend: an op event of another vshard, an event of no op
 * on a vshard chain, an op event on an oracle's chain, an event sealed
 * already, a stale head or a stale lease each refuse the whole seal and
 * change nothing. And its cost does not depend on outbox.ops: with plans a
 * session settled on while ops was small (generic plans, statistics of an
 * empty table) and then 20 000 ops, a seal of two events reads a few dozen
 * buffers; the plan 0019 replaced hashed a sequential scan of ops per seal.
 */
START_TEST(test_seal_refuses_foreign_events)
{
	struct pgtest_db db;
	PGconn *c;
	char a[57], b[57], sql[2048];
	int va = -1, vb = -1;
	long long ea, eb, opa, opb, evf, epa, epb, buffers;
	PGresult *r;

	pgtest_setup(&db, 2);
	c = pgtest_connect(&db);
	two_vshards(c, a, &va, b, &vb);
	opa = scalar(c,
		     "SELECT id FROM outbox.enqueue('DEPOSIT', 'ua', 'ra', '%s', "
		     "'{\"account\": \"%s\", \"amount\": \"5\"}', 'NORMAL')",
		     a, b);
	opb = scalar(c,
		     "SELECT id FROM outbox.enqueue('DEPOSIT', 'ub', 'rb', '%s', "
		     "'{\"account\": \"%s\", \"amount\": \"5\"}', 'NORMAL')",
		     b, a);
	ea = scalar(c, "SELECT id FROM outbox.events WHERE op_id = %lld", opa);
	eb = scalar(c, "SELECT id FROM outbox.events WHERE op_id = %lld", opb);
	pgtest_exec(c, "SELECT outbox.fee_event('x', '{\"base_fee\": 100}')");
	evf = pgtest_scalar(c, "SELECT id FROM outbox.events WHERE chain = 'oracle:x'");
	epa = scalar(c, "SELECT outbox.lease_acquire('o/0/1', %d, 3600000)", va);
	epb = scalar(c, "SELECT outbox.lease_acquire('o/0/1', %d, 3600000)", vb);
	char vsa[16], vsb[16], cha[32], chb[32], ids[96];
	snprintf(vsa, sizeof(vsa), "%d", va);
	snprintf(vsb, sizeof(vsb), "%d", vb);
	snprintf(cha, sizeof(cha), "vshard:%d", va);
	snprintf(chb, sizeof(chb), "vshard:%d", vb);

	snprintf(ids, sizeof(ids), "{%lld,%lld}", ea, eb);
	seal_sql(c, sql, sizeof(sql), "o/0/1", vsa, epa, cha, ids);
	seal_refused(c, "OB409", sql, "an op event of another vshard");
	snprintf(ids, sizeof(ids), "{%lld,%lld}", ea, evf);
	seal_sql(c, sql, sizeof(sql), "o/0/1", vsa, epa, cha, ids);
	seal_refused(c, "OB409", sql, "an event of no op on a vshard chain");
	snprintf(ids, sizeof(ids), "{%lld}", evf);
	seal_sql(c, sql, sizeof(sql), "", "NULL", 0, "oracle:y", ids);
	seal_refused(c, "OB409", sql, "an event of another oracle's chain");
	snprintf(ids, sizeof(ids), "{%lld,%lld}", evf, ea);
	seal_sql(c, sql, sizeof(sql), "", "NULL", 0, "oracle:x", ids);
	seal_refused(c, "OB409", sql, "an op event on an oracle's chain");
	snprintf(ids, sizeof(ids), "{%lld}", eb);
	seal_sql(c, sql, sizeof(sql), "o/0/1", vsb, epb + 1, chb, ids);
	seal_refused(c, "OB403", sql, "a lease that is not held");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events "
					  "WHERE chain_seq IS NOT NULL"),
			 0);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.chain_heads WHERE seq > 0"),
			 0);

	/* what is right goes through, once */
	snprintf(ids, sizeof(ids), "{%lld}", ea);
	seal_sql(c, sql, sizeof(sql), "o/0/1", vsa, epa, cha, ids);
	pgtest_exec(c, sql);
	seal_refused(c, "OB409", sql, "a stale head");
	seal_sql(c, sql, sizeof(sql), "o/0/1", vsa, epa, cha, ids);
	seal_refused(c, "OB409", sql, "an event sealed already");
	snprintf(ids, sizeof(ids), "{%lld}", evf);
	seal_sql(c, sql, sizeof(sql), "", "NULL", 0, "oracle:x", ids);
	pgtest_exec(c, sql);
	ck_assert_int_eq(scalar(c,
				"SELECT count(*) FROM outbox.events WHERE chain_seq = 1 AND "
				"id IN (%lld, %lld)",
				ea, evf),
			 2);

	/* plans settled on a small ops, then 20 000 ops of the vshard */
	pgtest_exec(c, "ALTER TABLE outbox.ops SET (autovacuum_enabled = false)");
	pgtest_exec(c, "ANALYZE outbox.ops");
	pgtest_exec(c, "SET plan_cache_mode = force_generic_plan");
	for (int i = 0; i < 8; i++) {
		long long op = scalar(c,
				      "SELECT id FROM outbox.enqueue('DEPOSIT', 'uw', 'w%d', '%s', "
				      "'{\"account\": \"%s\", \"amount\": \"5\"}', 'NORMAL')",
				      i, a, b),
			  e = scalar(c, "SELECT id FROM outbox.events WHERE op_id = %lld", op);
		snprintf(ids, sizeof(ids), "{%lld}", e);
		seal_sql(c, sql, sizeof(sql), "o/0/1", vsa, epa, cha, ids);
		pgtest_exec(c, sql);
	}
	scalar(c,
	       "SELECT count(*) FROM (SELECT outbox.enqueue('DEPOSIT', 'bulk', 'b' || g, '%s', "
	       "'{\"account\": \"%s\", \"amount\": \"5\"}', 'LOW') FROM generate_series(1, 20000) "
	       "g) x",
	       a, b);
	r = PQexec(c, "SELECT array_agg(id ORDER BY id)::text FROM (SELECT id FROM outbox.events "
		      "WHERE chain_seq IS NULL AND op_id IS NOT NULL AND op_id IN (SELECT id FROM "
		      "outbox.ops WHERE user_id = 'bulk') ORDER BY id LIMIT 2) x");
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	snprintf(ids, sizeof(ids), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	seal_sql(c, sql, sizeof(sql), "o/0/1", vsa, epa, cha, ids);
	{
		char ex[2200];
		snprintf(ex, sizeof(ex),
			 "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) %s", sql);
		r = PQexec(c, ex);
	}
	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
	buffers = pgtest_explain_buffers(r, NULL);
	fprintf(stderr,
		"{\"test\":\"seal_refuses_foreign_events\",\"seal2_buffers\":%lld,"
		"\"ops_pages\":%lld}\n",
		buffers, pgtest_scalar(c, "SELECT pg_relation_size('outbox.ops') / 8192"));
	ck_assert_msg(buffers > 0 && buffers < 200,
		      "a seal of two events read %lld buffers with 20 000 ops", buffers);
	PQfinish(c);
	pgtest_teardown(&db);
}
END_TEST

#define ZERO64 "0000000000000000000000000000000000000000000000000000000000000000"

/* A call of events_seal_vshards with made-up hashes (each id's, as seal_sql makes them). */
static void seal_many_sql(char *out, size_t n, const char *vshards, const char *epochs,
			  const char *after, const char *prevs, const char *lens, const char *ids)
{
	snprintf(out, n,
		 "SELECT outbox.events_seal_vshards('o/0/1', '%s', '%s', '%s', '%s', '%s', "
		 "'%s'::bigint[], ARRAY(SELECT lpad(to_hex(x), 64, 'a') FROM "
		 "unnest('%s'::bigint[]) x))",
		 vshards, epochs, after, prevs, lens, ids, ids);
}

/*
 * outbox.events_seal_vshards (schema/0025) seals several vshard chains in
 * one statement with events_seal's promise for each: any foreign event,
 * stale head or lease refuses the whole call and changes nothing; what is
 * right is linked as events_seal links it (each chain from its head, in the
 * order given) and moves each head.
 */
START_TEST(test_seal_vshards_at_once)
{
	struct pgtest_db db;
	PGconn *c;
	char a[57], b[57], sql[2048], vs[32], es[64], ids[128], prevs[160], sb[96];
	int va = -1, vb = -1;
	long long ea1, ea2, eb1, eb2, evf, epa, epb;

	pgtest_setup(&db, 2);
	c = pgtest_connect(&db);
	two_vshards(c, a, &va, b, &vb);
	for (int i = 0; i < 4; i++)
		scalar(c,
		       "SELECT id FROM outbox.enqueue('DEPOSIT', 'u', 'r%d', '%s', "
		       "'{\"account\": \"%s\", \"amount\": \"5\"}', 'NORMAL')",
		       i, i < 2 ? a : b, i < 2 ? b : a);
	ea1 = scalar(c,
		     "SELECT min(e.id) FROM outbox.events e JOIN outbox.ops o ON o.id = e.op_id "
		     "WHERE o.vshard = %d",
		     va);
	ea2 = scalar(c,
		     "SELECT max(e.id) FROM outbox.events e JOIN outbox.ops o ON o.id = e.op_id "
		     "WHERE o.vshard = %d",
		     va);
	eb1 = scalar(c,
		     "SELECT min(e.id) FROM outbox.events e JOIN outbox.ops o ON o.id = e.op_id "
		     "WHERE o.vshard = %d",
		     vb);
	eb2 = scalar(c,
		     "SELECT max(e.id) FROM outbox.events e JOIN outbox.ops o ON o.id = e.op_id "
		     "WHERE o.vshard = %d",
		     vb);
	pgtest_exec(c, "SELECT outbox.fee_event('x', '{\"base_fee\": 100}')");
	evf = pgtest_scalar(c, "SELECT id FROM outbox.events WHERE chain = 'oracle:x'");
	epa = scalar(c, "SELECT outbox.lease_acquire('o/0/1', %d, 3600000)", va);
	epb = scalar(c, "SELECT outbox.lease_acquire('o/0/1', %d, 3600000)", vb);
	snprintf(vs, sizeof(vs), "{%d,%d}", va, vb);
	snprintf(es, sizeof(es), "{%lld,%lld}", epa, epb);
	snprintf(prevs, sizeof(prevs), "{%s,%s}", ZERO64, ZERO64);

	snprintf(ids, sizeof(ids), "{%lld,%lld,%lld}", ea1, eb2, eb1);
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,0}", prevs, "{2,1}", ids);
	seal_refused(c, "OB409", sql, "an op event of another vshard");
	snprintf(ids, sizeof(ids), "{%lld,%lld,%lld}", ea1, evf, eb1);
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,0}", prevs, "{2,1}", ids);
	seal_refused(c, "OB409", sql, "an event of no op");
	snprintf(ids, sizeof(ids), "{%lld,%lld,%lld}", ea1, ea1, eb1);
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,0}", prevs, "{2,1}", ids);
	seal_refused(c, "OB409", sql, "an event listed twice");
	snprintf(ids, sizeof(ids), "{%lld,%lld,%lld}", ea1, ea2, eb1);
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,3}", prevs, "{2,1}", ids);
	seal_refused(c, "OB409", sql, "a stale head");
	snprintf(sb, sizeof(sb), "{%lld,%lld}", epa, epb + 1);
	seal_many_sql(sql, sizeof(sql), vs, sb, "{0,0}", prevs, "{2,1}", ids);
	seal_refused(c, "OB403", sql, "a lease that is not held");
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,0}", prevs, "{1,1}", ids);
	seal_refused(c, "OB422", sql, "lens that do not add up");
	snprintf(sb, sizeof(sb), "{%d,%d}", va, va);
	seal_many_sql(sql, sizeof(sql), sb, es, "{0,0}", prevs, "{2,1}", ids);
	seal_refused(c, "OB422", sql, "a vshard twice");
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,0}", "{x,y}", "{2,1}", ids);
	seal_refused(c, "OB422", sql, "a head that is not hex");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events "
					  "WHERE chain_seq IS NOT NULL"),
			 0);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.chain_heads WHERE seq > 0"),
			 0);

	/* what is right goes through, linked as events_seal links, once */
	seal_many_sql(sql, sizeof(sql), vs, es, "{0,0}", prevs, "{2,1}", ids);
	pgtest_exec(c, sql);
	seal_refused(c, "OB409", sql, "heads that moved");
	ck_assert_int_eq(scalar(c,
				"SELECT count(*) FROM outbox.events e, LATERAL (SELECT "
				"decode(lpad(to_hex(e.id), 64, 'a'), 'hex') AS h) m WHERE "
				"(e.id = %lld AND e.chain = 'vshard:%d' AND e.chain_seq = 1 AND "
				"e.chain_prev = decode('%s', 'hex') AND e.chain_hash = m.h) OR "
				"(e.id = %lld AND e.chain = 'vshard:%d' AND e.chain_seq = 2 AND "
				"e.chain_prev = decode(lpad(to_hex(%lld), 64, 'a'), 'hex') AND "
				"e.chain_hash = m.h) OR "
				"(e.id = %lld AND e.chain = 'vshard:%d' AND e.chain_seq = 1 AND "
				"e.chain_prev = decode('%s', 'hex') AND e.chain_hash = m.h)",
				ea1, va, ZERO64, ea2, va, ea1, eb1, vb, ZERO64),
			 3);
	ck_assert_int_eq(scalar(c,
				"SELECT count(*) FROM outbox.chain_heads WHERE (chain = "
				"'vshard:%d' AND seq = 2 AND hash = decode(lpad(to_hex(%lld), 64, "
				"'a'), 'hex')) OR (chain = 'vshard:%d' AND seq = 1 AND hash = "
				"decode(lpad(to_hex(%lld), 64, 'a'), 'hex'))",
				va, ea2, vb, eb1),
			 2);
	PQfinish(c);
	pgtest_teardown(&db);
}
END_TEST

/* The one text a statement of three parameters answers, into out. */
static void text3(PGconn *c, const char *sql, const char *a, const char *b, const char *d,
		  char *out, size_t n)
{
	PGresult *r = PQexecParams(c, sql, 3, NULL, (const char *const[]){a, b, d}, NULL, NULL, 0);

	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
	snprintf(out, n, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
}

/* outbox.events_published_upto: the chains refused, as one sorted text ("" for none). */
static void upto(PGconn *c, const char *chains, const char *froms, const char *tos, char *out,
		 size_t n)
{
	text3(c,
	      "SELECT coalesce(string_agg(x, ',' ORDER BY x), '') FROM "
	      "outbox.events_published_upto($1, $2, $3) x",
	      chains, froms, tos, out, n);
}

/* The (chain, chain_seq) of a resend page, as "chain/seq,..." . */
static void page(PGconn *c, const char *after_chain, const char *after_seq, const char *lim,
		 char *out, size_t n)
{
	text3(c,
	      "SELECT coalesce(string_agg(chain || '/' || chain_seq, ',' ORDER BY o), '') FROM "
	      "outbox.events_unpublished('{oracle:p,oracle:q,oracle:r}', $1, $2, $3) WITH "
	      "ORDINALITY x (id, op_id, seq, type, f, t, at_us, body, k, kind, prio, chain, "
	      "chain_seq, prev, hash, o)",
	      after_chain, after_seq, lim, out, n);
}

/* Seal every unsealed event of an oracle's chain after its head (seal_sql's made-up hashes). */
static void seal_all(PGconn *c, const char *chain)
{
	char sql[2048], ids[512];
	PGresult *r =
		PQexecParams(c,
			     "SELECT array_agg(id ORDER BY id)::text FROM outbox.events WHERE "
			     "chain = $1 AND chain_seq IS NULL",
			     1, NULL, (const char *const[]){chain}, NULL, NULL, 0);

	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
	snprintf(ids, sizeof(ids), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	seal_sql(c, sql, sizeof(sql), "", "NULL", 0, chain, ids);
	pgtest_exec(c, sql);
}

/*
 * schema/0028: a chain's published cursor moves over a delivered range only
 * when the range continues it (no gap, but for links gone from the table:
 * archived) and stays within the chain's head; never back; a refused chain is answered and the others still move. What
 * is past the cursors is read in (chain, chain_seq) order, paged by the
 * last link read; events_not_published and archive_terminal agree with it.
 */
START_TEST(test_published_cursor)
{
	struct pgtest_db db;
	PGconn *c;
	char got[512];

	pgtest_setup(&db, 2);
	c = pgtest_connect(&db);
	/* chains p (3 links), q (2), r (1), all sealed */
	pgtest_exec(c,
		    "SELECT outbox.fee_event(i, jsonb_build_object('base_fee', n)) FROM "
		    "(VALUES ('p', 1), ('q', 2), ('p', 3), ('r', 4), ('q', 5), ('p', 6)) v (i, n)");
	for (const char *const *ch =
		     (const char *const[]){"oracle:p", "oracle:q", "oracle:r", NULL};
	     *ch; ch++)
		seal_all(c, *ch);
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_not_published"), 6);
	page(c, "", "0", "100", got, sizeof(got));
	ck_assert_str_eq(got, "oracle:p/1,oracle:p/2,oracle:p/3,oracle:q/1,oracle:q/2,oracle:r/1");
	/* pages of 2, each after the last link read */
	page(c, "", "0", "2", got, sizeof(got));
	ck_assert_str_eq(got, "oracle:p/1,oracle:p/2");
	page(c, "oracle:p", "2", "2", got, sizeof(got));
	ck_assert_str_eq(got, "oracle:p/3,oracle:q/1");
	page(c, "oracle:q", "1", "2", got, sizeof(got));
	ck_assert_str_eq(got, "oracle:q/2,oracle:r/1");
	page(c, "oracle:r", "1", "2", got, sizeof(got));
	ck_assert_str_eq(got, "");

	/* a gap (p starts at 2), past the head (q to 3), no such chain: refused, r moves */
	upto(c, "{oracle:p,oracle:q,oracle:r,oracle:none}", "{2,1,1,1}", "{3,3,1,1}", got,
	     sizeof(got));
	ck_assert_str_eq(got, "oracle:none,oracle:p,oracle:q");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT sum(published_seq) FROM outbox.chain_heads"), 1);
	/* p's first link, then its rest; q's two links in one range */
	upto(c, "{oracle:p}", "{1}", "{1}", got, sizeof(got));
	ck_assert_str_eq(got, "");
	upto(c, "{oracle:p,oracle:q}", "{2,1}", "{3,2}", got, sizeof(got));
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_not_published"), 0);
	page(c, "", "0", "100", got, sizeof(got));
	ck_assert_str_eq(got, "");
	/* a range already covered (an old owner's late report) changes nothing, never back */
	upto(c, "{oracle:p}", "{1}", "{2}", got, sizeof(got));
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(
		pgtest_scalar(
			c, "SELECT published_seq FROM outbox.chain_heads WHERE chain = 'oracle:p'"),
		3);
	/*
	 * a gap made only of links gone from outbox.events (archived, so
	 * published) is no gap; one with a link still there is
	 */
	pgtest_exec(c, "SELECT outbox.fee_event('s', jsonb_build_object('base_fee', n)) FROM "
		       "generate_series(1, 4) n");
	seal_all(c, "oracle:s");
	pgtest_exec(c, "DELETE FROM outbox.events WHERE chain = 'oracle:s' AND chain_seq = 3");
	upto(c, "{oracle:s}", "{4}", "{4}", got, sizeof(got));
	ck_assert_str_eq(got, "oracle:s"); /* links 1 and 2 are still there */
	upto(c, "{oracle:s}", "{1}", "{2}", got, sizeof(got));
	ck_assert_str_eq(got, "");
	upto(c, "{oracle:s}", "{4}", "{4}", got, sizeof(got));
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(
		pgtest_scalar(
			c, "SELECT published_seq FROM outbox.chain_heads WHERE chain = 'oracle:s'"),
		4);
	/* a new link of p is past its cursor again */
	pgtest_exec(c, "SELECT outbox.fee_event('p', '{\"base_fee\": 7}')");
	ck_assert_int_eq(pgtest_scalar(c, "SELECT count(*) FROM outbox.events_not_published"), 1);
	/* malformed calls name what is wrong */
	seal_refused(c, "OB422",
		     "SELECT outbox.events_published_upto('{oracle:p,oracle:p}', '{4,4}', '{4,4}')",
		     "a chain twice");
	seal_refused(c, "OB422", "SELECT outbox.events_published_upto('{oracle:p}', '{3}', '{2}')",
		     "to before from");
	seal_refused(c, "OB422", "SELECT outbox.events_published_upto('{oracle:p}', '{0}', '{1}')",
		     "from 0");
	seal_refused(c, "OB422",
		     "SELECT outbox.events_published_upto('{oracle:p}', '{1,2}', '{3}')",
		     "arrays of different lengths");
	seal_refused(c, "OB422", "SELECT * FROM outbox.events_unpublished('{oracle:p}', '', 0, 0)",
		     "a page of 0");
	PQfinish(c);
	pgtest_teardown(&db);
}
END_TEST

static Suite *event_relay_suite(void)
{
	Suite *s = suite_create("event_relay");
	TCase *tc;

	dh_add_case(s, "every_transition", test_every_transition_on_the_topic, 200);
	tc = tcase_create("broker_outage");
	tcase_set_timeout(tc, 300);
	tcase_add_unchecked_fixture(tc, kafkatest_restart_guard_setup,
				    kafkatest_restart_guard_teardown);
	tcase_add_test(tc, test_broker_outage);
	suite_add_tcase(s, tc);
	dh_add_case(s, "killed_between_seal_and_delivery", test_killed_between_seal_and_delivery,
		    200);
	dh_add_case(s, "tampering", test_tampering_is_found, 200);
	dh_add_case(s, "database_down", test_database_down_does_not_spin, 60);
	dh_add_case(s, "failing_reads", test_failing_reads_warn_once, 60);
	dh_add_case(s, "drain", test_drain_publishes_the_last_writes, 200);
	dh_add_case(s, "seal_refuses", test_seal_refuses_foreign_events, 300);
	dh_add_case(s, "seal_vshards_at_once", test_seal_vshards_at_once, 120);
	dh_add_case(s, "no_stats_block", test_no_stats_block, 120);
	dh_add_case(s, "published_cursor", test_published_cursor, 120);
	return s;
}

OUTBOX_CHECK_MAIN(event_relay_suite)
