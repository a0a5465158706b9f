/*
 * main.c - outboxd, the supervisor.
 *
 *	outboxd                 run (configuration from the environment)
 *	outboxd --check-config  validate the configuration and the keys file, exit
 *	outboxd --help          list every variable with its default
 *
 * Exit codes: 0 clean stop, 1 failure, 2 bad configuration / instance
 * already running / a child that cannot run with this configuration.
 *
 * Start-up order (supervisor/README.md, Start-up; common/shm/README.md,
 * Life of a segment): configuration, keys file check, signals blocked and
 * read from a signalfd, instance lock (a second supervisor, or a leftover
 * child of a dead one, makes us refuse), unlink any stale segment (safe: we
 * hold the lock), create the segment (0600, state INIT), doorbell eventfds
 * and the death pipe, READY, then fork the roles of the role table
 * (roles.c) in its order: the oracle, then the workers. The supervisor never talks to Stellar, Kafka,
 * PostgreSQL or HTTP; it watches, restarts and drains.
 *
 * Shutdown: drain (signals.c), state DEAD, shm_unlink, release the lock.
 */
#include "supervisor/supervisor.h"

#include "common/clock.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/shm/proc_table.h"
#include "common/shm/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHM_RING_CAPACITY 1024
#define SHM_FEE_SLOTS     4

static void usage(FILE *f)
{
	fprintf(f, "usage: outboxd [--check-config | --help]\n\n"
		   "Runs the outboxd process group: the supervisor, the fee oracle and\n"
		   "OUTBOX_WORKERS workers, sharing the segment /outboxd-<OUTBOX_INSTANCE>.\n"
		   "SIGTERM/SIGINT drain and stop; SIGHUP reloads the [reload] variables\n"
		   "from OUTBOX_CONFIG_FILE.\n\n");
	config_print_help(f);
}

static bool stale_segment_exists(const char *instance)
{
	char name[SHM_NAME_MAX];
	int fd;

	if (shm_segment_name(instance, name, sizeof(name), NULL))
		return false;
	fd = shm_open(name, O_RDONLY, 0);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Lock, replace a stale segment, create ours, fds for the children. */
static int setup(struct supervisor *s)
{
	struct shm_config shc = {(uint32_t)s->cfg.workers, SHM_RING_CAPACITY, SHM_FEE_SLOTS};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int pipefd[2], rc;

	s->lock_fd = shm_instance_lock(s->cfg.instance, NULL, &err);
	if (s->lock_fd < 0) {
		log_err("refusing to start: %s", err.msg);
		return 2;
	}
	if (stale_segment_exists(s->cfg.instance))
		log_warn("replacing the stale segment of instance '%s' left by an earlier run",
			 s->cfg.instance);
	shm_segment_unlink(s->cfg.instance);
	rc = shm_segment_create(&s->seg, s->cfg.instance, &shc, &err);
	if (rc) {
		log_err("cannot create the shared segment: %s", err.msg);
		return 1;
	}
	rc = doorbell_fds_create(&s->doorbells, (uint32_t)s->cfg.workers, &err);
	if (rc) {
		log_err("cannot create doorbells: %s", err.msg);
		return 1;
	}
	/* The write end is close-on-exec and closed in every child: only we hold it. */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		log_err("pipe: %s", strerror(errno));
		return 1;
	}
	s->death_r = pipefd[0];
	s->death_w = pipefd[1];
	qsbr_init(&s->qsbr, &s->seg);
	s->stats = shm_stats_block(&s->seg, SHM_PROC_SUPERVISOR);
	stats_block_restart(s->stats);
	proc_slot_assign(shm_proc_slot(&s->seg, SHM_PROC_SUPERVISOR), s->pid, 0);
	proc_slot_running(shm_proc_slot(&s->seg, SHM_PROC_SUPERVISOR));
	shm_segment_heartbeat(&s->seg);
	shm_segment_set_ready(&s->seg);
	return 0;
}

static void teardown(struct supervisor *s)
{
	if (s->seg.base) {
		shm_segment_mark_dead(&s->seg);
		shm_segment_unlink(s->cfg.instance);
		shm_segment_detach(&s->seg);
	}
	doorbell_fds_close(&s->doorbells);
	if (s->death_w >= 0)
		close(s->death_w);
	if (s->death_r >= 0)
		close(s->death_r);
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	children_release(s);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
}

static int run(struct supervisor *s)
{
	int rc = signals_setup(s);

	if (rc) {
		log_err("signal setup: %s", strerror(-rc));
		return 1;
	}
	rc = setup(s);
	if (rc)
		return rc;
	rc = children_init(s);
	if (rc) {
		log_err("cannot set up the child table: %s", outbox_error_name(rc));
		return 1;
	}
	log_detail(LOG_LVL_INFO, "started", "instance=%s workers=%lld segment=%s", s->cfg.instance,
		   (long long)s->cfg.workers, s->seg.name);
	if (!s->cfg.kafka_brokers[0])
		log_info("OUTBOX_KAFKA_BROKERS is not set: lifecycle events stay in outbox.events "
			 "(the durable record); nothing is relayed to Kafka");
	for (size_t i = 0; i < s->n_children && !s->stopping; i++)
		children_spawn(s, &s->children[i]);

	for (;;) {
		struct pollfd pfd = {.fd = s->sig_fd, .events = POLLIN};
		uint64_t now;

		if (poll(&pfd, 1, SUP_TICK_MS) > 0)
			signals_handle(s);
		children_reap(s);
		now = mono_ns();
		shm_segment_heartbeat(&s->seg);
		if (s->stopping) {
			if (drain_step(s, now))
				break;
			continue;
		}
		children_tick(s, now);
	}
	children_reap(s);
	log_detail(LOG_LVL_INFO, "stopped", "exit_code=%d", s->exit_code);
	return s->exit_code;
}

int main(int argc, char **argv)
{
	struct supervisor s = {.lock_fd = -1, .sig_fd = -1, .death_r = -1, .death_w = -1};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	bool check_only = false;
	size_t n_keys = 0;
	int rc;

	log_init(shm_role_name(SHM_ROLE_SUPERVISOR), -1, LOG_FMT_KV, LOG_LVL_INFO);
	if (argc > 2) {
		usage(stderr);
		return 2;
	}
	if (argc == 2) {
		if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[1], "--check-config")) {
			fprintf(stderr, "outboxd: unknown argument '%s' (see outboxd --help)\n",
				argv[1]);
			return 2;
		}
		check_only = true;
	}
	if (config_load_env(&s.cfg, 0, &err)) {
		log_err("bad configuration: %s", err.msg);
		return 2;
	}
	log_init(shm_role_name(SHM_ROLE_SUPERVISOR), -1, s.cfg.log_format, s.cfg.log_level);
	if (keys_file_check(s.cfg.signer_keys_file, &n_keys, &err)) {
		log_err("bad configuration: %s", err.msg);
		return 2;
	}
	if (check_only) {
		printf("outboxd: configuration ok (instance %s, %lld workers, %zu signer keys)\n",
		       s.cfg.instance, (long long)s.cfg.workers, n_keys);
		return 0;
	}
	s.pid = getpid();
	rc = run(&s);
	teardown(&s);
	return rc;
}
