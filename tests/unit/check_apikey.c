/*
 * check_apikey.c - the gateway's API keys (common/apikey.h): the format,
 * the hash, the scopes.
 */
#include <check.h>
#include <sodium.h>
#include <string.h>

#include "common/apikey.h"

START_TEST(test_generate_parse_hash)
{
	char a[APIKEY_LEN + 1], b[APIKEY_LEN + 1], prefix[APIKEY_PREFIX_LEN + 1];
	uint8_t ha[APIKEY_HASH_LEN], hb[APIKEY_HASH_LEN], ha2[APIKEY_HASH_LEN];

	apikey_generate(a);
	apikey_generate(b);
	ck_assert_uint_eq(strlen(a), APIKEY_LEN);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(apikey_parse(a, strlen(a), prefix, NULL), 0);
	ck_assert_int_eq(strncmp(prefix, a, APIKEY_PREFIX_LEN), 0);
	ck_assert_uint_eq(strlen(prefix), APIKEY_PREFIX_LEN);
	apikey_hash(a, APIKEY_LEN, ha);
	apikey_hash(a, APIKEY_LEN, ha2);
	apikey_hash(b, APIKEY_LEN, hb);
	ck_assert(apikey_hash_equal(ha, ha2));
	ck_assert(!apikey_hash_equal(ha, hb));
}
END_TEST

START_TEST(test_parse_refuses)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char key[APIKEY_LEN + 1], prefix[APIKEY_PREFIX_LEN + 1], bad[APIKEY_LEN + 1];

	apikey_generate(key);
	ck_assert_int_eq(apikey_parse(key, APIKEY_LEN - 1, prefix, &err), OUTBOX_EINVAL);
	ck_assert_ptr_null(strstr(err.msg, key + 17)); /* never echoes the secret */
	memcpy(bad, key, sizeof(bad));
	bad[5] = 'G'; /* prefix: hex digits only */
	ck_assert_int_eq(apikey_parse(bad, APIKEY_LEN, prefix, NULL), OUTBOX_EINVAL);
	memcpy(bad, key, sizeof(bad));
	bad[40] = '+'; /* base64url only */
	ck_assert_int_eq(apikey_parse(bad, APIKEY_LEN, prefix, NULL), OUTBOX_EINVAL);
	memcpy(bad, key, sizeof(bad));
	bad[0] = 'x';
	ck_assert_int_eq(apikey_parse(bad, APIKEY_LEN, prefix, NULL), OUTBOX_EINVAL);
}
END_TEST

START_TEST(test_scopes)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	unsigned m;

	ck_assert_int_eq(apikey_scopes_parse("outbox:read", &m, NULL), 0);
	ck_assert_uint_eq(m, APIKEY_SCOPE_READ);
	ck_assert_int_eq(apikey_scopes_parse("outbox:read,outbox:write,outbox:enqueue", &m, NULL),
			 0);
	ck_assert_uint_eq(m, APIKEY_SCOPE_ALL);
	ck_assert_int_eq(apikey_scopes_parse("outbox:admin", &m, &err), OUTBOX_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "outbox:admin"));
	ck_assert_int_eq(apikey_scopes_parse("outbox:read,outbox:read", &m, NULL), OUTBOX_EINVAL);
	ck_assert_int_eq(apikey_scopes_parse("", &m, NULL), OUTBOX_EINVAL);
	ck_assert_int_eq(apikey_scopes_parse("outbox:read,", &m, NULL), OUTBOX_EINVAL);
	ck_assert_str_eq(apikey_scope_name(APIKEY_SCOPE_ENQUEUE), "outbox:enqueue");
	ck_assert_ptr_null(apikey_scope_name(3));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("apikey");
	TCase *tc = tcase_create("core");
	SRunner *r;
	int failed;

	if (sodium_init() < 0)
		return 1;
	tcase_add_test(tc, test_generate_parse_hash);
	tcase_add_test(tc, test_parse_refuses);
	tcase_add_test(tc, test_scopes);
	suite_add_tcase(s, tc);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
