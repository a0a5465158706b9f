# ops/lib/prepare.d/console.sh - sourced by ops/test.sh: installs
# puppeteer-core, with which tests/console/console.mjs drives Debian's
# chromium (ops/lib/deps.sh) through the web console, into
# tests/console/node_modules from the committed package-lock.json, only when
# it is missing or not the pinned version. puppeteer-core downloads no
# browser (plain puppeteer would, and fails on a closed network). Quiet
# unless npm fails.
outbox_prepare_console() {
	local dir want have
	dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../tests/console" && pwd) || return 1
	want=$(node -p "require('$dir/package.json').dependencies['puppeteer-core']") || return 1
	have=$(node -p "require('$dir/node_modules/puppeteer-core/package.json').version" 2>/dev/null || true)
	[[ $have == "$want" ]] && return 0
	echo "prepare: npm ci in tests/console (puppeteer-core $want)" >&2
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
		{ echo "prepare: npm ci failed in $dir" >&2; return 1; }
}
outbox_prepare_console
