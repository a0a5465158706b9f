/*
 * envelope.h - from a base64 TransactionEnvelope to a struct sim_tx, using
 * common/stellar's decoder and hash: decoding, both hashes, ed25519
 * signature checks against the network id, the stateless validity rules
 * (operation count, Soroban rules, signature coverage) and the vault call's
 * arguments. Runs without the chain lock, so signature checks of concurrent
 * submissions proceed in parallel.
 */
#ifndef OUTBOX_SIM_ENVELOPE_H
#define OUTBOX_SIM_ENVELOPE_H

#include "common/error.h"
#include "common/stellar/xdr.h"
#include "tests/stellar-sim/sim.h"

/*
 * Decode and check b64. Returns a new sim_tx (caller frees with
 * sim_tx_free), or NULL with err set when the XDR does not decode (the RPC's
 * -32602 "invalid_xdr"). Validity problems do not fail: they are recorded in
 * static_code / sig_code / outer_sig_code for admission to report.
 */
struct sim_tx *envelope_decode(const struct sim_config *cfg, const char *b64, size_t len,
			       struct outbox_error *err);

/*
 * Like envelope_decode, for simulateTransaction: signatures are not checked,
 * and tx->auth_b64 receives the SOURCE_ACCOUNT auth entry the call needs.
 */
struct sim_tx *envelope_decode_unsigned(const struct sim_config *cfg, const char *b64, size_t len,
					struct outbox_error *err);

#endif
