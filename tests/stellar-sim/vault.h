/*
 * vault.h - the mission's vault contract, simulated.
 *
 *	deposit(user: Address, amount: i128, op_ref: BytesN<32>)
 *	withdraw(user: Address, amount: i128, op_ref: BytesN<32>)
 *	rebalance(amount: i128, op_ref: BytesN<32>)
 *	pay_referral(referrer: Address, amount: i128, op_ref: BytesN<32>)
 *
 * Model (README.md has the user-facing version): every address has one
 * balance in stroops (a Stellar account's balance, which also pays fees, or a
 * balance-only holder created by a deposit); the vault's own reserve is the
 * balance of the vault contract id. deposit credits the user; withdraw debits
 * the user and traps when the balance is short; rebalance adds a signed
 * amount to the reserve and traps if that would go negative; pay_referral
 * moves amount from the reserve to the referrer and traps if the reserve is
 * short. A non-positive amount (zero for rebalance) traps. Every call needs
 * the invoker's authorization (the SOURCE_ACCOUNT auth entry simulate
 * returns) and a footprint with the entries it touches; without them it
 * traps on chain, as the real host does.
 */
#ifndef OUTBOX_SIM_VAULT_H
#define OUTBOX_SIM_VAULT_H

#include "common/stellar/xdr.h"
#include "tests/stellar-sim/sim.h"

/*
 * Fill tx->kind, ->call, ->footprint_ok, ->auth_ok and ->instructions facts
 * from the decoded transaction's single INVOKE_HOST_FUNCTION operation.
 * No lock needed: it reads only the envelope and the configuration.
 */
void vault_parse(const struct sim_config *cfg, const struct xdr_tx *xtx, struct sim_tx *tx);

/* Resources a call declares in simulation, and the fee those cost. */
uint32_t vault_instructions(const struct sim_vault_call *c);
int64_t vault_min_resource_fee(const struct sim_vault_call *c);

/* SorobanTransactionData (base64) simulate returns for the call. */
char *vault_transaction_data(const struct sim_config *cfg, const struct sim_vault_call *c);

/*
 * Under the chain lock. vault_check: what the call would do now, without
 * doing it: 0 or a contract error number (1 = insufficient balance,
 * 2 = bad amount, 3 = bad arguments). vault_apply: do it (0 success, or the
 * INVOKE_HOST_FUNCTION result code) and count a success by op_ref.
 */
int vault_check(const struct sim_vault_call *c);
int vault_apply(const struct sim_vault_call *c);

#endif
