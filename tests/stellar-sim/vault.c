/*
 * vault.c - see vault.h. Argument decoding happens at submission (outside
 * the lock); balances change only in vault_apply, under the chain lock,
 * during ledger close.
 */
#include "tests/stellar-sim/vault.h"
#include "common/stellar/txresult.h"
#include "tests/stellar-sim/chain_state.h"
#include "tests/stellar-sim/xdrenc.h"

#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum sim_vault_fn fn;
	bool has_user;
} fns[] = {
	{"deposit", SIM_VAULT_DEPOSIT, true},
	{"withdraw", SIM_VAULT_WITHDRAW, true},
	{"rebalance", SIM_VAULT_REBALANCE, false},
	{"pay_referral", SIM_VAULT_PAY_REFERRAL, true},
};

static void parse_args(const struct xdr_tx *xtx, const struct xdr_invoke *inv,
		       struct sim_vault_call *c)
{
	const struct xdr_scval *a = &xtx->args[inv->first_arg];
	uint32_t need, i = 0;
	size_t k;

	c->fn = SIM_VAULT_BAD;
	for (k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
		if (strlen(fns[k].name) == inv->function.len &&
		    !memcmp(fns[k].name, inv->function.p, inv->function.len))
			break;
	}
	if (k == sizeof(fns) / sizeof(fns[0]))
		return;
	need = fns[k].has_user ? 3 : 2;
	if (inv->n_args != need)
		return;
	if (fns[k].has_user) {
		if (a[0].type != SCV_ADDRESS)
			return;
		memcpy(c->user, a[0].v.addr.id, 32);
		c->user_is_contract = a[0].v.addr.type == SC_ADDRESS_TYPE_CONTRACT;
		i = 1;
	}
	if (a[i].type != SCV_I128 || a[i + 1].type != SCV_BYTES || a[i + 1].v.bytes.len != 32)
		return;
	c->amount = (__int128)(((unsigned __int128)(uint64_t)a[i].v.i128.hi << 64) |
			       (unsigned __int128)a[i].v.i128.lo);
	memcpy(c->op_ref, a[i + 1].v.bytes.p, 32);
	c->fn = fns[k].fn;
}

uint32_t vault_instructions(const struct sim_vault_call *c)
{
	return c->fn == SIM_VAULT_PAY_REFERRAL ? 1800000 : 1500000;
}

static uint32_t n_rw(const struct sim_vault_call *c)
{
	return c->fn == SIM_VAULT_PAY_REFERRAL ? 2 : 1;
}

int64_t vault_min_resource_fee(const struct sim_vault_call *c)
{
	uint32_t instr = vault_instructions(c), rw = n_rw(c);

	/* instructions, entries, disk read (3000 B), writes (400 B each), refundable */
	return 25 * (int64_t)((instr + 9999) / 10000) + 6250 * (int64_t)(1 + rw) +
	       10000 * (int64_t)rw + 1786 * 3 + 11800 * (int64_t)rw + 20000;
}

/* The footprint's read-write keys for the call, raw, into w. */
static void put_rw_keys(const struct sim_config *cfg, const struct sim_vault_call *c,
			struct xdr_writer *w)
{
	if (c->fn == SIM_VAULT_REBALANCE || c->fn == SIM_VAULT_PAY_REFERRAL)
		enc_key_vault_reserve(w, cfg->vault_contract);
	if (c->fn != SIM_VAULT_REBALANCE)
		enc_key_vault_balance(w, cfg->vault_contract, c->user, c->user_is_contract);
}

char *vault_transaction_data(const struct sim_config *cfg, const struct sim_vault_call *c)
{
	struct xdr_writer w;
	char *s;

	xdr_writer_init(&w, 65536);
	xdr_put_u32(&w, 0); /* ext v0 */
	xdr_put_u32(&w, 1); /* readOnly: the contract instance */
	enc_key_contract_instance(&w, cfg->vault_contract);
	xdr_put_u32(&w, n_rw(c));
	put_rw_keys(cfg, c, &w);
	xdr_put_u32(&w, vault_instructions(c));
	xdr_put_u32(&w, 3000);
	xdr_put_u32(&w, 400 * n_rw(c));
	xdr_put_i64(&w, vault_min_resource_fee(c));
	s = enc_b64(&w);
	xdr_writer_release(&w);
	return s;
}

/* Does raw contain the bytes of w? (Footprint keys are whole XDR units.) */
static bool contains(struct xdr_bytes raw, const struct xdr_writer *w)
{
	return !xdr_writer_status(w) && memmem(raw.p, raw.len, w->buf, w->len) != NULL;
}

