/*
 * ctl_keys.c - `outboxctl keys`: the gateway's API keys in
 * outbox.admin_keys (OUTBOX_DATABASE_URL).
 *
 *	keys create --name N --scopes outbox:read[,outbox:write][,outbox:enqueue]
 *	    prints the key once on stdout; only its hash is stored (common/apikey.h)
 *	keys list [--json]      id, name, prefix, scopes, created, revoked; never a key
 *	keys revoke NAME|ID     the gateway refuses it (401) from its next cache refresh,
 *	                        which the revocation's NOTIFY outbox_keys starts at once
 *
 * Exit 0 ok, 1 failure (database, unknown key), 2 usage.
 */
#include "ops/ctl.h"

#include "common/apikey.h"
#include "common/enqueue.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr, "usage: outboxctl keys create --name NAME --scopes "
			"outbox:read[,outbox:write][,outbox:enqueue]\n"
			"       outboxctl keys list [--json]\n"
			"       outboxctl keys revoke NAME|ID\n");
	return 2;
}

static int connect_db(const char *cmd, PGconn **conn)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const char *url = getenv("OUTBOX_DATABASE_URL");

	if (!url || !*url) {
		fprintf(stderr, "outboxctl keys %s: OUTBOX_DATABASE_URL is not set\n", cmd);
		return 2;
	}
	if (outbox_db_connect(url, conn, &err)) {
		fprintf(stderr, "outboxctl keys %s: %s\n", cmd, err.msg);
		return 1;
	}
	return 0;
}

/* "{outbox:read,outbox:write}" for text[] */
static void scopes_array(unsigned mask, char *buf, size_t cap)
{
	size_t len = 0;

	buf[len++] = '{';
	for (unsigned bit = 1; bit <= APIKEY_SCOPE_ALL; bit <<= 1)
		if (mask & bit)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len > 1 ? "," : "",
						apikey_scope_name(bit));
	snprintf(buf + len, cap - len, "}");
}

static int keys_insert(PGconn *conn, const char *name, unsigned mask, const char *key)
{
	uint8_t hash[APIKEY_HASH_LEN];
	char hex[2 * APIKEY_HASH_LEN + 3] = "\\x", scopes[96], prefix[APIKEY_PREFIX_LEN + 1];
	const char *p[4] = {name, hex, scopes, prefix};
	PGresult *res;
	int rc = 0;

	apikey_hash(key, APIKEY_LEN, hash);
	sodium_bin2hex(hex + 2, sizeof(hex) - 2, hash, sizeof(hash));
	scopes_array(mask, scopes, sizeof(scopes));
	memcpy(prefix, key, APIKEY_PREFIX_LEN);
	prefix[APIKEY_PREFIX_LEN] = '\0';
	res = PQexecParams(conn,
			   "INSERT INTO outbox.admin_keys (name, key_hash, scopes, key_prefix) "
			   "VALUES ($1, $2::bytea, $3::text[], $4) RETURNING id",
			   4, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		fprintf(stderr, "outboxctl keys create: %s", PQresultErrorMessage(res));
		rc = 1;
	} else {
		fprintf(stderr,
			"key %s (id %s) created with scopes %s; it is shown once, store it now\n",
			prefix, PQgetvalue(res, 0, 0), scopes);
	}
	PQclear(res);
	return rc;
}

static int keys_create(int argc, char **argv)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const char *name = NULL, *scopes = NULL;
	char key[APIKEY_LEN + 1];
	unsigned mask;
	PGconn *conn;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--name") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--scopes") && i + 1 < argc)
			scopes = argv[++i];
		else
			return usage();
	}
	if (!name || !scopes)
		return usage();
	if (apikey_scopes_parse(scopes, &mask, &err)) {
		fprintf(stderr, "outboxctl keys create: %s\n", err.msg);
		return 2;
	}
	if ((rc = connect_db("create", &conn)))
		return rc;
	apikey_generate(key);
	rc = keys_insert(conn, name, mask, key);
	if (rc == 0)
		printf("%s\n", key);
	sodium_memzero(key, sizeof(key));
	PQfinish(conn);
	return rc;
}

static int keys_list(int argc, char **argv)
{
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	PGconn *conn;
	PGresult *res;
	int rc;

	if (argc > 2 || (argc == 2 && !json))
		return usage();
	if ((rc = connect_db("list", &conn)))
		return rc;
	res = PQexec(conn, "SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'name', name, "
			   "'prefix', key_prefix, 'scopes', scopes, 'createdAt', created_at, "
			   "'revokedAt', revoked_at) ORDER BY id), '[]')::text, "
			   "coalesce(string_agg(format('%-6s %-24s %-17s %-40s %s', id, name, "
			   "coalesce(key_prefix, '-'), array_to_string(scopes, ','), "
			   "CASE WHEN revoked_at IS NULL THEN 'active' ELSE 'revoked ' || "
			   "revoked_at END), E'\\n' ORDER BY id), '') FROM outbox.admin_keys");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		fprintf(stderr, "outboxctl keys list: %s", PQresultErrorMessage(res));
		rc = 1;
	} else if (json) {
		printf("%s\n", PQgetvalue(res, 0, 0));
	} else {
		printf("%-6s %-24s %-17s %-40s %s\n%s\n", "id", "name", "prefix", "scopes", "state",
		       PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

static int keys_revoke(int argc, char **argv)
{
	const char *p[1];
	PGconn *conn;
	PGresult *res;
	int rc;

	if (argc != 2)
		return usage();
	p[0] = argv[1];
	if ((rc = connect_db("revoke", &conn)))
		return rc;
	res = PQexecParams(conn,
			   "UPDATE outbox.admin_keys SET revoked_at = now() "
			   "WHERE (name = $1 OR id::text = $1 OR key_prefix = $1) "
			   "AND revoked_at IS NULL RETURNING id, name",
			   1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		fprintf(stderr, "outboxctl keys revoke: %s", PQresultErrorMessage(res));
		rc = 1;
	} else if (PQntuples(res) == 0) {
		fprintf(stderr, "outboxctl keys revoke: no active key named '%s'\n", argv[1]);
		rc = 1;
	} else {
		printf("revoked key %s (%s)\n", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

int ctl_keys(int argc, char **argv)
{
	if (sodium_init() < 0) {
		fprintf(stderr, "outboxctl keys: libsodium failed to initialise\n");
		return 1;
	}
	if (argc >= 2 && !strcmp(argv[1], "create"))
		return keys_create(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return keys_list(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "revoke"))
		return keys_revoke(argc - 1, argv + 1);
	return usage();
}
