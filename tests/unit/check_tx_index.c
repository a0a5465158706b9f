/*
 * check_tx_index.c - worker/tx_index.c, the jobs by their envelopes'
 * hashes, against the walk it replaced: random jobs with random envelopes,
 * freed at random, every lookup answered as the walk answers it.
 */
#include "worker/worker.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tests/support/check_main.h"
#include "tests/support/splitmix.h"

#define N_JOBS 300

/* Hashes from a small space, so lookups hit, miss and collide in buckets. */
static void hash_of(uint64_t x, char out[65])
{
	snprintf(out, 65, "%016llx%048d", (unsigned long long)(x % 997), 0);
}

static bool has_hash(const struct job *j, const char *hash)
{
	for (int k = 0; k < j->n_env; k++)
		if (!strcmp(j->env[k].hash, hash))
			return true;
	return false;
}

static struct job *walk(struct job *jobs, const bool *live, const char *hash)
{
	for (int i = 0; i < N_JOBS; i++)
		if (live[i] && !jobs[i].abandoned && has_hash(&jobs[i], hash))
			return &jobs[i];
	return NULL;
}

static void run(bool incomplete)
{
	struct worker w = {.tx_incomplete = incomplete};
	struct job *jobs = calloc(N_JOBS, sizeof(*jobs));
	bool live[N_JOBS] = {0};
	uint64_t rs = 7;
	char h[65];

	ck_assert_ptr_nonnull(jobs);
	for (int step = 0; step < 100000; step++) {
		int i = (int)(next_rand(&rs) % N_JOBS);
		struct job *j = &jobs[i];
		uint64_t r = next_rand(&rs) % 10;

		if (r < 3 && (!live[i] || j->n_env <= WORKER_MAX_BUMPS)) {
			if (!live[i]) { /* a new job, first on the list as job_new puts it */
				*j = (struct job){.w = &w, .next = w.jobs};
				w.jobs = j;
				live[i] = true;
			}
			hash_of(next_rand(&rs), h);
			memcpy(j->env[j->n_env].hash, h, 65);
			j->n_env++;
			tx_index_add(j, h);
		} else if (r < 4 && live[i]) {
			/* freed: off the list, entries dropped */
			struct job **p = &w.jobs;
			while (*p != j)
				p = &(*p)->next;
			*p = j->next;
			tx_index_drop_job(j);
			ck_assert_ptr_null(j->tx_refs);
			live[i] = false;
		} else if (r < 5 && live[i]) {
			j->abandoned = !j->abandoned;
		} else if (r < 6 && live[i] && j->n_env) {
			/* an envelope rewritten in place: its old hash no longer finds the job */
			hash_of(next_rand(&rs), j->env[0].hash);
			tx_index_add(j, j->env[0].hash);
		} else {
			struct job *want, *got;
			hash_of(next_rand(&rs), h);
			want = walk(jobs, live, h);
			got = tx_index_find(&w, h);
			if (want) /* two jobs may share a hash here: either is an answer the walk could give */
				ck_assert_msg(got && !got->abandoned && has_hash(got, h) &&
						      live[got - jobs],
					      "step %d: %s not found", step, h);
			else
				ck_assert_ptr_null(got);
		}
	}
	ck_assert(w.tx_incomplete == incomplete);
	tx_index_free(&w);
	free(jobs);
}

START_TEST(test_tx_index_matches_the_walk)
{
	run(false);
}
END_TEST

START_TEST(test_tx_index_incomplete_walks)
{
	run(true);
}
END_TEST

static Suite *tx_index_suite(void)
{
	Suite *s = suite_create("tx_index");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60); /* randomized runs, under ASan in CI on a busy machine */
	tcase_add_test(tc, test_tx_index_matches_the_walk);
	tcase_add_test(tc, test_tx_index_incomplete_walks);
	suite_add_tcase(s, tc);
	return s;
}

OUTBOX_CHECK_MAIN(tx_index_suite)
