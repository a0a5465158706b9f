/*
 * check_vshard.c - the C vshard function against values computed with an
 * independent SHA-256 (Python's hashlib: be32(sha256(s)[0:4]) % n), which
 * are also the values SQL's outbox.vshard_of gives (check_enqueue compares
 * C and SQL directly).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vshard.h"

static const struct {
	const char *signer;
	unsigned be32; /* first four bytes of SHA-256(signer) */
	int mod1, mod7, mod64, mod4096;
} known[] = {
	{"GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ", 0x0dd822f5, 0, 0, 53, 757},
	{"GA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQHES5", 0x7b9a5bd8, 0, 3, 24, 3032},
	/* top bit set: the value must be read as unsigned */
	{"GAXDYNIBA5E4DXR5TJN522RRYESFQ5UNUXHIPTFGVLLD5O5K552DF5ZH", 0xdd1a2f9e, 0, 3, 30, 3998},
	{"", 0xe3b0c442, 0, 1, 2, 1090},
};

START_TEST(test_known_values)
{
	const char *s = known[_i].signer;
	size_t len = strlen(s);

	ck_assert_int_eq(outbox_vshard_of(s, len, 1), known[_i].mod1);
	ck_assert_int_eq(outbox_vshard_of(s, len, 7), known[_i].mod7);
	ck_assert_int_eq(outbox_vshard_of(s, len, 64), known[_i].mod64);
	ck_assert_int_eq(outbox_vshard_of(s, len, 4096), known[_i].mod4096);
	/* and the rule itself: be32 of the digest modulo n, for any n */
	for (int n = 1; n <= 4096; n += 37)
		ck_assert_int_eq(outbox_vshard_of(s, len, n), (int)(known[_i].be32 % (unsigned)n));
}
END_TEST

START_TEST(test_rejects_bad_arguments)
{
	ck_assert_int_eq(outbox_vshard_of("G", 1, 0), -EINVAL);
	ck_assert_int_eq(outbox_vshard_of("G", 1, -1), -EINVAL);
	ck_assert_int_eq(outbox_vshard_of("G", 1, 4097), -EINVAL);
	ck_assert_int_eq(outbox_vshard_of(NULL, 0, 64), -EINVAL);
}
END_TEST

/* Only len bytes count: trailing bytes beyond len change nothing. */
START_TEST(test_uses_len_bytes)
{
	const char *s = known[0].signer;

	ck_assert_int_eq(
		outbox_vshard_of("GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZxyz",
				 strlen(s), 64),
		known[0].mod64);
}
END_TEST

/* Worker i of N owns the vshards v with v mod N == i; bad arguments are refused. */
START_TEST(test_owner)
{
	int owned[4] = {0};

	for (int v = 0; v < 64; v++) {
		int w = outbox_vshard_owner(v, 4);

		ck_assert_int_eq(w, v % 4);
		owned[w]++;
	}
	for (int w = 0; w < 4; w++)
		ck_assert_int_eq(owned[w], 16);
	ck_assert_int_eq(outbox_vshard_owner(4095, 1), 0);
	ck_assert_int_eq(outbox_vshard_owner(-1, 4), -EINVAL);
	ck_assert_int_eq(outbox_vshard_owner(3, 0), -EINVAL);
}
END_TEST

/* A worker's lease name round-trips, and only that exact form of that instance parses. */
START_TEST(test_lease_owner)
{
	static const char *const not_ours[] = {
		"",
		"prod",
		"prod/",
		"prod/1",
		"prod/1/",
		"prod//7",
		"prod/1//7",
		"prod/01/7",
		"prod/1/07",
		"prod/+1/7",
		"prod/-1/7",
		"prod/1/-7",
		"prod/1/7/",
		"prod/1/7x",
		"prod/1/7 ",
		" prod/1/7",
		"prodx/1/7",
		"pro/1/7",
		"Prod/1/7",
		"prod/1/2147483648",
		"prod/2147483648/7",
		"prod/1/99999999999999999999",
		"other/1/7",
		"prod/a/7",
	};
	char buf[64];
	unsigned index = 99;
	long pid = 99;

	ck_assert_int_eq(outbox_lease_owner_format(buf, sizeof(buf), "prod", 3, 4242), 11);
	ck_assert_str_eq(buf, "prod/3/4242");
	ck_assert(outbox_lease_owner_parse(buf, "prod", &index, &pid));
	ck_assert_uint_eq(index, 3);
	ck_assert_int_eq(pid, 4242);
	ck_assert(outbox_lease_owner_parse("prod/0/0", "prod", &index, &pid));
	ck_assert_uint_eq(index, 0);
	ck_assert_int_eq(pid, 0);
	ck_assert(outbox_lease_owner_parse("prod/255/2147483647", "prod", &index, &pid));
	ck_assert_int_eq(pid, 2147483647);
	/* the instance is matched whole: "prod" is not "prod/1"'s instance "prod/1" */
	ck_assert(!outbox_lease_owner_parse("prod/1/7", "prod/1", &index, &pid));
	for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++) {
		index = 99;
		pid = 99;
		ck_assert_msg(!outbox_lease_owner_parse(not_ours[i], "prod", &index, &pid),
			      "'%s' parsed", not_ours[i]);
		ck_assert_uint_eq(index, 99);
		ck_assert_int_eq(pid, 99);
	}
	/* too long: nothing half-written */
	ck_assert_int_eq(outbox_lease_owner_format(buf, 8, "prod", 3, 4242), -ENOSPC);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(outbox_lease_owner_format(buf, 12, "prod", 3, 4242), 11);
}
END_TEST

/* 6400 distinct signers over 64 shards: every shard gets a fair share. */
START_TEST(test_spreads_evenly)
{
	int count[64] = {0};
	char s[32];

	for (int i = 0; i < 6400; i++) {
		int n = snprintf(s, sizeof(s), "signer-%d", i);
		int v = outbox_vshard_of(s, (size_t)n, 64);

		ck_assert_int_ge(v, 0);
		ck_assert_int_lt(v, 64);
		count[v]++;
	}
	for (int i = 0; i < 64; i++)
		ck_assert_msg(count[i] > 50 && count[i] < 150, "shard %d got %d of 6400", i,
			      count[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vshard");
	TCase *tc = tcase_create("vshard");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_known_values, 0, (int)(sizeof(known) / sizeof(known[0])));
	tcase_add_test(tc, test_rejects_bad_arguments);
	tcase_add_test(tc, test_uses_len_bytes);
	tcase_add_test(tc, test_owner);
	tcase_add_test(tc, test_lease_owner);
	tcase_add_test(tc, test_spreads_evenly);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
