/*
 * strkey.c - see strkey.h. Checks run in a fixed order so each malformed
 * class maps to one code: length, alphabet, spare bits, version, checksum.
 * Intermediate buffers may hold a seed, so they are wiped on every path.
 */
#include "common/stellar/strkey.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

static const char b32_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/* Raw (version + payload + crc) bytes of the longest strkey: 1 + 40 + 2. */
#define STRKEY_RAW_MAX 43

uint16_t strkey_crc16(const uint8_t *p, size_t n)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)p[i] << 8;
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

const char *strkey_status_name(int status)
{
	switch (status) {
	case STRKEY_ELENGTH:
		return "length";
	case STRKEY_EALPHABET:
		return "alphabet";
	case STRKEY_EVERSION:
		return "version";
	case STRKEY_ECHECKSUM:
		return "checksum";
	case STRKEY_EPADDING:
		return "padding";
	default:
		return "?";
	}
}

static size_t payload_len(enum strkey_kind kind)
{
	return kind == STRKEY_MUXED ? STRKEY_MUXED_BYTES : STRKEY_KEY_BYTES;
}

static size_t encoded_len(size_t raw)
{
	return (raw * 8 + 4) / 5;
}

static char kind_letter(enum strkey_kind kind)
{
	switch (kind) {
	case STRKEY_ACCOUNT:
		return 'G';
	case STRKEY_SEED:
		return 'S';
	case STRKEY_CONTRACT:
		return 'C';
	case STRKEY_MUXED:
		return 'M';
	}
	return '?';
}

static void b32_encode(const uint8_t *raw, size_t n, char *out)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | raw[i];
		bits += 8;
		while (bits >= 5) {
			out[o++] = b32_alphabet[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	if (bits > 0)
		out[o++] = b32_alphabet[(acc << (5 - bits)) & 31];
	out[o] = '\0';
}

int strkey_encode(enum strkey_kind kind, const uint8_t *payload, size_t len, char out[STRKEY_BUF])
{
	uint8_t raw[STRKEY_RAW_MAX];
	uint16_t crc;

	if (len != payload_len(kind) || kind_letter(kind) == '?')
		return OUTBOX_EINVAL;
	raw[0] = (uint8_t)kind;
	memcpy(raw + 1, payload, len);
	crc = strkey_crc16(raw, len + 1);
	raw[len + 1] = (uint8_t)(crc & 0xff);
	raw[len + 2] = (uint8_t)(crc >> 8);
	b32_encode(raw, len + 3, out);
	sodium_memzero(raw, sizeof(raw));
	return (int)encoded_len(len + 3);
}

static int b32_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= '2' && c <= '7')
		return c - '2' + 26;
	return -1;
}

