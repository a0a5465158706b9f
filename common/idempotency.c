/* idempotency.c - see idempotency.h. */
#include "common/idempotency.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

static int check_part(const char *field, const char *v, int allow_colon, struct outbox_error *err)
{
	size_t n;

	if (!v || !*v)
		return outbox_error_set(err, OUTBOX_EINVAL, field, "must not be empty");
	n = strlen(v);
	if (n > IDEM_PART_MAX)
		return outbox_error_set(err, OUTBOX_EINVAL, field, "%zu bytes, at most %d allowed",
					n, IDEM_PART_MAX);
	if (!allow_colon && strchr(v, ':'))
		return outbox_error_set(
			err, OUTBOX_EINVAL, field,
			"'%.80s' must not contain ':' (it would make keys ambiguous)", v);
	return 0;
}

int idempotency_key_build(enum op_kind kind, const char *user_id, const char *business_record_id,
			  const char *conversion_id, const char *leg, char *out, size_t cap,
			  struct outbox_error *err)
{
	char derived[2 * IDEM_PART_MAX + 2];
	const char *brid = business_record_id;
	const char *kname = op_kind_name(kind);
	int rc, n;

	if (!kname)
		return outbox_error_set(err, OUTBOX_EINVAL, "kind", "%d is not a known kind",
					(int)kind);
	if ((rc = check_part("user_id", user_id, 0, err)))
		return rc;
	if (kind == OP_KIND_REFERRAL_REWARD) {
		if ((rc = check_part("payload.conversion_id", conversion_id, 0, err)) ||
		    (rc = check_part("payload.leg", leg, 1, err)))
			return rc;
		snprintf(derived, sizeof(derived), "%s:%s", conversion_id, leg);
		if (brid && strcmp(brid, derived))
			return outbox_error_set(
				err, OUTBOX_EINVAL, "business_record_id",
				"'%.80s' differs from '<conversion_id>:<leg>' = '%.80s'", brid,
				derived);
		brid = derived;
	} else {
		if (conversion_id || leg)
			return outbox_error_set(err, OUTBOX_EINVAL,
						conversion_id ? "payload.conversion_id"
							      : "payload.leg",
						"only REFERRAL_REWARD carries it");
		if ((rc = check_part("business_record_id", brid, 1, err)))
			return rc;
	}
	n = snprintf(out, cap, "%s:%s:%s", kname, user_id, brid);
	if (n < 0 || (size_t)n >= cap)
		return outbox_error_set(err, OUTBOX_ETOOBIG, "idempotency_key",
					"needs %d bytes, buffer has %zu", n + 1, cap);
	return 0;
}

void idempotency_op_ref(const char *key, uint8_t out[32])
{
	crypto_hash_sha256(out, (const unsigned char *)key, strlen(key));
}
