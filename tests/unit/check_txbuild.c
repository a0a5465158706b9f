/*
 * check_txbuild.c - the vault-call, payment and fee-bump builders: the
 * arguments each call carries, simulation passthrough (byte for byte), every
 * refusal (muxed source, bad amount, fee overflow, bad fragments), and the
 * fee-bump fee rules and the 10x replace-by-fee rule (common/stellar/README.md,
 * Fee-bump rules and Queue rules), table-driven plus a property check that
 * the computed minimum is exactly the boundary.
 */
#include "common/stellar/strkey.h"
#include "common/stellar/txbuild.h"

#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TESTNET  "Test SDF Network ; September 2015"
#define SECRET   "SBWWC43UMVZHAYLTONYGQ4TBONSW2YLTORSXE4DBONZXA2DSMFZWLP2R"
#define ADDRESS  "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH"
#define USER     "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
#define CONTRACT "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"
#define MUXED    "MA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAAAAAAAAAPCICBKU"

static const char *sim_td = "AAAAAAAAAAEAAAAGAAAAATY+qjhnhB+60PTtiMd55P5m5WokcNyYwOycBz0Fx7EDAAAAF"
			    "AAAAAEAAAABAAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAW42"
			    "AAAAu4AAABkAAAAAAAAO8y";
static const char *sim_auth =
	"AAAAAAAAAAAAAAABNj6qOGeEH7rQ9O2Ix3nk/mblaiRw3JjA7JwHPQXHsQMAAAAIdHJhbnNmZXIAAAADAAAAEgAA"
	"AAAAAAAALjw1AQdJwd49mlvdajHBJFh2jaXOh8ymqtY+u6rvdDIAAAASAAAAATY+qjhnhB+60PTtiMd55P5m5Wok"
	"cNyYwOycBz0Fx7EDAAAACgAAAAAAAAAAAAAAAAAAA+gAAAAA";

static struct txbuild b;
static struct xdr_envelope back;

static struct txbuild_source source(void)
{
	return (struct txbuild_source){.account = ADDRESS,
				       .seq_num = 1234567890123LL,
				       .fee = 100,
				       .min_time = 0,
				       .max_time = 1700000000};
}

static struct txbuild_vault_call call(enum vault_fn fn, const char *amount)
{
	return (struct txbuild_vault_call){.contract = CONTRACT,
					   .fn = fn,
					   .account = USER,
					   .amount = amount,
					   .idempotency_key = "op-42",
					   .idempotency_key_len = 5};
}

/* Encode b, decode into `back`; returns the raw buffer (caller frees). */
static uint8_t *round_trip(void)
{
	char *b64;
	uint8_t *raw;
	size_t len;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(txbuild_to_b64(&b, &b64), 0);
	ck_assert_msg(xdr_envelope_decode_b64(&back, b64, strlen(b64), &raw, &len, &err) == 0, "%s",
		      err.msg);
	free(b64);
	return raw;
}

