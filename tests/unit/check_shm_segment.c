/*
 * check_shm_segment.c - segment create/attach/validate, the instance lock,
 * the process table and in-flight accounting (common/shm/segment.h,
 * proc_table.h, inflight.h).
 *
 * Every test creates its own segment "/outboxd-test-<runner>-<pid>-<n>"
 * and unlinks it in teardown; main() sweeps leftovers of failed tests.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/shm/inflight.h"
#include "common/shm/proc_table.h"
#include "common/shm/segment.h"
#include "tests/unit/shm_test.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;

static void setup(void)
{
	struct shm_config cfg = SHM_CONFIG_DEFAULT;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	shm_test_instance(inst, sizeof(inst));
	ck_assert_msg(shm_segment_create(&seg, inst, &cfg, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	shm_segment_detach(&seg);
	shm_segment_unlink(inst);
}

/* ---- names and sizes ---- */

static const struct {
	const char *name;
	int ok;
} names[] = {
	{"default", 1},   {"a", 1},
	{"Prod_eu-1", 1}, {"abcdefghijklmnopqrstuvwxyz012345", 1},
	{"", 0},          {"abcdefghijklmnopqrstuvwxyz0123456", 0},
	{"a/b", 0},       {"a b", 0},
	{"..", 0},        {"é", 0},
	{NULL, 0},
};

START_TEST(test_name_validation)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char buf[SHM_NAME_MAX];
	int rc = shm_segment_name(names[_i].name, buf, sizeof(buf), &err);

	if (names[_i].ok) {
		ck_assert_int_eq(rc, 0);
		ck_assert_str_eq(buf + strlen("/outboxd-"), names[_i].name);
	} else {
		ck_assert_int_eq(rc, -EINVAL);
		ck_assert_ptr_nonnull(strstr(err.msg, "instance"));
	}
}
END_TEST

static const struct {
	struct shm_config cfg;
	const char *field;
} bad_cfgs[] = {
	{{0, 1024, 4}, "n_workers"},         {{257, 1024, 4}, "n_workers"},
	{{4, 3, 4}, "ring_capacity"},        {{4, 1, 4}, "ring_capacity"},
	{{4, 1u << 21, 4}, "ring_capacity"}, {{4, 1024, 2}, "fee_slots"},
	{{4, 1024, 9}, "fee_slots"},
};

START_TEST(test_config_bounds)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	size_t size = 0;

	ck_assert_int_eq(shm_segment_size(&bad_cfgs[_i].cfg, &size, &err), -EINVAL);
	ck_assert_str_eq(err.field, bad_cfgs[_i].field);
}
END_TEST

START_TEST(test_size_grows_with_config)
{
	struct shm_config a = {1, 2, 3}, b = {2, 2, 3}, c = {2, 4, 3}, big = {256, 1u << 20, 8};
	size_t sa, sb, sc, sbig;

	ck_assert_int_eq(shm_segment_size(&a, &sa, NULL), 0);
	ck_assert_int_eq(shm_segment_size(&b, &sb, NULL), 0);
	ck_assert_int_eq(shm_segment_size(&c, &sc, NULL), 0);
	ck_assert_int_eq(shm_segment_size(&big, &sbig, NULL), 0);
	ck_assert_uint_gt(sb, sa);
	ck_assert_uint_eq(sc - sb, 2 * 2 * 2 * sizeof(struct shm_hint)); /* 2 rings/worker */
	ck_assert_uint_eq(sa % SHM_ALIGN, 0);
	/* 512 rings of 1M 64-byte records: > 32 GiB, still computed exactly */
	ck_assert_uint_gt(sbig, (size_t)512 << 26);
}
END_TEST

/* ---- create / attach ---- */

START_TEST(test_create_attach_rw_ro)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct shm_segment rw, ro;
	char path[128];
	struct stat st;

	ck_assert_int_eq(shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, &err), -EAGAIN);
	ck_assert_str_eq(err.msg, "state: daemon starting");
	shm_segment_set_ready(&seg);
	ck_assert_msg(shm_segment_attach(&rw, inst, 0, &err) == 0, "%s", err.msg);
	ck_assert_msg(shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ro.readonly, 1);
	ck_assert_uint_eq(ro.instance_id, seg.instance_id);
	ck_assert_uint_eq(ro.size, seg.size);
	ck_assert_uint_eq(ro.n_workers, 4);
	ck_assert_uint_eq(ro.n_procs, SHM_PROC_WORKER0 + 4);
	ck_assert_str_eq(ro.hdr->instance, inst);
	ck_assert_int_eq(ro.hdr->supervisor_pid, getpid());
	/* a write through the rw mapping is seen through the ro one */
	atomic_store(&rw.procs[2].pid, 4242);
	ck_assert_int_eq(atomic_load(&ro.procs[2].pid), 4242);
	snprintf(path, sizeof(path), "/dev/shm%s", seg.name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_uint_eq((size_t)st.st_size, seg.size);
	shm_segment_detach(&rw);
	shm_segment_detach(&ro);
}
END_TEST

