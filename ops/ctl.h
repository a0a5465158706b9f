/*
 * ctl.h - outboxctl subcommands. Each lives in its own ops/ctl_<name>.c and
 * is listed in the table in ops/outboxctl.c.
 *
 * A subcommand gets argv starting at its own name and returns the process
 * exit code: 0 ok, 1 failure or degraded, 2 usage error / cannot attach.
 * Errors are one line on stderr, "outboxctl <cmd>: <what>".
 */
#ifndef OUTBOX_OPS_CTL_H
#define OUTBOX_OPS_CTL_H

#include "common/shm/segment.h"

#include <jansson.h>
#include <stdbool.h>

struct ctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int ctl_version(int argc, char **argv);
int ctl_migrate(int argc, char **argv);
int ctl_tx(int argc, char **argv);
int ctl_stats(int argc, char **argv);
int ctl_fee(int argc, char **argv);
int ctl_audit(int argc, char **argv);
int ctl_top(int argc, char **argv);
int ctl_keys(int argc, char **argv);
int ctl_ops(int argc, char **argv);

/*
 * Shared by stats and fee (ctl_stats.c): parse [--json] [--instance NAME]
 * (default $OUTBOX_INSTANCE, then "default") and attach that instance's
 * segment read-only. Returns 0, or the exit code after printing one line.
 */
struct ctl_shm_opts {
	bool json;
	char instance[SHM_INSTANCE_MAX + 1];
	struct shm_segment seg;
};
int ctl_shm_open(const char *cmd, int argc, char **argv, struct ctl_shm_opts *o);
/* The daemon restarted (new segment) since we attached. */
bool ctl_shm_restarted(const struct ctl_shm_opts *o);
/* The fee snapshot as JSON (the `fee --json` keys); *stale when old or absent. */
json_t *ctl_fee_json(const struct shm_segment *seg, bool *stale);
void ctl_fee_print_text(json_t *fee);
/*
 * Everything `stats --json` shows, as one JSON document (processes with
 * their non-zero counters and gauges, totals of every counter, the fee
 * snapshot); *degraded set when the supervisor, a child or the snapshot is
 * unhealthy. The caller checks ctl_shm_restarted() afterwards.
 */
json_t *ctl_stats_collect(const struct ctl_shm_opts *o, bool *degraded);

#endif
