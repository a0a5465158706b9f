/*
 * log.h - one line per event on stderr, with role and pid.
 *
 * Two formats, chosen by OUTBOX_LOG_FORMAT (read by the process main, passed
 * to log_init): "kv" (default)
 *	ts=2026-12-02T17:00:00.123Z level=info role=worker idx=2 pid=123 msg="claimed" ...
 * and "json"
 *	{"ts":"...","level":"info","role":"worker","idx":2,"pid":123,"msg":"claimed"}
 *
 * Messages follow git's guidelines: lowercase, error first, subject quoted.
 * Never pass a secret to these functions.
 */
#ifndef OUTBOX_COMMON_LOG_H
#define OUTBOX_COMMON_LOG_H

enum log_level { LOG_LVL_DEBUG = 0, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERR };
enum log_format { LOG_FMT_KV = 0, LOG_FMT_JSON };

/* Set this process's identity; call again in a child after fork. */
void log_init(const char *role, int index, enum log_format fmt, enum log_level min_level);

/* Parse "kv"/"json"; returns -1 on anything else. */
int log_format_parse(const char *s, enum log_format *out);
/* Parse "debug"/"info"/"warn"/"error"; returns -1 on anything else. */
int log_level_parse(const char *s, enum log_level *out);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)

#endif
