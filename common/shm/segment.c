/*
 * segment.c - create, attach and validate the outboxd segment.
 *
 * Notes on synchronisation
 * ------------------------
 * The supervisor builds the whole segment while state is INIT and nobody
 * else can have it open usefully (attachers refuse INIT with "daemon
 * starting"), then stores READY with release ordering; an attacher loads
 * state with acquire ordering before trusting anything else, which makes
 * every byte written during the build visible to it (SQLite's isInit idea).
 * After READY the header changes only in heartbeat_ns and state, both
 * single atomic words.
 *
 * A read-only attacher must assume the segment may be garbage (a different
 * build, a half-written file, a scribbling bug): every header field and
 * every TOC row it relies on is range-checked here before any pointer into
 * the segment is formed, and the counts are copied into the process-local
 * struct shm_segment so they cannot change under the reader afterwards.
 *
 * Sizes are computed with overflow-checked arithmetic (__builtin_*_overflow)
 * and every section starts on a SHM_ALIGN boundary, so each writer's hot
 * words sit on lines of their own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/shm/segment.h"
#include "common/clock.h"

static int instance_valid(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= SHM_INSTANCE_MAX)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return 0;
	}
	return n > 0;
}

int shm_segment_name(const char *instance, char *buf, size_t len, struct outbox_error *err)
{
	if (!instance_valid(instance))
		return outbox_error_set(
			err, -EINVAL, "instance",
			"'%.40s' is not a valid instance name ([A-Za-z0-9_-]{1,32})",
			instance ? instance : "(null)");
	if ((size_t)snprintf(buf, len, "/outboxd-%s", instance) >= len)
		return outbox_error_set(err, -EINVAL, "instance", "name buffer too small");
	return 0;
}

/* ---- sizing ---- */

/* The nine sections in TOC order: id, stride, count. */
struct sec_plan {
	enum shm_section_id id;
	uint64_t stride;
	uint32_t count;
};

#define N_SECTIONS 9

static uint64_t ring_stride(uint32_t capacity)
{
	/* capacity <= 2^20 and records are 64 bytes: cannot overflow */
	return sizeof(struct shm_ring) + (uint64_t)capacity * sizeof(struct shm_hint);
}

static void plan_sections(const struct shm_config *cfg, struct sec_plan p[N_SECTIONS])
{
	uint32_t n_procs = SHM_PROC_WORKER0 + cfg->n_workers;
	const struct sec_plan plan[N_SECTIONS] = {
		{SHM_SEC_PROCS, sizeof(struct shm_proc_slot), n_procs},
		{SHM_SEC_STATS, sizeof(struct shm_stats_block), n_procs},
		{SHM_SEC_QSBR_TOKEN, sizeof(struct shm_qsbr_token), 1},
		{SHM_SEC_QSBR_READERS, sizeof(struct shm_qsbr_reader), n_procs},
		{SHM_SEC_FEE_CTL, sizeof(struct shm_fee_ctl), 1},
		{SHM_SEC_FEE_SLOTS, sizeof(struct shm_fee_slot), cfg->fee_slots},
		{SHM_SEC_RINGS, ring_stride(cfg->ring_capacity), SHM_N_PRODUCERS * cfg->n_workers},
		{SHM_SEC_DOORBELLS, sizeof(struct shm_doorbell), cfg->n_workers},
		{SHM_SEC_INFLIGHT, sizeof(struct shm_inflight), cfg->n_workers},
	};
	memcpy(p, plan, sizeof(plan));
}

/* *off = align_up(*off) and reserve count*stride bytes; -EOVERFLOW on overflow. */
static int reserve(uint64_t *off, uint64_t stride, uint64_t count, uint64_t *start)
{
	uint64_t bytes, s;

	if (__builtin_add_overflow(*off, SHM_ALIGN - 1, &s))
		return -EOVERFLOW;
	s &= ~(uint64_t)(SHM_ALIGN - 1);
	if (__builtin_mul_overflow(stride, count, &bytes) || __builtin_add_overflow(s, bytes, off))
		return -EOVERFLOW;
	*start = s;
	return 0;
}

