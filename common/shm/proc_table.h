/*
 * proc_table.h - the shared mirror of the supervisor's child table.
 *
 * One struct shm_proc_slot per process (layout.h), indexed by the process
 * index: SHM_PROC_SUPERVISOR (0), SHM_PROC_ORACLE (1), SHM_PROC_GATEWAY (2),
 * SHM_PROC_WORKER0 + i. Every field is a single atomic word; nobody needs two
 * fields to agree, so there is no lock and no seqcount. The supervisor owns
 * pid/restarts/started_at/exit fields and the FREE/STARTING/EXITED/BACKOFF
 * states; the child owns heartbeat_ns and the RUNNING/STOPPING states.
 * The supervisor must decide from its private table, never from these rows.
 *
 * Heartbeats are CLOCK_MONOTONIC nanoseconds (system-wide, so any process,
 * outboxctl included, computes an age with its own mono_ns()).
 */
#ifndef OUTBOX_SHM_PROC_TABLE_H
#define OUTBOX_SHM_PROC_TABLE_H

#include <stdint.h>
#include <sys/types.h>

#include "common/shm/segment.h"

/* Process index for (role, role-local index), or -EINVAL when out of range. */
int shm_proc_index(const struct shm_segment *seg, enum shm_role role, uint32_t idx);

/* Row of process index p; NULL when p >= seg->n_procs. */
struct shm_proc_slot *shm_proc_slot(const struct shm_segment *seg, uint32_t p);

/* supervisor: child forked with pid; sets STARTING, started_at, counts a restart if respawn. */
void proc_slot_assign(struct shm_proc_slot *slot, pid_t pid, int is_respawn);

/* supervisor: child reaped; EXITED with its status/signal, pid 0. */
void proc_slot_exited(struct shm_proc_slot *slot, int exit_status, int exit_signal);

/* supervisor: waiting to respawn. */
void proc_slot_backoff(struct shm_proc_slot *slot);

/* child: announce RUNNING / STOPPING (also stores a heartbeat). */
void proc_slot_running(struct shm_proc_slot *slot);
void proc_slot_stopping(struct shm_proc_slot *slot);

/* child (supervisor for slot 0): store the CLOCK_MONOTONIC heartbeat. */
void proc_slot_heartbeat(struct shm_proc_slot *slot);

/* A plain copy of a row, for readers (outboxctl, supervisor logs). */
struct proc_slot_view {
	enum shm_role role;
	uint32_t index;
	int32_t pid;
	enum shm_proc_state state;
	uint64_t heartbeat_ns;
	uint64_t restarts;
	uint64_t started_at_ms;
	int32_t last_exit_status;
	int32_t last_exit_signal;
	uint64_t exits;
};

/* Copy a row field by field (each field atomic; fields may be from different moments). */
void proc_slot_read(const struct shm_proc_slot *slot, struct proc_slot_view *out);

/* "supervisor", "oracle", "gateway", "worker"; "?" for anything else. */
const char *shm_role_name(uint32_t role);
/* "free", "starting", "running", "stopping", "exited", "backoff"; "?" otherwise. */
const char *shm_proc_state_name(uint32_t state);

#endif
