# ops/lib/prepare.d/bench_graphile.sh - sourced by ops/test.sh: installs
# graphile-worker, the peer bench_dispatch measures beside outboxd
# (tests/bench/graphile/), into tests/bench/graphile/node_modules from its
# package-lock.json, only when it is missing or not the pinned version.
# Quiet unless npm fails.
outbox_prepare_bench_graphile() {
	local dir want have
	dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../tests/bench/graphile" && pwd) || return 1
	want=$(node -p "require('$dir/package.json').dependencies['graphile-worker']") || return 1
	have=$(node -p "require('$dir/node_modules/graphile-worker/package.json').version" 2>/dev/null || true)
	[[ $have == "$want" ]] && return 0
	echo "prepare: npm ci in tests/bench/graphile (graphile-worker $want)" >&2
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
		{ echo "prepare: npm ci failed in $dir" >&2; return 1; }
}
outbox_prepare_bench_graphile
