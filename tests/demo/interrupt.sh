#!/usr/bin/env bash
# tests/demo/interrupt.sh DEMO - Ctrl-C stops everything the demo started.
#
# Runs `DEMO --duration 60 --rate 4` in a session of its own (a terminal's
# foreground process group), waits until its fault scenario is under way
# (every kind of process it starts is then running), checks that processes
# carrying its OUTBOX_DEMO_RUN tag exist, sends SIGINT to the whole group as
# Ctrl-C does, and checks: exit status 130 and "demo: interrupted"; no
# process with the tag left (outboxd and its children, stellar-sim, the load
# driver, the scenario and its sleep, a Kafka broker of its own); its
# database dropped; its shared-memory segment and its directory gone.
# Deadlines are generous (a busy machine); nothing asserts a duration.
set -uo pipefail
demo=$1
tag=outboxd-demo-test-$$-$RANDOM
log=$(mktemp /tmp/demo-interrupt.XXXXXX)
# tagged: pids whose environment carries OUTBOX_DEMO_RUN=$tag
tagged() {
	local e
	for e in /proc/[0-9]*/environ; do
		{ tr '\0' '\n' <"$e" | grep -qxF "OUTBOX_DEMO_RUN=$tag"; } 2>/dev/null && echo "${e//[^0-9]/}"
	done
}

# Failing, it still stops whatever of the run is left: exactly the tagged pids.
fail() {
	echo "demo interrupt test: $*"
	echo "--- demo output"
	cat "$log"
	local left
	left=$(tagged)
	# shellcheck disable=SC2086 # one pid a word
	[[ -n $left ]] && kill -KILL $left 2>/dev/null
	rm -f "$log"
	exit 1
}

# A background job of a non-interactive shell starts with SIGINT ignored, and
# bash cannot trap a signal ignored on entry: perl puts the default back, as
# a terminal's shell would have it.
OUTBOX_DEMO_RUN=$tag perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die "exec: $!\n"' \
	setsid "$demo" --duration 60 --rate 4 >"$log" 2>&1 &
pid=$!
for _ in $(seq 600); do
	grep -q '^   >> ' "$log" && break
	kill -0 "$pid" 2>/dev/null || fail "the demo ended before its load ran"
	sleep 0.5
done
grep -q '^   >> ' "$log" || fail "no fault announced within 300 s"
before=$(tagged | wc -l)
((before >= 4)) || fail "only $before tagged processes while the load runs: the tag does not reach them"
db=$(sed -n 's/^== PostgreSQL: fresh database \(outboxd_demo_[0-9]*\)$/\1/p' "$log")
dir=$(sed -n 's|^== outboxd: .*(log: \(/tmp/outboxd-demo\.[A-Za-z0-9]*\)/outboxd.log)$|\1|p' "$log")
[[ -n $db && -n $dir ]] || fail "the demo did not name its database and directory"

kill -INT -- "-$pid"
rc=-1
for _ in $(seq 120); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.5
done
kill -0 "$pid" 2>/dev/null && fail "still running 60 s after SIGINT"
wait "$pid"
rc=$?
((rc == 130)) || fail "exit status $rc after SIGINT, want 130"
grep -q '^demo: interrupted; stopping everything it started$' "$log" || fail "no 'demo: interrupted' line"
# a process SIGKILLed a moment ago may still be on its way out
for _ in $(seq 30); do
	left=$(tagged | tr '\n' ' ')
	[[ -z $left ]] && break
	sleep 0.5
done
[[ -z $left ]] || fail "processes left 15 s after the demo exited: $left($(ps -o pid=,args= -p "${left// /,}" 2>/dev/null | head -5))"
[[ ! -e $dir ]] || fail "$dir is still there"
[[ ! -e /dev/shm/outboxd-demo_$pid ]] || fail "the segment /dev/shm/outboxd-demo_$pid is still there"
if [[ -n ${OUTBOX_PG_BASE:-} ]]; then
	admin="$OUTBOX_PG_BASE dbname=postgres"
else
	admin=${OUTBOX_DATABASE_URL:-host=127.0.0.1 port=5432 user=postgres dbname=postgres}
fi
n=$(psql -X -At -d "$admin" -c "SELECT count(*) FROM pg_database WHERE datname = '$db'") ||
	fail "cannot ask PostgreSQL whether $db is gone"
((n == 0)) || fail "database $db is still there"
echo "demo interrupt test: ok ($before processes while running, none after SIGINT; $db, $dir and the segment gone)"
rm -f "$log"