static void on_segv(int sig)
{
	(void)sig;
	_exit(77);
}

/*
 * A write through the PROT_READ mapping faults. The write happens in a
 * child with its own SIGSEGV handler, so the check also holds under ASan
 * (which would otherwise turn the signal into a report and exit 1).
 */
START_TEST(test_readonly_cannot_write)
{
	struct shm_segment ro;
	pid_t pid;
	int st;

	shm_segment_set_ready(&seg);
	ck_assert_int_eq(shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, NULL), 0);
	pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, on_segv);
		atomic_store(&ro.procs[0].pid, 1);
		_exit(0);
	}
	st = shm_test_reap(pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 77, "write did not fault (status %d)",
		      st);
	ck_assert_int_eq(atomic_load(&seg.procs[0].pid), 0);
	shm_segment_detach(&ro);
}
END_TEST

START_TEST(test_attach_missing)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct shm_segment s;

	ck_assert_int_eq(shm_segment_attach(&s, "nosuch-instance-x", SHM_ATTACH_RDONLY, &err),
			 -ENOENT);
	ck_assert_str_eq(err.msg, "instance: no instance 'nosuch-instance-x' running");
	ck_assert_ptr_null(s.base);
}
END_TEST

START_TEST(test_create_exclusive_and_dead)
{
	struct shm_config cfg = SHM_CONFIG_DEFAULT;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct shm_segment again, ro;
	uint64_t id = seg.instance_id;

	ck_assert_int_eq(shm_segment_create(&again, inst, &cfg, &err), -EEXIST);
	shm_segment_mark_dead(&seg);
	ck_assert_int_eq(shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, &err), -ESHUTDOWN);
	ck_assert_ptr_nonnull(strstr(err.msg, "shutting down"));
	/* the stale-segment path: unlink, recreate, new instance id */
	ck_assert_int_eq(shm_segment_unlink(inst), 0);
	ck_assert_int_eq(shm_segment_unlink(inst), 0); /* ENOENT is fine */
	ck_assert_int_eq(shm_segment_create(&again, inst, &cfg, &err), 0);
	ck_assert_uint_ne(again.instance_id, id);
	shm_segment_detach(&again);
}
END_TEST

START_TEST(test_heartbeat)
{
	uint64_t before = mono_ns();

	shm_segment_heartbeat(&seg);
	ck_assert_uint_ge(atomic_load(&seg.hdr->heartbeat_ns), before);
	ck_assert_uint_eq(atomic_load(&seg.hdr->heartbeat_ns),
			  atomic_load(&seg.procs[SHM_PROC_SUPERVISOR].heartbeat_ns));
}
END_TEST

/* ---- header/TOC validation, table-driven over a private copy ---- */

typedef void (*mutate_fn)(struct shm_header *h, size_t *size);

#define MUT(name, body)                                                                            \
	static void name(struct shm_header *h, size_t *size)                                       \
	{                                                                                          \
		(void)size;                                                                        \
		body;                                                                              \
	}
