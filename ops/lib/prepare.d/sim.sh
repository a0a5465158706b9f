# ops/lib/prepare.d/sim.sh - sourced by ops/test.sh: installs the Stellar SDK
# whose RPC client tests/sim/sdk_rpc.js drives stellar-sim with, into
# tests/sim/node_modules, only when it is missing or not the pinned version.
# Quiet unless npm fails.
#
# @stellar/stellar-sdk 17.x declares node >= 22.12, but 17.2.0 runs on the
# Node 20 these machines have (sdk_rpc.js exercises every part it uses), so
# npm's engine check is told to warn, not refuse. If a later pin really needs
# Node 22, sdk_rpc.js fails loudly rather than skipping.
outbox_prepare_sim_sdk() {
	local dir want have
	dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../tests/sim" && pwd) || return 1
	want=$(node -p "require('$dir/package.json').dependencies['@stellar/stellar-sdk']") || return 1
	have=$(node -p "require('$dir/node_modules/@stellar/stellar-sdk/package.json').version" 2>/dev/null || true)
	[[ $have == "$want" ]] && return 0
	echo "prepare: npm install in tests/sim (@stellar/stellar-sdk $want)" >&2
	(cd "$dir" && npm install --no-audit --no-fund --engine-strict=false --loglevel=error >/dev/null) ||
		{ echo "prepare: npm install failed in $dir" >&2; return 1; }
}
outbox_prepare_sim_sdk
