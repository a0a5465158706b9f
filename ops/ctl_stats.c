/*
 * ctl_stats.c - `outboxctl stats [--json] [--instance NAME]`: the process
 * table, every non-zero counter and gauge per process, and the fee snapshot
 * with its age, read from the segment of a running outboxd.
 *
 * Read-only by construction: the segment is attached O_RDONLY + PROT_READ
 * (shm_segment_attach with SHM_ATTACH_RDONLY), counters are single atomic
 * loads and the snapshot is copied with the bounded seqcount protocol, so
 * nothing here can block, disturb or corrupt the daemon. If the daemon
 * restarted while we read (instance_id changed), the read is done once more.
 *
 * Also home of ctl_shm_open(), the option parsing and attach shared with
 * `outboxctl fee`, and of ctl_stats_collect(), which `outboxctl top` samples
 * (ctl.h).
 *
 * Exit codes: 0 ok; 1 degraded (supervisor heartbeat older than 3 s, a
 * child not running, or a stale/missing fee snapshot); 2 usage error or no
 * instance to attach.
 */
#include "ops/ctl.h"

#include "common/clock.h"
#include "common/fee_view.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUPERVISOR_STALE_MS 3000

int ctl_shm_open(const char *cmd, int argc, char **argv, struct ctl_shm_opts *o)
{
	const char *inst = getenv("OUTBOX_INSTANCE");
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int rc;

	memset(o, 0, sizeof(*o));
	snprintf(o->instance, sizeof(o->instance), "%s", inst && *inst ? inst : "default");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			o->json = true;
		} else if (!strcmp(argv[i], "--instance") && i + 1 < argc) {
			if (strlen(argv[++i]) >= sizeof(o->instance)) {
				fprintf(stderr, "outboxctl %s: instance name too long\n", cmd);
				return 2;
			}
			snprintf(o->instance, sizeof(o->instance), "%s", argv[i]);
		} else {
			fprintf(stderr, "usage: outboxctl %s [--json] [--instance NAME]\n", cmd);
			return 2;
		}
	}
	rc = shm_segment_attach(&o->seg, o->instance, SHM_ATTACH_RDONLY, &err);
	if (rc == -ENOENT) {
		fprintf(stderr, "outboxctl %s: no instance '%s' is running\n", cmd, o->instance);
		return 2;
	}
	if (rc) {
		fprintf(stderr, "outboxctl %s: cannot attach instance '%s': %s\n", cmd, o->instance,
			err.msg);
		return 2;
	}
	return 0;
}

bool ctl_shm_restarted(const struct ctl_shm_opts *o)
{
	return o->seg.hdr->instance_id != o->seg.instance_id;
}

static uint64_t age_ms(uint64_t now_ns, uint64_t then_ns)
{
	return now_ns > then_ns ? (now_ns - then_ns) / 1000000 : 0;
}

json_t *ctl_fee_json(const struct shm_segment *seg, bool *stale)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct fee_snapshot s;
	struct fee_view v;
	json_t *o;
	int rc = fee_snapshot_copy(seg, &s, FEE_COPY_MAX_TRIES, &err);

	if (rc) {
		*stale = true;
		return json_pack("{s:b, s:b, s:s}", "published", 0, "stale", 1, "error",
				 rc == -ENODATA ? "no snapshot published yet" : err.msg);
	}
	fee_view_eval(&v, &s, wall_ms(), 0);
	*stale = v.stale;
	o = json_object();
	json_object_set_new(o, "published", json_true());
	json_object_set_new(o, "recommendedBaseFee",
			    json_integer((json_int_t)s.recommended_base_fee));
	json_object_set_new(o, "aggressiveBaseFee",
			    json_integer((json_int_t)s.aggressive_base_fee));
	json_object_set_new(o, "congestionLevel", json_string(fee_congestion_name(s.congestion)));
	json_object_set_new(o, "ledgerCapacityUsage",
			    json_real((double)s.capacity_ppm / FEE_CAPACITY_SCALE));
	json_object_set_new(o, "latestLedger", json_integer(s.latest_ledger));
	json_object_set_new(o, "latestLedgerCloseTime",
			    json_integer((json_int_t)s.latest_ledger_close_time));
	json_object_set_new(o, "sampledAt", json_integer((json_int_t)s.sampled_at_ms));
	json_object_set_new(o, "ttlMs", json_integer(s.ttl_ms));
	json_object_set_new(o, "ageMs", json_integer((json_int_t)v.age_ms));
	json_object_set_new(o, "stale", json_boolean(v.stale));
	json_object_set_new(o, "generation", json_integer((json_int_t)s.generation));
	return o;
}

static json_t *metrics_json(const struct shm_stats_block *b)
{
	json_t *c = json_object(), *g = json_object(), *o = json_object();

	for (unsigned i = 0; i < SHM_N_COUNTERS; i++) {
		uint64_t v = stats_counter_read(b, (enum shm_counter_id)i);

		if (v)
			json_object_set_new(c, stats_counter_name(i), json_integer((json_int_t)v));
	}
	for (unsigned i = 0; i < SHM_N_GAUGES; i++) {
		int64_t v = stats_gauge_read(b, (enum shm_gauge_id)i);

		if (v)
			json_object_set_new(g, stats_gauge_name(i), json_integer((json_int_t)v));
	}
	json_object_set_new(o, "counters", c);
	json_object_set_new(o, "gauges", g);
	return o;
}

