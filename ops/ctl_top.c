/*
 * ctl_top.c - `outboxctl top`: a live full-screen view of a running
 * instance, refreshed every second: processes (state, heartbeat, restarts,
 * in-flight, per-second claims and confirmations), throughput with a
 * sparkline, fee snapshot and congestion, held ops and alarms, the Kafka
 * relay, and the queue depth by priority.
 *
 * Everything but the queue depth comes from the shared-memory segment,
 * attached read-only exactly as `outboxctl stats` does (ctl_stats_collect),
 * so top costs the daemon nothing. The queue depth is a database question:
 * with OUTBOX_DATABASE_URL (or --db) top counts PENDING and SUBMITTED ops
 * per priority through their partial indexes at most every 2 s, with a 2 s
 * connect timeout and a 1 s statement timeout so a sick database slows the
 * queue line, never the screen. When the instance stops or restarts, top
 * says so and attaches again; it only ends on q, Ctrl-C or a signal.
 *
 * --once prints a single frame (two samples an interval apart, so rates are
 * real) without escape sequences, for scripts, logs and tests.
 *
 * Exit codes: 0 quit by the operator (or --once printed); 1 --once found
 * the instance degraded; 2 usage error, no terminal, or (--once) no
 * instance to attach.
 */
#include "ops/ctl.h"
#include "ops/term.h"
#include "ops/top_view.h"

#include "common/clock.h"

#include <langinfo.h>
#include <libpq-fe.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define QUEUE_EVERY_MS 2000
#define DB_RETRY_MS    10000

struct top_opts {
	char instance[SHM_INSTANCE_MAX + 1];
	const char *db;
	int interval_ms;
	bool once, ascii;
};

/* The live state of one top session. */
struct top_session {
	struct top_opts opt;
	struct ctl_shm_opts shm;
	bool attached;
	json_t *prev;
	uint64_t prev_ms;
	struct top_history confirmed;
	struct top_queue queue;
	PGconn *pg;
	uint64_t queue_read_ms, db_failed_ms;
	struct top_frame frame;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: outboxctl top [--instance NAME] [--interval MS] [--db URL | --no-db]\n"
		   "                     [--once] [--ascii]\n"
		   "  --instance  the instance to watch (default $OUTBOX_INSTANCE, then default)\n"
		   "  --interval  refresh period in ms, 100..60000 (default 1000)\n"
		   "  --db        database for the queue depth (default $OUTBOX_DATABASE_URL)\n"
		   "  --no-db     do not read the queue depth\n"
		   "  --once      print one frame to stdout and exit (no terminal needed)\n"
		   "  --ascii     ASCII sparkline (default: blocks when the locale is UTF-8)\n"
		   "keys: q quit\n");
}

static int parse(int argc, char **argv, struct top_opts *o)
{
	const char *inst = getenv("OUTBOX_INSTANCE");
	char *end;

	memset(o, 0, sizeof(*o));
	snprintf(o->instance, sizeof(o->instance), "%s", inst && *inst ? inst : "default");
	o->db = getenv("OUTBOX_DATABASE_URL");
	o->interval_ms = 1000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "--once")) {
			o->once = true;
		} else if (!strcmp(a, "--ascii")) {
			o->ascii = true;
		} else if (!strcmp(a, "--no-db")) {
			o->db = NULL;
		} else if (!strcmp(a, "--db") && v) {
			o->db = v;
			i++;
		} else if (!strcmp(a, "--instance") && v) {
			if (strlen(v) >= sizeof(o->instance)) {
				fprintf(stderr,
					"outboxctl top: --instance '%s' is longer than %d\n", v,
					SHM_INSTANCE_MAX);
				return 2;
			}
			snprintf(o->instance, sizeof(o->instance), "%s", v);
			i++;
		} else if (!strcmp(a, "--interval") && v) {
			long ms = strtol(v, &end, 10);

			if (*end || end == v || ms < 100 || ms > 60000) {
				fprintf(stderr,
					"outboxctl top: --interval '%s' is not 100..60000 ms\n", v);
				return 2;
			}
			o->interval_ms = (int)ms;
			i++;
		} else {
			fprintf(stderr, "outboxctl top: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	return 0;
}

/* Attach quietly: while watching, a missing instance may come back. */
static bool attach(struct top_session *s)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (s->attached)
		return true;
	memset(&s->shm, 0, sizeof(s->shm));
	snprintf(s->shm.instance, sizeof(s->shm.instance), "%s", s->opt.instance);
	s->attached =
		shm_segment_attach(&s->shm.seg, s->opt.instance, SHM_ATTACH_RDONLY, &err) == 0;
	return s->attached;
}

