#!/usr/bin/env bash
# tests/demo/load.sh DEMO - runs the load demo briefly (`DEMO --duration 15
# --rate 4`: the driver, the fault scenario, the report) and checks its
# summary: exit 0; progress lines; every fault announced and the killed
# worker restarted; every op settled, none in another state than CONFIRMED
# or FAILED and the FAILED ones exactly the overdrafts; every business row
# agreeing with its op; every confirmed op executed exactly once; a clean
# `outboxctl audit --verify`; the charts; "demo: OK".
set -uo pipefail
out=$("$1" --duration 15 --rate 4 2>&1)
rc=$?
printf '%s\n' "$out"
fail() {
	echo "demo load test: $*"
	exit 1
}
need() { grep -qE "$1" <<<"$out" || fail "no line matching /$1/ ($2)"; }
((rc == 0)) || fail "demo.sh exited $rc"
need '^ +[0-9]+s +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ ' 'a progress line'
need '>> .*fault: the Stellar RPC answers' 'RPC faults injected'
need '>> .*fault: worker 1 \(pid [0-9]+\) SIGKILLed' 'a worker killed'
need '>> .*the supervisor restarted worker 1 as pid [0-9]+' 'the worker restarted'
need '>> .*congestion: [0-9]+ competing transactions' 'congestion'
need '>> .*congestion over' 'congestion ended'
need '>> .*fault: two RPC nodes' 'lagging RPC nodes'
need '^ +every op settled ' 'every op settled'
total=$(sed -nE 's/^ +total +([0-9]+) +([0-9]+) +([0-9]+)$/\1 \2 \3/p' <<<"$out")
[[ -n $total ]] || fail 'no total row in the state table'
read -r confirmed failed other <<<"$total"
((other == 0)) || fail "$other ops ended neither CONFIRMED nor FAILED"
((confirmed > 0)) || fail 'no op confirmed'
need "^ +the $failed FAILED ops are exactly the overdrafts" 'FAILED = the overdrafts'
need 'each one agrees with its op$' 'business rows mirror their ops'
need "^ +exactly once: $confirmed confirmed ops, $confirmed executions, nothing else; at most 1 tx in flight per signer$" \
	'exactly once'
need '^ +audit: clean$' 'a clean audit of the events on Kafka'
need 'confirmed ops per second, over the run' 'the throughput chart'
need 'latency of the ops enqueued each second' 'the latency chart'
need '^demo: OK in ' '"demo: OK"'
echo "demo load test: ok ($confirmed confirmed, $failed failed as asked, each executed once)"