static bool footprint_ok(const struct sim_config *cfg, const struct xdr_tx *xtx,
			 const struct sim_vault_call *c)
{
	struct xdr_writer w;
	bool ok;

	if (!xtx->has_soroban)
		return false;
	xdr_writer_init(&w, 4096);
	enc_key_contract_instance(&w, cfg->vault_contract);
	ok = contains(xtx->soroban.raw, &w);
	if (c->fn == SIM_VAULT_REBALANCE || c->fn == SIM_VAULT_PAY_REFERRAL) {
		w.len = 0;
		enc_key_vault_reserve(&w, cfg->vault_contract);
		ok = ok && contains(xtx->soroban.raw, &w);
	}
	if (c->fn != SIM_VAULT_REBALANCE) {
		w.len = 0;
		enc_key_vault_balance(&w, cfg->vault_contract, c->user, c->user_is_contract);
		ok = ok && contains(xtx->soroban.raw, &w);
	}
	xdr_writer_release(&w);
	return ok;
}

/* The op carries exactly the SOURCE_ACCOUNT entry simulate returns. */
static bool auth_ok(const struct xdr_tx *xtx, const struct xdr_invoke *inv)
{
	struct xdr_writer w;
	bool ok;

	if (inv->n_auth != 1)
		return false;
	xdr_writer_init(&w, 65536);
	enc_auth_source_account(&w, &inv->contract, inv->function, &xtx->args[inv->first_arg],
				inv->n_args);
	ok = !xdr_writer_status(&w) && w.len == inv->auth.len && !memcmp(w.buf, inv->auth.p, w.len);
	xdr_writer_release(&w);
	return ok;
}

void vault_parse(const struct sim_config *cfg, const struct xdr_tx *xtx, struct sim_tx *tx)
{
	const struct xdr_invoke *inv = &xtx->ops[0].body.invoke;

	memset(&tx->call, 0, sizeof(tx->call));
	tx->call.fn = SIM_VAULT_BAD;
	if (inv->contract.type != SC_ADDRESS_TYPE_CONTRACT ||
	    memcmp(inv->contract.id, cfg->vault_contract, 32)) {
		tx->kind = SIM_OP_CONTRACT;
		return;
	}
	tx->kind = SIM_OP_VAULT;
	parse_args(xtx, inv, &tx->call);
	if (tx->call.fn == SIM_VAULT_BAD)
		return;
	tx->footprint_ok = footprint_ok(cfg, xtx, &tx->call);
	tx->auth_ok = auth_ok(xtx, inv);
}

static struct account *reserve(void)
{
	return chain_account_get(g_chain.cfg.vault_contract, true);
}

int vault_check(const struct sim_vault_call *c)
{
	struct account *a;

	switch (c->fn) {
	case SIM_VAULT_DEPOSIT:
		return c->amount > 0 ? 0 : 2;
	case SIM_VAULT_WITHDRAW:
		if (c->amount <= 0)
			return 2;
		a = chain_account_get(c->user, false);
		return a && a->balance >= c->amount ? 0 : 1;
	case SIM_VAULT_REBALANCE:
		a = reserve();
		if (c->amount == 0)
			return 2;
		return a && a->balance + c->amount >= 0 ? 0 : 1;
	case SIM_VAULT_PAY_REFERRAL:
		if (c->amount <= 0)
			return 2;
		a = reserve();
		return a && a->balance >= c->amount ? 0 : 1;
	default:
		return 3;
	}
}

static void count_success(const uint8_t op_ref[32])
{
	struct table_node *n = table_find(&g_chain.execs, op_ref);
	struct exec_count *e;

	if (n) {
		table_entry(n, struct exec_count, node)->n++;
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	memcpy(e->node.key, op_ref, 32);
	e->n = 1;
	if (table_insert(&g_chain.execs, &e->node) < 0)
		free(e);
}

int vault_apply(const struct sim_vault_call *c)
{
	struct account *user = NULL, *res = NULL;

	if (vault_check(c))
		return IHF_TRAPPED;
	if (c->fn != SIM_VAULT_REBALANCE) {
		user = chain_account_get(c->user, true);
		if (!user)
			return IHF_TRAPPED;
		user->is_contract = c->user_is_contract;
	}
	if (c->fn == SIM_VAULT_REBALANCE || c->fn == SIM_VAULT_PAY_REFERRAL)
		res = reserve();
	if ((c->fn == SIM_VAULT_REBALANCE || c->fn == SIM_VAULT_PAY_REFERRAL) && !res)
		return IHF_TRAPPED;
	switch (c->fn) {
	case SIM_VAULT_DEPOSIT:
		user->balance += c->amount;
		break;
	case SIM_VAULT_WITHDRAW:
		user->balance -= c->amount;
		break;
	case SIM_VAULT_REBALANCE:
		res->balance += c->amount;
		break;
	case SIM_VAULT_PAY_REFERRAL:
		res->balance -= c->amount;
		user->balance += c->amount;
		break;
	default:
		return IHF_TRAPPED;
	}
	count_success(c->op_ref);
	return IHF_SUCCESS;
}
