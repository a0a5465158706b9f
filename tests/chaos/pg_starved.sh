#!/usr/bin/env bash
# tests/chaos/pg_starved.sh - PostgreSQL refusing outboxd's connections, then
# answering slowly, under load.
#
# outboxd connects as an ordinary role (DB_OWNER) to a private cluster with
# max_connections=40 (3 of them reserved for superusers; the scenario's load
# and checks connect as the superuser, so they go on).
#
#   refused: outboxd's processes are paused (SIGSTOP: the scenario needs a
#     few seconds to fill the slots, so the watchdog's timeout is raised to
#     60 s here), their sessions terminated, and another client
#     ("hogs", plain psql sessions of the same role) takes every slot left;
#     outboxd resumes, finds its connections gone and every reconnect refused
#     ("too many clients already"). It must wait: no crash, no restart of a
#     child, no spinning, at most one warning per connection for the episode,
#     and carry on once the hogs leave.
#   locked: another session holds ACCESS EXCLUSIVE on outbox.ops for a while:
#     every statement of outboxd on it (and every enqueue) waits. Heartbeats
#     must go on (the roles never block on PostgreSQL: the oldest heartbeat
#     is sampled through the episode and must stay under 3 s), nothing spins.
#   timed out: the same lock, with statement_timeout = 1 s for outboxd's role
#     (sessions reconnected to take it): its statements fail instead of
#     waiting, and it must retry without losing or repeating anything.
#
# The verdict: every op CONFIRMED once, nothing lost, every event on Kafka.
. "$(dirname "$0")/lib.sh"
chaos_init pg_starved

N=${CHAOS_OPS:-900}
RATE=${CHAOS_RATE:-30}
SPIN_MAX=${CHAOS_SPIN_MAX_PCT:-10}
HOLD_S=${CHAOS_HOLD_S:-8}
DB_OWNER=outboxd_app
PG_MAX_CONN=40
# outboxd's connections: 2 workers x (6 + relay); the oracle's follower,
# relay, archiver, lanes vacuum and lane watcher; the gateway's control
# connection and 3 for API calls
PG_CONNS_MAX=$((2 * 7 + 5 + 4))

pg_start "superuser_reserved_connections=3"
db_make
kafka_topic
sim_start --ledger-ms 300 --ledger-capacity 200
keys_make 40
fund
outboxd_start OUTBOX_HEARTBEAT_TIMEOUT_MS=60000
mapfile -t pids_before < <(child_pids)
load_start "$N" "$RATE"
step=$((N / 6))

group() { pgrep -g "$OUTBOXD_PID"; }
warns() { log_count 'level=warn.*postgresql (connect failed|connection lost)'; }
terminate_outboxd() {
	sql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE usename = '$DB_OWNER' AND application_name LIKE 'outboxd%'" >/dev/null
}
# episode NAME SPIN WARNS: the figures of one episode
episodes='[]'
episode() {
	episodes=$(jq -c --arg n "$1" --argjson s "$2" --argjson w "$3" --argjson c "$(confirmed)" \
		'. + [{episode: $n, max_cpu_pct: $s, warn_lines: $w, confirmed_after: $c}]' <<<"$episodes")
}

