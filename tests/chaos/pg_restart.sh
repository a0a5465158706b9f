#!/usr/bin/env bash
# tests/chaos/pg_restart.sh - PostgreSQL goes away under outboxd.
#
#   1. outboxd starts while its (private) PostgreSQL is down: it must stay up,
#      say clearly that the database cannot be reached, and start working
#      once the server is back - no crash, no restart of its children.
#   2. Under a steady load, the server is restarted with -m fast (sessions
#      terminated, a checkpoint) and later with -m immediate (every backend
#      killed, crash recovery on start), each time kept down a few seconds.
#      While it is down no outboxd process may spin (CPU share measured);
#      after it is back the work must flow again (progress awaited).
#   3. The verdict: every op enqueued CONFIRMED, none executed twice, at
#      most one transaction pending per account, no event missing on Kafka,
#      no child of outboxd exited, and outboxd idle afterwards.
#
# Prints one JSON line; exit 1 on any violation. CHAOS_OPS (default 1200) and
# CHAOS_RATE (ops/s, default 40) size the load.
. "$(dirname "$0")/lib.sh"
chaos_init pg_restart

N=${CHAOS_OPS:-1200}
RATE=${CHAOS_RATE:-40}
SPIN_MAX=${CHAOS_SPIN_MAX_PCT:-10} # % of one core: a waiting process measures 0-2%, a spinning one ~100%
# PostgreSQL connections of the group: per worker 6 (WORKER_PG_CONNS,
# worker/worker.h) + its relay's; the oracle's follower, relay, archiver,
# lanes vacuum and lane watcher; the gateway's control connection and its
# GW_API_CONNS (3, ops/gateway/gateway.h) for API calls
PG_CONNS_MAX=$((2 * 7 + 5 + 4))

pg_start
db_make
kafka_topic
sim_start --ledger-ms 300 --ledger-capacity 200
keys_make 40
fund

# ---- 1. start while the server is down
pg_down fast
log "PostgreSQL down; starting outboxd"
outboxd_spawn
# the supervisor never talks to PostgreSQL: it comes up; its children must
# report the database and keep trying
wait_for 60 "the segment" healthy_or_degraded
wait_for 60 "a log line about the unreachable database" \
	grep -qiE 'connect|database|postgres' "$T/outboxd.log"
sleep 3 # let a crash-looping child show itself
kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited while PostgreSQL was down"
spin=$(cpu_share 3 $(pgrep -g "$OUTBOXD_PID"))
((spin <= SPIN_MAX)) || violation "a process used ${spin}% of a core while PostgreSQL was down at start"
# grep -m1, not grep | head -1: under pipefail grep dies of SIGPIPE when head
# leaves while it still writes (six connections per worker log many lines)
down_line=$(grep -m1 -iE 'connect|database|postgres' "$T/outboxd.log" | cut -c1-300)
down_lines=$(grep -ciE 'connect|database|postgres' "$T/outboxd.log" || true)
pg_up
log "PostgreSQL up"
wait_for 60 "outboxd healthy" healthy
restarts_start=$(ctl stats --json | jq '[.processes[] | select(.role != "supervisor") | .restarts // 0] | add')
((restarts_start == 0)) || violation "children restarted $restarts_start times when started with PostgreSQL down"
extra start_while_down "$(jq -nc --arg l "$down_line" --argjson n "$down_lines" \
	--argjson r "$restarts_start" --argjson s "$spin" \
	'{first_log_line: $l, log_lines: $n, child_restarts: $r, max_cpu_pct_while_down: $s}')"

# ---- 2. restarts under load
mapfile -t pids_before < <(child_pids)
load_start "$N" "$RATE"
episodes='[]'
step=$((N / 5))
for mode in fast immediate; do
	base=$(confirmed)
	wait_confirmed $((base + step)) 240
	log "restart -m $mode (confirmed so far: $(confirmed))"
	warn0=$(log_count 'level=warn.*postgresql (connect failed|connection lost)')
	pg_down "$mode"
	spin=$(cpu_share 4 $(pgrep -g "$OUTBOXD_PID"))
	((spin <= SPIN_MAX)) || violation "a process used ${spin}% of a core while PostgreSQL was down (-m $mode)"
	kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited while PostgreSQL was down (-m $mode)"
	pg_up
	after=$(confirmed)
	wait_confirmed $((after + step / 2)) 240 # the work flows again
	# once per episode: a warning per connection for each reason its attempts
	# fail for (the session lost, refused, starting up, in recovery: 4), not
	# one per attempt (backoff from 100 ms: twice that in a few seconds)
	warns=$(($(log_count 'level=warn.*postgresql (connect failed|connection lost)') - warn0))
	((warns <= 4 * PG_CONNS_MAX)) ||
		violation "$warns PostgreSQL warnings in one -m $mode episode (at most 4 for each of $PG_CONNS_MAX connections)"
	episodes=$(jq -c --arg m "$mode" --argjson s "$spin" --argjson c "$after" --argjson w "$warns" \
		'. + [{mode: $m, max_cpu_pct_while_down: $s, confirmed_at_restart: $c, warn_lines: $w}]' <<<"$episodes")
done
extra restarts "$episodes"
load_wait 600

verdict_prepare() {
	mapfile -t pids_after < <(child_pids)
	[[ ${pids_before[*]} == "${pids_after[*]}" ]] ||
		violation "children changed: before ${pids_before[*]}, after ${pids_after[*]}"
	idle=$(cpu_share 5 $(pgrep -g "$OUTBOXD_PID"))
	((idle <= SPIN_MAX)) || violation "a process used ${idle}% of a core while idle"
	extra idle_max_cpu_pct "$idle"
	extra reconnect_log_lines "$(log_count 'reconnect|connection (lost|failed|to server)|cannot connect')"
}
wait_for 300 "every op to reach a final state" all_terminal
verdict_prepare
outboxd_stop
verdict 60