MUT(m_none, )
MUT(m_magic, h->magic ^= 1)
MUT(m_major, h->major = SHM_LAYOUT_MAJOR + 1)
MUT(m_minor, h->minor = SHM_LAYOUT_MINOR + 7)
MUT(m_endian, h->endian = 0x3412)
MUT(m_word, h->word_size = 4)
MUT(m_total, h->total_size += SHM_ALIGN)
MUT(m_short, *size -= SHM_ALIGN)
MUT(m_tiny, *size = 100)
MUT(m_init, atomic_store(&h->state, SHM_INIT))
MUT(m_dead, atomic_store(&h->state, SHM_DEAD))
MUT(m_state, atomic_store(&h->state, 7))
MUT(m_hsize, h->header_size = 1000)
MUT(m_nsec, h->n_sections = SHM_TOC_MAX + 1)
MUT(m_toc_past_end, h->toc[0].offset = h->total_size)
MUT(m_toc_misaligned, h->toc[1].offset += 8)
MUT(m_toc_in_header, h->toc[4].offset = 0)
MUT(m_toc_count_overflow, h->toc[6].count = UINT32_MAX)
MUT(m_toc_stride_overflow, h->toc[2].stride = UINT64_MAX - 7)
MUT(m_toc_stride_small, h->toc[5].stride = 8)
MUT(m_toc_missing, h->toc[8].id = 99)
MUT(m_toc_count, h->toc[0].count++)
MUT(m_toc_version, h->toc[3].version = 0)
MUT(m_workers, h->n_workers = 0)
MUT(m_nprocs, h->n_procs++)
MUT(m_ring_cap, h->ring_capacity = 3)
MUT(m_slots, h->fee_slots = 2)
MUT(m_instance, memset(h->instance, 'a', sizeof(h->instance)))
MUT(m_ring_hdr,
    ((struct shm_ring *)((char *)h + h->toc[6].offset + h->toc[6].stride))->capacity = 2)

static const struct {
	const char *what;
	mutate_fn fn;
	int rc;
	const char *msg;
} mutations[] = {
	{"intact", m_none, 0, ""},
	{"minor bump tolerated", m_minor, 0, ""},
	{"wrong magic", m_magic, -EPROTO, "not an outboxd segment"},
	{"wrong major", m_major, -EPROTO, "incompatible layout: daemon 2, tool 1"},
	{"wrong endian", m_endian, -EPROTO, "incompatible platform"},
	{"wrong word size", m_word, -EPROTO, "incompatible platform"},
	{"total_size mismatch", m_total, -EPROTO, "total_size"},
	{"mapping shorter", m_short, -EPROTO, "total_size"},
	{"tiny mapping", m_tiny, -EPROTO, "too small"},
	{"state INIT", m_init, -EAGAIN, "daemon starting"},
	{"state DEAD", m_dead, -ESHUTDOWN, "shutting down"},
	{"state unknown", m_state, -EPROTO, "state: 7 is unknown"},
	{"header size", m_hsize, -EPROTO, "header_size"},
	{"too many sections", m_nsec, -EPROTO, "sections exceed"},
	{"toc past end", m_toc_past_end, -EPROTO, "exceeds segment"},
	{"toc misaligned", m_toc_misaligned, -EPROTO, "misplaced"},
	{"toc inside header", m_toc_in_header, -EPROTO, "misplaced"},
	{"toc count*stride", m_toc_count_overflow, -EPROTO, "exceeds segment"},
	{"toc stride overflow", m_toc_stride_overflow, -EPROTO, "exceeds segment"},
	{"toc stride small", m_toc_stride_small, -EPROTO, "stride"},
	{"toc missing section", m_toc_missing, -EPROTO, "section 9 missing"},
	{"toc wrong count", m_toc_count, -EPROTO, "elements"},
	{"toc old version", m_toc_version, -EPROTO, "version"},
	{"n_workers", m_workers, -EPROTO, "n_workers"},
	{"n_procs", m_nprocs, -EPROTO, "n_workers"},
	{"ring capacity", m_ring_cap, -EPROTO, "ring_capacity"},
	{"fee slots", m_slots, -EPROTO, "fee_slots"},
	{"instance unterminated", m_instance, -EPROTO, "instance"},
	{"ring header", m_ring_hdr, -EPROTO, "ring 1 header"},
};

START_TEST(test_validate_table)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct shm_segment v;
	size_t size = seg.size;
	void *copy = aligned_alloc(SHM_ALIGN, seg.size);
	int rc;

	shm_segment_set_ready(&seg);
	memcpy(copy, seg.base, seg.size);
	mutations[_i].fn(copy, &size);
	rc = shm_segment_validate(&v, copy, size, &err);
	ck_assert_msg(rc == mutations[_i].rc, "%s: rc %d, want %d (%s)", mutations[_i].what, rc,
		      mutations[_i].rc, err.msg);
	ck_assert_msg(strstr(err.msg, mutations[_i].msg), "%s: message '%s' lacks '%s'",
		      mutations[_i].what, err.msg, mutations[_i].msg);
	if (rc == 0)
		ck_assert_ptr_eq(v.procs,
				 (char *)copy + ((struct shm_header *)copy)->toc[0].offset);
	else
		ck_assert_ptr_null(v.base);
	free(copy);
}
END_TEST

