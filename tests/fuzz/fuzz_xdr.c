/*
 * fuzz_xdr.c - libFuzzer target for the XDR readers: TransactionEnvelope,
 * SorobanTransactionData, SorobanAuthorizationEntry and TransactionResult.
 * Besides "no crash, no leak, bounded memory", it checks a property: an
 * envelope the strict decoder accepts re-encodes to exactly the input bytes
 * (the decoder is canonical), decodes again, and hashes.
 */
#include "common/stellar/txresult.h"
#include "common/stellar/xdr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct xdr_envelope env, again;

static void check_round_trip(const uint8_t *data, size_t size)
{
	static const uint8_t nid[32];
	struct xdr_writer w;
	uint8_t h[32];

	xdr_writer_init(&w, XDR_MAX_ENVELOPE_BYTES);
	if (xdr_envelope_encode(&env, &w) != 0 || w.len != size || memcmp(w.buf, data, size) != 0)
		abort(); /* accepted input must re-encode byte for byte */
	if (xdr_envelope_decode(&again, w.buf, w.len, NULL) != 0)
		abort();
	xdr_writer_release(&w);
	if (xdr_envelope_hash(&env, nid, h) != 0 || xdr_envelope_inner_hash(&env, nid, h) != 0)
		abort();
	(void)xdr_tx_check_soroban(&env.tx, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outbox_error err = OUTBOX_ERROR_INIT;
	struct xdr_soroban_data sd;
	struct tx_result res;

	if (xdr_envelope_decode(&env, data, size, &err) == 0)
		check_round_trip(data, size);
	else if (err.msg[0] == '\0')
		abort(); /* every refusal says why */
	(void)xdr_soroban_data_parse(data, size, &sd, NULL);
	(void)xdr_auth_entry_check(data, size, NULL);
	(void)tx_result_decode(&res, data, size, NULL);
	return 0;
}
