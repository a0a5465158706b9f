/*
 * ctl_fee.c - `outboxctl fee [--json] [--instance NAME]`: the current fee
 * snapshot of a running outboxd and its age, copied read-only with the
 * bounded seqcount protocol (see ctl_stats.c for the attach rules).
 *
 * Exit codes: 0 fresh snapshot; 1 stale (older than its ttl + 1 s) or none
 * published yet; 2 usage error or no instance to attach.
 */
#include "ops/ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

void ctl_fee_print_text(json_t *fee)
{
	if (!json_is_true(json_object_get(fee, "published"))) {
		printf("fee snapshot: none (%s)\n",
		       json_string_value(json_object_get(fee, "error")));
		return;
	}
	printf("fee snapshot: recommended %lld, aggressive %lld stroops; congestion %s; "
	       "capacity usage %.3f\n"
	       "latest ledger %lld (closed at %lld); age %lld ms (ttl %lld ms)%s\n",
	       json_integer_value(json_object_get(fee, "recommendedBaseFee")),
	       json_integer_value(json_object_get(fee, "aggressiveBaseFee")),
	       json_string_value(json_object_get(fee, "congestionLevel")),
	       json_real_value(json_object_get(fee, "ledgerCapacityUsage")),
	       json_integer_value(json_object_get(fee, "latestLedger")),
	       json_integer_value(json_object_get(fee, "latestLedgerCloseTime")),
	       json_integer_value(json_object_get(fee, "ageMs")),
	       json_integer_value(json_object_get(fee, "ttlMs")),
	       json_is_true(json_object_get(fee, "stale")) ? " STALE" : "");
}

int ctl_fee(int argc, char **argv)
{
	struct ctl_shm_opts o;
	bool stale = false;
	json_t *fee = NULL;
	int rc = ctl_shm_open("fee", argc, argv, &o);

	if (rc)
		return rc;
	for (int attempt = 0; attempt < 2; attempt++) {
		fee = ctl_fee_json(&o.seg, &stale);
		if (!ctl_shm_restarted(&o))
			break;
		json_decref(fee);
		fee = NULL;
		shm_segment_detach(&o.seg);
		if ((rc = ctl_shm_open("fee", argc, argv, &o)))
			return rc;
	}
	if (!fee) {
		fprintf(stderr, "outboxctl fee: instance '%s' keeps restarting\n", o.instance);
		shm_segment_detach(&o.seg);
		return 1;
	}
	json_object_set_new(fee, "instance", json_string(o.instance));
	if (o.json) {
		char *s = json_dumps(fee, JSON_COMPACT);

		printf("%s\n", s);
		free(s);
	} else {
		ctl_fee_print_text(fee);
	}
	json_decref(fee);
	shm_segment_detach(&o.seg);
	return stale ? 1 : 0;
}
