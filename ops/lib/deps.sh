# ops/lib/deps.sh - sourced by ops/test.sh and ops/demo.sh.
# The Debian packages outboxd builds and tests with, and one idempotent
# installer: apt-get runs only when a package is not installed (dpkg's
# "install ok installed"), with one `apt-get update` first.

OUTBOX_DEB_PACKAGES=(
	build-essential cmake pkg-config git
	libpq-dev postgresql-client
	libcurl4-openssl-dev libjansson-dev libsodium-dev librdkafka-dev
	check libsubunit-dev libmicrohttpd-dev libhiredis-dev
	clang libclang-rt-dev clang-format
	python3 curl jq procps iproute2 wrk
)
# libclang-rt-dev is Debian's unversioned name for the sanitizer and libFuzzer
# runtime of the default clang (14 on Debian 12, 19 on Debian 13).
# Node.js (for the SDK interop tests) may come from outside Debian, with its
# own npm: only ask apt for it when the commands are missing.

# outbox_missing_packages: print each package of the list that is not
# installed (one per line), then nodejs/npm when their commands are missing.
outbox_missing_packages() {
	local installed p
	# One dpkg-query for the whole list. A package dpkg never heard of prints
	# no line and makes it exit 1 (which must not end a caller running under
	# set -e -o pipefail): it counts as missing.
	installed=$({ dpkg-query -W -f='${Package} ${Status}\n' "${OUTBOX_DEB_PACKAGES[@]}" 2>/dev/null ||
		true; } | awk '$2 == "install" && $3 == "ok" && $4 == "installed" { print $1 }')
	for p in "${OUTBOX_DEB_PACKAGES[@]}"; do
		grep -qxF "$p" <<<"$installed" || echo "$p"
	done
	command -v node >/dev/null 2>&1 || echo nodejs
	command -v npm >/dev/null 2>&1 || echo npm
}

# outbox_ensure_packages: install what outbox_missing_packages reports (root).
outbox_ensure_packages() {
	local missing=()
	mapfile -t missing < <(outbox_missing_packages)
	((${#missing[@]})) || return 0
	echo "deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
