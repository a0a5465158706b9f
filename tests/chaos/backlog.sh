#!/usr/bin/env bash
# tests/chaos/backlog.sh [--ops N] - CRITICAL ops on top of a huge backlog.
#
# A backlog of N (default 1 000 000) PENDING NORMAL and LOW ops, loaded with
# the documented bulk path (schema/README.md, "Loading a backlog": one
# outbox.enqueue() per row of a generate_series, in chunks), must not slow a
# CRITICAL op's dispatch, and every statement of the claim path must stay an
# index scan reading a bounded number of buffers.
#
#  1. baseline: outboxd (4 workers) with no backlog; CRITICAL ops enqueued one
#     per transaction at a steady rate; their enqueue -> send (the commit of
#     the attempt row, written right before the envelope is sent) and
#     enqueue -> CONFIRMED, p50/p99/max, and the send's parts (steps: the
#     workers' trace lines, worker/trace.h)
#  2. outboxd stopped; the backlog loaded (progress on stderr); the claim's
#     plans read with auto_explain (analyze, buffers, nested statements):
#     outbox.claim and outbox.claim_release as a worker calls them, in a
#     transaction rolled back, with custom and with generic plans (a
#     worker's long-lived session may use either)
#  3. outboxd started again: the workers chew on the backlog while the same
#     CRITICAL load arrives, its signers the backlog's; the same figures;
#     then the same load again on signers of its own (CHAOS_CRITICAL_SIGNERS
#     of them carry no backlog op: a deployment that keeps its withdrawal
#     signers apart), where no CRITICAL op waits for a NORMAL transaction
#  4. the backlog's users held (outbox.user_holds: no claim takes their ops
#     any more), every transaction in flight settles, outboxd stopped; the
#     plans read again (lanes busy, attempts written); the verdict
#
# Verdict: every CRITICAL op CONFIRMED; every backlog op CONFIRMED or still
# PENDING, none lost; nothing executed twice or executed without being
# CONFIRMED (stellar-sim's /debug/executions), at most one transaction
# pending per signer; no plan violation. The latency figures are printed,
# never asserted (a busy 2-core machine). Events stay in outbox.events: a
# million ENQUEUED events are not for a broker other work shares, and the
# relay is proven by the other scenarios.
#
#   --ops N                 backlog size (CHAOS_OPS; default 1000000)
#   CHAOS_CRITICAL_OPS      CRITICAL ops per phase (default 300)
#   CHAOS_CRITICAL_RATE     their rate, ops/s (default 5)
#   CHAOS_SIGNERS           funded signers (default 200)
#   CHAOS_CRITICAL_SIGNERS  of them, the ones no backlog op uses (default 20;
#                           0: no such load)
#   CHAOS_CHUNK             ops per bulk statement (default 10000)
#   CHAOS_LOAD_JOBS         sessions loading the backlog side by side (default 2)
#   CHAOS_NORMAL_LOW_MAX_RATE  outboxd's OUTBOX_NORMAL_LOW_MAX_RATE (default 0:
#                           no cap): the NORMAL and LOW ops claimed per second
#   CHAOS_EXPLAIN_MAX_BUFFERS  bound on the buffers of one claim-path statement,
#                           nested calls included (default 3000: tests/chaos/
#                           README.md says why)
#   CHAOS_EXPLAIN_SEQ_PAGES a relation of at most this many pages may be read
#                           whole (default 64; plans.py)
. "$(dirname "$0")/lib.sh"

OPS=${CHAOS_OPS:-1000000}
while (($#)); do
	case $1 in
	--ops)
		OPS=${2:-}
		shift 2 || true
		;;
	*)
		echo "usage: backlog.sh [--ops N]" >&2
		exit 2
		;;
	esac
