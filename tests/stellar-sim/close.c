/*
 * close.c - closing a ledger, as stellar-core does (surge pricing, sequence
 * consumption, queue ageing and bans):
 *
 *  1. the close time is max(wall clock, previous + 1): close times strictly
 *     increase, as on the real network;
 *  2. queued transactions that can no longer be valid (past maxTime or
 *     maxLedger, or a consumed sequence number) leave the queue and are
 *     banned like stellar-core's post-ledger revalidation does; the rest
 *     that are valid now are candidates, plus --background fee load;
 *  3. candidates are ranked by inclusion bid per operation (ties broken by a
 *     seeded random draw); at most --ledger-capacity are included; when
 *     some are left out (surge pricing) every included tx pays the lowest
 *     included per-op bid, otherwise the base fee per op;
 *  4. included transactions are applied in that order: the fee source pays,
 *     the sequence number is consumed, the operation runs (SUCCESS or
 *     FAILED), the result is stored for getTransaction(s) and the new
 *     state of every account it touched is noted for getLedgerEntries
 *     under ingest lag (view.c);
 *  5. queued transactions not included within --queue-ledgers ledgers are
 *     dropped and their hashes banned for --ban-ledgers ledgers; black-holed
 *     ones are forgotten after the same time; bans expire.
 */
#include "common/stellar/txresult.h"
#include "tests/stellar-sim/chain_state.h"
#include "tests/stellar-sim/vault.h"
#include "tests/stellar-sim/xdrenc.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* A candidate: a queued tx, or a synthetic background bid (tx == NULL). */
struct cand {
	struct sim_tx *tx;
	int64_t incl;
	uint32_t ops;
	uint64_t tiebreak;
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	__int128 l = (__int128)a->incl * b->ops, r = (__int128)b->incl * a->ops;

	if (l != r)
		return l > r ? -1 : 1;
	return a->tiebreak < b->tiebreak ? -1 : a->tiebreak > b->tiebreak;
}

static void free_ledger_slot(struct ledger *l)
{
	uint32_t i;

	for (i = 0; i < l->n_txs; i++) {
		struct txrec *r = l->txs[i];

		table_remove(&g_chain.txs, &r->node);
		if (r->fee_bump)
			table_remove(&g_chain.txs_inner, &r->inner_node);
		free(r->envelope_b64);
		free(r->result_b64);
		free(r);
	}
	free(l->txs);
	free(l->fees_classic);
	free(l->fees_soroban);
	json_decref(l->header_json); /* answers still holding it keep their copy */
	json_decref(l->meta_json);
	memset(l, 0, sizeof(*l));
}

/* Can tx never again be valid in a ledger closing at (seq, t)? */
static bool dead(const struct sim_tx *tx, uint32_t seq, uint64_t t)
{
	struct account *a = chain_account_get(tx->source, false);

	if (tx->max_time && t > tx->max_time)
		return true;
	if (tx->max_ledger && seq >= tx->max_ledger)
		return true;
	return !a || a->seq >= tx->seq;
}

static bool valid_now(const struct sim_tx *tx, uint32_t seq, uint64_t t)
{
	struct account *a = chain_account_get(tx->source, false);

	if (tx->min_time > t || (tx->min_ledger && seq < tx->min_ledger))
		return false;
	if (tx->has_min_seq_num)
		return a->seq >= tx->min_seq_num && a->seq < tx->seq;
	return tx->seq == a->seq + 1;
}

static struct cand *collect(uint32_t seq, uint64_t t, size_t *n_out)
{
	size_t n = 0, i, bg = g_chain.bg_load;
	struct cand *c = malloc((g_chain.n_queue + bg + 1) * sizeof(*c));

	if (!c)
		return NULL;
	for (i = 0; i < g_chain.n_queue;) {
		struct sim_tx *tx = g_chain.queue[i];

		if (dead(tx, seq, t)) {
			/* core re-validates its queue after each ledger and bans
			 * what became invalid */
			queue_remove_at(i);
			ban_add(tx->hash);
			inflight_drop(tx);
			sim_tx_free(tx);
			continue;
		}
		if (valid_now(tx, seq, t))
			c[n++] = (struct cand){tx, sim_tx_incl_bid(tx), sim_tx_fee_ops(tx),
					       sim_rand_u64()};
		i++;
	}
	/* Background load: bids rising with every loaded ledger, up to 40x base. */
	if (bg)
		g_chain.bg_level = g_chain.bg_level < 40 ? g_chain.bg_level + 1 : 40;
	else
		g_chain.bg_level = 0;
	for (i = 0; i < bg; i++) {
		int64_t base = g_chain.cfg.base_fee;

		c[n++] = (struct cand){NULL,
				       base * (1 + g_chain.bg_level) + (int64_t)(i * base / bg), 1,
				       sim_rand_u64()};
	}
	*n_out = n;
	return c;
}

