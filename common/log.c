/*
 * log.c - see log.h. Each line is formatted into one buffer and written with a
 * single write(2) so lines from concurrent processes never interleave
 * (writes up to PIPE_BUF to a pipe are atomic; to a file with O_APPEND too).
 * A line too long for its buffer is cut, never broken: the message is cut
 * between characters and closed, detail fields that do not fit are left
 * out whole, and the brace and the newline are always there.
 */
#include "common/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048
#define LOG_TAIL     3 /* room kept for the line's end: }\n and the NUL */

static const char *log_role = "main";
static int log_index = -1;
static enum log_format log_fmt = LOG_FMT_KV;
static enum log_level log_min = LOG_LVL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};
static const char *const own_keys[] = {"ts", "level", "role", "idx", "pid", "msg"};

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

/*
 * A line being built. A put that does not fit below `end` writes nothing and
 * sets `full`; every later put writes nothing either, until the caller
 * takes stock (rolls a field back, or closes the message).
 */
struct out {
	char *buf;
	size_t end, n;
	bool full;
};

static void put(struct out *o, const char *s, size_t len)
{
	if (o->full || len > o->end - o->n) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->n, s, len);
	o->n += len;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* s[0..len) as the inside of a JSON / kv quoted string. */
static void put_escaped(struct out *o, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(o, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(o, esc, 6);
		} else {
			put(o, (const char *)&c, 1);
		}
	}
}

static bool is_key_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || c == '_' || (!first && c >= '0' && c <= '9');
}

/* Length of the key at s when s starts with "key=", else 0. */
static size_t key_at(const char *s)
{
	size_t n = 0;

	while (is_key_char(s[n], n == 0))
		n++;
	return n && s[n] == '=' ? n : 0;
}

/* Where the value starting at s ends: at the next " key=" or the end. */
static size_t value_len(const char *s)
{
	const char *p = s;

	while ((p = strchr(p, ' ')) && !key_at(p + 1))
		p++;
	return p ? (size_t)(p - s) : strlen(s);
}

static bool is_json_integer(const char *s, size_t len)
{
	size_t i = s[0] == '-';

	if (len <= i || len - i > 18 || (s[i] == '0' && len - i > 1))
		return false;
	for (; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool is_bare(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '"' || s[i] == '=' || s[i] == '\\')
			return false;
	return len > 0;
}

static void put_field(struct out *o, enum log_format fmt, const char *key, size_t klen,
		      const char *val, size_t vlen)
{
	bool own = false;

	for (size_t i = 0; i < sizeof(own_keys) / sizeof(own_keys[0]); i++)
		own |= strlen(own_keys[i]) == klen && !memcmp(own_keys[i], key, klen);
	puts_(o, fmt == LOG_FMT_JSON ? ",\"" : " ");
	if (own)
		puts_(o, "detail_");
	put(o, key, klen);
	puts_(o, fmt == LOG_FMT_JSON ? "\":" : "=");
	if (fmt == LOG_FMT_JSON ? is_json_integer(val, vlen) : is_bare(val, vlen)) {
		put(o, val, vlen);
		return;
	}
	puts_(o, "\"");
	put_escaped(o, val, vlen);
	puts_(o, "\"");
}

/*
 * The detail's pairs; leading text before the first key= is the value of
 * "detail". A field that does not fit is left out, with all after it.
 */
static void put_detail(struct out *o, enum log_format fmt, const char *d)
{
	while (*d) {
		size_t k = key_at(d), v, before = o->n;
		const char *key = k ? d : "detail", *val = k ? d + k + 1 : d;

		v = value_len(val);
		put_field(o, fmt, key, k ? k : strlen("detail"), val, v);
		if (o->full) {
			o->n = before;
			return;
		}
		d = val + v;
		while (*d == ' ')
			d++;
	}
}

size_t log_format_line(char *buf, size_t cap, enum log_format fmt, const struct log_line *l)
{
	struct out o = {buf, cap - LOG_TAIL - 1, 0, false}; /* 1: the message's closing quote */
	char head[256];
	bool cut;
	int w;

	if (cap < 300) {
		if (cap)
			buf[0] = '\0';
		return 0;
	}
	if (fmt == LOG_FMT_JSON)
		w = snprintf(
			head, sizeof(head),
			"{\"ts\":\"%s\",\"level\":\"%s\",\"role\":\"%s\",\"idx\":%d,\"pid\":%d,"
			"\"msg\":\"",
			l->ts, level_names[l->level], l->role, l->idx, l->pid);
	else
		w = snprintf(head, sizeof(head), "ts=%s level=%s role=%s idx=%d pid=%d msg=\"",
			     l->ts, level_names[l->level], l->role, l->idx, l->pid);
	put(&o, head, w < 0 ? 0 : (size_t)w < sizeof(head) ? (size_t)w : sizeof(head) - 1);
	put_escaped(&o, l->msg, strlen(l->msg));
	cut = o.full;
	o.end++;
	o.full = false;
	puts_(&o, "\"");
	if (l->detail && !cut)
		put_detail(&o, fmt, l->detail);
	o.end = cap - 1;
	o.full = false;
	puts_(&o, fmt == LOG_FMT_JSON ? "}\n" : "\n");
	buf[o.n] = '\0';
	return o.n;
}

/*
 * Format fmt's message and detail apart: the message is fmt up to the
 * separator, formatted alone (printf ignores the arguments it does not
 * use), and the detail is what follows it in the whole formatted text.
 * Splitting the format, not the text, keeps a separator byte inside an
 * argument from moving the split.
 */
static void split_format(char *msg, size_t msg_cap, char *all, size_t all_cap, const char **detail,
			 const char *fmt, va_list ap)
{
	const char *sep = strchr(fmt, LOG_DETAIL_SEP[0]);
	char head[512];
	va_list cp;
	int m;

	*detail = NULL;
	va_copy(cp, ap);
	vsnprintf(all, all_cap, fmt, cp);
	va_end(cp);
	if (!sep || (size_t)(sep - fmt) >= sizeof(head)) {
		snprintf(msg, msg_cap, "%s", all);
		return;
	}
	snprintf(head, sizeof(head), "%.*s", (int)(sep - fmt), fmt);
	va_copy(cp, ap);
	m = vsnprintf(msg, msg_cap, head, cp);
	va_end(cp);
	if (m >= 0 && strlen(all) > (size_t)m)
		*detail = all + m + 1;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char msg[1024], all[1536], line[LOG_LINE_MAX], ts[40];
	struct log_line l = {.ts = ts, .role = log_role, .msg = msg, .level = level};
	struct timespec now;
	struct tm tm;
	va_list ap;
	size_t n;

	if (level < log_min)
		return;
	va_start(ap, fmt);
	split_format(msg, sizeof(msg), all, sizeof(all), &l.detail, fmt, ap);
	va_end(ap);

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000);
	l.idx = log_index;
	l.pid = (int)getpid();
	n = log_format_line(line, sizeof(line), log_fmt, &l);
	(void)!write(STDERR_FILENO, line, n);
}