# ---- refused
wait_confirmed "$step" 300
w0=$(warns)
kill -STOP $(group)
terminate_outboxd
wait_for 30 "outboxd's sessions to end" bash -c "[[ \$(psql -X -At -d '$ADMIN_URL' -c \"SELECT count(*) FROM pg_stat_activity WHERE usename = '$DB_OWNER'\") == 0 ]]"
hogs=()
hog() {
	psql -X -q -d "$DB_URL" -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
	hogs+=($!)
}
free=$((PG_MAX_CONN - 3 - $(sql -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")))
for _ in $(seq "$free"); do hog; done
# the slots are shared with the scenario's own superuser sessions (the load),
# so the condition is the refusal itself: one more hog while it is accepted
end=$(($(date +%s) + 60))
while psql -X -q -d "$DB_URL" -c "SELECT 1" >/dev/null 2>&1; do
	(($(date +%s) < end)) || die "$DB_OWNER's connections are still accepted after 60 s of hogs"
	hog
	sleep 0.3
done
kill -CONT $(group)
log "refused: ${#hogs[@]} hogs started, every slot taken"
wait_until 30 grep -qE 'level=warn.*(too many clients|remaining connection slots are reserved)' "$T/outboxd.log" ||
	violation "no warning says the server refuses connections"
spin=$(cpu_share "$HOLD_S" $(group))
((spin <= SPIN_MAX)) || violation "a process used ${spin}% of a core while refused"
kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited while refused"
# (a backend in pg_sleep does not notice its client is gone: end them in the server)
sql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	WHERE usename = '$DB_OWNER' AND application_name = 'psql'" >/dev/null
wait "${hogs[@]}" 2>/dev/null || true
c=$(confirmed)
wait_confirmed $((c + step / 2)) 300
w=$(($(warns) - w0))
# one per connection for its loss, one for the refusal that follows
((w <= 2 * PG_CONNS_MAX)) || violation "$w warnings for one refusal episode (at most 2 per connection, $PG_CONNS_MAX connections)"
episode refused "$spin" "$w"

# ---- locked, then timed out
lock_hold() { # lock_hold SECONDS: ACCESS EXCLUSIVE on outbox.ops in another session
	psql -X -q -d "$ADMIN_URL" -c "BEGIN; LOCK TABLE outbox.ops IN ACCESS EXCLUSIVE MODE;
		SELECT pg_sleep($1); COMMIT;" >/dev/null 2>&1 &
	LOCK_PID=$!
	wait_for 30 "the lock" bash -c "[[ \$(psql -X -At -d '$ADMIN_URL' -c \"SELECT count(*) FROM pg_locks
		WHERE relation = 'outbox.ops'::regclass AND mode = 'AccessExclusiveLock' AND granted\") -ge 1 ]]"
}
for mode in locked timed_out; do
	if [[ $mode == timed_out ]]; then
		sql -c "ALTER ROLE $DB_OWNER SET statement_timeout = '1s'"
		terminate_outboxd # its sessions come back with the setting
		c=$(confirmed)
		wait_confirmed $((c + step / 4)) 300
	fi
	w0=$(warns)
	lock_hold "$HOLD_S"
	log "$mode: outbox.ops locked for ${HOLD_S}s"
	hb=0
	for _ in 1 2 3 4; do
		a=$(ctl stats --json | jq '[.processes[] | select(.role != "supervisor") | .heartbeat_age_ms] | max')
		((a > hb)) && hb=$a
		sleep 0.5
	done
	((hb < 3000)) || violation "a heartbeat was ${hb} ms old while outbox.ops was locked ($mode): a role blocked"
	spin=$(cpu_share $((HOLD_S - 4)) $(group))
	((spin <= SPIN_MAX)) || violation "a process used ${spin}% of a core while outbox.ops was locked ($mode)"
	wait "$LOCK_PID" 2>/dev/null || true
	kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited ($mode)"
	c=$(confirmed)
	wait_confirmed $((c + step / 2)) 300
	episode "$mode" "$spin" "$(($(warns) - w0))"
	episodes=$(jq -c --argjson h "$hb" '.[-1].max_heartbeat_age_ms = $h' <<<"$episodes")
done
sql -c "ALTER ROLE $DB_OWNER RESET statement_timeout"
extra episodes "$episodes"
extra statement_timeout_log_lines "$(log_count 'statement timeout')"

load_wait 600
wait_for 600 "every op to reach a final state" all_terminal
mapfile -t pids_after < <(child_pids)
[[ ${pids_before[*]} == "${pids_after[*]}" ]] ||
	violation "children changed: before ${pids_before[*]}, after ${pids_after[*]}"
outboxd_stop
verdict 60
