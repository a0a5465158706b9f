/*
 * debug.c - simulateTransaction and the chain side of the debug endpoints
 * (shapes in README.md; checks outside the project rely on them):
 *   POST /debug/accounts  {"accounts":[{"id":"G...","seq":"<i64>","balance":"<stroops>"}]}
 *   GET  /debug/state     balances, "vault_contract", "latest_ledger", queue facts
 *   GET  /debug/executions {"by_ref":{hex:n},"max_pending_per_account":{"G...":n}}
 */
#include "common/stellar/strkey.h"
#include "common/stellar/txresult.h"
#include "tests/stellar-sim/chain_state.h"
#include "tests/stellar-sim/vault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEBUG_MAX_ACCOUNTS 200000

static json_t *str_i128(__int128 v)
{
	char b[48], *p = b + sizeof(b) - 1;
	unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;

	*p = '\0';
	do {
		*--p = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return json_string(p);
}

static const char *sim_error(const struct sim_tx *tx, const struct account *src)
{
	if (tx->static_code == TX_SOROBAN_INVALID)
		return "Transaction contains a memo or a muxed source account, which are not "
		       "allowed for Soroban transactions";
	if (tx->static_code == TX_MISSING_OPERATION || !tx->soroban)
		return "Transaction contains no InvokeHostFunction, ExtendFootprintTTL or "
		       "RestoreFootprint operation";
	if (tx->n_ops != 1)
		return "Transaction contains more than one operation";
	if (!src || !src->exists)
		return "Account not found: the transaction source account does not exist";
	if (tx->kind == SIM_OP_CONTRACT)
		return "HostError: Error(Storage, MissingValue)\n\nEvent log (newest first):\n   "
		       "0: contract instance not found";
	if (tx->call.fn == SIM_VAULT_BAD)
		return "HostError: Error(WasmVm, InvalidAction)\n\nEvent log (newest first):\n   "
		       "0: function or arguments do not match the vault interface";
	/*
	 * By default a call whose precondition fails (a withdrawal beyond the
	 * balance) simulates fine, is submitted, executes and FAILS on chain,
	 * which is the on-chain failure the tests and the demo need. Only
	 * --strict-simulate runs the preconditions here, as the real host would.
	 */
	if (!g_chain.cfg.strict_simulate)
		return NULL;
	switch (vault_check(&tx->call)) {
	case 0:
		return NULL;
	case 1:
		return "HostError: Error(Contract, #1)\n\nEvent log (newest first):\n   0: "
		       "insufficient balance";
	case 2:
		return "HostError: Error(Contract, #2)\n\nEvent log (newest first):\n   0: amount "
		       "must be positive";
	default:
		return "HostError: Error(WasmVm, InvalidAction)\n\nEvent log (newest first):\n   "
		       "0: function or arguments do not match the vault interface";
	}
}

json_t *chain_simulate(const struct sim_tx *tx, unsigned lag)
{
	json_t *o = json_object(), *res, *auth;
	const char *e;
	char *data, fee[24];

	pthread_mutex_lock(&g_chain.lock);
	json_object_set_new(o, "latestLedger", json_integer(chain_view_ledger(lag)));
	e = sim_error(tx, chain_account_get(tx->source, false));
	pthread_mutex_unlock(&g_chain.lock);
	if (e) {
		json_object_set_new(o, "error", json_string(e));
		return o;
	}
	data = vault_transaction_data(&g_chain.cfg, &tx->call);
	if (!data || !tx->auth_b64) {
		free(data);
		json_object_set_new(o, "error", json_string("internal error: out of memory"));
		return o;
	}
	snprintf(fee, sizeof(fee), "%lld", (long long)vault_min_resource_fee(&tx->call));
	json_object_set_new(o, "transactionData", json_string(data));
	json_object_set_new(o, "minResourceFee", json_string(fee));
	json_object_set_new(o, "events", json_array());
	res = json_object();
	auth = json_array();
	json_array_append_new(auth, json_string(tx->auth_b64));
	json_object_set_new(res, "auth", auth);
	json_object_set_new(res, "xdr", json_string("AAAAAQ==")); /* SCV_VOID */
	json_object_set_new(o, "results", json_pack("[o]", res));
	free(data);
	return o;
}

/* A JSON string (or integer) holding an int64 >= 0. */
static int get_i64(json_t *v, int64_t *out)
{
	const char *s;
	char *end;
	long long x;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return *out >= 0 ? 0 : -1;
	}
	if (!json_is_string(v))
		return -1;
	s = json_string_value(v);
	if (!*s || strlen(s) > 19 || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end || x < 0)
		return -1;
	*out = x;
	return 0;
}

