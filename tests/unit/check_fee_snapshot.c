/*
 * check_fee_snapshot.c - RCU publication of the fee snapshot
 * (common/shm/fee_snapshot.h, seqcount.h): in-place reads by registered
 * readers, slot reuse only after QSBR, the writer never blocked by offline
 * or marked-offline readers and bounded behind a live slow one, the
 * read-only seqcount copy with bounded retries (including an odd count left
 * by a writer killed mid-write), and the respawned oracle's repair.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/shm/fee_snapshot.h"
#include "common/shm/seqcount.h"
#include "tests/unit/shm_test.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;

static void setup(void)
{
	struct shm_config cfg = {2, 16, 3};
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

static struct fee_snapshot snap_make(uint64_t i)
{
	return (struct fee_snapshot){.recommended_base_fee = 100 + i,
				     .aggressive_base_fee = 200 + 2 * i,
				     .congestion = (uint32_t)(i % 4),
				     .capacity_ppm = (uint32_t)(i * 7919 % FEE_CAPACITY_SCALE),
				     .sampled_at_ms = 1700000000000ull + i,
				     .ttl_ms = 5000,
				     .latest_ledger = (uint32_t)(1000 + i),
				     .latest_ledger_close_time = 1700000000 + i};
}

/* A read snapshot is intact: checksum, and every field derived from one i. */
static int snap_intact(const struct fee_snapshot *s)
{
	uint64_t i = s->recommended_base_fee - 100;
	struct fee_snapshot want = snap_make(i);

	want.generation = s->generation;
	want.checksum = fee_snapshot_checksum(&want);
	return s->checksum == fee_snapshot_checksum(s) && !memcmp(s, &want, sizeof(want));
}

static uint32_t current_slot(void)
{
	return (uint32_t)(atomic_load(&seg.fee_ctl->current) & 0xff);
}

START_TEST(test_nothing_published)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct fee_reader r;
	struct fee_snapshot out;

	ck_assert_int_eq(fee_reader_init(&r, &seg, SHM_PROC_WORKER0), 0);
	ck_assert_ptr_null(fee_snapshot_get(&r));
	ck_assert_int_eq(fee_snapshot_copy(&seg, &out, 10, &err), -ENODATA);
	ck_assert_ptr_nonnull(strstr(err.msg, "no fee snapshot"));
	ck_assert_int_eq(fee_reader_init(&r, &seg, seg.n_procs), -EINVAL);
}
END_TEST

START_TEST(test_publish_and_read)
{
	struct fee_publisher p;
	struct fee_reader r;
	struct fee_snapshot in = snap_make(5), out;
	const struct fee_snapshot *s;
	uint64_t gen = 0;

	ck_assert_int_eq(fee_publisher_init(&p, &seg), 0);
	ck_assert_int_eq(fee_reader_init(&r, &seg, SHM_PROC_WORKER0 + 1), 0);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, &gen), 0);
	ck_assert_uint_eq(gen, 1);
	qsbr_quiescent(&r.q, r.me);
	s = fee_snapshot_get(&r);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->recommended_base_fee, 105);
	ck_assert_uint_eq(s->latest_ledger, 1005);
	ck_assert_uint_eq(s->generation, 1);
	ck_assert(snap_intact(s));
	ck_assert_int_eq(fee_snapshot_copy(&seg, &out, FEE_COPY_MAX_TRIES, NULL), 0);
	ck_assert(!memcmp(&out, s, sizeof(out)));
	in = snap_make(6);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, &gen), 0);
	ck_assert_uint_eq(gen, 2);
	qsbr_quiescent(&r.q, r.me);
	ck_assert_uint_eq(fee_snapshot_get(&r)->recommended_base_fee, 106);
	ck_assert_uint_eq(atomic_load(&seg.fee_ctl->publishes), 2);
	ck_assert_uint_eq(fee_snapshot_age_ms(s, s->sampled_at_ms + 250), 250);
	ck_assert_uint_eq(fee_snapshot_age_ms(s, 0), 0);
}
END_TEST

START_TEST(test_checksum_detects_any_bit)
{
	struct fee_snapshot s = snap_make(42);

	s.generation = 3;
	s.checksum = fee_snapshot_checksum(&s);
	for (size_t bit = 0; bit < 8 * (sizeof(s) - 8); bit++) {
		struct fee_snapshot t = s;

		((unsigned char *)&t)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		ck_assert_msg(fee_snapshot_checksum(&t) != t.checksum, "bit %zu undetected", bit);
	}
}
END_TEST

