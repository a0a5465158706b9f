/*
 * xdrenc.c - see xdrenc.h. Layouts are stellar-xdr's (Stellar-ledger.x,
 * Stellar-ledger-entries.x, Stellar-transaction.x, Stellar-contract.x) at
 * protocol 23. Only the arms the simulator produces are written.
 */
#include "tests/stellar-sim/xdrenc.h"
#include "common/stellar/txresult.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define ENC_MAX 65536

char *enc_b64(const struct xdr_writer *w)
{
	if (xdr_writer_status(w))
		return NULL;
	return xdr_b64_encode(w->buf, w->len);
}

static char *finish(struct xdr_writer *w)
{
	char *s = enc_b64(w);

	xdr_writer_release(w);
	return s;
}

char *enc_result_code(int64_t fee_charged, int32_t code)
{
	struct xdr_writer w;

	xdr_writer_init(&w, ENC_MAX);
	xdr_put_i64(&w, fee_charged);
	xdr_put_i32(&w, code);
	xdr_put_u32(&w, 0); /* ext */
	return finish(&w);
}

char *enc_result_inner_failed(int64_t fee_charged, const uint8_t inner_hash[32], int32_t inner_code)
{
	struct xdr_writer w;

	xdr_writer_init(&w, ENC_MAX);
	xdr_put_i64(&w, fee_charged);
	xdr_put_i32(&w, TX_FEE_BUMP_INNER_FAILED);
	xdr_put_fixed(&w, inner_hash, 32);
	xdr_put_i64(&w, 0); /* InnerTransactionResult.feeCharged */
	xdr_put_i32(&w, inner_code);
	xdr_put_u32(&w, 0); /* inner ext */
	xdr_put_u32(&w, 0); /* ext */
	return finish(&w);
}

/* i32 code, then u32 1 and the one OperationResult (opINNER). */
static void put_tx_code_and_op(struct xdr_writer *w, const struct op_outcome *op)
{
	xdr_put_i32(w, op->code == 0 ? TX_SUCCESS : TX_FAILED);
	xdr_put_u32(w, 1);
	xdr_put_i32(w, OP_INNER);
	xdr_put_i32(w, op->op_type);
	xdr_put_i32(w, op->code);
	if (op->op_type == 24 && op->code == IHF_SUCCESS)
		xdr_put_fixed(w, op->success_hash, 32);
}

char *enc_result_applied(int64_t fee_charged, bool fee_bump, const uint8_t inner_hash[32],
			 const struct op_outcome *op)
{
	struct xdr_writer w;

	xdr_writer_init(&w, ENC_MAX);
	xdr_put_i64(&w, fee_charged);
	if (fee_bump) {
		xdr_put_i32(&w,
			    op->code == 0 ? TX_FEE_BUMP_INNER_SUCCESS : TX_FEE_BUMP_INNER_FAILED);
		xdr_put_fixed(&w, inner_hash, 32);
		xdr_put_i64(&w, 0); /* inner feeCharged: the bump pays */
		put_tx_code_and_op(&w, op);
		xdr_put_u32(&w, 0); /* inner ext */
	} else {
		put_tx_code_and_op(&w, op);
	}
	xdr_put_u32(&w, 0); /* ext */
	return finish(&w);
}

char *enc_account_entry(const uint8_t key[32], int64_t balance, int64_t seq)
{
	struct xdr_writer w;
	static const uint8_t thresholds[4] = {1, 0, 0, 0};

	xdr_writer_init(&w, ENC_MAX);
	xdr_put_u32(&w, 0); /* LedgerEntryType ACCOUNT */
	xdr_put_u32(&w, 0); /* PUBLIC_KEY_TYPE_ED25519 */
	xdr_put_fixed(&w, key, 32);
	xdr_put_i64(&w, balance);
	xdr_put_i64(&w, seq);
	xdr_put_u32(&w, 0);         /* numSubEntries */
	xdr_put_u32(&w, 0);         /* inflationDest absent */
	xdr_put_u32(&w, 0);         /* flags */
	xdr_put_var(&w, "", 0, 32); /* homeDomain */
	xdr_put_fixed(&w, thresholds, 4);
	xdr_put_u32(&w, 0); /* signers<> */
	xdr_put_u32(&w, 0); /* ext v0 */
	return finish(&w);
}

