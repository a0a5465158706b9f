#!/usr/bin/env bash
# tests/chaos/hostile_rpc.sh - an RPC node that answers with garbage of every
# kind under load.
#
# stellar-sim's hostile answers (tests/stellar-sim/README.md, "faults") on
# every method: 64 MiB bodies, JSON nested 100 000 deep, answers cut halfway,
# answers dripped 16 bytes every 250 ms; on sendTransaction they come after
# the envelope was processed, so a spoiled answer hides a real submission -
# the case where a client that took the error for a refusal would pay twice.
# Plus the older faults (timeouts, 5xx, non-JSON) at low rates.
#
# Must hold: no process crashes or is restarted, memory stays bounded (peak
# RSS of every process, VmHWM, below CHAOS_RSS_MAX_MB), every op CONFIRMED
# exactly once after the faults are cleared, nothing lost, every event on
# Kafka.
. "$(dirname "$0")/lib.sh"
chaos_init hostile_rpc

N=${CHAOS_OPS:-600}
RATE=${CHAOS_RATE:-20}
CHAOS_S=${CHAOS_FAULT_S:-40}
RSS_MAX_MB=${CHAOS_RSS_MAX_MB:-256}

pg_start
db_make
kafka_topic
sim_start --ledger-ms 300 --ledger-capacity 200 --threads 4
keys_make 40
fund
outboxd_start
mapfile -t pids_before < <(child_pids)
load_start "$N" "$RATE"
wait_confirmed $((N / 10)) 300
sim_post /debug/faults '{"method": "*", "huge_rate": 0.03, "deep_rate": 0.03, "truncated_rate": 0.03,
	"drip_rate": 0.03, "timeout_rate": 0.01, "http_5xx_rate": 0.02, "garbage_rate": 0.02}'
sim_post /debug/faults '{"method": "sendTransaction", "huge_rate": 0.05, "deep_rate": 0.05,
	"truncated_rate": 0.1, "drip_rate": 0.05, "timeout_rate": 0.02}'
log "hostile answers for ${CHAOS_S}s"
c0=$(confirmed)
sleep "$CHAOS_S"
c1=$(confirmed)
sim_post /debug/faults '{}'
log "faults cleared ($((c1 - c0)) confirmed under them)"

peak_rss() { # the largest VmHWM (kB) of the group's processes
	local p m max=0
	for p in $(pgrep -g "$OUTBOXD_PID"); do
		m=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
		((m > max)) && max=$m
	done
	echo "$max"
}
rss=$(peak_rss)
((rss / 1024 <= RSS_MAX_MB)) || violation "a process peaked at $((rss / 1024)) MiB resident (bound $RSS_MAX_MB MiB)"

load_wait 600
wait_for 600 "every op to reach a final state" all_terminal
mapfile -t pids_after < <(child_pids)
[[ ${pids_before[*]} == "${pids_after[*]}" ]] ||
	violation "children changed (a crash or a watchdog kill): before ${pids_before[*]}, after ${pids_after[*]}"
grep -qE 'signal|crash' <(grep -E 'level=(warn|error).*(exited|killed)' "$T/outboxd.log") &&
	violation "a child exited or was killed: $(grep -m1 -E 'level=(warn|error).*(exited|killed)' "$T/outboxd.log")"
extra hostile "$(jq -nc --argjson c "$((c1 - c0))" --argjson r "$((rss / 1024))" \
	--argjson big "$(log_count 'exceeds [0-9]+ bytes')" \
	'{confirmed_under_faults: $c, peak_rss_mib: $r, too_big_log_lines: $big}')"
outboxd_stop
verdict 60
