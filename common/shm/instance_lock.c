/*
 * instance_lock.c - the stale-segment interlock: one flock per instance.
 *
 * The supervisor takes flock(LOCK_EX|LOCK_NB) on <dir>/<instance>.lock
 * before it touches the segment and keeps the fd open, without
 * close-on-exec, in itself and in every child. flock(2) locks belong to the
 * open file description, which fork() shares: the lock is released only when
 * the LAST process holding a duplicate closes it or dies. So while any
 * process of an old group (say an orphaned worker whose supervisor was
 * SIGKILLed) still runs, a new supervisor gets EWOULDBLOCK and refuses to
 * start; once it holds the lock, any existing segment is stale by
 * construction and may be unlinked and recreated. This replaces PostgreSQL's
 * SysV attach-count check.
 *
 * The pid written into the file is advisory (pid reuse) and for messages
 * and for outboxctl's control signals only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/shm/segment.h"

const char *shm_lock_dir(void)
{
	const char *d = getenv("OUTBOX_RUN_DIR");

	if (d && *d)
		return d;
	if (mkdir("/run/outboxd", 0700) == 0 || errno == EEXIST) {
		if (access("/run/outboxd", W_OK | X_OK) == 0)
			return "/run/outboxd";
	}
	return "/tmp";
}

static int lock_path(const char *instance, const char *dir, char *buf, size_t len,
		     struct outbox_error *err)
{
	char name[SHM_NAME_MAX];
	int rc = shm_segment_name(instance, name, sizeof(name), err);

	if (rc)
		return rc;
	if (!dir)
		dir = shm_lock_dir();
	if ((size_t)snprintf(buf, len, "%s/outboxd-%s.lock", dir, instance) >= len)
		return outbox_error_set(err, -ENAMETOOLONG, "lock_dir", "'%.200s' is too long",
					dir);
	return 0;
}

static int read_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long v;
	char *end;

	if (n <= 0)
		return -ENOENT;
	buf[n] = 0;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v <= 0 || v > INT_MAX)
		return -EPROTO;
	return (int)v;
}

int shm_instance_lock(const char *instance, const char *dir, struct outbox_error *err)
{
	char path[PATH_MAX], buf[32];
	int fd, rc, n;

	if ((rc = lock_path(instance, dir, path, sizeof(path), err)))
		return rc;
	/* no O_CLOEXEC: children must inherit (and never touch) this fd */
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = -errno;
		return outbox_error_set(err, rc, "lock", "open '%s': %s", path, strerror(-rc));
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		if (rc == -EWOULDBLOCK) {
			int pid = read_pid(fd);

			close(fd);
			return outbox_error_set(
				err, rc, "instance",
				"instance '%s' is locked by pid %d or one of its children",
				instance, pid);
		}
		close(fd);
		return outbox_error_set(err, rc, "lock", "flock '%s': %s", path, strerror(-rc));
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		rc = -errno;
		close(fd);
		return outbox_error_set(err, rc, "lock", "write '%s': %s", path, strerror(-rc));
	}
	return fd;
}

int shm_instance_lock_pid(const char *instance, const char *dir)
{
	char path[PATH_MAX];
	int fd, rc;

	if ((rc = lock_path(instance, dir, path, sizeof(path), NULL)))
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	rc = read_pid(fd);
	close(fd);
	return rc;
}
