#!/usr/bin/env bash
# tests/chaos/run.sh [SCENARIO...] - the chaos scenarios, full size, one after
# the other (default: every scenario but the soak, which has its own command:
# tests/chaos/soak.sh --minutes N).
#
#   OUTBOX_BUILD_DIR       the build tree (default: build)
#   OUTBOX_KAFKA_BROKERS   the broker for the events; unset: the one ops/kafka.sh
#                          runs on 127.0.0.1:9092, else one started here (on a
#                          free port, in a temporary directory) and stopped at
#                          the end
#
# Each scenario prints one JSON line (tests/chaos/README.md explains them);
# its stderr goes to $OUTBOX_CHAOS_LOGS/<scenario>.log (default: a temporary
# directory, kept and named at the end when something failed). The last line
# is a summary; the exit status is 1 when any scenario failed. Needs root (the
# private PostgreSQL clusters run as the postgres user through runuser), or a
# user that may run initdb and postgres itself.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export OUTBOX_BUILD_DIR=${OUTBOX_BUILD_DIR:-$ROOT/build}
ALL=(keys_file pg_restart pg_starved sim_restart supervisor_kill hostile_rpc secrets backlog)
SCENARIOS=("$@")
((${#SCENARIOS[@]})) || SCENARIOS=("${ALL[@]}")
for s in "${SCENARIOS[@]}"; do
	[[ -x tests/chaos/$s.sh ]] || {
		echo "run.sh: no scenario '$s' (have: ${ALL[*]} soak)" >&2
		exit 2
	}
done
LOGS=${OUTBOX_CHAOS_LOGS:-$(mktemp -d /tmp/outboxd-chaos-logs.XXXXXX)}
mkdir -p "$LOGS"

KAFKA_STARTED=""
cleanup() {
	[[ -n $KAFKA_STARTED ]] &&
		bash ops/kafka.sh stop --port "$KAFKA_STARTED" --data "$LOGS/kafka" >/dev/null 2>&1
}
trap cleanup EXIT
if [[ -z ${OUTBOX_KAFKA_BROKERS:-} ]]; then
	if bash ops/kafka.sh status >/dev/null 2>&1; then
		export OUTBOX_KAFKA_BROKERS=127.0.0.1:9092
	else
		port=9592
		while [[ -n $(ss -Hltn "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null) ]]; do
			port=$((port + 100))
		done
		echo "run.sh: starting a Kafka broker on 127.0.0.1:$port (ops/kafka.sh)" >&2
		bash ops/kafka.sh start --port "$port" --data "$LOGS/kafka" >"$LOGS/kafka.log" 2>&1 || {
			tail -20 "$LOGS/kafka.log" >&2
			echo "run.sh: the Kafka broker did not start" >&2
			exit 1
		}
		KAFKA_STARTED=$port
		export OUTBOX_KAFKA_BROKERS=127.0.0.1:$port
	fi
fi

failed=()
start=$SECONDS
for s in "${SCENARIOS[@]}"; do
	echo "run.sh: $s ..." >&2
	line=$(bash "tests/chaos/$s.sh" 2>"$LOGS/$s.log")
	rc=$?
	printf '%s\n' "${line:-{\"scenario\":\"$s\",\"ok\":false,\"violations\":[\"no summary line (exit $rc)\"]\}}"
	((rc == 0)) || failed+=("$s")
done
jq -nc --argjson n "${#SCENARIOS[@]}" --arg f "${failed[*]}" --argjson secs "$((SECONDS - start))" \
	--arg logs "$LOGS" '{chaos: "summary", scenarios: $n, failed: ($f | split(" ") | map(select(. != ""))),
	seconds: $secs, logs: (if $f == "" then null else $logs end)}'
if ((${#failed[@]})); then
	exit 1
fi
[[ -n ${OUTBOX_CHAOS_LOGS:-} ]] || rm -rf "$LOGS"
