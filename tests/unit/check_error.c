/* check_error.c - the one error idiom: codes, field naming, bounded messages. */
#include "common/error.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tests/support/check_main.h"

START_TEST(test_error_names_field)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	int rc = outbox_error_set(&err, OUTBOX_EINVAL, "payload.amount", "'%s' is not positive",
				  "-5");

	ck_assert_int_eq(rc, OUTBOX_EINVAL);
	ck_assert_int_eq(err.code, OUTBOX_EINVAL);
	ck_assert_str_eq(err.field, "payload.amount");
	ck_assert_str_eq(err.msg, "payload.amount: '-5' is not positive");
	outbox_error_clear(&err);
	ck_assert_int_eq(err.code, 0);
	ck_assert_str_eq(err.msg, "");
}
END_TEST

START_TEST(test_error_null_and_no_field)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;

	ck_assert_int_eq(outbox_error_set(NULL, OUTBOX_EDB, "x", "y"), OUTBOX_EDB);
	outbox_error_set(&err, OUTBOX_EPROTO, NULL, "bad %d", 7);
	ck_assert_str_eq(err.msg, "bad 7");
	ck_assert_str_eq(outbox_error_name(OUTBOX_ECONFLICT), "econflict");
	ck_assert_str_eq(outbox_error_name(0), "ok");
}
END_TEST

START_TEST(test_error_long_message_is_cut)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	char big[4096];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	outbox_error_set(&err, OUTBOX_EINVAL, big, "%s", big);
	ck_assert_uint_eq(strlen(err.field), sizeof(err.field) - 1);
	ck_assert_uint_eq(strlen(err.msg), sizeof(err.msg) - 1);
}
END_TEST

static Suite *error_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_error_names_field);
	tcase_add_test(tc, test_error_null_and_no_field);
	tcase_add_test(tc, test_error_long_message_is_cut);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(error_suite)
