/*
 * signers.c - the signers this worker signs for: keys and sequence cache.
 *
 * Keys: the keys file is loaded once into libsodium memory (common/keys.h)
 * and only the seeds of this worker's own signers are kept (signers_load).
 * A signer's keypair exists only for the duration of one signature, in the
 * worker's one signing buffer (stellar_keypair_scratch, common/stellar/
 * sign.h: guarded, locked, zeros between signatures), which costs no system
 * call per signature. Signers are found by their G... id in an open-addressing table
 * that grows as ops of new signers are claimed.
 *
 * Sequence cache: seq is the last sequence number known to be used on
 * chain. It is set from getLedgerEntries, advanced when one of our
 * transactions lands (SUCCESS or FAILED both consume it), and invalidated on
 * txBAD_SEQ or any doubt (reconcile), so the next attempt asks the RPC again.
 */
#include "worker/worker.h"

#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"
#include "common/vshard.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static bool key_is_mine(const struct worker *w, const uint8_t pub[32])
{
	char id[STRKEY_BUF];
	int v;

	strkey_encode_account(pub, id);
	v = outbox_vshard_of(id, strlen(id), (int)w->cfg->vshards);
	return outbox_vshard_owner(v, (int)w->cfg->workers) == (int)w->ctx->index;
}

/*
 * Keep only the seeds of signers in this worker's vshards (outbox_vshard_owner:
 * the only vshards it ever leases, a takeover of a dead instance included),
 * so a worker holds no key it cannot use. The others are wiped with the
 * file's copy.
 */
int signers_load(struct worker *w, struct outbox_error *err)
{
	struct signer_keys all = SIGNER_KEYS_INIT;
	size_t n = 0, k = 0;
	int rc = signer_keys_load(&all, w->cfg->signer_keys_file, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < all.n; i++)
		n += key_is_mine(w, all.pub[i]);
	if (n) {
		w->keys.seed = sodium_malloc(n * 32);
		w->keys.pub = calloc(n, 32);
		if (!w->keys.seed || !w->keys.pub) {
			signer_keys_release(&w->keys);
			signer_keys_release(&all);
			return outbox_error_set(err, -ENOMEM, "OUTBOX_SIGNER_KEYS_FILE",
						"out of memory for %zu keys", n);
		}
		for (size_t i = 0; i < all.n; i++) {
			if (!key_is_mine(w, all.pub[i]))
				continue;
			memcpy(w->keys.seed[k], all.seed[i], 32);
			memcpy(w->keys.pub[k++], all.pub[i], 32);
		}
		sodium_mprotect_readonly(w->keys.seed);
		rc = stellar_keypair_scratch(&w->sign_kp, err);
		if (rc) {
			signer_keys_release(&w->keys);
			signer_keys_release(&all);
			return rc;
		}
	}
	w->keys.n = n;
	signer_keys_release(&all);
	return 0;
}

static uint64_t id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull;

	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 1099511628211ull;
	return h;
}

static int grow(struct worker *w)
{
	size_t cap = w->signers_cap ? w->signers_cap * 2 : 256;
	struct signer **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < w->signers_cap; i++) {
		struct signer *s = w->signers[i];
		if (!s)
			continue;
		size_t k = id_hash(s->id) & (cap - 1);
		while (t[k])
			k = (k + 1) & (cap - 1);
		t[k] = s;
	}
	free(w->signers);
	w->signers = t;
	w->signers_cap = cap;
	return 0;
}

/* Signers are allocated one by one, so jobs may keep pointers to them. */
struct signer *signers_get(struct worker *w, const char *id)
{
	struct signer *s;
	size_t k;

	if (strlen(id) != 56)
		return NULL;
	if (w->signers_cap) {
		for (k = id_hash(id) & (w->signers_cap - 1); w->signers[k];
		     k = (k + 1) & (w->signers_cap - 1))
			if (!strcmp(w->signers[k]->id, id))
				return w->signers[k];
	}
	if ((w->signers_n + 1) * 2 > w->signers_cap && grow(w))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (strkey_decode_account(id, s->pub, "signer", NULL)) {
		free(s);
		return NULL;
	}
	memcpy(s->id, id, 57);
	s->key = signer_keys_find(&w->keys, s->pub);
	for (k = id_hash(id) & (w->signers_cap - 1); w->signers[k];
	     k = (k + 1) & (w->signers_cap - 1))
		;
	w->signers[k] = s;
	w->signers_n++;
	return s;
}

int signers_sign(struct worker *w, struct signer *s, struct txbuild *b, struct outbox_error *err)
{
	int rc;

	if (s->key < 0)
		return outbox_error_set(err, OUTBOX_EINVAL, "signer",
					"'%s' has no key in the keys file", s->id);
	/* keys.pub holds each seed's own public key, derived from it at load */
	stellar_keypair_set(&w->sign_kp, w->keys.seed[s->key], w->keys.pub[s->key]);
	rc = txbuild_sign(b, &w->sign_kp, w->network_id, err);
	stellar_keypair_wipe(&w->sign_kp);
	return rc;
}

void signers_release(struct worker *w)
{
	for (size_t i = 0; i < w->signers_cap; i++)
		free(w->signers[i]);
	free(w->signers);
	w->signers = NULL;
	w->signers_cap = w->signers_n = 0;
	stellar_keypair_release(&w->sign_kp);
	signer_keys_release(&w->keys);
}
