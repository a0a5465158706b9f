# ops/lib/prepare.d/events.sh - sourced by ops/test.sh: installs ajv, with
# which tests/events/validate.js checks the events outboxd produced against
# schema/events/*.schema.json, into tests/events/node_modules, only when it is
# missing or not the pinned version. Quiet unless npm fails.
outbox_prepare_event_schemas() {
	local dir want have
	dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../tests/events" && pwd) || return 1
	want=$(node -p "require('$dir/package.json').dependencies.ajv") || return 1
	have=$(node -p "require('$dir/node_modules/ajv/package.json').version" 2>/dev/null || true)
	[[ $have == "$want" ]] && return 0
	echo "prepare: npm install in tests/events (ajv $want)" >&2
	(cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null) ||
		{ echo "prepare: npm install failed in $dir" >&2; return 1; }
}
outbox_prepare_event_schemas
