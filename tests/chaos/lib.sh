# shellcheck shell=bash
# tests/chaos/lib.sh - what the chaos scenarios share (sourced, bash).
#
#   chaos_init NAME       temp dir $T, instance, cleanup trap, the summary's name
#   pg_start [opts]       a PRIVATE PostgreSQL cluster (initdb + pg_ctl in $T) on a
#                         free port: scenarios restart, starve and block it, so
#                         they never touch a server other engineers use
#   pg_restart MODE       pg_ctl restart -m fast|immediate; pg_down / pg_up
#   sim_start [args]      stellar-sim (--debug) on a fixed free port, so a
#                         restarted sim answers at the same URL
#   keys_make N           N signer keys ($T/keys, mode 0600; SIGNERS, SEEDS)
#   fund                  the signers and CUSTOMERS in the sim
#   outboxd_start [K=V..] outboxd in its own process group, waits until healthy
#   load_start N RATE     a background enqueuer: N ops at RATE ops/s through
#                         outbox.enqueue(), batches retried until they commit
#   verdict [extra json]  waits for every op to end, prints the JSON summary
#                         line and exits 1 on any violation
#
# Every wait is for a condition with a generous deadline, never a duration
# assertion: the machine running this is a busy 2-core box.
#
# Needs: OUTBOX_BUILD_DIR (binaries), OUTBOX_KAFKA_BROKERS (the events' audit;
# the scenario fails without a broker, like every Kafka suite), psql, curl,
# jq, python3, initdb/pg_ctl (postgresql), runuser (run as root) or a user
# that may run postgres itself.

set -euo pipefail

CHAOS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$CHAOS_DIR/../.." && pwd)
B=${OUTBOX_BUILD_DIR:-$SRC/build}
CONTRACT=CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE
PASSPHRASE="Standalone Network ; February 2017"

VIOLATIONS=()  # what the summary reports and why the scenario fails
EXTRA_JSON={}  # scenario-specific figures merged into the summary
PIDS_TO_KILL=() # process groups we started (each killed by its own id)

log() { printf '[%s %s] %s\n' "$(date +%T)" "${CHAOS_NAME:-chaos}" "$*" >&2; }
violation() {
	VIOLATIONS+=("$*")
	log "VIOLATION: $*"
}
die() {
	log "FAILED: $*"
	CHAOS_ABORT="$*"
	exit 1
}
now_ms() { date +%s%3N; }

# extra KEY JSON-VALUE: a scenario figure for the summary line.
extra() { EXTRA_JSON=$(jq -c --arg k "$1" --argjson v "$2" '. + {($k): $v}' <<<"$EXTRA_JSON"); }

# wait_until SECONDS CMD...: run CMD every 0.2 s until it succeeds (0) or
# SECONDS pass (1).
wait_until() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		(($(date +%s) < end)) || return 1
		sleep 0.2
	done
}

# wait_for SECONDS WHAT CMD...: wait_until, and die naming WHAT on timeout.
wait_for() {
	local secs=$1 what=$2
	shift 2
	wait_until "$secs" "$@" || die "timed out after ${secs}s waiting for $what"
}

# free_port BASE: a port no socket uses, from BASE upward. Bases stay below
# the kernel's ephemeral range (32768 up by default): a port in it can be
# taken by any outgoing connection between this check and the bind.
free_port() {
	local p=$1
	while [[ -n $(ss -Htan "( sport = :$p )" 2>/dev/null) ]]; do
		p=$((p + 1))
	done
	echo "$p"
}

