/*
 * check_xdr.c - the XDR layer against the worked vectors of
 * common/stellar/README.md (Test vectors), byte-exact re-encoding, and the
 * reader's refusals: truncation at every length, trailing bytes, non-zero
 * padding, unknown discriminants (named), counts over their maxima, and
 * i128 decimal edges.
 */
#include "common/stellar/txresult.h"
#include "common/stellar/xdr.h"

#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TESTNET "Test SDF Network ; September 2015"

/* The signed envelope of the test vector. */
static const char *vec_b64 = "AAAAAgAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAAw7QAAAEfcfsEy"
			     "wAAAAEAAAAAAAAAAAAAAAB"
			     "lU/EAAAAAAAAAAAEAAAAAAAAAGAAAAAAAAAABNj6qOGeEH7rQ9O2Ix3nk/"
			     "mblaiRw3JjA7JwHPQXHsQMAAAAIdHJhbnN"
			     "mZXIAAAADAAAAEgAAAAAAAAAALjw1AQdJwd49mlvdajHBJFh2jaXOh8ymqtY+"
			     "u6rvdDIAAAASAAAAATY+qjhnhB+60PT"
			     "tiMd55P5m5WokcNyYwOycBz0Fx7EDAAAACgAAAAAAAAAAAAAAAAAAA+"
			     "gAAAAAAAAAAQAAAAAAAAAAAAAAAAAPQkAAAAf"
			     "QAAAB9AAAAAAAAMNQAAAAAarvdDIAAABAus3nIjYydEPqAQK47J/"
			     "3h1snb+XPoTSSSUEXdYM3zHCz6F/+dUULFhjsNH0"
			     "JAXPTT3rXlHNALGq+bxlQ0KVtBg==";

static const char *key_hex = "2e3c35010749c1de3d9a5bdd6a31c12458768da5ce87cca6aad63ebbaaef7432";
static const char *contract_hex =
	"363eaa3867841fbad0f4ed88c779e4fe66e56a2470dc98c0ec9c073d05c7b103";
