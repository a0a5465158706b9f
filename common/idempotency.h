/*
 * idempotency.h - idempotency keys and on-chain op references (pure).
 *
 * key    = "<KIND>:<user_id>:<business_record_id>"
 *          REFERRAL_REWARD: business_record_id = "<conversion_id>:<leg>"
 * op_ref = SHA-256(key), the last argument of every vault call, so anyone
 *          reading the chain maps an execution back to its op.
 *
 * Ambiguity is refused rather than tolerated: user_id and conversion_id may not
 * contain ':' (otherwise "u:x" + "y" and "u" + "x:y" would build the same key
 * and two intents would collapse into one payment). Each part is 1..128 bytes.
 * outbox.enqueue() in schema/ applies the same rules; tests compare the two.
 */
#ifndef OUTBOX_COMMON_IDEMPOTENCY_H
#define OUTBOX_COMMON_IDEMPOTENCY_H

#include "common/error.h"
#include "common/priority.h"

#include <stddef.h>
#include <stdint.h>

#define IDEM_PART_MAX 128
/* kind + 2 separators + user + business record (which may itself be conv:leg) */
#define IDEM_KEY_MAX (16 + 1 + IDEM_PART_MAX + 1 + IDEM_PART_MAX + 1 + IDEM_PART_MAX + 1)

/*
 * Build the key into out (cap >= IDEM_KEY_MAX is always enough). For
 * REFERRAL_REWARD, conversion_id and leg are required and business_record_id
 * may be NULL (derived) or must equal "<conversion_id>:<leg>"; for the other
 * kinds conversion_id and leg must be NULL. Returns 0 or OUTBOX_EINVAL with
 * err naming the field.
 */
int idempotency_key_build(enum op_kind kind, const char *user_id, const char *business_record_id,
			  const char *conversion_id, const char *leg, char *out, size_t cap,
			  struct outbox_error *err);

/* op_ref = SHA-256(key). */
void idempotency_op_ref(const char *key, uint8_t out[32]);

#endif
