# shellcheck shell=bash
# ops/lib/deps.sh - sourced by ops/test.sh, ops/demo.sh, ops/kafka.sh and .ci/run.
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

# The test Kafka broker (ops/kafka.sh), as command:package. Also checked by
# command, since a JDK or Maven from elsewhere serves as well. Kafka 4.x needs
# Java 17+: default-jre-headless is OpenJDK 17 on Debian 12, 21 on Debian 13.
# Maven fetches the broker's jars from Maven Central once; kcat probes it; ss
# (iproute2) names what holds a port.
OUTBOX_KAFKA_COMMANDS=(java:default-jre-headless mvn:maven kcat:kcat ss:iproute2)

# outbox_apt_install PKG...: apt-get update once, then install PKG... (no
# recommends). Debian 13 ships clang 19: libclang-rt-14-dev becomes whatever
# clang-rt dev package there is.
outbox_apt_install() {
	echo "deps: installing $*" >&2
	export DEBIAN_FRONTEND=noninteractive
	if [[ -z ${OUTBOX_APT_UPDATED:-} ]]; then
		apt-get update -qq
		OUTBOX_APT_UPDATED=1
	fi
	local ok=() q
	for q in "$@"; do
		if [[ $q == libclang-rt-14-dev ]] && ! apt-cache show "$q" >/dev/null 2>&1; then
			q=$(apt-cache search --names-only '^libclang-rt-[0-9]+-dev$' | sort -V | tail -1 | cut -d' ' -f1)
			[[ -n $q ]] || continue
		fi
		ok+=("$q")
	done
	apt-get install -y -qq --no-install-recommends "${ok[@]}" >/dev/null
}

# outbox_missing_kafka_packages: the packages of OUTBOX_KAFKA_COMMANDS whose
# command is missing, one per line.
outbox_missing_kafka_packages() {
	local e
	for e in "${OUTBOX_KAFKA_COMMANDS[@]}"; do
		command -v "${e%%:*}" >/dev/null 2>&1 || echo "${e#*:}"
	done
}

# outbox_ensure_kafka_packages: what ops/kafka.sh needs, when run as root on
# a machine with apt-get; otherwise it leaves the missing commands for
# kafka.sh to name.
outbox_ensure_kafka_packages() {
	local missing
	mapfile -t missing < <(outbox_missing_kafka_packages)
	if ((${#missing[@]})) && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		outbox_apt_install "${missing[@]}"
	fi
}

outbox_ensure_packages() {
	local missing=() p
	for p in "${OUTBOX_DEB_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	command -v node >/dev/null 2>&1 || missing+=(nodejs)
	command -v npm >/dev/null 2>&1 || missing+=(npm)
	mapfile -t -O "${#missing[@]}" missing < <(outbox_missing_kafka_packages)
	if ((${#missing[@]})); then
		outbox_apt_install "${missing[@]}"
	fi
}
