/*
 * check_sign.c - signing against the worked vectors of common/stellar/README.md,
 * Test vectors (v1 signature and hash, the fee bump's hash and outer
 * signature, network ids), hints, verification, and the guarded key memory.
 */
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"

#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TESTNET "Test SDF Network ; September 2015"
#define SECRET  "SBWWC43UMVZHAYLTONYGQ4TBONSW2YLTORSXE4DBONZXA2DSMFZWLP2R"
#define ADDRESS "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH"

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

static void tohex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static struct xdr_envelope env;

START_TEST(test_network_ids)
{
	static const struct {
		const char *pass, *hex;
	} v[] = {
		{"Public Global Stellar Network ; September 2015",
		 "7ac33997544e3175d266bd022439b22cdb16508c01163f26e5cb2a3e1045a979"},
		{TESTNET, "cee0302d59844d32bdca915c8203dd44b33fbb7edc19051ea37abedf28ecd472"},
		{"Test SDF Future Network ; October 2022",
		 "a3a1c6a78286713e29be0e9785670fa838d13917cd8eaeb4a3579ff1debc7fd5"},
	};
	for (size_t i = 0; i < 3; i++) {
		uint8_t id[32];
		char hex[65];
		stellar_network_id(v[i].pass, id);
		tohex(id, 32, hex);
		ck_assert_str_eq(hex, v[i].hex);
	}
}
END_TEST

START_TEST(test_keypair_from_seed_and_secret)
{
	struct stellar_keypair a, b;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char addr[STRKEY_BUF], hex[65];
	uint8_t hint[4];

	ck_assert_int_eq(stellar_keypair_from_seed(
				 &a, (const uint8_t *)"masterpassphrasemasterpassphrase", &err),
			 0);
	tohex(a.pk, 32, hex);
	ck_assert_str_eq(hex, "2e3c35010749c1de3d9a5bdd6a31c12458768da5ce87cca6aad63ebbaaef7432");
	stellar_keypair_address(&a, addr);
	ck_assert_str_eq(addr, ADDRESS);
	ck_assert_msg(stellar_keypair_from_secret(&b, SECRET, "signer", &err) == 0, "%s", err.msg);
	ck_assert(memcmp(a.pk, b.pk, 32) == 0);
	stellar_hint(a.pk, hint);
	tohex(hint, 4, hex);
	ck_assert_str_eq(hex, "aaef7432");
	stellar_keypair_release(&a);
	stellar_keypair_release(&a); /* twice is fine */
	ck_assert_ptr_null(a.sk);
	stellar_keypair_release(&b);
}
END_TEST

/*
 * The signing buffer (one per worker) signs exactly as a fresh keypair of
 * the same seed does, holds zeros once wiped, and serves key after key.
 */
START_TEST(test_signing_buffer)
{
	static const uint8_t zero[64];
	struct stellar_keypair a, b, buf;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t hash[32], sig_a[64], sig_b[64], sig[64];
	const uint8_t *seed_a = (const uint8_t *)"masterpassphrasemasterpassphrase";
	const uint8_t *seed_b = (const uint8_t *)"another seed, thirty-two bytes!!";

	memset(hash, 7, sizeof(hash));
	ck_assert_int_eq(stellar_keypair_from_seed(&a, seed_a, &err), 0);
	ck_assert_int_eq(stellar_keypair_from_seed(&b, seed_b, &err), 0);
	ck_assert_int_eq(stellar_sign(&a, hash, sig_a), 0);
	ck_assert_int_eq(stellar_sign(&b, hash, sig_b), 0);
	ck_assert_int_eq(stellar_keypair_scratch(&buf, &err), 0);
	ck_assert(memcmp(buf.sk, zero, 64) == 0);
	for (int round = 0; round < 2; round++) {
		stellar_keypair_set(&buf, seed_a, a.pk);
		ck_assert_int_eq(stellar_sign(&buf, hash, sig), 0);
		ck_assert(memcmp(sig, sig_a, 64) == 0);
		stellar_keypair_wipe(&buf);
		ck_assert(memcmp(buf.sk, zero, 64) == 0 && memcmp(buf.pk, zero, 32) == 0);
		stellar_keypair_set(&buf, seed_b, b.pk);
		ck_assert_int_eq(stellar_sign(&buf, hash, sig), 0);
		ck_assert(memcmp(sig, sig_b, 64) == 0);
		ck_assert_int_eq(stellar_verify(b.pk, hash, sig), 0);
		stellar_keypair_wipe(&buf);
	}
	stellar_keypair_release(&buf);
	ck_assert_ptr_null(buf.sk);
	stellar_keypair_release(&a);
	stellar_keypair_release(&b);
}
END_TEST