static int config_check(const struct shm_config *cfg, struct outbox_error *err)
{
	if (!cfg->n_workers || cfg->n_workers > SHM_MAX_WORKERS)
		return outbox_error_set(err, -EINVAL, "n_workers", "%u is out of range 1..%u",
					cfg->n_workers, SHM_MAX_WORKERS);
	if (cfg->ring_capacity < SHM_RING_MIN_CAPACITY ||
	    cfg->ring_capacity > SHM_RING_MAX_CAPACITY ||
	    (cfg->ring_capacity & (cfg->ring_capacity - 1)))
		return outbox_error_set(err, -EINVAL, "ring_capacity",
					"%u is not a power of two in %u..%u", cfg->ring_capacity,
					SHM_RING_MIN_CAPACITY, SHM_RING_MAX_CAPACITY);
	if (cfg->fee_slots < SHM_FEE_MIN_SLOTS || cfg->fee_slots > SHM_FEE_MAX_SLOTS)
		return outbox_error_set(err, -EINVAL, "fee_slots", "%u is out of range %u..%u",
					cfg->fee_slots, SHM_FEE_MIN_SLOTS, SHM_FEE_MAX_SLOTS);
	return 0;
}

/* Lay out the TOC (when toc != NULL) and compute the total size. */
static int layout(const struct shm_config *cfg, struct shm_section *toc, uint64_t *total)
{
	struct sec_plan p[N_SECTIONS];
	uint64_t off = SHM_HEADER_SIZE, start;

	plan_sections(cfg, p);
	for (int i = 0; i < N_SECTIONS; i++) {
		if (reserve(&off, p[i].stride, p[i].count, &start))
			return -EOVERFLOW;
		if (toc)
			toc[i] = (struct shm_section){.id = p[i].id,
						      .version = SHM_SEC_VERSION,
						      .offset = start,
						      .stride = p[i].stride,
						      .count = p[i].count};
	}
	if (reserve(&off, 1, 0, &start))
		return -EOVERFLOW;
	*total = start;
	return 0;
}

int shm_segment_size(const struct shm_config *cfg, size_t *out, struct outbox_error *err)
{
	uint64_t total;
	int rc = config_check(cfg, err);

	if (rc)
		return rc;
	if (layout(cfg, NULL, &total) || total > SIZE_MAX)
		return outbox_error_set(err, -EOVERFLOW, "shm", "segment size overflows");
	*out = (size_t)total;
	return 0;
}

/* ---- validation ---- */

void *shm_section_get(void *base, size_t size, enum shm_section_id id, uint32_t min_version,
		      size_t min_stride, uint32_t *count, size_t *stride, struct outbox_error *err)
{
	const struct shm_header *h = base;
	uint32_t n = h->n_sections;
	uint64_t bytes, end;

	if (n > SHM_TOC_MAX) {
		outbox_error_set(err, -EPROTO, "toc", "%u sections exceed %u", n, SHM_TOC_MAX);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct shm_section *s = &h->toc[i];

		if (s->id != (uint32_t)id)
			continue;
		if (s->version < min_version) {
			outbox_error_set(err, -EPROTO, "toc", "section %u version %u < %u", id,
					 s->version, min_version);
			return NULL;
		}
		if (s->stride < min_stride || s->stride % 8) {
			outbox_error_set(err, -EPROTO, "toc", "section %u stride %llu < %zu", id,
					 (unsigned long long)s->stride, min_stride);
			return NULL;
		}
		if (s->offset % SHM_ALIGN || s->offset < h->header_size) {
			outbox_error_set(err, -EPROTO, "toc", "section %u offset %llu misplaced",
					 id, (unsigned long long)s->offset);
			return NULL;
		}
		if (__builtin_mul_overflow(s->stride, (uint64_t)s->count, &bytes) ||
		    __builtin_add_overflow(s->offset, bytes, &end) || end > size) {
			outbox_error_set(
				err, -EPROTO, "toc",
				"section %u (offset %llu, %u x %llu) exceeds segment of %zu bytes",
				id, (unsigned long long)s->offset, s->count,
				(unsigned long long)s->stride, size);
			return NULL;
		}
		*count = s->count;
		if (stride)
			*stride = (size_t)s->stride;
		return (unsigned char *)base + s->offset;
	}
	outbox_error_set(err, -EPROTO, "toc", "section %u missing", id);
	return NULL;
}

static int header_check(const struct shm_header *h, size_t size, int allow_init,
			struct outbox_error *err)
{
	uint32_t state;