static const char *sig_hex = "bacde72236327443ea0102b8ec9ff7875b276fe5cfa13492494117758337cc70b3e8"
			     "5ffe75450b1618ec347d090173d34f7ad79473402c6abe6f1950d0a56d06";

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = strlen(h) / 2;

	ck_assert_uint_le(n, cap);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		ck_assert(sscanf(h + 2 * i, "%2x", &v) == 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static size_t vec_bytes(uint8_t *buf, size_t cap)
{
	size_t len = 0;
	ck_assert_int_eq(xdr_b64_decode(vec_b64, strlen(vec_b64), buf, cap, &len, "v", NULL), 0);
	ck_assert_uint_eq(len, 364);
	return len;
}

static struct xdr_envelope env; /* large: keep it off the stack */

START_TEST(test_vector_decodes_field_by_field)
{
	uint8_t buf[512], key[32], cid[32], sig[64];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const struct xdr_tx *tx = &env.tx;
	const struct xdr_invoke *iv;

	unhex(key_hex, key, 32);
	unhex(contract_hex, cid, 32);
	unhex(sig_hex, sig, 64);
	ck_assert_msg(xdr_envelope_decode(&env, buf, len, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(env.type, ENVELOPE_TYPE_TX);
	ck_assert_uint_eq(tx->source.type, KEY_TYPE_ED25519);
	ck_assert(memcmp(tx->source.key, key, 32) == 0);
	ck_assert_uint_eq(tx->fee, 50100);
	ck_assert_int_eq(tx->seq_num, 1234567890123LL);
	ck_assert_uint_eq(tx->cond.type, PRECOND_TIME);
	ck_assert_uint_eq(tx->cond.time_bounds.min_time, 0);
	ck_assert_uint_eq(tx->cond.time_bounds.max_time, 1700000000);
	ck_assert_uint_eq(tx->memo.type, MEMO_NONE);
	ck_assert_uint_eq(tx->n_ops, 1);
	ck_assert(!tx->ops[0].has_source);
	ck_assert_uint_eq(tx->ops[0].type, XDR_OP_INVOKE_HOST_FUNCTION);
	iv = &tx->ops[0].body.invoke;
	ck_assert_uint_eq(iv->contract.type, SC_ADDRESS_TYPE_CONTRACT);
	ck_assert(memcmp(iv->contract.id, cid, 32) == 0);
	ck_assert_uint_eq(iv->function.len, 8);
	ck_assert(memcmp(iv->function.p, "transfer", 8) == 0);
	ck_assert_uint_eq(iv->n_args, 3);
	ck_assert_uint_eq(tx->args[0].type, SCV_ADDRESS);
	ck_assert_uint_eq(tx->args[0].v.addr.type, SC_ADDRESS_TYPE_ACCOUNT);
	ck_assert(memcmp(tx->args[0].v.addr.id, key, 32) == 0);
	ck_assert_uint_eq(tx->args[1].type, SCV_ADDRESS);
	ck_assert_uint_eq(tx->args[1].v.addr.type, SC_ADDRESS_TYPE_CONTRACT);
	ck_assert(memcmp(tx->args[1].v.addr.id, cid, 32) == 0);
	ck_assert_uint_eq(tx->args[2].type, SCV_I128);
	ck_assert_int_eq(tx->args[2].v.i128.hi, 0);
	ck_assert_uint_eq(tx->args[2].v.i128.lo, 1000);
	ck_assert_uint_eq(iv->n_auth, 0);
	ck_assert(tx->has_soroban);
	ck_assert_int_eq(tx->soroban.resource_fee, 50000);
	ck_assert_uint_eq(tx->soroban.instructions, 1000000);
	ck_assert_uint_eq(tx->soroban.disk_read_bytes, 2000);
	ck_assert_uint_eq(tx->soroban.write_bytes, 500);
	ck_assert_uint_eq(tx->soroban.n_read_only, 0);
	ck_assert_uint_eq(tx->soroban.n_read_write, 0);
	ck_assert_uint_eq(tx->soroban.raw.len, 288 - 256);
	ck_assert_uint_eq(env.n_sigs, 1);
	ck_assert(memcmp(env.sigs[0].hint, key + 28, 4) == 0);
	ck_assert(memcmp(env.sigs[0].sig, sig, 64) == 0);
	ck_assert_int_eq(xdr_tx_check_soroban(tx, &err), 0);
}
END_TEST

START_TEST(test_vector_hash_and_payload)
{
	uint8_t buf[512], nid[32], hash[32];
	char hex[65];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct xdr_writer w;

	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len, NULL), 0);
	crypto_hash_sha256(nid, (const uint8_t *)TESTNET, strlen(TESTNET));
	tohex(nid, 32, hex);
	ck_assert_str_eq(hex, "cee0302d59844d32bdca915c8203dd44b33fbb7edc19051ea37abedf28ecd472");
	ck_assert_int_eq(xdr_envelope_hash(&env, nid, hash), 0);
	tohex(hash, 32, hex);
	ck_assert_str_eq(hex, "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94");
	ck_assert_int_eq(xdr_envelope_inner_hash(&env, nid, hash), 0);
	tohex(hash, 32, hex);
	ck_assert_str_eq(hex, "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94");
	/* payload = networkId || 00000002 || envelope bytes 4..287 */
	xdr_writer_init(&w, 4096);
	ck_assert_int_eq(xdr_envelope_signature_payload(&env, nid, &w), 0);
	ck_assert_uint_eq(w.len, 32 + 4 + 284);
	ck_assert(memcmp(w.buf, nid, 32) == 0);
	ck_assert(memcmp(w.buf + 32, buf, 4) == 0);
	ck_assert(memcmp(w.buf + 36, buf + 4, 284) == 0);
	xdr_writer_release(&w);
}
END_TEST

START_TEST(test_vector_reencodes_byte_exact)
{
	uint8_t buf[512], out[512];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct xdr_writer w;
	char *b64;

	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len, NULL), 0);
	xdr_writer_init_fixed(&w, out, sizeof(out));
	ck_assert_int_eq(xdr_envelope_encode(&env, &w), 0);
	ck_assert_uint_eq(w.len, len);
	ck_assert(memcmp(out, buf, len) == 0);
	ck_assert_int_eq(xdr_envelope_to_b64(&env, &b64), 0);
	ck_assert_str_eq(b64, vec_b64);
	free(b64);
	/* A fixed writer one byte short fails, stickily. */
	xdr_writer_init_fixed(&w, out, len - 1);
	ck_assert_int_eq(xdr_envelope_encode(&env, &w), OUTBOX_ETOOBIG);
}
END_TEST