done
[[ $OPS =~ ^[1-9][0-9]*$ ]] || {
	echo "backlog.sh: --ops takes a positive integer" >&2
	exit 2
}
CRIT_N=${CHAOS_CRITICAL_OPS:-300}
CRIT_RATE=${CHAOS_CRITICAL_RATE:-5}
NSIGNERS=${CHAOS_SIGNERS:-200}
OWN=${CHAOS_CRITICAL_SIGNERS:-20}
[[ $OWN =~ ^[0-9]+$ ]] && ((OWN < NSIGNERS)) || {
	echo "backlog.sh: CHAOS_CRITICAL_SIGNERS takes 0..CHAOS_SIGNERS-1" >&2
	exit 2
}
SHARED=$((NSIGNERS - OWN)) # signers 0..SHARED-1 carry the backlog
CHUNK=${CHAOS_CHUNK:-10000}
MAX_BUF=${CHAOS_EXPLAIN_MAX_BUFFERS:-3000}
SEQ_PAGES=${CHAOS_EXPLAIN_SEQ_PAGES:-64}
JOBS=${CHAOS_LOAD_JOBS:-2}
PACE=${CHAOS_NORMAL_LOW_MAX_RATE:-0}
[[ $PACE =~ ^[0-9]+$ ]] || {
	echo "backlog.sh: CHAOS_NORMAL_LOW_MAX_RATE takes an integer >= 0" >&2
	exit 2
}
WORKERS=4
VSHARDS=16
chaos_init backlog

# a larger cache than the other scenarios': the backlog's indexes are what
# the claim reads, as on a production server
pg_start "shared_buffers=256MB" "max_wal_size=4GB" "checkpoint_timeout=30min"
db_make
sim_start --ledger-ms 500 --ledger-capacity 1000 --retention-ledgers 2000 --threads 4
keys_make "$NSIGNERS"
fund
sql -c "CREATE TABLE public.signers (i int PRIMARY KEY, a text NOT NULL);
	CREATE TABLE public.customers (i int PRIMARY KEY, a text NOT NULL)"
printf '%s\n' "${SIGNERS[@]}" | awk '{print NR-1 "\t" $0}' | sql -c "\copy public.signers FROM pstdin"
printf '%s\n' "${CUSTOMERS[@]}" | awk '{print NR-1 "\t" $0}' | sql -c "\copy public.customers FROM pstdin"

# outboxd without a broker: events stay in outbox.events (above); at the
# debug level, so every transaction sent leaves its trace line (steps, below)
KAFKA=
backlog_outboxd() {
	outboxd_start "OUTBOX_BATCH_SIZE=20" "OUTBOX_LOG_LEVEL=debug" "OUTBOX_NORMAL_LOW_MAX_RATE=$PACE"
}

# critical_load PREFIX [own]: CRIT_N CRITICAL withdrawals, one per
# transaction, at CRIT_RATE/s, keys PREFIX1..PREFIXn, signers spread over the
# backlog's (or, with "own", over the OWN signers no backlog op uses). A
# procedure-style DO with COMMIT: each enqueue's transaction starts right at
# the COMMIT before it, so created_at is the enqueue's time, not the pause's.
critical_load() {
	local pick="(k * 7) % $SHARED"
	[[ ${2:-} == own ]] && pick="$SHARED + k % $OWN"
	sql -c "DO \$\$
	BEGIN
		FOR k IN 1 .. $CRIT_N LOOP
			PERFORM pg_sleep(1.0 / $CRIT_RATE);
			COMMIT;
			PERFORM outbox.enqueue('WITHDRAW', 'c' || (k % 20), '$1' || k,
				(SELECT s.a FROM public.signers s WHERE s.i = $pick),
				json_build_object('account', (SELECT c.a FROM public.customers c WHERE c.i = k % 20),
					'amount', '1')::jsonb, 'CRITICAL');
			COMMIT;
		END LOOP;
	END \$\$" || die "the CRITICAL load failed"
}

