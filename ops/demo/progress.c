/*
 * progress.c - the demo's live line (progress.h).
 */
#include "ops/demo/progress.h"

#include "common/clock.h"
#include "common/fee_view.h"
#include "common/shm/fee_snapshot.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void progress_init(struct progress *p, PGconn *conn, const char *instance, int64_t t0_ms)
{
	memset(p, 0, sizeof(*p));
	p->conn = conn;
	snprintf(p->instance, sizeof(p->instance), "%s", instance);
	p->t0_ms = p->last_ms = t0_ms;
}

void progress_close(struct progress *p)
{
	if (p->attached)
		shm_segment_detach(&p->seg);
	p->attached = false;
}

/*
 * The fee snapshot, attaching on first use and again whenever a copy fails
 * (outboxd restarted, or was not up yet): the line simply shows "-" then.
 */
static void read_fee(struct progress *p, struct progress_sample *s)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct fee_snapshot snap;
	struct fee_view v;

	s->fee_ok = false;
	if (!p->attached && shm_segment_attach(&p->seg, p->instance, SHM_ATTACH_RDONLY, &err) == 0)
		p->attached = true;
	if (!p->attached)
		return;
	if (p->seg.hdr->instance_id != p->seg.instance_id ||
	    fee_snapshot_copy(&p->seg, &snap, FEE_COPY_MAX_TRIES, &err)) {
		progress_close(p);
		return;
	}
	fee_view_eval(&v, &snap, wall_ms(), 0);
	s->fee_ok = !v.none;
	s->recommended = v.recommended;
	s->aggressive = v.aggressive;
	s->congestion = v.stale ? "stale" : fee_congestion_name(v.congestion);
	s->usage = (double)snap.capacity_ppm / FEE_CAPACITY_SCALE;
}

static const char sample_sql[] = "SELECT count(*) FILTER (WHERE status = 'PENDING'),"
				 "  count(*) FILTER (WHERE status = 'SUBMITTED'),"
				 "  count(*) FILTER (WHERE status = 'CONFIRMED'),"
				 "  count(*) FILTER (WHERE status = 'FAILED'),"
				 "  count(*) FILTER (WHERE status = 'HELD'),"
				 "  count(*) FILTER (WHERE status = 'CANCELLED'),"
				 "  (SELECT count(*) FROM outbox.events WHERE type = 'FEE_BUMPED'),"
				 "  (SELECT count(*) FROM outbox.events WHERE type = 'DEFERRED')"
				 " FROM outbox.ops";

int progress_sample(struct progress *p, struct progress_sample *s)
{
	PGresult *r = PQexec(p->conn, sample_sql);
	int64_t *f[8] = {&s->pending, &s->submitted, &s->confirmed, &s->failed,
			 &s->held,    &s->cancelled, &s->bumps,     &s->deferrals};

	memset(s, 0, sizeof(*s));
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 || PQnfields(r) != 8) {
		fprintf(stderr, "outbox-demo-load: reading outbox.ops: %s",
			PQresultStatus(r) == PGRES_TUPLES_OK ? "unexpected shape\n"
							     : PQerrorMessage(p->conn));
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < 8; i++)
		*f[i] = strtoll(PQgetvalue(r, 0, i), NULL, 10);
	PQclear(r);
	read_fee(p, s);
	return 0;
}

static void record(struct progress *p, const struct progress_sample *s)
{
	char v[8][32];
	const char *params[8];
	PGresult *r;

	snprintf(v[0], sizeof(v[0]), "%" PRIu64, s->recommended);
	snprintf(v[1], sizeof(v[1]), "%" PRIu64, s->aggressive);
	snprintf(v[2], sizeof(v[2]), "%s", s->fee_ok ? s->congestion : "");
	snprintf(v[3], sizeof(v[3]), "%.4f", s->usage);
	snprintf(v[4], sizeof(v[4]), "%" PRId64, s->pending);
	snprintf(v[5], sizeof(v[5]), "%" PRId64, s->submitted);
	snprintf(v[6], sizeof(v[6]), "%" PRId64, s->confirmed);
	snprintf(v[7], sizeof(v[7]), "%" PRId64, s->failed);
	for (int i = 0; i < 8; i++)
		params[i] = i < 4 && !s->fee_ok ? NULL : v[i];
	r = PQexecParams(p->conn,
			 "INSERT INTO demo.samples (recommended_fee, aggressive_fee, congestion,"
			 " capacity_usage, pending, submitted, confirmed, failed)"
			 " VALUES ($1::bigint, $2::bigint, $3, $4::float8, $5::bigint, $6::bigint,"
			 " $7::bigint, $8::bigint)",
			 8, NULL, params, NULL, NULL, 0);
	/* A lost sample only thins the chart; the run goes on. */
	PQclear(r);
}

void progress_print(struct progress *p, FILE *out, const struct progress_sample *s,
		    int64_t enqueued, int64_t now_ms)
{
	double dt = (double)(now_ms - p->last_ms) / 1000.0;
	double enq_rate = dt > 0 ? (double)(enqueued - p->last_enq) / dt : 0;
	double conf_rate = dt > 0 ? (double)(s->confirmed - p->last_conf) / dt : 0;
	char fee[32] = "-", cong[32] = "-";

	if (p->lines++ % 20 == 0)
		fprintf(out, "   %5s %5s %6s %7s %6s %9s %6s %11s %-13s %5s %5s\n", "t", "enq/s",
			"conf/s", "pending", "submit", "confirmed", "failed", "fee rec/agg",
			"congestion", "bumps", "defer");
	if (s->fee_ok) {
		snprintf(fee, sizeof(fee), "%" PRIu64 "/%" PRIu64, s->recommended, s->aggressive);
		snprintf(cong, sizeof(cong), "%-8s %4.2f", s->congestion, s->usage);
	}
	fprintf(out,
		"   %4.0fs %5.1f %6.1f %7" PRId64 " %6" PRId64 " %9" PRId64 " %6" PRId64
		" %11s %-13s %5" PRId64 " %5" PRId64 "%s\n",
		(double)(now_ms - p->t0_ms) / 1000.0, enq_rate, conf_rate, s->pending, s->submitted,
		s->confirmed, s->failed, fee, cong, s->bumps, s->deferrals,
		s->held ? "  HELD!" : "");
	fflush(out);
	p->last_ms = now_ms;
	p->last_enq = enqueued;
	p->last_conf = s->confirmed;
	record(p, s);
}
