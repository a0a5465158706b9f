/*
 * check_keys.c - the signer keys file: real seed vectors, comments and
 * blank lines, file modes, malformed lines by number, duplicates, and no
 * seed ever in an error message.
 */
#include "common/keys.h"

#include "common/stellar/strkey.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/support/check_main.h"

/* a StrKey test vector (common/stellar/README.md, Test vectors) */
#define SEED1 "SBU2RRGLXH3E5CQHTD3ODLDF2BWDCYUSSBLLZ5GNW7JXHDIYKXZWHOKR"
static const uint8_t seed1_raw[32] = {0x69, 0xa8, 0xc4, 0xcb, 0xb9, 0xf6, 0x4e, 0x8a,
				      0x07, 0x98, 0xf6, 0xe1, 0xac, 0x65, 0xd0, 0x6c,
				      0x31, 0x62, 0x92, 0x90, 0x56, 0xbc, 0xf4, 0xcd,
				      0xb7, 0xd3, 0x73, 0x8d, 0x18, 0x55, 0xf3, 0x63};
/* public key of the seed "masterpassphrasemasterpassphrase" (GAXDYN...5ZH) */
static const uint8_t master_pub[32] = {0x2e, 0x3c, 0x35, 0x01, 0x07, 0x49, 0xc1, 0xde,
				       0x3d, 0x9a, 0x5b, 0xdd, 0x6a, 0x31, 0xc1, 0x24,
				       0x58, 0x76, 0x8d, 0xa5, 0xce, 0x87, 0xcc, 0xa6,
				       0xaa, 0xd6, 0x3e, 0xbb, 0xaa, 0xef, 0x74, 0x32};

static char dir[64], path[128], seed2[STRKEY_BUF];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check_keys.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keys", dir);
	ck_assert_int_eq(strkey_encode(STRKEY_SEED,
				       (const uint8_t *)"masterpassphrasemasterpassphrase", 32,
				       seed2),
			 56);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static void write_keys(const char *body, mode_t mode)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(body, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* Every message names the variable and the path, and never a seed. */
static void assert_clean_message(const struct outbox_error *err)
{
	ck_assert_msg(!strncmp(err->msg, "OUTBOX_SIGNER_KEYS_FILE: ", 25), "%s", err->msg);
	ck_assert_ptr_nonnull(strstr(err->msg, path));
	ck_assert_ptr_null(strstr(err->msg, SEED1));
	ck_assert_ptr_null(strstr(err->msg, seed2));
	ck_assert_ptr_null(strstr(err->msg, "SBU2RRGL"));
	ck_assert_ptr_null(strchr(err->msg, '\n'));
}

START_TEST(test_keys_load_vectors)
{
	struct signer_keys k = SIGNER_KEYS_INIT;
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char body[512];

	snprintf(body, sizeof(body),
		 "# signer keys\n\n   %s  \n\t# second one\n%s\r\n\n# trailing comment", SEED1,
		 seed2);
	write_keys(body, 0600);
	ck_assert_int_eq(signer_keys_load(&k, path, &err), 0);
	ck_assert_uint_eq(k.n, 2);
	ck_assert_mem_eq(k.seed[0], seed1_raw, 32);
	ck_assert_mem_eq(k.seed[1], "masterpassphrasemasterpassphrase", 32);
	ck_assert_mem_eq(k.pub[1], master_pub, 32);
	ck_assert_int_eq(signer_keys_find(&k, master_pub), 1);
	ck_assert_int_eq(signer_keys_find(&k, seed1_raw), -1);
	signer_keys_release(&k);
	ck_assert_uint_eq(k.n, 0);
	ck_assert_ptr_null(k.seed);
	signer_keys_release(&k); /* twice is fine */
}
END_TEST

START_TEST(test_keys_owner_only_modes)
{
	size_t n = 0;
	struct outbox_error err = OUTBOX_ERROR_INIT;

	write_keys(SEED1 "\n", 0400);
	ck_assert_int_eq(keys_file_check(path, &n, &err), 0);
	ck_assert_uint_eq(n, 1);
	write_keys(SEED1 "\n", 0600);
	ck_assert_int_eq(keys_file_check(path, &n, &err), 0);
}
END_TEST

static const mode_t bad_modes[] = {0640, 0604, 0644, 0660, 0606, 0666, 0610, 0601, 0620, 0602};

START_TEST(test_keys_refuse_group_other_modes)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char want[64];

	write_keys(SEED1 "\n", bad_modes[_i]);
	ck_assert_int_eq(keys_file_check(path, NULL, &err), OUTBOX_EINVAL);
	assert_clean_message(&err);
	snprintf(want, sizeof(want), "has mode %04o", (unsigned)bad_modes[_i]);
	ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
	ck_assert_ptr_nonnull(strstr(err.msg, "group or others"));
}
END_TEST