# latency PREFIX: the figures of the CRITICAL ops PREFIX*, once every one of
# them is final: {"ops", "send_ms", "confirm_ms", "signer_wait_ms",
# "dispatch_ms" (each {p50,p99,max}), "signer_busy", "inversions"}.
#   send_ms         enqueue -> send (the commit of the op's first attempt row,
#                   written right before its envelope is sent)
#   signer_wait_ms  enqueue -> the decision (attempts.decided_at) of the
#                   signer's transaction that was in flight at the enqueue,
#                   0 when none was: Stellar's queue takes one transaction
#                   per account (per_account_max 1), so a CRITICAL op whose
#                   signer has a NORMAL one in flight waits for it to land
#                   (ledgers of 500 ms here); signer_busy counts those ops
#   dispatch_ms     the dispatch latency proper: send - max(enqueue, signer
#                   free)
#   inversions      NORMAL or LOW ops of a CRITICAL op's signer, enqueued
#                   before it, sent after its enqueue and before it, whose
#                   claim provably came after it: the signer's previous
#                   transaction was decided (the lane released, so the claim
#                   could only come later) more than INV_SLACK_MS after the
#                   CRITICAL op's enqueue (its commit follows at once). A
#                   violation. (The claim itself is not recorded: one made
#                   before the CRITICAL op arrived may write its attempt row
#                   long after, on a busy worker.)
INV_SLACK_MS=${CHAOS_INVERSION_SLACK_MS:-100}
# own_dispatch: the workers' outbox_dispatch_seconds{priority="CRITICAL"}
# from the gateway's /metrics (this outboxd run's CRITICAL ops): claim to
# first send, outboxd's own part, which no wait for a busy signer is in
# (and the one thing signer_wait_ms cannot see: a NORMAL op claimed before
# the CRITICAL one arrived but sent after it). Upper bounds of the
# histogram's buckets (1, 2, 4, ... ms): {"ops", "p50_le", "p99_le"}, and
# critical_claims: the CRITICAL-only claims the workers sent meanwhile
# (outbox_critical_claims_total: one per CRITICAL NOTIFY, by the worker
# holding the op's vshard).
own_dispatch() { # own_dispatch [BEFORE]: BEFORE an earlier answer, to count only what came since
	curl -fsS "http://127.0.0.1:$HTTP_PORT/metrics" | python3 -c '
import json, re, sys
prev = json.loads(sys.argv[1])
before = dict((str(le), c) for le, c in prev.get("buckets", []))
before["critical_claims"] = prev.get("crit_total", 0)
b = []
crit = 0
for line in sys.stdin:
    m = re.match(r"outbox_dispatch_seconds_bucket\{priority=\"CRITICAL\",le=\"([^\"]+)\"\} (\d+)", line)
    if m:
        le = None if m.group(1) == "+Inf" else round(float(m.group(1)) * 1000, 3)
        b.append((le, int(m.group(2))))
    m = re.match(r"outbox_critical_claims_total(\{[^}]*\})? (\d+)", line)
    if m:
        crit = crit + int(m.group(2))
d = [(le, c - before.get(str(le), 0)) for le, c in b]
n = d[-1][1] if d else 0
q = lambda f: next((le for le, c in d if c >= f * n), None) if n else None
print(json.dumps({"ops": n, "p50_le": q(0.5), "p99_le": q(0.99), "buckets": b,
    "critical_claims": crit - before.get("critical_claims", 0), "crit_total": crit}))' "${1:-"{}"}" || echo '{"ops": null}'
}
# steps PREFIX: where the CRITICAL ops PREFIX* spent the time up to their
# send, from the workers' trace lines (`op N sent`, worker/trace.h): for
# total and each part (before_claim: the enqueue's commit, its NOTIFY and
# the worker's turn; claim; queued; prepare; simulate; sign; write: the
# attempt row's commit), {"p50", "p99", "max"} in ms (nearest rank), and
# "ops", the ops with a line. A slow send is explained by the part that
# grew; a tail spread over every part is a machine short of CPU.
steps() {
	sql -c "SELECT id FROM outbox.ops WHERE business_record_id LIKE '$1%'" | python3 -c '
import json, math, re, sys
ids = set(l.strip() for l in sys.stdin if l.strip())
parts = ["total", "before_claim", "claim", "queued", "prepare", "simulate", "sign", "write"]
seen = {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"msg=\"op (\d+) sent\"", line)
    if m and m.group(1) in ids and m.group(1) not in seen:
        seen[m.group(1)] = dict((k, int(v)) for k, v in re.findall(r" ([a-z_]+)_us=(\d+)", line))
def q(v, f):
    return round(v[max(0, math.ceil(f * len(v)) - 1)] / 1000.0, 1)
out = {"ops": len(seen)}
for p in parts:
    v = sorted(t[p] for t in seen.values() if p in t)
    if v:
        out[p + "_ms"] = {"p50": q(v, 0.5), "p99": q(v, 0.99), "max": q(v, 1.0)}
print(json.dumps(out, separators=(",", ":")))' "$T/outboxd.log" || echo '{"ops": null}'
}
latency() {
	wait_for 600 "the CRITICAL ops $1* to end" bash -c "[[ \$(psql -X -At -d '$ADMIN_URL' -c \"SELECT count(*) FROM outbox.ops WHERE business_record_id LIKE '$1%' AND status IN ('PENDING','SUBMITTED')\") == 0 ]]"
	sql -c "WITH fa AS (SELECT a.op_id, min(a.submitted_at) AS sent FROM outbox.attempts a GROUP BY a.op_id),
	c AS (SELECT o.id, o.signer, o.created_at, fa.sent,
			(SELECT e.at FROM outbox.events e WHERE e.op_id = o.id AND e.to_status = 'CONFIRMED') AS conf
		FROM outbox.ops o JOIN fa ON fa.op_id = o.id WHERE o.business_record_id LIKE '$1%'),
	b AS (SELECT c.id, max(coalesce(a.decided_at, 'infinity')) AS busy_until
		FROM c JOIN outbox.attempts a ON a.source_account = c.signer AND a.op_id <> c.id
			AND a.submitted_at <= c.created_at
			AND (a.decided_at IS NULL OR a.decided_at > c.created_at)
		GROUP BY c.id),
	i AS (SELECT c.id, count(*) AS n
		FROM c JOIN outbox.ops n ON n.signer = c.signer AND n.priority > 0 AND n.created_at < c.created_at
		JOIN fa ON fa.op_id = n.id AND fa.sent > c.created_at AND fa.sent < c.sent
		WHERE (SELECT max(a.decided_at) FROM outbox.attempts a
				WHERE a.source_account = n.signer AND a.bump_no = 0
					AND a.outcome NOT IN ('EXPIRED', 'REJECTED')
					AND a.op_id <> n.id AND a.decided_at <= fa.sent)
			> c.created_at + make_interval(secs => $INV_SLACK_MS / 1000.0)
		GROUP BY c.id),
	d AS (SELECT extract(epoch FROM c.sent - c.created_at) * 1000 AS s,
		extract(epoch FROM c.conf - c.created_at) * 1000 AS cf,
		extract(epoch FROM f.free - c.created_at) * 1000 AS w,
		extract(epoch FROM c.sent - f.free) * 1000 AS x,
		b.busy_until IS NOT NULL AS busy, coalesce(i.n, 0) AS inv
		FROM c LEFT JOIN b USING (id) LEFT JOIN i USING (id),
		LATERAL (SELECT GREATEST(c.created_at, LEAST(coalesce(b.busy_until, c.created_at), c.sent)) AS free) f)
SELECT json_build_object('ops', count(*),
	'send_ms', json_build_object(
		'p50', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY s)::numeric, 1),
		'p99', round(percentile_cont(0.99) WITHIN GROUP (ORDER BY s)::numeric, 1),
		'max', round(max(s)::numeric, 1)),
	'confirm_ms', json_build_object(
		'p50', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY cf)::numeric, 1),
		'p99', round(percentile_cont(0.99) WITHIN GROUP (ORDER BY cf)::numeric, 1),
		'max', round(max(cf)::numeric, 1)),
	'signer_wait_ms', json_build_object(
		'p50', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w)::numeric, 1),
		'p99', round(percentile_cont(0.99) WITHIN GROUP (ORDER BY w)::numeric, 1),
		'max', round(max(w)::numeric, 1)),
	'dispatch_ms', json_build_object(
		'p50', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 1),
		'p99', round(percentile_cont(0.99) WITHIN GROUP (ORDER BY x)::numeric, 1),
		'max', round(max(x)::numeric, 1)),
	'signer_busy', count(*) FILTER (WHERE busy),
	'inversions', coalesce(sum(inv), 0)) FROM d"
}

