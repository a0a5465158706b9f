/*
 * sign.c - see sign.h. The secret key region is readable only inside
 * stellar_sign(); everywhere else it is PROT_NONE (sodium_mprotect_noaccess),
 * except a signing buffer's, which holds zeros between signatures.
 */
#include "common/stellar/sign.h"
#include "common/stellar/strkey.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

static int ensure_sodium(struct outbox_error *err)
{
	if (sodium_init() < 0)
		return outbox_error_set(err, OUTBOX_ESTATE, "libsodium", "sodium_init failed");
	return 0;
}

/* A locked, guarded secret-key buffer for kp (mprotect is left to the caller). */
static int alloc_secret(struct stellar_keypair *kp, struct outbox_error *err)
{
	int rc;

	memset(kp, 0, sizeof(*kp));
	if ((rc = ensure_sodium(err)))
		return rc;
	kp->sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
	if (!kp->sk)
		return outbox_error_set(err, -ENOMEM, "seed", "sodium_malloc failed");
	/* sodium_malloc already tries to lock; a second, checked lock makes it explicit. */
	if (sodium_mlock(kp->sk, crypto_sign_SECRETKEYBYTES) != 0) {
		sodium_free(kp->sk);
		kp->sk = NULL;
		return outbox_error_set(err, -errno, "seed",
					"cannot mlock the key (RLIMIT_MEMLOCK too low?)");
	}
	return 0;
}

int stellar_keypair_from_seed(struct stellar_keypair *kp, const uint8_t seed[32],
			      struct outbox_error *err)
{
	int rc;

	if ((rc = alloc_secret(kp, err)))
		return rc;
	crypto_sign_seed_keypair(kp->pk, kp->sk, seed);
	sodium_mprotect_noaccess(kp->sk);
	return 0;
}

int stellar_keypair_from_secret(struct stellar_keypair *kp, const char *secret, const char *field,
				struct outbox_error *err)
{
	uint8_t *seed;
	int rc;

	memset(kp, 0, sizeof(*kp));
	if ((rc = ensure_sodium(err)))
		return rc;
	seed = sodium_malloc(32);
	if (!seed)
		return outbox_error_set(err, -ENOMEM, field, "sodium_malloc failed");
	rc = strkey_decode_seed(secret, seed, field, err);
	if (!rc)
		rc = stellar_keypair_from_seed(kp, seed, err);
	sodium_free(seed); /* wipes */
	return rc;
}

void stellar_keypair_release(struct stellar_keypair *kp)
{
	if (kp->sk) {
		/* sodium_free wipes (it lifts the protection first) and unlocks. */
		sodium_free(kp->sk);
		kp->sk = NULL;
	}
	sodium_memzero(kp->pk, sizeof(kp->pk));
}

int stellar_keypair_scratch(struct stellar_keypair *kp, struct outbox_error *err)
{
	int rc;

	if ((rc = alloc_secret(kp, err)))
		return rc;
	sodium_memzero(kp->sk, crypto_sign_SECRETKEYBYTES);
	kp->scratch = true;
	return 0;
}

/* libsodium's secret key is seed || public key (crypto_sign_seed_keypair). */
void stellar_keypair_set(struct stellar_keypair *kp, const uint8_t seed[32], const uint8_t pk[32])
{
	memcpy(kp->sk, seed, 32);
	memcpy(kp->sk + 32, pk, 32);
	memcpy(kp->pk, pk, 32);
}

void stellar_keypair_wipe(struct stellar_keypair *kp)
{
	if (kp->sk)
		sodium_memzero(kp->sk, crypto_sign_SECRETKEYBYTES);
	sodium_memzero(kp->pk, sizeof(kp->pk));
}

void stellar_keypair_address(const struct stellar_keypair *kp, char *out)
{
	strkey_encode_account(kp->pk, out);
}

void stellar_network_id(const char *passphrase, uint8_t id[32])
{
	crypto_hash_sha256(id, (const unsigned char *)passphrase, strlen(passphrase));
}

void stellar_hint(const uint8_t pk[32], uint8_t hint[4])
{
	memcpy(hint, pk + 28, 4);
}

int stellar_sign(const struct stellar_keypair *kp, const uint8_t hash[32], uint8_t sig[64])
{
	int rc;

	if (!kp->sk)
		return OUTBOX_ESTATE;
	if (!kp->scratch && sodium_mprotect_readonly(kp->sk) != 0)
		return -errno;
	rc = crypto_sign_detached(sig, NULL, hash, 32, kp->sk);
	if (!kp->scratch)
		sodium_mprotect_noaccess(kp->sk);
	return rc == 0 ? 0 : OUTBOX_EINVAL;
}

int stellar_sign_decorated(const struct stellar_keypair *kp, const uint8_t hash[32],
			   struct xdr_sig *out)
{
	stellar_hint(kp->pk, out->hint);
	return stellar_sign(kp, hash, out->sig);
}

int stellar_verify(const uint8_t pk[32], const uint8_t hash[32], const uint8_t sig[64])
{
	if (sodium_init() < 0)
		return OUTBOX_ESTATE;
	return crypto_sign_verify_detached(sig, hash, 32, pk) == 0 ? 0 : OUTBOX_EINVAL;
}

int stellar_sign_envelope(struct xdr_envelope *env, const struct stellar_keypair *kp,
			  const uint8_t network_id[32], uint8_t hash[32], struct outbox_error *err)
{
	bool bump = env->type == ENVELOPE_TYPE_TX_FEE_BUMP;
	uint32_t *n = bump ? &env->bump.n_sigs : &env->n_sigs;
	struct xdr_sig *sigs = bump ? env->bump.sigs : env->sigs;
	uint8_t h[32];
	int rc;

	if (*n >= XDR_MAX_SIGS)
		return outbox_error_set(err, OUTBOX_ETOOBIG, "signatures",
					"already %u signatures (the maximum)", *n);
	rc = xdr_envelope_hash(env, network_id, h);
	if (rc)
		return outbox_error_set(err, rc, "envelope", "cannot encode the transaction (%s)",
					outbox_error_name(rc));
	rc = stellar_sign_decorated(kp, h, &sigs[*n]);
	if (rc)
		return outbox_error_set(err, rc, "signature", "signing failed (%s)",
					outbox_error_name(rc));
	(*n)++;
	if (hash)
		memcpy(hash, h, 32);
	return 0;
}

int stellar_envelope_verify(const struct xdr_envelope *env, const uint8_t pk[32],
			    const uint8_t network_id[32], struct outbox_error *err)
{
	bool bump = env->type == ENVELOPE_TYPE_TX_FEE_BUMP;
	uint32_t n = bump ? env->bump.n_sigs : env->n_sigs;
	const struct xdr_sig *sigs = bump ? env->bump.sigs : env->sigs;
	uint8_t h[32], hint[4];
	int rc = xdr_envelope_hash(env, network_id, h);

	if (rc)
		return outbox_error_set(err, rc, "envelope", "cannot encode the transaction (%s)",
					outbox_error_name(rc));
	stellar_hint(pk, hint);
	for (uint32_t i = 0; i < n; i++)
		if (!memcmp(sigs[i].hint, hint, 4) && stellar_verify(pk, h, sigs[i].sig) == 0)
			return 0;
	return outbox_error_set(err, OUTBOX_EINVAL, "signatures",
				"no valid signature by the key with hint %02x%02x%02x%02x", hint[0],
				hint[1], hint[2], hint[3]);
}