	if (size < SHM_HEADER_SIZE)
		return outbox_error_set(err, -EPROTO, "shm", "segment of %zu bytes is too small",
					size);
	if (h->magic != SHM_MAGIC)
		return outbox_error_set(err, -EPROTO, "magic", "0x%016llx: not an outboxd segment",
					(unsigned long long)h->magic);
	if (h->major != SHM_LAYOUT_MAJOR)
		return outbox_error_set(err, -EPROTO, "major",
					"incompatible layout: daemon %u, tool %u", h->major,
					SHM_LAYOUT_MAJOR);
	if (h->endian != SHM_ENDIAN_MARK || h->word_size != sizeof(void *) ||
	    h->cacheline != SHM_CACHELINE)
		return outbox_error_set(err, -EPROTO, "endian",
					"incompatible platform: endian 0x%04x word %u line %u",
					h->endian, h->word_size, h->cacheline);
	if (h->header_size < SHM_HEADER_SIZE || h->header_size % SHM_ALIGN || h->header_size > size)
		return outbox_error_set(err, -EPROTO, "header_size", "%u is invalid",
					h->header_size);
	if (h->total_size != size)
		return outbox_error_set(err, -EPROTO, "total_size",
					"header says %llu bytes, segment has %zu",
					(unsigned long long)h->total_size, size);
	state = atomic_load_explicit(&((struct shm_header *)h)->state, memory_order_acquire);
	if (state == SHM_INIT && !allow_init)
		return outbox_error_set(err, -EAGAIN, "state", "daemon starting");
	if (state == SHM_DEAD)
		return outbox_error_set(err, -ESHUTDOWN, "state",
					"instance '%.32s' is shutting down", h->instance);
	if (state != SHM_READY && state != SHM_INIT)
		return outbox_error_set(err, -EPROTO, "state", "%u is unknown", state);
	if (!memchr(h->instance, 0, sizeof(h->instance)))
		return outbox_error_set(err, -EPROTO, "instance", "not terminated");
	if (!h->n_workers || h->n_workers > SHM_MAX_WORKERS ||
	    h->n_procs != SHM_PROC_WORKER0 + h->n_workers)
		return outbox_error_set(err, -EPROTO, "n_workers", "%u/%u is invalid", h->n_workers,
					h->n_procs);
	if (h->ring_capacity < SHM_RING_MIN_CAPACITY || h->ring_capacity > SHM_RING_MAX_CAPACITY ||
	    (h->ring_capacity & (h->ring_capacity - 1)))
		return outbox_error_set(err, -EPROTO, "ring_capacity", "%u is invalid",
					h->ring_capacity);
	if (h->fee_slots < SHM_FEE_MIN_SLOTS || h->fee_slots > SHM_FEE_MAX_SLOTS)
		return outbox_error_set(err, -EPROTO, "fee_slots", "%u is invalid", h->fee_slots);
	return 0;
}

/* Fetch section id, requiring exactly `want` elements. */
static void *section(void *base, size_t size, enum shm_section_id id, size_t min_stride,
		     uint32_t want, size_t *stride, struct outbox_error *err)
{
	uint32_t count;
	void *p = shm_section_get(base, size, id, SHM_SEC_VERSION, min_stride, &count, stride, err);

	if (p && count != want) {
		outbox_error_set(err, -EPROTO, "toc", "section %u has %u elements, expected %u", id,
				 count, want);
		return NULL;
	}
	return p;
}

static int rings_check(struct shm_segment *seg, struct outbox_error *err)
{
	for (uint32_t i = 0; i < SHM_N_PRODUCERS * seg->n_workers; i++) {
		const struct shm_ring *r =
			(const void *)(seg->rings + (size_t)i * seg->ring_stride);

		if (r->capacity != seg->ring_capacity || r->rec_size != sizeof(struct shm_hint) ||
		    r->producer != i / seg->n_workers || r->worker != i % seg->n_workers)
			return outbox_error_set(err, -EPROTO, "ring",
						"ring %u header is inconsistent", i);
	}
	return 0;
}

static int validate(struct shm_segment *seg, void *base, size_t size, int building,
		    struct outbox_error *err)
{
	struct shm_header *h = base;
	int rc = header_check(h, size, building, err);

