/*
 * fuzz_strkey.c - libFuzzer target for the text decoders: StrKey (every
 * kind), the i128 decimal parser and strict base64. Properties: anything a
 * decoder accepts re-encodes to exactly the input (strict, canonical), every
 * StrKey refusal has a message, and an accepted i128 formats back to the
 * same text.
 */
#include "common/stellar/strkey.h"
#include "common/stellar/xdr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum strkey_kind kinds[] = {STRKEY_ACCOUNT, STRKEY_SEED, STRKEY_CONTRACT,
						 STRKEY_MUXED};
	char text[128], enc[STRKEY_BUF], dec[XDR_I128_DEC_BUF];
	uint8_t payload[40];
	int64_t hi;
	uint64_t lo;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct outbox_error err = OUTBOX_ERROR_INIT;
		int n = strkey_decode(kinds[i], (const char *)data, size, payload, sizeof(payload),
				      "k", &err);
		if (n < 0) {
			if (err.msg[0] == '\0')
				abort();
			continue;
		}
		if (strkey_encode(kinds[i], payload, (size_t)n, enc) != (int)size ||
		    memcmp(enc, data, size) != 0)
			abort();
	}
	if (size < sizeof(text)) {
		memcpy(text, data, size);
		text[size] = '\0';
		if (xdr_i128_parse(text, &hi, &lo, "amount", NULL) == 0) {
			xdr_i128_format(hi, lo, dec);
			if (strcmp(dec, text) != 0)
				abort();
		}
	}
	{
		uint8_t out[512];
		size_t n = 0;
		if (size <= 680 && xdr_b64_decode((const char *)data, size, out, sizeof(out), &n,
						  "b", NULL) == 0) {
			char *again = xdr_b64_encode(out, n);
			if (!again || strlen(again) != size || memcmp(again, data, size) != 0)
				abort();
			free(again);
		}
	}
	return 0;
}