# bulk_load: the backlog, CHUNK ops a statement (the documented path) in JOBS
# sessions side by side (chunk c goes to session c % JOBS); op i a DEPOSIT of
# user b(i % 50) from signer i % SHARED, every third LOW.
bulk_chunk() { # bulk_chunk FROM TO
	sql -c "SELECT count(*) FROM generate_series($1, $2) g(n)
		JOIN public.signers s ON s.i = g.n % $SHARED
		JOIN public.customers c ON c.i = g.n % 20,
		LATERAL outbox.enqueue('DEPOSIT', 'b' || (g.n % 50), 'b' || g.n, s.a,
			json_build_object('account', c.a, 'amount', '100')::jsonb,
			CASE WHEN g.n % 3 = 0 THEN 'LOW' ELSE 'NORMAL' END) e" >/dev/null
}
bulk_load() {
	local start j pids=() nchunks progress n
	start=$(now_ms)
	nchunks=$(((OPS + CHUNK - 1) / CHUNK))
	for ((j = 0; j < JOBS; j++)); do
		(
			for ((c = j; c < nchunks; c += JOBS)); do
				from=$((c * CHUNK + 1))
				to=$(((c + 1) * CHUNK))
				((to > OPS)) && to=$OPS
				bulk_chunk "$from" "$to" || {
					log "bulk enqueue of $from..$to failed"
					exit 1
				}
			done
		) &
		pids+=($!)
	done
	(
		while sleep 10; do
			n=$(sql -c "SELECT count(*) FROM outbox.ops WHERE business_record_id LIKE 'b%'" 2>/dev/null) || continue
			log "backlog: $n / $OPS ops committed, $((n * 1000 / ($(now_ms) - start + 1))) ops/s"
		done
	) &
	progress=$!
	for p in "${pids[@]}"; do
		wait "$p" || {
			kill "$progress"
			die "the bulk load failed"
		}
	done
	kill "$progress"
	wait "$progress" 2>/dev/null || true
	LOAD_MS=$(($(now_ms) - start))
	n=$(sql -c "SELECT count(*) FROM outbox.ops WHERE business_record_id LIKE 'b%'")
	log "backlog: $n / $OPS ops committed in $((LOAD_MS / 1000)) s"
}