	if (rc)
		return rc;
	seg->base = base;
	seg->size = size;
	seg->hdr = h;
	seg->instance_id = h->instance_id;
	seg->n_workers = h->n_workers;
	seg->n_procs = h->n_procs;
	seg->ring_capacity = h->ring_capacity;
	seg->fee_slots = h->fee_slots;
	if (!(seg->procs = section(base, size, SHM_SEC_PROCS, sizeof(struct shm_proc_slot),
				   seg->n_procs, NULL, err)) ||
	    !(seg->stats = section(base, size, SHM_SEC_STATS, sizeof(struct shm_stats_block),
				   seg->n_procs, &seg->stats_stride, err)) ||
	    !(seg->qsbr_token = section(base, size, SHM_SEC_QSBR_TOKEN,
					sizeof(struct shm_qsbr_token), 1, NULL, err)) ||
	    !(seg->qsbr_readers =
		      section(base, size, SHM_SEC_QSBR_READERS, sizeof(struct shm_qsbr_reader),
			      seg->n_procs, NULL, err)) ||
	    !(seg->fee_ctl = section(base, size, SHM_SEC_FEE_CTL, sizeof(struct shm_fee_ctl), 1,
				     NULL, err)) ||
	    !(seg->fee_slots_base =
		      section(base, size, SHM_SEC_FEE_SLOTS, sizeof(struct shm_fee_slot),
			      seg->fee_slots, NULL, err)) ||
	    !(seg->rings = section(base, size, SHM_SEC_RINGS, ring_stride(seg->ring_capacity),
				   SHM_N_PRODUCERS * seg->n_workers, &seg->ring_stride, err)) ||
	    !(seg->doorbells = section(base, size, SHM_SEC_DOORBELLS, sizeof(struct shm_doorbell),
				       seg->n_workers, NULL, err)) ||
	    !(seg->inflight = section(base, size, SHM_SEC_INFLIGHT, sizeof(struct shm_inflight),
				      seg->n_workers, NULL, err)))
		return err ? err->code : -EPROTO;
	/* Strides may grow (minor bump): only stats and rings are indexed by stride. */
	if (seg->stats_stride % SHM_ALIGN || seg->ring_stride % SHM_ALIGN)
		return outbox_error_set(err, -EPROTO, "toc", "stride not %u-aligned", SHM_ALIGN);
	/* while building, the ring headers are not written yet */
	return building ? 0 : rings_check(seg, err);
}

int shm_segment_validate(struct shm_segment *seg, void *base, size_t size, struct outbox_error *err)
{
	struct outbox_error local = OUTBOX_ERROR_INIT;
	int rc;

	memset(seg, 0, sizeof(*seg));
	rc = validate(seg, base, size, 0, err ? err : &local);
	if (rc)
		memset(seg, 0, sizeof(*seg));
	return rc;
}

/* ---- creation ---- */

static int alloc_backing(int fd, size_t size)
{
	int rc;

	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	rc = posix_fallocate(fd, 0, (off_t)size);
	return rc == EINVAL || rc == EOPNOTSUPP ? 0 : -rc;
}

static void build(struct shm_segment *seg, const char *instance, const struct shm_config *cfg,
		  uint64_t total)
{
	struct shm_header *h = seg->base;
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = mono_ns() ^ ((uint64_t)getpid() << 32);
	h->magic = SHM_MAGIC;
	h->major = SHM_LAYOUT_MAJOR;
	h->minor = SHM_LAYOUT_MINOR;
	h->endian = SHM_ENDIAN_MARK;
	h->word_size = sizeof(void *);
	h->cacheline = SHM_CACHELINE;
	h->header_size = SHM_HEADER_SIZE;
	h->n_sections = N_SECTIONS;
	h->total_size = total;
	h->instance_id = id;
	h->supervisor_pid = getpid();
	atomic_store_explicit(&h->state, SHM_INIT, memory_order_relaxed);
	atomic_store_explicit(&h->heartbeat_ns, mono_ns(), memory_order_relaxed);
	h->created_at_ms = wall_ms();
	h->n_workers = cfg->n_workers;
	h->n_procs = SHM_PROC_WORKER0 + cfg->n_workers;
	h->ring_capacity = cfg->ring_capacity;
	h->fee_slots = cfg->fee_slots;
	snprintf(h->instance, sizeof(h->instance), "%s", instance);
	layout(cfg, h->toc, &total);
}

/* Section contents after the header is written; the memory is already zero. */
static void build_sections(struct shm_segment *seg)
{
	for (uint32_t p = 0; p < seg->n_procs; p++) {
		struct shm_proc_slot *s = &seg->procs[p];
		uint32_t role = p < SHM_PROC_WORKER0 ? p : SHM_ROLE_WORKER;

		atomic_store_explicit(&s->role, role, memory_order_relaxed);
		atomic_store_explicit(&s->index, p < SHM_PROC_WORKER0 ? 0 : p - SHM_PROC_WORKER0,
				      memory_order_relaxed);
		atomic_store_explicit(&s->last_exit_status, -1, memory_order_relaxed);
	}
	atomic_store_explicit(&seg->qsbr_token->token, 1, memory_order_relaxed);
	for (uint32_t i = 0; i < SHM_N_PRODUCERS * seg->n_workers; i++) {
		struct shm_ring *r = (void *)(seg->rings + (size_t)i * seg->ring_stride);

		r->capacity = seg->ring_capacity;
		r->rec_size = sizeof(struct shm_hint);
		r->producer = i / seg->n_workers;
		r->worker = i % seg->n_workers;
	}
}