/* A reader that keeps quiescing never makes the writer wait. */
START_TEST(test_rotation_with_quiescing_reader)
{
	struct fee_publisher p;
	struct fee_reader r;
	unsigned used[SHM_FEE_MAX_SLOTS] = {0};

	fee_publisher_init(&p, &seg);
	fee_reader_init(&r, &seg, SHM_PROC_GATEWAY);
	for (uint64_t i = 0; i < 300; i++) {
		struct fee_snapshot in = snap_make(i);

		ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
		used[current_slot()]++;
		qsbr_quiescent(&r.q, r.me);
		ck_assert_uint_eq(fee_snapshot_get(&r)->recommended_base_fee, 100 + i);
	}
	ck_assert_uint_eq(p.waits, 0);
	for (uint32_t s = 0; s < seg.fee_slots; s++)
		ck_assert_uint_gt(used[s], 0);
}
END_TEST

/*
 * An online reader that does not pass a quiescent point pins the slot it
 * read: the writer may not reuse it (times out instead), and the pinned
 * snapshot stays intact; once the reader quiesces the writer proceeds.
 */
START_TEST(test_reader_pins_slot)
{
	struct fee_publisher p;
	struct fee_reader r;
	const struct fee_snapshot *pinned;
	struct fee_snapshot in;
	uint64_t t0;

	fee_publisher_init(&p, &seg);
	fee_reader_init(&r, &seg, SHM_PROC_WORKER0);
	in = snap_make(1);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	qsbr_quiescent(&r.q, r.me);
	pinned = fee_snapshot_get(&r);
	in = snap_make(2);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	in = snap_make(3);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0); /* third, never-used slot */
	in = snap_make(4);
	t0 = mono_ns();
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 50, NULL), -ETIMEDOUT);
	ck_assert_uint_ge(mono_ns() - t0, 50000000ull);
	ck_assert_uint_eq(pinned->recommended_base_fee, 101);
	ck_assert(snap_intact(pinned));
	ck_assert_uint_eq(p.waits, 1);
	qsbr_quiescent(&r.q, r.me);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	ck_assert_uint_eq(fee_snapshot_get(&r)->recommended_base_fee, 104);
}
END_TEST

START_TEST(test_offline_reader_never_blocks)
{
	struct fee_publisher p;
	struct fee_reader r;

	fee_publisher_init(&p, &seg);
	fee_reader_init(&r, &seg, SHM_PROC_WORKER0);
	qsbr_offline(&r.q, r.me);
	for (uint64_t i = 0; i < 100; i++) {
		struct fee_snapshot in = snap_make(i);

		ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	}
	ck_assert_uint_eq(p.waits, 0);
}
END_TEST

/* A reader killed while online blocks the writer until marked offline. */
START_TEST(test_killed_reader_marked_offline)
{
	struct fee_publisher p;
	struct fee_snapshot in = snap_make(0);
	int ready[2], rc = 0;
	pid_t pid;
	char c;

	fee_publisher_init(&p, &seg);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		struct fee_reader r;

		fee_reader_init(&r, &seg, SHM_PROC_WORKER0 + 1);
		(void)fee_snapshot_get(&r);
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	for (uint64_t i = 1; i < 10 && rc == 0; i++) {
		in = snap_make(i);
		rc = fee_snapshot_publish(&p, &in, 20, NULL);
	}
	ck_assert_int_eq(rc, -ETIMEDOUT);
	kill(pid, SIGKILL);
	shm_test_reap(pid);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 20, NULL), -ETIMEDOUT);
	qsbr_mark_offline(&p.q, SHM_PROC_WORKER0 + 1);
	for (uint64_t i = 0; i < 50; i++) {
		in = snap_make(i);
		ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	}
}
END_TEST

