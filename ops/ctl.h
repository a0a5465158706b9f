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

struct ctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int ctl_version(int argc, char **argv);
int ctl_migrate(int argc, char **argv);

#endif
