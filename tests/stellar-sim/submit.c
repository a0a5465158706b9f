/*
 * submit.c - sendTransaction admission, modelled on stellar-core's
 * TransactionQueue::tryAdd and TransactionFrame::checkValid, always against
 * the head (a lagging stellar-rpc still submits to a current core):
 *
 *  - a banned hash, or a second transaction from an account that already has
 *    one queued, gets TRY_AGAIN_LATER; the same full hash again gets
 *    DUPLICATE;
 *  - validity in core's order: structure, time bounds, fee, source account,
 *    sequence number, signatures, balance, unused signatures; for a fee bump
 *    first the outer part, then the inner transaction (errors wrapped in
 *    txFEE_BUMP_INNER_FAILED);
 *  - replace-by-fee: a queued tx is displaced only by a fee bump of the same
 *    sequence number bidding at least 10x per operation;
 *  - a full queue evicts its lowest bidder if the newcomer bids more (the
 *    evicted hash is banned), else refuses and bans the newcomer.
 */
#include "common/stellar/txresult.h"
#include "tests/stellar-sim/chain_state.h"
#include "tests/stellar-sim/vault.h"
#include "tests/stellar-sim/xdrenc.h"

#include <stdlib.h>
#include <string.h>

struct verdict {
	int32_t code;       /* 0: valid */
	int32_t inner_code; /* with TX_FEE_BUMP_INNER_FAILED */
	int64_t fee_charged;
};

static int64_t default_charge(const struct sim_tx *tx)
{
	return sim_fee_add((int64_t)g_chain.cfg.base_fee * sim_tx_fee_ops(tx), tx->resource_fee);
}

/* ceil(a / b) for a >= 0, b > 0. */
static int64_t ceil_div(__int128 a, __int128 b)
{
	return sim_fee_add((a + b - 1) / b, 0);
}

static int32_t time_code(const struct sim_tx *tx)
{
	struct ledger *l = chain_ledger(g_chain.latest);
	uint64_t ref = sim_wall_s();
	/* core's estimate of the next close: two expected ledger times ahead
	 * (capped at the real network's 2 x 5 s, so a manual clock stays usable) */
	uint64_t ms = g_chain.cfg.ledger_ms < 5000 ? g_chain.cfg.ledger_ms : 5000;
	uint64_t slack = (2 * ms + 999) / 1000;

	if (l->close_time > ref)
		ref = l->close_time;
	if (tx->min_time > ref || (tx->min_ledger && tx->min_ledger > g_chain.latest + 1))
		return TX_TOO_EARLY;
	if ((tx->max_time && tx->max_time < ref + slack) ||
	    (tx->max_ledger && tx->max_ledger <= g_chain.latest + 1))
		return TX_TOO_LATE;
	return 0;
}

static int32_t seq_code(const struct sim_tx *tx, const struct account *a)
{
	if (tx->has_min_seq_num)
		return a->seq >= tx->min_seq_num && a->seq < tx->seq ? 0 : TX_BAD_SEQ;
	return tx->seq == a->seq + 1 ? 0 : TX_BAD_SEQ;
}

/* The inner (or only) transaction's validity, bump fee rules aside. */
static int32_t tx_code(const struct sim_tx *tx, bool check_fee, int64_t *fee_charged)
{
	struct account *src = chain_account_get(tx->source, false);
	int32_t c;

	if (tx->static_code)
		return tx->static_code;
	if (tx->kind == SIM_OP_VAULT && tx->call.fn != SIM_VAULT_BAD &&
	    tx->resource_fee < vault_min_resource_fee(&tx->call))
		return TX_SOROBAN_INVALID;
	if ((c = time_code(tx)))
		return c;
	if (check_fee) {
		int64_t min = (int64_t)g_chain.cfg.base_fee * (tx->n_ops ? tx->n_ops : 1);

		if (sim_tx_incl_bid(tx) < min) {
			*fee_charged = sim_fee_add(min, tx->resource_fee);
			return TX_INSUFFICIENT_FEE;
		}
	}
	if (!src || !src->exists)
		return TX_NO_ACCOUNT;
	if ((c = seq_code(tx, src)))
		return c;
	if (tx->sig_code == TX_BAD_AUTH)
		return TX_BAD_AUTH;
	if (!tx->fee_bump && src->balance < tx->fee)
		return TX_INSUFFICIENT_BALANCE;
	return tx->sig_code;
}

static struct verdict validate(const struct sim_tx *tx)
{
	struct verdict v = {0, 0, default_charge(tx)};
	struct account *fs;
	int64_t outer_incl, inner_incl, k, min;

	if (!tx->fee_bump) {
		v.code = tx_code(tx, true, &v.fee_charged);
		return v;
	}
	k = tx->n_ops ? tx->n_ops : 1;
	outer_incl = sim_tx_incl_bid(tx);
	inner_incl = sim_fee_add(tx->inner_fee, -(__int128)tx->resource_fee);
	min = (int64_t)g_chain.cfg.base_fee * (k + 1);
	if (inner_incl > 0 && ceil_div((__int128)inner_incl * (k + 1), k) > min)
		min = ceil_div((__int128)inner_incl * (k + 1), k);
	if (outer_incl < min) {
		v.code = TX_INSUFFICIENT_FEE;
		v.fee_charged = sim_fee_add(min, tx->resource_fee);
		return v;
	}
	fs = chain_account_get(tx->fee_source, false);
	if (!fs || !fs->exists)
		v.code = TX_NO_ACCOUNT;
	else if (tx->outer_sig_code == TX_BAD_AUTH)
		v.code = TX_BAD_AUTH;
	else if (fs->balance < tx->fee)
		v.code = TX_INSUFFICIENT_BALANCE;
	else if (tx->outer_sig_code)
		v.code = tx->outer_sig_code;
	if (v.code)
		return v;
	v.inner_code = tx_code(tx, false, &v.fee_charged);
	if (v.inner_code)
		v.code = TX_FEE_BUMP_INNER_FAILED;
	return v;
}

