/*
 * envelope.c - see envelope.h. Signature rule (a single-signer model of
 * stellar-core's): every account that must sign (the tx source, an
 * operation's own source, the fee source of a bump) has its master key as
 * its only signer with weight 1 and zero thresholds. Each signature must be
 * a valid signature of one of those keys over the hash (txBAD_AUTH_EXTRA
 * otherwise), and each of those keys must have signed (txBAD_AUTH).
 */
#include "tests/stellar-sim/envelope.h"
#include "common/stellar/sign.h"
#include "common/stellar/txresult.h"
#include "tests/stellar-sim/vault.h"
#include "tests/stellar-sim/xdrenc.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SIGNERS 2

static int32_t check_sigs(const uint8_t signers[][32], int n_signers, const struct xdr_sig *sigs,
			  uint32_t n_sigs, const uint8_t hash[32])
{
	bool signed_by[MAX_SIGNERS] = {false};
	bool extra = false;
	uint32_t i;
	int k;

	for (i = 0; i < n_sigs; i++) {
		bool used = false;

		for (k = 0; k < n_signers; k++) {
			if (memcmp(sigs[i].hint, signers[k] + 28, 4))
				continue;
			if (stellar_verify(signers[k], hash, sigs[i].sig) == 0) {
				signed_by[k] = true;
				used = true;
				break;
			}
		}
		if (!used)
			extra = true;
	}
	for (k = 0; k < n_signers; k++)
		if (!signed_by[k])
			return TX_BAD_AUTH;
	return extra ? TX_BAD_AUTH_EXTRA : 0;
}

static bool is_invoke(const struct xdr_tx *t)
{
	uint32_t i;

	for (i = 0; i < t->n_ops; i++)
		if (t->ops[i].type == XDR_OP_INVOKE_HOST_FUNCTION)
			return true;
	return false;
}

/* Structural rules, in stellar-core's order. */
static int32_t static_rules(const struct xdr_tx *t, bool inner_of_bump)
{
	if (t->n_ops == 0)
		return TX_MISSING_OPERATION;
	if (is_invoke(t)) {
		if (t->n_ops != 1)
			return TX_MALFORMED;
		if (t->memo.type != MEMO_NONE || t->source.type != KEY_TYPE_ED25519 ||
		    (t->ops[0].has_source && t->ops[0].source.type != KEY_TYPE_ED25519))
			return TX_SOROBAN_INVALID;
		if (!t->has_soroban)
			return TX_MALFORMED;
		if (t->soroban.resource_fee < 0 ||
		    (!inner_of_bump && t->soroban.resource_fee > (int64_t)t->fee))
			return TX_SOROBAN_INVALID;
		return 0;
	}
	if (t->has_soroban)
		return TX_MALFORMED;
	if (t->n_ops != 1 || t->ops[0].body.payment.asset.type != ASSET_TYPE_NATIVE)
		return TX_NOT_SUPPORTED; /* the sim applies single native payments only */
	return 0;
}

static void flatten(const struct sim_config *cfg, const struct xdr_tx *t, struct sim_tx *tx)
{
	const struct xdr_precond *c = &t->cond;

	memcpy(tx->source, t->source.key, 32);
	tx->seq = t->seq_num;
	tx->inner_fee = t->fee;
	tx->n_ops = t->n_ops;
	tx->soroban = is_invoke(t);
	if (t->has_soroban) {
		tx->resource_fee = t->soroban.resource_fee;
		tx->instructions = t->soroban.instructions;
	}
	if (c->type == PRECOND_TIME || (c->type == PRECOND_V2 && c->has_time_bounds)) {
		tx->min_time = c->time_bounds.min_time;
		tx->max_time = c->time_bounds.max_time;
	}
	if (c->type == PRECOND_V2) {
		if (c->has_ledger_bounds) {
			tx->min_ledger = c->min_ledger;
			tx->max_ledger = c->max_ledger;
		}
		tx->has_min_seq_num = c->has_min_seq_num;
		tx->min_seq_num = c->min_seq_num;
	}
	if (t->n_ops == 0)
		return;
	if (t->ops[0].type == XDR_OP_INVOKE_HOST_FUNCTION) {
		vault_parse(cfg, t, tx);
	} else {
		tx->kind = SIM_OP_PAYMENT;
		memcpy(tx->pay_dest, t->ops[0].body.payment.destination.key, 32);
		tx->pay_amount = t->ops[0].body.payment.amount;
	}
}

