/*
 * strkey.h - Stellar StrKey (SEP-23) for the four kinds outboxd handles:
 * account (G...), secret seed (S...), contract (C...) and muxed account (M...).
 *
 *	strkey = base32(version byte || payload || crc16_xmodem_le(version || payload))
 *
 * Base32 is RFC 4648, upper case, no '=' padding. Decoding is strict and every
 * malformed class has its own code (enum strkey_status) and message:
 * a wrong length, a character outside the alphabet (lower case included), a
 * wrong version byte (the string is another kind of key), a bad checksum, and
 * non-zero spare trailing bits (a non-canonical encoding). Decoders fill err
 * with "<field>: <what>" when err is non-NULL; the field is the caller's name
 * for the input ("source", "contract", ...). Messages never echo seeds.
 *
 * Seeds: strkey_decode() wipes its own intermediate copies; the caller decides
 * where the 32 seed bytes land (sign.h keeps them in guarded memory).
 */
#ifndef OUTBOX_STELLAR_STRKEY_H
#define OUTBOX_STELLAR_STRKEY_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>

enum strkey_kind {
	STRKEY_ACCOUNT = 6 << 3,  /* 'G', 32-byte ed25519 public key */
	STRKEY_SEED = 18 << 3,    /* 'S', 32-byte ed25519 seed */
	STRKEY_CONTRACT = 2 << 3, /* 'C', 32-byte contract id */
	STRKEY_MUXED = 12 << 3,   /* 'M', 32-byte key then 8-byte big-endian id */
};

/* Lengths in characters. STRKEY_BUF holds the longest one plus its NUL. */
#define STRKEY_ED25519_LEN 56
#define STRKEY_MUXED_LEN   69
#define STRKEY_BUF         70

/* Payload sizes in bytes. */
#define STRKEY_KEY_BYTES   32
#define STRKEY_MUXED_BYTES 40

/* Decode failures; each class is distinct (all < 0, outside errno's range). */
enum strkey_status {
	STRKEY_ELENGTH = -10101,   /* not 56 (G/S/C) or 69 (M) characters */
	STRKEY_EALPHABET = -10102, /* a character outside A-Z2-7 ('=' and lower case included) */
	STRKEY_EVERSION = -10103,  /* version byte of another kind (or unknown) */
	STRKEY_ECHECKSUM = -10104, /* CRC16-XModem mismatch */
	STRKEY_EPADDING = -10105,  /* spare trailing bits not zero: non-canonical */
};

/* Short name of a status ("length", "alphabet", ...); "?" for others. */
const char *strkey_status_name(int status);

/*
 * Encode payload (32 bytes, or 40 for STRKEY_MUXED: key then big-endian id)
 * as a NUL-terminated strkey into out[STRKEY_BUF]. Returns the length in
 * characters, or OUTBOX_EINVAL for a payload of the wrong size.
 */
int strkey_encode(enum strkey_kind kind, const uint8_t *payload, size_t len, char out[STRKEY_BUF]);

/*
 * Decode s[0..slen) (no NUL needed) of the expected kind into payload
 * (capacity cap: 32, or 40 for muxed). Returns the payload length, or a
 * negative enum strkey_status / OUTBOX_EINVAL (cap too small). Strict: the
 * input re-encodes to exactly itself.
 */
int strkey_decode(enum strkey_kind kind, const char *s, size_t slen, uint8_t *payload, size_t cap,
		  const char *field, struct outbox_error *err);

/* Typed helpers over strkey_decode for NUL-terminated input; 0 or < 0. */
int strkey_decode_account(const char *s, uint8_t key[32], const char *field,
			  struct outbox_error *err);
int strkey_decode_contract(const char *s, uint8_t id[32], const char *field,
			   struct outbox_error *err);
int strkey_decode_seed(const char *s, uint8_t seed[32], const char *field,
		       struct outbox_error *err);
int strkey_decode_muxed(const char *s, uint8_t key[32], uint64_t *id, const char *field,
			struct outbox_error *err);

/* Typed encoders; they cannot fail. */
void strkey_encode_account(const uint8_t key[32], char out[STRKEY_BUF]);
void strkey_encode_contract(const uint8_t id[32], char out[STRKEY_BUF]);
void strkey_encode_muxed(const uint8_t key[32], uint64_t id, char out[STRKEY_BUF]);

/* CRC16-XModem (poly 0x1021, init 0, no reflection); exposed for tests. */
uint16_t strkey_crc16(const uint8_t *p, size_t n);

#endif
