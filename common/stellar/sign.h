/*
 * sign.h - ed25519 signing of Stellar transactions with libsodium
 * (common/stellar/README.md, Signatures and hashes).
 *
 * A struct stellar_keypair keeps its secret key (libsodium's 64-byte
 * seed||pk form) in sodium_malloc'd memory (guard pages, canary), locked
 * with sodium_mlock so it never reaches swap, and sodium_mprotect_noaccess'd
 * while idle: a stray read of it faults. stellar_sign() opens it read-only
 * for the one signature and closes it again, so a keypair must be used by
 * one thread at a time. stellar_keypair_release() wipes and frees it.
 * Seeds are never logged and never appear in error messages.
 *
 * Every function that can fail returns 0 or a negative code and fills err.
 * sodium_init() is called on first use.
 */
#ifndef OUTBOX_STELLAR_SIGN_H
#define OUTBOX_STELLAR_SIGN_H

#include "common/error.h"
#include "common/stellar/xdr.h"

#include <stdbool.h>
#include <stdint.h>

struct stellar_keypair {
	uint8_t pk[32];    /* public key (the G... account) */
	unsigned char *sk; /* sodium_malloc'd, noaccess while idle; NULL when released */
	bool scratch;      /* a signing buffer (below): readable, wiped while idle */
};

/* Key pair from a raw 32-byte seed; the caller wipes its copy of the seed. */
int stellar_keypair_from_seed(struct stellar_keypair *kp, const uint8_t seed[32],
			      struct outbox_error *err);
/* Key pair from an S... strkey; err names field, never the value. */
int stellar_keypair_from_secret(struct stellar_keypair *kp, const char *secret, const char *field,
				struct outbox_error *err);
/* Wipe and free the secret; kp may be released twice. */
void stellar_keypair_release(struct stellar_keypair *kp);

/*
 * A signing buffer for a process that signs for many keys, one signature
 * at a time: one sodium_malloc'd, mlocked region (guard pages, canary,
 * never swapped) allocated once, holding a key only between
 * stellar_keypair_set() and stellar_keypair_wipe() and zeros otherwise. It
 * stays readable, so a signature costs no system call: a fresh keypair per
 * signature costs an mmap, an munmap and four mprotects, each a TLB
 * shootdown on every core the process ran on (about a third of a worker's
 * CPU in bench_dispatch). Release it with stellar_keypair_release().
 */
int stellar_keypair_scratch(struct stellar_keypair *kp, struct outbox_error *err);
/*
 * Load a key into the buffer: pk must be the seed's own public key (derived
 * from it, e.g. by common/keys.c): ed25519 signing uses it as given.
 */
void stellar_keypair_set(struct stellar_keypair *kp, const uint8_t seed[32], const uint8_t pk[32]);
/* Zero the buffer's key (the allocation stays for the next signature). */
void stellar_keypair_wipe(struct stellar_keypair *kp);
/* The G... strkey of the key pair into out[STRKEY_BUF] (see strkey.h). */
void stellar_keypair_address(const struct stellar_keypair *kp, char *out);

/* networkId = SHA-256(passphrase bytes, no terminator). */
void stellar_network_id(const char *passphrase, uint8_t id[32]);

/* Signature hint: the last 4 bytes of a public key. */
void stellar_hint(const uint8_t pk[32], uint8_t hint[4]);

/* Pure ed25519 over a 32-byte transaction hash. */
int stellar_sign(const struct stellar_keypair *kp, const uint8_t hash[32], uint8_t sig[64]);
/* A DecoratedSignature (hint + signature) over hash. */
int stellar_sign_decorated(const struct stellar_keypair *kp, const uint8_t hash[32],
			   struct xdr_sig *out);
/* 0 when sig is pk's signature of hash, else OUTBOX_EINVAL. */
int stellar_verify(const uint8_t pk[32], const uint8_t hash[32], const uint8_t sig[64]);

/*
 * Sign an envelope in place: computes its hash (outer hash for a fee bump)
 * under network_id and appends a DecoratedSignature to env->sigs (v1) or
 * env->bump.sigs (fee bump). hash (may be NULL) receives the hash.
 * OUTBOX_ETOOBIG when XDR_MAX_SIGS signatures are already present.
 */
int stellar_sign_envelope(struct xdr_envelope *env, const struct stellar_keypair *kp,
			  const uint8_t network_id[32], uint8_t hash[32], struct outbox_error *err);

/*
 * Check that some signature of the envelope (outer ones for a fee bump) with
 * pk's hint verifies under network_id: 0 or OUTBOX_EINVAL.
 */
int stellar_envelope_verify(const struct xdr_envelope *env, const uint8_t pk[32],
			    const uint8_t network_id[32], struct outbox_error *err);

#endif