static void detach(struct top_session *s)
{
	if (s->attached)
		shm_segment_detach(&s->shm.seg);
	s->attached = false;
	json_decref(s->prev);
	s->prev = NULL;
}

static void db_close(struct top_session *s)
{
	PQfinish(s->pg);
	s->pg = NULL;
}

/* One line of libpq's message, for the queue line. */
static void db_error(struct top_session *s, const char *what)
{
	const char *m = s->pg ? PQerrorMessage(s->pg) : "out of memory";
	size_t n = strcspn(m, "\n");

	snprintf(s->queue.error, sizeof(s->queue.error), "%s: %.*s", what, (int)n, m);
	s->queue.known = false;
}

static bool db_connect(struct top_session *s, uint64_t now)
{
	const char *const keys[] = {"dbname", "connect_timeout", "options", "application_name",
				    NULL};
	const char *const vals[] = {s->opt.db, "2", "-c statement_timeout=1000", "outboxctl top",
				    NULL};

	if (s->pg)
		return true;
	if (s->db_failed_ms && now - s->db_failed_ms < DB_RETRY_MS)
		return false;
	s->pg = PQconnectdbParams(keys, vals, 1);
	if (!s->pg || PQstatus(s->pg) != CONNECTION_OK) {
		db_error(s, "cannot connect");
		db_close(s);
		s->db_failed_ms = now;
		return false;
	}
	s->db_failed_ms = 0;
	return true;
}

/*
 * Each half of the UNION ALL matches one partial index's predicate
 * exactly (ops_claim_idx, ops_submitted_idx), so the count never reads the
 * heap's terminal rows however many there are.
 */
static const char queue_sql[] =
	"SELECT 0, priority, count(*) FROM outbox.ops WHERE status = 'PENDING' GROUP BY priority "
	"UNION ALL "
	"SELECT 1, priority, count(*) FROM outbox.ops WHERE status = 'SUBMITTED' GROUP BY "
	"priority";

static void read_queue(struct top_session *s, uint64_t now)
{
	PGresult *r;

	if (!s->opt.db || !*s->opt.db) {
		snprintf(s->queue.error, sizeof(s->queue.error),
			 "no database (set OUTBOX_DATABASE_URL or --db)");
		return;
	}
	if (s->queue_read_ms && now - s->queue_read_ms < QUEUE_EVERY_MS) {
		s->queue.age_ms = now - s->queue_read_ms;
		return;
	}
	if (!db_connect(s, now))
		return;
	r = PQexec(s->pg, queue_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		db_error(s, "queue depth query failed");
		PQclear(r);
		db_close(s);
		s->db_failed_ms = now;
		return;
	}
	memset(s->queue.pending, 0, sizeof(s->queue.pending));
	memset(s->queue.submitted, 0, sizeof(s->queue.submitted));
	for (int i = 0; i < PQntuples(r); i++) {
		int which = atoi(PQgetvalue(r, i, 0)), prio = atoi(PQgetvalue(r, i, 1));
		long long n = atoll(PQgetvalue(r, i, 2));

		if (prio < 0 || prio > 2)
			continue;
		(which ? s->queue.submitted : s->queue.pending)[prio] = n;
	}
	PQclear(r);
	s->queue.known = true;
	s->queue.error[0] = '\0';
	s->queue_read_ms = now;
	s->queue.age_ms = 0;
}

/* A fresh sample; NULL when the instance is not there (or just restarted). */
static json_t *sample(struct top_session *s, bool *degraded)
{
	json_t *doc;

	if (!attach(s))
		return NULL;
	doc = ctl_stats_collect(&s->shm, degraded);
	if (ctl_shm_restarted(&s->shm)) {
		json_decref(doc);
		detach(s); /* a new daemon: rates restart from its counters */
		return NULL;
	}
	return doc;
}

static void clock_text(char *buf, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, cap, "%H:%M:%S", &tm);
}

/* Render cur (with s->prev) into s->frame. */
static void render(struct top_session *s, json_t *cur, uint64_t now, int rows, int cols)
{
	struct top_input in = {.prev = s->prev,
			       .cur = cur,
			       .dt_s = (double)(now - s->prev_ms) / 1000.0,
			       .confirmed = &s->confirmed,
			       .queue = &s->queue,
			       .rows = rows,
			       .cols = cols,
			       .utf8 = !s->opt.ascii && !strcasecmp(nl_langinfo(CODESET), "UTF-8")};
	char clk[16];

	clock_text(clk, sizeof(clk));
	in.clock = clk;
	top_render(&s->frame, &in);
}

