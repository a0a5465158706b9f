/*
 * sim_txgen.c - pre-generates the sendTransaction load for tests/bench/sim_load:
 * COUNT fresh accounts (registered through POST /debug/accounts), and for
 * each one vault deposit simulated against the running sim, signed, and
 * written as one JSON-RPC request body per line. One transaction per source
 * account, so the queue's one-pending-per-account rule admits them all.
 *
 *	sim_txgen URL PASSPHRASE COUNT OUTFILE
 *
 * Keys are raw libsodium key pairs (not sign.h's guarded memory: tens of
 * thousands of mlocked pages would exceed RLIMIT_MEMLOCK); they are
 * throw-away bench keys.
 */
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/stellar/txbuild.h"

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 2000

struct buf {
	char *p;
	size_t n;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *u)
{
	struct buf *b = u;
	char *np = realloc(b->p, b->n + sz * nm + 1);

	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

static json_t *post(CURL *c, const char *url, const char *body)
{
	struct buf b = {NULL, 0};
	json_t *j = NULL;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(c) == CURLE_OK && b.p)
		j = json_loads(b.p, 0, NULL);
	free(b.p);
	return j;
}

struct key {
	uint8_t pk[32], sk[64];
	char g[STRKEY_BUF];
};

static int register_batch(CURL *c, const char *base, struct key *k, size_t n)
{
	json_t *arr = json_array(), *body, *r;
	char url[512], *s;
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "id", k[i].g, "seq",
						     "4294967296", "balance", "100000000000"));
	body = json_pack("{s:o}", "accounts", arr);
	s = json_dumps(body, JSON_COMPACT);
	snprintf(url, sizeof(url), "%s/debug/accounts", base);
	r = post(c, url, s);
	free(s);
	json_decref(body);
	if (!r || !json_is_true(json_object_get(r, "ok"))) {
		json_decref(r);
		return -1;
	}
	json_decref(r);
	return 0;
}

static char *one_tx(CURL *c, const char *base, const struct key *k, const char *vault,
		    const uint8_t net[32], size_t i)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src = {.account = k->g,
				     .seq_num = 4294967297LL,
				     .fee = 100,
				     .max_time = (uint64_t)time(NULL) + 3600};
	struct txbuild_vault_call call = {vault, VAULT_DEPOSIT, k->g, "1000", NULL, 0};
	struct txbuild b;
	char idk[64], *b64 = NULL, *body = NULL, url[512];
	json_t *r = NULL, *res;
	uint8_t hash[32];

	snprintf(idk, sizeof(idk), "bench:%zu", i);
	call.idempotency_key = idk;
	call.idempotency_key_len = strlen(idk);
	snprintf(url, sizeof(url), "%s/", base);
	txbuild_init(&b);
	if (txbuild_vault(&b, &src, &call, NULL, &err) || txbuild_to_b64(&b, &b64))
		goto out;
	body = malloc(strlen(b64) + 128);
	sprintf(body,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"simulateTransaction\",\"params\":{"
		"\"transaction\":\"%s\"}}",
		b64);
	free(b64);
	b64 = NULL;
	r = post(c, url, body);
	res = json_object_get(r, "result");
	if (!res || json_object_get(res, "error"))
		goto out;
	{
		const char *auth = json_string_value(json_array_get(
			json_object_get(json_array_get(json_object_get(res, "results"), 0), "auth"),
			0));
		struct txbuild_sim sim = {
			json_string_value(json_object_get(res, "transactionData")), &auth, 1};

		if (txbuild_vault(&b, &src, &call, &sim, &err) ||
		    xdr_envelope_hash(&b.env, net, hash))
			goto out;
	}
	memcpy(b.env.sigs[0].hint, k->pk + 28, 4);
	crypto_sign_detached(b.env.sigs[0].sig, NULL, hash, 32, k->sk);
	b.env.n_sigs = 1;
	txbuild_to_b64(&b, &b64);
out:
	if (!b64)
		fprintf(stderr, "sim_txgen: tx %zu: %s\n", i,
			err.msg[0] ? err.msg : "simulate failed");
	json_decref(r);
	free(body);
	txbuild_release(&b);
	return b64;
}

int main(int argc, char **argv)
{
	uint8_t net[32], vid[32];
	char vault[STRKEY_BUF];
	struct key *keys;
	size_t n, i;
	FILE *out;
	CURL *c;

	if (argc != 5 || (n = strtoul(argv[3], NULL, 10)) == 0) {
		fprintf(stderr, "usage: sim_txgen URL PASSPHRASE COUNT OUTFILE\n");
		return 2;
	}
	if (sodium_init() < 0 || !(keys = calloc(n, sizeof(*keys))) || !(out = fopen(argv[4], "w")))
		return 1;
	stellar_network_id(argv[2], net);
	crypto_hash_sha256(vid, (const uint8_t *)"outboxd vault contract", 22);
	strkey_encode_contract(vid, vault);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	c = curl_easy_init();
	for (i = 0; i < n; i++) {
		crypto_sign_keypair(keys[i].pk, keys[i].sk);
		strkey_encode_account(keys[i].pk, keys[i].g);
	}
	for (i = 0; i < n; i += BATCH)
		if (register_batch(c, argv[1], keys + i, n - i < BATCH ? n - i : BATCH) < 0) {
			fprintf(stderr, "sim_txgen: registering accounts failed\n");
			return 1;
		}
	for (i = 0; i < n; i++) {
		char *b64 = one_tx(c, argv[1], &keys[i], vault, net, i);

		if (!b64)
			return 1;
		fprintf(out,
			"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sendTransaction\",\"params\":{"
			"\"transaction\":\"%s\"}}\n",
			b64);
		free(b64);
	}
	sodium_memzero(keys, n * sizeof(*keys));
	free(keys);
	fclose(out);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	return 0;
}
