/*
 * keys.h - the signer keys file (OUTBOX_SIGNER_KEYS_FILE).
 *
 * Format: one S... secret seed strkey per line; blank lines and lines whose
 * first non-blank character is '#' are ignored; spaces around a seed are
 * trimmed. Nothing else is allowed on a line.
 *
 * The loader refuses, with one line naming the path and never a seed:
 *	- a file that is not a regular file, or is larger than KEYS_FILE_MAX;
 *	- a file readable or writable by group or others ("mode 0644 ...");
 *	- a malformed line ("line 3: not a secret seed (checksum)");
 *	- the same seed twice ("line 7: duplicate of line 2");
 *	- a file without any seed.
 *
 * Seeds live only in sodium_malloc'd memory (guard pages, wiped on free,
 * read-only once loaded); the file's bytes are read into sodium memory too
 * and wiped. Public keys are not secret and live in ordinary memory.
 *
 * The supervisor only checks the file (keys_file_check) at start and with
 * --check-config; workers load the keys they need.
 */
#ifndef OUTBOX_COMMON_KEYS_H
#define OUTBOX_COMMON_KEYS_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>

#define KEYS_FILE_MAX (1u << 20) /* 1 MiB: ~18,000 seeds */
#define KEYS_MAX      16384

struct signer_keys {
	size_t n;
	uint8_t (*seed)[32]; /* n seeds, sodium_malloc'd, read-only after load */
	uint8_t (*pub)[32];  /* n ed25519 public keys, in file order */
};

#define SIGNER_KEYS_INIT                                                                           \
	{                                                                                          \
		0, NULL, NULL                                                                      \
	}

/*
 * Load every seed of path into k (which must be empty). Returns 0, or a
 * negative code with err naming OUTBOX_SIGNER_KEYS_FILE, the path and the
 * problem. On failure k stays empty.
 */
int signer_keys_load(struct signer_keys *k, const char *path, struct outbox_error *err);

/* Validate path as signer_keys_load does, keep nothing; *count = seeds. */
int keys_file_check(const char *path, size_t *count, struct outbox_error *err);

/* Index of the key whose public key is pub, or -1. */
long signer_keys_find(const struct signer_keys *k, const uint8_t pub[32]);

/* Wipe and free everything; k is empty afterwards. */
void signer_keys_release(struct signer_keys *k);

#endif
