/*
 * check_strkey.c - StrKey against the published vectors
 * (common/stellar/README.md, Test vectors), one rejection per malformed
 * class, and encode/decode round trips.
 */
#include "common/stellar/strkey.h"

#include <check.h>
#include <stdio.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static void unhex(const char *h, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		ck_assert(sscanf(h + 2 * i, "%2x", &v) == 1);
		out[i] = (uint8_t)v;
	}
}

static const struct {
	enum strkey_kind kind;
	const char *s;
	const char *hex;
} vectors[] = {
	{STRKEY_ACCOUNT, "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ",
	 "3f0c34bf93ad0d9971d04ccc90f705511c838aad9734a4a2fb0d7a03fc7fe89a"},
	{STRKEY_ACCOUNT, "GA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQHES5",
	 "363eaa3867841fbad0f4ed88c779e4fe66e56a2470dc98c0ec9c073d05c7b103"},
	{STRKEY_CONTRACT, "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE",
	 "363eaa3867841fbad0f4ed88c779e4fe66e56a2470dc98c0ec9c073d05c7b103"},
	{STRKEY_MUXED, "MA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAAAAAAAAAPCICBKU",
	 "363eaa3867841fbad0f4ed88c779e4fe66e56a2470dc98c0ec9c073d05c7b103000000000001e240"},
	{STRKEY_SEED, "SBU2RRGLXH3E5CQHTD3ODLDF2BWDCYUSSBLLZ5GNW7JXHDIYKXZWHOKR",
	 "69a8c4cbb9f64e8a0798f6e1ac65d06c3162929056bcf4cdb7d3738d1855f363"},
	{STRKEY_ACCOUNT, "GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH",
	 "2e3c35010749c1de3d9a5bdd6a31c12458768da5ce87cca6aad63ebbaaef7432"},
};

START_TEST(test_vectors_decode_and_encode)
{
	const size_t nv = sizeof(vectors) / sizeof(vectors[0]);

	for (size_t i = 0; i < nv; i++) {
		uint8_t want[40], got[40];
		size_t n = strlen(vectors[i].hex) / 2;
		char enc[STRKEY_BUF];
		struct outbox_error err = OUTBOX_ERROR_INIT;
		int rc;

		unhex(vectors[i].hex, want, n);
		rc = strkey_decode(vectors[i].kind, vectors[i].s, strlen(vectors[i].s), got,
				   sizeof(got), "k", &err);
		ck_assert_msg(rc == (int)n, "%s: rc %d %s", vectors[i].s, rc, err.msg);
		ck_assert(memcmp(got, want, n) == 0);
		ck_assert_int_eq(strkey_encode(vectors[i].kind, want, n, enc),
				 (int)strlen(vectors[i].s));
		ck_assert_str_eq(enc, vectors[i].s);
	}
}
END_TEST

START_TEST(test_typed_helpers)
{
	uint8_t key[32], id32[32];
	uint64_t id = 0;
	char out[STRKEY_BUF];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(
		strkey_decode_muxed("MA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAAAAAAA"
				    "AAPCICBKU",
				    key, &id, "m", &err),
		0);
	ck_assert_uint_eq(id, 123456);
	strkey_encode_muxed(key, id, out);
	ck_assert_str_eq(out,
			 "MA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAAAAAAAAAPCICBKU");
	strkey_encode_account(key, out);
	ck_assert_str_eq(out, "GA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQHES5");
	ck_assert_int_eq(
		strkey_decode_contract("CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE",
				       id32, "c", &err),
		0);
	ck_assert(memcmp(key, id32, 32) == 0);
	strkey_encode_contract(id32, out);
	ck_assert_str_eq(out, "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE");
}
END_TEST

static int decode_status(enum strkey_kind kind, const char *s, struct outbox_error *err)
{
	uint8_t out[40];
	return strkey_decode(kind, s, strlen(s), out, sizeof(out), "key", err);
}

START_TEST(test_published_rejections)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(decode_status(STRKEY_ACCOUNT,
				       "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZA",
				       &err),
			 STRKEY_ELENGTH);
	ck_assert_msg(strstr(err.msg, "length 57") != NULL, "%s", err.msg);
	ck_assert_int_eq(decode_status(STRKEY_ACCOUNT,
				       "G47QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVP2I",
				       &err),
			 STRKEY_EVERSION);
	ck_assert_msg(strstr(err.msg, "version byte") != NULL, "%s", err.msg);
	ck_assert_int_eq(
		decode_status(
			STRKEY_MUXED,
			"MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUR",
			&err),
		STRKEY_EPADDING);
	ck_assert_str_eq(err.field, "key");
}
END_TEST

