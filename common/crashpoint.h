/*
 * crashpoint.h - named kill points for crash tests.
 *
 * CRASHPOINT("after_attempt_commit") raises SIGKILL when the environment
 * variable CRASHPOINT equals the name, so a test can kill a worker at an
 * exact step (after the write-ahead commit, after the send, ...) and prove
 * the op still executes exactly once. The check is compiled only when the
 * build defines WITH_CRASHPOINTS; otherwise it is an empty statement.
 * getenv() is read on every pass on purpose: a respawned worker inherits
 * the same environment, so tests arm a point for one process life by
 * setting CRASHPOINT_ONCE_FILE too: the first process to reach the point
 * creates that file (O_EXCL) and dies; later ones find it and go on.
 */
#ifndef OUTBOX_COMMON_CRASHPOINT_H
#define OUTBOX_COMMON_CRASHPOINT_H

#ifdef WITH_CRASHPOINTS
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void crashpoint_hit(const char *name)
{
	const char *want = getenv("CRASHPOINT");
	const char *once = getenv("CRASHPOINT_ONCE_FILE");

	if (!want || strcmp(want, name) != 0)
		return;
	if (once && *once) {
		int fd = open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return;
		close(fd);
	}
	raise(SIGKILL);
}
#define CRASHPOINT(name) crashpoint_hit(name)
#else
#define CRASHPOINT(name) ((void)0)
#endif

#endif
