/*
 * trace.c - an op's path to its send, split into parts (trace.h).
 */
#include "worker/trace.h"

static int64_t part(int64_t from, int64_t to)
{
	return to > from ? to - from : 0;
}

void send_split(struct send_split *s, const struct send_marks *m, int64_t age_us)
{
	int64_t steps;

	s->claim_us = part(m->claim_sent, m->claimed);
	s->queued_us = part(m->claimed, m->build);
	s->prepare_us = part(m->build, m->sim_sent);
	s->simulate_us = part(m->sim_sent, m->sim_done);
	s->sign_us = part(m->sim_done, m->rec_sent);
	s->write_us = part(m->rec_sent, m->rec_done);
	steps = s->claim_us + s->queued_us + s->prepare_us + s->simulate_us + s->sign_us +
		s->write_us;
	s->before_claim_us = part(steps, age_us);
	s->total_us = steps + s->before_claim_us;
}
