/*
 * xdr_check.c - network rules on a decoded Transaction that are not XDR
 * rules: the Soroban shape stellar-core demands (common/stellar/README.md,
 * Soroban transactions), and no Soroban data on a classic transaction.
 */
#include "common/stellar/xdr.h"

int xdr_tx_check_soroban(const struct xdr_tx *tx, struct outbox_error *err)
{
	bool soroban = false;

	for (uint32_t i = 0; i < tx->n_ops; i++)
		if (tx->ops[i].type == XDR_OP_INVOKE_HOST_FUNCTION)
			soroban = true;
	if (!soroban) {
		if (tx->has_soroban)
			return outbox_error_set(
				err, OUTBOX_EINVAL, "tx.ext",
				"a classic transaction must not carry Soroban data");
		return 0;
	}
	if (tx->n_ops != 1)
		return outbox_error_set(err, OUTBOX_EINVAL, "tx.operations",
					"a Soroban transaction has exactly 1 operation, not %u",
					tx->n_ops);
	if (tx->memo.type != MEMO_NONE)
		return outbox_error_set(err, OUTBOX_EINVAL, "tx.memo",
					"a Soroban transaction must carry MEMO_NONE, not %s",
					xdr_memo_type_name(tx->memo.type)
						? xdr_memo_type_name(tx->memo.type)
						: "?");
	if (tx->source.type != KEY_TYPE_ED25519)
		return outbox_error_set(err, OUTBOX_EINVAL, "tx.source",
					"a Soroban transaction cannot have a muxed source");
	if (tx->ops[0].has_source && tx->ops[0].source.type != KEY_TYPE_ED25519)
		return outbox_error_set(err, OUTBOX_EINVAL, "tx.operations[0].source",
					"a Soroban operation cannot have a muxed source");
	if (!tx->has_soroban)
		return outbox_error_set(err, OUTBOX_EINVAL, "tx.ext",
					"a Soroban transaction needs SorobanTransactionData");
	return 0;
}