/* The same transaction built from structs encodes to the vector's bytes 4..287. */
START_TEST(test_vector_built_from_structs)
{
	uint8_t buf[512], key[32], cid[32], sd[32];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct xdr_tx *tx = &env.tx;
	struct xdr_writer w;

	memset(&env, 0, sizeof(env));
	unhex(key_hex, key, 32);
	unhex(contract_hex, cid, 32);
	memcpy(sd, buf + 256, 32);
	memcpy(tx->source.key, key, 32);
	tx->fee = 50100;
	tx->seq_num = 1234567890123LL;
	tx->cond.type = PRECOND_TIME;
	tx->cond.time_bounds.max_time = 1700000000;
	tx->n_ops = 1;
	tx->ops[0].type = XDR_OP_INVOKE_HOST_FUNCTION;
	tx->ops[0].body.invoke.contract.type = SC_ADDRESS_TYPE_CONTRACT;
	memcpy(tx->ops[0].body.invoke.contract.id, cid, 32);
	tx->ops[0].body.invoke.function = (struct xdr_bytes){(const uint8_t *)"transfer", 8};
	tx->ops[0].body.invoke.n_args = 3;
	tx->n_args = 3;
	tx->args[0].type = SCV_ADDRESS;
	memcpy(tx->args[0].v.addr.id, key, 32);
	tx->args[1].type = SCV_ADDRESS;
	tx->args[1].v.addr.type = SC_ADDRESS_TYPE_CONTRACT;
	memcpy(tx->args[1].v.addr.id, cid, 32);
	tx->args[2].type = SCV_I128;
	tx->args[2].v.i128.lo = 1000;
	tx->has_soroban = true;
	ck_assert_int_eq(xdr_soroban_data_parse(sd, 32, &tx->soroban, NULL), 0);
	ck_assert_int_eq(tx->soroban.resource_fee, 50000);
	xdr_writer_init(&w, 4096);
	ck_assert_int_eq(xdr_tx_encode(tx, &w), 0);
	ck_assert_uint_eq(w.len, 284);
	ck_assert(memcmp(w.buf, buf + 4, 284) == 0);
	xdr_writer_release(&w);
	(void)len;
}
END_TEST

START_TEST(test_precond_v2_and_payment_bytes)
{
	/* time [0,1700000300] + ledger [0,51000000], everything else off */
	const char *cond_hex = "0000000200000001000000000000000000000000"
			       "6553f22c0000000100000000030a32c0000000000000000000000000"
			       "0000000000000000";
	/* native payment of 1 XLM to GAXDYN... */
	const char *pay_hex =
		"000000002e3c35010749c1de3d9a5bdd6a31c12458768da5ce87cca6aad63ebbaaef7432"
		"000000000000000000989680";
	uint8_t want[128];
	size_t n;
	struct xdr_tx *tx = &env.tx;
	struct xdr_writer w;

	memset(&env, 0, sizeof(env));
	tx->cond.type = PRECOND_V2;
	tx->cond.has_time_bounds = true;
	tx->cond.time_bounds.max_time = 1700000300;
	tx->cond.has_ledger_bounds = true;
	tx->cond.max_ledger = 51000000;
	tx->n_ops = 1;
	tx->ops[0].type = XDR_OP_PAYMENT;
	unhex(key_hex, tx->ops[0].body.payment.destination.key, 32);
	tx->ops[0].body.payment.amount = 10000000;
	xdr_writer_init(&w, 4096);
	ck_assert_int_eq(xdr_tx_encode(tx, &w), 0);
	/* source 36, fee 4, seq 8 -> cond at 48 */
	n = unhex(cond_hex, want, sizeof(want));
	ck_assert(memcmp(w.buf + 48, want, n) == 0);
	/* cond 56, memo 4, count 4, op source flag 4, op type 4 -> payment body */
	n = unhex(pay_hex, want, sizeof(want));
	ck_assert(memcmp(w.buf + 48 + 56 + 16, want, n) == 0);
	/* and it decodes back to the same fields */
	{
		static struct xdr_envelope back;
		struct xdr_writer e;
		xdr_writer_init(&e, 4096);
		env.type = ENVELOPE_TYPE_TX;
		ck_assert_int_eq(xdr_envelope_encode(&env, &e), 0);
		ck_assert_int_eq(xdr_envelope_decode(&back, e.buf, e.len, NULL), 0);
		ck_assert(back.tx.cond.has_ledger_bounds && !back.tx.cond.has_min_seq_num);
		ck_assert_uint_eq(back.tx.cond.max_ledger, 51000000);
		ck_assert_uint_eq(back.tx.cond.time_bounds.max_time, 1700000300);
		ck_assert_int_eq(back.tx.ops[0].body.payment.amount, 10000000);
		ck_assert_uint_eq(back.tx.ops[0].body.payment.asset.type, ASSET_TYPE_NATIVE);
		ck_assert_int_eq(xdr_tx_check_soroban(&back.tx, NULL), 0);
		xdr_writer_release(&e);
	}
	xdr_writer_release(&w);
}
END_TEST

