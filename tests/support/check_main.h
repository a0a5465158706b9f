/*
 * check_main.h - the one main() of a Check suite file:
 *
 *	OUTBOX_CHECK_MAIN(lifecycle_suite)
 *
 * runs every test of the suite in Check's default fork mode (CK_ENV: the
 * CK_VERBOSITY / CK_RUN_CASE / CK_FORK variables apply) and exits non-zero
 * when any failed, which is what ctest reads.
 */
#ifndef OUTBOX_TESTS_CHECK_MAIN_H
#define OUTBOX_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int outbox_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define OUTBOX_CHECK_MAIN(suite_fn)                                                                \
	int main(void)                                                                             \
	{                                                                                          \
		return outbox_check_run(suite_fn());                                               \
	}

#endif
