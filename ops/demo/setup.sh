# shellcheck shell=bash
# ops/demo/setup.sh - sourced by ops/demo.sh: what both demos stand on.
# Packages, the build, Kafka, a fresh database, stellar-sim, outboxd.

# As root on Debian, install whatever ops/test.sh would (ops/lib/deps.sh: the
# same list, the same dpkg check), so a fresh machine builds; apt-get runs
# only when a package is missing. Anyone else needs the packages already.
setup_packages() {
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		outbox_ensure_packages || die "installing the packages of ops/lib/deps.sh failed"
	fi
	local need=() c
	for c in cmake psql curl jq python3 awk; do
		command -v "$c" >/dev/null 2>&1 || need+=("$c")
	done
	((${#need[@]} == 0)) ||
		die "missing commands: ${need[*]} (run as root on Debian to install the packages of ops/lib/deps.sh)"
}

# A build that fails for want of a -dev package names it, when dpkg can tell.
missing_hint() {
	command -v dpkg-query >/dev/null 2>&1 || return 0
	local m
	m=$(outbox_missing_packages | tr '\n' ' ')
	[[ -z $m ]] || echo " (packages not installed: ${m% }; ops/demo.sh installs them when run as root)"
}

DEMO_BINS=(outboxd outboxctl stellar-sim kafka-topic outbox-demo-load outbox-demo-report)

setup_build() {
	B=${OUTBOX_BUILD_DIR:-$ROOT/build}
	if [[ -z ${OUTBOX_BUILD_DIR:-} ]]; then
		say "build ($B)"
		cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TMP/build.log" 2>&1 ||
			{ tail -n 30 "$TMP/build.log" >&2; die "cmake configure failed$(missing_hint)"; }
		if ! cmake --build "$B" -j"${OUTBOX_BUILD_JOBS:-2}" --target "${DEMO_BINS[@]}" \
			>"$TMP/build.log" 2>&1; then
			tail -n 30 "$TMP/build.log" >&2
			die "the build failed$(missing_hint)"
		fi
		info "${DEMO_BINS[*]} up to date"
	fi
	local bin
	for bin in "${DEMO_BINS[@]}"; do
		[[ -x $B/$bin ]] || die "$B/$bin is missing (build it, or unset OUTBOX_BUILD_DIR)"
	done
}

# The events' broker: the caller's, a running ops/kafka.sh broker, or our own.
setup_kafka() {
	KAFKA=""
	TOPIC=outbox.demo.$$
	[[ ${OUTBOX_DEMO_KAFKA:-1} != 0 ]] || return 0
	say "kafka"
	if [[ -n ${OUTBOX_KAFKA_BROKERS:-} ]]; then
		KAFKA=$OUTBOX_KAFKA_BROKERS
		info "using OUTBOX_KAFKA_BROKERS=$KAFKA"
	elif bash ops/kafka.sh status >/dev/null 2>&1; then
		KAFKA=127.0.0.1:9092
		info "using the broker ops/kafka.sh runs on $KAFKA"
	else
		local port=9392
		while [[ -n $(ss -Hltn "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null) ]]; do
			port=$((port + 100))
			((port < 12000)) || die "no free port pair for a Kafka broker"
		done
		info "starting a broker of its own (ops/kafka.sh, port $port; the first run fetches its jars)"
		KAFKA_STARTED=$port # before the start: an interrupted start is stopped too
		bash ops/kafka.sh start --port "$port" --data "$TMP/kafka" >"$TMP/kafka.log" 2>&1 ||
			{ tail -n 20 "$TMP/kafka.log" >&2; die "the Kafka broker did not start (OUTBOX_DEMO_KAFKA=0 runs without it)"; }
		KAFKA=127.0.0.1:$port
	fi
	"$B/kafka-topic" "$KAFKA" "$TOPIC" 4 >"$TMP/topic.log" 2>&1 ||
		{ cat "$TMP/topic.log" >&2; die "cannot create topic $TOPIC on $KAFKA"; }
	info "topic $TOPIC (4 partitions) on $KAFKA"
}

# conninfo for database $1 on the server of URL/conninfo $2
conn_for() {
	local db=$1 src=$2
	if [[ $src =~ ^postgres(ql)?:// ]]; then
		local scheme=${src%%://*} rest=${src#*://} auth query=""
		auth=${rest%%[/?]*}
		[[ $rest == *\?* ]] && query="?${rest#*\?}"
		echo "$scheme://$auth/$db$query"
	else
		echo "$src dbname=$db" # libpq: the last dbname wins
	fi
}

setup_database() {
	local server
	if [[ -n ${OUTBOX_PG_BASE:-} ]]; then
		server=$OUTBOX_PG_BASE
	elif [[ -n ${OUTBOX_DATABASE_URL:-} ]]; then
		server=$OUTBOX_DATABASE_URL
	else
		PG_ENSURED=1 # before pg_ensure: an interrupted start is stopped too
		pg_ensure
		server=$OUTBOX_PG_BASE
	fi
	say "PostgreSQL: fresh database $DB"
	DB_CREATED=1
	if ((PG_ENSURED)); then
		DB_URL=$(PGOPTIONS='-c client_min_messages=warning' pg_fresh_db "$DB")
	else
		ADMIN=$(conn_for postgres "$server")
		psql -X -q -d "$ADMIN" -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" \
			-c "CREATE DATABASE \"$DB\"" >/dev/null || die "cannot create $DB on the server of '$server'"
		DB_URL=$(conn_for "$DB" "$server")
	fi
	export OUTBOX_DATABASE_URL=$DB_URL OUTBOX_VSHARDS=$VSHARDS OUTBOX_INSTANCE=$INSTANCE
	"$B/outboxctl" migrate | sed 's/^/   /' || die "outboxctl migrate failed"
}

# setup_sim FLAGS...: stellar-sim with --debug and the vault; sets SIM.
setup_sim() {
	"$B/stellar-sim" --listen 127.0.0.1:0 --debug --vault-contract "$CONTRACT" "$@" \
		>"$TMP/sim.out" 2>"$TMP/sim.log" &
	SIM_PID=$!
	for _ in $(seq 100); do
		grep -q '^listening ' "$TMP/sim.out" 2>/dev/null && break
		kill -0 "$SIM_PID" 2>/dev/null || die "stellar-sim exited at start"
		sleep 0.05
	done
	local port
	port=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out")
	[[ -n $port ]] || die "stellar-sim did not say where it listens"
	SIM=http://127.0.0.1:$port
	info "listening on $SIM (vault contract $CONTRACT)"
}

# keygen N: N "S... G..." pairs
keygen() { python3 "$ROOT/ops/demo/keygen.py" "$1"; }

# write_keys SEED...: the signers' keys file, mode 0600 from its creation.
write_keys() {
	(
		umask 077
		echo "# outboxd demo signers (hot wallets), generated $(date -u +%FT%TZ)"
		printf '%s\n' "$@"
	) >"$TMP/keys"
	chmod 0600 "$TMP/keys"
}

# fund JSON-LINES: stdin holds {"id","seq","balance"} objects, one a line.
fund() {
	jq -cs '{accounts: .}' | curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' \
		--data @- "$SIM/debug/accounts" || die "funding the accounts in stellar-sim failed"
}
acct() { printf '{"id": "%s", "seq": "%s", "balance": "%s"}\n' "$1" "$2" "$3"; }
short() { echo "${1:0:6}..${1: -4}"; }

# start_outboxd KEY=VALUE...: outboxd with the demo's environment plus these.
start_outboxd() {
	env -u OUTBOX_CONFIG_FILE \
		"OUTBOX_DATABASE_URL=$DB_URL" \
		"STELLAR_RPC_URL=$SIM/" \
		"STELLAR_NETWORK_PASSPHRASE=$PASSPHRASE" \
		"OUTBOX_SIGNER_KEYS_FILE=$TMP/keys" \
		"OUTBOX_VAULT_CONTRACT=$CONTRACT" \
		"OUTBOX_INSTANCE=$INSTANCE" \
		"OUTBOX_RUN_DIR=$TMP" \
		"OUTBOX_VSHARDS=$VSHARDS" \
		"OUTBOX_KAFKA_BROKERS=$KAFKA" \
		"OUTBOX_KAFKA_TOPIC=$TOPIC" \
		"$@" \
		setsid "$B/outboxd" >"$TMP/outboxd.log" 2>&1 &
	OUTBOXD_PID=$!
	local up=0
	for _ in $(seq 200); do
		kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited at start"
		if "$B/outboxctl" stats >/dev/null 2>&1; then
			up=1
			break
		fi
		sleep 0.1
	done
	((up)) || die "outboxd did not report healthy within 20 s (outboxctl stats)"
	info "up: pid $OUTBOXD_PID, instance $INSTANCE, all children running, fee snapshot fresh"
}
