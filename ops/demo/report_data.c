/*
 * report_data.c - what outbox-demo-report reads from the run's database
 * (report.h): outbox.ops, outbox.events, outbox.attempts, app.payments,
 * demo.samples and demo.marks.
 */
#include "ops/demo/report.h"

#include "common/stellar/xdr.h"
#include "ops/demo/chart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run sql, expecting rows of `fields` columns; NULL with the reason on stderr. */
static PGresult *query(PGconn *conn, const char *what, const char *sql, int fields)
{
	PGresult *r = PQexec(conn, sql);

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQnfields(r) != fields) {
		fprintf(stderr, "outbox-demo-report: reading %s: %s", what,
			PQresultStatus(r) == PGRES_TUPLES_OK ? "unexpected shape\n"
							     : PQerrorMessage(conn));
		PQclear(r);
		return NULL;
	}
	return r;
}

static double num(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? -1 : strtod(PQgetvalue(r, row, col), NULL);
}

#define T0         "(SELECT started_at FROM demo.marks WHERE label = 'load' ORDER BY id LIMIT 1)"
#define SINCE(col) "extract(epoch FROM " col " - " T0 ")"

static enum report_line line_of(const char *kind, int priority)
{
	if (!strcmp(kind, "WITHDRAW"))
		return RL_WITHDRAW;
	if (!strcmp(kind, "REBALANCE"))
		return RL_REBALANCE;
	if (!strcmp(kind, "REFERRAL_REWARD"))
		return RL_REFERRAL;
	return priority == 2 ? RL_RECURRING : RL_DEPOSIT;
}

static int load_ops(PGconn *conn, struct report_data *d)
{
	PGresult *r = query(conn, "outbox.ops",
			    "SELECT id, kind, priority, status, business_record_id LIKE 'wdx-%',"
			    " " SINCE("created_at") ", " SINCE("confirmed_at") ", " SINCE(
				    "updated_at") ","
						  " left(coalesce(hold_reason, last_error, ''), 95)"
						  " FROM outbox.ops ORDER BY id",
			    9);

	if (!r)
		return -1;
	d->n_ops = (size_t)PQntuples(r);
	d->ops = calloc(d->n_ops ? d->n_ops : 1, sizeof(*d->ops));
	for (size_t i = 0; d->ops && i < d->n_ops; i++) {
		struct report_op *o = &d->ops[i];
		int row = (int)i;

		o->id = strtoll(PQgetvalue(r, row, 0), NULL, 10);
		o->priority = atoi(PQgetvalue(r, row, 2));
		o->line = line_of(PQgetvalue(r, row, 1), o->priority);
		snprintf(o->status, sizeof(o->status), "%s", PQgetvalue(r, row, 3));
		o->overdraft = o->line == RL_WITHDRAW && PQgetvalue(r, row, 4)[0] == 't';
		o->created = num(r, row, 5);
		o->confirmed = PQgetisnull(r, row, 6) ? -1 : num(r, row, 6);
		o->settled = num(r, row, 7);
		snprintf(o->detail, sizeof(o->detail), "%s", PQgetvalue(r, row, 8));
	}
	PQclear(r);
	return d->ops ? 0 : -1;
}

static int load_counts(PGconn *conn, struct report_data *d)
{
	PGresult *r = query(conn, "outbox.events and outbox.attempts",
			    "SELECT count(*) FILTER (WHERE type = 'FEE_BUMPED'),"
			    " count(DISTINCT op_id) FILTER (WHERE type = 'FEE_BUMPED'),"
			    " count(*) FILTER (WHERE type = 'DEFERRED'),"
			    " count(DISTINCT op_id) FILTER (WHERE type = 'DEFERRED'),"
			    " count(*) FILTER (WHERE type = 'RETRY_SCHEDULED'),"
			    " " SINCE("(SELECT ended_at FROM demo.marks WHERE label = 'load' ORDER "
				      "BY id LIMIT 1)") " FROM outbox.events",
			    6);

	if (!r)
		return -1;
	d->bumps = (int64_t)num(r, 0, 0);
	d->bumped_ops = (int64_t)num(r, 0, 1);
	d->deferrals = (int64_t)num(r, 0, 2);
	d->deferred_ops = (int64_t)num(r, 0, 3);
	d->retries = (int64_t)num(r, 0, 4);
	d->load_end = num(r, 0, 5);
	PQclear(r);
	return 0;
}