json_t *ctl_stats_collect(const struct ctl_shm_opts *o, bool *degraded)
{
	const struct shm_segment *seg = &o->seg;
	uint64_t now = mono_ns();
	uint64_t sup_hb = atomic_load_explicit(&seg->hdr->heartbeat_ns, memory_order_relaxed);
	json_t *doc = json_object(), *procs = json_array(), *totals = json_object();
	bool stale;

	*degraded = age_ms(now, sup_hb) > SUPERVISOR_STALE_MS;
	json_object_set_new(doc, "instance", json_string(o->instance));
	json_object_set_new(doc, "segment", json_string(seg->name));
	json_object_set_new(doc, "instance_id",
			    json_integer((json_int_t)(seg->instance_id & INT64_MAX)));
	json_object_set_new(doc, "supervisor_heartbeat_age_ms",
			    json_integer((json_int_t)age_ms(now, sup_hb)));
	json_object_set_new(doc, "supervisor_alive", json_boolean(!*degraded));
	for (uint32_t p = 0; p < seg->n_procs; p++) {
		struct proc_slot_view v;
		json_t *row, *m;

		proc_slot_read(shm_proc_slot(seg, p), &v);
		if (v.role == SHM_ROLE_GATEWAY && v.state == SHM_PROC_FREE)
			continue; /* the gateway's slot with OUTBOX_HTTP_ADDR=off (layout.h) */
		if (p != SHM_PROC_SUPERVISOR && v.state != SHM_PROC_RUNNING)
			*degraded = true;
		row = json_pack(
			"{s:s, s:i, s:i, s:s, s:I, s:I, s:I, s:i, s:i, s:I}", "role",
			shm_role_name(v.role), "index", (int)v.index, "pid", (int)v.pid, "state",
			shm_proc_state_name(v.state), "heartbeat_age_ms",
			(json_int_t)(v.heartbeat_ns ? (int64_t)age_ms(now, v.heartbeat_ns) : -1),
			"restarts", (json_int_t)v.restarts, "exits", (json_int_t)v.exits,
			"last_exit_status", (int)v.last_exit_status, "last_exit_signal",
			(int)v.last_exit_signal, "started_at_ms", (json_int_t)v.started_at_ms);
		m = metrics_json(shm_stats_block(seg, p));
		json_object_update(row, m);
		json_decref(m);
		json_array_append_new(procs, row);
	}
	for (unsigned i = 0; i < SHM_N_COUNTERS; i++)
		json_object_set_new(
			totals, stats_counter_name(i),
			json_integer((json_int_t)stats_counter_sum(seg, (enum shm_counter_id)i)));
	json_object_set_new(doc, "processes", procs);
	json_object_set_new(doc, "totals", totals);
	json_object_set_new(doc, "fee", ctl_fee_json(seg, &stale));
	*degraded |= stale;
	return doc;
}

static void print_text(json_t *doc)
{
	json_t *procs = json_object_get(doc, "processes"), *row, *fee;
	size_t i;

	printf("instance %s (segment %s), supervisor heartbeat %lld ms ago%s\n\n",
	       json_string_value(json_object_get(doc, "instance")),
	       json_string_value(json_object_get(doc, "segment")),
	       json_integer_value(json_object_get(doc, "supervisor_heartbeat_age_ms")),
	       json_is_true(json_object_get(doc, "supervisor_alive"))
		       ? ""
		       : " (SUPERVISOR NOT RUNNING OR STUCK: this segment may be stale)");
	printf("%-10s %5s %8s %-9s %10s %8s %6s\n", "ROLE", "INDEX", "PID", "STATE", "HEARTBEAT",
	       "RESTARTS", "EXITS");
	json_array_foreach(procs, i, row)
	{
		printf("%-10s %5lld %8lld %-9s %8lldms %8lld %6lld\n",
		       json_string_value(json_object_get(row, "role")),
		       json_integer_value(json_object_get(row, "index")),
		       json_integer_value(json_object_get(row, "pid")),
		       json_string_value(json_object_get(row, "state")),
		       json_integer_value(json_object_get(row, "heartbeat_age_ms")),
		       json_integer_value(json_object_get(row, "restarts")),
		       json_integer_value(json_object_get(row, "exits")));
	}
	printf("\n");
	json_array_foreach(procs, i, row)
	{
		const char *k;
		json_t *v;

		printf("%s %lld:", json_string_value(json_object_get(row, "role")),
		       json_integer_value(json_object_get(row, "index")));
		json_object_foreach(json_object_get(row, "counters"), k, v)
			printf(" %s=%lld", k, json_integer_value(v));
		json_object_foreach(json_object_get(row, "gauges"), k, v)
			printf(" %s=%lld", k, json_integer_value(v));
		printf("\n");
	}
	fee = json_object_get(doc, "fee");
	printf("\n");
	ctl_fee_print_text(fee);
}

int ctl_stats(int argc, char **argv)
{
	struct ctl_shm_opts o;
	bool degraded = false;
	json_t *doc = NULL;
	int rc = ctl_shm_open("stats", argc, argv, &o);

	if (rc)
		return rc;
	for (int attempt = 0; attempt < 2; attempt++) {
		doc = ctl_stats_collect(&o, &degraded);
		if (!ctl_shm_restarted(&o))
			break;
		json_decref(doc);
		doc = NULL;
		shm_segment_detach(&o.seg);
		if ((rc = ctl_shm_open("stats", argc, argv, &o)))
			return rc;
	}
	if (!doc) {
		fprintf(stderr, "outboxctl stats: instance '%s' keeps restarting\n", o.instance);
		shm_segment_detach(&o.seg);
		return 1;
	}
	if (o.json) {
		char *s = json_dumps(doc, JSON_COMPACT);

		printf("%s\n", s);
		free(s);
	} else {
		print_text(doc);
	}
	json_decref(doc);
	shm_segment_detach(&o.seg);
	return degraded ? 1 : 0;
}
