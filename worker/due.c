/*
 * due.c - the jobs by due time: a binary min-heap on job->due_ms.
 *
 * jobs_tick used to walk every job whenever the earliest due time had
 * passed, and a job coming back from a call folds in its old (past) due
 * time, so on a busy worker nearly every loop turn walked hundreds of jobs
 * to run a few. The heap hands out only the due ones: O(log n) per due time
 * set, nothing for the jobs that are not due.
 *
 * A job is in the heap at most once. jobs_tick takes out the due ones; a
 * busy one stays out until job_gone puts it back with its due time, a run
 * one comes back through the job_due() its step makes (or the job ends).
 * job_free takes a job out. The heap's room grows in due_reserve(), called
 * by job_new, so setting a due time never allocates and never fails.
 */
#include "worker/worker.h"

#include <stdlib.h>

static void place(struct worker *w, size_t i, struct job *j)
{
	w->due[i] = j;
	j->due_at = i + 1;
}

static void up(struct worker *w, size_t i)
{
	struct job *j = w->due[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (w->due[p]->due_ms <= j->due_ms)
			break;
		place(w, i, w->due[p]);
		i = p;
	}
	place(w, i, j);
}

static void down(struct worker *w, size_t i)
{
	struct job *j = w->due[i];

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= w->n_due)
			break;
		if (c + 1 < w->n_due && w->due[c + 1]->due_ms < w->due[c]->due_ms)
			c++;
		if (j->due_ms <= w->due[c]->due_ms)
			break;
		place(w, i, w->due[c]);
		i = c;
	}
	place(w, i, j);
}

int due_reserve(struct worker *w, size_t n)
{
	size_t cap = w->cap_due ? w->cap_due : 64;
	struct job **p;

	if (n <= w->cap_due)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(w->due, cap * sizeof(*p));
	if (!p)
		return -1;
	w->due = p;
	w->cap_due = cap;
	return 0;
}

void due_set(struct job *j, int64_t at)
{
	struct worker *w = j->w;
	int64_t was = j->due_ms;

	j->due_ms = at;
	if (!j->due_at) {
		/* due_reserve made room for every job when it was created */
		w->due[w->n_due++] = j;
		up(w, w->n_due - 1);
	} else if (at < was) {
		up(w, j->due_at - 1);
	} else if (at > was) {
		down(w, j->due_at - 1);
	}
}

void due_drop(struct job *j)
{
	struct worker *w = j->w;
	size_t i;

	if (!j->due_at)
		return;
	i = j->due_at - 1;
	j->due_at = 0;
	if (i == --w->n_due)
		return;
	place(w, i, w->due[w->n_due]);
	if (i > 0 && w->due[i]->due_ms < w->due[(i - 1) / 2]->due_ms)
		up(w, i);
	else
		down(w, i);
}

struct job *due_pop(struct worker *w, int64_t now)
{
	struct job *j;

	/*
	 * A job due again at once after its run this tick (schedule(j, 0))
	 * waits for the next tick, one loop turn away: a tick ends.
	 */
	if (!w->n_due || w->due[0]->due_ms > now || w->due[0]->tick_no == w->tick_no)
		return NULL;
	j = w->due[0];
	due_drop(j);
	return j;
}

int64_t due_next(const struct worker *w)
{
	return w->n_due ? w->due[0]->due_ms : INT64_MAX;
}

void due_free(struct worker *w)
{
	free(w->due);
	w->due = NULL;
	w->n_due = w->cap_due = 0;
}