int shm_segment_create(struct shm_segment *seg, const char *instance, const struct shm_config *cfg,
		       struct outbox_error *err)
{
	struct outbox_error local = OUTBOX_ERROR_INIT;
	size_t size;
	void *base;
	int fd, rc;

	memset(seg, 0, sizeof(*seg));
	err = err ? err : &local;
	if ((rc = shm_segment_name(instance, seg->name, sizeof(seg->name), err)) ||
	    (rc = shm_segment_size(cfg, &size, err)))
		return rc;
	fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		return outbox_error_set(err, rc, "shm", "create '%s': %s", seg->name,
					strerror(-rc));
	}
	if (fchmod(fd, 0600) < 0 || (rc = alloc_backing(fd, size)) < 0) {
		rc = rc < 0 ? rc : -errno;
		outbox_error_set(err, rc, "shm", "allocate %zu bytes for '%s': %s", size, seg->name,
				 strerror(-rc));
		goto out_unlink;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		outbox_error_set(err, rc, "shm", "mmap '%s': %s", seg->name, strerror(-rc));
		goto out_unlink;
	}
	close(fd);
	seg->base = base;
	seg->size = size;
	build(seg, instance, cfg, size);
	rc = validate(seg, base, size, 1, err);
	if (rc) /* a bug in build(): never expected */
		goto out_unmap;
	build_sections(seg);
	return 0;

out_unmap:
	munmap(base, size);
	shm_unlink(seg->name);
	memset(seg, 0, sizeof(*seg));
	return rc;
out_unlink:
	close(fd);
	shm_unlink(seg->name);
	memset(seg, 0, sizeof(*seg));
	return rc;
}

void shm_segment_set_ready(struct shm_segment *seg)
{
	atomic_store_explicit(&seg->hdr->state, SHM_READY, memory_order_release);
}

void shm_segment_mark_dead(struct shm_segment *seg)
{
	atomic_store_explicit(&seg->hdr->state, SHM_DEAD, memory_order_release);
}

void shm_segment_heartbeat(struct shm_segment *seg)
{
	uint64_t now = mono_ns();

	atomic_store_explicit(&seg->hdr->heartbeat_ns, now, memory_order_relaxed);
	atomic_store_explicit(&seg->procs[SHM_PROC_SUPERVISOR].heartbeat_ns, now,
			      memory_order_relaxed);
}

/* ---- attach ---- */

int shm_segment_attach(struct shm_segment *seg, const char *instance, unsigned flags,
		       struct outbox_error *err)
{
	struct outbox_error local = OUTBOX_ERROR_INIT;
	int ro = !!(flags & SHM_ATTACH_RDONLY), fd, rc;
	char name[SHM_NAME_MAX];
	struct stat st;
	void *base;

	memset(seg, 0, sizeof(*seg));
	err = err ? err : &local;
	if ((rc = shm_segment_name(instance, name, sizeof(name), err)))
		return rc;
	fd = shm_open(name, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			return outbox_error_set(err, rc, "instance", "no instance '%s' running",
						instance);
		return outbox_error_set(err, rc, "shm", "open '%s': %s", name, strerror(-rc));
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return outbox_error_set(err, rc, "shm", "stat '%s': %s", name, strerror(-rc));
	}
	if ((size_t)st.st_size < SHM_HEADER_SIZE) {
		close(fd);
		/* the supervisor is between shm_open and ftruncate */
		return outbox_error_set(err, st.st_size ? -EPROTO : -EAGAIN, "state",
					st.st_size ? "segment '%s' too small" : "daemon starting",
					name);
	}
	base = mmap(NULL, (size_t)st.st_size, ro ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	rc = base == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc)
		return outbox_error_set(err, rc, "shm", "mmap '%s': %s", name, strerror(-rc));
	rc = validate(seg, base, (size_t)st.st_size, 0, err);
	if (rc) {
		munmap(base, (size_t)st.st_size);
		memset(seg, 0, sizeof(*seg));
		return rc;
	}
	seg->readonly = ro;
	memcpy(seg->name, name, sizeof(name));
	return 0;
}

void shm_segment_detach(struct shm_segment *seg)
{
	if (seg->base && seg->name[0])
		munmap(seg->base, seg->size);
	memset(seg, 0, sizeof(*seg));
}

int shm_segment_unlink(const char *instance)
{
	char name[SHM_NAME_MAX];
	int rc = shm_segment_name(instance, name, sizeof(name), NULL);

	if (rc)
		return rc;
	if (shm_unlink(name) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
