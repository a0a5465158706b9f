# shellcheck shell=bash
# ops/demo/scenario.sh - sourced by ops/demo.sh: the faults injected while
# the load runs, at fractions of DURATION from its start (stellar-sim's
# /debug/faults, tests/stellar-sim/README.md; and a SIGKILL):
#
#   12%..22%  the RPC misbehaves: 15% HTTP 503, 5% garbage bodies, 3% never answered
#   28%       a worker is SIGKILLed; the supervisor restarts it
#   38%..68%  congestion: competing transactions fill 18 of a ledger's 20 slots (OUTBOX_DEMO_BG),
#             bidding higher every ledger: a capacity crunch with surge pricing
#   76%..86%  two RPC nodes lagging 2 and 6 ledgers behind a load balancer, and
#             sendTransaction losing 10% of the transactions it accepts
#
# Each one is printed as it happens ("   >> ...") and recorded in demo.marks
# for the report's timeline. It runs in the background; SIGTERM ends it at once
# (it waits with pause, common.sh, and stops that sleep as it goes).

SCENARIO_BG=$((10#${OUTBOX_DEMO_BG:-18})) # competing bids per ledger while congested (of LEDGER_CAPACITY)

scenario_run() {
	set +e
	trap '[[ -n $PAUSE_PID ]] && kill "$PAUSE_PID"; exit 0' TERM
	SC_T0=$(date +%s.%N)
	SC_FAIL=0
	scenario_at 0.12 && scenario_rpc_faults
	scenario_at 0.28 && scenario_kill_worker
	scenario_at 0.38 && scenario_congestion
	scenario_at 0.76 && scenario_lag
	exit $SC_FAIL
}

# scenario_at FRACTION: sleep until that fraction of DURATION has passed.
scenario_at() {
	local s
	s=$(awk -v t0="$SC_T0" -v now="$(date +%s.%N)" -v f="$1" -v d="$DURATION" \
		'BEGIN { s = t0 + f * d - now; print (s > 0 ? s : 0) }')
	pause "$s"
}

sc_say() {
	printf '   >> %4.0fs  %s\n' "$(awk -v t0="$SC_T0" -v now="$(date +%s.%N)" 'BEGIN { print now - t0 }')" "$*"
}
sc_fail() {
	echo "demo: scenario: $*" >&2
	SC_FAIL=1
}
sim_faults() {
	curl -fsS --max-time 5 -o /dev/null -X POST -H 'Content-Type: application/json' \
		--data "$1" "$SIM/debug/faults" || sc_fail "stellar-sim refused faults $1"
}
mark_start() { SC_MARK=$(sql -c "INSERT INTO demo.marks (label) VALUES ('$1') RETURNING id" | head -n1); }
mark_end() { sql -c "UPDATE demo.marks SET ended_at = clock_timestamp() WHERE id = ${SC_MARK:-0}" >/dev/null; }

scenario_rpc_faults() {
	mark_start "rpc faults"
	sim_faults '{"method": "*", "http_5xx_rate": 0.15, "garbage_rate": 0.05, "timeout_rate": 0.03}'
	sc_say "fault: the Stellar RPC answers 15% of requests with HTTP 503, 5% with garbage, 3% never"
	scenario_at 0.22
	sim_faults '{"method": "*"}'
	mark_end
	sc_say "fault over: the RPC answers normally again"
}

# worker_pid INDEX [running]: its pid from the process table (empty if none)
worker_pid() {
	"$B/outboxctl" stats --json 2>/dev/null | jq -r --argjson i "$1" --arg st "${2:-}" \
		'.processes[] | select(.role == "worker" and .index == $i and ($st == "" or .state == $st)) | .pid'
}

scenario_kill_worker() {
	local i=1 pid new t
	pid=$(worker_pid $i running)
	[[ $pid =~ ^[0-9]+$ ]] || {
		sc_fail "no running worker $i to kill"
		return
	}
	mark_start "worker killed"
	kill -KILL "$pid" || sc_fail "cannot SIGKILL worker $i (pid $pid)"
	sc_say "fault: worker $i (pid $pid) SIGKILLed mid-flight"
	t=$SECONDS
	for _ in $(seq 300); do
		new=$(worker_pid $i running)
		[[ -n $new && $new != "$pid" ]] && break
		pause 0.1
	done
	mark_end
	if [[ -n $new && $new != "$pid" ]]; then
		sc_say "the supervisor restarted worker $i as pid $new within $((SECONDS - t + 1)) s; it takes its vshards back"
	else
		sc_fail "worker $i was not restarted within 30 s"
	fi
}

scenario_congestion() {
	mark_start "congestion"
	sim_faults "{\"background_fee_load\": $SCENARIO_BG}"
	sc_say "congestion: $SCENARIO_BG competing transactions a ledger for its $LEDGER_CAPACITY slots, bidding higher every ledger"
	scenario_at 0.68
	sim_faults '{"background_fee_load": 0}'
	mark_end
	sc_say "congestion over: the competing transactions are gone"
}

scenario_lag() {
	mark_start "lagging RPC"
	sim_faults '{"ingest_lag_ledgers": 2, "ingest_lag_alt_ledgers": 6}'
	sim_faults '{"method": "sendTransaction", "blackhole_rate": 0.1}'
	sc_say "fault: two RPC nodes 2 and 6 ledgers behind a load balancer; sendTransaction loses 10% of what it accepts"
	scenario_at 0.86
	sim_faults '{"ingest_lag_ledgers": 0}'
	sim_faults '{"method": "sendTransaction"}'
	mark_end
	sc_say "fault over: one current RPC node, nothing lost"
}
