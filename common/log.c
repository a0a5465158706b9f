/*
 * log.c - see log.h. Each line is formatted into one buffer and written with a
 * single write(2) so lines from concurrent processes never interleave
 * (writes up to PIPE_BUF to a pipe are atomic; to a file with O_APPEND too).
 */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_role = "main";
static int log_index = -1;
static enum log_format log_fmt = LOG_FMT_KV;
static enum log_level log_min = LOG_LVL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_init(const char *role, int index, enum log_format fmt, enum log_level min_level)
{
	log_role = role;
	log_index = index;
	log_fmt = fmt;
	log_min = min_level;
}

int log_format_parse(const char *s, enum log_format *out)
{
	if (!strcmp(s, "kv"))
		*out = LOG_FMT_KV;
	else if (!strcmp(s, "json"))
		*out = LOG_FMT_JSON;
	else
		return -1;
	return 0;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (!strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

/* Append s to buf as the inside of a JSON/kv quoted string. */
static size_t quote_into(char *buf, size_t cap, size_t n, const char *s)
{
	for (; *s && n + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", c);
		} else {
			buf[n++] = (char)c;
		}
	}
	return n;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char msg[1024], line[2048], ts[40];
	struct timespec now;
	struct tm tm;
	va_list ap;
	size_t n;

	if (level < log_min)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000);

	if (log_fmt == LOG_FMT_JSON)
		n = (size_t)snprintf(line, sizeof(line),
				     "{\"ts\":\"%s\",\"level\":\"%s\",\"role\":\"%s\",\"idx\":%d,"
				     "\"pid\":%d,\"msg\":\"",
				     ts, level_names[level], log_role, log_index, (int)getpid());
	else
		n = (size_t)snprintf(line, sizeof(line),
				     "ts=%s level=%s role=%s idx=%d pid=%d msg=\"", ts,
				     level_names[level], log_role, log_index, (int)getpid());
	n = quote_into(line, sizeof(line), n, msg);
	n += (size_t)snprintf(line + n, sizeof(line) - n,
			      log_fmt == LOG_FMT_JSON ? "\"}\n" : "\"\n");
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	(void)!write(STDERR_FILENO, line, n);
}
