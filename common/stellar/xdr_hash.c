/*
 * xdr_hash.c - TransactionSignaturePayload and transaction hashes
 * (common/stellar/README.md, Signatures and hashes): SHA-256(networkId ||
 * envelope type || tagged tx).
 * A v1 payload tags the Transaction (no signatures); a fee-bump payload tags
 * the FeeBumpTransaction, which embeds the inner envelope with its signatures.
 */
#include "common/stellar/xdr.h"
#include "common/stellar/xdr_internal.h"

#include "common/sha256.h"

static int hash_writer(struct xdr_writer *w, uint8_t hash[32])
{
	int rc = xdr_writer_status(w);

	if (!rc)
		outbox_sha256(hash, w->buf, w->len);
	xdr_writer_release(w);
	return rc;
}

int xdr_tx_hash(const struct xdr_tx *tx, const uint8_t network_id[32], uint8_t hash[32])
{
	struct xdr_writer w;

	xdr_writer_init(&w, XDR_MAX_ENVELOPE_BYTES + 64);
	xdr_put_fixed(&w, network_id, 32);
	xdr_put_u32(&w, ENVELOPE_TYPE_TX);
	xdr_tx_encode(tx, &w);
	return hash_writer(&w, hash);
}

int xdr_envelope_signature_payload(const struct xdr_envelope *env, const uint8_t network_id[32],
				   struct xdr_writer *w)
{
	xdr_put_fixed(w, network_id, 32);
	xdr_put_u32(w, env->type);
	if (env->type == ENVELOPE_TYPE_TX)
		xdr_tx_encode(&env->tx, w);
	else if (env->type == ENVELOPE_TYPE_TX_FEE_BUMP)
		xdr_put_fee_bump_tx(w, env);
	else if (!w->status)
		w->status = OUTBOX_EINVAL;
	return w->status;
}

int xdr_envelope_hash(const struct xdr_envelope *env, const uint8_t network_id[32],
		      uint8_t hash[32])
{
	struct xdr_writer w;

	xdr_writer_init(&w, XDR_MAX_ENVELOPE_BYTES + 64);
	xdr_envelope_signature_payload(env, network_id, &w);
	return hash_writer(&w, hash);
}

int xdr_envelope_inner_hash(const struct xdr_envelope *env, const uint8_t network_id[32],
			    uint8_t hash[32])
{
	return xdr_tx_hash(&env->tx, network_id, hash);
}
