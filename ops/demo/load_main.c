/*
 * load_main.c - outbox-demo-load: drives the demo's business load into a
 * running outboxd through its public entry points, with a progress line a
 * second, then waits for every op to settle (load.h lists the files).
 *
 *	outbox-demo-load --population FILE [--db URL] [--rate N] [--duration S]
 *	                 [--drain-timeout S] [--seed N] [--instance NAME]
 *
 * Exit codes: 0 every op settled (none PENDING or SUBMITTED; HELD ones are
 * the report's to name); 1 an enqueue failed, PostgreSQL was lost, or ops
 * were still open at the drain deadline; 2 usage.
 */
#include "common/clock.h"
#include "common/enqueue.h"
#include "ops/demo/app.h"
#include "ops/demo/http.h"
#include "ops/demo/load.h"
#include "ops/demo/progress.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The usage on out; 0 for --help (stdout), 2 for a usage error (stderr). */
static int usage_to(FILE *out)
{
	fprintf(out,
		"usage: outbox-demo-load --population FILE [--db URL] [--rate N] [--duration S]\n"
		"                        [--drain-timeout S] [--seed N] [--instance NAME]\n"
		"                        [--gateway URL --api-key-file FILE]\n"
		"  --population FILE  signers, customers and agents (lines: signer G... |\n"
		"                     customer USER G... STROOPS | agent ID)\n"
		"  --db URL           PostgreSQL (default: OUTBOX_DATABASE_URL)\n"
		"  --rate N           intents per second, 0.1..1000 (default 10)\n"
		"  --duration S       seconds of load, 1..86400 (default 60)\n"
		"  --drain-timeout S  then at most S seconds for every op to settle (default 120)\n"
		"  --seed N           the mix's PRNG seed (default 1)\n"
		"  --instance NAME    outboxd instance for the fee snapshot (default:\n"
		"                     OUTBOX_INSTANCE, else 'default')\n"
		"  --gateway URL      http://HOST:PORT of outboxd's gateway: referral payouts and\n"
		"                     rebalances go through its HTTP enqueue (default: all SQL)\n"
		"  --api-key-file F   the gateway API key (scope outbox:enqueue) on F's first "
		"line\n");
	return out == stdout ? 0 : 2;
}

static int usage(void)
{
	return usage_to(stderr);
}

static int number(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = s ? strtod(s, &end) : 0;
	if (!s || errno || end == s || *end || !(*out >= lo && *out <= hi)) {
		fprintf(stderr, "outbox-demo-load: %s: '%s' is not a number in %g..%g\n", opt,
			s ? s : "", lo, hi);
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct load_opts *o)
{
	double seed = 1;
	const char *inst = getenv("OUTBOX_INSTANCE");

	*o = (struct load_opts){.db = getenv("OUTBOX_DATABASE_URL"),
				.instance = inst && *inst ? inst : "default",
				.rate = 10,
				.duration_s = 60,
				.drain_s = 120};
	/* every option takes a value: they come in pairs */
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;

		if (!strcmp(a, "--help"))
			return usage_to(stdout) - 1; /* -1: done, exit 0 */
		if (!v)
			return usage();
		if (!strcmp(a, "--population"))
			o->population = v;
		else if (!strcmp(a, "--db"))
			o->db = v;
		else if (!strcmp(a, "--instance"))
			o->instance = v;
		else if (!strcmp(a, "--gateway"))
			o->gateway = v;
		else if (!strcmp(a, "--api-key-file"))
			o->api_key_file = v;
		else if (!strcmp(a, "--rate"))
			bad = number(a, v, 0.1, 1000, &o->rate);
		else if (!strcmp(a, "--duration"))
			bad = number(a, v, 1, 86400, &o->duration_s);
		else if (!strcmp(a, "--drain-timeout"))
			bad = number(a, v, 1, 86400, &o->drain_s);
		else if (!strcmp(a, "--seed"))
			bad = number(a, v, 0, 9007199254740992.0, &seed);
		else
			return usage();
		if (bad)
			return 2;
	}
	o->seed = (uint64_t)seed;
	if (!o->gateway != !o->api_key_file) {
		fprintf(stderr, "outbox-demo-load: --gateway and --api-key-file go together\n");
		return 2;
	}
	if (!o->population || !o->db || !*o->db) {
		fprintf(stderr, "outbox-demo-load: %s is required\n",
			!o->population ? "--population" : "--db (or OUTBOX_DATABASE_URL)");
		return 2;
	}
	return 0;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	if (ms > 0)
		nanosleep(&ts, NULL);
}

