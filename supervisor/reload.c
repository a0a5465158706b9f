/*
 * reload.c - SIGHUP: re-read the configuration without a restart.
 *
 * A running process cannot see a new environment, so what can change is
 * OUTBOX_CONFIG_FILE (KEY=VALUE lines overriding the environment). The
 * supervisor re-reads environment + file and validates the result as a
 * whole (config_reload); a bad result, or one that changes a restart-only
 * variable (instance, workers, vshards, URLs, ...: see outboxd --help), is
 * refused with one log line and the running configuration stays.
 *
 * Design choice: children learn about an accepted reload by SIGHUP and
 * re-read the file themselves (child_reload), rather than through a config
 * section in shared memory. That needs no shared layout, keeps every child
 * validating its own input, and a child forked later inherits the
 * supervisor's accepted copy. The cost is a window: if the file is edited
 * again between the supervisor's read and a child's, that child applies
 * (or refuses, and logs) the newer content. Every process logs what it did,
 * and a second SIGHUP converges everyone on the current file.
 */
#include "supervisor/supervisor.h"

#include "common/log.h"
#include "common/shm/proc_table.h"

#include <signal.h>

void reload_run(struct supervisor *s)
{
	struct outbox_config next;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	if (config_reload(&s->cfg, &next, &err)) {
		log_err("reload refused, keeping the running configuration: %s", err.msg);
		return;
	}
	if (!config_reloadable_differs(&s->cfg, &next)) {
		log_info("reload: configuration unchanged");
		return;
	}
	s->cfg = next;
	log_init(shm_role_name(SHM_ROLE_SUPERVISOR), -1, s->cfg.log_format, s->cfg.log_level);
	log_info("reload: configuration applied, signalling children");
	children_signal(s, CHILDREN_ALL, SIGHUP);
}