/* Decodes exactly; returns 0 or STRKEY_EALPHABET / STRKEY_EPADDING (*bad = index). */
static int b32_decode(const char *s, size_t n, uint8_t *raw, size_t *bad)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int v = b32_value(s[i]);
		if (v < 0) {
			*bad = i;
			return STRKEY_EALPHABET;
		}
		acc = ((acc << 5) | (uint32_t)v) & 0xffff;
		bits += 5;
		if (bits >= 8) {
			raw[o++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
		return STRKEY_EPADDING;
	return 0;
}

static int fail(struct outbox_error *err, int code, const char *field, enum strkey_kind kind,
		const char *what)
{
	return outbox_error_set(err, code, field && *field ? field : "strkey",
				"not a valid %c... strkey: %s", kind_letter(kind), what);
}

int strkey_decode(enum strkey_kind kind, const char *s, size_t slen, uint8_t *payload, size_t cap,
		  const char *field, struct outbox_error *err)
{
	uint8_t raw[STRKEY_RAW_MAX];
	size_t plen = payload_len(kind), rawlen = plen + 3, bad = 0;
	char what[128];
	uint16_t crc, got;
	int rc;

	if (kind_letter(kind) == '?' || cap < plen)
		return outbox_error_set(err, OUTBOX_EINVAL, field,
					"strkey decode: bad kind or buffer");
	if (!s || slen != encoded_len(rawlen)) {
		snprintf(what, sizeof(what), "length %zu, expected %zu", s ? slen : 0,
			 encoded_len(rawlen));
		return fail(err, STRKEY_ELENGTH, field, kind, what);
	}
	rc = b32_decode(s, slen, raw, &bad);
	if (rc == STRKEY_EALPHABET) {
		unsigned char c = (unsigned char)s[bad];
		/* Never echo a character of a seed. */
		if (kind != STRKEY_SEED && c > 0x20 && c < 0x7f)
			snprintf(what, sizeof(what), "character %zu ('%c') is not in A-Z2-7", bad,
				 c);
		else
			snprintf(what, sizeof(what), "character %zu is not in A-Z2-7", bad);
		rc = fail(err, rc, field, kind, what);
	} else if (rc == STRKEY_EPADDING) {
		rc = fail(err, rc, field, kind, "non-zero spare trailing bits (non-canonical)");
	} else if (raw[0] != (uint8_t)kind) {
		snprintf(what, sizeof(what), "version byte 0x%02x, expected 0x%02x", raw[0],
			 (unsigned)kind);
		rc = fail(err, STRKEY_EVERSION, field, kind, what);
	} else {
		crc = strkey_crc16(raw, plen + 1);
		got = (uint16_t)(raw[plen + 1] | (raw[plen + 2] << 8));
		if (crc != got) {
			snprintf(what, sizeof(what), "checksum 0x%04x, expected 0x%04x", got, crc);
			rc = fail(err, STRKEY_ECHECKSUM, field, kind, what);
		} else {
			memcpy(payload, raw + 1, plen);
			rc = (int)plen;
		}
	}
	sodium_memzero(raw, sizeof(raw));
	return rc;
}

static int decode_z(enum strkey_kind kind, const char *s, uint8_t *out, size_t cap,
		    const char *field, struct outbox_error *err)
{
	int rc = strkey_decode(kind, s, s ? strlen(s) : 0, out, cap, field, err);
	return rc < 0 ? rc : 0;
}

int strkey_decode_account(const char *s, uint8_t key[32], const char *field,
			  struct outbox_error *err)
{
	return decode_z(STRKEY_ACCOUNT, s, key, 32, field, err);
}

int strkey_decode_contract(const char *s, uint8_t id[32], const char *field,
			   struct outbox_error *err)
{
	return decode_z(STRKEY_CONTRACT, s, id, 32, field, err);
}

int strkey_decode_seed(const char *s, uint8_t seed[32], const char *field, struct outbox_error *err)
{
	return decode_z(STRKEY_SEED, s, seed, 32, field, err);
}

int strkey_decode_muxed(const char *s, uint8_t key[32], uint64_t *id, const char *field,
			struct outbox_error *err)
{
	uint8_t raw[STRKEY_MUXED_BYTES];
	int rc = decode_z(STRKEY_MUXED, s, raw, sizeof(raw), field, err);

	if (rc < 0)
		return rc;
	memcpy(key, raw, 32);
	*id = 0;
	for (int i = 0; i < 8; i++)
		*id = (*id << 8) | raw[32 + i];
	return 0;
}

void strkey_encode_account(const uint8_t key[32], char out[STRKEY_BUF])
{
	strkey_encode(STRKEY_ACCOUNT, key, 32, out);
}

void strkey_encode_contract(const uint8_t id[32], char out[STRKEY_BUF])
{
	strkey_encode(STRKEY_CONTRACT, id, 32, out);
}

void strkey_encode_muxed(const uint8_t key[32], uint64_t id, char out[STRKEY_BUF])
{
	uint8_t raw[STRKEY_MUXED_BYTES];

	memcpy(raw, key, 32);
	for (int i = 0; i < 8; i++)
		raw[32 + i] = (uint8_t)(id >> (56 - 8 * i));
	strkey_encode(STRKEY_MUXED, raw, sizeof(raw), out);
}