/* A live but slow reader: the writer waits (with backoff) and then proceeds. */
START_TEST(test_slow_reader_wait)
{
	struct fee_publisher p;
	struct fee_snapshot in = snap_make(0);
	int ready[2], rc = 0;
	pid_t pid;
	char c;

	fee_publisher_init(&p, &seg);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		struct fee_reader r;

		fee_reader_init(&r, &seg, SHM_PROC_WORKER0);
		(void)!write(ready[1], "r", 1);
		while (atomic_load(&seg.fee_ctl->waits) == 0) /* the writer is now waiting */
			usleep(1000);
		usleep(150000);
		qsbr_quiescent(&r.q, r.me);
		qsbr_offline(&r.q, r.me);
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	for (uint64_t i = 1; i < 10 && rc == 0 && p.waits == 0; i++) {
		in = snap_make(i);
		rc = fee_snapshot_publish(&p, &in, 5000, NULL);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(p.waits, 1);
	ck_assert_uint_ge(p.last_wait_ns, 100000000ull);
	ck_assert_uint_eq(atomic_load(&seg.fee_ctl->waits), 1);
	ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pid)), 0);
}
END_TEST

/*
 * A writer killed inside the write section of the CURRENT slot (the worst
 * case for a copier) leaves its count odd: the read-only copier gives up
 * after its bounded tries and says so; a respawned oracle republishes and
 * copies work again, also once the odd slot comes round for reuse.
 */
START_TEST(test_copy_gives_up_on_odd_count)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct shm_segment ro;
	struct fee_publisher p;
	struct fee_snapshot in = snap_make(9), out;
	uint64_t t0;
	pid_t pid;

	fee_publisher_init(&p, &seg);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
	pid = fork();
	if (pid == 0) {
		struct shm_fee_slot *slot = &seg.fee_slots_base[current_slot()];
		uint64_t junk[FEE_SNAPSHOT_WORDS] = {1, 2, 3};

		seqcount_write_begin(&slot->seq);
		seqcount_store_words((uint64_t *)&slot->snap, junk, 3);
		raise(SIGKILL);
	}
	ck_assert(WIFSIGNALED(shm_test_reap(pid)));
	ck_assert_int_eq(shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, &err), 0);
	t0 = mono_ns();
	ck_assert_int_eq(fee_snapshot_copy(&ro, &out, FEE_COPY_MAX_TRIES, &err), -EBUSY);
	ck_assert_str_eq(err.msg, "fee: fee snapshot busy after 1000 tries");
	ck_assert_uint_lt(mono_ns() - t0, 2000000000ull);
	/* the respawned oracle */
	ck_assert_int_eq(fee_publisher_init(&p, &seg), 0);
	for (uint64_t i = 10; i < 20; i++) {
		in = snap_make(i);
		ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
		ck_assert_int_eq(fee_snapshot_copy(&ro, &out, FEE_COPY_MAX_TRIES, &err), 0);
		ck_assert_uint_eq(out.recommended_base_fee, 100 + i);
		ck_assert(snap_intact(&out));
		ck_assert_uint_eq(atomic_load(&seg.fee_slots_base[current_slot()].seq) % 2, 0);
	}
	shm_segment_detach(&ro);
}
END_TEST

/* A torn body with an even count (memory corruption) fails the checksum. */
START_TEST(test_copy_rejects_bad_checksum)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct fee_publisher p;
	struct fee_snapshot in = snap_make(3), out;

	fee_publisher_init(&p, &seg);
	fee_snapshot_publish(&p, &in, 0, NULL);
	seg.fee_slots_base[current_slot()].snap.aggressive_base_fee ^= 4;
	ck_assert_int_eq(fee_snapshot_copy(&seg, &out, 50, &err), -EBUSY);
}
END_TEST

/*
 * An oracle killed after publishing a new slot but before retiring the old
 * one leaves the old slot marked in use; the respawned oracle retires it
 * with a fresh token, so a reader that still holds it is respected and the
 * slot is not leaked.
 */
START_TEST(test_respawned_oracle_repairs_in_use)
{
	struct fee_publisher p;
	struct fee_reader r;
	struct fee_snapshot in = snap_make(1);
	unsigned used[SHM_FEE_MAX_SLOTS] = {0};
	uint32_t old;

	fee_publisher_init(&p, &seg);
	fee_reader_init(&r, &seg, SHM_PROC_WORKER0);
	fee_snapshot_publish(&p, &in, 0, NULL);
	old = current_slot();
	qsbr_quiescent(&r.q, r.me);
	(void)fee_snapshot_get(&r); /* the reader holds `old` */
	in = snap_make(2);
	fee_snapshot_publish(&p, &in, 0, NULL);
	/* simulate death before step 4: old is still "in use" */
	atomic_store(&seg.fee_ctl->retire_token[old], UINT64_MAX);
	fee_publisher_init(&p, &seg);
	ck_assert_uint_lt(atomic_load(&seg.fee_ctl->retire_token[old]), UINT64_MAX);
	in = snap_make(3);
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0); /* the unused slot */
	ck_assert_int_eq(fee_snapshot_publish(&p, &in, 10, NULL), -ETIMEDOUT);
	ck_assert_uint_eq(seg.fee_slots_base[old].snap.recommended_base_fee, 101);
	qsbr_quiescent(&r.q, r.me);
	for (uint64_t i = 0; i < 12; i++) {
		in = snap_make(i);
		ck_assert_int_eq(fee_snapshot_publish(&p, &in, 0, NULL), 0);
		used[current_slot()]++;
		qsbr_quiescent(&r.q, r.me);
	}
	ck_assert_uint_gt(used[old], 0);
}
END_TEST

