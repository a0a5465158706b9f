/*
 * check_shm_stress.c - multi-process stress of the fee snapshot.
 *
 * One writer process (the oracle) publishes snapshots at a paced target of
 * STRESS_RATE per second; three registered readers (workers) read the
 * current snapshot in place millions of times, going offline now and then
 * as an event loop does around epoll_wait; one unregistered reader attaches
 * the segment read-only BY NAME and copies snapshots with the seqcount
 * protocol, as outboxctl does. Meanwhile the test, playing the supervisor,
 * SIGKILLs random readers mid-read, marks them offline and respawns them,
 * and once kills and respawns the writer itself.
 *
 * Proven: no reader ever accepts a torn snapshot (every field derives from
 * one number and the checksum must match), generations never go backwards
 * for a reader, and the writer never stalls: no publish times out and the
 * slowest publish stays under STRESS_MAX_PUBLISH_MS.
 *
 * Duration: OUTBOX_SHM_STRESS_SECONDS (default 30).
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/shm/fee_snapshot.h"
#include "tests/unit/shm_test.h"

#define N_READERS             3
#define STRESS_RATE           5000
#define STRESS_MAX_PUBLISH_MS 2000

struct stress_shared {
	_Atomic int stop;
	_Atomic int writer_stop;
	_Atomic uint64_t publishes;
	_Atomic uint64_t publish_timeouts;
	_Atomic uint64_t publish_max_ns;
	_Atomic uint64_t publish_waits;
	_Atomic uint64_t reads[N_READERS + 1];
	_Atomic uint64_t torn[N_READERS + 1];
	_Atomic uint64_t backwards[N_READERS + 1];
	_Atomic uint64_t copy_busy;
};

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;
static struct stress_shared *sh;

static struct fee_snapshot snap_make(uint64_t i)
{
	return (struct fee_snapshot){.recommended_base_fee = 100 + i,
				     .aggressive_base_fee = 200 + 3 * i,
				     .congestion = (uint32_t)(i % 4),
				     .capacity_ppm = (uint32_t)(i * 7919 % FEE_CAPACITY_SCALE),
				     .sampled_at_ms = 1700000000000ull + i,
				     .ttl_ms = (uint32_t)(i * 13),
				     .latest_ledger = (uint32_t)(1000 + i),
				     .latest_ledger_close_time = ~i};
}

static int snap_intact(const struct fee_snapshot *s)
{
	struct fee_snapshot want = snap_make(s->recommended_base_fee - 100);

	want.generation = s->generation;
	want.checksum = fee_snapshot_checksum(&want);
	return s->checksum == fee_snapshot_checksum(s) && !memcmp(s, &want, sizeof(want));
}

static void note_max(_Atomic uint64_t *max, uint64_t v)
{
	uint64_t m = atomic_load(max);

	while (m < v && !atomic_compare_exchange_weak(max, &m, v))
		;
}

static void sleep_until(uint64_t t_ns)
{
	uint64_t now = mono_ns();

	if (t_ns > now) {
		struct timespec ts = {(time_t)((t_ns - now) / 1000000000u),
				      (long)((t_ns - now) % 1000000000u)};
		nanosleep(&ts, NULL);
	}
}

static void writer_main(void)
{
	struct fee_publisher p;
	uint64_t t0 = mono_ns(), mine = 0, i = atomic_load(&sh->publishes);

	fee_publisher_init(&p, &seg); /* repairs what a killed predecessor left */
	while (!atomic_load(&sh->writer_stop)) {
		struct fee_snapshot in = snap_make(i);
		uint64_t a = mono_ns();
		int rc = fee_snapshot_publish(&p, &in, STRESS_MAX_PUBLISH_MS, NULL);

		note_max(&sh->publish_max_ns, mono_ns() - a);
		if (rc) {
			atomic_fetch_add(&sh->publish_timeouts, 1);
			continue;
		}
		atomic_fetch_add(&sh->publishes, 1);
		i++;
		mine++;
		if (p.last_wait_ns)
			atomic_fetch_add(&sh->publish_waits, 1);
		/* pace to STRESS_RATE per second, sleeping in batches of 5 */
		if (mine % 5 == 0)
			sleep_until(t0 + mine * (1000000000ull / STRESS_RATE));
	}
	_exit(0);
}

static void reader_flush(int k, uint64_t *n, uint64_t *torn, uint64_t *back)
{
	atomic_fetch_add(&sh->reads[k], *n);
	atomic_fetch_add(&sh->torn[k], *torn);
	atomic_fetch_add(&sh->backwards[k], *back);
	*n = *torn = *back = 0;
}

/* Registered reader k: in place, offline briefly every 1024 reads. */
static void reader_main(int k)
{
	uint64_t n = 0, torn = 0, back = 0, last = 0;
	struct fee_reader r;

	fee_reader_init(&r, &seg, SHM_PROC_WORKER0 + (uint32_t)k);
	for (uint64_t it = 1; !atomic_load(&sh->stop); it++) {
		const struct fee_snapshot *s;

		qsbr_quiescent(&r.q, r.me);
		s = fee_snapshot_get(&r);
		if (s) {
			torn += !snap_intact(s);
			back += s->generation < last;
			last = s->generation;
			n++;
		}
		if (it % 1024 == 0) {
			qsbr_offline(&r.q, r.me);
			reader_flush(k, &n, &torn, &back);
			sched_yield();
			qsbr_online(&r.q, r.me);
		}
	}
	qsbr_offline(&r.q, r.me);
	reader_flush(k, &n, &torn, &back);
	_exit(0);
}

