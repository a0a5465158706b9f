/*
 * proc_table.c - the shared process table (see proc_table.h).
 *
 * Notes on synchronisation: every field is one naturally aligned atomic
 * word written by exactly one party at a time (the supervisor around fork
 * and reap, the child while it runs), with relaxed stores except for
 * `state`, which is stored with release so that a reader that sees
 * RUNNING/EXITED also sees the pid and exit fields stored before it. Readers
 * copy fields one by one; no reader needs a consistent multi-field view.
 */
#include <errno.h>

#include "common/shm/proc_table.h"
#include "common/clock.h"
#include "common/shm/segment.h"

#define RLX memory_order_relaxed

int shm_proc_index(const struct shm_segment *seg, enum shm_role role, uint32_t idx)
{
	switch (role) {
	case SHM_ROLE_SUPERVISOR:
	case SHM_ROLE_ORACLE:
	case SHM_ROLE_GATEWAY:
		return idx == 0 ? (int)role : -EINVAL;
	case SHM_ROLE_WORKER:
		return idx < seg->n_workers ? (int)(SHM_PROC_WORKER0 + idx) : -EINVAL;
	}
	return -EINVAL;
}

struct shm_proc_slot *shm_proc_slot(const struct shm_segment *seg, uint32_t p)
{
	return p < seg->n_procs ? &seg->procs[p] : NULL;
}

void proc_slot_assign(struct shm_proc_slot *slot, pid_t pid, int is_respawn)
{
	atomic_store_explicit(&slot->pid, pid, RLX);
	atomic_store_explicit(&slot->started_at_ms, wall_ms(), RLX);
	atomic_store_explicit(&slot->heartbeat_ns, mono_ns(), RLX);
	if (is_respawn)
		atomic_store_explicit(&slot->restarts,
				      atomic_load_explicit(&slot->restarts, RLX) + 1, RLX);
	atomic_store_explicit(&slot->state, SHM_PROC_STARTING, memory_order_release);
}

void proc_slot_exited(struct shm_proc_slot *slot, int exit_status, int exit_signal)
{
	atomic_store_explicit(&slot->last_exit_status, exit_status, RLX);
	atomic_store_explicit(&slot->last_exit_signal, exit_signal, RLX);
	atomic_store_explicit(&slot->exits, atomic_load_explicit(&slot->exits, RLX) + 1, RLX);
	atomic_store_explicit(&slot->pid, 0, RLX);
	atomic_store_explicit(&slot->state, SHM_PROC_EXITED, memory_order_release);
}

void proc_slot_backoff(struct shm_proc_slot *slot)
{
	atomic_store_explicit(&slot->state, SHM_PROC_BACKOFF, memory_order_release);
}

void proc_slot_heartbeat(struct shm_proc_slot *slot)
{
	atomic_store_explicit(&slot->heartbeat_ns, mono_ns(), RLX);
}

void proc_slot_running(struct shm_proc_slot *slot)
{
	proc_slot_heartbeat(slot);
	atomic_store_explicit(&slot->state, SHM_PROC_RUNNING, memory_order_release);
}

void proc_slot_stopping(struct shm_proc_slot *slot)
{
	proc_slot_heartbeat(slot);
	atomic_store_explicit(&slot->state, SHM_PROC_STOPPING, memory_order_release);
}

void proc_slot_read(const struct shm_proc_slot *slot, struct proc_slot_view *out)
{
	struct shm_proc_slot *s = (struct shm_proc_slot *)slot;

	out->state = atomic_load_explicit(&s->state, memory_order_acquire);
	out->role = atomic_load_explicit(&s->role, RLX);
	out->index = atomic_load_explicit(&s->index, RLX);
	out->pid = atomic_load_explicit(&s->pid, RLX);
	out->heartbeat_ns = atomic_load_explicit(&s->heartbeat_ns, RLX);
	out->restarts = atomic_load_explicit(&s->restarts, RLX);
	out->started_at_ms = atomic_load_explicit(&s->started_at_ms, RLX);
	out->last_exit_status = atomic_load_explicit(&s->last_exit_status, RLX);
	out->last_exit_signal = atomic_load_explicit(&s->last_exit_signal, RLX);
	out->exits = atomic_load_explicit(&s->exits, RLX);
}

const char *shm_role_name(uint32_t role)
{
	static const char *const names[] = {"supervisor", "oracle", "gateway", "worker"};

	return role < 4 ? names[role] : "?";
}

const char *shm_proc_state_name(uint32_t state)
{
	static const char *const names[] = {"free",     "starting", "running",
					    "stopping", "exited",   "backoff"};

	return state < 6 ? names[state] : "?";
}
