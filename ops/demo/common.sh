# shellcheck shell=bash
# ops/demo/common.sh - sourced by ops/demo.sh: output helpers, the run's
# state, and the one cleanup that stops everything the demo started,
# however it ends (success, failure, Ctrl-C, SIGTERM).
#
# Every process the demo starts inherits OUTBOX_DEMO_RUN (a unique tag), so
# a test can prove that nothing of a run survives it (tests/demo.cmake).

say() { printf '\n== %s\n' "$*"; }
info() { printf '   %s\n' "$*"; }
die() {
	echo "demo: FAILED: $*" >&2
	exit 1
}
DEMO_T0=$(date +%s.%N)
elapsed() { printf '%5.1fs' "$(awk -v s="$DEMO_T0" -v n="$(date +%s.%N)" 'BEGIN{print n-s}')"; }

TMP=$(mktemp -d /tmp/outboxd-demo.XXXXXX)
INSTANCE=demo_$$
DB=outboxd_demo_$$
export OUTBOX_DEMO_RUN=${OUTBOX_DEMO_RUN:-outboxd-demo-$$-$RANDOM}
DB_CREATED=0
PG_ENSURED=0
ADMIN=""
SIM_PID=""
OUTBOXD_PID=""
KAFKA_STARTED=""
BG_PIDS=() # the load driver, the fault scenario: stopped with SIGTERM

# stop_pid PID: SIGTERM, up to 5 s, then SIGKILL; reaps it.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup_processes() {
	local p
	[[ -n $PAUSE_PID ]] && kill "$PAUSE_PID" 2>/dev/null
	for p in "${BG_PIDS[@]}"; do
		pkill -TERM -P "$p" 2>/dev/null # its children first (a curl, a psql)
		stop_pid "$p"
	done
	if [[ -n $OUTBOXD_PID ]] && kill -0 "$OUTBOXD_PID" 2>/dev/null; then
		kill -KILL -- "-$OUTBOXD_PID" 2>/dev/null # its whole process group
		wait "$OUTBOXD_PID" 2>/dev/null
		for _ in $(seq 50); do # until its children are gone too
			kill -0 -- "-$OUTBOXD_PID" 2>/dev/null || break
			sleep 0.1
		done
	fi
	[[ -n $SIM_PID ]] && stop_pid "$SIM_PID"
	rm -f "/dev/shm/outboxd-$INSTANCE"
	if [[ -n $KAFKA_STARTED ]]; then
		bash "$ROOT/ops/kafka.sh" stop --port "$KAFKA_STARTED" --data "$TMP/kafka" >/dev/null 2>&1
	fi
}

cleanup() {
	local rc=$?
	set +e
	trap '' INT TERM # a second Ctrl-C must not cut the cleanup short
	((rc == 130 || rc == 143)) && echo "demo: interrupted; stopping everything it started" >&2
	cleanup_processes
	if ((rc != 0 && rc != 130 && rc != 143)); then
		for f in outboxd.log sim.log load.err; do
			[[ -s $TMP/$f ]] || continue
			echo "--- last lines of $f" >&2
			tail -n 15 "$TMP/$f" >&2
		done
	fi
	if ((DB_CREATED)) && [[ ${OUTBOX_DEMO_KEEP_DB:-0} == 1 ]]; then
		echo "demo: kept database $DB (OUTBOX_DEMO_KEEP_DB=1): psql '$DB_URL'" >&2
	elif ((DB_CREATED)); then
		if ((PG_ENSURED)); then
			pg_drop_db "$DB"
		else
			psql -X -q -d "$ADMIN" -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1
		fi
	fi
	((PG_ENSURED)) && pg_stop
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# pause SECONDS: a sleep that a signal's trap interrupts at once (bash runs
# a trap during the wait builtin, not during a foreground command); the
# cleanup stops the sleep it leaves. Not `read -t`: a trap that exits out of
# it leaves its timer armed, and bash 5.2 crashes when that fires later.
PAUSE_PID=""
pause() {
	sleep "$1" &
	PAUSE_PID=$!
	wait "$PAUSE_PID" || true
	PAUSE_PID=""
}

sql() { psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -d "$DB_URL" "$@"; }
