/*
 * check_stats.c - per-process stats blocks and the metric table
 * (common/shm/stats.h, metrics.h).
 */
#include <check.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/shm/stats.h"
#include "tests/unit/shm_test.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;

static void setup(void)
{
	struct shm_config cfg = {3, 16, 3};
	struct outbox_error err = OUTBOX_ERROR_INIT;

	shm_test_instance(inst, sizeof(inst));
	ck_assert_msg(shm_segment_create(&seg, inst, &cfg, &err) == 0, "%s", err.msg);
	shm_segment_set_ready(&seg);
}

static void teardown(void)
{
	shm_segment_detach(&seg);
	shm_segment_unlink(inst);
}

static int prom_name_ok(const char *n)
{
	if (!n || !*n || !(islower((unsigned char)*n) || *n == '_'))
		return 0;
	for (; *n; n++)
		if (!(islower((unsigned char)*n) || isdigit((unsigned char)*n) || *n == '_'))
			return 0;
	return 1;
}

START_TEST(test_metric_table)
{
	const char *all[SHM_N_COUNTERS + SHM_N_GAUGES + SHM_N_HISTS];
	size_t n = 0;

	for (unsigned i = 0; i < SHM_N_COUNTERS; i++) {
		const char *name = stats_counter_name(i);

		ck_assert_msg(prom_name_ok(name), "counter %u name '%s'", i, name);
		ck_assert_msg(strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"),
			      "counter '%s' must end in _total", name);
		ck_assert_uint_gt(strlen(stats_counter_help(i)), 0);
		all[n++] = name;
	}
	for (unsigned i = 0; i < SHM_N_GAUGES; i++) {
		ck_assert(prom_name_ok(stats_gauge_name(i)));
		ck_assert_uint_gt(strlen(stats_gauge_help(i)), 0);
		all[n++] = stats_gauge_name(i);
	}
	for (unsigned i = 0; i < SHM_N_HISTS; i++) {
		ck_assert(prom_name_ok(stats_hist_name(i)));
		ck_assert_uint_gt(strlen(stats_hist_help(i)), 0);
		all[n++] = stats_hist_name(i);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ck_assert_msg(strcmp(all[i], all[j]), "duplicate metric '%s'", all[i]);
	ck_assert_ptr_null(stats_counter_name(SHM_N_COUNTERS));
	ck_assert_ptr_null(stats_gauge_help(SHM_N_GAUGES));
	ck_assert_ptr_null(stats_hist_name(SHM_N_HISTS));
	ck_assert_str_eq(stats_counter_name(MET_HINTS_DROPPED), "outbox_hints_dropped_total");
}
END_TEST

START_TEST(test_blocks_aligned_and_separate)
{
	for (uint32_t p = 0; p < seg.n_procs; p++) {
		struct shm_stats_block *b = shm_stats_block(&seg, p);

		ck_assert_uint_eq((uintptr_t)b % SHM_ALIGN, 0);
		stats_counter_add(b, MET_LOOP_ITERATIONS, p + 1);
	}
	ck_assert_ptr_null(shm_stats_block(&seg, seg.n_procs));
	for (uint32_t p = 0; p < seg.n_procs; p++)
		ck_assert_uint_eq(stats_counter_read(shm_stats_block(&seg, p), MET_LOOP_ITERATIONS),
				  p + 1);
	ck_assert_uint_eq(stats_counter_sum(&seg, MET_LOOP_ITERATIONS),
			  seg.n_procs * (seg.n_procs + 1) / 2);
}
END_TEST

START_TEST(test_counters_gauges)
{
	struct shm_stats_block *b = shm_stats_block(&seg, SHM_PROC_WORKER0);
	struct shm_stats_block *next = shm_stats_block(&seg, SHM_PROC_WORKER0 + 1);

	stats_counter_add(b, MET_HINTS_RECEIVED, 3);
	stats_counter_add(b, MET_HINTS_RECEIVED, 4);
	ck_assert_uint_eq(stats_counter_read(b, MET_HINTS_RECEIVED), 7);
	stats_counter_add(b, (enum shm_counter_id)SHM_COUNTER_CAP, 5); /* ignored */
	stats_counter_add(b, (enum shm_counter_id) - 1, 5);
	ck_assert_uint_eq(stats_counter_read(b, (enum shm_counter_id)SHM_COUNTER_CAP), 0);
	stats_gauge_set(b, MET_INFLIGHT, 10);
	stats_gauge_add(b, MET_INFLIGHT, -12);
	ck_assert_int_eq(stats_gauge_read(b, MET_INFLIGHT), -2);
	stats_gauge_set(b, (enum shm_gauge_id)SHM_GAUGE_CAP, 1);
	/* nothing leaked into the next block */
	for (unsigned i = 0; i < SHM_COUNTER_CAP; i++)
		ck_assert_uint_eq(atomic_load(&next->counter[i]), 0);
	stats_block_restart(b);
	stats_block_restart(b);
	ck_assert_uint_eq(atomic_load(&b->generation), 2);
	ck_assert_uint_eq(stats_counter_read(b, MET_HINTS_RECEIVED),
			  7); /* restarts keep counters */
}
END_TEST

/* Labeled families: one cell per label combination, l1 slowest; values named as the API names them. */
START_TEST(test_families)
{
	struct shm_stats_block *b = shm_stats_block(&seg, SHM_PROC_WORKER0);
	enum shm_dim d[3] = {stats_family_dim(FAM_OPS, 0), stats_family_dim(FAM_OPS, 1),
			     stats_family_dim(FAM_OPS, 2)};
	struct stats_hist_view v;
	unsigned hits = 0;

	ck_assert_uint_eq(stats_family_cells(FAM_OPS), 4 * 3 * 3);
	ck_assert_uint_eq(stats_family_cells(FAM_FEE_BUMPS), 4);
	ck_assert_uint_eq(stats_family_cells(FAM_MAX_FEE_HIT), 3);
	ck_assert_str_eq(stats_family_name(FAM_OPS), "outbox_ops_total");
	ck_assert_str_eq(stats_dim_label(d[0]), "kind");
	ck_assert_str_eq(stats_dim_label(d[2]), "outcome");
	ck_assert_str_eq(stats_dim_value(SHM_DIM_KIND, 3), "REFERRAL_REWARD");
	ck_assert_str_eq(stats_dim_value(SHM_DIM_OUTCOME, SHM_OUTCOME_RETRY), "retry");
	ck_assert_ptr_null(stats_dim_value(SHM_DIM_PRIORITY, 3));
	/* WITHDRAW (1), LOW (2), failed (2): cell (1*3 + 2)*3 + 2 = 17 */
	stats_family_add(b, FAM_OPS, 1, 2, SHM_OUTCOME_FAILED, 2);
	stats_family_add(b, FAM_OPS, 4, 0, 0, 1); /* out of range: ignored */
	stats_family_add(b, FAM_FEE_BUMPS, 3, 0, 0, 1);
	for (unsigned c = 0; c < stats_family_cells(FAM_OPS); c++)
		if (stats_family_read(b, FAM_OPS, c)) {
			hits++;
			ck_assert_uint_eq(c, 17);
			ck_assert_uint_eq(stats_cell_value(d, c, 0), 1);
			ck_assert_uint_eq(stats_cell_value(d, c, 1), 2);
			ck_assert_uint_eq(stats_cell_value(d, c, 2), SHM_OUTCOME_FAILED);
			ck_assert_uint_eq(stats_family_read(b, FAM_OPS, c), 2);
		}
	ck_assert_uint_eq(hits, 1);
	ck_assert_uint_eq(stats_family_read(b, FAM_FEE_BUMPS, 3), 1);
	ck_assert_uint_eq(stats_family_read(b, FAM_MAX_FEE_HIT, 0),
			  0); /* families do not overlap */
	/* the latency family: ms, exported in seconds */
	ck_assert_uint_eq(stats_hfamily_divisor(HFAM_OP_LATENCY), 1000);
	ck_assert_uint_eq(stats_hfamily_bound(HFAM_OP_LATENCY, 0), 50);
	stats_hfamily_observe(b, HFAM_OP_LATENCY, 0, 1, 0, 120); /* DEPOSIT, NORMAL */
	stats_hfamily_read(b, HFAM_OP_LATENCY, 1, &v);
	ck_assert_uint_eq(v.count, 1);
	ck_assert_uint_eq(v.sum, 120);
	ck_assert_uint_eq(v.bucket[2], 1); /* 100 < 120 <= 200 */
	stats_hfamily_read(b, HFAM_OP_LATENCY, 0, &v);
	ck_assert_uint_eq(v.count, 0);
}
END_TEST

START_TEST(test_histogram)
{
	struct shm_stats_block *b = shm_stats_block(&seg, SHM_PROC_ORACLE);
	unsigned id = MET_FEE_POLL_MS; /* base 4 ms */
	struct stats_hist_view v;

	ck_assert_uint_eq(stats_hist_bound(id, 0), 4);
	ck_assert_uint_eq(stats_hist_bound(id, 3), 32);
	ck_assert_uint_eq(stats_hist_bound(id, SHM_HIST_BUCKETS - 2),
			  4ull << (SHM_HIST_BUCKETS - 2));
	ck_assert_uint_eq(stats_hist_bound(id, SHM_HIST_BUCKETS - 1), UINT64_MAX);
	ck_assert_uint_eq(stats_hist_bucket(id, 0), 0);
	ck_assert_uint_eq(stats_hist_bucket(id, 4), 0);
	ck_assert_uint_eq(stats_hist_bucket(id, 5), 1);
	ck_assert_uint_eq(stats_hist_bucket(id, 32), 3);
	ck_assert_uint_eq(stats_hist_bucket(id, UINT64_MAX / 2), SHM_HIST_BUCKETS - 1);
	stats_hist_observe(b, MET_FEE_POLL_MS, 3);
	stats_hist_observe(b, MET_FEE_POLL_MS, 30);
	stats_hist_observe(b, MET_FEE_POLL_MS, 1000000);
	stats_hist_read(b, MET_FEE_POLL_MS, &v);
	ck_assert_uint_eq(v.count, 3);
	ck_assert_uint_eq(v.sum, 1000033);
	ck_assert_uint_eq(v.bucket[0], 1);
	ck_assert_uint_eq(v.bucket[3], 1);
	ck_assert_uint_eq(v.bucket[SHM_HIST_BUCKETS - 1], 1);
	stats_hist_read(b, MET_LOOP_LATENCY_US, &v);
	ck_assert_uint_eq(v.count, 0);
}
END_TEST

/* Each process writes its own block; a concurrent reader sees monotonic values. */
START_TEST(test_cross_process_monotonic)
{
	const uint64_t n = 2000000;
	pid_t pids[2];
	uint64_t last = 0, v;

	for (uint32_t k = 0; k < 2; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			struct shm_stats_block *b = shm_stats_block(&seg, SHM_PROC_WORKER0 + k);

			for (uint64_t i = 0; i < n; i++)
				stats_counter_add(b, MET_SNAPSHOT_READS, 1);
			_exit(0);
		}
	}
	do {
		v = stats_counter_read(shm_stats_block(&seg, SHM_PROC_WORKER0), MET_SNAPSHOT_READS);
		ck_assert_uint_ge(v, last);
		last = v;
	} while (v < n);
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pids[k])), 0);
	ck_assert_uint_eq(stats_counter_sum(&seg, MET_SNAPSHOT_READS), 2 * n);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_metric_table);
	tcase_add_test(tc, test_blocks_aligned_and_separate);
	tcase_add_test(tc, test_counters_gauges);
	tcase_add_test(tc, test_histogram);
	tcase_add_test(tc, test_families);
	tcase_add_test(tc, test_cross_process_monotonic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(stats_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