/* a's per-op bid compared with b's: <0, 0, >0. */
static int rate_cmp(const struct sim_tx *a, const struct sim_tx *b)
{
	__int128 l = (__int128)sim_tx_incl_bid(a) * sim_tx_fee_ops(b);
	__int128 r = (__int128)sim_tx_incl_bid(b) * sim_tx_fee_ops(a);

	return l < r ? -1 : l > r;
}

static void drop_queued(size_t i, bool ban)
{
	struct sim_tx *old = g_chain.queue[i];

	queue_remove_at(i);
	if (ban)
		ban_add(old->hash);
	inflight_drop(old);
	sim_tx_free(old);
}

static size_t index_of(const struct sim_tx *tx)
{
	size_t i;

	for (i = 0; i < g_chain.n_queue; i++)
		if (g_chain.queue[i] == tx)
			break;
	return i;
}

/*
 * The source account already has tx p queued (core checks this before
 * validity): only a fee bump of the same sequence number bidding 10x may
 * replace it. SUBMIT_PENDING means tx may go on to validation.
 */
static enum submit_status replace_by_fee(struct sim_tx *tx, struct sim_tx *p, struct verdict *v)
{
	__int128 need;

	if (!tx->fee_bump || p->seq != tx->seq)
		return SUBMIT_TRY_AGAIN_LATER;
	need = (__int128)10 * sim_tx_incl_bid(p) * sim_tx_fee_ops(tx);
	if ((__int128)sim_tx_incl_bid(tx) * sim_tx_fee_ops(p) < need) {
		v->code = TX_INSUFFICIENT_FEE;
		v->fee_charged = sim_fee_add(ceil_div(need, sim_tx_fee_ops(p)), tx->resource_fee);
		return SUBMIT_ERROR;
	}
	return SUBMIT_PENDING;
}

/* Make room in a full queue, or refuse (and ban) tx. */
static enum submit_status make_room(struct sim_tx *tx)
{
	size_t i, low = 0;

	if (g_chain.n_queue < g_chain.cfg.queue_capacity)
		return SUBMIT_PENDING;
	for (i = 1; i < g_chain.n_queue; i++)
		if (rate_cmp(g_chain.queue[i], g_chain.queue[low]) < 0)
			low = i;
	if (g_chain.n_queue == 0 || rate_cmp(tx, g_chain.queue[low]) <= 0) {
		ban_add(tx->hash);
		return SUBMIT_TRY_AGAIN_LATER;
	}
	drop_queued(low, true);
	return SUBMIT_PENDING;
}

static enum submit_status admit(struct sim_tx *tx, bool blackhole, struct verdict *v)
{
	struct account *src;
	enum submit_status st;

	if (ban_active(tx->hash))
		return SUBMIT_TRY_AGAIN_LATER;
	if (table_find(&g_chain.queued, tx->hash))
		return SUBMIT_DUPLICATE;
	src = chain_account_get(tx->source, false);
	if (src && src->pending && (st = replace_by_fee(tx, src->pending, v)) != SUBMIT_PENDING)
		return st;
	*v = validate(tx);
	if (v->code)
		return SUBMIT_ERROR;
	if (src->pending)
		drop_queued(index_of(src->pending), false);
	if (!blackhole && (st = make_room(tx)) != SUBMIT_PENDING)
		return st;
	tx->queued_at = g_chain.latest;
	tx->tiebreak = sim_rand_u64();
	if (blackhole ? holes_push(tx) : queue_push(tx)) {
		v->code = TX_INTERNAL_ERROR;
		return SUBMIT_ERROR;
	}
	if (!blackhole)
		src->pending = tx;
	inflight_add(tx);
	return SUBMIT_PENDING;
}

void chain_submit(struct sim_tx *tx, bool blackhole, unsigned lag, struct submit_out *out)
{
	struct verdict v = {0, 0, 0};

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&g_chain.lock);
	out->status = admit(tx, blackhole, &v);
	/* core validated against the head; stellar-rpc reports its own ledger */
	out->latest_ledger = chain_view_ledger(lag);
	out->latest_close_time = chain_ledger(out->latest_ledger)->close_time;
	pthread_mutex_unlock(&g_chain.lock);
	if (out->status == SUBMIT_ERROR) {
		if (v.code == TX_FEE_BUMP_INNER_FAILED)
			out->error_result_b64 = enc_result_inner_failed(
				v.fee_charged, tx->inner_hash, v.inner_code);
		else
			out->error_result_b64 = enc_result_code(v.fee_charged, v.code);
	}
	if (out->status != SUBMIT_PENDING)
		sim_tx_free(tx);
}
