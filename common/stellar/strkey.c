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

/*
 * CRC16-XModem (polynomial 0x1021, initial 0) a byte at a time: entry i is
 * the CRC of byte i alone. A worker decodes several StrKeys per op; the bit
 * by bit loop was most of their cost. check_strkey holds the table to the
 * bitwise definition.
 */
static const uint16_t crc16_table[256] = {
	0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a,
	0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294,
	0x72f7, 0x62d6, 0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462,
	0x3443, 0x0420, 0x1401, 0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509,
	0xe5ee, 0xf5cf, 0xc5ac, 0xd58d, 0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695,
	0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d, 0xc7bc, 0x48c4, 0x58e5,
	0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823, 0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948,
	0x9969, 0xa90a, 0xb92b, 0x5af5, 0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12,
	0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a, 0x6ca6, 0x7c87, 0x4ce4,
	0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd, 0xad2a, 0xbd0b,
	0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70, 0xff9f,
	0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb,
	0xd10c, 0xc12d, 0xf14e, 0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046,
	0x6067, 0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1, 0x1290,
	0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e,
	0xe54f, 0xd52c, 0xc50d, 0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405,
	0xa7db, 0xb7fa, 0x8799, 0x97b8, 0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691,
	0x16b0, 0x6657, 0x7676, 0x4615, 0x5634, 0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9,
	0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882, 0x28a3, 0xcb7d,
	0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a, 0x4a75, 0x5a54, 0x6a37, 0x7a16,
	0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e, 0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8,
	0x8dc9, 0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1, 0xef1f, 0xff3e,
	0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74, 0x2e93,
	0x3eb2, 0x0ed1, 0x1ef0,
};

uint16_t strkey_crc16(const uint8_t *p, size_t n)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < n; i++)
		crc = (uint16_t)((crc << 8) ^ crc16_table[(crc >> 8) ^ p[i]]);
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
