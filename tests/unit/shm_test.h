/*
 * shm_test.h - helpers shared by the common/shm Check suites.
 *
 * Segment names are "/outboxd-test-<runner pid>-<test pid>-<n>", unique per
 * test process. Teardown unlinks what a test created; because a test that
 * fails (or is killed) in Check's fork mode may skip its teardown,
 * shm_test_sweep() run by main() after the suite unlinks every segment and
 * lock file with this runner's prefix.
 */
#ifndef OUTBOX_TESTS_SHM_TEST_H
#define OUTBOX_TESTS_SHM_TEST_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/shm/segment.h"

static pid_t shm_test_runner_pid;
static char shm_test_lock_dir[64];

/* Call first thing in main(). */
static inline void shm_test_begin(void)
{
	shm_test_runner_pid = getpid();
	snprintf(shm_test_lock_dir, sizeof(shm_test_lock_dir), "/tmp/outboxd-test-%d",
		 (int)shm_test_runner_pid);
	mkdir(shm_test_lock_dir, 0700);
}

static inline void shm_test_instance(char *buf, size_t len)
{
	static unsigned n;

	snprintf(buf, len, "test-%d-%d-%u", (int)shm_test_runner_pid, (int)getpid(), n++);
}

/* Unlink every segment and lock file of this runner (call at the end of main). */
static inline void shm_test_sweep(void)
{
	char prefix[64], path[512];
	struct dirent *e;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "outboxd-test-%d-", (int)shm_test_runner_pid);
	if ((d = opendir("/dev/shm"))) {
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, prefix, strlen(prefix))) {
				snprintf(path, sizeof(path), "/%s", e->d_name);
				shm_unlink(path);
			}
		closedir(d);
	}
	if ((d = opendir(shm_test_lock_dir))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", shm_test_lock_dir, e->d_name);
				unlink(path);
			}
		closedir(d);
		rmdir(shm_test_lock_dir);
	}
}

/* Wait for pid; returns its wait status. */
static inline int shm_test_reap(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

/* Anonymous shared memory for test bookkeeping across fork. */
static inline void *shm_test_shared(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

#endif