/* The load's span in demo.marks: the report's time zero and its shaded band. */
static int mark(PGconn *conn, const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK;

	if (!ok)
		fprintf(stderr, "outbox-demo-load: %s: %s", sql, PQerrorMessage(conn));
	PQclear(r);
	return ok ? 0 : -1;
}

struct run {
	const struct load_opts *o;
	PGconn *conn;
	struct gw_client gw;
	struct load_sinks sinks;
	struct mix mix;
	struct load_tally tally;
	struct progress prog;
	struct intent *batch; /* one recurring round */
	int plans;
	int64_t t0, next_sample, next_round;
	int64_t steady; /* steady-stream intents sent */
};

/* Catch the steady stream up with the clock: rate x (1 - recurring share). */
static int tick_steady(struct run *r, int64_t now)
{
	double due = (double)(now - r->t0) / 1000.0 * r->o->rate * (1 - LOAD_RECURRING_SHARE);
	struct intent it[2];

	while ((double)r->steady < due) {
		int n = mix_next(&r->mix, it);

		for (int i = 0; i < n; i++)
			if (load_send(&r->sinks, &r->mix, &it[i], &r->tally))
				return -1;
		r->steady += n;
	}
	return 0;
}

/* The recurring-deposit scheduler: a burst every MIX_RECURRING_S, the first 5 s in. */
static int tick_recurring(struct run *r, int64_t now)
{
	if (now < r->next_round)
		return 0;
	r->next_round += MIX_RECURRING_S * 1000;
	for (int i = 0, n = mix_recurring(&r->mix, r->plans, r->batch, r->plans); i < n; i++)
		if (load_send(&r->sinks, &r->mix, &r->batch[i], &r->tally))
			return -1;
	return 0;
}

/* A line a second; *open gets PENDING + SUBMITTED. */
static int tick_progress(struct run *r, int64_t now, int64_t *open)
{
	struct progress_sample s;

	if (now < r->next_sample)
		return 0;
	r->next_sample += 1000;
	if (r->next_sample <= now) /* a slow machine: skip, do not burst */
		r->next_sample = now + 1000;
	if (progress_sample(&r->prog, &s))
		return -1;
	progress_print(&r->prog, stdout, &s, r->tally.sent, now);
	*open = s.pending + s.submitted;
	return 0;
}

static int load_phase(struct run *r)
{
	int64_t end = r->t0 + (int64_t)(r->o->duration_s * 1000), open = 0, now;

	while ((now = mono_ms()) < end) {
		if (tick_steady(r, now) || tick_recurring(r, now) || tick_progress(r, now, &open))
			return -1;
		sleep_ms(10);
	}
	return 0;
}

static int drain_phase(struct run *r)
{
	int64_t start = mono_ms(), deadline = start + (int64_t)(r->o->drain_s * 1000);
	int64_t open = -1, now;

	while ((now = mono_ms()) < deadline) {
		if (tick_progress(r, now, &open))
			return -1;
		if (open == 0) {
			printf("   every op settled %.1f s after the load ended\n",
			       (double)(now - start) / 1000.0);
			return 0;
		}
		sleep_ms(50);
	}
	fprintf(stderr,
		"outbox-demo-load: %" PRId64 " ops still PENDING or SUBMITTED %.0f s after "
		"the load ended\n",
		open, r->o->drain_s);
	return -1;
}

