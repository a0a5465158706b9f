/*
 * txbuild.c - see txbuild.h. Everything the envelope's views point at lives
 * in b->owned (decoded simulation fragments or the inner envelope) or in b
 * itself (op_ref, args), so a struct txbuild must not be copied by value.
 */
#include "common/stellar/txbuild.h"
#include "common/stellar/strkey.h"

#include "common/sha256.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static const char *const vault_fn_names[] = {
	[VAULT_DEPOSIT] = "deposit",
	[VAULT_WITHDRAW] = "withdraw",
	[VAULT_REBALANCE] = "rebalance",
	[VAULT_PAY_REFERRAL] = "pay_referral",
};

const char *vault_fn_name(enum vault_fn fn)
{
	if ((unsigned)fn >= sizeof(vault_fn_names) / sizeof(vault_fn_names[0]))
		return NULL;
	return vault_fn_names[fn];
}

void txbuild_init(struct txbuild *b)
{
	memset(b, 0, sizeof(*b));
}

void txbuild_dispose(struct txbuild *b)
{
	if (b->owned) {
		sodium_memzero(b->owned, b->owned_len);
		free(b->owned);
	}
	b->owned = NULL;
	b->owned_len = 0;
}

void txbuild_release(struct txbuild *b)
{
	txbuild_dispose(b);
	memset(b, 0, sizeof(*b));
}

/* G... into an ed25519 MuxedAccount, or M... when muxed_ok. */
static int decode_muxed(const char *s, bool muxed_ok, const char *field, struct xdr_muxed *m,
			struct outbox_error *err)
{
	memset(m, 0, sizeof(*m));
	if (s && s[0] == 'M') {
		if (!muxed_ok)
			return outbox_error_set(err, OUTBOX_EINVAL, field,
						"muxed (M...) accounts are not allowed on contract "
						"calls");
		m->type = KEY_TYPE_MUXED_ED25519;
		return strkey_decode_muxed(s, m->key, &m->id, field, err);
	}
	m->type = KEY_TYPE_ED25519;
	return strkey_decode_account(s, m->key, field, err);
}

/* Source, sequence, time bounds and fee shared by every builder. */
static int start_tx(struct txbuild *b, const struct txbuild_source *src, bool muxed_ok,
		    struct outbox_error *err)
{
	struct xdr_tx *tx = &b->env.tx;
	int rc;

	txbuild_release(b);
	b->env.type = ENVELOPE_TYPE_TX;
	if ((rc = decode_muxed(src->account, muxed_ok, "source", &tx->source, err)))
		return rc;
	if (src->seq_num <= 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "seq_num", "%lld is not positive",
					(long long)src->seq_num);
	if (src->max_time != 0 && src->max_time < src->min_time)
		return outbox_error_set(
			err, OUTBOX_EINVAL, "max_time", "%llu is before min_time %llu",
			(unsigned long long)src->max_time, (unsigned long long)src->min_time);
	if (src->max_ledger != 0 && src->max_ledger <= src->min_ledger)
		return outbox_error_set(err, OUTBOX_EINVAL, "max_ledger",
					"%u is not after min_ledger %u", src->max_ledger,
					src->min_ledger);
	tx->seq_num = src->seq_num;
	tx->fee = src->fee;
	tx->cond.type = PRECOND_TIME;
	tx->cond.has_time_bounds = true;
	tx->cond.time_bounds.min_time = src->min_time;
	tx->cond.time_bounds.max_time = src->max_time;
	if (src->min_ledger || src->max_ledger) {
		/* PRECOND_V2 with time and ledger bounds; minSeqNum stays absent (strict sequence) */
		tx->cond.type = PRECOND_V2;
		tx->cond.has_ledger_bounds = true;
		tx->cond.min_ledger = src->min_ledger;
		tx->cond.max_ledger = src->max_ledger;
	}
	tx->memo.type = MEMO_NONE;
	return 0;
}

