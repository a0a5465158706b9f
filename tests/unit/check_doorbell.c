/*
 * check_doorbell.c - eventfd doorbells (common/shm/doorbell.h): a waker
 * writes only when the owner sleeps, the timeout path fires, and no wakeup
 * is lost over thousands of cross-process rounds with random delays; a
 * producer role's hint_out (common/shm/hint_out.h) pushes, counts and rings.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/shm/doorbell.h"
#include "common/shm/hint_out.h"
#include "common/shm/spsc_ring.h"
#include "tests/unit/shm_test.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;
static struct doorbell_fds fds;

static void setup(void)
{
	struct shm_config cfg = {2, 64, 3};
	struct outbox_error err = OUTBOX_ERROR_INIT;

	shm_test_instance(inst, sizeof(inst));
	ck_assert_msg(shm_segment_create(&seg, inst, &cfg, &err) == 0, "%s", err.msg);
	shm_segment_set_ready(&seg);
	ck_assert_int_eq(doorbell_fds_create(&fds, seg.n_workers, &err), 0);
}

static void teardown(void)
{
	doorbell_fds_close(&fds);
	shm_segment_detach(&seg);
	shm_segment_unlink(inst);
}

START_TEST(test_fds)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct doorbell_fds many;

	ck_assert_uint_eq(fds.n, 2);
	ck_assert_int_ne(fds.fd[0], fds.fd[1]);
	ck_assert(fcntl(fds.fd[0], F_GETFL) & O_NONBLOCK);
	ck_assert_int_eq(doorbell_fds_create(&many, SHM_MAX_WORKERS + 1, &err), -EINVAL);
	ck_assert_ptr_null(shm_doorbell_get(&seg, 2));
}
END_TEST

START_TEST(test_ring_only_when_sleeping)
{
	struct shm_doorbell *db = shm_doorbell_get(&seg, 1);
	int fd = fds.fd[1];

	ck_assert_int_eq(doorbell_ring(db, fd), 0);
	ck_assert_int_eq(doorbell_wait(fd, 0), 0);
	ck_assert_uint_eq(atomic_load(&db->rings), 0);
	doorbell_prepare(db);
	ck_assert_int_eq(doorbell_ring(db, fd), 1);
	ck_assert_int_eq(doorbell_ring(db, fd), 1);
	ck_assert_int_eq(doorbell_wait(fd, 1000), 1);
	doorbell_done(db, fd);
	ck_assert_int_eq(doorbell_wait(fd, 0), 0); /* drained */
	ck_assert_uint_eq(atomic_load(&db->rings), 2);
	ck_assert_int_eq(atomic_load(&db->sleeping), 0);
}
END_TEST

START_TEST(test_timeout_fires)
{
	struct shm_doorbell *db = shm_doorbell_get(&seg, 0);
	uint64_t t0 = mono_ns(), dt;

	doorbell_prepare(db);
	ck_assert_int_eq(doorbell_wait(fds.fd[0], 120), 0);
	dt = mono_ns() - t0;
	doorbell_done(db, fds.fd[0]);
	ck_assert_uint_ge(dt, 110000000ull);
	ck_assert_uint_lt(dt, 5000000000ull);
}
END_TEST

/*
 * The producer (another process, inheriting the eventfd as a forked child
 * would) pushes N hints with random pauses and rings after each. The
 * consumer follows the waiter protocol with a 3 s timeout: any timeout while
 * hints are still coming would be a lost wakeup.
 */