START_TEST(test_bad_secret_is_not_echoed)
{
	struct stellar_keypair kp;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char s[] = SECRET;

	s[40] = s[40] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(stellar_keypair_from_secret(&kp, s, "signer.secret", &err),
			 STRKEY_ECHECKSUM);
	ck_assert_ptr_null(strstr(err.msg, s));
	ck_assert_ptr_null(strstr(err.msg, s + 10));
	ck_assert_ptr_null(kp.sk);
	/* a G... key is not a seed */
	ck_assert_int_eq(stellar_keypair_from_secret(&kp, ADDRESS, "signer.secret", &err),
			 STRKEY_EVERSION);
}
END_TEST

START_TEST(test_v1_vector_signature)
{
	struct stellar_keypair kp;
	uint8_t *raw, nid[32], hash[32];
	size_t raw_len;
	char hex[129], *b64;
	struct xdr_sig expect;

	ck_assert_int_eq(stellar_keypair_from_secret(&kp, SECRET, "s", NULL), 0);
	ck_assert_int_eq(
		xdr_envelope_decode_b64(&env, vec_b64, strlen(vec_b64), &raw, &raw_len, NULL), 0);
	expect = env.sigs[0];
	stellar_network_id(TESTNET, nid);
	ck_assert_int_eq(stellar_envelope_verify(&env, kp.pk, nid, NULL), 0);
	/* wrong network: the same signature does not verify */
	{
		uint8_t pub[32];
		stellar_network_id("Public Global Stellar Network ; September 2015", pub);
		ck_assert_int_eq(stellar_envelope_verify(&env, kp.pk, pub, NULL), OUTBOX_EINVAL);
	}
	/* strip the signature and sign again: identical bytes (ed25519 is deterministic) */
	env.n_sigs = 0;
	ck_assert_int_eq(stellar_sign_envelope(&env, &kp, nid, hash, NULL), 0);
	tohex(hash, 32, hex);
	ck_assert_str_eq(hex, "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94");
	ck_assert_uint_eq(env.n_sigs, 1);
	ck_assert(memcmp(&env.sigs[0], &expect, sizeof(expect)) == 0);
	tohex(env.sigs[0].sig, 64, hex);
	ck_assert_str_eq(hex,
			 "bacde72236327443ea0102b8ec9ff7875b276fe5cfa13492494117758337cc70b3e85f"
			 "fe75450b1618ec347d090173d34f7ad79473402c6abe6f1950d0a56d06");
	ck_assert_int_eq(xdr_envelope_to_b64(&env, &b64), 0);
	ck_assert_str_eq(b64, vec_b64);
	free(b64);
	/* a flipped bit in the hash does not verify */
	hash[0] ^= 1;
	ck_assert_int_eq(stellar_verify(kp.pk, hash, env.sigs[0].sig), OUTBOX_EINVAL);
	hash[0] ^= 1;
	ck_assert_int_eq(stellar_verify(kp.pk, hash, env.sigs[0].sig), 0);
	free(raw);
	stellar_keypair_release(&kp);
}
END_TEST