/* Cross-process: readers in place and a read-only copier never see a torn snapshot. */
START_TEST(test_cross_process_no_torn)
{
	_Atomic int64_t *bad = shm_test_shared(4096);
	_Atomic int *stop = (_Atomic int *)(bad + 8);
	struct fee_publisher p;
	struct fee_snapshot in = snap_make(0);
	pid_t pids[3];

	fee_publisher_init(&p, &seg);
	fee_snapshot_publish(&p, &in, 0, NULL);
	for (uint32_t k = 0; k < 3; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			struct fee_reader r;
			struct fee_snapshot out;
			uint64_t last = 0, n = 0;

			if (k < 2) /* k == 2 is the unregistered seqcount copier */
				fee_reader_init(&r, &seg, SHM_PROC_WORKER0 + k);
			while (!atomic_load(stop)) {
				const struct fee_snapshot *s = &out;

				if (k < 2) {
					/*
					 * An event loop sleeping in epoll: offline only
					 * between iterations, never while holding `s`.
					 */
					if (n % 256 == 255) {
						qsbr_offline(&r.q, r.me);
						sched_yield();
						qsbr_online(&r.q, r.me);
					}
					qsbr_quiescent(&r.q, r.me);
					s = fee_snapshot_get(&r);
				} else if (fee_snapshot_copy(&seg, &out, 1000, NULL)) {
					continue;
				}
				if (!snap_intact(s) || s->generation < last)
					atomic_fetch_add(&bad[k], 1);
				last = s->generation;
				n++;
			}
			atomic_store(&bad[4 + k], (int64_t)n);
			_exit(0);
		}
	}
	for (uint64_t i = 1; i < 5000; i++) {
		in = snap_make(i);
		ck_assert_int_eq(fee_snapshot_publish(&p, &in, 5000, NULL), 0);
	}
	atomic_store(stop, 1);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pids[k])), 0);
		ck_assert_int_eq(atomic_load(&bad[k]), 0);
		ck_assert_int_gt(atomic_load(&bad[4 + k]), 0);
	}
}
END_TEST

START_TEST(test_congestion_names)
{
	enum fee_congestion c;

	ck_assert_str_eq(fee_congestion_name(FEE_CONGESTION_SEVERE), "severe");
	ck_assert_str_eq(fee_congestion_name(9), "?");
	ck_assert_int_eq(fee_congestion_parse("elevated", &c), 0);
	ck_assert_int_eq(c, FEE_CONGESTION_ELEVATED);
	ck_assert_int_eq(fee_congestion_parse("Elevated", &c), -EINVAL);
	ck_assert_int_eq(fee_congestion_parse(NULL, &c), -EINVAL);
}
END_TEST

static Suite *fee_snapshot_suite(void)
{
	Suite *s = suite_create("fee_snapshot");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_nothing_published);
	tcase_add_test(tc, test_publish_and_read);
	tcase_add_test(tc, test_checksum_detects_any_bit);
	tcase_add_test(tc, test_rotation_with_quiescing_reader);
	tcase_add_test(tc, test_reader_pins_slot);
	tcase_add_test(tc, test_offline_reader_never_blocks);
	tcase_add_test(tc, test_copy_rejects_bad_checksum);
	tcase_add_test(tc, test_congestion_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("crash");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_killed_reader_marked_offline);
	tcase_add_test(tc, test_slow_reader_wait);
	tcase_add_test(tc, test_copy_gives_up_on_odd_count);
	tcase_add_test(tc, test_respawned_oracle_repairs_in_use);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_cross_process_no_torn);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(fee_snapshot_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
