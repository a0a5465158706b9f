/*
 * error.c - see error.h. Formatting is bounded: an over-long message is cut,
 * never overflowed.
 */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void outbox_error_clear(struct outbox_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->field[0] = '\0';
	err->msg[0] = '\0';
}

int outbox_error_set(struct outbox_error *err, int code, const char *field, const char *fmt, ...)
{
	va_list ap;
	size_t n = 0;

	if (!err)
		return code;
	err->code = code;
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	if (field && *field) {
		int w = snprintf(err->msg, sizeof(err->msg), "%s: ", field);
		n = w > 0 ? (size_t)w : 0;
		if (n >= sizeof(err->msg))
			n = sizeof(err->msg) - 1;
	}
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof(err->msg) - n, fmt, ap);
	va_end(ap);
	return code;
}

const char *outbox_error_name(int code)
{
	switch (code) {
	case 0:
		return "ok";
	case OUTBOX_ECONFLICT:
		return "econflict";
	case OUTBOX_EDB:
		return "edb";
	case OUTBOX_EPROTO:
		return "eproto";
	case OUTBOX_ETOOBIG:
		return "etoobig";
	case OUTBOX_ESTATE:
		return "estate";
	default:
		return code < 0 && code > -4096 ? strerror(-code) : "unknown";
	}
}
