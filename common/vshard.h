/*
 * vshard.h - virtual shards: which one a signer belongs to, and which
 * worker owns it.
 *
 *	vshard = be32(SHA-256(signer strkey as ASCII)[0..3]) mod vshards
 *
 * Identical to SQL's outbox.vshard_of(signer, vshards) (schema/0002_enqueue.sql);
 * the integration test check_enqueue compares both for many signers. The
 * count is the deployment's outbox.settings.vshards (1..OUTBOX_VSHARDS_MAX),
 * fixed at the first migrate.
 */
#ifndef OUTBOX_COMMON_VSHARD_H
#define OUTBOX_COMMON_VSHARD_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define OUTBOX_VSHARDS_DEFAULT 64
#define OUTBOX_VSHARDS_MAX     4096

/*
 * The vshard (0..vshards-1) of the len bytes at signer, or -EINVAL when
 * vshards is outside 1..OUTBOX_VSHARDS_MAX or signer is NULL.
 */
int outbox_vshard_of(const char *signer, size_t len, int vshards);

/*
 * The worker (0..workers-1) that owns vshard v: v mod workers. Worker i
 * leases only these vshards and keeps only the keys of their signers; the
 * oracle's ledger follower sends a vshard's hints to the same worker.
 * -EINVAL when v < 0 or workers < 1.
 */
int outbox_vshard_owner(int vshard, int workers);

/*
 * The name a worker leases its vshards under (outbox.shard_leases.owner):
 * "<instance>/<worker index>/<pid>". Written into out (cap bytes); the
 * length, or -ENOSPC when it does not fit (out then holds "").
 */
int outbox_lease_owner_format(char *out, size_t cap, const char *instance, unsigned index,
			      long pid);

/*
 * Whether owner is the name worker *index with pid *pid of instance leases
 * under: exactly "<instance>/<digits>/<digits>", no sign, no leading zero,
 * each number in int range (*index, *pid set only then). A name of another
 * instance, or one not of that form, is not ours: false.
 */
bool outbox_lease_owner_parse(const char *owner, const char *instance, unsigned *index, long *pid);

/*
 * Parse an OUTBOX_VSHARDS value: NULL or "" means unset (*out = 0);
 * otherwise decimal digits only, 1..OUTBOX_VSHARDS_MAX.
 */
int outbox_vshards_parse(const char *s, int *out, struct outbox_error *err);

#endif
