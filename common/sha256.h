/*
 * sha256.h - SHA-256 of public bytes: transactions (their hashes and
 * signature payloads), events (their chain links), op references.
 *
 * OpenSSL's implementation, which uses the CPU's SHA instructions where it
 * has them: ~1.4 us a kilobyte on the project machine against ~8.9 for
 * libsodium's portable one, and a worker hashes two or three kilobytes per
 * op. Nothing secret is hashed here (keys stay in libsodium's guarded
 * memory). The digest is SHA-256 whichever code computes it: should
 * OpenSSL fail (it can only fail to allocate), libsodium computes it.
 */
#ifndef OUTBOX_COMMON_SHA256_H
#define OUTBOX_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* out = SHA-256(p[0..n)). */
void outbox_sha256(uint8_t out[32], const void *p, size_t n);

/* out = SHA-256(a[0..an) || b[0..bn)). */
void outbox_sha256_2(uint8_t out[32], const void *a, size_t an, const void *b, size_t bn);

#endif
