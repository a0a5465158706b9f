/*
 * check_shm_layout.c - golden test of the shared-memory layout.
 *
 * Prints sizeof/offsetof of every struct that lives in the segment
 * (common/shm/layout.h) plus the layout version and the section size for a
 * reference config, and compares the dump with common/shm/layout.golden. A
 * diff means the bytes that outboxctl (possibly an older build) reads have
 * moved: bump SHM_LAYOUT_MAJOR (reinterpreted bytes) or SHM_LAYOUT_MINOR
 * (appended fields/sections), review ops/, then regenerate the golden file:
 *
 *	build/tests/check_shm_layout --dump > common/shm/layout.golden
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/shm/layout.h"
#include "common/shm/segment.h"

#define GOLDEN_REL "/../../common/shm/layout.golden"

static char dump_buf[16384];
static size_t dump_len;

__attribute__((format(printf, 1, 2))) static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dump_len += (size_t)vsnprintf(dump_buf + dump_len, sizeof(dump_buf) - dump_len, fmt, ap);
	va_end(ap);
}

#define S(t)    out("sizeof %s %zu\n", #t, sizeof(struct t))
#define F(t, f) out("  %s.%s %zu %zu\n", #t, #f, offsetof(struct t, f), sizeof(((struct t *)0)->f))

static void dump_header(void)
{
	out("version %d.%d magic 0x%016llx header %d align %d\n", SHM_LAYOUT_MAJOR,
	    SHM_LAYOUT_MINOR, (unsigned long long)SHM_MAGIC, SHM_HEADER_SIZE, SHM_ALIGN);
	S(shm_section);
	F(shm_section, id), F(shm_section, version), F(shm_section, offset);
	F(shm_section, stride), F(shm_section, count), F(shm_section, flags);
	S(shm_header);
	F(shm_header, magic), F(shm_header, major), F(shm_header, minor);
	F(shm_header, endian), F(shm_header, word_size), F(shm_header, cacheline);
	F(shm_header, header_size), F(shm_header, n_sections), F(shm_header, total_size);
	F(shm_header, instance_id), F(shm_header, supervisor_pid), F(shm_header, state);
	F(shm_header, heartbeat_ns), F(shm_header, created_at_ms), F(shm_header, n_workers);
	F(shm_header, n_procs), F(shm_header, ring_capacity), F(shm_header, fee_slots);
	F(shm_header, instance), F(shm_header, reserved), F(shm_header, toc);
}

static void dump_sections(void)
{
	S(shm_proc_slot);
	F(shm_proc_slot, role), F(shm_proc_slot, index), F(shm_proc_slot, pid);
	F(shm_proc_slot, state), F(shm_proc_slot, heartbeat_ns), F(shm_proc_slot, restarts);
	F(shm_proc_slot, started_at_ms), F(shm_proc_slot, last_exit_status);
	F(shm_proc_slot, last_exit_signal), F(shm_proc_slot, exits);
	S(shm_histogram);
	F(shm_histogram, bucket), F(shm_histogram, count), F(shm_histogram, sum);
	S(shm_stats_block);
	F(shm_stats_block, generation), F(shm_stats_block, counter);
	F(shm_stats_block, gauge), F(shm_stats_block, hist);
	F(shm_stats_block, family), F(shm_stats_block, family_hist);
	S(shm_qsbr_token);
	F(shm_qsbr_token, token);
	S(shm_qsbr_reader);
	F(shm_qsbr_reader, cnt);
	S(fee_snapshot);
	F(fee_snapshot, recommended_base_fee), F(fee_snapshot, aggressive_base_fee);
	F(fee_snapshot, congestion), F(fee_snapshot, capacity_ppm);
	F(fee_snapshot, sampled_at_ms), F(fee_snapshot, ttl_ms), F(fee_snapshot, latest_ledger);
	F(fee_snapshot, latest_ledger_close_time), F(fee_snapshot, generation);
	F(fee_snapshot, checksum);
	S(shm_fee_ctl);
	F(shm_fee_ctl, current), F(shm_fee_ctl, retire_token), F(shm_fee_ctl, publishes);
	F(shm_fee_ctl, waits);
	S(shm_fee_slot);
	F(shm_fee_slot, seq), F(shm_fee_slot, snap);
	S(shm_hint);
	F(shm_hint, type), F(shm_hint, ledger), F(shm_hint, op_id), F(shm_hint, tx_hash);
	F(shm_hint, aux), F(shm_hint, reserved);
	S(shm_ring);
	F(shm_ring, head), F(shm_ring, drops), F(shm_ring, tail), F(shm_ring, capacity);
	F(shm_ring, rec_size), F(shm_ring, producer), F(shm_ring, worker);
	S(shm_doorbell);
	F(shm_doorbell, sleeping), F(shm_doorbell, rings);
	S(shm_inflight);
	F(shm_inflight, count);
}

static void dump_enums(void)
{
	struct shm_config cfg = SHM_CONFIG_DEFAULT;
	size_t total = 0;

	out("section ids %d %d %d %d %d %d %d %d %d\n", SHM_SEC_PROCS, SHM_SEC_STATS,
	    SHM_SEC_QSBR_TOKEN, SHM_SEC_QSBR_READERS, SHM_SEC_FEE_CTL, SHM_SEC_FEE_SLOTS,
	    SHM_SEC_RINGS, SHM_SEC_DOORBELLS, SHM_SEC_INFLIGHT);
	out("roles %d %d %d %d procs %d %d %d %d\n", SHM_ROLE_SUPERVISOR, SHM_ROLE_ORACLE,
	    SHM_ROLE_GATEWAY, SHM_ROLE_WORKER, SHM_PROC_SUPERVISOR, SHM_PROC_ORACLE,
	    SHM_PROC_GATEWAY, SHM_PROC_WORKER0);
	out("metric caps %d %d %d buckets %d families %d %d\n", SHM_COUNTER_CAP, SHM_GAUGE_CAP,
	    SHM_HIST_CAP, SHM_HIST_BUCKETS, SHM_FAMILY_CAP, SHM_FAMILY_HIST_CAP);
	shm_segment_size(&cfg, &total, NULL);
	out("default config %u workers %u ring %u slots -> %zu bytes\n", cfg.n_workers,
	    cfg.ring_capacity, cfg.fee_slots, total);
}

static const char *dump(void)
{
	dump_len = 0;
	dump_header();
	dump_sections();
	dump_enums();
	return dump_buf;
}

static char *read_golden(void)
{
	char path[4096], *buf;
	const char *dir_end = strrchr(__FILE__, '/');
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%.*s%s", (int)(dir_end - __FILE__), __FILE__, GOLDEN_REL);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Line-by-line compare; names the first differing line. */
START_TEST(test_layout_matches_golden)
{
	char *golden = read_golden();
	const char *now = dump(), *a, *b;
	int line = 1;

	ck_assert_msg(golden, "cannot read common/shm/layout.golden next to %s", __FILE__);
	ck_assert_msg(dump_len < sizeof(dump_buf) - 1, "dump buffer too small");
	for (a = golden, b = now; *a && *b; line++) {
		size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");

		ck_assert_msg(la == lb && !memcmp(a, b, la),
			      "layout changed at line %d: golden '%.*s' now '%.*s' (bump "
			      "SHM_LAYOUT_MAJOR/MINOR, then regenerate with --dump)",
			      line, (int)la, a, (int)lb, b);
		a += la + (a[la] == '\n');
		b += lb + (b[lb] == '\n');
	}
	ck_assert_msg(!*a && !*b, "layout changed: golden and dump differ in length at line %d",
		      line);
	free(golden);
}
END_TEST

/* The dump must actually see what it claims: a reordered field changes it. */
START_TEST(test_dump_sensitive)
{
	const char *d = dump();
	char want[64];

	snprintf(want, sizeof(want), "  shm_ring.tail %zu 8\n", offsetof(struct shm_ring, tail));
	ck_assert_ptr_nonnull(strstr(d, want));
	ck_assert_uint_eq(offsetof(struct shm_ring, tail), SHM_ALIGN);
	ck_assert_uint_eq(offsetof(struct shm_header, toc), 512);
	ck_assert_uint_eq(sizeof(struct shm_header), SHM_HEADER_SIZE);
}
END_TEST

static Suite *shm_layout_suite(void)
{
	Suite *s = suite_create("shm_layout");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_layout_matches_golden);
	tcase_add_test(tc, test_dump_sensitive);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && !strcmp(argv[1], "--dump")) {
		fputs(dump(), stdout);
		return 0;
	}
	sr = srunner_create(shm_layout_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
