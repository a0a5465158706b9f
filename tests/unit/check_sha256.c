/*
 * check_sha256.c - common/sha256.h against libsodium's SHA-256 (the one the
 * project used before) and a published vector: every length 0..2100 of a
 * pseudo-random buffer, and for the two-part form every split of buffers
 * of 0..130 bytes, each part empty or not.
 */
#include <check.h>
#include <sodium.h>
#include <string.h>

#include "common/sha256.h"
#include "tests/support/check_main.h"

static uint8_t buf[2100];

static void fill(void)
{
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

START_TEST(test_published_vector)
{
	static const uint8_t abc[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
		0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
		0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	uint8_t h[32];

	outbox_sha256(h, "abc", 3);
	ck_assert_mem_eq(h, abc, 32);
	outbox_sha256_2(h, "a", 1, "bc", 2);
	ck_assert_mem_eq(h, abc, 32);
}
END_TEST

START_TEST(test_every_length_as_libsodium)
{
	uint8_t got[32], want[32];

	fill();
	for (size_t n = 0; n <= sizeof(buf); n++) {
		outbox_sha256(got, buf, n);
		crypto_hash_sha256(want, buf, n);
		ck_assert_msg(!memcmp(got, want, 32), "length %zu", n);
	}
}
END_TEST

START_TEST(test_every_split_as_libsodium)
{
	uint8_t got[32], want[32];

	fill();
	for (size_t n = 0; n <= 130; n++) {
		crypto_hash_sha256(want, buf + 7, n);
		for (size_t k = 0; k <= n; k++) {
			outbox_sha256_2(got, buf + 7, k, buf + 7 + k, n - k);
			ck_assert_msg(!memcmp(got, want, 32), "length %zu split at %zu", n, k);
		}
	}
}
END_TEST

static Suite *sha256_suite(void)
{
	Suite *s = suite_create("sha256");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_published_vector);
	tcase_add_test(tc, test_every_length_as_libsodium);
	tcase_add_test(tc, test_every_split_as_libsodium);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(sha256_suite)
