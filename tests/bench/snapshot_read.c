/*
 * snapshot_read.c - what one fee snapshot read costs, in ns, from shared
 * memory versus a GET of the same serialized snapshot (its 64 bytes) from
 * the local Redis at 127.0.0.1:6379. Prints JSON lines; asserts nothing.
 *
 *	build-<x>/bench_snapshot_read [iterations]
 *
 * Paths measured:
 *	qsbr_in_place         qsbr_quiescent + fee_snapshot_get + use fields
 *	qsbr_in_place_writer  same while another process publishes 1000/s
 *	seqcount_copy         fee_snapshot_copy (the outboxctl path), rw map
 *	seqcount_copy_ro      fee_snapshot_copy through a PROT_READ attach
 *	doorbell_ring_idle    doorbell_ring when the owner is busy (no write)
 *	doorbell_ring_write   doorbell_ring when the owner sleeps (eventfd write)
 *	redis_get             GET + copy + checksum check (skipped, with a JSON
 *	                      line saying why, if Redis is unreachable)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_HIREDIS
#include <hiredis.h>
#endif

#include "common/clock.h"
#include "common/shm/doorbell.h"
#include "common/shm/fee_snapshot.h"

static char inst[SHM_INSTANCE_MAX + 1];
static struct shm_segment seg;
static volatile uint64_t sink;

static struct fee_snapshot snap_make(uint64_t i)
{
	return (struct fee_snapshot){.recommended_base_fee = 100 + i,
				     .aggressive_base_fee = 250 + i,
				     .congestion = FEE_CONGESTION_ELEVATED,
				     .capacity_ppm = 730000,
				     .sampled_at_ms = wall_ms(),
				     .ttl_ms = 10000,
				     .latest_ledger = 51234567,
				     .latest_ledger_close_time = (uint64_t)time(NULL)};
}

static void report(const char *path, uint64_t n, uint64_t ns)
{
	printf("{\"bench\":\"snapshot_read\",\"path\":\"%s\",\"iterations\":%llu,"
	       "\"ns_per_op\":%.1f}\n",
	       path, (unsigned long long)n, (double)ns / (double)n);
	fflush(stdout);
}

static void bench_in_place(const char *path, uint64_t n)
{
	struct fee_reader r;
	uint64_t t0, acc = 0;

	fee_reader_init(&r, &seg, SHM_PROC_WORKER0);
	t0 = mono_ns();
	for (uint64_t i = 0; i < n; i++) {
		const struct fee_snapshot *s;

		qsbr_quiescent(&r.q, r.me);
		s = fee_snapshot_get(&r);
		acc += s->recommended_base_fee + s->aggressive_base_fee + s->latest_ledger;
	}
	report(path, n, mono_ns() - t0);
	qsbr_offline(&r.q, r.me);
	sink = acc;
}

static void bench_copy(const char *path, const struct shm_segment *s, uint64_t n)
{
	struct fee_snapshot out;
	uint64_t t0 = mono_ns(), acc = 0, fails = 0;

	for (uint64_t i = 0; i < n; i++) {
		fails += fee_snapshot_copy(s, &out, FEE_COPY_MAX_TRIES, NULL) != 0;
		acc += out.recommended_base_fee;
	}
	report(path, n, mono_ns() - t0);
	if (fails)
		printf("{\"bench\":\"snapshot_read\",\"path\":\"%s\",\"failed_copies\":%llu}\n",
		       path, (unsigned long long)fails);
	sink = acc;
}

static void bench_doorbell(uint64_t n)
{
	struct doorbell_fds fds;
	struct shm_doorbell *db = shm_doorbell_get(&seg, 0);
	uint64_t t0;

	if (doorbell_fds_create(&fds, 1, NULL))
		return;
	t0 = mono_ns();
	for (uint64_t i = 0; i < n; i++)
		doorbell_ring(db, fds.fd[0]);
	report("doorbell_ring_idle", n, mono_ns() - t0);
	doorbell_prepare(db);
	t0 = mono_ns();
	for (uint64_t i = 0; i < n / 10; i++)
		doorbell_ring(db, fds.fd[0]);
	report("doorbell_ring_write", n / 10, mono_ns() - t0);
	doorbell_done(db, fds.fd[0]);
	doorbell_fds_close(&fds);
}

static void skip(const char *path, const char *why)
{
	printf("{\"bench\":\"snapshot_read\",\"path\":\"%s\",\"skipped\":true,\"reason\":\"%s\"}\n",
	       path, why);
}

static void bench_redis(uint64_t n)
{
#ifdef HAVE_HIREDIS
	struct timeval tv = {0, 300000};
	struct fee_snapshot in = snap_make(7), out;
	redisContext *c = redisConnectWithTimeout("127.0.0.1", 6379, tv);
	char key[64];
	uint64_t t0, bad = 0;
	redisReply *rep;

	if (!c || c->err) {
		skip("redis_get", "redis unreachable at 127.0.0.1:6379");
		if (c)
			redisFree(c);
		return;
	}
	redisSetTimeout(c, tv);
	in.generation = 1;
	in.checksum = fee_snapshot_checksum(&in);
	snprintf(key, sizeof(key), "outboxd-bench-snapshot-%d", (int)getpid());
	rep = redisCommand(c, "SET %s %b", key, (const char *)&in, sizeof(in));
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		skip("redis_get", "redis SET failed");
		goto out;
	}
	freeReplyObject(rep);
	t0 = mono_ns();
	for (uint64_t i = 0; i < n; i++) {
		rep = redisCommand(c, "GET %s", key);
		if (!rep || rep->type != REDIS_REPLY_STRING || rep->len != sizeof(out)) {
			bad++;
		} else {
			memcpy(&out, rep->str, sizeof(out));
			bad += out.checksum != fee_snapshot_checksum(&out);
		}
		if (rep)
			freeReplyObject(rep);
	}
	report("redis_get", n, mono_ns() - t0);
	if (bad)
		printf("{\"bench\":\"snapshot_read\",\"path\":\"redis_get\",\"bad_replies\":%llu}"
		       "\n",
		       (unsigned long long)bad);
	rep = redisCommand(c, "DEL %s", key);
	if (rep)
		freeReplyObject(rep);
out:
	redisFree(c);
#else
	(void)n;
	skip("redis_get", "built without hiredis");
#endif
}

static pid_t start_writer(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct fee_publisher p;
		struct timespec ms = {0, 1000000};

		fee_publisher_init(&p, &seg);
		for (uint64_t i = 0;; i++) {
			struct fee_snapshot in = snap_make(i);

			fee_snapshot_publish(&p, &in, 1000, NULL);
			nanosleep(&ms, NULL);
		}
	}
	return pid;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 && atoll(argv[1]) > 0 ? (uint64_t)atoll(argv[1]) : 20000000;
	struct shm_config cfg = SHM_CONFIG_DEFAULT;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct fee_publisher p;
	struct fee_snapshot in = snap_make(1);
	struct shm_segment ro;
	pid_t writer;

	snprintf(inst, sizeof(inst), "bench-%d", (int)getpid());
	if (shm_segment_create(&seg, inst, &cfg, &err)) {
		fprintf(stderr, "bench_snapshot_read: %s\n", err.msg);
		return 1;
	}
	shm_segment_set_ready(&seg);
	fee_publisher_init(&p, &seg);
	fee_snapshot_publish(&p, &in, 0, NULL);
	bench_in_place("qsbr_in_place", n);
	bench_copy("seqcount_copy", &seg, n / 4);
	if (shm_segment_attach(&ro, inst, SHM_ATTACH_RDONLY, &err) == 0) {
		bench_copy("seqcount_copy_ro", &ro, n / 4);
		shm_segment_detach(&ro);
	}
	writer = start_writer();
	bench_in_place("qsbr_in_place_writer", n / 4);
	bench_copy("seqcount_copy_writer", &seg, n / 8);
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	bench_doorbell(n / 10);
	bench_redis(n / 1000 < 20000 ? n / 1000 : 20000);
	shm_segment_detach(&seg);
	shm_segment_unlink(inst);
	return 0;
}
