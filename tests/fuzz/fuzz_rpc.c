/*
 * fuzz_rpc.c - libFuzzer target for the RPC response parser, all methods.
 *
 * Input: one selector byte (low nibble mod RPC_METHOD_COUNT picks the
 * method; the seeds use '0'..'8'), then the HTTP body. The request is fixed
 * (JSON-RPC id 1, the account of common/stellar/README.md, Test vectors), so
 * the parser sees exactly what a hostile server could send. Every result is
 * released, so leaks and double frees in partial-failure paths show up under
 * ASan.
 */
#include "common/stellar/classify.h"
#include "common/stellar/rpc.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t ACCOUNT[32] = {0x2e, 0x3c, 0x35, 0x01, 0x07, 0x49, 0xc1, 0xde,
				    0x3d, 0x9a, 0x5b, 0xdd, 0x6a, 0x31, 0xc1, 0x24,
				    0x58, 0x76, 0x8d, 0xa5, 0xce, 0x87, 0xcc, 0xa6,
				    0xaa, 0xd6, 0x3e, 0xbb, 0xaa, 0xef, 0x74, 0x32};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_request req = {0};
	struct rpc_result res;
	struct outcome o;

	if (size < 1)
		return 0;
	req.method = (enum rpc_method)((data[0] & 0x0f) % RPC_METHOD_COUNT);
	memcpy(req.account, ACCOUNT, sizeof(ACCOUNT));
	rpc_result_init(&res, req.method);
	if (rpc_response_parse(&req, 1, (const char *)data + 1, size - 1, &res) == 0) {
		/* A good parse carries no error and bounded strings. */
		if (res.status != RPC_OK || res.err.code)
			__builtin_trap();
		if (req.method == RPC_SEND_TRANSACTION) {
			o = classify_send(res.u.send.status, NULL);
			(void)o;
		} else if (req.method == RPC_GET_TRANSACTION) {
			o = classify_get(res.u.get_tx.status, NULL);
			(void)o;
		}
	} else {
		if (res.status != RPC_E_PROTOCOL && res.status != RPC_E_JSONRPC)
			__builtin_trap();
		if (!res.err.msg[0])
			__builtin_trap();
		o = classify_transport(res.status, res.rpc_code);
		(void)o;
	}
	rpc_result_release(&res);
	return 0;
}
