#!/usr/bin/env bash
# tests/chaos/supervisor_kill.sh - the supervisor SIGKILLed mid-load, twice.
#
# Each time: the supervisor alone gets SIGKILL. Its children must notice
# (PR_SET_PDEATHSIG's SIGTERM, EOF on the death pipe, getppid(): see
# supervisor/README.md), drain and exit on their own - the scenario waits for
# the process group to empty and fails if it does not. Then a new outboxd
# starts, as a service manager would start it, with the same instance name:
# it must replace the dead one's segment, take the leases over, reconcile
# what was in flight and finish the work.
#
# The verdict: every op CONFIRMED exactly once, at most one transaction
# pending per account, nothing lost, every event on Kafka.
. "$(dirname "$0")/lib.sh"
chaos_init supervisor_kill

N=${CHAOS_OPS:-900}
RATE=${CHAOS_RATE:-30}

pg_start
db_make
kafka_topic
sim_start --ledger-ms 300 --ledger-capacity 200
keys_make 40
fund
outboxd_start
load_start "$N" "$RATE"
kills='[]'
for round in 1 2; do
	wait_confirmed $((round * N / 4)) 300
	old=$OUTBOXD_PID
	children=$(pgrep -g "$old" | grep -vx "$old" | wc -l)
	t0=$(now_ms)
	kill -KILL "$old"
	wait "$old" 2>/dev/null || true
	log "supervisor $old killed ($children children)"
	# the children drain and exit by themselves
	wait_for 60 "the children of the killed supervisor to exit" bash -c "! pgrep -g $old >/dev/null"
	gone_ms=$(($(now_ms) - t0))
	outboxd_start
	wait_confirmed $(($(confirmed) + N / 10)) 300 # the new instance works
	kills=$(jq -c --argjson r "$round" --argjson c "$children" --argjson g "$gone_ms" \
		'. + [{round: $r, children: $c, children_gone_ms: $g}]' <<<"$kills")
done
extra kills "$kills"
extra stale_segment_log_lines "$(log_count 'stale segment|segment.*(stale|replac)')"
load_wait 600
wait_for 600 "every op to reach a final state" all_terminal
outboxd_stop
verdict 60