START_TEST(test_simulation_fragments_validate)
{
	/* a simulation's transactionData and auth entry */
	const char *td =
		"AAAAAAAAAAEAAAAGAAAAATY+qjhnhB+60PTtiMd55P5m5WokcNyYwOycBz0Fx7EDAAAAFAAAAAEA"
		"AAABAAAAAAAAAAAuPDUBB0nB3j2aW91qMcEkWHaNpc6HzKaq1j67qu90MgAW42AAAAu4AAABkA"
		"AAAAAAAO8y";
	const char *auth =
		"AAAAAAAAAAAAAAABNj6qOGeEH7rQ9O2Ix3nk/mblaiRw3JjA7JwHPQXHsQMAAAAIdHJhbnNmZX"
		"IAAAADAAAAEgAAAAAAAAAALjw1AQdJwd49mlvdajHBJFh2jaXOh8ymqtY+u6rvdDIAAAAS"
		"AAAAATY+qjhnhB+60PTtiMd55P5m5WokcNyYwOycBz0Fx7EDAAAACgAAAAAAAAAAAAAAAA"
		"AAA+gAAAAA";
	uint8_t buf[512];
	size_t len;
	struct xdr_soroban_data sd;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(xdr_b64_decode(td, strlen(td), buf, sizeof(buf), &len, "td", NULL), 0);
	ck_assert_msg(xdr_soroban_data_parse(buf, len, &sd, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(sd.n_read_only, 1);
	ck_assert_uint_eq(sd.n_read_write, 1);
	ck_assert_uint_eq(sd.instructions, 1500000);
	ck_assert_uint_eq(sd.disk_read_bytes, 3000);
	ck_assert_uint_eq(sd.write_bytes, 400);
	ck_assert_int_eq(sd.resource_fee, 61234);
	ck_assert_uint_eq(sd.raw.len, len);
	/* one byte more is trailing garbage */
	buf[len] = 0;
	ck_assert_int_eq(xdr_soroban_data_parse(buf, len + 4, &sd, &err), OUTBOX_EPROTO);
	ck_assert_msg(strstr(err.msg, "trailing") != NULL, "%s", err.msg);

	ck_assert_int_eq(xdr_b64_decode(auth, strlen(auth), buf, sizeof(buf), &len, "a", NULL), 0);
	ck_assert_msg(xdr_auth_entry_check(buf, len, &err) == 0, "%s", err.msg);
	/* credentials type 4 does not exist */
	buf[3] = 4;
	ck_assert_int_eq(xdr_auth_entry_check(buf, len, &err), OUTBOX_EPROTO);
	ck_assert_msg(strstr(err.msg, "unknown SorobanCredentialsType 4") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_tx_results)
{
	struct tx_result r;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(tx_result_decode_b64(&r, "AAAAAAAAxBj////3AAAAAA==", &err), 0);
	ck_assert_int_eq(r.fee_charged, 50200);
	ck_assert_int_eq(r.code, TX_INSUFFICIENT_FEE);
	ck_assert_str_eq(tx_result_code_name(r.code), "txINSUFFICIENT_FEE");
	ck_assert_uint_eq(r.n_ops, 0);

	ck_assert_msg(
		tx_result_decode_b64(&r,
				     "AAAAAAAAoRIAAAAAAAAAAQAAAAAAAAAYAAAAAAABAgMEBQYHCAkKCwwNDg8"
				     "QERITFBUWFxgZGhscHR4fAAAAAA==",
				     &err) == 0,
		"%s", err.msg);
	ck_assert_int_eq(r.fee_charged, 41234);
	ck_assert_int_eq(r.code, TX_SUCCESS);
	ck_assert_uint_eq(r.n_ops, 1);
	ck_assert_int_eq(r.op_code, OP_INNER);
	ck_assert_int_eq(r.op_type, 24);
	ck_assert_int_eq(r.op_inner, IHF_SUCCESS);

	ck_assert_int_eq(
		tx_result_decode_b64(&r, "AAAAAAAAw7T/////AAAAAQAAAAAAAAAY/////gAAAAA=", &err), 0);
	ck_assert_int_eq(r.fee_charged, 50100);
	ck_assert_int_eq(r.code, TX_FAILED);
	ck_assert_int_eq(r.op_inner, IHF_TRAPPED);
	ck_assert_str_eq(tx_result_code_name(-1), "txFAILED");
	ck_assert_str_eq(tx_result_code_name(1), "txFEE_BUMP_INNER_SUCCESS");
	ck_assert_str_eq(tx_result_code_name(-18), "txFROZEN_KEY_ACCESSED");
	ck_assert_str_eq(tx_result_code_name(-19), "tx<unknown>");
	ck_assert_str_eq(tx_result_code_name(2), "tx<unknown>");
}
END_TEST

START_TEST(test_tx_result_fee_bump_and_unknown)
{
	/* fee bump: fee 300, code -13, inner hash, inner {0, txFAILED, 1 op TRAPPED}, ext, ext */
	uint8_t b[128];
	size_t n = 0;
	struct tx_result r;
	struct outbox_error err = OUTBOX_ERROR_INIT;
#define PUT32(v)                                                                                   \
	do {                                                                                       \
		uint32_t x_ = (uint32_t)(v);                                                       \
		b[n++] = (uint8_t)(x_ >> 24);                                                      \
		b[n++] = (uint8_t)(x_ >> 16);                                                      \
		b[n++] = (uint8_t)(x_ >> 8);                                                       \
		b[n++] = (uint8_t)x_;                                                              \
	} while (0)
	PUT32(0);
	PUT32(300);
	PUT32(-13);
	memset(b + n, 0xab, 32);
	n += 32;
	PUT32(0);
	PUT32(0);
	PUT32(-1);
	PUT32(1);
	PUT32(0);
	PUT32(24);
	PUT32(-2);
	PUT32(0);
	PUT32(0);
	ck_assert_msg(tx_result_decode(&r, b, n, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(r.code, TX_FEE_BUMP_INNER_FAILED);
	ck_assert_int_eq(r.inner_code, TX_FAILED);
	ck_assert_int_eq(r.op_inner, IHF_TRAPPED);
	ck_assert_int_eq(tx_result_decode(&r, b, n - 4, &err), OUTBOX_EPROTO);
	/* an unknown code is kept raw, with no arm */
	n = 0;
	PUT32(0);
	PUT32(100);
	PUT32(-42);
	PUT32(0);
	ck_assert_int_eq(tx_result_decode(&r, b, n, &err), 0);
	ck_assert_int_eq(r.code, -42);
	ck_assert_str_eq(tx_result_code_name(r.code), "tx<unknown>");
	/* trailing byte group */
	PUT32(0);
	ck_assert_int_eq(tx_result_decode(&r, b, n, &err), OUTBOX_EPROTO);
	ck_assert_msg(strstr(err.msg, "trailing") != NULL, "%s", err.msg);
#undef PUT32
}
END_TEST

START_TEST(test_every_truncation_fails)
{
	uint8_t buf[512];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct outbox_error err = OUTBOX_ERROR_INIT;

	for (size_t i = 0; i < len; i++) {
		ck_assert_msg(xdr_envelope_decode(&env, buf, i, &err) != 0, "prefix %zu decoded",
			      i);
		ck_assert(err.msg[0] != '\0');
	}
	/* trailing bytes */
	buf[len] = buf[len + 1] = buf[len + 2] = buf[len + 3] = 0;
	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len + 4, &err), OUTBOX_EPROTO);
	ck_assert_msg(strstr(err.msg, "4 trailing bytes") != NULL, "%s", err.msg);
	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len + 1, &err), OUTBOX_EPROTO);
}
END_TEST

/* Patch the big-endian u32 at off in a copy of the vector and expect a named failure. */
static void expect_patch_fails(size_t off, uint32_t v, const char *needle)
{
	uint8_t buf[512];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct outbox_error err = OUTBOX_ERROR_INIT;

	buf[off] = (uint8_t)(v >> 24);
	buf[off + 1] = (uint8_t)(v >> 16);
	buf[off + 2] = (uint8_t)(v >> 8);
	buf[off + 3] = (uint8_t)v;
	ck_assert_int_ne(xdr_envelope_decode(&env, buf, len, &err), 0);
	ck_assert_msg(strstr(err.msg, needle) != NULL, "off %zu: '%s' lacks '%s'", off, err.msg,
		      needle);
}

START_TEST(test_unknown_discriminants_are_named)
{
	expect_patch_fails(0, 9, "unknown EnvelopeType 9");
	expect_patch_fails(0, 0, "ENVELOPE_TYPE_TX_V0");
	expect_patch_fails(4, 1, "unknown CryptoKeyType 1");
	expect_patch_fails(52, 3, "unknown PreconditionType 3");
	expect_patch_fails(72, 5, "unknown MemoType 5");
	expect_patch_fails(84, 3, "unsupported OperationType 3");
	expect_patch_fails(88, 1, "unsupported HostFunctionType 1");
	expect_patch_fails(92, 7, "SCAddressType 7");
	expect_patch_fails(144, 16, "unsupported SCValType 16 (SCV_VEC)");
	expect_patch_fails(144, 99, "unsupported SCValType 99");
	expect_patch_fails(148, 5, "SCAddressType 5");
	expect_patch_fails(252, 2, "unknown Transaction.ext version 2");
	expect_patch_fails(256, 2, "SorobanTransactionData.ext version 2");
	expect_patch_fails(80, 2, "bool value 2");
	/* counts over their maxima */
	expect_patch_fails(76, 101, "count 101 exceeds the maximum 100");
	expect_patch_fails(288, 21, "count 21 exceeds the maximum 20");
	expect_patch_fails(140, 65, "count 65 exceeds the maximum 64");
	expect_patch_fails(248, 33, "count 33 exceeds the maximum 32");
	/* a huge count fails before any work */
	expect_patch_fails(260, 0x7fffffff, "cannot fit");
	/* lengths */
	expect_patch_fails(128, 33, "length 33 exceeds the maximum 32");
	expect_patch_fails(296, 63, "padding");
	expect_patch_fails(296, 65, "length 65 exceeds the maximum 64");
	/* symbol charset */
	expect_patch_fails(132, 0x74722d6e, "outside [A-Za-z0-9_]");
}
END_TEST

START_TEST(test_padding_must_be_zero)
{
	/* "transfe" (7 bytes) + 1 pad byte: set it non-zero. */
	uint8_t buf[512];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct outbox_error err = OUTBOX_ERROR_INIT;

	buf[131] = 7;
	buf[139] = 0;
	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len, &err), 0);
	buf[139] = 'r';
	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len, &err), OUTBOX_EPROTO);
	ck_assert_msg(strstr(err.msg, "non-zero padding") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_total_input_bound)
{
	uint8_t *big = calloc(1, XDR_MAX_ENVELOPE_BYTES + 4);
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(xdr_envelope_decode(&env, big, XDR_MAX_ENVELOPE_BYTES + 4, &err),
			 OUTBOX_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "exceeds") != NULL, "%s", err.msg);
	free(big);
}
END_TEST

