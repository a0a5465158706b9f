/*
 * log.h - one line per event on stderr, with role and pid.
 *
 * Two formats, chosen by OUTBOX_LOG_FORMAT (read by the process main, passed
 * to log_init): "kv" (default)
 *	ts=2026-12-02T17:00:00.123Z level=info role=worker idx=2 pid=123 msg="claimed" ...
 * and "json"
 *	{"ts":"...","level":"info","role":"worker","idx":2,"pid":123,"msg":"claimed",...}
 *
 * Messages follow git's guidelines: lowercase, error first, subject quoted.
 * Never pass a secret to these functions.
 *
 * Message and detail (PostgreSQL's errmsg/errdetail split): log_info and
 * friends write a message. When the line also carries values a program may
 * want to read (a pid, an exit code, a configuration), they go in a detail
 * of key=value pairs, never inside the message:
 *
 *	log_detail(LOG_LVL_INFO, "started %s", "child_pid=%d restarts=%llu", name, pid, n);
 *
 *	kv:   ... msg="started worker 2" child_pid=123 restarts=0
 *	json: ... "msg":"started worker 2","child_pid":123,"restarts":0}
 *
 * The arguments are the message's, then the detail's; both formats are
 * string literals, checked together by the compiler as one format. Keys are
 * [a-z_][a-z0-9_]*. A value runs to the next " key=" or the end of the
 * detail, so it may hold spaces; kv quotes a value that needs it, json
 * writes an integer as a number and anything else as a string. A key that
 * is one of the line's own (ts, level, role, idx, pid, msg) is written as
 * detail_<key>, so no line ever has a key twice.
 */
#ifndef OUTBOX_COMMON_LOG_H
#define OUTBOX_COMMON_LOG_H

#include <stddef.h>

enum log_level { LOG_LVL_DEBUG = 0, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERR };
enum log_format { LOG_FMT_KV = 0, LOG_FMT_JSON };

/* Set this process's identity; call again in a child after fork. */
void log_init(const char *role, int index, enum log_format fmt, enum log_level min_level);

/* Parse "kv"/"json"; returns -1 on anything else. */
int log_format_parse(const char *s, enum log_format *out);
/* Parse "debug"/"info"/"warn"/"error"; returns -1 on anything else. */
int log_level_parse(const char *s, enum log_level *out);

/* fmt may hold LOG_DETAIL_SEP once: the message's format before it, the detail's after. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_DETAIL_SEP "\x1f"

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_detail(level, msg_fmt, detail_fmt, ...)                                                \
	log_msg(level, msg_fmt LOG_DETAIL_SEP detail_fmt, __VA_ARGS__)

/* One line as log_msg writes it; the formatter, exposed for its tests. */
struct log_line {
	const char *ts;     /* "2026-12-02T17:00:00.123Z" */
	const char *role;   /* "worker" */
	const char *msg;    /* the message */
	const char *detail; /* key=value pairs, or NULL */
	enum log_level level;
	int idx, pid;
};

/* Format l into buf (NUL-terminated, ends in '\n' unless cut); returns its length. */
size_t log_format_line(char *buf, size_t cap, enum log_format fmt, const struct log_line *l);

#endif
