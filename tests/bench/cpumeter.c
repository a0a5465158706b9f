/*
 * cpumeter - see cpumeter.h. The sampler is a forked process sharing one
 * anonymous mapping with the benchmark: the benchmark writes the groups it
 * tracks and bumps `req`; the sampler answers with the sums per class and
 * sets `done` to that request, so a read never sees a half-written table.
 */
#include "tests/bench/cpumeter.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CM_MAX_PROCS     16384 /* processes remembered over a run */
#define CM_MAX_OBSERVERS 32
#define CM_MAX_BACKENDS  2048 /* rows of pg_stat_activity read per sample */

struct cm_entry {
	pid_t pid;
	unsigned long long start; /* clock ticks after boot: tells a reused pid apart */
	unsigned long long base;  /* ticks when first seen, 0 if born after the meter */
	unsigned long long last;  /* ticks at the latest sample */
	int cls;
	int conn; /* its slot in the meter's conns for a CM_PG backend, else -1 */
};

struct cm_backend {
	pid_t pid;
	bool our_db, no_db;
	char conn[CPUMETER_CONN_NAME]; /* cpumeter_conn_name of its application_name */
};

struct cpumeter {
	_Atomic unsigned req, done;
	_Atomic int stop;
	_Atomic int n_groups, n_obs;
	pid_t group[CPUMETER_GROUPS];
	int group_class[CPUMETER_GROUPS];
	pid_t obs[CM_MAX_OBSERVERS];
	double sum_ms[CM_NCLASS];         /* written by the sampler before `done` */
	struct cpumeter_conns read_conns; /* the CM_PG split by connection, likewise */
	double conn_ms[CPUMETER_CONNS];
	int overflow; /* processes not remembered: the table was full */
	int warned;   /* pg_stat_activity failures (the first one is printed) */
	pid_t sampler;
	unsigned long long born; /* ticks after boot when the meter started */
	int n;
	struct cm_entry e[CM_MAX_PROCS];
	/* sampler-private scratch, here to keep the sampler's stack small */
	int n_backends;
	struct cm_backend be[CM_MAX_BACKENDS];
	struct cpumeter_conns conns; /* names seen so far; sums() publishes them */
};

enum cpumeter_class cpumeter_classify(const struct cpumeter_rules *r, const struct cpumeter_proc *p)
{
	if (p->pid == r->self)
		return CM_NONE;
	if (p->pg_observer)
		return CM_PG_OBSERVER;
	if (p->pg_our_db)
		return CM_PG;
	if (p->pid == r->postmaster && r->postmaster > 0)
		return CM_PG_SERVER;
	if (p->ppid == r->postmaster && r->postmaster > 0)
		/* a backend of another database is someone else's, and so is one
		 * not listed yet until a later sample tells (it then counts from
		 * its start): on a shared server they come and go by thousands */
		return p->pg_backend && p->pg_no_db ? CM_PG_SERVER : CM_NONE;
	for (int i = 0; i < r->n_groups; i++)
		if (p->pgrp == r->group[i])
			return r->group_class[i];
	return CM_NONE;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

void cpumeter_conn_name(const char *app, char *out, size_t n)
{
	const char *name = "other", *r;

	if (!n)
		return;
	if (!app || !*app)
		name = "unnamed";
	else if (!strncmp(app, "outboxd-", 8) && *(r = app + 8)) {
		if (!strncmp(r, "worker/data", 11) && all_digits(r + 11))
			name = "worker/data";
		else if (!strncmp(r, "worker-", 7) && all_digits(r + 7))
			name = "worker/relay";
		else if (!strcmp(r, "gateway-api"))
			name = "gateway";
		else
			name = r;
	}
	snprintf(out, n, "%s", name);
}

int cpumeter_conn_slot(struct cpumeter_conns *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return i;
	if (t->n >= CPUMETER_CONNS - 1 && strcmp(name, "other"))
		return cpumeter_conn_slot(t, "other"); /* no room left but "other"'s */
	if (t->n < 0 || t->n >= CPUMETER_CONNS)
		return -1; /* not a table this function built */
	snprintf(t->name[t->n], CPUMETER_CONN_NAME, "%s", name);
	return t->n++;
}

int cpumeter_conn_growth(const double *a, int na, const double *b, int nb, int order[],
			 double grew[])
{
	bool used[CPUMETER_CONNS] = {false};
	int k = 0;

	if (nb > CPUMETER_CONNS)
		nb = CPUMETER_CONNS;
	for (;;) {
		int best = -1;
		double best_ms = 0;

		for (int i = 0; i < nb; i++) {
			double d = b[i] - (i < na ? a[i] : 0);

			if (!used[i] && d > best_ms)
				best = i, best_ms = d;
		}
		if (best < 0)
			return k;
		used[best] = true;
		order[k] = best;
		grew[k++] = best_ms;
	}
}

static long ticks_per_s(void)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return hz > 0 ? hz : 100;
}

