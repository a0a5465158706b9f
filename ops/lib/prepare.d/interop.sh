# ops/lib/prepare.d/interop.sh - sourced by ops/test.sh: installs the JS SDK
# the interop test (tests/interop.cmake) checks the C Stellar layer against,
# into tests/interop/node_modules, only when it is missing or not the pinned
# version. Quiet unless npm fails.
outbox_prepare_interop() {
	local dir want have
	dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../tests/interop" && pwd) || return 1
	want=$(node -p "require('$dir/package.json').dependencies['@stellar/stellar-base']") || return 1
	have=$(node -p "require('$dir/node_modules/@stellar/stellar-base/package.json').version" 2>/dev/null || true)
	[[ $have == "$want" ]] && return 0
	echo "prepare: npm install in tests/interop (@stellar/stellar-base $want)" >&2
	(cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null) ||
		{ echo "prepare: npm install failed in $dir" >&2; return 1; }
}
outbox_prepare_interop