static int decode_address(const char *s, const char *field, struct xdr_sc_address *a,
			  struct outbox_error *err)
{
	if (s && s[0] == 'C') {
		a->type = SC_ADDRESS_TYPE_CONTRACT;
		return strkey_decode_contract(s, a->id, field, err);
	}
	a->type = SC_ADDRESS_TYPE_ACCOUNT;
	return strkey_decode_account(s, a->id, field, err);
}

/* Decode sim's fragments into b->owned and attach them to the (single) op. */
static int attach_sim(struct txbuild *b, const struct txbuild_sim *sim, struct outbox_error *err)
{
	struct xdr_tx *tx = &b->env.tx;
	struct xdr_invoke *iv = &tx->ops[0].body.invoke;
	size_t total, len, off = 0, n;
	int rc;

	if (!sim->transaction_data)
		return outbox_error_set(err, OUTBOX_EINVAL, "transactionData", "missing");
	if (sim->n_auth > XDR_MAX_AUTH)
		return outbox_error_set(err, OUTBOX_EINVAL, "auth", "%zu entries (maximum %d)",
					sim->n_auth, XDR_MAX_AUTH);
	total = xdr_b64_decoded_max(strlen(sim->transaction_data));
	for (size_t i = 0; i < sim->n_auth; i++) {
		if (!sim->auth[i])
			return outbox_error_set(err, OUTBOX_EINVAL, "auth", "entry %zu missing", i);
		total += xdr_b64_decoded_max(strlen(sim->auth[i]));
	}
	if (total > XDR_MAX_ENVELOPE_BYTES)
		return outbox_error_set(err, OUTBOX_ETOOBIG, "simulation",
					"%zu bytes of transactionData and auth", total);
	b->owned = malloc(total);
	if (!b->owned)
		return outbox_error_set(err, -ENOMEM, "simulation", "out of memory");
	b->owned_len = total;

	n = strlen(sim->transaction_data);
	if ((rc = xdr_b64_decode(sim->transaction_data, n, b->owned, total, &len, "transactionData",
				 err)) ||
	    (rc = xdr_soroban_data_parse(b->owned, len, &tx->soroban, err)))
		return rc;
	off = len;
	for (size_t i = 0; i < sim->n_auth; i++) {
		n = strlen(sim->auth[i]);
		if ((rc = xdr_b64_decode(sim->auth[i], n, b->owned + off, total - off, &len, "auth",
					 err)) ||
		    (rc = xdr_auth_entry_check(b->owned + off, len, err)))
			return rc;
		off += len; /* each entry is a multiple of 4 bytes, as XDR */
	}
	iv->n_auth = (uint32_t)sim->n_auth;
	iv->auth.p = b->owned + tx->soroban.raw.len;
	iv->auth.len = (uint32_t)(off - tx->soroban.raw.len);
	tx->has_soroban = true;
	if (tx->soroban.resource_fee < 0 ||
	    (uint64_t)tx->fee + (uint64_t)tx->soroban.resource_fee > UINT32_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, "fee",
					"inclusion %u + resourceFee %lld does not fit the u32 "
					"Transaction.fee (pay it with a fee bump)",
					tx->fee, (long long)tx->soroban.resource_fee);
	tx->fee += (uint32_t)tx->soroban.resource_fee;
	return 0;
}

int txbuild_vault(struct txbuild *b, const struct txbuild_source *src,
		  const struct txbuild_vault_call *call, const struct txbuild_sim *sim,
		  struct outbox_error *err)
{
	struct xdr_tx *tx = &b->env.tx;
	struct xdr_op *op = &tx->ops[0];
	struct xdr_invoke *iv = &op->body.invoke;
	const char *fn = vault_fn_name(call->fn);
	struct xdr_scval *a;
	int rc;

