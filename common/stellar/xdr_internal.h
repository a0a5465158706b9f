/*
 * xdr_internal.h - helpers shared by the xdr_*.c files; not for other modules.
 */
#ifndef OUTBOX_STELLAR_XDR_INTERNAL_H
#define OUTBOX_STELLAR_XDR_INTERNAL_H

#include "common/stellar/xdr.h"

/* SCAddress restricted to ACCOUNT / CONTRACT (what struct xdr_sc_address holds). */
int xdr_get_sc_address_basic(struct xdr_reader *r, const char *field, struct xdr_sc_address *a);

/* MuxedAccount (ED25519 or MUXED_ED25519). */
int xdr_get_muxed(struct xdr_reader *r, const char *field, struct xdr_muxed *m);

/* Validating skips (every arm the supported protocol versions define; depth-bounded). */
int xdr_skip_scval(struct xdr_reader *r, const char *field);
int xdr_skip_auth_entry(struct xdr_reader *r, const char *field);
/* SorobanTransactionData; fills out (raw = the bytes consumed). */
int xdr_read_soroban_data(struct xdr_reader *r, const char *field, struct xdr_soroban_data *out);

/* SCSymbol characters: [A-Za-z0-9_]. */
bool xdr_symbol_ok(const struct xdr_bytes *b);

/* FeeBumpTransaction (the signed part of a fee-bump envelope) into w. */
int xdr_put_fee_bump_tx(struct xdr_writer *w, const struct xdr_envelope *env);

#endif
