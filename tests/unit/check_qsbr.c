/*
 * check_qsbr.c - cross-process QSBR (common/shm/qsbr.h): an offline reader
 * never blocks the writer; qsbr_check passes exactly when every online
 * reader has passed the token; a reader killed while online blocks until
 * the supervisor marks it offline; a live reader in another process lets
 * tokens pass.
 */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/shm/qsbr.h"
#include "tests/unit/shm_test.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;
static struct qsbr q;

static void setup(void)
{
	struct shm_config cfg = {4, 16, 3};
	struct outbox_error err = OUTBOX_ERROR_INIT;

	shm_test_instance(inst, sizeof(inst));
	ck_assert_msg(shm_segment_create(&seg, inst, &cfg, &err) == 0, "%s", err.msg);
	shm_segment_set_ready(&seg);
	qsbr_init(&q, &seg);
}

static void teardown(void)
{
	shm_segment_detach(&seg);
	shm_segment_unlink(inst);
}

START_TEST(test_tokens_and_offline)
{
	ck_assert_uint_eq(q.n_readers, SHM_PROC_WORKER0 + 4);
	ck_assert_uint_eq(atomic_load(&q.tok->token), 1);
	for (uint32_t p = 0; p < q.n_readers; p++)
		ck_assert(!qsbr_is_online(&q, p));
	ck_assert_uint_eq(qsbr_start(&q), 2);
	ck_assert_uint_eq(qsbr_start(&q), 3);
	for (int i = 0; i < 1000; i++)
		ck_assert(qsbr_check(&q, qsbr_start(&q), NULL));
}
END_TEST

START_TEST(test_check_exactly_when_all_passed)
{
	uint32_t blocker = 99;
	uint64_t t;

	qsbr_online(&q, 3);
	qsbr_online(&q, 4);
	qsbr_online(&q, SHM_PROC_GATEWAY);
	ck_assert(qsbr_is_online(&q, 4));
	t = qsbr_start(&q);
	ck_assert(!qsbr_check(&q, t, &blocker));
	ck_assert_uint_eq(blocker, SHM_PROC_GATEWAY);
	qsbr_quiescent(&q, SHM_PROC_GATEWAY);
	qsbr_quiescent(&q, 3);
	ck_assert(!qsbr_check(&q, t, &blocker));
	ck_assert_uint_eq(blocker, 4);
	qsbr_quiescent(&q, 4);
	ck_assert(qsbr_check(&q, t, &blocker));
	/* a newer token blocks again; an older one stays passed */
	ck_assert(!qsbr_check(&q, qsbr_start(&q), NULL));
	ck_assert(qsbr_check(&q, t, NULL));
	/* going offline unblocks */
	t = qsbr_start(&q);
	qsbr_offline(&q, 3);
	qsbr_offline(&q, 4);
	ck_assert(!qsbr_check(&q, t, &blocker));
	qsbr_offline(&q, SHM_PROC_GATEWAY);
	ck_assert(qsbr_check(&q, t, NULL));
	/* out-of-range ids are ignored */
	qsbr_online(&q, q.n_readers);
	ck_assert(qsbr_check(&q, qsbr_start(&q), NULL));
}
END_TEST

/* A reader coming online after the token was taken is not waited for. */
START_TEST(test_online_after_start)
{
	uint64_t t = qsbr_start(&q);

	qsbr_online(&q, 5);
	ck_assert(qsbr_check(&q, t, NULL));
}
END_TEST

START_TEST(test_reader_killed_online)
{
	int ready[2];
	uint32_t blocker = 0;
	uint64_t t;
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		qsbr_online(&q, 4);
		c = 'r';
		(void)!write(ready[1], &c, 1);
		for (;;)
			pause();
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	t = qsbr_start(&q);
	for (int i = 0; i < 20; i++) {
		ck_assert(!qsbr_check(&q, t, &blocker));
		usleep(5000);
	}
	ck_assert_uint_eq(blocker, 4);
	kill(pid, SIGKILL);
	shm_test_reap(pid);
	ck_assert_msg(!qsbr_check(&q, t, NULL), "a dead reader's counter stays until marked");
	qsbr_mark_offline(&q, 4); /* what the supervisor does on reap */
	ck_assert(qsbr_check(&q, t, NULL));
}
END_TEST

/* Two reader processes loop through quiescent states; 200 tokens pass. */
START_TEST(test_live_readers_pass_tokens)
{
	_Atomic int *stop = shm_test_shared(sizeof(int));
	pid_t pids[2];

	for (uint32_t r = 0; r < 2; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			qsbr_online(&q, 3 + r);
			while (!atomic_load(stop))
				qsbr_quiescent(&q, 3 + r);
			qsbr_offline(&q, 3 + r);
			_exit(0);
		}
	}
	for (int i = 0; i < 200; i++) {
		uint64_t t = qsbr_start(&q), deadline = mono_ns() + 5000000000ull;

		while (!qsbr_check(&q, t, NULL))
			ck_assert_msg(mono_ns() < deadline, "token %llu never passed",
				      (unsigned long long)t);
	}
	atomic_store(stop, 1);
	for (int r = 0; r < 2; r++)
		ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pids[r])), 0);
	ck_assert(!qsbr_is_online(&q, 3) && !qsbr_is_online(&q, 4));
}
END_TEST

static Suite *qsbr_suite(void)
{
	Suite *s = suite_create("qsbr");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tokens_and_offline);
	tcase_add_test(tc, test_check_exactly_when_all_passed);
	tcase_add_test(tc, test_online_after_start);
	suite_add_tcase(s, tc);

	tc = tcase_create("crash");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_reader_killed_online);
	tcase_add_test(tc, test_live_readers_pass_tokens);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(qsbr_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