	if ((rc = start_tx(b, src, false, err)))
		return rc;
	if (!fn)
		return outbox_error_set(err, OUTBOX_EINVAL, "fn", "unknown vault function %d",
					(int)call->fn);
	if (!call->idempotency_key || call->idempotency_key_len == 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "idempotency_key", "empty");
	tx->n_ops = 1;
	op->type = XDR_OP_INVOKE_HOST_FUNCTION;
	iv->contract.type = SC_ADDRESS_TYPE_CONTRACT;
	if ((rc = strkey_decode_contract(call->contract, iv->contract.id, "contract", err)))
		return rc;
	iv->function.p = (const uint8_t *)fn;
	iv->function.len = (uint32_t)strlen(fn);
	iv->first_arg = 0;
	if (call->fn != VAULT_REBALANCE) {
		a = &tx->args[tx->n_args++];
		a->type = SCV_ADDRESS;
		if ((rc = decode_address(call->account,
					 call->fn == VAULT_PAY_REFERRAL ? "referrer" : "user",
					 &a->v.addr, err)))
			return rc;
	}
	a = &tx->args[tx->n_args++];
	a->type = SCV_I128;
	if ((rc = xdr_i128_parse(call->amount, &a->v.i128.hi, &a->v.i128.lo, "amount", err)))
		return rc;
	outbox_sha256(b->op_ref, call->idempotency_key, call->idempotency_key_len);
	a = &tx->args[tx->n_args++];
	a->type = SCV_BYTES;
	a->v.bytes.p = b->op_ref;
	a->v.bytes.len = 32;
	iv->n_args = tx->n_args;
	if (sim && (rc = attach_sim(b, sim, err)))
		return rc;
	/* Without sim this is the simulation request: no Soroban data yet, by design. */
	return sim ? xdr_tx_check_soroban(tx, err) : 0;
}

int txbuild_payment(struct txbuild *b, const struct txbuild_source *src, const char *destination,
		    int64_t amount, const uint8_t *memo_hash, struct outbox_error *err)
{
	struct xdr_tx *tx = &b->env.tx;
	struct xdr_payment *p = &tx->ops[0].body.payment;
	int rc;

	if ((rc = start_tx(b, src, true, err)))
		return rc;
	if (amount <= 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "amount",
					"%lld is not a positive number of stroops",
					(long long)amount);
	tx->n_ops = 1;
	tx->ops[0].type = XDR_OP_PAYMENT;
	if ((rc = decode_muxed(destination, true, "destination", &p->destination, err)))
		return rc;
	p->asset.type = ASSET_TYPE_NATIVE;
	p->amount = amount;
	if (memo_hash) {
		tx->memo.type = MEMO_HASH;
		memcpy(tx->memo.hash, memo_hash, 32);
	}
	return 0;
}

int txbuild_fee_bump(struct txbuild *b, const char *inner_b64, const char *fee_source, int64_t fee,
		     uint32_t base_fee, struct outbox_error *err)
{
	struct xdr_envelope *env = &b->env;
	struct fee_bump_inner inner;
	int rc;

	txbuild_release(b);
	if (!inner_b64)
		return outbox_error_set(err, OUTBOX_EINVAL, "inner", "missing");
	rc = xdr_envelope_decode_b64(env, inner_b64, strlen(inner_b64), &b->owned, &b->owned_len,
				     err);
	if (rc)
		return rc;
	if (env->type != ENVELOPE_TYPE_TX)
		return outbox_error_set(err, OUTBOX_EINVAL, "inner",
					"a fee bump wraps a v1 envelope, not type %u", env->type);
	if (env->n_sigs == 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "inner",
					"the inner envelope is unsigned");
	inner.fee = env->tx.fee;
	inner.resource_fee = env->tx.has_soroban ? env->tx.soroban.resource_fee : 0;
	inner.n_ops = env->tx.n_ops;
	if ((rc = txbuild_fee_bump_check(&inner, base_fee, NULL, fee, err)))
		return rc;
	if ((rc = decode_muxed(fee_source, true, "fee_source", &env->bump.fee_source, err)))
		return rc;
	env->type = ENVELOPE_TYPE_TX_FEE_BUMP;
	env->bump.fee = fee;
	env->bump.n_sigs = 0;
	return 0;
}