/* Fields of /proc/<pid>/stat after the command name, which may hold ')'. */
static int read_stat(pid_t pid, pid_t *ppid, pid_t *pgrp, unsigned long long *cpu,
		     unsigned long long *start)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')))
		return -1;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice threads itreal starttime */
	if (sscanf(p + 2,
		   "%*c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
		   "%*d %llu",
		   ppid, pgrp, &ut, &st, start) != 5)
		return -1;
	*cpu = ut + st;
	return 0;
}

static unsigned long long uptime_ticks(void)
{
	double up = 0;
	FILE *f = fopen("/proc/uptime", "r");

	if (f) {
		if (fscanf(f, "%lf", &up) != 1)
			up = 0;
		fclose(f);
	}
	return (unsigned long long)(up * (double)ticks_per_s());
}

static void read_backends(struct cpumeter *m, PGconn *c, const char *dbname)
{
	const char *p[1] = {dbname};
	PGresult *r;

	if (PQstatus(c) != CONNECTION_OK)
		PQreset(c);
	r = PQexecParams(c,
			 "SELECT pid, coalesce(datname = $1, false), datname IS NULL AND "
			 "backend_type <> 'client backend', application_name FROM "
			 "pg_stat_activity WHERE pid <> pg_backend_pid()",
			 1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK && !m->warned++) /* once: it keeps failing */
		fprintf(stderr,
			"cpumeter: pg_stat_activity: %s (new backends count as the "
			"server's until it answers)\n",
			PQerrorMessage(c));
	if (PQresultStatus(r) == PGRES_TUPLES_OK) { /* else: keep the last list */
		m->n_backends = 0;
		for (int i = 0; i < PQntuples(r) && i < CM_MAX_BACKENDS; i++) {
			struct cm_backend *b = &m->be[m->n_backends++];

			b->pid = (pid_t)atoi(PQgetvalue(r, i, 0));
			b->our_db = PQgetvalue(r, i, 1)[0] == 't';
			b->no_db = PQgetvalue(r, i, 2)[0] == 't';
			cpumeter_conn_name(PQgetvalue(r, i, 3), b->conn, sizeof(b->conn));
		}
	}
	PQclear(r);
}

static void fill_rules(struct cpumeter *m, struct cpumeter_rules *r, pid_t postmaster)
{
	r->postmaster = postmaster;
	r->self = getpid();
	r->n_groups = atomic_load(&m->n_groups);
	for (int i = 0; i < r->n_groups; i++) {
		r->group[i] = m->group[i];
		r->group_class[i] = (enum cpumeter_class)m->group_class[i];
	}
}

static struct cm_entry *entry(struct cpumeter *m, pid_t pid, unsigned long long start)
{
	for (int i = m->n - 1; i >= 0; i--)
		if (m->e[i].pid == pid && m->e[i].start == start)
			return &m->e[i];
	return NULL;
}

/*
 * Whether a backend's process title ("postgres: [cluster: ]user db
 * host(port) activity") names the database: the fallback for a backend
 * pg_stat_activity did not list when it was last read.
 */
static bool title_names_db(pid_t pid, const char *dbname)
{
	char path[64], buf[512], *tok, *save = NULL;
	bool found = false;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (!(f = fopen(path, "r")))
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0'; /* a title is one string; arguments would end at the first NUL */
	for (tok = strtok_r(buf, " ", &save); tok && !found; tok = strtok_r(NULL, " ", &save))
		found = !strcmp(tok, dbname);
	return found;
}