START_TEST(test_vault_calls_carry_their_arguments)
{
	static const struct {
		enum vault_fn fn;
		const char *name;
		uint32_t n_args;
	} fns[] = {{VAULT_DEPOSIT, "deposit", 3},
		   {VAULT_WITHDRAW, "withdraw", 3},
		   {VAULT_REBALANCE, "rebalance", 2},
		   {VAULT_PAY_REFERRAL, "pay_referral", 3}};
	struct txbuild_source src = source();
	uint8_t user[32], cid[32], op_ref[32];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(strkey_decode_account(USER, user, "u", NULL), 0);
	ck_assert_int_eq(strkey_decode_contract(CONTRACT, cid, "c", NULL), 0);
	crypto_hash_sha256(op_ref, (const uint8_t *)"op-42", 5);
	txbuild_init(&b);
	for (size_t i = 0; i < 4; i++) {
		struct txbuild_vault_call c =
			call(fns[i].fn, "-170141183460469231731687303715884105728");
		const struct xdr_tx *tx = &back.tx;
		const struct xdr_invoke *iv;
		const struct xdr_scval *a;
		uint8_t *raw;

		ck_assert_msg(txbuild_vault(&b, &src, &c, NULL, &err) == 0, "%s", err.msg);
		raw = round_trip();
		ck_assert_uint_eq(back.type, ENVELOPE_TYPE_TX);
		ck_assert_uint_eq(tx->fee, 100);
		ck_assert_int_eq(tx->seq_num, 1234567890123LL);
		ck_assert_uint_eq(tx->cond.type, PRECOND_TIME);
		ck_assert_uint_eq(tx->cond.time_bounds.max_time, 1700000000);
		ck_assert_uint_eq(tx->memo.type, MEMO_NONE);
		ck_assert(!tx->has_soroban);
		ck_assert_uint_eq(tx->n_ops, 1);
		iv = &tx->ops[0].body.invoke;
		ck_assert(memcmp(iv->contract.id, cid, 32) == 0);
		ck_assert_uint_eq(iv->function.len, strlen(fns[i].name));
		ck_assert(memcmp(iv->function.p, fns[i].name, iv->function.len) == 0);
		ck_assert_uint_eq(iv->n_args, fns[i].n_args);
		a = &tx->args[iv->first_arg];
		if (fns[i].n_args == 3) {
			ck_assert_uint_eq(a->type, SCV_ADDRESS);
			ck_assert_uint_eq(a->v.addr.type, SC_ADDRESS_TYPE_ACCOUNT);
			ck_assert(memcmp(a->v.addr.id, user, 32) == 0);
			a++;
		}
		ck_assert_uint_eq(a->type, SCV_I128);
		ck_assert_int_eq(a->v.i128.hi, INT64_MIN);
		ck_assert_uint_eq(a->v.i128.lo, 0);
		a++;
		ck_assert_uint_eq(a->type, SCV_BYTES);
		ck_assert_uint_eq(a->v.bytes.len, 32);
		ck_assert(memcmp(a->v.bytes.p, op_ref, 32) == 0);
		ck_assert(memcmp(b.op_ref, op_ref, 32) == 0);
		free(raw);
	}
	txbuild_release(&b);
}
END_TEST

START_TEST(test_simulation_passthrough)
{
	struct txbuild_source src = source();
	struct txbuild_vault_call c = call(VAULT_DEPOSIT, "1000");
	const char *auth[] = {sim_auth, sim_auth};
	struct txbuild_sim sim = {.transaction_data = sim_td, .auth = auth, .n_auth = 2};
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct stellar_keypair kp;
	uint8_t td[256], ae[256], nid[32], h[32], *raw;
	size_t td_len, ae_len;

	ck_assert_int_eq(xdr_b64_decode(sim_td, strlen(sim_td), td, sizeof(td), &td_len, "t", NULL),
			 0);
	ck_assert_int_eq(
		xdr_b64_decode(sim_auth, strlen(sim_auth), ae, sizeof(ae), &ae_len, "a", NULL), 0);
	txbuild_init(&b);
	ck_assert_msg(txbuild_vault(&b, &src, &c, &sim, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stellar_keypair_from_secret(&kp, SECRET, "s", NULL), 0);
	stellar_network_id(TESTNET, nid);
	ck_assert_int_eq(txbuild_sign(&b, &kp, nid, &err), 0);
	ck_assert(b.is_signed);
	raw = round_trip();
	ck_assert_uint_eq(back.tx.fee, 100 + 61234);
	ck_assert(back.tx.has_soroban);
	ck_assert_uint_eq(back.tx.soroban.raw.len, td_len);
	ck_assert(memcmp(back.tx.soroban.raw.p, td, td_len) == 0);
	ck_assert_uint_eq(back.tx.ops[0].body.invoke.n_auth, 2);
	ck_assert_uint_eq(back.tx.ops[0].body.invoke.auth.len, 2 * ae_len);
	ck_assert(memcmp(back.tx.ops[0].body.invoke.auth.p, ae, ae_len) == 0);
	ck_assert(memcmp(back.tx.ops[0].body.invoke.auth.p + ae_len, ae, ae_len) == 0);
	ck_assert_int_eq(xdr_tx_check_soroban(&back.tx, NULL), 0);
	ck_assert_int_eq(xdr_envelope_hash(&back, nid, h), 0);
	ck_assert(memcmp(h, b.hash, 32) == 0);
	ck_assert_int_eq(stellar_envelope_verify(&back, kp.pk, nid, NULL), 0);
	free(raw);
	stellar_keypair_release(&kp);
	txbuild_release(&b);
}
END_TEST

static void expect_vault_fails(struct txbuild_source src, struct txbuild_vault_call c,
			       const struct txbuild_sim *sim, const char *field, const char *needle)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	txbuild_init(&b);
	ck_assert_int_ne(txbuild_vault(&b, &src, &c, sim, &err), 0);
	ck_assert_str_eq(err.field, field);
	ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' lacks '%s'", err.msg, needle);
	txbuild_release(&b);
}

