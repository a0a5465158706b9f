/*
 * publish_window.c - see publish_window.h. The links held are a contiguous
 * run of chain seqs, so one state byte per link at index seq - start
 * (counted from head) says everything; the array is compacted when its
 * handed-out front passes half of it.
 */
#include "common/publish_window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { PW_IN_FLIGHT = 0, PW_ACKED = 1, PW_FAILED = 2 };

static int grow(struct publish_window *w)
{
	size_t cap;
	uint8_t *p;

	if (w->head && w->head >= w->cap / 2) {
		memmove(w->st, w->st + w->head, w->n);
		w->head = 0;
		return 0;
	}
	cap = w->cap ? 2 * w->cap : 64;
	if (!(p = realloc(w->st, cap)))
		return -ENOMEM;
	w->st = p;
	w->cap = cap;
	return 0;
}

int pw_produced(struct publish_window *w, int64_t seq)
{
	if (w->stopped)
		return 0; /* nothing moves until the reset: the link needs no slot */
	if (!w->anchored) {
		w->start = seq;
		w->anchored = true;
	}
	if (seq != w->start + (int64_t)w->n) {
		w->stopped = true;
		return -EINVAL;
	}
	if (w->head + w->n == w->cap && grow(w) != 0) {
		w->stopped = true;
		return -ENOMEM;
	}
	w->st[w->head + w->n++] = PW_IN_FLIGHT;
	return 0;
}

void pw_acked(struct publish_window *w, int64_t seq, bool ok)
{
	int64_t i = seq - w->start;

	if (i < 0 || i >= (int64_t)w->n || w->st[w->head + (size_t)i] != PW_IN_FLIGHT)
		return;
	w->st[w->head + (size_t)i] = ok ? PW_ACKED : PW_FAILED;
	if (!ok)
		w->stopped = true;
}

bool pw_take(struct publish_window *w, int64_t *from, int64_t *to)
{
	size_t k = 0;

	while (k < w->n && w->st[w->head + k] == PW_ACKED)
		k++;
	if (k == 0)
		return false;
	*from = w->start;
	*to = w->start + (int64_t)k - 1;
	w->start += (int64_t)k;
	w->head += k;
	w->n -= k;
	if (w->n == 0)
		w->head = 0;
	return true;
}

size_t pw_held(const struct publish_window *w)
{
	return w->n;
}

void pw_reset(struct publish_window *w)
{
	uint8_t *st = w->st;
	size_t cap = w->cap;

	*w = (struct publish_window){.st = st, .cap = cap};
}

void pw_free(struct publish_window *w)
{
	free(w->st);
	*w = (struct publish_window){0};
}
