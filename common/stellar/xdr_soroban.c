/*
 * xdr_soroban.c - validation of the Soroban fragments outboxd passes through
 * without representing them: SorobanAuthorizationEntry, SorobanTransactionData
 * (with its footprint of LedgerKeys), and every ScVal arm they may contain.
 *
 * "Validate" means a full structural walk: every discriminant known (unknown
 * ones are named in the error), every length and count bounded by what is
 * left of the input, padding zero, nesting at most XDR_MAX_DEPTH. Since every
 * element consumes at least 4 bytes, the walk is linear in the input size.
 *
 * SorobanCredentials ADDRESS_WITH_DELEGATES (3, Protocol 27, CAP-71) is walked
 * as { SorobanAddressCredentials; SorobanDelegateSignature delegates<> } with
 * SorobanDelegateSignature = { SCAddress; SCVal signature; nested delegates<> },
 * the layout the public SDKs implement.
 */
#include "common/stellar/xdr.h"
#include "common/stellar/xdr_internal.h"

#include <string.h>

#define ANY_LEN   XDR_MAX_ENVELOPE_BYTES
#define ANY_COUNT UINT32_MAX

static int enter(struct xdr_reader *r, const char *field)
{
	if (r->status)
		return r->status;
	if (++r->depth > XDR_MAX_DEPTH)
		return xdr_fail(r, OUTBOX_EPROTO, field, "nesting deeper than %d", XDR_MAX_DEPTH);
	return 0;
}

static int leave(struct xdr_reader *r)
{
	r->depth--;
	return r->status;
}

static int unknown(struct xdr_reader *r, const char *field, const char *type, uint32_t v)
{
	return xdr_fail(r, OUTBOX_EPROTO, field, "unknown %s %u", type, v);
}

static int skip_account_id(struct xdr_reader *r, const char *field)
{
	uint32_t t;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	if (t != 0)
		return unknown(r, field, "PublicKeyType", t);
	return xdr_skip(r, field, 32);
}

/* SCAddress with all five arms (P23+). */
static int skip_sc_address(struct xdr_reader *r, const char *field)
{
	uint32_t t, v;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	switch (t) {
	case 0: /* ACCOUNT */
		return skip_account_id(r, field);
	case 1: /* CONTRACT */
	case 4: /* LIQUIDITY_POOL: PoolID */
		return xdr_skip(r, field, 32);
	case 2: /* MUXED_ACCOUNT: u64 id, ed25519 */
		return xdr_skip(r, field, 40);
	case 3: /* CLAIMABLE_BALANCE: ClaimableBalanceID union, V0 = 0 + Hash */
		if (xdr_get_u32(r, field, &v))
			return r->status;
		if (v != 0)
			return unknown(r, field, "ClaimableBalanceIDType", v);
		return xdr_skip(r, field, 32);
	default:
		return unknown(r, field, "SCAddressType", t);
	}
}

static int skip_var(struct xdr_reader *r, const char *field, uint32_t max)
{
	struct xdr_bytes b;
	return xdr_get_var(r, field, max, &b);
}

static int skip_contract_executable(struct xdr_reader *r, const char *field)
{
	uint32_t t;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	if (t == 0) /* WASM: Hash */
		return xdr_skip(r, field, 32);
	if (t != 1) /* STELLAR_ASSET: void */
		return unknown(r, field, "ContractExecutableType", t);
	return 0;
}

static int skip_scval_body(struct xdr_reader *r, const char *field, uint32_t t);

/* SCMap* / SCVec* bodies: optional flag, count, elements (pairs for maps). */
static int skip_opt_seq(struct xdr_reader *r, const char *field, int per)
{
	bool present;
	uint32_t n;

	if (xdr_get_bool(r, field, &present) || !present)
		return r->status;
	if (xdr_get_count(r, field, ANY_COUNT, &n))
		return r->status;
	for (uint64_t i = 0; i < (uint64_t)n * (uint64_t)per; i++)
		if (xdr_skip_scval(r, field))
			return r->status;
	return 0;
}