START_TEST(test_vault_refusals)
{
	struct txbuild_source src = source();
	struct txbuild_vault_call c = call(VAULT_DEPOSIT, "1000");
	const char *bad_auth[] = {"AAAABA=="};
	const char *trail_auth[1];
	struct txbuild_sim sim = {.transaction_data = sim_td};
	char trail[512];

	src.account = MUXED;
	expect_vault_fails(src, c, NULL, "source", "muxed");
	src = source();
	src.seq_num = 0;
	expect_vault_fails(src, c, NULL, "seq_num", "not positive");
	src = source();
	src.min_time = 5;
	src.max_time = 4;
	expect_vault_fails(src, c, NULL, "max_time", "before min_time");
	src = source();
	src.min_ledger = 10;
	src.max_ledger = 10;
	expect_vault_fails(src, c, NULL, "max_ledger", "not after min_ledger");
	src = source();
	c.amount = "170141183460469231731687303715884105728";
	expect_vault_fails(src, c, NULL, "amount", "outside the i128 range");
	c.amount = "12.5";
	expect_vault_fails(src, c, NULL, "amount", "not a decimal i128");
	c = call(VAULT_DEPOSIT, "1000");
	c.contract = USER;
	expect_vault_fails(src, c, NULL, "contract", "version byte");
	c = call(VAULT_WITHDRAW, "1000");
	c.account = "GBAD";
	expect_vault_fails(src, c, NULL, "user", "length");
	c = call(VAULT_PAY_REFERRAL, "1000");
	c.account = "GBAD";
	expect_vault_fails(src, c, NULL, "referrer", "length");
	c = call(VAULT_DEPOSIT, "1000");
	c.idempotency_key_len = 0;
	expect_vault_fails(src, c, NULL, "idempotency_key", "empty");
	c = call(VAULT_DEPOSIT, "1000");
	c.fn = (enum vault_fn)9;
	expect_vault_fails(src, c, NULL, "fn", "unknown vault function 9");
	/* fee + resourceFee must fit a u32 */
	c = call(VAULT_DEPOSIT, "1000");
	src.fee = UINT32_MAX - 61233;
	expect_vault_fails(src, c, &sim, "fee", "fee bump");
	src = source();
	/* fragments are validated */
	sim.auth = bad_auth;
	sim.n_auth = 1;
	expect_vault_fails(src, c, &sim, "auth", "unknown SorobanCredentialsType 4");
	{
		/* a valid entry followed by 4 more bytes: trailing garbage */
		uint8_t raw[512];
		size_t n;
		char *b64;
		ck_assert_int_eq(xdr_b64_decode(sim_auth, strlen(sim_auth), raw, sizeof(raw) - 4,
						&n, "a", NULL),
				 0);
		memset(raw + n, 0, 4);
		b64 = xdr_b64_encode(raw, n + 4);
		snprintf(trail, sizeof(trail), "%s", b64);
		free(b64);
		trail_auth[0] = trail;
		sim.auth = trail_auth;
		expect_vault_fails(src, c, &sim, "auth", "4 trailing bytes");
	}
	sim.n_auth = 0;
	sim.transaction_data = "AAAAAQ==";
	expect_vault_fails(src, c, &sim, "transactionData", "truncated");
	sim.transaction_data = "not base64!";
	expect_vault_fails(src, c, &sim, "transactionData", "base64");
	sim.transaction_data = NULL;
	expect_vault_fails(src, c, &sim, "transactionData", "missing");
}
END_TEST

/* Ledger bounds make PRECOND_V2 with both bounds kept and no minSeqNum (strict sequence). */
START_TEST(test_ledger_bounds)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct txbuild_source src = source();
	struct txbuild_vault_call c = call(VAULT_DEPOSIT, "5");
	uint8_t *raw;

	src.max_ledger = 51234600;
	ck_assert_msg(txbuild_vault(&b, &src, &c, NULL, &err) == 0, "%s", err.msg);
	raw = round_trip();
	ck_assert_uint_eq(back.tx.cond.type, PRECOND_V2);
	ck_assert(back.tx.cond.has_time_bounds);
	ck_assert_uint_eq(back.tx.cond.time_bounds.max_time, 1700000000);
	ck_assert(back.tx.cond.has_ledger_bounds);
	ck_assert_uint_eq(back.tx.cond.min_ledger, 0);
	ck_assert_uint_eq(back.tx.cond.max_ledger, 51234600);
	ck_assert(!back.tx.cond.has_min_seq_num);
	ck_assert_uint_eq(back.tx.cond.min_seq_age, 0);
	ck_assert_uint_eq(back.tx.cond.min_seq_ledger_gap, 0);
	ck_assert_uint_eq(back.tx.cond.n_extra_signers, 0);
	free(raw);
}
END_TEST

