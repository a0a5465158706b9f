#!/usr/bin/env bash
# ops/kafka.sh - a real single-node Apache Kafka broker (KRaft: one JVM that
# is broker and controller) for the tests and the demo, from Maven Central's
# jars. No tarball, no container. ops/kafka/README.md has the details.
#
#   ops/kafka.sh start  [--data DIR] [--port N]  start the broker and wait until it answers;
#                                                a broker already answering on the port is reused
#   ops/kafka.sh stop   [--data DIR] [--port N]  stop the broker started from DIR (SIGTERM, then SIGKILL)
#   ops/kafka.sh status [--data DIR] [--port N]  exit 0 when a broker answers on the port, else 1; says why
#   ops/kafka.sh topic NAME [PARTITIONS] [--port N]
#                                                create topic NAME with PARTITIONS partitions
#                                                (default 3), or accept it if it has them
#
# Ports: the broker listens on 127.0.0.1:N (default 9092), its controller on
# 127.0.0.1:N+1. Clients bootstrap from 127.0.0.1:N.
# Data: DIR (default $OUTBOX_KAFKA_HOME/data-N) holds kraft/ (the broker's
# log, formatted on first start and kept across restarts), the effective
# server.properties, broker.pid and broker.log (the previous run's in
# broker.log.1).
# Jars: $OUTBOX_KAFKA_HOME/libs, default ~/.cache/outboxd/kafka/libs, copied
# there by Maven from ops/kafka/pom.xml on first use and again only when the
# pom changes (its checksum is kept in libs.sha256); with that cache warm,
# start needs neither Maven nor the network.
#
# Needs Java 17+ (the broker), kcat (the readiness probe) and, for the first
# fetch, Maven: run as root, it installs what is missing through
# ops/lib/deps.sh; otherwise it names what is missing. `topic` runs
# kafka-topic (ops/kafka/kafka_topic.c), built with the project into
# OUTBOX_BUILD_DIR (default build/), building it there first when missing.
#
# Environment: OUTBOX_KAFKA_HOME, OUTBOX_KAFKA_DATA and OUTBOX_KAFKA_PORT
# (defaults for --data and --port), OUTBOX_KAFKA_HEAP (JVM heap, default
# 128m), OUTBOX_KAFKA_JAVA_OPTS (more JVM options), OUTBOX_KAFKA_START_TIMEOUT
# (seconds to wait for an answer, default 180), OUTBOX_KAFKA_STOP_TIMEOUT
# (seconds from SIGTERM to SIGKILL, default 60), JAVA_HOME, OUTBOX_BUILD_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T0=$EPOCHREALTIME