static int skip_scval_body(struct xdr_reader *r, const char *field, uint32_t t)
{
	uint32_t a, b;
	struct xdr_bytes sym;

	switch (t) {
	case SCV_BOOL: {
		bool x;
		return xdr_get_bool(r, field, &x);
	}
	case SCV_VOID:
	case 20: /* LEDGER_KEY_CONTRACT_INSTANCE */
		return 0;
	case 2: /* ERROR: SCErrorType, then contract code or SCErrorCode */
		if (xdr_get_u32(r, field, &a) || xdr_get_u32(r, field, &b))
			return r->status;
		if (a > 9)
			return unknown(r, field, "SCErrorType", a);
		if (a != 0 && b > 9)
			return unknown(r, field, "SCErrorCode", b);
		return 0;
	case SCV_U32:
	case SCV_I32:
		return xdr_skip(r, field, 4);
	case SCV_U64:
	case SCV_I64:
	case 7:  /* TIMEPOINT */
	case 8:  /* DURATION */
	case 21: /* LEDGER_KEY_NONCE: i64 */
		return xdr_skip(r, field, 8);
	case SCV_U128:
	case SCV_I128:
		return xdr_skip(r, field, 16);
	case 11: /* U256 */
	case 12: /* I256 */
		return xdr_skip(r, field, 32);
	case SCV_BYTES:
	case SCV_STRING:
		return skip_var(r, field, ANY_LEN);
	case SCV_SYMBOL:
		if (xdr_get_var(r, field, XDR_SYMBOL_MAX, &sym))
			return r->status;
		if (!xdr_symbol_ok(&sym))
			return xdr_fail(r, OUTBOX_EPROTO, field,
					"symbol has a character outside [A-Za-z0-9_]");
		return 0;
	case 16: /* VEC */
		return skip_opt_seq(r, field, 1);
	case 17: /* MAP */
		return skip_opt_seq(r, field, 2);
	case SCV_ADDRESS:
		return skip_sc_address(r, field);
	case 19: /* CONTRACT_INSTANCE: executable, SCMap* storage */
		if (skip_contract_executable(r, field))
			return r->status;
		return skip_opt_seq(r, field, 2);
	default:
		return unknown(r, field, "SCValType", t);
	}
}

int xdr_skip_scval(struct xdr_reader *r, const char *field)
{
	uint32_t t;

	if (enter(r, field) || xdr_get_u32(r, field, &t)) {
		leave(r);
		return r->status;
	}
	skip_scval_body(r, field, t);
	return leave(r);
}

static int skip_scval_array(struct xdr_reader *r, const char *field)
{
	uint32_t n;

	if (xdr_get_count(r, field, ANY_COUNT, &n))
		return r->status;
	for (uint32_t i = 0; i < n; i++)
		if (xdr_skip_scval(r, field))
			return r->status;
	return 0;
}

static int skip_asset(struct xdr_reader *r, const char *field, bool trustline)
{
	uint32_t t;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	switch (t) {
	case 0:
		return 0;
	case 1:
		if (xdr_skip(r, field, 4))
			return r->status;
		return skip_account_id(r, field);
	case 2:
		if (xdr_skip(r, field, 12))
			return r->status;
		return skip_account_id(r, field);
	case 3:
		if (trustline) /* POOL_SHARE: PoolID */
			return xdr_skip(r, field, 32);
		/* fall through */
	default:
		return unknown(r, field, "AssetType", t);
	}
}

/* SorobanAuthorizedFunction. */
static int skip_authorized_function(struct xdr_reader *r, const char *field)
{
	uint32_t t, p;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	switch (t) {
	case 0: /* CONTRACT_FN: InvokeContractArgs */
		if (skip_sc_address(r, field) || skip_scval_body(r, field, SCV_SYMBOL))
			return r->status;
		return skip_scval_array(r, field);
	case 1: /* CREATE_CONTRACT_HOST_FN: CreateContractArgs */
	case 2: /* CREATE_CONTRACT_V2_HOST_FN: CreateContractArgsV2 */
		if (xdr_get_u32(r, field, &p))
			return r->status;
		if (p == 0) { /* FROM_ADDRESS: SCAddress, salt */
			if (skip_sc_address(r, field) || xdr_skip(r, field, 32))
				return r->status;
		} else if (p == 1) { /* FROM_ASSET */
			if (skip_asset(r, field, false))
				return r->status;
		} else {
			return unknown(r, field, "ContractIDPreimageType", p);
		}
		if (skip_contract_executable(r, field))
			return r->status;
		return t == 2 ? skip_scval_array(r, field) : 0;
	default:
		return unknown(r, field, "SorobanAuthorizedFunctionType", t);
	}
}

static int skip_invocation(struct xdr_reader *r, const char *field)
{
	uint32_t n;

	if (enter(r, field))
		return leave(r);
	if (skip_authorized_function(r, field) == 0 && xdr_get_count(r, field, ANY_COUNT, &n) == 0)
		for (uint32_t i = 0; i < n && !r->status; i++)
			skip_invocation(r, field);
	return leave(r);
}

static int skip_address_credentials(struct xdr_reader *r, const char *field)
{
	if (skip_sc_address(r, field) || xdr_skip(r, field, 8 + 4)) /* nonce, expiration */
		return r->status;
	return xdr_skip_scval(r, field);
}

static int skip_delegates(struct xdr_reader *r, const char *field)
{
	uint32_t n;

	if (enter(r, field))
		return leave(r);
	if (xdr_get_count(r, field, ANY_COUNT, &n) == 0)
		for (uint32_t i = 0; i < n && !r->status; i++)
			if (skip_sc_address(r, field) == 0 && xdr_skip_scval(r, field) == 0)
				skip_delegates(r, field);
	return leave(r);
}

