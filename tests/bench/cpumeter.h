/*
 * cpumeter - the CPU time every process of a benchmark run used, read from
 * /proc, by class: PostgreSQL backends serving the benchmark's database,
 * PostgreSQL's server-wide processes, and process groups the benchmark
 * names (outboxd, stellar-sim, the benchmark itself with its enqueuers).
 *
 * A sampler process polls every CPUMETER_PERIOD_MS: pg_stat_activity (on
 * its own connection to the maintenance database, so its backend is never
 * counted) and every /proc/<pid>/stat, adding utime+stime per process,
 * keyed by (pid, start time). A process counts from when the meter first
 * saw it, or from zero if it started after the meter did; a process that
 * exits between two samples loses at most one period of its tail, so
 * short-lived processes should be few (enqueuers live for a whole phase).
 *
 * A backend pg_stat_activity has not listed yet (or while the query fails)
 * counts as the benchmark's database's when its process title names it.
 * Classes are decided in cpumeter_classify(), a pure function. Backends of
 * other databases (other engineers' tests on a shared server) are not
 * counted; the server-wide processes (WAL writer, checkpointer, background
 * writer, autovacuum launcher, postmaster) are, separately, because they
 * also work for whoever else uses the server.
 */
#ifndef OUTBOX_TESTS_BENCH_CPUMETER_H
#define OUTBOX_TESTS_BENCH_CPUMETER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CPUMETER_PERIOD_MS 200
#define CPUMETER_GROUPS    8
#define CPUMETER_CONNS     16 /* connection names told apart (CM_PG only) */
#define CPUMETER_CONN_NAME 32

enum cpumeter_class {
	CM_NONE = -1,
	CM_PG,          /* backends (and autovacuum workers) of the benchmark's database */
	CM_PG_OBSERVER, /* the benchmark's own connections' backends (its polling) */
	CM_PG_SERVER,   /* postmaster and its children with no database */
	CM_OUTBOXD,     /* a named process group: outboxd's supervisor and children */
	CM_SIM,         /* a named process group: stellar-sim */
	CM_BENCH,       /* a named process group: the benchmark, enqueuers, pgbench, node */
	CM_NCLASS
};

/* What the sampler knows of one process, for cpumeter_classify(). */
struct cpumeter_proc {
	pid_t pid, ppid, pgrp;
	bool pg_backend;  /* listed by pg_stat_activity */
	bool pg_our_db;   /* ... with the benchmark's database */
	bool pg_no_db;    /* ... as a server process: no database, not a client */
	bool pg_observer; /* ... one of the benchmark's own connections */
};

/* The process groups the benchmark named, and the postmaster's pid. */
struct cpumeter_rules {
	pid_t postmaster, self;
	int n_groups;
	pid_t group[CPUMETER_GROUPS];
	enum cpumeter_class group_class[CPUMETER_GROUPS];
};

enum cpumeter_class cpumeter_classify(const struct cpumeter_rules *r,
				      const struct cpumeter_proc *p);

/*
 * The connection a CM_PG backend serves, named from its application_name,
 * so that a phase's PostgreSQL CPU splits by what outboxd uses each
 * connection for (worker/worker.h, oracle/): "outboxd-" is dropped, a
 * worker's data connections are one ("worker/data"), a worker's event
 * relay ("outboxd-worker-<n>") is "worker/relay", the gateway's API
 * connections count with its own ("gateway"); no name is "unnamed" (the
 * benchmark's enqueuers, autovacuum workers), and pgbench's or any other
 * name that is not outboxd's is "other". Writes a NUL-terminated name of
 * at most n - 1 bytes (nothing when n is 0). Pure.
 */
void cpumeter_conn_name(const char *application_name, char *out, size_t n);

/*
 * The names a meter tells apart, in the order first seen; a name keeps
 * its slot for the meter's life, so two reads compare slot by slot.
 */
struct cpumeter_conns {
	int n;
	char name[CPUMETER_CONNS][CPUMETER_CONN_NAME];
};

/*
 * The slot of name in t (zeroed at first), added when new. The last slot
 * is kept for "other", which takes every name past the table's room, so a
 * full table loses no time; -1 only for a table this function did not
 * build. Pure (on t).
 */
int cpumeter_conn_slot(struct cpumeter_conns *t, const char *name);

/*
 * The slots whose milliseconds grew from a (na slots) to b (nb >= na
 * slots), largest growth first, into order[] with the growth in grew[];
 * how many (at most nb). A slot that did not grow is left out (a backend
 * listed late moves its time between names). Pure.
 */
int cpumeter_conn_growth(const double *a, int na, const double *b, int nb, int order[],
			 double grew[]);

struct cpumeter;

/*
 * Starts the sampler: admin_conninfo reaches the maintenance database,
 * dbname is the benchmark's. NULL with a message on stderr on failure.
 */
struct cpumeter *cpumeter_start(const char *admin_conninfo, const char *dbname);
/* Counts process group pgid (and every process in it) as cls from now on. */
void cpumeter_track_group(struct cpumeter *m, pid_t pgid, enum cpumeter_class cls);
/* Counts the backend serving this pid as CM_PG_OBSERVER, not CM_PG. */
void cpumeter_observer(struct cpumeter *m, pid_t backend_pid);
/*
 * Takes a fresh sample and writes the milliseconds of CPU per class since
 * the meter started into ms; 0, or -1 if the sampler did not answer.
 */
int cpumeter_read(struct cpumeter *m, double ms[CM_NCLASS]);
/*
 * After a cpumeter_read, by the thread that called it: that read's CM_PG
 * milliseconds split by connection name (cpumeter_conn_name), slot by
 * slot (cpumeter_conn_slot).
 */
void cpumeter_read_conns(struct cpumeter *m, struct cpumeter_conns *names,
			 double ms[CPUMETER_CONNS]);
/* Milliseconds of CPU the whole machine (every process) used, from /proc/stat. */
double cpumeter_machine_ms(void);
/* The 1-minute load average, from /proc/loadavg (-1 if unreadable). */
double cpumeter_loadavg(void);
void cpumeter_stop(struct cpumeter *m);

#endif