int chain_debug_accounts(json_t *req, char *errbuf, size_t errlen)
{
	json_t *arr = json_object_get(req, "accounts"), *a;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) > DEBUG_MAX_ACCOUNTS) {
		snprintf(errbuf, errlen, "accounts: expected an array of at most %d objects",
			 DEBUG_MAX_ACCOUNTS);
		return -1;
	}
	/* Validate everything first so a bad entry changes nothing. */
	json_array_foreach(arr, i, a)
	{
		uint8_t key[32];
		int64_t x;
		json_t *id = json_object_get(a, "id");

		if (!json_is_object(a) || !json_is_string(id) ||
		    strkey_decode_account(json_string_value(id), key, "id", NULL) < 0) {
			snprintf(errbuf, errlen, "accounts[%zu].id: not a G... account strkey", i);
			return -1;
		}
		if (get_i64(json_object_get(a, "seq"), &x) < 0) {
			snprintf(errbuf, errlen,
				 "accounts[%zu].seq: not a non-negative int64 string", i);
			return -1;
		}
		if (get_i64(json_object_get(a, "balance"), &x) < 0) {
			snprintf(errbuf, errlen,
				 "accounts[%zu].balance: not a non-negative stroops string", i);
			return -1;
		}
	}
	pthread_mutex_lock(&g_chain.lock);
	json_array_foreach(arr, i, a)
	{
		uint8_t key[32];
		int64_t seq = 0, bal = 0;
		struct account *acc;

		strkey_decode_account(json_string_value(json_object_get(a, "id")), key, "id", NULL);
		get_i64(json_object_get(a, "seq"), &seq);
		get_i64(json_object_get(a, "balance"), &bal);
		acc = chain_account_get(key, true);
		if (!acc) {
			pthread_mutex_unlock(&g_chain.lock);
			snprintf(errbuf, errlen, "out of memory");
			return -1;
		}
		acc->exists = true;
		acc->seq = seq;
		acc->balance = bal;
		/* as if the latest ledger had left it so: views behind it do not
		 * see the account (or its reset) yet */
		acct_note(acc, g_chain.latest);
	}
	pthread_mutex_unlock(&g_chain.lock);
	return 0;
}

static void put_balance(struct table_node *n, void *arg)
{
	struct account *a = table_entry(n, struct account, node);
	json_t *o = arg, *acc;
	char id[STRKEY_BUF];

	if (a->is_contract)
		strkey_encode_contract(a->node.key, id);
	else
		strkey_encode_account(a->node.key, id);
	json_object_set_new(json_object_get(o, "balances"), id, str_i128(a->balance));
	if (!a->exists)
		return;
	acc = json_object();
	json_object_set_new(acc, "seq", str_i128(a->seq));
	json_object_set_new(acc, "balance", str_i128(a->balance));
	json_object_set_new(acc, "pending", json_boolean(a->pending != NULL));
	json_object_set_new(acc, "in_flight", json_integer(a->in_flight));
	json_object_set_new(json_object_get(o, "accounts"), id, acc);
}

/* The ingest lag in force: ingest_lag_alt_ledgers is null with one view. */
static void put_views(json_t *o)
{
	unsigned lag, alt;
	bool two;

	view_get(&lag, &two, &alt);
	json_object_set_new(o, "ingest_lag_ledgers", json_integer(lag));
	json_object_set_new(o, "ingest_lag_alt_ledgers", two ? json_integer(alt) : json_null());
}

json_t *chain_debug_state(void)
{
	json_t *o = json_object();
	char id[STRKEY_BUF];
	struct account *v;

	strkey_encode_contract(g_chain.cfg.vault_contract, id);
	json_object_set_new(o, "vault_contract", json_string(id));
	json_object_set_new(o, "balances", json_object());
	json_object_set_new(o, "accounts", json_object());
	pthread_mutex_lock(&g_chain.lock);
	json_object_set_new(o, "latest_ledger", json_integer(g_chain.latest));
	json_object_set_new(o, "latest_close_time",
			    json_integer((json_int_t)chain_ledger(g_chain.latest)->close_time));
	json_object_set_new(o, "oldest_ledger", json_integer(chain_view_oldest(g_chain.latest)));
	v = chain_account_get(g_chain.cfg.vault_contract, false);
	json_object_set_new(o, "vault_reserve", str_i128(v ? v->balance : 0));
	json_object_set_new(o, "queue_size", json_integer((json_int_t)g_chain.n_queue));
	json_object_set_new(o, "black_holed", json_integer((json_int_t)g_chain.n_holes));
	json_object_set_new(o, "banned", json_integer((json_int_t)g_chain.n_bans));
	json_object_set_new(o, "background_fee_load", json_integer(g_chain.bg_load));
	table_each(&g_chain.accounts, put_balance, o);
	pthread_mutex_unlock(&g_chain.lock);
	json_object_set_new(o, "base_fee", json_integer(g_chain.cfg.base_fee));
	json_object_set_new(o, "ledger_capacity", json_integer(g_chain.cfg.ledger_capacity));
	json_object_set_new(o, "queue_capacity", json_integer(g_chain.cfg.queue_capacity));
	json_object_set_new(o, "passphrase", json_string(g_chain.cfg.passphrase));
	put_views(o);
	return o;
}

static void put_exec(struct table_node *n, void *arg)
{
	char hex[65];

	sim_hex(n->key, 32, hex);
	json_object_set_new(arg, hex,
			    json_integer((json_int_t)table_entry(n, struct exec_count, node)->n));
}

static void put_max(struct table_node *n, void *arg)
{
	struct account *a = table_entry(n, struct account, node);
	char id[STRKEY_BUF];

	if (!a->max_in_flight)
		return;
	strkey_encode_account(a->node.key, id);
	json_object_set_new(arg, id, json_integer(a->max_in_flight));
}

json_t *chain_debug_executions(void)
{
	json_t *o = json_object(), *by_ref = json_object(), *maxp = json_object();

	pthread_mutex_lock(&g_chain.lock);
	table_each(&g_chain.execs, put_exec, by_ref);
	table_each(&g_chain.accounts, put_max, maxp);
	pthread_mutex_unlock(&g_chain.lock);
	json_object_set_new(o, "by_ref", by_ref);
	json_object_set_new(o, "max_pending_per_account", maxp);
	return o;
}

void chain_set_background_load(unsigned n)
{
	pthread_mutex_lock(&g_chain.lock);
	g_chain.bg_load = n;
	pthread_mutex_unlock(&g_chain.lock);
}