START_TEST(test_payment)
{
	struct txbuild_source src = source();
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t memo[32], key[32], *raw;
	uint64_t id;

	memset(memo, 0x5a, 32);
	txbuild_init(&b);
	src.account = MUXED; /* classic payments may use muxed accounts */
	ck_assert_msg(txbuild_payment(&b, &src, MUXED, 10000000, memo, &err) == 0, "%s", err.msg);
	raw = round_trip();
	ck_assert_int_eq(strkey_decode_muxed(MUXED, key, &id, "m", NULL), 0);
	ck_assert_uint_eq(back.tx.source.type, KEY_TYPE_MUXED_ED25519);
	ck_assert_uint_eq(back.tx.source.id, 123456);
	ck_assert_uint_eq(back.tx.memo.type, MEMO_HASH);
	ck_assert(memcmp(back.tx.memo.hash, memo, 32) == 0);
	ck_assert_uint_eq(back.tx.ops[0].type, XDR_OP_PAYMENT);
	ck_assert_uint_eq(back.tx.ops[0].body.payment.destination.type, KEY_TYPE_MUXED_ED25519);
	ck_assert(memcmp(back.tx.ops[0].body.payment.destination.key, key, 32) == 0);
	ck_assert_int_eq(back.tx.ops[0].body.payment.amount, 10000000);
	ck_assert_uint_eq(back.tx.ops[0].body.payment.asset.type, ASSET_TYPE_NATIVE);
	ck_assert(!back.tx.has_soroban);
	free(raw);
	src = source();
	ck_assert_int_eq(txbuild_payment(&b, &src, USER, 1, NULL, &err), 0);
	raw = round_trip();
	ck_assert_uint_eq(back.tx.memo.type, MEMO_NONE);
	free(raw);
	ck_assert_int_eq(txbuild_payment(&b, &src, USER, 0, NULL, &err), OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, "amount");
	ck_assert_int_eq(txbuild_payment(&b, &src, CONTRACT, 5, NULL, &err), STRKEY_EVERSION);
	ck_assert_str_eq(err.field, "destination");
	txbuild_release(&b);
}
END_TEST