void enc_key_account(struct xdr_writer *w, const uint8_t key[32])
{
	xdr_put_u32(w, 0);
	xdr_put_u32(w, 0);
	xdr_put_fixed(w, key, 32);
}

/* LedgerKey CONTRACT_DATA up to its key ScVal: type 6, then the contract. */
static void put_contract_addr(struct xdr_writer *w, const uint8_t contract[32])
{
	xdr_put_u32(w, 6);
	xdr_put_u32(w, SC_ADDRESS_TYPE_CONTRACT);
	xdr_put_fixed(w, contract, 32);
}

void enc_key_contract_instance(struct xdr_writer *w, const uint8_t contract[32])
{
	put_contract_addr(w, contract);
	xdr_put_u32(w, 20); /* SCV_LEDGER_KEY_CONTRACT_INSTANCE */
	xdr_put_u32(w, 1);  /* PERSISTENT */
}

void enc_key_vault_balance(struct xdr_writer *w, const uint8_t contract[32],
			   const uint8_t holder[32], bool holder_is_contract)
{
	struct xdr_scval v = {.type = SCV_ADDRESS};

	v.v.addr.type = holder_is_contract ? SC_ADDRESS_TYPE_CONTRACT : SC_ADDRESS_TYPE_ACCOUNT;
	memcpy(v.v.addr.id, holder, 32);
	put_contract_addr(w, contract);
	xdr_put_scval(w, &v);
	xdr_put_u32(w, 1);
}

void enc_key_vault_reserve(struct xdr_writer *w, const uint8_t contract[32])
{
	static const char sym[] = "reserve";
	struct xdr_scval v = {.type = SCV_SYMBOL};

	v.v.bytes.p = (const uint8_t *)sym;
	v.v.bytes.len = sizeof(sym) - 1;
	put_contract_addr(w, contract);
	xdr_put_scval(w, &v);
	xdr_put_u32(w, 1);
}

void enc_auth_source_account(struct xdr_writer *w, const struct xdr_sc_address *contract,
			     struct xdr_bytes function, const struct xdr_scval *args,
			     uint32_t n_args)
{
	uint32_t i;

	xdr_put_u32(w, 0); /* SOROBAN_CREDENTIALS_SOURCE_ACCOUNT */
	xdr_put_u32(w, 0); /* SOROBAN_AUTHORIZED_FUNCTION_TYPE_CONTRACT_FN */
	xdr_put_sc_address(w, contract);
	xdr_put_var(w, function.p, function.len, XDR_SYMBOL_MAX);
	xdr_put_u32(w, n_args);
	for (i = 0; i < n_args; i++)
		xdr_put_scval(w, &args[i]);
	xdr_put_u32(w, 0); /* subInvocations<> */
}

static void put_ledger_header(struct xdr_writer *w, const struct enc_ledger *l)
{
	static const uint8_t zero[32];
	int i;

	xdr_put_u32(w, SIM_PROTOCOL_VERSION);
	xdr_put_fixed(w, l->prev_hash, 32);
	xdr_put_fixed(w, zero, 32); /* StellarValue.txSetHash */
	xdr_put_u64(w, l->close_time);
	xdr_put_u32(w, 0);          /* upgrades<> */
	xdr_put_u32(w, 0);          /* STELLAR_VALUE_BASIC */
	xdr_put_fixed(w, zero, 32); /* txSetResultHash */
	xdr_put_fixed(w, zero, 32); /* bucketListHash */
	xdr_put_u32(w, l->seq);
	xdr_put_i64(w, 1000000000000000000LL); /* totalCoins */
	xdr_put_i64(w, 0);                     /* feePool */
	xdr_put_u32(w, 0);                     /* inflationSeq */
	xdr_put_u64(w, 0);                     /* idPool */
	xdr_put_u32(w, l->base_fee);
	xdr_put_u32(w, 5000000); /* baseReserve */
	xdr_put_u32(w, l->max_tx_set_size);
	for (i = 0; i < 4; i++)
		xdr_put_fixed(w, zero, 32); /* skipList */
	xdr_put_u32(w, 0);                  /* ext */
}

