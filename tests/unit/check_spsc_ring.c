/*
 * check_spsc_ring.c - SPSC hint rings (common/shm/spsc_ring.h) in real shm
 * across processes: wrap-around at several capacities, full ring -> dropped
 * and counted, a producer killed mid-write (the partial record stays
 * invisible and a respawned producer resumes), a consumer restarted (it
 * resumes from its stored tail), and a concurrent cross-process stream.
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
#include "common/shm/spsc_ring.h"
#include "tests/unit/shm_test.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;

static void make_segment(uint32_t workers, uint32_t capacity)
{
	struct shm_config cfg = {workers, capacity, 3};
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

/* Every field of record i derives from i, so a torn record is detectable. */
static struct shm_hint hint_make(uint64_t i)
{
	struct shm_hint h = {.type = SHM_HINT_NEW_OP, .ledger = (uint32_t)i, .op_id = i};

	for (int k = 0; k < 32; k++)
		h.tx_hash[k] = (uint8_t)(i * 31 + (uint64_t)k);
	h.aux = i * 0x9e3779b97f4a7c15ULL;
	h.reserved = ~i;
	return h;
}

static int hint_ok(const struct shm_hint *h, uint64_t i)
{
	struct shm_hint want = hint_make(i);

	return !memcmp(h, &want, sizeof(want));
}

static const uint32_t caps[] = {2, 4, 16, 256, 4096};

START_TEST(test_ring_wraparound)
{
	uint32_t cap = caps[_i];
	struct spsc_ring prod, cons;
	uint64_t next_push = 0, next_pop = 0, total = 5ull * cap + 3;
	struct shm_hint h;

	make_segment(2, cap);
	ck_assert_int_eq(spsc_ring_attach(&prod, &seg, SHM_PRODUCER_ORACLE, 1), 0);
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_ORACLE, 1), 0);
	for (uint32_t burst = 1; next_pop < total; burst = burst % cap + 1) {
		for (uint32_t k = 0; k < burst && next_push < total; k++) {
			h = hint_make(next_push++);
			ck_assert_int_eq(spsc_ring_push(&prod, &h), 0);
		}
		ck_assert_uint_eq(spsc_ring_fill(prod.r), next_push - next_pop);
		while (spsc_ring_pop(&cons, &h)) {
			ck_assert_msg(hint_ok(&h, next_pop), "record %llu corrupt at cap %u",
				      (unsigned long long)next_pop, cap);
			next_pop++;
		}
		spsc_ring_release(&cons);
	}
	ck_assert_uint_eq(next_pop, total);
	ck_assert_uint_eq(atomic_load(&prod.r->head), total);
	ck_assert_uint_eq(atomic_load(&prod.r->tail), total);
	ck_assert_uint_eq(spsc_ring_drops(prod.r), 0);
}
END_TEST