/* Unregistered copier: read-only attach by name, seqcount copies. */
static void copier_main(void)
{
	uint64_t n = 0, torn = 0, back = 0, last = 0;
	struct shm_segment ro;
	struct fee_snapshot out;

	if (shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, NULL))
		_exit(3);
	while (!atomic_load(&sh->stop)) {
		int rc = fee_snapshot_copy(&ro, &out, FEE_COPY_MAX_TRIES, NULL);

		if (rc == -EBUSY)
			atomic_fetch_add(&sh->copy_busy, 1);
		if (rc)
			continue;
		torn += !snap_intact(&out);
		back += out.generation < last;
		last = out.generation;
		if (++n % 4096 == 0)
			reader_flush(N_READERS, &n, &torn, &back);
	}
	reader_flush(N_READERS, &n, &torn, &back);
	_exit(0);
}

static pid_t spawn(int k)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (k < 0)
			writer_main();
		else if (k < N_READERS)
			reader_main(k);
		else
			copier_main();
	}
	return pid;
}

START_TEST(test_stress_no_torn_no_stall)
{
	const char *env = getenv("OUTBOX_SHM_STRESS_SECONDS");
	uint64_t secs = env && atoi(env) > 0 ? (uint64_t)atoi(env) : 30;
	struct shm_config cfg = {4, 64, 4};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	pid_t readers[N_READERS + 1], writer;
	uint64_t t_end, kills = 0, total = 0, torn = 0, back = 0;
	struct qsbr q;
	int st;

	shm_test_instance(inst, sizeof(inst));
	ck_assert_msg(shm_segment_create(&seg, inst, &cfg, &err) == 0, "%s", err.msg);
	shm_segment_set_ready(&seg);
	qsbr_init(&q, &seg);
	sh = shm_test_shared(sizeof(*sh));
	writer = spawn(-1);
	for (int k = 0; k <= N_READERS; k++)
		readers[k] = spawn(k);
	t_end = mono_ns() + secs * 1000000000ull;
	srand((unsigned)getpid());
	for (uint64_t round = 0; mono_ns() < t_end; round++) {
		int k = rand() % (N_READERS + 1);

		usleep(50000 + (useconds_t)(rand() % 100000));
		kill(readers[k], SIGKILL); /* mid-read: readers do little else */
		shm_test_reap(readers[k]);
		if (k < N_READERS) /* what the supervisor does on reap */
			qsbr_mark_offline(&q, SHM_PROC_WORKER0 + (uint32_t)k);
		readers[k] = spawn(k);
		kills++;
		if (round == 40) { /* the oracle dies (maybe mid-publish) and respawns */
			kill(writer, SIGKILL);
			shm_test_reap(writer);
			writer = spawn(-1);
		}
	}
	atomic_store(&sh->stop, 1);
	atomic_store(&sh->writer_stop, 1);
	for (int k = 0; k <= N_READERS; k++) {
		st = shm_test_reap(readers[k]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader %d status %d", k, st);
	}
	ck_assert_int_eq(WEXITSTATUS(shm_test_reap(writer)), 0);
	for (int k = 0; k <= N_READERS; k++) {
		total += atomic_load(&sh->reads[k]);
		torn += atomic_load(&sh->torn[k]);
		back += atomic_load(&sh->backwards[k]);
	}
	printf("{\"test\":\"shm_stress\",\"seconds\":%llu,\"publishes\":%llu,"
	       "\"publishes_per_s\":%.0f,\"publish_waits\":%llu,\"publish_max_ms\":%.3f,"
	       "\"reads\":%llu,\"copies\":%llu,\"copy_busy\":%llu,\"reader_kills\":%llu,"
	       "\"torn\":%llu,\"backwards\":%llu}\n",
	       (unsigned long long)secs, (unsigned long long)atomic_load(&sh->publishes),
	       (double)atomic_load(&sh->publishes) / (double)secs,
	       (unsigned long long)atomic_load(&sh->publish_waits),
	       (double)atomic_load(&sh->publish_max_ns) / 1e6, (unsigned long long)total,
	       (unsigned long long)atomic_load(&sh->reads[N_READERS]),
	       (unsigned long long)atomic_load(&sh->copy_busy), (unsigned long long)kills,
	       (unsigned long long)torn, (unsigned long long)back);
	fflush(stdout);
	ck_assert_uint_eq(torn, 0);
	ck_assert_uint_eq(back, 0);
	ck_assert_uint_eq(atomic_load(&sh->publish_timeouts), 0);
	ck_assert_uint_lt(atomic_load(&sh->publish_max_ns), STRESS_MAX_PUBLISH_MS * 1000000ull);
	ck_assert_uint_gt(kills, 10);
	ck_assert_uint_ge(total, 1000000);
	ck_assert_uint_ge(atomic_load(&sh->publishes), 1000);
	ck_assert_uint_gt(atomic_load(&sh->reads[N_READERS]), 0);
	shm_segment_detach(&seg);
	shm_segment_unlink(inst);
}
END_TEST

static Suite *shm_stress_suite(void)
{
	Suite *s = suite_create("shm_stress");
	TCase *tc = tcase_create("stress");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_stress_no_torn_no_stall);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(shm_stress_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