say() { echo "kafka: $*"; }
die() {
	echo "kafka: $*" >&2
	exit 1
}
usage() {
	sed -n '6,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
# Seconds since the script started, one decimal.
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- arguments
CMD=${1:-}
[[ -n $CMD ]] || usage
shift
PORT=${OUTBOX_KAFKA_PORT:-9092}
DATA=${OUTBOX_KAFKA_DATA:-}
ARGS=()
while (($#)); do
	case $1 in
	--port)
		[[ $# -ge 2 ]] || usage
		PORT=$2
		shift 2
		;;
	--data)
		[[ $# -ge 2 ]] || usage
		DATA=$2
		shift 2
		;;
	-h | --help) usage ;;
	-*) die "unknown option $1" ;;
	*)
		ARGS+=("$1")
		shift
		;;
	esac
done
if ! [[ $PORT =~ ^[0-9]+$ ]] || ((PORT < 1 || PORT > 65534)); then
	die "--port $PORT: want 1..65534"
fi
CPORT=$((PORT + 1))
HOME_DIR=${OUTBOX_KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/outboxd/kafka}
LIBS=$HOME_DIR/libs
POM=$ROOT/ops/kafka/pom.xml
DATA=${DATA:-$HOME_DIR/data-$PORT}
HEAP=${OUTBOX_KAFKA_HEAP:-128m}
START_TIMEOUT=${OUTBOX_KAFKA_START_TIMEOUT:-180}
STOP_TIMEOUT=${OUTBOX_KAFKA_STOP_TIMEOUT:-60}
ADDR=127.0.0.1:$PORT

# ---------------------------------------------------------------- probes
# The broker opens its port only once it is registered and unfenced, so a
# TCP connect is a cheap first test; kcat's metadata request is the answer
# that counts (a broker, not just a socket).
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
answers() {
	local md
	port_open "$PORT" || return 1
	md=$(timeout 20 kcat -b "$ADDR" -L -m 5 2>/dev/null) || return 1
	[[ $md =~ (^|$'\n')\ *[1-9][0-9]*\ brokers: ]]
}
# listener PORT: who listens on it (empty when nobody).
listener() { ss -Hltnp "sport = :$1" 2>/dev/null | awk 'NR == 1 { print $4, $6 }' || true; }

# The broker started from DATA: the pid in DATA/broker.pid while that process
# is alive and is kafka.Kafka with DATA's server.properties (not a reused pid).
ours() {
	local pid cmd
	pid=$(cat "$DATA/broker.pid" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
	[[ $cmd == *" kafka.Kafka $DATA/server.properties"* ]] || return 1
	echo "$pid"
}

log_tail() {
	if [[ -s $DATA/broker.log ]]; then
		echo "---- last lines of $DATA/broker.log"
		tail -n "${1:-25}" "$DATA/broker.log"
		echo "----"
	else
		echo "($DATA/broker.log is empty)"
	fi
}

# need_tools CMD...: die naming what is missing, after ops/lib/deps.sh had
# its chance to install it.
need_tools() {
	local missing=() pkgs c
	# shellcheck source=ops/lib/deps.sh
	. "$ROOT/ops/lib/deps.sh"
	outbox_ensure_kafka_packages
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || missing+=("$c")
	done
	if ((${#missing[@]})); then
		mapfile -t pkgs < <(outbox_missing_kafka_packages)
		die "missing command(s): ${missing[*]} (Debian packages: ${pkgs[*]}; as root," \
			"ops/kafka.sh installs them through ops/lib/deps.sh)"
	fi
}

# JAVA: the java binary (JAVA_HOME's, else the PATH's), checked to be 17+.
find_java() {
	local v major
	if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then
		JAVA=$JAVA_HOME/bin/java
	else
		JAVA=$(command -v java) || die "no java: Kafka 4.x needs Java 17+ (Debian: default-jre-headless)"
	fi
	v=$("$JAVA" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -1)
	major=${v%%.*}
	if ! [[ $major =~ ^[0-9]+$ ]] || ((major < 17)); then
		die "$JAVA is Java '${v:-unknown}': Kafka 4.x needs 17 or newer (Debian: default-jre-headless)"
	fi
}

# ---------------------------------------------------------------- jars
fetch_jars() {
	local sum lock t0=$EPOCHREALTIME args
	sum=$(sha256sum "$POM" | cut -d' ' -f1)
	jars_current() {
		[[ -f $LIBS.sha256 && $(<"$LIBS.sha256") == "$sum" ]] &&
			compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null &&
			compgen -G "$LIBS/log4j-core-*.jar" >/dev/null
	}
	jars_current && return 0
	mkdir -p "$HOME_DIR"
	# One fetch at a time per cache (parallel test runs share it).
	exec {lock}>"$HOME_DIR/.fetch.lock"
	flock "$lock"
	if ! jars_current; then
		command -v mvn >/dev/null 2>&1 ||
			die "Maven (mvn) is missing: it fetches the broker's jars once into $LIBS" \
				"(Debian: maven; as root, ops/lib/deps.sh installs it)"
		say "fetching the broker's jars with Maven into $LIBS (ops/kafka/pom.xml is new or changed)"
		rm -rf "$LIBS.new"
		args=(-B -q -f "$POM" dependency:copy-dependencies -DincludeScope=runtime
			-DoutputDirectory="$LIBS.new")
		# Maven's local repository (~/.m2) serves whatever it already holds
		# (fixed versions are never looked up again), Maven Central the rest.
		mvn "${args[@]}" >"$HOME_DIR/fetch.log" 2>&1 ||
			die "Maven could not fetch the jars of $POM:$(echo; tail -n 20 "$HOME_DIR/fetch.log")"
		if ! compgen -G "$LIBS.new/kafka_2.13-*.jar" >/dev/null ||
			! compgen -G "$LIBS.new/log4j-core-*.jar" >/dev/null; then
			die "Maven ran but $LIBS.new lacks kafka_2.13 or log4j-core (see $HOME_DIR/fetch.log)"
		fi
		rm -rf "$LIBS"
		mv "$LIBS.new" "$LIBS"
		echo "$sum" >"$LIBS.sha256"
		say "fetched $(find "$LIBS" -name '*.jar' | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in" \
			"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
	fi
	exec {lock}>&-
}

# ---------------------------------------------------------------- start
# DATA/server.properties: the repo's settings plus this broker's port and
# directory. A static quorum (controller.quorum.voters), so a data directory
# does not remember the controller's port.
write_config() {
	cp "$ROOT/ops/kafka/log4j2.properties" "$DATA/log4j2.properties"
	{
		cat "$ROOT/ops/kafka/server.properties"
		echo
		echo "# ---- appended by ops/kafka.sh for this broker"
		echo "listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT"
		echo "advertised.listeners=PLAINTEXT://127.0.0.1:$PORT"
		echo "controller.quorum.voters=1@127.0.0.1:$CPORT"
		echo "log.dirs=$DATA/kraft"
	} >"$DATA/server.properties.new"
	mv "$DATA/server.properties.new" "$DATA/server.properties"
}

# A KRaft cluster id: 16 random bytes, base64url without padding (what
# `StorageTool random-uuid` prints, without starting a JVM for it).
new_cluster_id() {
	local id
	while :; do
		id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
		[[ $id != -* ]] && break
	done
	echo "$id"
}

format_data() {
	[[ -f $DATA/kraft/meta.properties ]] && return 0
	local cid
	cid=$(new_cluster_id)
	"$JAVA" -Xmx128m -Dlog4j2.configurationFile="$DATA/log4j2.properties" -cp "$LIBS/*" \
		kafka.tools.StorageTool format -t "$cid" -c "$DATA/server.properties" \
		>"$DATA/format.log" 2>&1 ||
		die "formatting $DATA/kraft failed:$(echo; tail -n 20 "$DATA/format.log")"
}

launch() {
	[[ -f $DATA/broker.log ]] && mv -f "$DATA/broker.log" "$DATA/broker.log.1"
	# In its own session (a test's process group may be killed when the test
	# ends); with no descriptor of ours beyond stdin/out/err, so whoever ran
	# this (ctest, a pipe) does not wait for the broker to close it.
	(
		for fd in /proc/"$BASHPID"/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		cd "$DATA"
		# shellcheck disable=SC2086 # OUTBOX_KAFKA_JAVA_OPTS: one option per word
		exec setsid "$JAVA" -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
			-XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true ${OUTBOX_KAFKA_JAVA_OPTS:-} \
			-Dlog4j2.configurationFile="$DATA/log4j2.properties" \
			-cp "$LIBS/*" kafka.Kafka "$DATA/server.properties"
	) </dev/null >"$DATA/broker.log" 2>&1 &
	echo $! >"$DATA/broker.pid"
}

# Kill pid: SIGTERM (a controlled shutdown), SIGKILL after STOP_TIMEOUT.
terminate() {
	local pid=$1 t=0
	kill -TERM "$pid" 2>/dev/null || return 0
	while [[ -n $(ours) ]] && ((t < STOP_TIMEOUT * 5)); do
		sleep 0.2
		t=$((t + 1))
	done
	if [[ -n $(ours) ]]; then
		say "pid $pid still running ${STOP_TIMEOUT}s after SIGTERM: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		t=0
		while [[ -n $(ours) ]] && ((t < 50)); do
			sleep 0.2
			t=$((t + 1))
		done
		[[ -z $(ours) ]] || die "pid $pid survived SIGKILL"
	fi
	rm -f "$DATA/broker.pid"
}

wait_ready() {
	local pid=$1 deadline=$((SECONDS + START_TIMEOUT))
	until answers; do
		if [[ -z $(ours) ]]; then
			rm -f "$DATA/broker.pid"
			die "the broker (pid $pid) exited before it answered on $ADDR:$(echo; log_tail 40)"
		fi
		if ((SECONDS >= deadline)); then
			echo "kafka: no answer on $ADDR within ${START_TIMEOUT}s of the start (pid $pid):" >&2
			log_tail 40 >&2
			say "stopping pid $pid" >&2
			terminate "$pid" >&2
			exit 1
		fi
		sleep 0.25
	done
}

cmd_start() {
	local pid who
	need_tools kcat ss
	mkdir -p "$DATA"
	DATA=$(cd "$DATA" && pwd)
	exec {DLOCK}>"$DATA/.lock"
	flock "$DLOCK"
	pid=$(ours) || pid=
	if answers; then
		if [[ -n $pid ]]; then
			say "already running on $ADDR (pid $pid, data $DATA)"
		else
			say "a broker already answers on $ADDR (not started from $DATA): reusing it"
		fi
		return 0
	fi
	if [[ -n $pid ]]; then
		say "pid $pid (data $DATA) is running but does not answer on $ADDR yet: waiting"
		wait_ready "$pid"
		say "broker ready on $ADDR in $(elapsed)s (pid $pid, data $DATA)"
		return 0
	fi
	for p in "$PORT" "$CPORT"; do
		who=$(listener "$p")
		[[ -z $who ]] || die "port $p is taken ($who) by something that is not a broker answering" \
			"on $ADDR; choose another with --port N (uses N and N+1)"
	done
	need_tools java
	find_java
	fetch_jars
	write_config
	format_data
	launch
	pid=$(<"$DATA/broker.pid")
	wait_ready "$pid"
	say "broker ready on $ADDR in $(elapsed)s (pid $pid, data $DATA, log $DATA/broker.log)"
}

cmd_stop() {
	local pid t0=$EPOCHREALTIME
	if [[ ! -d $DATA ]]; then
		say "nothing to stop: no data directory $DATA"
		return 0
	fi
	DATA=$(cd "$DATA" && pwd)
	exec {DLOCK}>"$DATA/.lock"
	flock "$DLOCK"
	if ! pid=$(ours); then
		rm -f "$DATA/broker.pid"
		if port_open "$PORT"; then
			say "no broker started from $DATA is running; the one on $ADDR is not ours: left alone"
		else
			say "no broker started from $DATA is running"
		fi
		return 0
	fi
	terminate "$pid"
	say "stopped pid $pid in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
}

cmd_status() {
	local pid
	need_tools kcat
	[[ -d $DATA ]] && DATA=$(cd "$DATA" && pwd)
	pid=$(ours) || pid=
	if answers; then
		if [[ -n $pid ]]; then
			say "a broker answers on $ADDR (pid $pid, data $DATA)"
		else
			say "a broker answers on $ADDR (not started from $DATA)"
		fi
		return 0
	fi
	if [[ -n $pid ]]; then
		say "no answer on $ADDR: pid $pid (data $DATA) is running but not answering" \
			"(still starting, or stuck: see $DATA/broker.log)"
	elif [[ -f $DATA/broker.pid ]]; then
		say "no answer on $ADDR: the broker started from $DATA has exited (see $DATA/broker.log)"
	elif port_open "$PORT"; then
		say "no answer on $ADDR: the port is open ($(listener "$PORT")) but no Kafka broker answers"
	else
		say "no answer on $ADDR: nothing listens there"
	fi
	return 1
}

cmd_topic() {
	local name=${ARGS[0]:-} parts=${ARGS[1]:-3} build tool
	[[ -n $name && ${#ARGS[@]} -le 2 ]] || usage
	build=${OUTBOX_BUILD_DIR:-$ROOT/build}
	tool=$build/kafka-topic
	if [[ ! -x $tool ]]; then
		say "building kafka-topic in $build"
		[[ -f $build/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$build" >/dev/null
		cmake --build "$build" --target kafka-topic >/dev/null ||
			die "could not build kafka-topic in $build"
	fi
	"$tool" "$ADDR" "$name" "$parts"
}

case $CMD in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
topic) cmd_topic ;;
*) usage ;;
esac