/* Attach by name reports the same errors: major mismatch through the real path. */
START_TEST(test_attach_incompatible)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct shm_segment ro;

	shm_segment_set_ready(&seg);
	seg.hdr->major = 9;
	ck_assert_int_eq(shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, &err), -EPROTO);
	ck_assert_str_eq(err.msg, "major: incompatible layout: daemon 9, tool 1");
}
END_TEST

/* ---- instance lock ---- */

START_TEST(test_lock_excludes_and_releases)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int fd = shm_instance_lock(inst, shm_test_lock_dir, &err), st;
	pid_t pid;

	ck_assert_msg(fd >= 0, "%s", err.msg);
	ck_assert_int_eq(shm_instance_lock_pid(inst, shm_test_lock_dir), getpid());
	ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	pid = fork();
	if (pid == 0) {
		int rc = shm_instance_lock(inst, shm_test_lock_dir, &err);
		char want[128];

		snprintf(want, sizeof(want), "locked by pid %d", (int)getppid());
		_exit(rc == -EWOULDBLOCK && strstr(err.msg, want) ? 0 : 1);
	}
	st = shm_test_reap(pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "second locker was not refused");
	close(fd);
	pid = fork();
	if (pid == 0)
		_exit(shm_instance_lock(inst, shm_test_lock_dir, NULL) >= 0 ? 0 : 1);
	st = shm_test_reap(pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock not released by close");
}
END_TEST

/*
 * The interlock: a "supervisor" takes the lock, forks a "worker" that
 * inherits the fd, and dies. While the orphaned worker lives, a new
 * supervisor is refused; once it exits, the lock is free.
 */
START_TEST(test_lock_held_by_orphan)
{
	int go[2], ready[2], fd;
	pid_t sup, orphan = 0;
	char c;

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(ready), 0);
	sup = fork();
	if (sup == 0) {
		if (shm_instance_lock(inst, shm_test_lock_dir, NULL) < 0)
			_exit(1);
		if (fork() == 0) {
			close(go[1]);
			close(ready[0]);
			c = 'r';
			(void)!write(ready[1], &c, 1);
			(void)!read(go[0], &c, 1); /* until the test closes go[1] */
			_exit(0);
		}
		_exit(0); /* the supervisor dies; its child keeps the lock fd */
	}
	close(go[0]);
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(WEXITSTATUS(shm_test_reap(sup)), 0);
	fd = shm_instance_lock(inst, shm_test_lock_dir, NULL);
	ck_assert_int_eq(fd, -EWOULDBLOCK);
	close(go[1]); /* the orphan exits */
	for (int i = 0; i < 200 && fd < 0; i++) {
		usleep(10000);
		fd = shm_instance_lock(inst, shm_test_lock_dir, NULL);
	}
	(void)orphan;
	ck_assert_int_ge(fd, 0);
	close(fd);
}
END_TEST

/* ---- process table ---- */

START_TEST(test_proc_table)
{
	struct proc_slot_view v;
	struct shm_proc_slot *s;
	int p = shm_proc_index(&seg, SHM_ROLE_WORKER, 2);

	ck_assert_int_eq(p, SHM_PROC_WORKER0 + 2);
	ck_assert_int_eq(shm_proc_index(&seg, SHM_ROLE_WORKER, 4), -EINVAL);
	ck_assert_int_eq(shm_proc_index(&seg, SHM_ROLE_ORACLE, 0), SHM_PROC_ORACLE);
	ck_assert_int_eq(shm_proc_index(&seg, SHM_ROLE_GATEWAY, 1), -EINVAL);
	ck_assert_ptr_null(shm_proc_slot(&seg, seg.n_procs));
	s = shm_proc_slot(&seg, (uint32_t)p);
	proc_slot_read(s, &v);
	ck_assert_int_eq(v.role, SHM_ROLE_WORKER);
	ck_assert_uint_eq(v.index, 2);
	ck_assert_int_eq(v.state, SHM_PROC_FREE);
	ck_assert_int_eq(v.last_exit_status, -1);
	proc_slot_assign(s, 1234, 0);
	proc_slot_running(s);
	proc_slot_read(s, &v);
	ck_assert_int_eq(v.pid, 1234);
	ck_assert_int_eq(v.state, SHM_PROC_RUNNING);
	ck_assert_uint_eq(v.restarts, 0);
	ck_assert_uint_gt(v.started_at_ms, 1600000000000ull);
	proc_slot_exited(s, -1, SIGKILL);
	proc_slot_backoff(s);
	proc_slot_assign(s, 1240, 1);
	proc_slot_read(s, &v);
	ck_assert_int_eq(v.state, SHM_PROC_STARTING);
	ck_assert_uint_eq(v.restarts, 1);
	ck_assert_uint_eq(v.exits, 1);
	ck_assert_int_eq(v.last_exit_signal, SIGKILL);
	ck_assert_str_eq(shm_role_name(v.role), "worker");
	ck_assert_str_eq(shm_proc_state_name(v.state), "starting");
	ck_assert_str_eq(shm_proc_state_name(99), "?");
}
END_TEST