START_TEST(test_fee_bump_builder)
{
	struct txbuild inner;
	struct txbuild_source src = source();
	struct txbuild_vault_call c = call(VAULT_REBALANCE, "5");
	struct txbuild_sim sim = {.transaction_data = sim_td};
	struct stellar_keypair kp;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t nid[32], inner_hash[32], h[32], *raw;
	char *inner_b64;

	src.fee = 300; /* inner fee 61534: innerIncl 300, so a bump needs outerIncl >= 600 */
	ck_assert_int_eq(stellar_keypair_from_secret(&kp, SECRET, "s", NULL), 0);
	stellar_network_id(TESTNET, nid);
	txbuild_init(&inner);
	ck_assert_int_eq(txbuild_vault(&inner, &src, &c, &sim, &err), 0);
	/* unsigned inner envelopes are refused */
	ck_assert_int_eq(txbuild_to_b64(&inner, &inner_b64), 0);
	txbuild_init(&b);
	ck_assert_int_eq(txbuild_fee_bump(&b, inner_b64, ADDRESS, 70000, 100, &err), OUTBOX_EINVAL);
	ck_assert_msg(strstr(err.msg, "unsigned") != NULL, "%s", err.msg);
	free(inner_b64);
	ck_assert_int_eq(txbuild_sign(&inner, &kp, nid, &err), 0);
	memcpy(inner_hash, inner.hash, 32);
	ck_assert_int_eq(txbuild_to_b64(&inner, &inner_b64), 0);

	ck_assert_int_eq(txbuild_fee_bump(&b, inner_b64, ADDRESS, 61234 + 599, 100, &err),
			 OUTBOX_EINVAL);
	ck_assert_msg(strstr(err.msg, "rule 2") != NULL, "%s", err.msg);
	ck_assert_int_eq(txbuild_fee_bump(&b, inner_b64, "GBAD", 61234 + 600, 100, &err),
			 STRKEY_ELENGTH);
	ck_assert_str_eq(err.field, "fee_source");
	ck_assert_msg(txbuild_fee_bump(&b, inner_b64, USER, 61234 + 600, 100, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(txbuild_sign(&b, &kp, nid, &err), 0);
	raw = round_trip();
	ck_assert_uint_eq(back.type, ENVELOPE_TYPE_TX_FEE_BUMP);
	ck_assert_int_eq(back.bump.fee, 61834);
	ck_assert_uint_eq(back.bump.n_sigs, 1);
	ck_assert_uint_eq(back.n_sigs, 1);
	ck_assert_int_eq(xdr_envelope_inner_hash(&back, nid, h), 0);
	ck_assert(memcmp(h, inner_hash, 32) == 0);
	ck_assert_int_eq(xdr_envelope_hash(&back, nid, h), 0);
	ck_assert(memcmp(h, b.hash, 32) == 0);
	ck_assert(memcmp(h, inner_hash, 32) != 0);
	free(raw);
	/* dispose frees the decoded fragments and leaves the envelope: a builder freed next */
	{
		struct txbuild *d = malloc(sizeof(*d));
		ck_assert_ptr_nonnull(d);
		txbuild_init(d);
		ck_assert_int_eq(txbuild_fee_bump(d, inner_b64, USER, 61234 + 600, 100, &err), 0);
		ck_assert_ptr_nonnull(d->owned);
		txbuild_dispose(d);
		ck_assert_ptr_null(d->owned);
		ck_assert_uint_eq(d->owned_len, 0);
		ck_assert_uint_eq(d->env.type, ENVELOPE_TYPE_TX_FEE_BUMP);
		free(d);
	}
	/* a fee bump cannot wrap a fee bump */
	free(inner_b64);
	ck_assert_int_eq(txbuild_to_b64(&b, &inner_b64), 0);
	ck_assert_int_eq(txbuild_fee_bump(&b, inner_b64, USER, 1000000, 100, &err), OUTBOX_EINVAL);
	ck_assert_msg(strstr(err.msg, "v1 envelope") != NULL, "%s", err.msg);
	free(inner_b64);
	txbuild_release(&b);
	txbuild_release(&inner);
	stellar_keypair_release(&kp);
}
END_TEST

START_TEST(test_fee_bump_min_fee_table)
{
	static const struct {
		int64_t fee, r;
		uint32_t k, base;
		bool queued;
		int64_t q_incl;
		uint32_t q_ops;
		int64_t want;
	} v[] = {
		/* the test vector's bump: Soroban inner 50100 with R 50000, base 100 -> 50200 */
		{50100, 50000, 1, 100, false, 0, 0, 50200},
		/* inner bid 300 -> rule 2 doubles it */
		{50300, 50000, 1, 100, false, 0, 0, 50600},
		/* queued Soroban tx bidding 100 -> outerIncl >= 2000 (10x, two ops) */
		{50100, 50000, 1, 100, true, 100, 1, 52000},
		/* queued earlier bump (2 ops) with incl 2000 -> 10x again */
		{50100, 50000, 1, 100, true, 2000, 2, 70000},
		/* classic, 3 ops, fee 300: rules 1 and 2 both 400 */
		{300, 0, 3, 100, false, 0, 0, 400},
		/* classic, 3 ops, fee 301: ceil(301*4/3) = 402 */
		{301, 0, 3, 100, false, 0, 0, 402},
		/* innerIncl <= 0 (resource fee beyond the u32 fee): rule 2 skipped */
		{40000, 50000, 1, 100, false, 0, 0, 50200},
		/* base fee dominates */
		{50100, 50000, 1, 1000, false, 0, 0, 52000},
		/* queued classic 3-op tx with incl 300: ceil(10*300*4/3) = 4000 */
		{300, 0, 3, 100, true, 300, 3, 4000},
	};
	struct outbox_error err = OUTBOX_ERROR_INIT;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct fee_bump_inner in = {v[i].fee, v[i].r, v[i].k};
		struct fee_bump_queued q = {v[i].q_incl, v[i].q_ops};
		int64_t m = -1;

		ck_assert_msg(txbuild_fee_bump_min_fee(&in, v[i].base, v[i].queued ? &q : NULL, &m,
						       &err) == 0,
			      "case %zu: %s", i, err.msg);
		ck_assert_msg(m == v[i].want, "case %zu: %lld != %lld", i, (long long)m,
			      (long long)v[i].want);
		ck_assert_int_eq(
			txbuild_fee_bump_check(&in, v[i].base, v[i].queued ? &q : NULL, m, &err),
			0);
		ck_assert_int_eq(txbuild_fee_bump_check(&in, v[i].base, v[i].queued ? &q : NULL,
							m - 1, &err),
				 OUTBOX_EINVAL);
	}
	/* the message names the rule that failed */
	{
		struct fee_bump_inner in = {50100, 50000, 1};
		struct fee_bump_queued q = {100, 1};
		ck_assert_int_eq(txbuild_fee_bump_check(&in, 100, &q, 51999, &err), OUTBOX_EINVAL);
		ck_assert_msg(strstr(err.msg, "10x") != NULL, "%s", err.msg);
		ck_assert_msg(strstr(err.msg, "52000") != NULL, "%s", err.msg);
		ck_assert_int_eq(txbuild_fee_bump_check(&in, 100, NULL, 50199, &err),
				 OUTBOX_EINVAL);
		ck_assert_msg(strstr(err.msg, "rule 1") != NULL, "%s", err.msg);
	}
	/* bad inputs and overflow */
	{
		struct fee_bump_inner in = {100, 0, 0};
		struct fee_bump_queued q = {INT64_MAX, 1};
		int64_t m;
		ck_assert_int_eq(txbuild_fee_bump_min_fee(&in, 100, NULL, &m, &err), OUTBOX_EINVAL);
		in.n_ops = 1;
		ck_assert_int_eq(txbuild_fee_bump_min_fee(&in, 100, &q, &m, &err), OUTBOX_EINVAL);
		ck_assert_msg(strstr(err.msg, "overflow") != NULL, "%s", err.msg);
		q.n_ops = 0;
		ck_assert_int_eq(txbuild_fee_bump_min_fee(&in, 100, &q, &m, &err), OUTBOX_EINVAL);
		in.resource_fee = -1;
		ck_assert_int_eq(txbuild_fee_bump_min_fee(&in, 100, NULL, &m, &err), OUTBOX_EINVAL);
	}
}
END_TEST

/* Property: the minimum passes every rule and one stroop less fails one (reference maths). */
START_TEST(test_fee_bump_min_fee_is_the_boundary)
{
	ck_assert(sodium_init() >= 0);
	for (int i = 0; i < 20000; i++) {
		struct fee_bump_inner in;
		struct fee_bump_queued q;
		uint32_t base = 1 + randombytes_uniform(10000);
		bool queued = randombytes_uniform(2);
		int64_t m, outer;
		__int128 k, incl, oi;

		in.n_ops = 1 + randombytes_uniform(100);
		in.resource_fee = randombytes_uniform(2) ? randombytes_uniform(5000000) : 0;
		in.fee = (int64_t)randombytes_uniform(UINT32_MAX / 2) + in.resource_fee / 2;
		q.incl = randombytes_uniform(1000000);
		q.n_ops = 1 + randombytes_uniform(101);
		ck_assert_int_eq(txbuild_fee_bump_min_fee(&in, base, queued ? &q : NULL, &m, NULL),
				 0);
		k = in.n_ops;
		incl = (__int128)in.fee - in.resource_fee;
		for (int d = -1; d <= 0; d++) {
			bool ok;
			outer = m + d;
			oi = (__int128)outer - in.resource_fee;
			ok = oi >= (__int128)base * (k + 1) &&
			     (incl <= 0 || oi * k >= incl * (k + 1)) &&
			     (!queued || oi * q.n_ops >= (__int128)10 * q.incl * (k + 1));
			ck_assert_msg(ok == (d == 0), "case %d: outer %lld ok=%d", i,
				      (long long)outer, ok);
			ck_assert_int_eq(txbuild_fee_bump_check(&in, base, queued ? &q : NULL,
								outer, NULL) == 0,
					 ok);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("txbuild");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_vault_calls_carry_their_arguments);
	tcase_add_test(tc, test_simulation_passthrough);
	tcase_add_test(tc, test_vault_refusals);
	tcase_add_test(tc, test_ledger_bounds);
	tcase_add_test(tc, test_payment);
	tcase_add_test(tc, test_fee_bump_builder);
	tcase_add_test(tc, test_fee_bump_min_fee_table);
	tcase_add_test(tc, test_fee_bump_min_fee_is_the_boundary);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