/*
 * Fills in what pg_stat_activity's last read and the observers say of p;
 * returns its row of that read, or NULL when it did not list p (not yet,
 * or no longer: a backend leaves the view before its process exits).
 */
static const struct cm_backend *describe(struct cpumeter *m, struct cpumeter_proc *p,
					 const char *dbname, pid_t postmaster)
{
	int n_obs = atomic_load(&m->n_obs);
	const struct cm_backend *row = NULL;

	p->pg_backend = p->pg_our_db = p->pg_no_db = p->pg_observer = false;
	for (int i = 0; i < m->n_backends; i++)
		if (m->be[i].pid == p->pid) {
			row = &m->be[i];
			p->pg_backend = true;
			p->pg_our_db = row->our_db;
			p->pg_no_db = row->no_db;
		}
	if (!p->pg_backend && p->ppid == postmaster && title_names_db(p->pid, dbname))
		p->pg_backend = p->pg_our_db = true;
	for (int i = 0; i < n_obs; i++)
		if (m->obs[i] == p->pid)
			p->pg_observer = true;
	return row;
}

static void sample(struct cpumeter *m, PGconn *c, const char *dbname, pid_t postmaster)
{
	struct cpumeter_rules rules;
	struct dirent *d;
	DIR *dir;

	read_backends(m, c, dbname);
	fill_rules(m, &rules, postmaster);
	if (!(dir = opendir("/proc")))
		return;
	while ((d = readdir(dir))) {
		struct cpumeter_proc p = {0};
		unsigned long long cpu, start;
		const struct cm_backend *row;
		struct cm_entry *e;
		enum cpumeter_class cls;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		p.pid = (pid_t)atoi(d->d_name);
		if (read_stat(p.pid, &p.ppid, &p.pgrp, &cpu, &start))
			continue; /* gone meanwhile */
		row = describe(m, &p, dbname, postmaster);
		cls = cpumeter_classify(&rules, &p);
		e = entry(m, p.pid, start);
		if (!e && cls == CM_NONE)
			continue;
		if (!e) {
			if (m->n == CM_MAX_PROCS) {
				if (!m->overflow++)
					fprintf(stderr,
						"cpumeter: more than %d processes to follow: "
						"later ones are not counted\n",
						CM_MAX_PROCS);
				continue;
			}
			e = &m->e[m->n++];
			*e = (struct cm_entry){.pid = p.pid,
					       .start = start,
					       .base = start >= m->born ? 0 : cpu,
					       .last = cpu,
					       .cls = cls,
					       .conn = -1};
		}
		e->last = cpu;
		e->cls = cls; /* a backend listed late moves all its time to its class */
		if (cls != CM_PG)
			e->conn = -1;
		else if (row)
			e->conn = cpumeter_conn_slot(&m->conns, row->conn); /* time moves with it */
		else if (e->conn < 0)
			e->conn = cpumeter_conn_slot(&m->conns, "other"); /* until it is listed */
	}
	closedir(dir);
}

static void sums(struct cpumeter *m)
{
	double tick_ms = 1000.0 / (double)ticks_per_s();

	for (int k = 0; k < CM_NCLASS; k++)
		m->sum_ms[k] = 0;
	for (int k = 0; k < CPUMETER_CONNS; k++)
		m->conn_ms[k] = 0;
	for (int i = 0; i < m->n; i++) {
		double ms = (double)(m->e[i].last - m->e[i].base) * tick_ms;

		if (m->e[i].cls >= 0 && m->e[i].cls < CM_NCLASS)
			m->sum_ms[m->e[i].cls] += ms;
		if (m->e[i].cls == CM_PG && m->e[i].conn >= 0)
			m->conn_ms[m->e[i].conn] += ms;
	}
	m->read_conns = m->conns;
}

static pid_t postmaster_of(PGconn *c)
{
	PGresult *r = PQexec(c, "SELECT pg_backend_pid()");
	pid_t be = 0, ppid = 0, pgrp;
	unsigned long long cpu, start;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		be = (pid_t)atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (be <= 0 || read_stat(be, &ppid, &pgrp, &cpu, &start))
		return -1;
	return ppid;
}