static int32_t run_op(const struct sim_tx *tx, struct op_outcome *op)
{
	memset(op, 0, sizeof(*op));
	if (tx->kind == SIM_OP_PAYMENT) {
		struct account *src = chain_account_get(tx->source, false);
		struct account *dst = chain_account_get(tx->pay_dest, false);

		op->op_type = 1;
		if (tx->pay_amount <= 0)
			op->code = PAYMENT_MALFORMED;
		else if (!dst || !dst->exists)
			op->code = PAYMENT_NO_DESTINATION;
		else if (src->balance < tx->pay_amount)
			op->code = PAYMENT_UNDERFUNDED;
		else {
			src->balance -= tx->pay_amount;
			dst->balance += tx->pay_amount;
		}
		return op->code;
	}
	op->op_type = 24;
	if (tx->kind != SIM_OP_VAULT || tx->call.fn == SIM_VAULT_BAD || !tx->auth_ok ||
	    !tx->footprint_ok)
		op->code = IHF_TRAPPED;
	else if (tx->instructions < vault_instructions(&tx->call))
		op->code = IHF_RESOURCE_LIMIT_EXCEEDED;
	else
		op->code = vault_apply(&tx->call);
	if (op->code == IHF_SUCCESS)
		crypto_hash_sha256(op->success_hash, tx->call.op_ref, 32);
	return op->code;
}

/*
 * Record, for getLedgerEntries under ingest lag, the state every account the
 * tx changed has at the end of ledger seq (later txs of the ledger overwrite):
 * the fee payer and the sequence account always, the payment's destination
 * or the vault call's user only when the operation succeeded (a failed one
 * changed nothing there, and lastModifiedLedgerSeq must not move).
 */
static void note_touched(const struct sim_tx *tx, const struct op_outcome *op,
			 struct account *payer, struct account *src, uint32_t seq)
{
	struct account *other = NULL;

	acct_note(payer, seq);
	acct_note(src, seq);
	if (op->code != 0)
		return;
	if (tx->kind == SIM_OP_PAYMENT)
		other = chain_account_get(tx->pay_dest, false);
	else if (tx->kind == SIM_OP_VAULT && tx->call.fn != SIM_VAULT_REBALANCE)
		other = chain_account_get(tx->call.user, false);
	if (other)
		acct_note(other, seq);
}

/* Apply one included tx; returns its stored record (or NULL on ENOMEM). */
static struct txrec *apply(struct sim_tx *tx, int64_t incl_charged, uint32_t seq, uint64_t t,
			   uint32_t order)
{
	struct account *src = chain_account_get(tx->source, false);
	struct account *payer = chain_account_get(tx->fee_source, false);
	int64_t charged = incl_charged + tx->resource_fee;
	struct txrec *r = calloc(1, sizeof(*r));
	struct op_outcome op;

	if (payer->balance < charged)
		charged = payer->balance > 0 ? (int64_t)payer->balance : 0;
	payer->balance -= charged;
	src->seq = tx->seq;
	run_op(tx, &op);
	note_touched(tx, &op, payer, src, seq);
	inflight_applied(tx);
	if (!r)
		return NULL;
	memcpy(r->node.key, tx->hash, 32);
	memcpy(r->inner_node.key, tx->inner_hash, 32);
	r->fee_bump = tx->fee_bump;
	r->success = op.code == 0;
	r->soroban = tx->soroban;
	r->ledger = seq;
	r->order = order;
	r->created_at = t;
	r->envelope_b64 = tx->envelope_b64;
	tx->envelope_b64 = NULL;
	r->result_b64 = enc_result_applied(charged, tx->fee_bump, tx->inner_hash, &op);
	if (!r->result_b64 || table_insert(&g_chain.txs, &r->node) < 0) {
		free(r->envelope_b64);
		free(r->result_b64);
		free(r);
		return NULL;
	}
	if (r->fee_bump)
		table_insert(&g_chain.txs_inner, &r->inner_node); /* ENOMEM: outer hash only */
	return r;
}

