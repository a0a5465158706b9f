#!/usr/bin/env bash
# tests/demo/quick.sh DEMO - runs `DEMO --quick` (ops/demo.sh) and checks its
# output, so the README's first screen stays true: exit 0; "all N ops
# terminal"; one CONFIRMED or FAILED line per op in the exactly-once table,
# each executed once if CONFIRMED and never if FAILED; the exactly-once
# verdict counting those same ops; a clean `outboxctl audit --verify`;
# "demo: OK".
set -uo pipefail
out=$("$1" --quick 2>&1)
rc=$?
printf '%s\n' "$out"
fail() {
	echo "demo test: $*"
	exit 1
}
((rc == 0)) || fail "demo.sh --quick exited $rc"
n=$(sed -n 's/^ *all \([0-9][0-9]*\) ops terminal$/\1/p' <<<"$out")
[[ -n $n ]] || fail 'no "all N ops terminal" line'
t=$(grep -cE '^ +op [0-9]+ +(CONFIRMED|FAILED) .* executed [01]$' <<<"$out")
((t == n)) || fail "$t terminal ops in the executions table, want $n"
bad=$(grep -E '^ +op [0-9]+ +' <<<"$out" | grep -E 'CONFIRMED .* executed [^1]$|FAILED .* executed [^0]$')
[[ -z $bad ]] || fail "executions contradict the outcome: $bad"
c=$(grep -cE '^ +op [0-9]+ +CONFIRMED ' <<<"$out")
grep -qE "^ *exactly once: $c confirmed ops, $c executions, nothing else; at most 1 tx in flight per signer$" <<<"$out" ||
	fail "no exactly-once verdict for the $c confirmed ops"
grep -q '^ *audit: clean$' <<<"$out" || fail 'no clean audit of the events on Kafka'
grep -q '^demo: OK in ' <<<"$out" || fail 'no "demo: OK" line'
echo "demo test: ok ($n ops terminal, $c confirmed, each executed once)"
