# ops/lib/deps.sh - sourced by ops/test.sh, ops/demo.sh and .ci/run.
# Installs the Debian packages outboxd builds and tests with, idempotently:
# apt-get runs only when something is missing, and `apt-get update` once.

OUTBOX_DEB_PACKAGES=(
	build-essential cmake pkg-config git
	libpq-dev postgresql-client
	libcurl4-openssl-dev libjansson-dev libsodium-dev liburcu-dev librdkafka-dev
	check libsubunit-dev libmicrohttpd-dev libhiredis-dev
	clang libclang-rt-14-dev clang-format
	python3 curl jq procps iproute2 wrk
)
# Node.js (for the SDK interop tests) may come from outside Debian, with its
# own npm: only ask apt for it when the commands are missing.

outbox_ensure_packages() {
	local missing=() p
	for p in "${OUTBOX_DEB_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	command -v node >/dev/null 2>&1 || missing+=(nodejs)
	command -v npm >/dev/null 2>&1 || missing+=(npm)
	# Debian 13 ships clang 19: take whatever clang-rt dev package matches.
	if ((${#missing[@]})); then
		echo "deps: installing ${missing[*]}" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		local ok=() q
		for q in "${missing[@]}"; do
			if [[ $q == libclang-rt-14-dev ]] && ! apt-cache show "$q" >/dev/null 2>&1; then
				q=$(apt-cache search --names-only '^libclang-rt-[0-9]+-dev$' | sort -V | tail -1 | cut -d' ' -f1)
				[[ -n $q ]] || continue
			fi
			ok+=("$q")
		done
		apt-get install -y -qq --no-install-recommends "${ok[@]}" >/dev/null
	fi
}
