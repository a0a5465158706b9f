/*
 * faults.h - fault injection, set through POST /debug/faults:
 *	{"method": "<name or *>", "delay_ms": n, "timeout_rate": x,
 *	 "http_5xx_rate": x, "garbage_rate": x, "try_again_later_rate": x,
 *	 "blackhole_rate": x, "huge_rate": x, "deep_rate": x, "truncated_rate": x,
 *	 "drip_rate": x}
 * (rates in 0..1, every field optional, a missing one is 0; "method"
 * defaults to "*"), the global knobs {"background_fee_load": n} and
 * {"ingest_lag_ledgers": n} or {"ingest_lag_ledgers": n,
 * "ingest_lag_alt_ledgers": m} (lags 0..VIEW_MAX_LAG, see chain.h), or {} to
 * clear everything. A body with only global knobs leaves the method entries
 * alone. A method's own entry wins over "*". Dice come from the --seed PRNG.
 */
#ifndef OUTBOX_SIM_FAULTS_H
#define OUTBOX_SIM_FAULTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct fault {
	unsigned delay_ms;
	double timeout_rate;
	double http_5xx_rate;
	double garbage_rate;
	double try_again_later_rate;
	double blackhole_rate;
	/* hostile answers (http.c): oversized, deeply nested, cut short, dripped */
	double huge_rate;
	double deep_rate;
	double truncated_rate;
	double drip_rate;
};

/* Apply a /debug/faults body; -1 with errbuf on a bad body (nothing changes). */
int faults_set(json_t *body, char *errbuf, size_t errlen);
/* The faults in force for method (zeros when none). */
void faults_get(const char *method, struct fault *out);
/* Roll a die: true with probability rate. */
bool faults_roll(double rate);
/* The current table as JSON (GET /debug/faults). */
json_t *faults_json(void);

#endif
