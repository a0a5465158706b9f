#!/usr/bin/env bash
# tests/chaos/soak.sh [--minutes N] [--rate OPS_PER_S] - a long steady run
# (30 minutes by default; not part of ctest).
#
# A steady load of RATE ops/s (default 20) through outboxd + stellar-sim +
# Kafka on a private PostgreSQL for N minutes, sampled once a minute: every
# outboxd process's resident memory (VmRSS) and open descriptors, the ops
# enqueued and confirmed in that minute, the ops still open (PENDING or
# SUBMITTED: outboxd keeping up shows as a small, flat number) and the
# machine's 1-minute load average (the summary's soak.per_minute). A line per
# minute goes to stderr. The load is one psql per batch of 20: on a busy
# machine it may offer less than RATE; "enqueued" says what it offered.
#
# Fails when, between the first sample (after a minute of warm-up) and the
# last, a process's RSS grew by more than CHAOS_RSS_GROWTH_MB (default 16 MiB:
# a leak of 1 KiB per op shows within 15 minutes at 20 ops/s) or its
# descriptors by more than CHAOS_FD_GROWTH (default 4: the RPC client's
# connection pool may open a few), when a process was restarted, or on any
# exactly-once violation (the usual verdict at the end).
. "$(dirname "$0")/lib.sh"

MINUTES=30
RATE=20
while (($#)); do
	case $1 in
	--minutes)
		MINUTES=${2:-}
		shift 2 || true
		;;
	--rate)
		RATE=${2:-}
		shift 2 || true
		;;
	*)
		echo "usage: soak.sh [--minutes N] [--rate OPS_PER_S]" >&2
		exit 2
		;;
	esac
done
[[ $MINUTES =~ ^[1-9][0-9]*$ && $RATE =~ ^[1-9][0-9]*$ ]] || {
	echo "soak.sh: --minutes and --rate take positive integers" >&2
	exit 2
}
((MINUTES >= 2)) || {
	echo "soak.sh: at least 2 minutes (the first is warm-up)" >&2
	exit 2
}
RSS_GROWTH_MB=${CHAOS_RSS_GROWTH_MB:-16}
FD_GROWTH=${CHAOS_FD_GROWTH:-4}
chaos_init soak

pg_start
db_make
kafka_topic
sim_start --ledger-ms 500 --ledger-capacity 500 --retention-ledgers 200
keys_make 40
fund
outboxd_start
N=$((MINUTES * 60 * RATE))
load_start "$N" "$RATE" 20

# sample: {"role:index": {pid, rss_kb, fds}} of every outboxd process
sample() {
	local line role idx pid rss fds out='{}'
	while read -r line; do
		IFS=: read -r role idx pid <<<"$line"
		rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
		fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
		out=$(jq -c --arg k "$role:$idx" --argjson p "$pid" --argjson r "${rss:-0}" --argjson f "$fds" \
			'. + {($k): {pid: $p, rss_kb: $r, fds: $f}}' <<<"$out")
	done < <(ctl stats --json | jq -r '.processes[] | "\(.role):\(.index):\(.pid)"')
	echo "$out"
}

per_minute='[]'
first=""
prev=$(confirmed)
prev_acked=$(acked)
t_start=$(now_ms)
for m in $(seq 1 "$MINUTES"); do
	# on the minute from the start (sampling takes seconds on a busy machine)
	wait_ms=$((t_start + m * 60000 - $(now_ms)))
	((wait_ms > 0)) && sleep "$(awk -v n="$wait_ms" 'BEGIN{printf "%.3f", n/1000}')"
	now=$(confirmed)
	a=$(acked)
	open=$(open_ops)
	s=$(sample)
	read -r l1 _ </proc/loadavg
	((m == 1)) && first=$s
	per_minute=$(jq -c --argjson m "$m" --argjson c "$((now - prev))" --argjson e "$((a - prev_acked))" \
		--argjson o "$open" --argjson l "$l1" --argjson s "$s" \
		'. + [{minute: $m, enqueued: $e, confirmed: $c, open: $o, load1: $l,
		       processes: ($s | map_values({rss_kb, fds}))}]' <<<"$per_minute")
	log "minute $m: $((a - prev_acked)) enqueued, $((now - prev)) confirmed, $open open, load $l1, $(jq -c 'map_values({rss_kb, fds})' <<<"$s")"
	prev=$now
	prev_acked=$a
	kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited at minute $m"
done
last=$(sample)
load_stop
# the verdict covers what was enqueued: a batch the stop interrupted may
# have committed without being counted, so the highest key decides
LOAD_N=$(sql -c "SELECT coalesce(max(substr(business_record_id, 2)::int), 0) FROM outbox.ops")

# growth per process between the first (after warm-up) and the last sample
growth=$(jq -nc --argjson a "$first" --argjson b "$last" '
	[$a | keys[] as $k | {process: $k,
		pid_same: ($a[$k].pid == ($b[$k].pid // -1)),
		rss_start_kb: $a[$k].rss_kb, rss_end_kb: ($b[$k].rss_kb // null),
		fds_start: $a[$k].fds, fds_end: ($b[$k].fds // null)}]')
while IFS= read -r v; do
	[[ -n $v ]] && violation "$v"
done < <(jq -r --argjson mb "$RSS_GROWTH_MB" --argjson fd "$FD_GROWTH" '.[] |
	(if .pid_same | not then "\(.process) was restarted during the soak" else empty end),
	(if .rss_end_kb != null and .rss_end_kb - .rss_start_kb > $mb * 1024
	 then "\(.process) RSS grew \(.rss_start_kb) -> \(.rss_end_kb) kB (bound \($mb) MiB)" else empty end),
	(if .fds_end != null and .fds_end - .fds_start > $fd
	 then "\(.process) descriptors grew \(.fds_start) -> \(.fds_end) (bound +\($fd))" else empty end)' <<<"$growth")
extra soak "$(jq -nc --argjson g "$growth" --argjson p "$per_minute" --argjson m "$MINUTES" --argjson r "$RATE" \
	--argjson mb "$RSS_GROWTH_MB" --argjson fd "$FD_GROWTH" \
	'{minutes: $m, rate: $r, rss_growth_bound_mib: $mb, fd_growth_bound: $fd, processes: $g, per_minute: $p}')"
wait_for 600 "every op to reach a final state" all_terminal
outboxd_stop
verdict 60