void enc_ledger_hash(struct enc_ledger *l)
{
	uint8_t buf[512];
	struct xdr_writer w;

	xdr_writer_init_fixed(&w, buf, sizeof(buf));
	put_ledger_header(&w, l);
	crypto_hash_sha256(l->hash, buf, w.len); /* a fixed-size header: always fits */
}

/*
 * LedgerCloseMeta v1 around the header bytes hdr: stellar-rpc always sends
 * one, and the SDK refuses a getLatestLedger answer without it.
 */
static void put_close_meta(struct xdr_writer *w, const struct enc_ledger *l,
			   const struct xdr_writer *hdr)
{
	xdr_put_u32(w, 1); /* LedgerCloseMeta v1 */
	xdr_put_u32(w, 0); /* LedgerCloseMetaExt v0 */
	xdr_put_fixed(w, l->hash, 32);
	xdr_put_raw(w, hdr->buf, hdr->len);
	xdr_put_u32(w, 0); /* LedgerHeaderHistoryEntry.ext */
	xdr_put_u32(w, 1); /* GeneralizedTransactionSet v1 */
	xdr_put_fixed(w, l->prev_hash, 32);
	xdr_put_u32(w, 2); /* phases: classic, then Soroban */
	xdr_put_u32(w, 0); /* classic: v0 components */
	xdr_put_u32(w, 0); /*   none */
	xdr_put_u32(w, 1); /* Soroban: ParallelTxsComponent */
	xdr_put_u32(w, 0); /*   baseFee absent */
	xdr_put_u32(w, 0); /*   executionStages<> */
	xdr_put_u32(w, 0); /* txProcessing<> */
	xdr_put_u32(w, 0); /* upgradesProcessing<> */
	xdr_put_u32(w, 0); /* scpInfo<> */
	xdr_put_u64(w, 0); /* totalByteSizeOfLiveSorobanState */
	xdr_put_u32(w, 0); /* evictedKeys<> */
	xdr_put_u32(w, 0); /* unused<> */
}

int enc_latest_ledger(const struct enc_ledger *l, char **header_b64, char **meta_b64)
{
	struct xdr_writer hdr, meta;

	xdr_writer_init(&hdr, ENC_MAX);
	xdr_writer_init(&meta, ENC_MAX);
	put_ledger_header(&hdr, l);
	put_close_meta(&meta, l, &hdr);
	*header_b64 = enc_b64(&hdr);
	*meta_b64 = enc_b64(&meta);
	xdr_writer_release(&hdr);
	xdr_writer_release(&meta);
	if (*header_b64 && *meta_b64)
		return 0;
	free(*header_b64);
	free(*meta_b64);
	*header_b64 = *meta_b64 = NULL;
	return -ENOMEM;
}

char *enc_tx_meta(bool soroban, bool success)
{
	struct xdr_writer w;

	xdr_writer_init(&w, ENC_MAX);
	xdr_put_u32(&w, 4); /* TransactionMeta v4 */
	xdr_put_u32(&w, 0); /* ext */
	xdr_put_u32(&w, 0); /* txChangesBefore<> */
	/* core writes operation metas only for a tx that succeeded */
	xdr_put_u32(&w, success ? 1 : 0);
	if (success) {
		xdr_put_u32(&w, 0); /* OperationMetaV2.ext */
		xdr_put_u32(&w, 0); /* changes<> */
		xdr_put_u32(&w, 0); /* events<> */
	}
	xdr_put_u32(&w, 0);               /* txChangesAfter<> */
	xdr_put_u32(&w, soroban ? 1 : 0); /* sorobanMeta* */
	if (soroban) {
		xdr_put_u32(&w, 0);               /* SorobanTransactionMetaExt v0 */
		xdr_put_u32(&w, success ? 1 : 0); /* returnValue* */
		if (success)
			xdr_put_u32(&w, SCV_VOID); /* every vault function returns void */
	}
	xdr_put_u32(&w, 0); /* events<> */
	xdr_put_u32(&w, 0); /* diagnosticEvents<> */
	return finish(&w);
}