# plans LABEL: auto_explain of the claim path in a transaction rolled back,
# under a lease of every vshard taken for it (outboxd is stopped). First one
# merge of the lane signals waiting, committed (what the next claim of these
# vshards does anyway; reported: after a bulk load there is one signal per
# op, and a merge takes at most 200 CRITICAL and 200 others, schema/0017, so
# the claims below merge more each, inside their bound) and the VACUUM of
# lane_signals autovacuum runs next (its threshold is 2000 dead rows); then
# outbox.claim as a worker calls it (OUTBOX_BATCH_SIZE 20, one
# transaction per account): with custom plans, as a new session runs it, then
# with plan_cache_mode=auto past the 5 runs after which PostgreSQL may settle
# on a generic plan, as a long-lived worker session runs it; then
# outbox.claim_release. Those are bounded (plans.py). A claim with generic
# plans forced is reported ("generic"), not bounded: no worker forces them,
# and forced they read every PENDING op of a lane (below, README.md).
# Figures under plans_LABEL.
ALL_VS=$(seq -s, 0 $((VSHARDS - 1)))
plans() {
	local out res sizes signals claim
	# outboxd's leases end at its drain, or lapse (a drain cut short)
	wait_for 120 "outboxd's leases to end" bash -c "[[ \$(psql -X -At -d '$ADMIN_URL' -c \"SELECT count(*) FROM outbox.shard_leases WHERE expires_at > now()\") == 0 ]]"
	sizes=$(sql -c "SELECT json_object_agg(relname, pg_relation_size(oid) / 8192) FROM pg_class
		WHERE relnamespace = 'outbox'::regnamespace AND relkind = 'r'")
	signals=$(sql -c "SELECT count(*) FROM outbox.lane_signals")
	claim="SELECT count(*) FROM outbox.claim('explain-$$', ARRAY[$ALL_VS], :'eps'::bigint[], 1, 20);"
	out=$(psql -X -q -At -d "$ADMIN_URL" -v ON_ERROR_STOP=1 2>&1 >/dev/null <<EOF
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_timing = off;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_format = json;
SET auto_explain.log_level = notice;
\warn @@section merge
SELECT outbox.lane_merge(ARRAY[$ALL_VS]);
\warn @@section setup
VACUUM outbox.lane_signals;
BEGIN;
SELECT array_agg(outbox.lease_acquire('explain-$$', v, 60000) ORDER BY v) AS eps
	FROM generate_series(0, $((VSHARDS - 1))) v \gset
-- an op the claims below take (CRITICAL first, else the oldest NORMAL),
-- to give back as a worker does when the global in-flight cap is full
SELECT id AS ri, vshard AS rv, signer AS rs FROM outbox.ops
	WHERE status = 'PENDING' ORDER BY priority, created_at LIMIT 1 \gset
\warn @@section claim_custom
SET plan_cache_mode = force_custom_plan;
$claim
$claim
\warn @@section claim_auto
SET plan_cache_mode = auto;
$claim
$claim
$claim
$claim
$claim
$claim
\warn @@section generic
SET plan_cache_mode = force_generic_plan;
$claim
\warn @@section claim_release
SET plan_cache_mode = auto;
SELECT outbox.claim_release('explain-$$', :rv, (:'eps'::bigint[])[:rv + 1], :'rs', 1, ARRAY[:ri]::bigint[]);
ROLLBACK;
EOF
) || die "the claim path's EXPLAIN failed: $(grep -m3 ERROR <<<"$out")"
	res=$(python3 "$CHAOS_DIR/plans.py" "$MAX_BUF" "$SEQ_PAGES" "$sizes" <<<"$out")
	res=$(jq -c --argjson n "$signals" '.merge += {signals: $n}' <<<"$res")
	extra "plans_$1" "$res"
	while IFS= read -r v; do
		[[ -n $v ]] && violation "plans ($1): $v"
	done < <(jq -r '.violations[]' <<<"$res")
	log "plans ($1): one merge (of $signals signals waiting) $(jq -c '.merge.max_buffers' <<<"$res") buffers; claim path $(jq -c '{statements: ([.claim_custom, .claim_auto, .claim_release] | map(.statements) | add), max_buffers: ([.claim_custom, .claim_auto, .claim_release] | map(.max_buffers) | max), generic_max_buffers: .generic.max_buffers, violations}' <<<"$res")"
}

# ---------------------------------------------------------------- 1. baseline
backlog_outboxd
log "baseline: $CRIT_N CRITICAL ops at $CRIT_RATE/s, no backlog"
critical_load a
base=$(latency a)
base=$(jq -c --argjson d "$(own_dispatch)" --argjson s "$(steps a)" '. + {own_dispatch_ms: ($d | del(.buckets, .crit_total)), steps: $s}' <<<"$base")
log "baseline: $base"
outboxd_stop

# ---------------------------------------------------------------- 2. backlog
log "loading a backlog of $OPS ops, $CHUNK a statement"
bulk_load
sql -c "VACUUM ANALYZE outbox.ops" >/dev/null 2>&1 || true
sizes=$(sql -c "SELECT json_build_object('ops_mb', pg_total_relation_size('outbox.ops') / 1048576,
	'events_mb', pg_total_relation_size('outbox.events') / 1048576,
	'lane_signals', (SELECT count(*) FROM outbox.lane_signals))")
log "backlog loaded in $((LOAD_MS / 1000)) s: $sizes"
plans loaded

# ---------------------------------------------------------------- 3. on top
# what the workers' own sessions run slowly: auto_explain in every new
# session of the database, into the server's log (reported, not bounded: a
# duration on a busy machine proves nothing; the buffers say why)
sql -c "ALTER DATABASE $DB SET session_preload_libraries = 'auto_explain'" \
	-c "ALTER DATABASE $DB SET auto_explain.log_min_duration = '250ms'" \
	-c "ALTER DATABASE $DB SET auto_explain.log_analyze = on" \
	-c "ALTER DATABASE $DB SET auto_explain.log_buffers = on" \
	-c "ALTER DATABASE $DB SET auto_explain.log_timing = off" \
	-c "ALTER DATABASE $DB SET auto_explain.log_nested_statements = on" \
	-c "ALTER DATABASE $DB SET auto_explain.log_format = json" >/dev/null
log_from=$(wc -c <"$PG_DIR/log")
backlog_outboxd
c0=$(confirmed)
log "on the backlog: $CRIT_N CRITICAL ops at $CRIT_RATE/s"
t0=$(now_ms)
critical_load k
load=$(latency k)
od=$(own_dispatch)
load=$(jq -c --argjson d "$od" --argjson s "$(steps k)" '. + {own_dispatch_ms: ($d | del(.buckets, .crit_total)), steps: $s}' <<<"$load")
log "on the backlog: $load"
own='{"ops": 0, "inversions": 0}'
if ((OWN > 0)); then
	log "on the backlog: $CRIT_N CRITICAL ops at $CRIT_RATE/s on $OWN signers of their own"
	critical_load d own
	own=$(latency d)
	own=$(jq -c --argjson d "$(own_dispatch "$od")" --argjson s "$(steps d)" '. + {own_dispatch_ms: ($d | del(.buckets, .crit_total)), steps: $s}' <<<"$own")
	log "on the backlog, signers of their own: $own"
fi
t1=$(now_ms)
c1=$(confirmed)

# ---------------------------------------------------------------- 4. settle
sql -c "INSERT INTO outbox.user_holds (user_id, reason, held_by)
	SELECT 'b' || u, 'backlog scenario: the end of the run', 'chaos' FROM generate_series(0, 49) u" >/dev/null
wait_for 300 "the backlog's transactions in flight to settle" bash -c \
	"[[ \$(psql -X -At -d '$ADMIN_URL' -c \"SELECT count(*) FROM outbox.ops WHERE status = 'SUBMITTED'\") == 0 ]]"
outboxd_stop
sql -c "ALTER DATABASE $DB RESET ALL" >/dev/null
slow=$( (echo "@@section workers"; tail -c +$((log_from + 1)) "$PG_DIR/log") |
	python3 "$CHAOS_DIR/plans.py" "$MAX_BUF" "$SEQ_PAGES" '{}' |
	jq -c '.workers | [.distinct[] | select(.query | test("outbox\\.enqueue|pg_sleep") | not)]
		| {statements: (map(.executions) | add // 0), max_buffers: (map(.max_buffers) | max // 0), distinct: .}')
extra slow_in_workers "$slow"
log "statements of outboxd's sessions over 250 ms: $(jq -c '[.distinct[] | {query: .query[0:60], executions, max_buffers}]' <<<"$slow")"
# lane updates that were HOT (0004: only next_due and pending_best are
# indexed; a claim or a settle that moves next_due is not HOT)
lanes_upd=$(sql -c "SELECT json_build_object('updates', n_tup_upd, 'hot', n_tup_hot_upd,
	'pages', pg_relation_size('outbox.lanes') / 8192, 'rows', n_live_tup)
	FROM pg_stat_user_tables WHERE relid = 'outbox.lanes'::regclass")
extra lanes_updates "$lanes_upd"
log "outbox.lanes: $lanes_upd"
# the holds only ended the run: the plans are read on the backlog as it is
sql -c "DELETE FROM outbox.user_holds WHERE held_by = 'chaos'" >/dev/null
plans dispatched

# ---------------------------------------------------------------- verdict
sim_get /debug/executions >"$T/executions.json" || die "cannot read /debug/executions"
jq -r '.by_ref | to_entries[] | "\(.key)\t\(.value)"' "$T/executions.json" |
	sql -c "CREATE TABLE public.executions (ref text PRIMARY KEY, n int NOT NULL)" \
		-c "\copy public.executions FROM pstdin"
SUMMARY=$(sql -c "WITH o AS (
		SELECT o.status, left(o.business_record_id, 1) AS class,
			encode(sha256(convert_to(o.idempotency_key, 'UTF8')), 'hex') AS ref
		FROM outbox.ops o),
	j AS (SELECT o.status, o.class, coalesce(x.n, 0) AS n FROM o LEFT JOIN public.executions x USING (ref))
	SELECT json_build_object(
		'ops_total', (SELECT count(*) FROM o),
		'states', (SELECT json_object_agg(status, c) FROM (SELECT status, count(*) c FROM o GROUP BY 1) s),
		'states_by_class', (SELECT json_object_agg(class, st) FROM (SELECT class, json_object_agg(status, c) st
			FROM (SELECT class, status, count(*) c FROM o GROUP BY 1, 2) s GROUP BY 1) t),
		'duplicates', (SELECT count(*) FROM public.executions WHERE n > 1),
		'unknown_executions', (SELECT count(*) FROM public.executions x WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.ref = x.ref)),
		'confirmed_not_executed', (SELECT count(*) FROM j WHERE status = 'CONFIRMED' AND n = 0),
		'executed_not_confirmed', (SELECT count(*) FROM j WHERE status <> 'CONFIRMED' AND n > 0),
		'lost', ($OPS - (SELECT count(*) FROM o WHERE class = 'b'))
			+ ($CRIT_N * (2 + ($OWN > 0)::int) - (SELECT count(*) FROM o WHERE class IN ('a', 'k', 'd')))
			+ (SELECT count(*) FROM j WHERE status = 'CONFIRMED' AND n = 0),
		'events_total', (SELECT count(*) FROM outbox.events),
		'events', 'kept in outbox.events: no broker for a million ENQUEUED events')")
SUMMARY=$(jq -c --slurpfile ex "$T/executions.json" \
	'. + {max_concurrent_per_account: ([$ex[0].max_pending_per_account[]] | max // 0)}' <<<"$SUMMARY")
extra backlog "$(jq -nc --argjson ops "$OPS" --argjson ms "$LOAD_MS" --argjson s "$sizes" \
	--argjson c "$((c1 - c0))" --argjson secs "$(((t1 - t0) / 1000))" \
	'{ops: $ops, load_s: ($ms / 1000), load_ops_per_s: ($ops * 1000 / $ms | floor)} + $s
	 + {backlog_confirmed_during_critical_load: $c, critical_load_s: $secs}')"
extra critical "$(jq -nc --argjson a "$base" --argjson b "$load" --argjson r "$CRIT_RATE" \
	--argjson o "$own" --argjson os "$OWN" --argjson p "$PACE" \
	'{rate: $r, normal_low_max_rate: $p, no_backlog: $a, on_backlog: $b, own_signers: $os,
	  on_backlog_own_signers: $o}')"
while IFS= read -r v; do
	[[ -n $v ]] && violation "$v"
done < <(jq -r --argjson n "$CRIT_N" --argjson a "$base" --argjson k "$load" --argjson d "$own" \
	--argjson own "$OWN" '
	(if .duplicates > 0 then "\(.duplicates) ops executed more than once" else empty end),
	(if .max_concurrent_per_account > 1 then "an account had \(.max_concurrent_per_account) transactions pending at once" else empty end),
	(if .lost > 0 then "\(.lost) ops lost (missing, or CONFIRMED without an execution)" else empty end),
	(if .unknown_executions > 0 then "\(.unknown_executions) executions of no known op" else empty end),
	(if .executed_not_confirmed > 0 then "\(.executed_not_confirmed) ops executed but not CONFIRMED" else empty end),
	(if (.states_by_class.a.CONFIRMED // 0) != $n or (.states_by_class.k.CONFIRMED // 0) != $n
	    or ($own > 0 and (.states_by_class.d.CONFIRMED // 0) != $n)
	 then "CRITICAL ops not all CONFIRMED: \(.states_by_class | {a, k, d})" else empty end),
	(if ($a.inversions + $k.inversions + $d.inversions) > 0
	 then "priority inversions: NORMAL/LOW ops claimed ahead of a CRITICAL op of their signer after it arrived (no backlog \($a.inversions), on it \($k.inversions), on signers of their own \($d.inversions))" else empty end),
	(if (.states_by_class.b | keys - ["CONFIRMED", "PENDING"]) != []
	 then "backlog ops ended other than CONFIRMED or PENDING: \(.states_by_class.b)" else empty end)
	' <<<"$SUMMARY")
if ((${#VIOLATIONS[@]})); then
	summary_line false
	exit 1
fi
summary_line true
