/*
 * executors.c - op kinds -> vault-contract calls, and the only sender.
 *
 * The table below is the one place that says which contract function an op
 * kind invokes and with which payload fields; executor_send() is the only
 * caller of submit_raw_send(). Both refuse a kind outside the table, so an
 * op of an unknown kind can never reach the network.
 */
#include "worker/worker.h"

#include "common/log.h"

#include <string.h>

struct executor {
	enum op_kind kind;
	enum vault_fn fn;
	bool needs_account; /* the user / referrer address argument */
};

static const struct executor executors[] = {
	{OP_KIND_DEPOSIT, VAULT_DEPOSIT, true},
	{OP_KIND_WITHDRAW, VAULT_WITHDRAW, true},
	{OP_KIND_REBALANCE, VAULT_REBALANCE, false},
	{OP_KIND_REFERRAL_REWARD, VAULT_PAY_REFERRAL, true},
};

static const struct executor *executor_of(enum op_kind k)
{
	for (size_t i = 0; i < sizeof(executors) / sizeof(executors[0]); i++)
		if (executors[i].kind == k)
			return &executors[i];
	return NULL;
}

int executor_build(struct job *j, const struct txbuild_source *src, const struct txbuild_sim *sim,
		   struct outbox_error *err)
{
	const struct executor *e = executor_of(j->kind);
	struct txbuild_vault_call call;

	if (!e)
		return outbox_error_set(err, OUTBOX_EINVAL, "kind", "%d has no executor",
					(int)j->kind);
	if (e->needs_account && !j->account[0])
		return outbox_error_set(err, OUTBOX_EINVAL, "payload.account", "is missing");
	call = (struct txbuild_vault_call){
		.contract = j->w->cfg->vault_contract,
		.fn = e->fn,
		.account = e->needs_account ? j->account : NULL,
		.amount = j->amount,
		.idempotency_key = j->key,
		.idempotency_key_len = strlen(j->key),
	};
	return txbuild_vault(&j->tb, src, &call, sim, err);
}

int executor_send(struct job *j, const char *envelope_b64, rpc_done_fn cb, struct outbox_error *err)
{
	if (!executor_of(j->kind))
		return outbox_error_set(err, OUTBOX_EINVAL, "kind", "%d has no executor",
					(int)j->kind);
	return submit_raw_send(j->w->rpc, envelope_b64, cb, j, err);
}