int txbuild_sign(struct txbuild *b, const struct stellar_keypair *kp, const uint8_t network_id[32],
		 struct outbox_error *err)
{
	int rc = stellar_sign_envelope(&b->env, kp, network_id, b->hash, err);

	if (!rc)
		b->is_signed = true;
	return rc;
}

int txbuild_to_b64(const struct txbuild *b, char **out)
{
	return xdr_envelope_to_b64(&b->env, out);
}

/* ceil(a / b) for a >= 0, b > 0. */
static __int128 ceil_div(__int128 a, __int128 b)
{
	return (a + b - 1) / b;
}

static int check_inputs(const struct fee_bump_inner *inner, const struct fee_bump_queued *queued,
			struct outbox_error *err)
{
	if (inner->n_ops < 1 || inner->n_ops > XDR_MAX_OPS)
		return outbox_error_set(err, OUTBOX_EINVAL, "inner.n_ops", "%u operations",
					inner->n_ops);
	if (inner->resource_fee < 0 || inner->fee < 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "inner.fee",
					"negative fee %lld or resource fee %lld",
					(long long)inner->fee, (long long)inner->resource_fee);
	if (queued && (queued->n_ops < 1 || queued->incl < 0))
		return outbox_error_set(err, OUTBOX_EINVAL, "queued",
					"incl %lld over %u operations", (long long)queued->incl,
					queued->n_ops);
	return 0;
}

/* The three lower bounds on the outer inclusion fee (0 when a rule does not apply). */
static void min_incl(const struct fee_bump_inner *inner, uint32_t base_fee,
		     const struct fee_bump_queued *queued, __int128 r[3])
{
	__int128 k = inner->n_ops, inner_incl = (__int128)inner->fee - inner->resource_fee;

	r[0] = (__int128)base_fee * (k + 1);
	r[1] = inner_incl > 0 ? ceil_div(inner_incl * (k + 1), k) : 0;
	r[2] = queued ? ceil_div((__int128)10 * queued->incl * (k + 1), queued->n_ops) : 0;
}

int txbuild_fee_bump_min_fee(const struct fee_bump_inner *inner, uint32_t base_fee,
			     const struct fee_bump_queued *queued, int64_t *min_fee,
			     struct outbox_error *err)
{
	__int128 r[3], m;
	int rc = check_inputs(inner, queued, err);

	if (rc)
		return rc;
	min_incl(inner, base_fee, queued, r);
	m = r[0] > r[1] ? r[0] : r[1];
	m = m > r[2] ? m : r[2];
	m += inner->resource_fee;
	if (m > INT64_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, "fee", "minimum fee overflows int64");
	*min_fee = (int64_t)m;
	return 0;
}

int txbuild_fee_bump_check(const struct fee_bump_inner *inner, uint32_t base_fee,
			   const struct fee_bump_queued *queued, int64_t outer_fee,
			   struct outbox_error *err)
{
	static const char *const rule[3] = {
		"below base fee x (ops + 1) (rule 1)",
		"per-operation rate below the inner transaction's (rule 2)",
		"less than 10x the queued transaction's rate (replace-by-fee)",
	};
	__int128 r[3], outer_incl = (__int128)outer_fee - inner->resource_fee;
	int rc = check_inputs(inner, queued, err);

	if (rc)
		return rc;
	min_incl(inner, base_fee, queued, r);
	for (int i = 0; i < 3; i++)
		if (outer_incl < r[i])
			return outbox_error_set(
				err, OUTBOX_EINVAL, "fee",
				"%lld: inclusion fee %lld is %s; needs at least %lld",
				(long long)outer_fee, (long long)outer_incl, rule[i],
				(long long)(r[i] + inner->resource_fee));
	return 0;
}
