/*
 * segment.h - create, attach, validate and look up the outboxd segment.
 *
 * The supervisor calls, in this order:
 *
 *	int lock = shm_instance_lock(instance, NULL, &err);   refuse if < 0
 *	shm_segment_create(&seg, instance, &cfg, &err);       state INIT, built
 *	shm_segment_set_ready(&seg);                          release-store READY
 *	... fork children (they inherit seg and lock, and must not close lock) ...
 *	shm_segment_heartbeat(&seg);                          ~1/s
 *	shm_segment_mark_dead(&seg); shm_segment_unlink(instance);
 *	shm_segment_detach(&seg); close(lock);
 *
 * outboxctl calls shm_segment_attach(&seg, instance, SHM_ATTACH_RDONLY, &err):
 * O_RDONLY + PROT_READ, so it physically cannot write. Forked children use
 * the supervisor's struct shm_segment as is (the mapping is inherited).
 *
 * Errors (0 or negative, with err filled):
 *	-EINVAL    bad instance name or config (message names the field)
 *	-ENOENT    "no instance 'x' running"
 *	-EPROTO    "incompatible layout: daemon %u, tool %u" or any other
 *	           header/TOC inconsistency (message says which)
 *	-EAGAIN    "daemon starting" (state INIT)
 *	-ESHUTDOWN "instance 'x' is shutting down" (state DEAD)
 *	-EEXIST    segment exists (create without prior unlink)
 *	-ENOSPC    tmpfs full at posix_fallocate (never a later SIGBUS)
 *	-EWOULDBLOCK (shm_instance_lock) another supervisor or one of its
 *	           children still holds the instance lock
 *	-errno     anything else from the system
 */
#ifndef OUTBOX_SHM_SEGMENT_H
#define OUTBOX_SHM_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/shm/layout.h"

#define SHM_INSTANCE_MAX 32 /* instance names: [A-Za-z0-9_-]{1,32} */
#define SHM_NAME_MAX     (sizeof("/outboxd-") + SHM_INSTANCE_MAX)

/* What the layout is sized from; everything else is fixed. */
struct shm_config {
	uint32_t n_workers;     /* 1..SHM_MAX_WORKERS */
	uint32_t ring_capacity; /* power of two, SHM_RING_MIN..MAX_CAPACITY */
	uint32_t fee_slots;     /* SHM_FEE_MIN_SLOTS..SHM_FEE_MAX_SLOTS */
};
#define SHM_CONFIG_DEFAULT                                                                         \
	{                                                                                          \
		4, 1024, 4                                                                         \
	}

enum shm_attach_flags {
	SHM_ATTACH_RDONLY = 1 << 0, /* O_RDONLY + PROT_READ (outboxctl) */
};

/*
 * Process-local handle. Every section pointer below was bounds-checked
 * once at create/attach (shm_section_get); counts are copied from the TOC
 * so a later scribble on the TOC cannot move them.
 */
struct shm_segment {
	void *base;              /* mapping; NULL when detached */
	size_t size;             /* mapped bytes == header total_size */
	int readonly;            /* mapped PROT_READ */
	char name[SHM_NAME_MAX]; /* "/outboxd-<instance>" */
	uint64_t instance_id;    /* header instance_id at attach */
	struct shm_header *hdr;
	uint32_t n_workers, n_procs, ring_capacity, fee_slots;
	struct shm_proc_slot *procs;   /* [n_procs] */
	struct shm_stats_block *stats; /* [n_procs] */
	size_t stats_stride;
	struct shm_qsbr_token *qsbr_token;    /* [1] */
	struct shm_qsbr_reader *qsbr_readers; /* [n_procs] */
	struct shm_fee_ctl *fee_ctl;          /* [1] */
	struct shm_fee_slot *fee_slots_base;  /* [fee_slots] */
	unsigned char *rings;                 /* [2 * n_workers], ring_stride apart */
	size_t ring_stride;
	struct shm_doorbell *doorbells; /* [n_workers] */
	struct shm_inflight *inflight;  /* [n_workers] */
};

