#!/usr/bin/env bash
# tests/chaos/sim_restart.sh - the Stellar RPC (stellar-sim) killed and
# restarted under load.
#
# stellar-sim keeps its chain in memory, so a restart recreates it: the
# scenario closes ledgers itself (/debug/close, one a second), stops closing,
# reads the committed state (every account's sequence number and balance, the
# vault's reserve, the latest ledger), SIGKILLs the sim - whatever was queued
# and not yet in a ledger is lost, as a node's mempool would be - keeps it
# down a few seconds, and starts a new one on the same port that continues
# the chain: the next ledger number, the same accounts and balances, close
# times still increasing. What the new sim cannot have is the old
# transactions' history: a transaction that landed just before the kill and
# whose landing no worker had seen yet can no longer be looked up, so the
# exactly-once rule must hold it (HELD, "executed, outcome unknown") rather
# than send it again. The scenario waits 2 s between the last close and the
# kill so that normally every landing was seen; HELD ops are allowed and
# counted, provided each executed exactly once.
#
# Must hold: outboxd and its children stay up (no restart) through the
# outage, no process spins while the RPC is down, work resumes, no op lost,
# none executed twice (executions of both sim lives added up), at most one
# transaction pending per account, every event on Kafka.
. "$(dirname "$0")/lib.sh"
chaos_init sim_restart

N=${CHAOS_OPS:-600}
RATE=${CHAOS_RATE:-20}
SPIN_MAX=${CHAOS_SPIN_MAX_PCT:-10}
HELD_OK=1

pg_start
db_make
kafka_topic
sim_start --ledger-ms 3600000 --ledger-capacity 200
keys_make 40
fund
closer_start 1000
outboxd_start
mapfile -t pids_before < <(child_pids)
load_start "$N" "$RATE"
wait_confirmed $((N / 4)) 300

# ---- the kill
closer_stop
sleep 2 # the workers see the last ledger's landings
state=$(sim_get /debug/state) || die "cannot read /debug/state"
EXECUTIONS_EXTRA=$(sim_get /debug/executions) || die "cannot read /debug/executions"
kill -KILL "$SIM_PID"
wait "$SIM_PID" 2>/dev/null || true
SIM_PID=
confirmed_at_kill=$(confirmed)
log "stellar-sim killed at ledger $(jq .latest_ledger <<<"$state") ($confirmed_at_kill confirmed)"
spin=$(cpu_share 5 $(pgrep -g "$OUTBOXD_PID"))
((spin <= SPIN_MAX)) || violation "a process used ${spin}% of a core while the RPC was down"
kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited while the RPC was down"

# ---- the new sim continues the chain
latest=$(jq .latest_ledger <<<"$state")
# (the accounts through --accounts: they exist before the new sim answers, as
# they would on the network; a sim that said "no such account" for a moment
# would make outboxd hold every op in flight, rightly)
jq -c '{accounts: [.accounts | to_entries[] | {id: .key, seq: .value.seq, balance: .value.balance}]}' \
	<<<"$state" >"$T/accounts2.json"
sim_start --ledger-ms 3600000 --ledger-capacity 200 --start-ledger $((latest + 1)) \
	--vault-reserve "$(jq -r .vault_reserve <<<"$state")" --accounts "$T/accounts2.json"
new_close=$(sim_get /debug/state | jq .latest_close_time)
old_close=$(jq .latest_close_time <<<"$state")
((new_close > old_close)) ||
	die "the new chain's first close time $new_close is not after the old chain's $old_close"
closer_start 1000
log "stellar-sim back at ledger $((latest + 1))"
wait_confirmed $((confirmed_at_kill + N / 10)) 300 # the work flows again

load_wait 600
wait_for 600 "every op to reach a final state" all_terminal
mapfile -t pids_after < <(child_pids)
[[ ${pids_before[*]} == "${pids_after[*]}" ]] ||
	violation "children changed: before ${pids_before[*]}, after ${pids_after[*]}"
extra outage "$(jq -nc --argjson s "$spin" --argjson c "$confirmed_at_kill" --argjson l "$latest" \
	'{max_cpu_pct_while_down: $s, confirmed_at_kill: $c, killed_at_ledger: $l}')"
extra rpc_warn_lines "$(log_count 'level=warn.*(rpc|RPC|fee poll)')"
outboxd_stop
verdict 60