chaos_init() {
	CHAOS_NAME=$1
	for bin in outboxd outboxctl stellar-sim; do
		[[ -x $B/$bin ]] || die "$B/$bin is missing (OUTBOX_BUILD_DIR=$B)"
	done
	for c in psql curl jq python3 ss; do
		command -v "$c" >/dev/null || die "missing command: $c"
	done
	T=$(mktemp -d "/tmp/outboxd-chaos-$1.XXXXXX")
	chmod 755 "$T" # the private cluster's user traverses it
	INSTANCE=chaos_${1//[^A-Za-z0-9_]/_}_$$
	INSTANCE=${INSTANCE:0:32}
	TOPIC=outbox.chaos.$1.$$
	KAFKA=${OUTBOX_KAFKA_BROKERS:-}
	T0=$(now_ms)
	trap chaos_cleanup EXIT
	# a command that fails outside die() (set -e) still gets its summary line
	trap 'CHAOS_ABORT=${CHAOS_ABORT:-"line $LINENO: \"$BASH_COMMAND\" exited $?"}' ERR
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

chaos_cleanup() {
	local rc=$?
	set +e
	load_stop 2>/dev/null
	closer_stop 2>/dev/null
	for g in "${PIDS_TO_KILL[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null
	done
	[[ -n ${OUTBOXD_PID:-} ]] && kill -KILL -- "-$OUTBOXD_PID" 2>/dev/null
	[[ -n ${SIM_PID:-} ]] && kill -KILL "$SIM_PID" 2>/dev/null
	# the cluster first: clients of it (a scenario's hogs in pg_sleep) end with it
	if [[ -n ${PGDATA_DIR:-} ]]; then
		pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
	fi
	for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null; done
	wait 2>/dev/null
	rm -f "/dev/shm/outboxd-$INSTANCE"
	if ((rc != 0)); then
		[[ -n ${CHAOS_ABORT:-} ]] && summary_line false "$CHAOS_ABORT" >&1
		for f in outboxd.log sim.log pg.log load.log; do
			[[ -s $T/$f ]] || continue
			echo "--- last lines of $T/$f" >&2
			tail -n 25 "$T/$f" >&2
		done
	fi
	if [[ -n ${CHAOS_KEEP:-} ]]; then
		log "kept $T"
	else
		rm -rf "$T"
	fi
	exit $rc
}

# ---------------------------------------------------------------- PostgreSQL
pg_as() {
	if (($(id -u) == 0)); then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# pg_start [postgres -c options...]: initdb (once) and start a private cluster.
pg_start() {
	PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
	[[ -x $PG_BIN/initdb ]] || die "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin)"
	if [[ -z ${PGDATA_DIR:-} ]]; then
		PG_DIR=$T/pg
		mkdir -p "$PG_DIR"
		(($(id -u) == 0)) && chown postgres: "$PG_DIR"
		PGDATA_DIR=$PG_DIR/data
		pg_as "$PG_BIN/initdb" -D "$PGDATA_DIR" -A trust -U postgres >"$T/initdb.log" 2>&1 ||
			die "initdb failed: $(tail -3 "$T/initdb.log")"
		PG_PORT=$(free_port $((20000 + $$ % 5000)))
		PG_OPTS=("$@")
	fi
	pg_up
	export PGHOST=127.0.0.1 PGPORT=$PG_PORT PGUSER=postgres PGDATABASE=postgres
	PGBASE="host=127.0.0.1 port=$PG_PORT user=postgres"
}

# pg_up: start the cluster (after pg_start made it, or after pg_down).
pg_up() {
	local o="-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off"
	o+=" -c shared_buffers=32MB -c max_connections=${PG_MAX_CONN:-100}"
	for x in "${PG_OPTS[@]}"; do o+=" -c $x"; done
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$PG_DIR/log" -o "$o" -w -t 120 start \
		>/dev/null 2>&1 || die "the private cluster did not start: $(tail -5 "$PG_DIR/log")"
}

pg_down() { # pg_down fast|immediate
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m "$1" -w -t 120 stop >/dev/null 2>&1 ||
		die "pg_ctl stop -m $1 failed"
}

pg_restart() { # pg_restart fast|immediate
	pg_down "$1"
	pg_up
}

# db_make: a fresh database, migrated. DB_URL is outboxd's conninfo, ADMIN_URL
# the scenario's own (the load, the checks). With DB_OWNER set, outboxd is
# that ordinary role, owner of the database: a superuser would get the
# connections PostgreSQL reserves for superusers, which the starvation
# scenario must leave to the scenario itself.
db_make() {
	DB=chaos
	if [[ -n ${DB_OWNER:-} ]]; then
		psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "CREATE ROLE $DB_OWNER LOGIN" >/dev/null ||
			die "CREATE ROLE failed"
	fi
	psql -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE $DB OWNER ${DB_OWNER:-postgres}" >/dev/null || die "CREATE DATABASE failed"
	ADMIN_URL="$PGBASE dbname=$DB"
	DB_URL="host=127.0.0.1 port=$PG_PORT user=${DB_OWNER:-postgres} dbname=$DB"
	OUTBOX_DATABASE_URL=$DB_URL OUTBOX_VSHARDS=${VSHARDS:-8} "$B/outboxctl" migrate \
		>"$T/migrate.log" 2>&1 || die "outboxctl migrate failed: $(tail -3 "$T/migrate.log")"
}

sql() { psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -d "$ADMIN_URL" "$@"; }

# ---------------------------------------------------------------- stellar-sim
sim_start() {
	SIM_PORT=${SIM_PORT:-$(free_port $((26000 + $$ % 5000)))}
	: >"$T/sim.out"
	"$B/stellar-sim" --listen "127.0.0.1:$SIM_PORT" --debug --vault-contract "$CONTRACT" \
		--hold-max-ms 5000 "$@" >"$T/sim.out" 2>>"$T/sim.log" &
	SIM_PID=$!
	wait_for 30 "stellar-sim to listen" grep -q '^listening ' "$T/sim.out"
	SIM=http://127.0.0.1:$SIM_PORT
}

# closer_start [MS]: close a ledger every MS (default 1000) through /debug/close;
# for a sim started with a long --ledger-ms, so the scenario knows when the
# chain can move (the sim-restart scenario reads its state between closes).
closer_start() {
	local ms=${1:-1000}
	(
		trap 'exit 0' TERM
		while :; do
			curl -fsS -o /dev/null -X POST --data '{}' "$SIM/debug/close" 2>/dev/null
			sleep "$(awk -v m="$ms" 'BEGIN{printf "%.3f", m/1000}')"
		done
	) &
	CLOSER_PID=$!
}

closer_stop() {
	[[ -n ${CLOSER_PID:-} ]] && kill -TERM "$CLOSER_PID" 2>/dev/null && wait "$CLOSER_PID" 2>/dev/null
	CLOSER_PID=
}

sim_post() { # sim_post PATH JSON
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' --data "$2" "$SIM$1" ||
		die "POST $1 $2 failed"
}

sim_get() { curl -fsS --max-time 30 "$SIM$1"; }

# keys_make N: N signer keys into $T/keys (0600); CUSTOMERS: 20 accounts to pay.
keys_make() {
	local n=$1 line
	SIGNERS=() SEEDS=() SEED_HEX=() SEED_B64=() CUSTOMERS=()
	while read -r s g h b; do
		SEEDS+=("$s") SIGNERS+=("$g") SEED_HEX+=("$h") SEED_B64+=("$b")
	done < <(python3 "$CHAOS_DIR/keygen.py" "$n" ${KEYGEN_PREFIX:-})
	((${#SIGNERS[@]} == n)) || die "key generation failed"
	while read -r line; do
		CUSTOMERS+=("$(cut -d' ' -f2 <<<"$line")")
	done < <(python3 "$CHAOS_DIR/keygen.py" 20)
	(umask 077 && printf '%s\n' "${SEEDS[@]}" >"$T/keys")
	chmod 0600 "$T/keys"
}

# fund: every signer (1e12 stroops, seq 1000*i) and every customer (to withdraw from).
fund() {
	local i a=""
	for i in "${!SIGNERS[@]}"; do
		a+="{\"id\":\"${SIGNERS[i]}\",\"seq\":\"$((1000 * (i + 1)))\",\"balance\":\"1000000000000\"},"
	done
	for i in "${!CUSTOMERS[@]}"; do
		a+="{\"id\":\"${CUSTOMERS[i]}\",\"seq\":\"$((500000 + i))\",\"balance\":\"1000000000000\"},"
	done
	printf '{"accounts":[%s]}' "${a%,}" >"$T/accounts.json"
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' \
		--data @"$T/accounts.json" "$SIM/debug/accounts" || die "funding failed"
}

# ---------------------------------------------------------------- outboxd
kafka_topic() {
	[[ -n $KAFKA ]] || die "no Kafka broker: set OUTBOX_KAFKA_BROKERS (ops/kafka.sh start)"
	[[ -x $B/kafka-topic ]] || die "$B/kafka-topic is missing"
	"$B/kafka-topic" "$KAFKA" "$TOPIC" 4 >"$T/topic.log" 2>&1 ||
		die "cannot create topic $TOPIC on $KAFKA: $(cat "$T/topic.log")"
}

# The environment every scenario's outboxd runs with; callers add or override.
outboxd_env() {
	# the gateway on a port of its own: scenarios (and the soak) may run
	# side by side, and other work on the machine may hold the default 8080
	HTTP_PORT=${HTTP_PORT:-$(free_port $((31000 + $$ % 1500)))}
	OUTBOXD_ENV=(
		"OUTBOX_DATABASE_URL=$DB_URL"
		"OUTBOX_HTTP_ADDR=127.0.0.1:$HTTP_PORT"
		"STELLAR_RPC_URL=$SIM/"
		"STELLAR_NETWORK_PASSPHRASE=$PASSPHRASE"
		"OUTBOX_SIGNER_KEYS_FILE=$T/keys"
		"OUTBOX_VAULT_CONTRACT=$CONTRACT"
		"OUTBOX_INSTANCE=$INSTANCE"
		"OUTBOX_RUN_DIR=$T"
		"OUTBOX_WORKERS=${WORKERS:-2}"
		"OUTBOX_VSHARDS=${VSHARDS:-8}"
		"OUTBOX_DISPATCH_INTERVAL_MS=200"
		"OUTBOX_BACKOFF_BASE_MS=100"
		"OUTBOX_BACKOFF_MAX_MS=1000"
		# the loads only enqueue ops that cannot fail on chain; an outage must
		# delay them, so the transient-failure budget is not what ends them
		"OUTBOX_MAX_ATTEMPTS=100"
		"OUTBOX_SUBMITTED_TIMEOUT_MS=3000"
		"FEE_ORACLE_POLL_MS=500"
		"FEE_ORACLE_TTL_MS=2000"
		"OUTBOX_LOG_FORMAT=kv"
	)
	# (KAFKA empty: no relay, events stay in outbox.events - the backlog
	# scenario's million ENQUEUED events are not for a shared broker)
	[[ -z $KAFKA ]] || OUTBOXD_ENV+=("OUTBOX_KAFKA_BROKERS=$KAFKA" "OUTBOX_KAFKA_TOPIC=$TOPIC")
}

# outboxd_spawn [KEY=VALUE...]: start it (log appended to $T/outboxd.log), no wait.
outboxd_spawn() {
	outboxd_env
	# (in $T, with core dumps allowed when OUTBOXD_CORES is set: the
	# subshell execs, so the pid is outboxd's and it stays our child)
	(
		cd "$T"
		[[ -n ${OUTBOXD_CORES:-} ]] && ulimit -c unlimited
		exec env -i PATH="$PATH" "${OUTBOXD_ENV[@]}" "$@" setsid "$B/outboxd"
	) >>"$T/outboxd.log" 2>&1 &
	OUTBOXD_PID=$!
}

ctl() { env OUTBOX_INSTANCE="$INSTANCE" "$B/outboxctl" "$@"; }
healthy() { ctl stats >/dev/null 2>&1; }

outboxd_start() {
	outboxd_spawn "$@"
	local end=$(($(date +%s) + 60))
	until healthy; do
		kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited at start: $(tail -3 "$T/outboxd.log")"
		(($(date +%s) < end)) || die "outboxd not healthy after 60 s"
		sleep 0.2
	done
}

# outboxd_stop: SIGTERM (drain) and wait; exit 0 expected.
outboxd_stop() {
	local rc=0
	kill -TERM "$OUTBOXD_PID" 2>/dev/null || return 0
	wait_for 60 "outboxd to drain and exit" bash -c "! kill -0 $OUTBOXD_PID"
	wait "$OUTBOXD_PID" || rc=$?
	((rc == 0)) || violation "outboxd exited $rc after SIGTERM"
	OUTBOXD_PID=
}

# child_pids: "role:index:pid" of every running child, from outboxctl stats.
child_pids() {
	ctl stats --json 2>/dev/null | jq -r '.processes[] | select(.role != "supervisor")
		| "\(.role):\(.index):\(.pid)"' | sort
}

# cpu_ticks PID...: utime+stime of the processes, summed (clock ticks).
cpu_ticks() {
	local t=0 p f
	for p in "$@"; do
		if f=$(cat "/proc/$p/stat" 2>/dev/null); then
			f=${f##*) }
			set -- $f
			t=$((t + ${12} + ${13}))
		fi
	done
	echo "$t"
}

# cpu_share SECONDS PID...: the largest share of one core any of the PIDs used
# over SECONDS, in percent (spinning shows as ~100).
cpu_share() {
	local secs=$1 hz p max=0 a b
	shift
	hz=$(getconf CLK_TCK)
	declare -A before
	for p in "$@"; do before[$p]=$(cpu_ticks "$p"); done
	sleep "$secs"
	for p in "$@"; do
		a=${before[$p]}
		b=$(cpu_ticks "$p")
		p=$(((b - a) * 100 / hz / secs))
		((p > max)) && max=$p
	done
	echo "$max"
}

# ---------------------------------------------------------------- load
# Op i (1-based): signer i % nsigners, customer i % 20; every 5th a WITHDRAW
# (CRITICAL: the NOTIFY path), the others DEPOSITs, every 11th LOW. Neither can
# fail on chain (customers hold 1e12 stroops), so every op must end CONFIRMED
# (or HELD where a scenario says so). The key of op i is fixed, so a batch that
# failed (the server restarting) is simply enqueued again: the same keys return
# the same ops (created = f).
load_sql() { # load_sql FROM TO
	local signers customers
	signers=$(printf "'%s'," "${SIGNERS[@]}")
	customers=$(printf "'%s'," "${CUSTOMERS[@]}")
	cat <<EOF
WITH s(a) AS (SELECT ARRAY[${signers%,}]), c(a) AS (SELECT ARRAY[${customers%,}])
SELECT count(*) FROM s, c, generate_series($1, $2) i,
LATERAL outbox.enqueue(CASE WHEN i % 5 = 0 THEN 'WITHDRAW' ELSE 'DEPOSIT' END,
	'u' || (i % 20), 'r' || i, s.a[1 + i % cardinality(s.a)],
	json_build_object('account', c.a[1 + i % 20],
		'amount', CASE WHEN i % 5 = 0 THEN '1' ELSE '100' END)::jsonb,
	CASE WHEN i % 11 = 0 AND i % 5 <> 0 THEN 'LOW' END) e;
EOF
}

# load_start N RATE [BATCH]: enqueue ops 1..N at about RATE ops/s in the
# background; $T/acked gets the highest op committed. Failures are retried.
load_start() {
	local n=$1 rate=$2 batch=${3:-10}
	LOAD_N=$n
	echo 0 >"$T/acked"
	(
		trap 'exit 0' TERM
		i=1
		while ((i <= n)); do
			j=$((i + batch - 1))
			((j > n)) && j=$n
			t0=$(date +%s%N)
			if load_sql "$i" "$j" | psql -X -q -At -d "$ADMIN_URL" -v ON_ERROR_STOP=1 \
				>/dev/null 2>>"$T/load.log"; then
				echo "$j" >"$T/acked"
				# pace: (ops in the batch)/rate seconds per batch, minus what it took
				left=$(((j - i + 1) * 1000000000 / rate - ($(date +%s%N) - t0)))
				i=$((j + 1))
				((left > 0)) && sleep "$(awk -v n="$left" 'BEGIN{printf "%.3f", n/1e9}')"
			else
				echo "$(date +%T) batch $i..$j failed, retrying" >>"$T/load.log"
				sleep 0.5
			fi
		done
	) &
	LOAD_PID=$!
}

load_wait() { # load_wait SECONDS: until every op is committed
	wait_for "$1" "the load to commit all $LOAD_N ops" load_done
	wait "$LOAD_PID" 2>/dev/null || true
	LOAD_PID=
}

load_done() { (($(cat "$T/acked") >= LOAD_N)); }

load_stop() {
	[[ -n ${LOAD_PID:-} ]] && kill -TERM "$LOAD_PID" 2>/dev/null && wait "$LOAD_PID" 2>/dev/null
	LOAD_PID=
}

acked() { cat "$T/acked"; }

confirmed() { sql -c "SELECT count(*) FROM outbox.ops WHERE status = 'CONFIRMED'" 2>/dev/null; }
open_ops() { sql -c "SELECT count(*) FROM outbox.ops WHERE status IN ('PENDING','SUBMITTED')"; }
all_terminal() { [[ $(open_ops 2>/dev/null) == 0 ]]; }

# wait_confirmed N SECONDS: at least N ops CONFIRMED (mid-load checkpoints).
wait_confirmed() {
	wait_for "$2" "$1 ops confirmed" bash -c "[[ \$(psql -X -At -d '$ADMIN_URL' -c \"SELECT count(*) >= $1 FROM outbox.ops WHERE status = 'CONFIRMED'\") == t ]]"
}

# ---------------------------------------------------------------- verdict
# held_ok: HELD is an acceptable end for an op whose transaction ran (the
# sim-restart scenario, where the chain's history is gone); otherwise every op
# must end CONFIRMED.
HELD_OK=${HELD_OK:-0}
# /debug/executions of an earlier stellar-sim life (the sim-restart scenario),
# merged in: its by_ref counts added, its max_pending_per_account kept
EXECUTIONS_EXTRA='{"by_ref":{},"max_pending_per_account":{}}' 

summary_line() { # summary_line OK REASON
	jq -nc --arg s "$CHAOS_NAME" --argjson ok "$1" --arg why "${2:-}" \
		--argjson sum "${SUMMARY:-{\}}" --argjson x "$EXTRA_JSON" \
		--argjson v "$(printf '%s\n' "${VIOLATIONS[@]}" | jq -R . | jq -sc 'map(select(length>0))')" \
		--argjson secs "$((($(now_ms) - T0) / 1000))" \
		'{scenario: $s, ok: $ok} + $sum + $x + {seconds: $secs, violations: ($v + (if $why != "" then [$why] else [] end))}'
}

# verdict [TIMEOUT_S]: wait for every op to end, check, print, exit.
verdict() {
	local timeout=${1:-300} n states ex ops res audit_json audit_rc=0 unpub total_events
	n=$LOAD_N
	wait_for "$timeout" "every op to reach a final state" all_terminal
	states=$(sql -c "SELECT coalesce(json_object_agg(status, n), '{}') FROM
		(SELECT status, count(*) n FROM outbox.ops GROUP BY status) s")
	ex=$(sim_get /debug/executions) || die "cannot read /debug/executions"
	ops=$(sql -c "SELECT coalesce(json_agg(json_build_array(
		encode(sha256(convert_to(idempotency_key, 'UTF8')), 'hex'), status)), '[]') FROM outbox.ops")
	# ops of the load (keys r1..rN) that are missing from outbox.ops
	local missing
	missing=$(sql -c "SELECT count(*) FROM generate_series(1, $n) i WHERE NOT EXISTS
		(SELECT 1 FROM outbox.ops o WHERE o.business_record_id = 'r' || i)")
	# (through files: a long run's documents exceed what one argument may hold)
	printf '%s' "$ex" >"$T/executions.json"
	printf '%s' "$EXECUTIONS_EXTRA" >"$T/executions_before.json"
	printf '%s' "$ops" >"$T/ops.json"
	res=$(jq -nc --slurpfile exs "$T/executions.json" --slurpfile prevs "$T/executions_before.json" \
		--slurpfile opss "$T/ops.json" --argjson held_ok "$HELD_OK" '
		$exs[0] as $ex | $prevs[0] as $prev | $opss[0] as $ops
		| ($ex.by_ref) as $now
		| ([$prev.by_ref, $now] | map(to_entries) | add | group_by(.key)
			| map({key: .[0].key, value: (map(.value) | add)}) | from_entries) as $by
		| ($ops | map({key: .[0], value: .[1]}) | from_entries) as $st
		| {
			duplicates: ([$by[] | select(. > 1)] | length),
			unknown_executions: ([$by | keys[] | select($st[.] == null)] | length),
			confirmed_not_executed: ([$ops[] | select(.[1] == "CONFIRMED" and (($by[.[0]] // 0) == 0))] | length),
			executed_not_confirmed: ([$ops[] | select(.[1] != "CONFIRMED" and (.[1] != "HELD" or $held_ok == 0) and (($by[.[0]] // 0) > 0))] | length),
			held_executed: ([$ops[] | select(.[1] == "HELD" and (($by[.[0]] // 0) > 0))] | length),
			max_concurrent_per_account: ([$ex.max_pending_per_account[], $prev.max_pending_per_account[]] | max // 0)
		}')
	# events: every row published and on the topic, and the topic audited clean
	wait_until 120 bash -c \
		"[[ \$(psql -X -At -d '$ADMIN_URL' -c 'SELECT count(*) FROM outbox.events_not_published') == 0 ]]" ||
		true
	unpub=$(sql -c "SELECT count(*) FROM outbox.events_not_published")
	total_events=$(sql -c "SELECT count(*) FROM outbox.events")
	audit_json=$(OUTBOX_DATABASE_URL=$ADMIN_URL "$B/outboxctl" audit --verify --json \
		--brokers "$KAFKA" --topic "$TOPIC" 2>"$T/audit.err") || audit_rc=$?
	if ! jq -e . >/dev/null 2>&1 <<<"$audit_json"; then
		audit_json='{}'
		violation "outboxctl audit failed (exit $audit_rc): $(head -c 300 "$T/audit.err")"
	fi
	local on_topic events_missing
	on_topic=$(jq '.events // 0' <<<"$audit_json")
	events_missing=$((total_events - on_topic))
	((events_missing < 0)) && events_missing=0
	SUMMARY=$(jq -nc --argjson n "$n" --argjson states "$states" --argjson r "$res" \
		--argjson missing "$missing" --argjson em "$events_missing" --argjson up "$unpub" \
		--argjson te "$total_events" --argjson a "$audit_json" --argjson rc "$audit_rc" '
		{ops_total: $n, states: $states, duplicates: $r.duplicates,
		 max_concurrent_per_account: $r.max_concurrent_per_account,
		 lost: ($missing + $r.confirmed_not_executed),
		 events_missing: $em, events_total: $te, events_unpublished: $up,
		 audit: {rc: $rc, gaps: ($a.gaps // null), illegal: ($a.illegal // null),
		         broken: ($a.broken // null), mismatches: ($a.verify.mismatches // null),
		         first_problem: ($a.first_problem // $a.verify.first_problem // "")},
		 held_executed: $r.held_executed,
		 unknown_executions: $r.unknown_executions,
		 executed_not_confirmed: $r.executed_not_confirmed}')
	# the violations
	local v
	v=$(jq -r --argjson held_ok "$HELD_OK" --argjson n "$n" '
		(if .duplicates > 0 then "\(.duplicates) ops executed more than once" else empty end),
		(if .max_concurrent_per_account > 1 then "an account had \(.max_concurrent_per_account) transactions pending at once" else empty end),
		(if .lost > 0 then "\(.lost) ops lost (missing, or CONFIRMED without an execution)" else empty end),
		(if .unknown_executions > 0 then "\(.unknown_executions) executions of no known op" else empty end),
		(if .executed_not_confirmed > 0 then "\(.executed_not_confirmed) ops executed but not CONFIRMED" else empty end),
		(if (.states | to_entries | map(select(.key != "CONFIRMED" and (.key != "HELD" or $held_ok == 0))) | length) > 0
		 then "final states other than CONFIRMED\(if $held_ok == 1 then "/HELD" else "" end): \(.states)" else empty end),
		(if ((.states | [.[]] | add) // 0) != $n then "\((.states | [.[]] | add) // 0) ops in outbox.ops, \($n) enqueued" else empty end),
		(if .events_missing > 0 then "\(.events_missing) events missing on Kafka" else empty end),
		(if .events_unpublished > 0 then "\(.events_unpublished) events never published" else empty end),
		(if .audit.rc != 0 then "outboxctl audit --verify exit \(.audit.rc): \(.audit.first_problem)" else empty end)
		' <<<"$SUMMARY")
	while IFS= read -r line; do
		[[ -n $line ]] && violation "$line"
	done <<<"$v"
	if ((${#VIOLATIONS[@]})); then
		summary_line false
		exit 1
	fi
	summary_line true
}

# log_count PATTERN: lines of outboxd's log matching an extended regex.
log_count() { grep -cE "$1" "$T/outboxd.log" || true; }

# healthy_or_degraded: the segment exists and outboxctl can read it (exit 0 or
# 1); 2 means no instance.
healthy_or_degraded() {
	local rc=0
	ctl stats >/dev/null 2>&1 || rc=$?
	((rc != 2))
}
