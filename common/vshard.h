/*
 * vshard.h - which virtual shard a signer belongs to.
 *
 *	vshard = be32(SHA-256(signer strkey as ASCII)[0..3]) mod vshards
 *
 * Identical to SQL's outbox.vshard_of(signer, vshards) (schema/0002_enqueue.sql);
 * the integration test check_enqueue compares both for many signers. The
 * count is the deployment's outbox.settings.vshards (1..4096).
 */
#ifndef OUTBOX_COMMON_VSHARD_H
#define OUTBOX_COMMON_VSHARD_H

#include <stddef.h>

/*
 * The vshard (0..vshards-1) of the len bytes at signer, or -EINVAL when
 * vshards is outside 1..4096 or signer is NULL.
 */
int outbox_vshard_of(const char *signer, size_t len, int vshards);

#endif
