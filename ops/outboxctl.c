/*
 * outboxctl - the operator's command line. Dispatches to one subcommand per
 * file (ops/ctl_*.c); see ops/ctl.h for the contract.
 */
#include "ops/ctl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct ctl_command commands[] = {
	{"version", ctl_version, "print the outboxctl version"},
	{"migrate", ctl_migrate, "apply the schema migrations (OUTBOX_DATABASE_URL)"},
	{"tx", ctl_tx, "decode a base64 transaction envelope to JSON (tx decode)"},
	{"stats", ctl_stats, "process table, counters and fee snapshot of a running instance"},
	{"fee", ctl_fee, "the current fee snapshot of a running instance and its age"},
	{"top", ctl_top,
	 "live full-screen view of a running instance (q quits; --once for one frame)"},
	{"ops", ctl_ops, "ops: list, show, why, retry, cancel (audited like the HTTP admin API)"},
	{"keys", ctl_keys, "the gateway's API keys: create (printed once), list, revoke"},
	{"audit", ctl_audit,
	 "read the event topic and check every op's history and chain (--verify: against the table "
	 "too)"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

int ctl_version(int argc, char **argv)
{
	printf("outboxctl 0.1.0\n");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: outboxctl <command> [args]\n\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

/*
 * `outboxctl <command> --help`: every subcommand prints its usage on stderr
 * when its arguments do not parse (ctl.h), so help is that, on stdout, with
 * exit 0: one usage text per command, never two that drift apart.
 */
static int help(const struct ctl_command *c, char **argv)
{
	int rc;

	fflush(stderr);
	if (dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
		return 2;
	rc = c->run(2, argv);
	return rc == 2 ? 0 : rc;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
			return help(&commands[i], argv + 1);
		return commands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "outboxctl: unknown command '%s' (see outboxctl --help)\n", argv[1]);
	return 2;
}