START_TEST(test_each_class_has_its_code)
{
	const char *good = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";
	char s[STRKEY_BUF];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	/* alphabet: lower case, '=', '1', '8', a NUL byte */
	const char bad_chars[] = {'g', '=', '1', '8', '0', ' ', '\0'};
	for (size_t i = 0; i < sizeof(bad_chars); i++) {
		strcpy(s, good);
		s[10] = bad_chars[i];
		uint8_t out[32];
		ck_assert_int_eq(strkey_decode(STRKEY_ACCOUNT, s, 56, out, 32, "key", &err),
				 STRKEY_EALPHABET);
		ck_assert_msg(strstr(err.msg, "character 10") != NULL, "%s", err.msg);
	}
	/* checksum: flip one payload character to another valid one */
	strcpy(s, good);
	s[20] = s[20] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(decode_status(STRKEY_ACCOUNT, s, &err), STRKEY_ECHECKSUM);
	ck_assert_msg(strstr(err.msg, "checksum") != NULL, "%s", err.msg);
	/* version: a valid key of another kind */
	ck_assert_int_eq(decode_status(STRKEY_ACCOUNT,
				       "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE",
				       &err),
			 STRKEY_EVERSION);
	ck_assert_int_eq(decode_status(STRKEY_SEED, good, &err), STRKEY_EVERSION);
	/* length: empty, short, G length for M */
	ck_assert_int_eq(decode_status(STRKEY_ACCOUNT, "", &err), STRKEY_ELENGTH);
	ck_assert_int_eq(decode_status(STRKEY_ACCOUNT, "GA7Q", &err), STRKEY_ELENGTH);
	ck_assert_int_eq(decode_status(STRKEY_MUXED, good, &err), STRKEY_ELENGTH);
	ck_assert_int_eq(strkey_decode_account(NULL, (uint8_t[32]){0}, "k", &err), STRKEY_ELENGTH);
	/* every class name is distinct */
	ck_assert_str_eq(strkey_status_name(STRKEY_EPADDING), "padding");
	ck_assert_str_eq(strkey_status_name(STRKEY_ECHECKSUM), "checksum");
}
END_TEST

START_TEST(test_seed_errors_do_not_echo)
{
	char s[] = "SBU2RRGLXH3E5CQHTD3ODLDF2BWDCYUSSBLLZ5GNW7JXHDIYKXZWHOKR";
	struct outbox_error err = OUTBOX_ERROR_INIT;
	uint8_t seed[32];

	s[5] = 'x';
	ck_assert_int_eq(strkey_decode_seed(s, seed, "signer.secret", &err), STRKEY_EALPHABET);
	ck_assert_ptr_null(strstr(err.msg, "'x'"));
	ck_assert_ptr_null(strstr(err.msg, "SBU2"));
	ck_assert_str_eq(err.field, "signer.secret");
}
END_TEST

/* The definition, a bit at a time: what the table must agree with. */
static uint16_t crc16_bitwise(const uint8_t *p, size_t n)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)p[i] << 8;
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

/* Every byte value at every position of every length up to 43 (a StrKey's raw bytes). */
START_TEST(test_crc16_table_matches_bitwise)
{
	uint8_t buf[43];

	for (size_t len = 0; len <= sizeof(buf); len++)
		for (size_t pos = 0; pos < (len ? len : 1); pos++)
			for (int v = 0; v < 256; v++) {
				for (size_t k = 0; k < len; k++)
					buf[k] = (uint8_t)(k * 37 + len);
				if (len)
					buf[pos] = (uint8_t)v;
				ck_assert_uint_eq(strkey_crc16(buf, len), crc16_bitwise(buf, len));
			}
}
END_TEST

START_TEST(test_crc16_check_value)
{
	ck_assert_uint_eq(strkey_crc16((const uint8_t *)"123456789", 9), 0x31C3);
}
END_TEST

START_TEST(test_random_round_trips)
{
	const enum strkey_kind kinds[] = {STRKEY_ACCOUNT, STRKEY_SEED, STRKEY_CONTRACT,
					  STRKEY_MUXED};
	ck_assert(sodium_init() >= 0);
	for (int i = 0; i < 4000; i++) {
		enum strkey_kind k = kinds[i % 4];
		size_t n = k == STRKEY_MUXED ? 40 : 32;
		uint8_t in[40], out[40];
		char s[STRKEY_BUF];

		randombytes_buf(in, n);
		ck_assert_int_eq(strkey_encode(k, in, n, s), k == STRKEY_MUXED ? 69 : 56);
		ck_assert_int_eq(strkey_decode(k, s, strlen(s), out, sizeof(out), "k", NULL),
				 (int)n);
		ck_assert(memcmp(in, out, n) == 0);
		/* A single changed character never decodes to the same key silently. */
		size_t pos = (size_t)randombytes_uniform((uint32_t)strlen(s));
		char orig = s[pos];
		s[pos] = orig == 'Q' ? 'R' : 'Q';
		ck_assert_int_lt(strkey_decode(k, s, strlen(s), out, sizeof(out), "k", NULL), 0);
	}
}
END_TEST

START_TEST(test_encode_rejects_bad_sizes)
{
	uint8_t in[40] = {0};
	char s[STRKEY_BUF];

	ck_assert_int_eq(strkey_encode(STRKEY_ACCOUNT, in, 31, s), OUTBOX_EINVAL);
	ck_assert_int_eq(strkey_encode(STRKEY_MUXED, in, 32, s), OUTBOX_EINVAL);
	ck_assert_int_eq(strkey_encode((enum strkey_kind)7, in, 32, s), OUTBOX_EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strkey");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_vectors_decode_and_encode);
	tcase_add_test(tc, test_typed_helpers);
	tcase_add_test(tc, test_published_rejections);
	tcase_add_test(tc, test_each_class_has_its_code);
	tcase_add_test(tc, test_seed_errors_do_not_echo);
	tcase_add_test(tc, test_crc16_check_value);
	tcase_add_test(tc, test_crc16_table_matches_bitwise);
	tcase_add_test(tc, test_random_round_trips);
	tcase_add_test(tc, test_encode_rejects_bad_sizes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
