# shellcheck shell=bash
# ops/lib/deps.sh - sourced by ops/test.sh, ops/demo.sh and ops/kafka.sh.
# The Debian packages outboxd builds and tests with, and one idempotent
# installer: apt-get runs only when a package is not installed (dpkg's
# "install ok installed"), with one `apt-get update` first.

OUTBOX_DEB_PACKAGES=(
	systemd prometheus # systemd-analyze and promtool: tests/deploy.cmake (below)
	build-essential cmake pkg-config git
	libpq-dev postgresql-client
	libcurl4-openssl-dev libjansson-dev libsodium-dev libssl-dev librdkafka-dev
	check libsubunit-dev libmicrohttpd-dev liburcu-dev libhiredis-dev
	clang libclang-rt-dev clang-format
	python3 curl jq procps iproute2 wrk tmux
	postgresql gdb
	chromium # the web console's browser test (tests/console/, check_console)
)
# prometheus brings promtool, which checks the gateway's /metrics
# (check_gateway fails, never skips, without it). Its server is not used.
# postgresql (the server: initdb, pg_ctl) and gdb (gcore): tests/chaos/ runs a
# private cluster per scenario and dumps the roles' memory to search it for
# seeds.
# libclang-rt-dev is Debian's unversioned name for the sanitizer and libFuzzer
# runtime of the default clang (14 on Debian 12, 19 on Debian 13).
# systemd (systemd-analyze) and prometheus (promtool) check the deployment
# files of ops/ (tests/deploy.cmake); both work without systemd running, and
# neither needs its daemon: where systemd runs, installing prometheus also
# starts a Prometheus server on :9090, which nothing here uses.
# chromium: Debian's, headless, driven by puppeteer-core (npm, installed by
# ops/lib/prepare.d/console.sh) through the gateway's web console.
# Node.js (for the SDK interop tests) may come from outside Debian, with its
# own npm: only ask apt for it when the commands are missing.

# The test Kafka broker (ops/kafka.sh), as command:package. Checked by command,
# since a JDK or Maven from elsewhere serves as well. Kafka 4.x needs Java 17+:
# default-jre-headless is OpenJDK 17 on Debian 12, 21 on Debian 13. Maven
# fetches the broker's jars from Maven Central once; kcat probes the broker;
# ss (iproute2) names what holds a port.
OUTBOX_KAFKA_COMMANDS=(java:default-jre-headless mvn:maven kcat:kcat ss:iproute2)

# outbox_apt_install PKG...: `apt-get update` once per process, then install.
outbox_apt_install() {
	echo "deps: installing $*" >&2
	export DEBIAN_FRONTEND=noninteractive
	if [[ -z ${OUTBOX_APT_UPDATED:-} ]]; then
		apt-get update -qq
		OUTBOX_APT_UPDATED=1
	fi
	apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# outbox_missing_kafka_packages: the packages of OUTBOX_KAFKA_COMMANDS whose
# command is missing, one per line.
outbox_missing_kafka_packages() {
	local e
	for e in "${OUTBOX_KAFKA_COMMANDS[@]}"; do
		command -v "${e%%:*}" >/dev/null 2>&1 || echo "${e#*:}"
	done
}

# outbox_missing_packages: print each package of the list that is not
# installed (one per line), then nodejs/npm and the Kafka tools when their
# commands are missing.
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
	outbox_missing_kafka_packages
}

# outbox_ensure_packages: install what outbox_missing_packages reports (root).
outbox_ensure_packages() {
	local missing=()
	mapfile -t missing < <(outbox_missing_packages | sort -u)
	((${#missing[@]})) || return 0
	outbox_apt_install "${missing[@]}"
}

# outbox_ensure_kafka_packages: what ops/kafka.sh needs, when run as root on
# a machine with apt-get; otherwise kafka.sh names the missing commands.
outbox_ensure_kafka_packages() {
	local missing
	mapfile -t missing < <(outbox_missing_kafka_packages)
	if ((${#missing[@]})) && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		outbox_apt_install "${missing[@]}"
	fi
}
