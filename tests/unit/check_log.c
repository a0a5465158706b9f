/*
 * check_log.c - the log line formatter (common/log.h) in both formats: a
 * plain message, a message with a detail (its pairs become fields: bare or
 * quoted in kv, numbers or strings in json), values with spaces and quotes,
 * a detail key that repeats one of the line's own, text before the first
 * key, lines cut at the buffer's end (still closed, still valid JSON), and
 * log_detail end to end through stderr, a separator byte inside an
 * argument included.
 */
#include "common/log.h"

#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/check_main.h"

static char buf[2048];

static const char *line(enum log_format fmt, const char *msg, const char *detail)
{
	struct log_line l = {.ts = "2026-12-02T17:00:00.123Z",
			     .role = "worker",
			     .msg = msg,
			     .detail = detail,
			     .level = LOG_LVL_INFO,
			     .idx = 2,
			     .pid = 123};

	log_format_line(buf, sizeof(buf), fmt, &l);
	return buf;
}

/* The json line parsed, refusing a key that appears twice. */
static json_t *parsed(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &e);

	ck_assert_msg(j != NULL, "not JSON (%s): %s", e.text, s);
	return j;
}

START_TEST(test_plain_message)
{
	json_t *j;

	ck_assert_str_eq(line(LOG_FMT_KV, "claimed", NULL),
			 "ts=2026-12-02T17:00:00.123Z level=info role=worker idx=2 pid=123 "
			 "msg=\"claimed\"\n");
	ck_assert_str_eq(line(LOG_FMT_JSON, "claimed", NULL),
			 "{\"ts\":\"2026-12-02T17:00:00.123Z\",\"level\":\"info\",\"role\":"
			 "\"worker\",\"idx\":2,\"pid\":123,\"msg\":\"claimed\"}\n");
	j = parsed(line(LOG_FMT_JSON, "say \"hi\"\\\n", NULL));
	ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "say \"hi\"\\\n");
	json_decref(j);
}
END_TEST

START_TEST(test_detail_fields)
{
	const char *d = "child_pid=4242 restarts=0 why=exited with code 1 path=/tmp/x:1";
	json_t *j;

	ck_assert_str_eq(line(LOG_FMT_KV, "started worker 2", d),
			 "ts=2026-12-02T17:00:00.123Z level=info role=worker idx=2 pid=123 "
			 "msg=\"started worker 2\" child_pid=4242 restarts=0 "
			 "why=\"exited with code 1\" path=/tmp/x:1\n");
	j = parsed(line(LOG_FMT_JSON, "started worker 2", d));
	ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "started worker 2");
	ck_assert(json_is_integer(json_object_get(j, "child_pid")));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "child_pid")), 4242);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "restarts")), 0);
	ck_assert_str_eq(json_string_value(json_object_get(j, "why")), "exited with code 1");
	ck_assert_str_eq(json_string_value(json_object_get(j, "path")), "/tmp/x:1");
	json_decref(j);
}
END_TEST

/* Integers JSON would refuse as numbers stay strings; quotes are escaped. */
START_TEST(test_detail_values)
{
	const char *d = "a=-7 b=007 c=12345678901234567890 d=1.5 e= f=say \"x\"";
	json_t *j = parsed(line(LOG_FMT_JSON, "m", d));

	ck_assert_int_eq(json_integer_value(json_object_get(j, "a")), -7);
	ck_assert_str_eq(json_string_value(json_object_get(j, "b")), "007");
	ck_assert_str_eq(json_string_value(json_object_get(j, "c")), "12345678901234567890");
	ck_assert_str_eq(json_string_value(json_object_get(j, "d")), "1.5");
	ck_assert_str_eq(json_string_value(json_object_get(j, "e")), "");
	ck_assert_str_eq(json_string_value(json_object_get(j, "f")), "say \"x\"");
	json_decref(j);
	ck_assert_ptr_nonnull(strstr(line(LOG_FMT_KV, "m", d),
				     "a=-7 b=007 c=12345678901234567890 d=1.5 e=\"\" "
				     "f=\"say \\\"x\\\"\"\n"));
}
END_TEST

/* A key of the line's own is renamed; text before any key is "detail". */
START_TEST(test_detail_keys)
{
	json_t *j = parsed(line(LOG_FMT_JSON, "m", "free text first pid=9 msg=x"));

	ck_assert_int_eq(json_integer_value(json_object_get(j, "pid")), 123);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "detail_pid")), 9);
	ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "m");
	ck_assert_str_eq(json_string_value(json_object_get(j, "detail_msg")), "x");
	ck_assert_str_eq(json_string_value(json_object_get(j, "detail")), "free text first");
	json_decref(j);
	ck_assert_ptr_nonnull(strstr(line(LOG_FMT_KV, "m", "free text first pid=9"),
				     "msg=\"m\" detail=\"free text first\" detail_pid=9\n"));
}
END_TEST

/* Too long: the message is cut and closed, fields that do not fit are dropped whole. */
START_TEST(test_cut_lines_stay_valid)
{
	static char msg[4096], detail[4096];
	json_t *j;
	size_t n;

	memset(msg, '\x01', sizeof(msg) - 1); /* each byte escapes to 6 */
	j = parsed(line(LOG_FMT_JSON, msg, "a=1"));
	ck_assert_ptr_null(json_object_get(j, "a"));
	json_decref(j);
	n = strlen(buf);
	ck_assert_uint_lt(n, sizeof(buf));
	ck_assert_str_eq(buf + n - 3, "\"}\n");
	ck_assert_str_eq(line(LOG_FMT_KV, msg, NULL) + strlen(buf) - 2, "\"\n");

	for (int i = 0; i < 400; i++)
		snprintf(detail + 10 * i, sizeof(detail) - 10 * (size_t)i, "k%03d=vvvv ", i);
	j = parsed(line(LOG_FMT_JSON, "short", detail));
	ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "short");
	ck_assert_str_eq(json_string_value(json_object_get(j, "k000")), "vvvv");
	ck_assert_ptr_null(json_object_get(j, "k399"));
	json_decref(j);
}
END_TEST

/* log_detail through stderr: the arguments split at the format's separator, not the text's. */
START_TEST(test_log_detail_end_to_end)
{
	char path[] = "/tmp/check_log.XXXXXX", text[4096];
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;
	json_t *j;

	ck_assert_int_ge(fd, 0);
	dup2(fd, 2);
	log_init("test", 3, LOG_FMT_JSON, LOG_LVL_DEBUG);
	log_detail(LOG_LVL_WARN, "lost %s", "vshard=%d why=%s",
		   "a\x1f"
		   "b why=no",
		   7, "no answer");
	log_info("plain %d", 5);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	unlink(path);
	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	*strchr(text, '\n') = '\0';
	j = parsed(text);
	ck_assert_str_eq(json_string_value(json_object_get(j, "level")), "warn");
	ck_assert_str_eq(json_string_value(json_object_get(j, "role")), "test");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "idx")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "lost a\x1f"
								       "b why=no");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "vshard")), 7);
	ck_assert_str_eq(json_string_value(json_object_get(j, "why")), "no answer");
	json_decref(j);
	j = parsed(text + strlen(text) + 1);
	ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "plain 5");
	ck_assert_int_eq(json_object_size(j), 6);
	json_decref(j);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, test_plain_message);
	tcase_add_test(tc, test_detail_fields);
	tcase_add_test(tc, test_detail_values);
	tcase_add_test(tc, test_detail_keys);
	tcase_add_test(tc, test_cut_lines_stay_valid);
	tcase_add_test(tc, test_log_detail_end_to_end);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(log_suite)
