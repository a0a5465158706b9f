# shellcheck shell=bash
# ops/demo/finish.sh - sourced by ops/demo.sh: the checks that end both
# demos (exactly once against the sim, the events on Kafka) and the stop.

# exactly_once [per-op]: every CONFIRMED op executed exactly once in the
# sim's vault (by op_ref = sha256(idempotency key)), every FAILED, PENDING or
# CANCELLED one never, a HELD one at most once, and nothing executed that no
# op asked for. One join in PostgreSQL, whatever the number of ops.
exactly_once() {
	say "stellar-sim /debug/executions: vault calls that executed, by op_ref = sha256(idempotency key)"
	curl -fsS "$SIM/debug/executions" >"$TMP/executions.json" || die "cannot read $SIM/debug/executions"
	jq -r '.by_ref | to_entries[] | "\(.key)\t\(.value)"' "$TMP/executions.json" >"$TMP/executions.tsv" ||
		die "cannot parse $SIM/debug/executions"
	local out
	# An unquoted here-document: only $TMP is expanded (psql's \copy reads the file).
	out=$(sql -v per_op="${1:-}" <<EOF
CREATE TEMP TABLE ex (ref text PRIMARY KEY, n integer NOT NULL);
\copy ex FROM '$TMP/executions.tsv'
CREATE TEMP VIEW v AS SELECT o.*, coalesce(ex.n, 0) AS n
	FROM (SELECT id, status, idempotency_key AS key,
		encode(sha256(convert_to(idempotency_key, 'UTF8')), 'hex') AS ref FROM outbox.ops) o
	LEFT JOIN ex USING (ref);
SELECT 'op', id, status, key, ref, n FROM v WHERE :'per_op' = 'per-op' ORDER BY id;
SELECT 'bad', id, status, key, ref, n FROM v
	WHERE n <> CASE status WHEN 'CONFIRMED' THEN 1 WHEN 'HELD' THEN least(n, 1) ELSE 0 END ORDER BY id LIMIT 5;
SELECT 'orphan', count(*) FROM ex WHERE ref NOT IN (SELECT ref FROM v);
SELECT 'sum', count(*) FILTER (WHERE status = 'CONFIRMED'), (SELECT coalesce(sum(n), 0) FROM ex) FROM v;
EOF
	) || die "the exactly-once check could not run"
	local tag a b c d e bad=0 orphans=0 confirmed=0 executed=0
	while IFS='|' read -r tag a b c d e; do
		case $tag in
		op) printf '   op %-2s %-9s %-42s op_ref %s..  executed %s\n' "$a" "$b" "$c" "${d:0:12}" "$e" ;;
		bad) info "VIOLATION: op $a $b ($c) executed $e times" && bad=1 ;;
		orphan) orphans=$a ;;
		sum) confirmed=$a executed=$b ;;
		esac
	done <<<"$out"
	((bad == 0)) || die "exactly once is violated (above)"
	((orphans == 0)) || die "the sim executed $orphans op_refs that belong to no op"
	local maxp
	maxp=$(jq '[.max_pending_per_account[]] | max // 0' "$TMP/executions.json")
	((maxp <= 1)) || die "a signer had $maxp transactions in flight at once"
	info "exactly once: $confirmed confirmed ops, $executed executions, nothing else; at most $maxp tx in flight per signer"
}

kafka_audit() {
	[[ -n $KAFKA ]] || return 0
	say "lifecycle events on Kafka: every row of outbox.events, checked by outboxctl audit --verify"
	local left
	for _ in $(seq 600); do
		left=$(sql -c "SELECT count(*) FROM outbox.events_not_published")
		((left == 0)) && break
		sleep 0.1
	done
	((left == 0)) || die "$left events still not published to Kafka after 60 s"
	info "$(sql -c "SELECT count(*) FROM outbox.events") events published (each role relays the chains it owns)"
	local audit_rc=0
	"$B/outboxctl" audit --verify --brokers "$KAFKA" --topic "$TOPIC" >"$TMP/audit.txt" 2>&1 || audit_rc=$?
	sed 's/^/   /' "$TMP/audit.txt"
	((audit_rc == 0)) || die "outboxctl audit found problems (exit $audit_rc)"
}

stop_all() {
	say "stopping: SIGTERM to outboxd (drain), then stellar-sim"
	kill -TERM "$OUTBOXD_PID"
	for _ in $(seq 150); do
		kill -0 "$OUTBOXD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$OUTBOXD_PID" 2>/dev/null && die "outboxd did not exit within 15 s of SIGTERM"
	local rc=0
	wait "$OUTBOXD_PID" || rc=$?
	OUTBOXD_PID=""
	((rc == 0)) || die "outboxd exited with status $rc after SIGTERM"
	[[ -e /dev/shm/outboxd-$INSTANCE ]] && die "outboxd left its segment /dev/shm/outboxd-$INSTANCE"
	info "outboxd drained and exited 0"
	kill -TERM "$SIM_PID"
	rc=0
	wait "$SIM_PID" || rc=$?
	SIM_PID=""
	((rc == 0)) || die "stellar-sim exited with status $rc"
	info "stellar-sim stopped; database $DB and $TMP are removed on exit"
}
