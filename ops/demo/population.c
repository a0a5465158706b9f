/*
 * population.c - reads the population file ops/demo.sh writes (mix.h).
 *
 * The file is ours, but it is still external input: every field is bounded
 * and checked, and an error names the line.
 */
#include "ops/demo/mix.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *errbuf, size_t errlen, const char *path, int line, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(errbuf, errlen, "%s:%d: %s", path, line, what);
	return -1;
}

/* A G... account strkey by shape (the sim and outbox.enqueue() check the checksum). */
static bool is_account(const char *s)
{
	if (strlen(s) != MIX_STRKEY_LEN || s[0] != 'G')
		return false;
	for (const char *p = s; *p; p++)
		if (!(isupper((unsigned char)*p) || (*p >= '2' && *p <= '7')))
			return false;
	return true;
}

/* A user or agent id: 1..31 of [A-Za-z0-9_-] (never ':', the key's separator). */
static bool is_ident(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= MIX_ID_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_'))
			return false;
	return true;
}

static int add_customer(struct population *p, char *user, char *acct, char *bal, char *errbuf,
			size_t errlen, const char *path, int line)
{
	struct mix_customer *c;
	char *end;
	long long b;

	if (!user || !is_ident(user))
		return fail(errbuf, errlen, path, line, "customer: bad or missing user id");
	if (!acct || !is_account(acct))
		return fail(errbuf, errlen, path, line, "customer %s: bad or missing account",
			    user);
	errno = 0;
	b = bal ? strtoll(bal, &end, 10) : 0;
	if (!bal || errno || *end || b <= 0)
		return fail(errbuf, errlen, path, line, "customer %s: bad or missing balance",
			    user);
	if (p->n_customers == MIX_MAX_CUSTOMERS)
		return fail(errbuf, errlen, path, line, "more than %d customers",
			    MIX_MAX_CUSTOMERS);
	c = &p->customers[p->n_customers++];
	snprintf(c->user, sizeof(c->user), "%s", user);
	snprintf(c->account, sizeof(c->account), "%s", acct);
	c->balance = b;
	return 0;
}

static int parse_line(struct population *p, char *s, char *errbuf, size_t errlen, const char *path,
		      int line)
{
	char *save = NULL, *what = strtok_r(s, " \t\r\n", &save);
	char *a = strtok_r(NULL, " \t\r\n", &save);
	char *b = strtok_r(NULL, " \t\r\n", &save);
	char *c = strtok_r(NULL, " \t\r\n", &save);

	if (!what || what[0] == '#')
		return 0;
	if (!strcmp(what, "signer")) {
		if (!a || !is_account(a) || b)
			return fail(errbuf, errlen, path, line, "signer: want one G... account");
		if (p->n_signers == MIX_MAX_SIGNERS)
			return fail(errbuf, errlen, path, line, "more than %d signers",
				    MIX_MAX_SIGNERS);
		snprintf(p->signers[p->n_signers++], MIX_STRKEY_LEN + 1, "%s", a);
		return 0;
	}
	if (!strcmp(what, "customer"))
		return add_customer(p, a, b, c, errbuf, errlen, path, line);
	if (!strcmp(what, "agent")) {
		if (!a || !is_ident(a) || b)
			return fail(errbuf, errlen, path, line, "agent: want one id");
		if (p->n_agents == MIX_MAX_AGENTS)
			return fail(errbuf, errlen, path, line, "more than %d agents",
				    MIX_MAX_AGENTS);
		snprintf(p->agents[p->n_agents++], MIX_ID_MAX, "%s", a);
		return 0;
	}
	return fail(errbuf, errlen, path, line, "unknown record '%.20s'", what);
}

int population_load(struct population *p, const char *path, char *errbuf, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	int line = 0, rc = 0;

	memset(p, 0, sizeof(*p));
	if (!f) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (!rc && fgets(buf, sizeof(buf), f)) {
		line++;
		if (!strchr(buf, '\n') && !feof(f))
			rc = fail(errbuf, errlen, path, line, "line longer than %zu bytes",
				  sizeof(buf) - 2);
		else
			rc = parse_line(p, buf, errbuf, errlen, path, line);
	}
	fclose(f);
	if (!rc && (!p->n_signers || !p->n_customers || !p->n_agents))
		rc = fail(errbuf, errlen, path, line,
			  "needs at least one signer, customer and agent");
	return rc;
}