static void print_plan(const struct run *r)
{
	const struct population *p = r->mix.pop;

	printf("   %.1f intents/s for %.0f s, seed %" PRIu64 ": %zu customers, %zu agents, %zu "
	       "signers\n",
	       r->o->rate, r->o->duration_s, r->o->seed, p->n_customers, p->n_agents, p->n_signers);
	printf("   the core application enqueues in its own transaction (app.payments is its "
	       "business table):\n");
	for (int i = 0; app_transaction_text[i]; i++)
		printf("      %s\n", app_transaction_text[i]);
	if (r->o->gateway)
		printf("   referral payouts (marketing) and rebalances (treasury) come over HTTP: "
		       "POST "
		       "%s/api/v1/ops with an API key\n",
		       r->o->gateway);
	else
		printf("   (this build has no gateway: referral payouts and rebalances use SQL "
		       "too)\n");
	printf("   recurring deposits: %d plans every %d s (LOW); 1 client request in %d is "
	       "retried\n\n",
	       r->plans, MIX_RECURRING_S, LOAD_RETRY_ONE_IN);
	fflush(stdout);
}

static void print_tally(const struct run *r)
{
	const int64_t *n = r->tally.by_what;

	printf("   load done: %" PRId64 " ops in %.0f s (%.1f/s): %" PRId64 " deposits, %" PRId64
	       " withdrawals (%" PRId64 " of them overdrafts), %" PRId64
	       " recurring deposits, %" PRId64 " referral legs, %" PRId64 " rebalances; %" PRId64
	       " retried requests got their existing op\n",
	       r->tally.sent, r->o->duration_s, (double)r->tally.sent / r->o->duration_s,
	       n[IW_DEPOSIT], n[IW_WITHDRAW] + n[IW_OVERDRAFT], n[IW_OVERDRAFT], n[IW_RECURRING],
	       n[IW_REFERRAL], n[IW_REBALANCE], r->tally.retries);
	if (r->tally.via_http)
		printf("   %" PRId64 " of them came over HTTP (referral payouts, rebalances)\n",
		       r->tally.via_http);
	fflush(stdout);
}

static int run(struct run *r)
{
	r->plans = mix_plans_for(r->o->rate, LOAD_RECURRING_SHARE);
	r->batch = calloc((size_t)r->plans, sizeof(*r->batch));
	if (!r->batch)
		return -1;
	print_plan(r);
	if (mark(r->conn, "INSERT INTO demo.marks (label) VALUES ('load')"))
		return -1;
	r->t0 = mono_ms();
	r->next_sample = r->t0 + 1000;
	r->next_round = r->t0 + 5000;
	progress_init(&r->prog, r->conn, r->o->instance, r->t0);
	if (load_phase(r) ||
	    mark(r->conn,
		 "UPDATE demo.marks SET ended_at = clock_timestamp() WHERE label = 'load'"))
		return -1;
	print_tally(r);
	return drain_phase(r);
}

int main(int argc, char **argv)
{
	struct load_opts o;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	static struct population pop;
	struct run r = {.o = &o};
	char why[256];
	int rc = parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (population_load(&pop, o.population, why, sizeof(why))) {
		fprintf(stderr, "outbox-demo-load: %s\n", why);
		return 2;
	}
	if (outbox_db_connect(o.db, &r.conn, &err)) {
		fprintf(stderr, "outbox-demo-load: %s\n", err.msg);
		return 1;
	}
	r.sinks.conn = r.conn;
	if (o.gateway) {
		if (gw_open(&r.gw, o.gateway, o.api_key_file, why, sizeof(why))) {
			fprintf(stderr, "outbox-demo-load: %s\n", why);
			PQfinish(r.conn);
			return 2;
		}
		r.sinks.gw = &r.gw;
	}
	mix_init(&r.mix, &pop, o.seed);
	rc = run(&r) ? 1 : 0;
	progress_close(&r.prog);
	if (r.sinks.gw)
		gw_close(&r.gw);
	free(r.batch);
	PQfinish(r.conn);
	return rc;
}