START_TEST(test_base64_strict)
{
	uint8_t out[16];
	size_t n;

	ck_assert_int_eq(xdr_b64_decode("AAAAAA==", 8, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_ne(xdr_b64_decode("AAAAAA", 6, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("AAAAAB==", 8, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("AAAA AA=", 8, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("AAAA-_==", 8, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("", 0, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("AA=A", 4, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("A===", 4, out, sizeof(out), &n, "x", NULL), 0);
	/* libsodium alone takes some bytes >= 0x80 for '/' (found by fuzz_strkey) */
	ck_assert_int_ne(xdr_b64_decode("AAA\xb7", 4, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_eq(xdr_b64_decode("AAA/", 4, out, sizeof(out), &n, "x", NULL), 0);
	ck_assert_int_ne(xdr_b64_decode("AAAAAAAAAAAAAAAAAAAAAAAA", 24, out, 4, &n, "x", NULL), 0);
}
END_TEST

/*
 * The table codec against libsodium's, as xdr_buf.c used it (our alphabet
 * check, then sodium_base642bin for the padded variant, the whole string
 * consumed): the same encodings for every length 0..300; the same verdicts
 * and bytes for every valid encoding of 0..48 bytes at every capacity
 * around its length, and for every byte value put at every position of
 * strings of 4, 8 and 12 characters.
 */
static int sodium_decode(const char *s, size_t slen, uint8_t *out, size_t cap, size_t *outlen)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *end = NULL;
	size_t pad;

	if (slen == 0 || slen % 4)
		return -1;
	pad = s[slen - 1] == '=' ? (s[slen - 2] == '=' ? 2 : 1) : 0;
	for (size_t i = 0; i < slen - pad; i++)
		if (!s[i] || !memchr(alphabet, s[i], 64))
			return -1;
	if (sodium_base642bin(out, cap, s, slen, NULL, outlen, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != s + slen)
		return -1;
	return 0;
}

static void expect_same_decode(const char *s, size_t slen, size_t cap)
{
	uint8_t a[64], b[64];
	size_t na = 0, nb = 0;
	int ra = xdr_b64_decode(s, slen, a, cap, &na, "x", NULL);
	int rb = sodium_decode(s, slen, b, cap, &nb);

	ck_assert_msg((ra == 0) == (rb == 0), "'%.*s' (cap %zu): %d against libsodium's %d",
		      (int)slen, s, cap, ra, rb);
	if (ra == 0) {
		ck_assert_uint_eq(na, nb);
		ck_assert(!memcmp(a, b, na));
	}
}

START_TEST(test_base64_as_libsodium)
{
	uint8_t in[300];
	char want[405], str[13];
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(in); i++) {
		x = x * 1103515245u + 12345u;
		in[i] = (uint8_t)(x >> 16);
	}
	for (size_t n = 0; n <= sizeof(in); n++) {
		char *got = xdr_b64_encode(in + (n * 7) % 5, n - (n * 7) % 5 * (n >= 5));
		size_t m = n - (n * 7) % 5 * (n >= 5);
		sodium_bin2base64(want, sizeof(want), in + (n * 7) % 5, m,
				  sodium_base64_VARIANT_ORIGINAL);
		ck_assert_ptr_nonnull(got);
		ck_assert_str_eq(got, want);
		if (m <= 48)
			for (size_t cap = m > 2 ? m - 2 : 0; cap <= m + 2; cap++)
				expect_same_decode(got, strlen(got), cap);
		free(got);
	}
	for (size_t len = 4; len <= 12; len += 4) {
		for (size_t start = 0; start < 3; start++) {
			char *base = xdr_b64_encode(in + 11 * start, len / 4 * 3 - start % 3);
			for (size_t pos = 0; pos < len; pos++) {
				for (int c = 0; c < 256; c++) {
					memcpy(str, base, len);
					str[pos] = (char)c;
					expect_same_decode(str, len, 16);
				}
			}
			free(base);
		}
	}
}
END_TEST

START_TEST(test_i128_decimal)
{
	static const struct {
		const char *s;
		int64_t hi;
		uint64_t lo;
	} ok[] = {
		{"0", 0, 0},
		{"1000", 0, 1000},
		{"-1", -1, UINT64_MAX},
		{"18446744073709551616", 1, 0},
		{"170141183460469231731687303715884105727", INT64_MAX, UINT64_MAX},
		{"-170141183460469231731687303715884105728", INT64_MIN, 0},
	};
	static const char *bad[] = {"",
				    "-",
				    "+1",
				    "01",
				    "-0",
				    " 1",
				    "1 ",
				    "1e3",
				    "0x10",
				    "170141183460469231731687303715884105728",
				    "-170141183460469231731687303715884105729",
				    "999999999999999999999999999999999999999",
				    "1000000000000000000000000000000000000000"};
	char out[XDR_I128_DEC_BUF];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t hi;
		uint64_t lo;
		ck_assert_msg(xdr_i128_parse(ok[i].s, &hi, &lo, "amount", &err) == 0, "%s",
			      err.msg);
		ck_assert_int_eq(hi, ok[i].hi);
		ck_assert_uint_eq(lo, ok[i].lo);
		xdr_i128_format(hi, lo, out);
		ck_assert_str_eq(out, ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t hi;
		uint64_t lo;
		ck_assert_msg(xdr_i128_parse(bad[i], &hi, &lo, "amount", &err) == OUTBOX_EINVAL,
			      "'%s' parsed", bad[i]);
		ck_assert_str_eq(err.field, "amount");
	}
	xdr_u128_format(UINT64_MAX, UINT64_MAX, out);
	ck_assert_str_eq(out, "340282366920938463463374607431768211455");
}
END_TEST

START_TEST(test_soroban_rules)
{
	uint8_t buf[512];
	size_t len = vec_bytes(buf, sizeof(buf));
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(xdr_envelope_decode(&env, buf, len, NULL), 0);
	env.tx.memo.type = MEMO_HASH;
	ck_assert_int_eq(xdr_tx_check_soroban(&env.tx, &err), OUTBOX_EINVAL);
	ck_assert_msg(strstr(err.msg, "MEMO_NONE") != NULL, "%s", err.msg);
	env.tx.memo.type = MEMO_NONE;
	env.tx.source.type = KEY_TYPE_MUXED_ED25519;
	ck_assert_int_eq(xdr_tx_check_soroban(&env.tx, &err), OUTBOX_EINVAL);
	env.tx.source.type = KEY_TYPE_ED25519;
	env.tx.has_soroban = false;
	ck_assert_int_eq(xdr_tx_check_soroban(&env.tx, &err), OUTBOX_EINVAL);
	env.tx.has_soroban = true;
	env.tx.n_ops = 2;
	env.tx.ops[1] = env.tx.ops[0];
	ck_assert_int_eq(xdr_tx_check_soroban(&env.tx, &err), OUTBOX_EINVAL);
}
END_TEST

START_TEST(test_writer_bounds)
{
	struct xdr_writer w;
	uint8_t small[8];

	xdr_writer_init(&w, 8);
	xdr_put_u64(&w, 1);
	ck_assert_int_eq(xdr_writer_status(&w), 0);
	xdr_put_u32(&w, 1);
	ck_assert_int_eq(xdr_writer_status(&w), OUTBOX_ETOOBIG);
	xdr_put_u32(&w, 1); /* sticky, no growth */
	ck_assert_uint_eq(w.len, 8);
	xdr_writer_release(&w);

	xdr_writer_init_fixed(&w, small, sizeof(small));
	xdr_put_var(&w, "abc", 3, 2);
	ck_assert_int_eq(xdr_writer_status(&w), OUTBOX_EINVAL);
	xdr_writer_init_fixed(&w, small, sizeof(small));
	xdr_put_var(&w, "abc", 3, 3);
	ck_assert_int_eq(xdr_writer_status(&w), 0);
	ck_assert_uint_eq(w.len, 8);
	ck_assert(memcmp(small, "\0\0\0\3abc\0", 8) == 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xdr");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_vector_decodes_field_by_field);
	tcase_add_test(tc, test_vector_hash_and_payload);
	tcase_add_test(tc, test_vector_reencodes_byte_exact);
	tcase_add_test(tc, test_vector_built_from_structs);
	tcase_add_test(tc, test_precond_v2_and_payment_bytes);
	tcase_add_test(tc, test_simulation_fragments_validate);
	tcase_add_test(tc, test_tx_results);
	tcase_add_test(tc, test_tx_result_fee_bump_and_unknown);
	tcase_add_test(tc, test_every_truncation_fails);
	tcase_add_test(tc, test_unknown_discriminants_are_named);
	tcase_add_test(tc, test_padding_must_be_zero);
	tcase_add_test(tc, test_total_input_bound);
	tcase_add_test(tc, test_base64_strict);
	tcase_add_test(tc, test_base64_as_libsodium);
	tcase_add_test(tc, test_i128_decimal);
	tcase_add_test(tc, test_soroban_rules);
	tcase_add_test(tc, test_writer_bounds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