START_TEST(test_fee_bump_vector)
{
	struct stellar_keypair kp;
	uint8_t *raw, nid[32], hash[32];
	size_t raw_len;
	char hex[129];
	struct xdr_writer w;
	static struct xdr_envelope back;

	ck_assert_int_eq(stellar_keypair_from_secret(&kp, SECRET, "s", NULL), 0);
	ck_assert_int_eq(
		xdr_envelope_decode_b64(&env, vec_b64, strlen(vec_b64), &raw, &raw_len, NULL), 0);
	stellar_network_id(TESTNET, nid);
	env.type = ENVELOPE_TYPE_TX_FEE_BUMP;
	env.bump.fee_source.type = KEY_TYPE_ED25519;
	memcpy(env.bump.fee_source.key, kp.pk, 32);
	env.bump.fee = 50200;
	ck_assert_int_eq(stellar_sign_envelope(&env, &kp, nid, hash, NULL), 0);
	tohex(hash, 32, hex);
	ck_assert_str_eq(hex, "9554a9aac883cb4dbe53fd989bc2654ea3bf62ff6e816fb7ae9978fffcafb806");
	tohex(env.bump.sigs[0].sig, 64, hex);
	ck_assert_str_eq(hex,
			 "3c3f0cb6412059d75d7df66fd0c3e32c9ad785c4ba3c22c310a7add252fd5bb1ef5e05"
			 "cfee21243540666066216d5cea1e26e9def38069bea09eadf32431a60a");
	ck_assert_int_eq(xdr_envelope_inner_hash(&env, nid, hash), 0);
	tohex(hash, 32, hex);
	ck_assert_str_eq(hex, "14f29487790446fcec71dd130613a0737163cd7dd197418c766b2c149d52ee94");
	/* layout: 00000005 | muxed | fee | 00000002 <360-byte v1 body> | ext | sigs: 492 bytes */
	xdr_writer_init(&w, 4096);
	ck_assert_int_eq(xdr_envelope_encode(&env, &w), 0);
	ck_assert_uint_eq(w.len, 492);
	ck_assert(memcmp(w.buf + 48, raw, 364) == 0); /* 00000002 + inner body, verbatim */
	ck_assert_int_eq(xdr_envelope_decode(&back, w.buf, w.len, NULL), 0);
	ck_assert_uint_eq(back.type, ENVELOPE_TYPE_TX_FEE_BUMP);
	ck_assert_int_eq(back.bump.fee, 50200);
	ck_assert_uint_eq(back.bump.n_sigs, 1);
	ck_assert_uint_eq(back.n_sigs, 1);
	ck_assert_int_eq(stellar_envelope_verify(&back, kp.pk, nid, NULL), 0);
	xdr_writer_release(&w);
	free(raw);
	stellar_keypair_release(&kp);
}
END_TEST

START_TEST(test_signature_limit_and_released_key)
{
	struct stellar_keypair kp;
	uint8_t *raw, nid[32], sig[64], h[32] = {0};
	size_t raw_len;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(stellar_keypair_from_secret(&kp, SECRET, "s", NULL), 0);
	ck_assert_int_eq(
		xdr_envelope_decode_b64(&env, vec_b64, strlen(vec_b64), &raw, &raw_len, NULL), 0);
	stellar_network_id(TESTNET, nid);
	env.n_sigs = XDR_MAX_SIGS;
	ck_assert_int_eq(stellar_sign_envelope(&env, &kp, nid, NULL, &err), OUTBOX_ETOOBIG);
	stellar_keypair_release(&kp);
	ck_assert_int_eq(stellar_sign(&kp, h, sig), OUTBOX_ESTATE);
	free(raw);
}
END_TEST

/* The secret region is PROT_NONE while idle: reading it faults (in a child). */
START_TEST(test_secret_is_noaccess_when_idle)
{
	struct stellar_keypair kp;
	pid_t pid;
	int status;

	ck_assert_int_eq(stellar_keypair_from_secret(&kp, SECRET, "s", NULL), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		volatile unsigned char c = kp.sk[0];
		(void)c;
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
		      "reading the idle secret key did not fault");
	stellar_keypair_release(&kp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sign");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_network_ids);
	tcase_add_test(tc, test_keypair_from_seed_and_secret);
	tcase_add_test(tc, test_signing_buffer);
	tcase_add_test(tc, test_bad_secret_is_not_echoed);
	tcase_add_test(tc, test_v1_vector_signature);
	tcase_add_test(tc, test_fee_bump_vector);
	tcase_add_test(tc, test_signature_limit_and_released_key);
	tcase_add_test(tc, test_secret_is_noaccess_when_idle);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