START_TEST(test_no_lost_wakeups)
{
	const uint64_t n = 4000;
	struct shm_doorbell *db = shm_doorbell_get(&seg, 0);
	struct spsc_ring cons;
	struct shm_hint out[64];
	uint64_t got = 0, timeouts = 0, sleeps = 0;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		struct spsc_ring p;

		srand((unsigned)getpid());
		spsc_ring_attach(&p, &seg, SHM_PRODUCER_GATEWAY, 0);
		for (uint64_t i = 0; i < n;) {
			struct shm_hint h = {.type = SHM_HINT_NEW_OP, .op_id = i};

			if (rand() % 4 == 0)
				usleep((useconds_t)(rand() % 300));
			if (spsc_ring_push(&p, &h) == 0)
				i++;
			doorbell_ring(db, fds.fd[0]);
		}
		_exit(0);
	}
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	while (got < n) {
		unsigned k = spsc_ring_pop_batch(&cons, out, 64);

		for (unsigned j = 0; j < k; j++, got++)
			ck_assert_uint_eq(out[j].op_id, got);
		if (k)
			continue;
		doorbell_prepare(db);
		if (spsc_ring_fill(cons.r) == 0) { /* re-check after announcing sleep */
			sleeps++;
			if (doorbell_wait(fds.fd[0], 3000) == 0)
				timeouts++;
		}
		doorbell_done(db, fds.fd[0]);
	}
	ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pid)), 0);
	ck_assert_uint_eq(timeouts, 0);
	ck_assert_uint_gt(sleeps, 0);
	ck_assert_uint_gt(atomic_load(&db->rings), 0);
}
END_TEST

/*
 * hint_out: a push is counted as sent, rings a sleeping worker's doorbell
 * only when asked, a full ring drops and counts the hint, a worker without
 * a ring is refused uncounted.
 */
START_TEST(test_hint_out)
{
	static struct hint_out o;
	struct shm_stats_block *st = shm_stats_block(&seg, 0);
	struct shm_doorbell *db = shm_doorbell_get(&seg, 1);
	struct shm_hint h = {.type = SHM_HINT_NEW_OP, .ledger = 7}, got;
	struct spsc_ring cons;
	int pushed = 0;

	ck_assert_ptr_nonnull(st);
	hint_out_attach(&o, &seg, &fds, st, SHM_PRODUCER_GATEWAY, seg.n_workers);
	ck_assert_ptr_nonnull(hint_out_ring(&o, 1));
	ck_assert_ptr_null(hint_out_ring(&o, 2));
	ck_assert_ptr_null(hint_out_ring(&o, -1));
	ck_assert_int_eq(hint_out_send(&o, 2, &h, true), -EINVAL);
	ck_assert_int_eq(hint_out_send(&o, -1, &h, true), -EINVAL);
	ck_assert_uint_eq(stats_counter_read(st, MET_HINTS_SENT), 0);

	ck_assert_int_eq(hint_out_send(&o, 1, &h, true), 0); /* awake: no write */
	ck_assert_int_eq(doorbell_wait(fds.fd[1], 0), 0);
	doorbell_prepare(db);
	ck_assert_int_eq(hint_out_send(&o, 1, &h, false), 0); /* asleep, not asked */
	ck_assert_int_eq(doorbell_wait(fds.fd[1], 0), 0);
	ck_assert_int_eq(hint_out_send(&o, 1, &h, true), 0);
	ck_assert_int_eq(doorbell_wait(fds.fd[1], 1000), 1);
	doorbell_done(db, fds.fd[1]);
	ck_assert_uint_eq(stats_counter_read(st, MET_HINTS_SENT), 3);

	while (hint_out_send(&o, 1, &h, false) == 0)
		pushed++;
	ck_assert_int_eq(pushed, 64 - 3);
	ck_assert_int_eq(hint_out_send(&o, 1, &h, false), -ENOSPC);
	ck_assert_uint_eq(stats_counter_read(st, MET_HINTS_SENT), 64);
	ck_assert_uint_eq(stats_counter_read(st, MET_HINTS_DROPPED), 2);

	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_GATEWAY, 1), 0);
	ck_assert_int_eq(spsc_ring_pop(&cons, &got), 1);
	ck_assert_int_eq(got.type, SHM_HINT_NEW_OP);
	ck_assert_uint_eq(got.ledger, 7);
}
END_TEST

static Suite *doorbell_suite(void)
{
	Suite *s = suite_create("doorbell");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fds);
	tcase_add_test(tc, test_ring_only_when_sleeping);
	tcase_add_test(tc, test_timeout_fires);
	tcase_add_test(tc, test_hint_out);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_no_lost_wakeups);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(doorbell_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