START_TEST(test_ring_full_drops)
{
	struct spsc_ring prod, cons;
	struct shm_hint h, out[16];

	make_segment(1, 8);
	ck_assert_int_eq(spsc_ring_attach(&prod, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	for (uint64_t i = 0; i < 8; i++) {
		h = hint_make(i);
		ck_assert_int_eq(spsc_ring_push(&prod, &h), 0);
	}
	for (uint64_t i = 100; i < 105; i++) {
		h = hint_make(i);
		ck_assert_int_eq(spsc_ring_push(&prod, &h), -ENOSPC);
	}
	ck_assert_uint_eq(spsc_ring_drops(prod.r), 5);
	ck_assert_uint_eq(spsc_ring_pop_batch(&cons, out, 3), 3);
	for (uint64_t i = 8; i < 11; i++) {
		h = hint_make(i);
		ck_assert_int_eq(spsc_ring_push(&prod, &h), 0);
	}
	h = hint_make(200);
	ck_assert_int_eq(spsc_ring_push(&prod, &h), -ENOSPC);
	ck_assert_uint_eq(spsc_ring_drops(prod.r), 6);
	ck_assert_uint_eq(spsc_ring_pop_batch(&cons, out, 16), 8);
	for (uint64_t i = 0; i < 8; i++)
		ck_assert(hint_ok(&out[i], i + 3));
	ck_assert_uint_eq(spsc_ring_pop_batch(&cons, out, 16), 0);
}
END_TEST

START_TEST(test_ring_isolation)
{
	struct spsc_ring p, c_other_prod, c_other_worker, c;
	struct shm_hint h = hint_make(7), out;

	make_segment(2, 4);
	ck_assert_int_eq(spsc_ring_attach(&p, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	ck_assert_int_eq(spsc_ring_attach(&c, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	ck_assert_int_eq(spsc_ring_attach(&c_other_prod, &seg, SHM_PRODUCER_ORACLE, 0), 0);
	ck_assert_int_eq(spsc_ring_attach(&c_other_worker, &seg, SHM_PRODUCER_GATEWAY, 1), 0);
	ck_assert_int_eq(spsc_ring_attach(&c, &seg, SHM_PRODUCER_GATEWAY, 2), -EINVAL);
	ck_assert_int_eq(spsc_ring_attach(&c, &seg, SHM_N_PRODUCERS, 0), -EINVAL);
	ck_assert_int_eq(spsc_ring_attach(&c, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	ck_assert_int_eq(spsc_ring_push(&p, &h), 0);
	ck_assert_int_eq(spsc_ring_pop(&c_other_prod, &out), 0);
	ck_assert_int_eq(spsc_ring_pop(&c_other_worker, &out), 0);
	ck_assert_int_eq(spsc_ring_pop(&c, &out), 1);
	ck_assert(hint_ok(&out, 7));
}
END_TEST

/*
 * A producer writes 10 records, then half of an 11th (as if killed inside
 * spsc_ring_push before the release store of head) and is SIGKILLed. The
 * consumer sees exactly 10; a respawned producer resumes at head and its
 * records follow, with no trace of the partial one.
 */
START_TEST(test_producer_killed_mid_write)
{
	struct spsc_ring cons;
	struct shm_hint out;
	pid_t pid;
	int st;

	make_segment(1, 16);
	pid = fork();
	if (pid == 0) {
		struct spsc_ring p;
		struct shm_hint partial = hint_make(0xdead);

		spsc_ring_attach(&p, &seg, SHM_PRODUCER_ORACLE, 0);
		for (uint64_t i = 0; i < 10; i++) {
			struct shm_hint h = hint_make(i);
			spsc_ring_push(&p, &h);
		}
		memcpy(&p.recs[p.cached_head & p.mask], &partial, sizeof(partial) / 2);
		raise(SIGKILL);
	}
	st = shm_test_reap(pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_ORACLE, 0), 0);
	for (uint64_t i = 0; i < 10; i++) {
		ck_assert_int_eq(spsc_ring_pop(&cons, &out), 1);
		ck_assert(hint_ok(&out, i));
	}
	ck_assert_int_eq(spsc_ring_pop(&cons, &out), 0);
	spsc_ring_release(&cons);
	pid = fork();
	if (pid == 0) {
		struct spsc_ring p;

		spsc_ring_attach(&p, &seg, SHM_PRODUCER_ORACLE, 0);
		for (uint64_t i = 100; i < 116; i++) {
			struct shm_hint h = hint_make(i);
			if (spsc_ring_push(&p, &h))
				_exit(1);
		}
		_exit(0);
	}
	ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pid)), 0);
	for (uint64_t i = 100; i < 116; i++) {
		ck_assert_int_eq(spsc_ring_pop(&cons, &out), 1);
		ck_assert_msg(hint_ok(&out, i), "record %llu", (unsigned long long)i);
	}
	ck_assert_int_eq(spsc_ring_pop(&cons, &out), 0);
}
END_TEST

/*
 * A producer streams numbered records as fast as it can and is SIGKILLed
 * at an arbitrary moment while the consumer drains concurrently. Every
 * visible record must be complete and the sequence gapless; a respawned
 * producer's records follow directly.
 */
START_TEST(test_producer_killed_async)
{
	struct spsc_ring cons;
	struct shm_hint out;
	uint64_t next = 0;
	pid_t pid;

	make_segment(1, 64);
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	for (int round = 0; round < 5; round++) {
		uint64_t t_end = mono_ns() + 40000000ull + (uint64_t)(rand() % 40) * 1000000ull;

		pid = fork();
		if (pid == 0) {
			struct spsc_ring p;

			spsc_ring_attach(&p, &seg, SHM_PRODUCER_GATEWAY, 0);
			for (uint64_t i = atomic_load(&p.r->head);;) {
				struct shm_hint h = hint_make(i);
				if (spsc_ring_push(&p, &h) == 0)
					i++;
			}
		}
		while (mono_ns() < t_end) {
			while (spsc_ring_pop(&cons, &out)) {
				ck_assert_msg(hint_ok(&out, next), "round %d record %llu torn",
					      round, (unsigned long long)next);
				next++;
			}
			spsc_ring_release(&cons);
		}
		kill(pid, SIGKILL);
		shm_test_reap(pid);
		while (spsc_ring_pop(&cons, &out)) {
			ck_assert(hint_ok(&out, next));
			next++;
		}
		spsc_ring_release(&cons);
	}
	ck_assert_uint_gt(next, 64);
}
END_TEST

/*
 * A consumer copies 7 records and releases them, copies 3 more without
 * releasing, and dies. Its successor resumes at the stored tail: records
 * 7.. (the 3 unreleased ones are delivered again).
 */
START_TEST(test_consumer_restart)
{
	struct spsc_ring p, cons;
	struct shm_hint h, out[32];
	pid_t pid;

	make_segment(1, 32);
	ck_assert_int_eq(spsc_ring_attach(&p, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	for (uint64_t i = 0; i < 20; i++) {
		h = hint_make(i);
		ck_assert_int_eq(spsc_ring_push(&p, &h), 0);
	}
	pid = fork();
	if (pid == 0) {
		struct spsc_ring c;

		spsc_ring_attach(&c, &seg, SHM_PRODUCER_GATEWAY, 0);
		if (spsc_ring_pop_batch(&c, out, 7) != 7)
			_exit(1);
		for (int i = 0; i < 3; i++)
			spsc_ring_pop(&c, &out[i]);
		raise(SIGKILL);
	}
	ck_assert(WIFSIGNALED(shm_test_reap(pid)));
	ck_assert_uint_eq(atomic_load(&p.r->tail), 7);
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_GATEWAY, 0), 0);
	ck_assert_uint_eq(spsc_ring_pop_batch(&cons, out, 32), 13);
	for (uint64_t i = 0; i < 13; i++)
		ck_assert(hint_ok(&out[i], i + 7));
}
END_TEST

/* Half a million records from another process, in order and intact. */
START_TEST(test_ring_cross_process_stream)
{
	const uint64_t n = 500000;
	struct spsc_ring cons;
	struct shm_hint out[64];
	uint64_t next = 0;
	pid_t pid;

	make_segment(1, 1024);
	pid = fork();
	if (pid == 0) {
		struct spsc_ring p;

		spsc_ring_attach(&p, &seg, SHM_PRODUCER_ORACLE, 0);
		for (uint64_t i = 0; i < n;) {
			struct shm_hint h = hint_make(i);
			if (spsc_ring_push(&p, &h) == 0)
				i++;
			else
				sched_yield();
		}
		_exit(0);
	}
	ck_assert_int_eq(spsc_ring_attach(&cons, &seg, SHM_PRODUCER_ORACLE, 0), 0);
	while (next < n) {
		unsigned got = spsc_ring_pop_batch(&cons, out, 64);

		for (unsigned k = 0; k < got; k++, next++)
			ck_assert_msg(hint_ok(&out[k], next), "record %llu",
				      (unsigned long long)next);
		if (!got)
			sched_yield();
	}
	ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pid)), 0);
	ck_assert_uint_eq(spsc_ring_fill(cons.r), 0);
}
END_TEST

static Suite *spsc_ring_suite(void)
{
	Suite *s = suite_create("spsc_ring");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_loop_test(tc, test_ring_wraparound, 0, sizeof(caps) / sizeof(caps[0]));
	tcase_add_test(tc, test_ring_full_drops);
	tcase_add_test(tc, test_ring_isolation);
	suite_add_tcase(s, tc);

	tc = tcase_create("crash");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_producer_killed_mid_write);
	tcase_add_test(tc, test_producer_killed_async);
	tcase_add_test(tc, test_consumer_restart);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ring_cross_process_stream);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(spsc_ring_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