/* Take a sample and advance the rate history; returns it (owned) or NULL. */
static json_t *step(struct top_session *s, bool *degraded)
{
	uint64_t now = mono_ms();
	json_t *cur = sample(s, degraded);

	if (cur && s->prev) {
		double dt = (double)(now - s->prev_ms) / 1000.0;
		json_t *a = json_object_get(s->prev, "totals"), *b = json_object_get(cur, "totals");
		json_int_t pa =
			json_integer_value(json_object_get(a, "outbox_ops_confirmed_total"));
		json_int_t pb =
			json_integer_value(json_object_get(b, "outbox_ops_confirmed_total"));

		top_history_push(&s->confirmed, top_rate(pa > 0 ? (uint64_t)pa : 0,
							 pb > 0 ? (uint64_t)pb : 0, dt));
	}
	read_queue(s, now);
	return cur;
}

static int run_once(struct top_session *s)
{
	struct timespec pause = {s->opt.interval_ms / 1000, (s->opt.interval_ms % 1000) * 1000000L};
	const char *cols = getenv("COLUMNS");
	bool degraded = false;
	json_t *cur = step(s, &degraded);

	if (!cur) {
		fprintf(stderr, "outboxctl top: no instance '%s' is running\n", s->opt.instance);
		return 2;
	}
	s->prev = cur;
	s->prev_ms = mono_ms();
	nanosleep(&pause, NULL);
	if (!(cur = step(s, &degraded))) {
		fprintf(stderr, "outboxctl top: instance '%s' stopped or restarted\n",
			s->opt.instance);
		return 1;
	}
	render(s, cur, mono_ms(), TOP_MAX_LINES, cols && atoi(cols) > 20 ? atoi(cols) : 120);
	for (int i = 0; i < s->frame.n; i++)
		printf("%s\n", s->frame.line[i]);
	json_decref(cur);
	return degraded ? 1 : 0;
}

static void draw_waiting(struct top_session *s)
{
	static char line[2][TOP_LINE_MAX];
	const char *lines[2] = {line[0], line[1]};
	bool alert[2] = {true, false};

	snprintf(line[0], sizeof(line[0]), "! no instance '%s' is running: waiting for it",
		 s->opt.instance);
	snprintf(line[1], sizeof(line[1]), "q quit");
	term_draw(lines, alert, 2);
}

static void draw(struct top_session *s)
{
	const char *lines[TOP_MAX_LINES];

	for (int i = 0; i < s->frame.n; i++)
		lines[i] = s->frame.line[i];
	term_draw(lines, s->frame.alert, s->frame.n);
}

static int run_live(struct top_session *s)
{
	if (term_open())
		return 2;
	while (!term_stop_requested()) {
		bool degraded = false;
		json_t *cur = step(s, &degraded);
		uint64_t now = mono_ms(), next;
		int rows, cols, key = 0;

		term_size(&rows, &cols);
		if (cur) {
			render(s, cur, now, rows, cols);
			draw(s);
			json_decref(s->prev);
			s->prev = cur;
			s->prev_ms = now;
		} else {
			draw_waiting(s);
		}
		/* Wait out the interval, redrawing early only to quit. */
		next = now + (uint64_t)s->opt.interval_ms;
		while (!term_stop_requested() && (now = mono_ms()) < next) {
			key = term_key((int)(next - now));
			if (key == 'q' || key == 'Q' || key == 3)
				break;
		}
		if (key == 'q' || key == 'Q' || key == 3)
			break;
	}
	term_close();
	return 0;
}

int ctl_top(int argc, char **argv)
{
	struct top_session *s = calloc(1, sizeof(*s));
	int rc;

	if (!s) {
		fprintf(stderr, "outboxctl top: out of memory\n");
		return 1;
	}
	rc = parse(argc, argv, &s->opt);
	if (rc == 0) {
		setlocale(LC_CTYPE, "");
		snprintf(s->queue.error, sizeof(s->queue.error), "not read yet");
		rc = s->opt.once ? run_once(s) : run_live(s);
	} else if (rc == 1) {
		rc = 0; /* --help */
	}
	detach(s);
	db_close(s);
	free(s);
	return rc;
}