/* Validate an instance name and format "/outboxd-<instance>" into buf. */
int shm_segment_name(const char *instance, char *buf, size_t len, struct outbox_error *err);

/* Validate cfg and compute the total segment size (overflow-checked). */
int shm_segment_size(const struct shm_config *cfg, size_t *out, struct outbox_error *err);

/*
 * Create the segment: shm_open(O_CREAT|O_EXCL, 0600), ftruncate,
 * posix_fallocate, mmap MAP_SHARED, fill header + TOC + sections (all
 * rings empty, QSBR readers offline, no snapshot published), state INIT.
 * Does NOT unlink a stale segment: call shm_segment_unlink() first while
 * holding the instance lock. On failure nothing is left behind.
 */
int shm_segment_create(struct shm_segment *seg, const char *instance, const struct shm_config *cfg,
		       struct outbox_error *err);

/* Release-store state READY: attachers may now use the segment. */
void shm_segment_set_ready(struct shm_segment *seg);

/* Store the supervisor's CLOCK_MONOTONIC heartbeat (header and proc slot 0). */
void shm_segment_heartbeat(struct shm_segment *seg);

/* Release-store state DEAD (clean shutdown). */
void shm_segment_mark_dead(struct shm_segment *seg);

/*
 * Attach by name, validate the header (magic, major, endian, word size,
 * cacheline, header size, total size vs fstat, state READY) and every TOC
 * entry we use, and fill seg. flags: enum shm_attach_flags.
 */
int shm_segment_attach(struct shm_segment *seg, const char *instance, unsigned flags,
		       struct outbox_error *err);

/*
 * The checks of shm_segment_attach on an arbitrary buffer of `size` bytes
 * (a mapping, or a test's malloc'd copy): header then sections. On success
 * seg's section pointers point into base (seg->base = base, no mapping
 * owned: do not detach). Pure; used by attach and by the tests.
 */
int shm_segment_validate(struct shm_segment *seg, void *base, size_t size,
			 struct outbox_error *err);

/*
 * Look up section `id` in a validated header and check it: present,
 * version >= min_version, stride >= min_stride and a multiple of 8,
 * offset a multiple of SHM_ALIGN and >= header_size, count*stride does not
 * overflow, offset + count*stride <= total_size. Returns the section start
 * and sets *count, or NULL with err filled (-EPROTO).
 */
void *shm_section_get(void *base, size_t size, enum shm_section_id id, uint32_t min_version,
		      size_t min_stride, uint32_t *count, size_t *stride, struct outbox_error *err);

/* munmap (only if seg owns a mapping) and clear seg. */
void shm_segment_detach(struct shm_segment *seg);

/* shm_unlink("/outboxd-<instance>"); 0 also when it did not exist. */
int shm_segment_unlink(const char *instance);

/*
 * The stale-segment interlock. Open (creating, 0600) <dir>/outboxd-<instance>.lock,
 * take flock(LOCK_EX|LOCK_NB) and write our pid into it. The fd is NOT
 * close-on-exec and must be inherited by every child, which never touches
 * it: the lock belongs to the open file description, so it stays held while
 * ANY process of the group lives, and a second supervisor gets -EWOULDBLOCK
 * ("instance 'x' is locked by pid N or one of its children") until the last
 * old process is gone. dir NULL means shm_lock_dir(). Returns the fd.
 */
int shm_instance_lock(const char *instance, const char *dir, struct outbox_error *err);

/* Pid recorded in the lock file (advisory), or a negative code. */
int shm_instance_lock_pid(const char *instance, const char *dir);

/*
 * Default lock directory: $OUTBOX_RUN_DIR if set, else /run/outboxd when it
 * exists or can be created (0700), else /tmp.
 */
const char *shm_lock_dir(void);

#endif