static void age_out(uint32_t seq, uint64_t t)
{
	size_t i;

	for (i = 0; i < g_chain.n_queue;) {
		struct sim_tx *tx = g_chain.queue[i];

		if (seq - tx->queued_at >= g_chain.cfg.queue_ledgers) {
			queue_remove_at(i);
			ban_add(tx->hash);
			inflight_drop(tx);
			sim_tx_free(tx);
			continue;
		}
		i++;
	}
	/* a black-holed tx stops being in flight when it could no longer land */
	for (i = 0; i < g_chain.n_holes;) {
		struct sim_tx *tx = g_chain.holes[i];

		if (seq - tx->queued_at >= g_chain.cfg.queue_ledgers || dead(tx, seq + 1, t + 1)) {
			table_remove(&g_chain.queued, &tx->qnode);
			g_chain.holes[i] = g_chain.holes[--g_chain.n_holes];
			inflight_drop(tx);
			sim_tx_free(tx);
			continue;
		}
		i++;
	}
}

static void include(struct ledger *l, struct cand *c, size_t n)
{
	size_t cap = g_chain.cfg.ledger_capacity, take = n < cap ? n : cap, i;
	bool surge = n > cap;
	int64_t base = g_chain.cfg.base_fee, rate = base;

	if (surge && take)
		rate = c[take - 1].incl / c[take - 1].ops;
	if (rate < base)
		rate = base;
	l->txs = calloc(take ? take : 1, sizeof(*l->txs));
	l->fees_classic = calloc(take ? take : 1, sizeof(int64_t));
	l->fees_soroban = calloc(take ? take : 1, sizeof(int64_t));
	for (i = 0; i < take; i++) {
		int64_t incl = sim_fee_add((__int128)rate * c[i].ops, 0);
		struct sim_tx *tx = c[i].tx;

		if (incl > c[i].incl)
			incl = c[i].incl;
		if (l->fees_soroban && (!tx || tx->soroban))
			l->fees_soroban[l->n_soroban++] = incl;
		else if (l->fees_classic)
			l->fees_classic[l->n_classic++] = incl / (tx->n_ops ? tx->n_ops : 1);
		if (!tx)
			continue;
		tx->included = true;
		if (l->txs) {
			struct txrec *r = apply(tx, incl, l->seq, l->close_time, l->n_txs + 1);

			if (r)
				l->txs[l->n_txs++] = r;
		}
	}
	for (i = 0; i < g_chain.n_queue;) {
		struct sim_tx *tx = g_chain.queue[i];

		if (!tx->included) {
			i++;
			continue;
		}
		queue_remove_at(i);
		sim_tx_free(tx);
	}
}

/* The new ledger's slot: close time, and the hash of its header. */
static struct ledger *open_slot(const struct ledger *prev, uint32_t seq, uint64_t t)
{
	struct ledger *l = &g_chain.ring[seq % g_chain.ring_size];
	struct enc_ledger e = {.seq = seq,
			       .close_time = t,
			       .base_fee = g_chain.cfg.base_fee,
			       .max_tx_set_size = g_chain.cfg.ledger_capacity};

	if (l->seq)
		free_ledger_slot(l);
	memcpy(e.prev_hash, prev->hash, 32);
	enc_ledger_hash(&e);
	l->seq = seq;
	l->close_time = t;
	memcpy(l->hash, e.hash, 32);
	return l;
}

void chain_close_ledger(void)
{
	struct ledger *prev, *l;
	uint64_t t = sim_wall_s();
	uint32_t seq;
	struct cand *c;
	size_t n = 0;

	pthread_mutex_lock(&g_chain.lock);
	prev = chain_ledger(g_chain.latest);
	seq = g_chain.latest + 1;
	if (t <= prev->close_time)
		t = prev->close_time + 1;
	l = open_slot(prev, seq, t);
	c = collect(seq, t, &n);
	if (c) {
		qsort(c, n, sizeof(*c), cand_cmp);
		include(l, c, n);
		free(c);
	}
	g_chain.latest = seq;
	age_out(seq, t);
	ban_expire();
	pthread_mutex_unlock(&g_chain.lock);
}