static const struct malformed {
	const char *body;
	unsigned line;
	const char *why;
} malformed[] = {
	/* a public key where a seed belongs */
	{"# ok\n" SEED1 "\nGA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ\n", 3,
	 "version"},
	/* one character changed: checksum */
	{SEED1 "\n\nSBU2RRGLXH3E5CQHTD3ODLDF2BWDCYUSSBLLZ5GNW7JXHDIYKXZWHOKS\n", 3, "checksum"},
	/* lower case */
	{"sbu2rrglxh3e5cqhtd3odldf2bwdcyussbllz5gnw7jxhdiykxzwhokr\n", 1, "alphabet"},
	/* too long, too short */
	{SEED1 "A\n", 1, "length"},
	{"SBU2RRGL\n", 1, "length"},
	/* two seeds on one line, a trailing comment */
	{SEED1 " " SEED1 "\n", 1, "length"},
	{SEED1 " # main key\n", 1, "length"},
	/* key=value style */
	{"seed=" SEED1 "\n", 1, "length"},
};

START_TEST(test_keys_malformed_line)
{
	const struct malformed *m = &malformed[_i];
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char want[64];

	write_keys(m->body, 0600);
	ck_assert_int_eq(keys_file_check(path, NULL, &err), OUTBOX_EINVAL);
	assert_clean_message(&err);
	snprintf(want, sizeof(want), "line %u: not a secret seed strkey (%s)", m->line, m->why);
	ck_assert_msg(strstr(err.msg, want), "got '%s', want '%s'", err.msg, want);
}
END_TEST

START_TEST(test_keys_duplicates)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char body[512];

	snprintf(body, sizeof(body), "%s\n%s\n# again\n  %s\n", seed2, SEED1, seed2);
	write_keys(body, 0600);
	ck_assert_int_eq(keys_file_check(path, NULL, &err), OUTBOX_EINVAL);
	assert_clean_message(&err);
	ck_assert_msg(strstr(err.msg, "line 4: duplicate of line 1"), "%s", err.msg);
}
END_TEST

START_TEST(test_keys_empty_and_missing)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct signer_keys k = SIGNER_KEYS_INIT;

	write_keys("# nothing here\n\n", 0600);
	ck_assert_int_eq(signer_keys_load(&k, path, &err), OUTBOX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "contains no seed"));
	ck_assert_uint_eq(k.n, 0);
	unlink(path);
	ck_assert_int_lt(keys_file_check(path, NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
	ck_assert_int_lt(keys_file_check(dir, NULL, &err), 0);
}
END_TEST

START_TEST(test_keys_too_big)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (unsigned i = 0; i <= KEYS_FILE_MAX / 16; i++)
		fputs("# padding......\n", f);
	fclose(f);
	chmod(path, 0600);
	ck_assert_int_eq(keys_file_check(path, NULL, &err), OUTBOX_ETOOBIG);
	assert_clean_message(&err);
}
END_TEST

static Suite *keys_suite(void)
{
	Suite *s = suite_create("keys");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_keys_load_vectors);
	tcase_add_test(tc, test_keys_owner_only_modes);
	tcase_add_loop_test(tc, test_keys_refuse_group_other_modes, 0,
			    sizeof(bad_modes) / sizeof(bad_modes[0]));
	tcase_add_loop_test(tc, test_keys_malformed_line, 0,
			    sizeof(malformed) / sizeof(malformed[0]));
	tcase_add_test(tc, test_keys_duplicates);
	tcase_add_test(tc, test_keys_empty_and_missing);
	tcase_add_test(tc, test_keys_too_big);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(keys_suite)