/* Each business row against its op: paid = CONFIRMED, failed = FAILED, ... */
static int load_rows(PGconn *conn, struct report_data *d)
{
	PGresult *r = query(conn, "app.payments",
			    "SELECT count(*), count(*) FILTER (WHERE p.status = CASE o.status"
			    "   WHEN 'CONFIRMED' THEN 'paid' WHEN 'FAILED' THEN 'failed'"
			    "   WHEN 'CANCELLED' THEN 'cancelled' ELSE 'requested' END),"
			    " count(*) FILTER (WHERE p.status = 'paid'), count(*) FILTER (WHERE "
			    "p.status = 'failed'),"
			    " count(*) FILTER (WHERE p.status = 'requested')"
			    " FROM app.payments p JOIN outbox.ops o ON o.id = p.op_id",
			    5);

	if (!r)
		return -1;
	d->rows = d->via_sql = (int64_t)num(r, 0, 0);
	d->rows_agree = (int64_t)num(r, 0, 1);
	d->rows_paid = (int64_t)num(r, 0, 2);
	d->rows_failed = (int64_t)num(r, 0, 3);
	d->rows_open = (int64_t)num(r, 0, 4);
	PQclear(r);
	return 0;
}

static int load_marks(PGconn *conn, struct report_data *d)
{
	PGresult *r = query(
		conn, "demo.marks",
		"SELECT label, " SINCE("started_at") ", " SINCE(
			"coalesce(ended_at, started_at)") " FROM demo.marks ORDER BY id LIMIT 16",
		3);

	if (!r)
		return -1;
	d->n_marks = (size_t)PQntuples(r);
	for (size_t i = 0; i < d->n_marks; i++) {
		snprintf(d->marks[i].label, sizeof(d->marks[i].label), "%s",
			 PQgetvalue(r, (int)i, 0));
		d->marks[i].start = num(r, (int)i, 1);
		d->marks[i].end = num(r, (int)i, 2);
	}
	PQclear(r);
	return 0;
}

static int congestion_level(const char *s)
{
	static const char *const names[4] = {"low", "elevated", "high", "severe"};

	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static int load_samples(PGconn *conn, struct report_data *d)
{
	PGresult *r = query(conn, "demo.samples",
			    "SELECT " SINCE("at") ", recommended_fee, coalesce(congestion, '')"
						  " FROM demo.samples ORDER BY at",
			    3);

	if (!r)
		return -1;
	d->n_samples = (size_t)PQntuples(r);
	d->samples = calloc(d->n_samples ? d->n_samples : 1, sizeof(*d->samples));
	for (size_t i = 0; d->samples && i < d->n_samples; i++) {
		d->samples[i].at = num(r, (int)i, 0);
		d->samples[i].fee = num(r, (int)i, 1);
		d->samples[i].congestion = congestion_level(PQgetvalue(r, (int)i, 2));
	}
	PQclear(r);
	return d->samples ? 0 : -1;
}

/*
 * The inclusion part of a transaction's bid, per operation: its fee less the
 * Soroban resource fee (a fixed cost, the same whatever the congestion);
 * a fee bump counts as two operations. -1 when the envelope does not decode.
 */
static double inclusion_bid(const char *b64, struct xdr_envelope *env)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t *raw = NULL;
	size_t len;
	double bid = -1;

	if (!xdr_envelope_decode_b64(env, b64, strlen(b64), &raw, &len, &err)) {
		bool bump = env->type == ENVELOPE_TYPE_TX_FEE_BUMP;
		int64_t total = bump ? env->bump.fee : (int64_t)env->tx.fee;

		bid = (double)(total - (env->tx.has_soroban ? env->tx.soroban.resource_fee : 0)) /
		      (bump ? 2 : 1);
	}
	free(raw);
	return bid;
}

/* The inclusion bids of the transactions that landed: median and highest. */
static int load_bids(PGconn *conn, struct report_data *d)
{
	PGresult *r = query(conn, "outbox.attempts",
			    "SELECT envelope_xdr FROM outbox.attempts"
			    " WHERE outcome IN ('CONFIRMED', 'FAILED', 'LANDED')",
			    1);
	struct xdr_envelope *env = malloc(sizeof(*env));
	double *bids = r ? calloc((size_t)PQntuples(r) + 1, sizeof(double)) : NULL;
	size_t n = 0;

	for (int i = 0; bids && env && i < PQntuples(r); i++) {
		double b = inclusion_bid(PQgetvalue(r, i, 0), env);

		if (b >= 0)
			bids[n++] = b;
	}
	if (n)
		qsort(bids, n, sizeof(double), chart_cmp_double);
	d->fee_median = (int64_t)chart_pctl(bids, n, 0.5);
	d->fee_max = n ? (int64_t)bids[n - 1] : 0;
	free(bids);
	free(env);
	PQclear(r);
	return r ? 0 : -1;
}

int report_load(PGconn *conn, struct report_data *d)
{
	memset(d, 0, sizeof(*d));
	if (load_ops(conn, d) || load_counts(conn, d) || load_rows(conn, d) ||
	    load_marks(conn, d) || load_samples(conn, d) || load_bids(conn, d))
		return -1;
	if (d->load_end < 0) {
		fprintf(stderr, "outbox-demo-report: no finished load in demo.marks (did "
				"outbox-demo-load run?)\n");
		return -1;
	}
	return 0;
}

void report_free(struct report_data *d)
{
	free(d->ops);
	free(d->samples);
	memset(d, 0, sizeof(*d));
}