/* Accounts that must sign the (inner) transaction. */
static int signers_of(const struct xdr_tx *t, uint8_t out[MAX_SIGNERS][32])
{
	int n = 1;

	memcpy(out[0], t->source.key, 32);
	if (t->n_ops == 1 && t->ops[0].has_source && memcmp(t->ops[0].source.key, out[0], 32))
		memcpy(out[n++], t->ops[0].source.key, 32);
	return n;
}

static struct sim_tx *decode(const struct sim_config *cfg, const char *b64, size_t len,
			     bool check_signatures, struct outbox_error *err)
{
	struct xdr_envelope *env = malloc(sizeof(*env));
	struct sim_tx *tx = calloc(1, sizeof(*tx));
	uint8_t *raw = NULL, signers[MAX_SIGNERS][32];
	size_t raw_len;
	int n;

	if (!env || !tx)
		goto fail;
	if (xdr_envelope_decode_b64(env, b64, len, &raw, &raw_len, err) < 0)
		goto fail;
	tx->fee_bump = env->type == ENVELOPE_TYPE_TX_FEE_BUMP;
	if (xdr_envelope_hash(env, cfg->network_id, tx->hash) < 0)
		goto fail;
	if (!tx->fee_bump)
		memcpy(tx->inner_hash, tx->hash, 32);
	else if (xdr_envelope_inner_hash(env, cfg->network_id, tx->inner_hash) < 0)
		goto fail;
	flatten(cfg, &env->tx, tx);
	tx->static_code = static_rules(&env->tx, tx->fee_bump);
	tx->fee = tx->fee_bump ? env->bump.fee : (int64_t)env->tx.fee;
	memcpy(tx->fee_source, tx->fee_bump ? env->bump.fee_source.key : env->tx.source.key, 32);
	if (check_signatures) {
		n = signers_of(&env->tx, signers);
		tx->sig_code = check_sigs(signers, n, env->sigs, env->n_sigs, tx->inner_hash);
		if (tx->fee_bump) {
			memcpy(signers[0], tx->fee_source, 32);
			tx->outer_sig_code =
				check_sigs(signers, 1, env->bump.sigs, env->bump.n_sigs, tx->hash);
		}
	} else if (env->tx.n_ops == 1 && env->tx.ops[0].type == XDR_OP_INVOKE_HOST_FUNCTION) {
		const struct xdr_invoke *inv = &env->tx.ops[0].body.invoke;
		struct xdr_writer w;

		xdr_writer_init(&w, 65536);
		enc_auth_source_account(&w, &inv->contract, inv->function,
					&env->tx.args[inv->first_arg], inv->n_args);
		tx->auth_b64 = enc_b64(&w);
		xdr_writer_release(&w);
	}
	tx->envelope_b64 = strndup(b64, len);
	if (!tx->envelope_b64)
		goto fail;
	free(raw);
	free(env);
	return tx;
fail:
	if (err && !err->code)
		outbox_error_set(err, -12, "transaction", "out of memory");
	free(raw);
	free(env);
	sim_tx_free(tx);
	return NULL;
}

struct sim_tx *envelope_decode(const struct sim_config *cfg, const char *b64, size_t len,
			       struct outbox_error *err)
{
	return decode(cfg, b64, len, true, err);
}

struct sim_tx *envelope_decode_unsigned(const struct sim_config *cfg, const char *b64, size_t len,
					struct outbox_error *err)
{
	return decode(cfg, b64, len, false, err);
}
