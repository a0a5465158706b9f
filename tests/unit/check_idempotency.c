/* check_idempotency.c - key building rules and op_ref. */
#include "common/idempotency.h"

#include <check.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

START_TEST(test_idem_keys_per_kind)
{
	char key[IDEM_KEY_MAX];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(idempotency_key_build(OP_KIND_WITHDRAW, "u42", "wd-9", NULL, NULL, key,
					       sizeof(key), &err),
			 0);
	ck_assert_str_eq(key, "WITHDRAW:u42:wd-9");
	ck_assert_int_eq(idempotency_key_build(OP_KIND_DEPOSIT, "u1", "a:b", NULL, NULL, key,
					       sizeof(key), &err),
			 0);
	ck_assert_str_eq(key, "DEPOSIT:u1:a:b");
	ck_assert_int_eq(idempotency_key_build(OP_KIND_REFERRAL_REWARD, "u7", NULL, "conv1", "L1",
					       key, sizeof(key), &err),
			 0);
	ck_assert_str_eq(key, "REFERRAL_REWARD:u7:conv1:L1");
	/* a matching explicit business record id is accepted */
	ck_assert_int_eq(idempotency_key_build(OP_KIND_REFERRAL_REWARD, "u7", "conv1:L1", "conv1",
					       "L1", key, sizeof(key), &err),
			 0);
	ck_assert_str_eq(key, "REFERRAL_REWARD:u7:conv1:L1");
}
END_TEST

struct bad_case {
	enum op_kind kind;
	const char *user, *brid, *conv, *leg, *field;
};

static const struct bad_case bad[] = {
	{OP_KIND_WITHDRAW, "", "x", NULL, NULL, "user_id"},
	{OP_KIND_WITHDRAW, NULL, "x", NULL, NULL, "user_id"},
	{OP_KIND_WITHDRAW, "u:1", "x", NULL, NULL, "user_id"},
	{OP_KIND_WITHDRAW, "u1", "", NULL, NULL, "business_record_id"},
	{OP_KIND_WITHDRAW, "u1", NULL, NULL, NULL, "business_record_id"},
	{OP_KIND_DEPOSIT, "u1", "x", "c", NULL, "payload.conversion_id"},
	{OP_KIND_REFERRAL_REWARD, "u1", NULL, NULL, "L1", "payload.conversion_id"},
	{OP_KIND_REFERRAL_REWARD, "u1", NULL, "c:1", "L1", "payload.conversion_id"},
	{OP_KIND_REFERRAL_REWARD, "u1", NULL, "c1", "", "payload.leg"},
	{OP_KIND_REFERRAL_REWARD, "u1", "c1:L2", "c1", "L1", "business_record_id"},
	{OP_KIND_COUNT, "u1", "x", NULL, NULL, "kind"},
};

START_TEST(test_idem_rejects_bad_parts)
{
	char key[IDEM_KEY_MAX];
	struct outbox_error err = OUTBOX_ERROR_INIT;
	const struct bad_case *c = &bad[_i];

	ck_assert_int_eq(idempotency_key_build(c->kind, c->user, c->brid, c->conv, c->leg, key,
					       sizeof(key), &err),
			 OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, c->field);
	ck_assert_msg(strncmp(err.msg, c->field, strlen(c->field)) == 0, "msg '%s'", err.msg);
}
END_TEST

START_TEST(test_idem_length_bounds)
{
	char key[IDEM_KEY_MAX], part[IDEM_PART_MAX + 2];
	struct outbox_error err = OUTBOX_ERROR_INIT;

	memset(part, 'a', IDEM_PART_MAX);
	part[IDEM_PART_MAX] = '\0';
	ck_assert_int_eq(idempotency_key_build(OP_KIND_REFERRAL_REWARD, part, NULL, part, part, key,
					       sizeof(key), &err),
			 0);
	ck_assert_uint_eq(strlen(key), strlen("REFERRAL_REWARD") + 3 + 3 * IDEM_PART_MAX);
	part[IDEM_PART_MAX] = 'a';
	part[IDEM_PART_MAX + 1] = '\0';
	ck_assert_int_eq(idempotency_key_build(OP_KIND_DEPOSIT, part, "x", NULL, NULL, key,
					       sizeof(key), &err),
			 OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, "user_id");
	/* a too-small output buffer is an error, never a truncated key */
	ck_assert_int_eq(idempotency_key_build(OP_KIND_DEPOSIT, "u", "x", NULL, NULL, key, 8, &err),
			 OUTBOX_ETOOBIG);
}
END_TEST

START_TEST(test_idem_op_ref_is_sha256_of_key)
{
	uint8_t ref[32], want[32];
	static const char key[] = "WITHDRAW:u42:wd-9";

	ck_assert_int_ge(sodium_init(), 0);
	idempotency_op_ref(key, ref);
	crypto_hash_sha256(want, (const unsigned char *)key, strlen(key));
	ck_assert_mem_eq(ref, want, 32);
	/* SHA-256("abc") known answer, to pin the algorithm itself */
	static const uint8_t abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
					0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
					0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
					0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
	idempotency_op_ref("abc", ref);
	ck_assert_mem_eq(ref, abc, 32);
}
END_TEST

static Suite *idempotency_suite(void)
{
	Suite *s = suite_create("idempotency");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_idem_keys_per_kind);
	tcase_add_loop_test(tc, test_idem_rejects_bad_parts, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_idem_length_bounds);
	tcase_add_test(tc, test_idem_op_ref_is_sha256_of_key);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(idempotency_suite)