static void sampler(struct cpumeter *m, const char *admin, const char *dbname, pid_t postmaster)
{
	PGconn *c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	c = PQconnectdb(admin); /* a failure shows as no backend counted; retried each sample */
	for (;;) {
		unsigned want = atomic_load(&m->req);

		sample(m, c, dbname, postmaster);
		if (want != atomic_load(&m->done)) {
			sums(m);
			atomic_store(&m->done, want);
		}
		if (atomic_load(&m->stop))
			break;
		for (int t = 0; t < CPUMETER_PERIOD_MS / 10 && atomic_load(&m->req) == want; t++) {
			struct timespec ts = {0, 10 * 1000 * 1000};

			nanosleep(&ts, NULL);
		}
	}
	PQfinish(c);
	_exit(0);
}

struct cpumeter *cpumeter_start(const char *admin_conninfo, const char *dbname)
{
	struct cpumeter *m;
	PGconn *c;
	pid_t postmaster, pid;

	c = PQconnectdb(admin_conninfo);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "cpumeter: connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	postmaster = postmaster_of(c);
	PQfinish(c); /* the sampler connects on its own: a socket is not shared across fork */
	if (postmaster <= 0) {
		fprintf(stderr, "cpumeter: the PostgreSQL server is not on this host (its backend "
				"is not in /proc): CPU cannot be measured\n");
		return NULL;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "cpumeter: mmap: %s\n", strerror(errno));
		return NULL;
	}
	memset(m, 0, sizeof(*m));
	m->born = uptime_ticks();
	fflush(NULL);
	pid = fork(); /* not into m->sampler: the child would write its 0 there too */
	if (pid < 0) {
		fprintf(stderr, "cpumeter: fork: %s\n", strerror(errno));
		munmap(m, sizeof(*m));
		return NULL;
	}
	if (pid == 0)
		sampler(m, admin_conninfo, dbname, postmaster);
	m->sampler = pid;
	return m;
}

void cpumeter_track_group(struct cpumeter *m, pid_t pgid, enum cpumeter_class cls)
{
	int n;

	if (!m || (n = atomic_load(&m->n_groups)) == CPUMETER_GROUPS)
		return;
	m->group[n] = pgid;
	m->group_class[n] = cls;
	atomic_store(&m->n_groups, n + 1);
}

void cpumeter_observer(struct cpumeter *m, pid_t backend_pid)
{
	int n;

	if (!m || (n = atomic_load(&m->n_obs)) == CM_MAX_OBSERVERS)
		return;
	m->obs[n] = backend_pid;
	atomic_store(&m->n_obs, n + 1);
}

int cpumeter_read(struct cpumeter *m, double ms[CM_NCLASS])
{
	unsigned want;

	if (!m)
		return -1;
	want = atomic_fetch_add(&m->req, 1) + 1;
	for (int t = 0; t < 3000 && atomic_load(&m->done) != want; t++) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	if (atomic_load(&m->done) != want) {
		fprintf(stderr, "cpumeter: the sampler did not answer within 30 s\n");
		return -1;
	}
	memcpy(ms, m->sum_ms, sizeof(m->sum_ms));
	return 0;
}

void cpumeter_read_conns(struct cpumeter *m, struct cpumeter_conns *names,
			 double ms[CPUMETER_CONNS])
{
	memset(names, 0, sizeof(*names));
	memset(ms, 0, sizeof(double) * CPUMETER_CONNS);
	if (!m)
		return;
	*names = m->read_conns;
	memcpy(ms, m->conn_ms, sizeof(m->conn_ms));
}

double cpumeter_machine_ms(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;

	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7]);
		fclose(f);
	}
	if (n < 8)
		return -1;
	/* user nice system idle iowait irq softirq steal: all but idle and iowait */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000.0 / (double)ticks_per_s();
}

double cpumeter_loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

void cpumeter_stop(struct cpumeter *m)
{
	if (!m)
		return;
	atomic_store(&m->stop, 1);
	atomic_fetch_add(&m->req, 1);
	if (m->sampler > 0 && waitpid(m->sampler, NULL, 0) != m->sampler)
		kill(m->sampler, SIGKILL);
	munmap(m, sizeof(*m));
}