/* ---- in-flight accounting ---- */

START_TEST(test_inflight_cap)
{
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(inflight_try_acquire(&seg, (uint32_t)i, 5), 0);
	ck_assert_int_eq(inflight_try_acquire(&seg, 3, 5), 0);
	ck_assert_int_eq(inflight_try_acquire(&seg, 3, 5), 0);
	ck_assert_int_eq(inflight_try_acquire(&seg, 0, 5), -EAGAIN);
	ck_assert_int_eq(inflight_total(&seg), 5);
	ck_assert_int_eq(inflight_get(&seg, 3), 2);
	inflight_reset(&seg, 3); /* worker 3 died */
	ck_assert_int_eq(inflight_total(&seg), 3);
	ck_assert_int_eq(inflight_try_acquire(&seg, 0, 5), 0);
	inflight_release(&seg, 1);
	inflight_release(&seg, 1); /* never below 0 */
	ck_assert_int_eq(inflight_get(&seg, 1), 0);
	inflight_set(&seg, 2, 7);
	ck_assert_int_eq(inflight_total(&seg), 9);
	ck_assert_int_eq(inflight_try_acquire(&seg, 9, 100), -EINVAL);
}
END_TEST

/*
 * Four worker processes hammer acquire/release against a cap of 3; a
 * shared "admitted" counter (test bookkeeping) must never exceed the cap.
 */
START_TEST(test_inflight_no_overshoot)
{
	_Atomic int64_t *admitted = shm_test_shared(sizeof(*admitted) * 2);
	_Atomic int64_t *max_seen = admitted + 1;
	pid_t pids[4];

	for (uint32_t w = 0; w < 4; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			for (int i = 0; i < 200000; i++) {
				if (inflight_try_acquire(&seg, w, 3))
					continue;
				int64_t n = atomic_fetch_add(admitted, 1) + 1, m;

				while ((m = atomic_load(max_seen)) < n &&
				       !atomic_compare_exchange_weak(max_seen, &m, n))
					;
				atomic_fetch_sub(admitted, 1);
				inflight_release(&seg, w);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < 4; w++)
		ck_assert_int_eq(WEXITSTATUS(shm_test_reap(pids[w])), 0);
	ck_assert_int_le(atomic_load(max_seen), 3);
	ck_assert_int_ge(atomic_load(max_seen), 1);
	ck_assert_int_eq(inflight_total(&seg), 0);
}
END_TEST

static Suite *shm_segment_suite(void)
{
	Suite *s = suite_create("shm_segment");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_name_validation, 0, sizeof(names) / sizeof(names[0]));
	tcase_add_loop_test(tc, test_config_bounds, 0, sizeof(bad_cfgs) / sizeof(bad_cfgs[0]));
	tcase_add_test(tc, test_size_grows_with_config);
	tcase_add_test(tc, test_create_attach_rw_ro);
	tcase_add_test(tc, test_readonly_cannot_write);
	tcase_add_test(tc, test_attach_missing);
	tcase_add_test(tc, test_create_exclusive_and_dead);
	tcase_add_test(tc, test_heartbeat);
	tcase_add_test(tc, test_proc_table);
	suite_add_tcase(s, tc);

	tc = tcase_create("validation");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_validate_table, 0, sizeof(mutations) / sizeof(mutations[0]));
	tcase_add_test(tc, test_attach_incompatible);
	suite_add_tcase(s, tc);

	tc = tcase_create("lock");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_lock_excludes_and_releases);
	tcase_add_test(tc, test_lock_held_by_orphan);
	suite_add_tcase(s, tc);

	tc = tcase_create("inflight");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_inflight_cap);
	tcase_add_test(tc, test_inflight_no_overshoot);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	shm_test_begin();
	sr = srunner_create(shm_segment_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_sweep();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