int xdr_skip_auth_entry(struct xdr_reader *r, const char *field)
{
	uint32_t t;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	switch (t) {
	case 0: /* SOURCE_ACCOUNT */
		break;
	case 1: /* ADDRESS */
	case 2: /* ADDRESS_V2 */
		if (skip_address_credentials(r, field))
			return r->status;
		break;
	case 3: /* ADDRESS_WITH_DELEGATES */
		if (skip_address_credentials(r, field) || skip_delegates(r, field))
			return r->status;
		break;
	default:
		return unknown(r, field, "SorobanCredentialsType", t);
	}
	return skip_invocation(r, field);
}

static int skip_ledger_key(struct xdr_reader *r, const char *field)
{
	uint32_t t, d;

	if (xdr_get_u32(r, field, &t))
		return r->status;
	switch (t) {
	case 0: /* ACCOUNT */
		return skip_account_id(r, field);
	case 1: /* TRUSTLINE */
		if (skip_account_id(r, field))
			return r->status;
		return skip_asset(r, field, true);
	case 2: /* OFFER: seller, i64 offerID */
		if (skip_account_id(r, field))
			return r->status;
		return xdr_skip(r, field, 8);
	case 3: /* DATA: account, string64 */
		if (skip_account_id(r, field))
			return r->status;
		return skip_var(r, field, 64);
	case 4: /* CLAIMABLE_BALANCE */
		if (xdr_get_u32(r, field, &d))
			return r->status;
		if (d != 0)
			return unknown(r, field, "ClaimableBalanceIDType", d);
		return xdr_skip(r, field, 32);
	case 5: /* LIQUIDITY_POOL */
	case 7: /* CONTRACT_CODE */
	case 9: /* TTL */
		return xdr_skip(r, field, 32);
	case 6: /* CONTRACT_DATA: contract, key, durability */
		if (skip_sc_address(r, field) || xdr_skip_scval(r, field) ||
		    xdr_get_u32(r, field, &d))
			return r->status;
		if (d > 1)
			return unknown(r, field, "ContractDataDurability", d);
		return 0;
	case 8: /* CONFIG_SETTING: ConfigSettingID */
		return xdr_skip(r, field, 4);
	default:
		return unknown(r, field, "LedgerEntryType", t);
	}
}

static int skip_footprint_list(struct xdr_reader *r, const char *field, uint32_t *n)
{
	if (xdr_get_count(r, field, ANY_COUNT, n))
		return r->status;
	for (uint32_t i = 0; i < *n; i++)
		if (skip_ledger_key(r, field))
			return r->status;
	return 0;
}

int xdr_read_soroban_data(struct xdr_reader *r, const char *field, struct xdr_soroban_data *out)
{
	size_t start = r->off;
	uint32_t v, n;

	memset(out, 0, sizeof(*out));
	if (xdr_get_u32(r, field, &v))
		return r->status;
	if (v == 1) { /* SorobanResourcesExtV0: archivedSorobanEntries<> */
		if (xdr_get_count(r, field, ANY_COUNT, &n) || xdr_skip(r, field, (size_t)n * 4))
			return r->status;
	} else if (v != 0) {
		return unknown(r, field, "SorobanTransactionData.ext version", v);
	}
	if (skip_footprint_list(r, field, &out->n_read_only) ||
	    skip_footprint_list(r, field, &out->n_read_write) ||
	    xdr_get_u32(r, field, &out->instructions) ||
	    xdr_get_u32(r, field, &out->disk_read_bytes) ||
	    xdr_get_u32(r, field, &out->write_bytes) || xdr_get_i64(r, field, &out->resource_fee))
		return r->status;
	out->raw.p = r->buf + start;
	out->raw.len = (uint32_t)(r->off - start);
	return 0;
}

int xdr_soroban_data_parse(const uint8_t *buf, size_t len, struct xdr_soroban_data *out,
			   struct outbox_error *err)
{
	struct xdr_reader r;

	if (xdr_reader_init(&r, buf, len, XDR_MAX_ENVELOPE_BYTES, err))
		return r.status;
	if (xdr_read_soroban_data(&r, "transactionData", out))
		return r.status;
	return xdr_reader_finish(&r, "transactionData");
}

int xdr_auth_entry_check(const uint8_t *buf, size_t len, struct outbox_error *err)
{
	struct xdr_reader r;

	if (xdr_reader_init(&r, buf, len, XDR_MAX_ENVELOPE_BYTES, err))
		return r.status;
	if (xdr_skip_auth_entry(&r, "auth"))
		return r.status;
	return xdr_reader_finish(&r, "auth");
}
