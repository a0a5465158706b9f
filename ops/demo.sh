#!/usr/bin/env bash
# ops/demo.sh - outboxd end to end, on this machine, in well under a minute:
#
#   1. builds (cmake, into build/ or OUTBOX_BUILD_DIR) when needed;
#   2. makes a fresh database outboxd_demo_<pid> on the PostgreSQL of
#      OUTBOX_PG_BASE, else OUTBOX_DATABASE_URL's server, else 127.0.0.1:5432
#      (or a private server, see ops/lib/pg.sh), and drops it at the end;
#   3. starts stellar-sim (the local Stellar network, 0.5 s ledgers),
#      generates signer seeds and funds the accounts;
#   4. migrates and starts outboxd (supervisor, fee oracle, 2 workers);
#   5. enqueues a handful of money movements with outbox.enqueue() - one of
#      them a withdrawal beyond the balance, one key enqueued twice;
#   6. watches every op to a terminal status, then shows one op's event
#      trail, `outboxctl stats` and `outboxctl fee`, and checks with the
#      sim's /debug/executions that each confirmed op executed exactly once;
#   7. relays every lifecycle event to Kafka (the broker of OUTBOX_KAFKA_BROKERS,
#      else the one ops/kafka.sh runs on 127.0.0.1:9092, else one it starts
#      for itself with ops/kafka.sh and stops at the end) and checks the topic
#      with `outboxctl audit --verify`; OUTBOX_DEMO_KAFKA=0 leaves Kafka out;
#   8. stops outboxd with SIGTERM (it drains, exits 0) and the sim, cleans up.
#
# Exits 0 when all of that happened as described, non-zero with a message
# saying what did not (OUTBOX_DEMO_TIMEOUT seconds, default 60, for the ops).
# As root on Debian it first installs what is missing of ops/lib/deps.sh's
# packages (as ops/test.sh does); otherwise it needs them installed: cmake,
# the build dependencies, psql, curl, jq, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$SECONDS
TIMEOUT=${OUTBOX_DEMO_TIMEOUT:-60}
CONTRACT=CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE # the vault
PASSPHRASE="Standalone Network ; February 2017"

. ops/lib/deps.sh
. ops/lib/pg.sh

say() { printf '\n== %s\n' "$*"; }
info() { printf '   %s\n' "$*"; }
die() {
	echo "demo: FAILED: $*" >&2
	exit 1
}
elapsed() { printf '%5.1fs' "$(awk -v s="$DEMO_T0" -v n="$(date +%s.%N)" 'BEGIN{print n-s}')"; }
DEMO_T0=$(date +%s.%N)

# ---------------------------------------------------------------- packages
# As root on Debian, install whatever ops/test.sh would (ops/lib/deps.sh: the
# same list, the same dpkg check), so a fresh machine builds; apt-get runs
# only when a package is missing. Anyone else needs the packages already.
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
	outbox_ensure_packages || die "installing the packages of ops/lib/deps.sh failed"
fi
need=()
for c in cmake psql curl jq python3 awk; do
	command -v "$c" >/dev/null 2>&1 || need+=("$c")
done
((${#need[@]} == 0)) ||
	die "missing commands: ${need[*]} (run as root on Debian to install the packages of ops/lib/deps.sh)"

# A build that fails for want of a -dev package names it, when dpkg can tell.
missing_hint() {
	command -v dpkg-query >/dev/null 2>&1 || return 0
	local m
	m=$(outbox_missing_packages | tr '\n' ' ')
	[[ -z $m ]] || echo " (packages not installed: ${m% }; ops/demo.sh installs them when run as root)"
}

# ---------------------------------------------------------------- state + cleanup
TMP=$(mktemp -d /tmp/outboxd-demo.XXXXXX)
INSTANCE=demo_$$
DB=outboxd_demo_$$
DB_CREATED=0
PG_ENSURED=0
ADMIN=""
SIM_PID=""
OUTBOXD_PID=""
KAFKA_STARTED=""

cleanup() {
	local rc=$?
	set +e
	if [[ -n $OUTBOXD_PID ]] && kill -0 "$OUTBOXD_PID" 2>/dev/null; then
		kill -KILL -- "-$OUTBOXD_PID" 2>/dev/null
		wait "$OUTBOXD_PID" 2>/dev/null
	fi
	if [[ -n $SIM_PID ]] && kill -0 "$SIM_PID" 2>/dev/null; then
		kill -KILL "$SIM_PID" 2>/dev/null
		wait "$SIM_PID" 2>/dev/null
	fi
	rm -f "/dev/shm/outboxd-$INSTANCE"
	if [[ -n $KAFKA_STARTED ]]; then
		bash "$ROOT/ops/kafka.sh" stop --port "$KAFKA_STARTED" --data "$TMP/kafka" >/dev/null 2>&1
	fi
	if ((rc != 0)); then
		for f in outboxd.log sim.log; do
			[[ -s $TMP/$f ]] || continue
			echo "--- last lines of $f" >&2
			tail -n 15 "$TMP/$f" >&2
		done
	fi
	if ((DB_CREATED)); then
		if ((PG_ENSURED)); then
			pg_drop_db "$DB"
		else
			psql -X -q -d "$ADMIN" -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1
		fi
	fi
	((PG_ENSURED)) && pg_stop
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- 1. build
B=${OUTBOX_BUILD_DIR:-$ROOT/build}
if [[ -z ${OUTBOX_BUILD_DIR:-} ]]; then
	say "build ($B)"
	cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TMP/build.log" 2>&1 ||
		{ tail -n 30 "$TMP/build.log" >&2; die "cmake configure failed$(missing_hint)"; }
	if ! cmake --build "$B" -j"${OUTBOX_BUILD_JOBS:-2}" --target outboxd outboxctl stellar-sim \
		kafka-topic >"$TMP/build.log" 2>&1; then
		tail -n 30 "$TMP/build.log" >&2
		die "the build failed$(missing_hint)"
	fi
	info "outboxd, outboxctl, stellar-sim up to date"
fi
for bin in outboxd outboxctl stellar-sim; do
	[[ -x $B/$bin ]] || die "$B/$bin is missing (build it, or unset OUTBOX_BUILD_DIR)"
done

# ---------------------------------------------------------------- Kafka
# The events' broker: the caller's, a running ops/kafka.sh broker, or our own.
KAFKA=""
TOPIC=outbox.demo.$$
if [[ ${OUTBOX_DEMO_KAFKA:-1} != 0 ]]; then
	say "kafka"
	if [[ -n ${OUTBOX_KAFKA_BROKERS:-} ]]; then
		KAFKA=$OUTBOX_KAFKA_BROKERS
		info "using OUTBOX_KAFKA_BROKERS=$KAFKA"
	elif bash ops/kafka.sh status >/dev/null 2>&1; then
		KAFKA=127.0.0.1:9092
		info "using the broker ops/kafka.sh runs on $KAFKA"
	else
		port=9392
		while [[ -n $(ss -Hltn "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null) ]]; do
			port=$((port + 100))
			((port < 12000)) || die "no free port pair for a Kafka broker"
		done
		info "starting a broker of its own (ops/kafka.sh, port $port; the first run fetches its jars)"
		bash ops/kafka.sh start --port "$port" --data "$TMP/kafka" >"$TMP/kafka.log" 2>&1 ||
			{ tail -n 20 "$TMP/kafka.log" >&2; die "the Kafka broker did not start (OUTBOX_DEMO_KAFKA=0 runs without it)"; }
		KAFKA_STARTED=$port
		KAFKA=127.0.0.1:$port
	fi
	[[ -x $B/kafka-topic ]] || die "$B/kafka-topic is missing (build it, or unset OUTBOX_BUILD_DIR)"
	"$B/kafka-topic" "$KAFKA" "$TOPIC" 4 >"$TMP/topic.log" 2>&1 ||
		{ cat "$TMP/topic.log" >&2; die "cannot create topic $TOPIC on $KAFKA"; }
	info "topic $TOPIC (4 partitions) on $KAFKA"
fi

# ---------------------------------------------------------------- 2. database
# conninfo for database $1 on the server of URL/conninfo $2
conn_for() {
	local db=$1 src=$2
	if [[ $src =~ ^postgres(ql)?:// ]]; then
		local scheme=${src%%://*} rest=${src#*://} auth query=""
		auth=${rest%%[/?]*}
		[[ $rest == *\?* ]] && query="?${rest#*\?}"
		echo "$scheme://$auth/$db$query"
	else
		echo "$src dbname=$db" # libpq: the last dbname wins
	fi
}
if [[ -n ${OUTBOX_PG_BASE:-} ]]; then
	SERVER=$OUTBOX_PG_BASE
elif [[ -n ${OUTBOX_DATABASE_URL:-} ]]; then
	SERVER=$OUTBOX_DATABASE_URL
else
	pg_ensure
	PG_ENSURED=1
	SERVER=$OUTBOX_PG_BASE
fi
say "PostgreSQL: fresh database $DB"
if ((PG_ENSURED)); then
	DB_URL=$(PGOPTIONS='-c client_min_messages=warning' pg_fresh_db "$DB")
else
	ADMIN=$(conn_for postgres "$SERVER")
	psql -X -q -d "$ADMIN" -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" \
		-c "CREATE DATABASE \"$DB\"" >/dev/null || die "cannot create $DB on the server of '$SERVER'"
	DB_URL=$(conn_for "$DB" "$SERVER")
fi
DB_CREATED=1
export OUTBOX_DATABASE_URL=$DB_URL OUTBOX_VSHARDS=8 OUTBOX_INSTANCE=$INSTANCE
sql() { psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -d "$DB_URL" "$@"; }

"$B/outboxctl" migrate | sed 's/^/   /' || die "outboxctl migrate failed"

# ---------------------------------------------------------------- 3. stellar-sim + keys
say "stellar-sim: a local Stellar network, one ledger every 0.5 s"
"$B/stellar-sim" --listen 127.0.0.1:0 --debug --ledger-ms 500 --vault-contract "$CONTRACT" \
	>"$TMP/sim.out" 2>"$TMP/sim.log" &
SIM_PID=$!
for _ in $(seq 100); do
	grep -q '^listening ' "$TMP/sim.out" 2>/dev/null && break
	kill -0 "$SIM_PID" 2>/dev/null || die "stellar-sim exited at start"
	sleep 0.05
done
SIM_PORT=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out")
[[ -n $SIM_PORT ]] || die "stellar-sim did not say where it listens"
SIM=http://127.0.0.1:$SIM_PORT
info "listening on $SIM (vault contract $CONTRACT)"

# Ed25519 keys as Stellar strkeys ("S..." seed, "G..." address), in plain
# python3 (RFC 8032 scalar multiplication, strkey = base32(version | key | CRC16-XModem)).
keygen() {
	python3 - "$1" <<'EOF'
import base64, hashlib, os, sys
P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P
def add(a, b):
    x1, y1, z1, t1 = a; x2, y2, z2, t2 = b
    A = (y1 - x1) * (y2 - x2) % P; B = (y1 + x1) * (y2 + x2) % P
    C = 2 * t1 * t2 * D % P; E = 2 * z1 * z2 % P
    e, f, g, h = B - A, E - C, E + C, B + A
    return (e * f % P, g * h % P, f * g % P, e * h % P)
by = 4 * pow(5, P - 2, P) % P
xx = (by * by - 1) * pow(D * by * by + 1, P - 2, P) % P
bx = pow(xx, (P + 3) // 8, P)
if (bx * bx - xx) % P: bx = bx * pow(2, (P - 1) // 4, P) % P
if bx & 1: bx = P - bx
def public(seed):
    a = int.from_bytes(hashlib.sha512(seed).digest()[:32], "little")
    a = a & ((1 << 254) - 8) | (1 << 254)
    q, r = (0, 1, 1, 0), (bx, by, 1, bx * by % P)
    while a:
        if a & 1: q = add(q, r)
        r = add(r, r); a >>= 1
    zi = pow(q[2], P - 2, P)
    x, y = q[0] * zi % P, q[1] * zi % P
    return (y | (x & 1) << 255).to_bytes(32, "little")
def strkey(version, raw):
    b, crc = bytes([version]) + raw, 0
    for c in b:
        crc ^= c << 8
        for _ in range(8):
            crc = (crc << 1 ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return base64.b32encode(b + crc.to_bytes(2, "little")).decode()
for _ in range(int(sys.argv[1])):
    seed = os.urandom(32)
    print(strkey(18 << 3, seed), strkey(6 << 3, public(seed)))
EOF
}
mapfile -t KEYS < <(keygen 6)
((${#KEYS[@]} == 6)) || die "key generation failed"
SIGNERS=() SEEDS=()
for i in 0 1 2; do
	SEEDS+=("${KEYS[i]% *}")
	SIGNERS+=("${KEYS[i]#* }")
done
ALICE=${KEYS[3]#* } BOB=${KEYS[4]#* } CAROL=${KEYS[5]#* }
umask 077
{
	echo "# outboxd demo signers (hot wallets), generated $(date -u +%FT%TZ)"
	printf '%s\n' "${SEEDS[@]}"
} >"$TMP/keys"
chmod 0600 "$TMP/keys"
unset SEEDS KEYS
info "3 signer seeds generated into $TMP/keys (mode 0600)"

XLM=10000000 # stroops
acct() { printf '{"id": "%s", "seq": "%s", "balance": "%s"}' "$1" "$2" "$3"; }
accounts=$(printf '{"accounts": [%s, %s, %s, %s, %s]}' \
	"$(acct "${SIGNERS[0]}" 1000 $((100000 * XLM)))" \
	"$(acct "${SIGNERS[1]}" 2000 $((100000 * XLM)))" \
	"$(acct "${SIGNERS[2]}" 3000 $((100000 * XLM)))" \
	"$(acct "$ALICE" 4000 $((100 * XLM)))" \
	"$(acct "$BOB" 5000 $((10 * XLM)))")
curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' --data "$accounts" \
	"$SIM/debug/accounts" || die "funding the accounts in stellar-sim failed"
short() { echo "${1:0:6}..${1: -4}"; }
info "funded: signers $(short "${SIGNERS[0]}") $(short "${SIGNERS[1]}") $(short "${SIGNERS[2]}") with 100000 XLM each"
info "        customers alice $(short "$ALICE") 100 XLM, bob $(short "$BOB") 10 XLM, carol $(short "$CAROL") none"

# ---------------------------------------------------------------- 4. outboxd
say "outboxd: supervisor + fee oracle + gateway + 2 workers (log: $TMP/outboxd.log)"
env -u OUTBOX_CONFIG_FILE \
	"OUTBOX_DATABASE_URL=$DB_URL" \
	"STELLAR_RPC_URL=$SIM/" \
	"STELLAR_NETWORK_PASSPHRASE=$PASSPHRASE" \
	"OUTBOX_SIGNER_KEYS_FILE=$TMP/keys" \
	"OUTBOX_VAULT_CONTRACT=$CONTRACT" \
	"OUTBOX_INSTANCE=$INSTANCE" \
	"OUTBOX_RUN_DIR=$TMP" \
	"OUTBOX_WORKERS=2" \
	"OUTBOX_VSHARDS=8" \
	"OUTBOX_DISPATCH_INTERVAL_MS=200" \
	"OUTBOX_BACKOFF_BASE_MS=200" \
	"OUTBOX_BACKOFF_MAX_MS=1000" \
	"FEE_ORACLE_POLL_MS=500" \
	"FEE_ORACLE_TTL_MS=2000" \
	"OUTBOX_KAFKA_BROKERS=$KAFKA" \
	"OUTBOX_KAFKA_TOPIC=$TOPIC" \
	"OUTBOX_HTTP_ADDR=127.0.0.1:0" \
	setsid "$B/outboxd" >"$TMP/outboxd.log" 2>&1 &
OUTBOXD_PID=$!
up=0
for _ in $(seq 200); do
	kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited at start"
	if "$B/outboxctl" stats >/dev/null 2>&1; then
		up=1
		break
	fi
	sleep 0.1
done
((up)) || die "outboxd did not report healthy within 20 s (outboxctl stats)"
info "up: pid $OUTBOXD_PID, instance $INSTANCE, all children running, fee snapshot fresh"

# ---------------------------------------------------------------- 5. enqueue
declare -A LAST # op id -> the status last shown
say "enqueue: the application calls outbox.enqueue() inside its own transactions"
# enqueue "what it is" KIND USER RECORD SIGNER PAYLOAD [PRIORITY]
enqueue() {
	local what=$1 kind=$2 user=$3 rec=$4 signer=$5 payload=$6 prio=${7:-} row
	row=$(sql -v kind="$kind" -v user="$user" -v rec="$rec" -v signer="$signer" \
		-v payload="$payload" -v prio="$prio" <<'EOF'
SELECT id, idempotency_key, status, priority, created
FROM outbox.enqueue(:'kind', :'user', NULLIF(:'rec', ''), :'signer', :'payload'::jsonb,
                    NULLIF(:'prio', ''))
EOF
	) || die "enqueue of $kind $user $rec failed"
	IFS='|' read -r E_ID E_KEY E_STATUS E_PRIO E_CREATED <<<"$row"
	[[ $E_CREATED == t ]] && LAST[$E_ID]=$E_STATUS
	printf '   %-44s -> op %-2s %-8s %-9s created=%s  key %s\n' "$what" "$E_ID" "$E_PRIO" \
		"$E_STATUS" "$E_CREATED" "$E_KEY"
}
pay() { printf '{"account": "%s", "amount": "%s"}' "$1" "$2"; }

enqueue "alice withdraws 25 XLM" WITHDRAW alice wd-1001 "${SIGNERS[0]}" "$(pay "$ALICE" $((25 * XLM)))"
enqueue "alice deposits 100 XLM" DEPOSIT alice dep-1001 "${SIGNERS[1]}" "$(pay "$ALICE" $((100 * XLM)))"
DUP_ID=$E_ID
enqueue "bob deposits 5 XLM" DEPOSIT bob dep-2001 "${SIGNERS[1]}" "$(pay "$BOB" $((5 * XLM)))"
enqueue "treasury tops up the vault reserve 1000 XLM" REBALANCE treasury rb-1 "${SIGNERS[2]}" \
	"{\"amount\": \"$((1000 * XLM))\"}"
enqueue "carol's referral reward, 2 XLM" REFERRAL_REWARD carol "" "${SIGNERS[2]}" \
	"{\"account\": \"$CAROL\", \"amount\": \"$((2 * XLM))\", \"conversion_id\": \"conv-77\", \"leg\": \"referrer\"}"
enqueue "bob withdraws 1000 XLM (he has about 10)" WITHDRAW bob wd-2001 "${SIGNERS[0]}" "$(pay "$BOB" $((1000 * XLM)))"
OVERDRAFT_ID=$E_ID
info "the application retries alice's deposit (same business record, same key):"
enqueue "alice deposits 100 XLM (again)" DEPOSIT alice dep-1001 "${SIGNERS[1]}" "$(pay "$ALICE" $((100 * XLM)))"
[[ $E_CREATED == f && $E_ID == "$DUP_ID" ]] || die "the repeated key was not deduplicated (op $E_ID, created=$E_CREATED)"
info "-> the same op $E_ID, created=f: no second deposit"
info "and a buggy caller reuses that key with another amount:"
if err=$(sql -c "SELECT * FROM outbox.enqueue('DEPOSIT', 'alice', 'dep-1001', '${SIGNERS[1]}',
		'$(pay "$ALICE" $((999 * XLM)))'::jsonb)" 2>&1); then
	die "a reused key with another amount was accepted"
fi
info "-> refused: $(grep -m1 -o 'ERROR:.*' <<<"$err")"

# ---------------------------------------------------------------- 6. watch
say "watching outbox.ops (every 0.5 s) until every op is CONFIRMED or FAILED"
PRIO=(CRITICAL NORMAL LOW)
deadline=$((SECONDS + TIMEOUT))
while :; do
	open=0
	rows=$(sql -c "SELECT id, kind, priority, status, coalesce(tx_hash, '') FROM outbox.ops ORDER BY id") ||
		die "cannot read outbox.ops"
	while IFS='|' read -r id kind prio status hash; do
		[[ -n $id ]] || continue
		[[ $status == PENDING || $status == SUBMITTED ]] && open=$((open + 1))
		if [[ ${LAST[$id]:-} != "$status" ]]; then
			printf '   %s  op %-2s %-15s %-8s %-9s -> %-9s %s\n' "$(elapsed)" "$id" "$kind" \
				"${PRIO[prio]}" "${LAST[$id]:-(new)}" "$status" "${hash:+tx ${hash:0:12}..}"
			LAST[$id]=$status
		fi
	done <<<"$rows"
	((open == 0)) && break
	((SECONDS < deadline)) || die "ops still open after ${TIMEOUT}s: $(sql -c \
		"SELECT string_agg(id || ' ' || status, ', ') FROM outbox.ops WHERE status IN ('PENDING','SUBMITTED')")"
	kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd died"
	sleep 0.5
done
info "all ${#LAST[@]} ops terminal"

# The expected outcome: the overdraft FAILED on chain, everything else CONFIRMED.
bad=$(sql -c "SELECT string_agg(id || ' ' || kind || ' ' || status, ', ') FROM outbox.ops
	WHERE status <> CASE WHEN id = $OVERDRAFT_ID THEN 'FAILED' ELSE 'CONFIRMED' END")
[[ -z $bad ]] || die "unexpected outcome: $bad"

say "event trail of op $OVERDRAFT_ID (bob's overdraft) from outbox.events"
sql -c "SELECT seq, to_char(at, 'HH24:MI:SS.MS'), type,
	coalesce(from_status, '-') || ' -> ' || coalesce(to_status, '-'), body::text
	FROM outbox.events WHERE op_id = $OVERDRAFT_ID ORDER BY seq" |
	while IFS='|' read -r seq at type tr body; do
		body=$(jq -c 'with_entries(if (.value | type) == "string" and (.value | length) == 64
			then .value = .value[0:12] + ".." else . end)' <<<"$body")
		printf '   #%s %s  %-10s %-22s %s\n' "$seq" "$at" "$type" "$tr" "$body"
	done
sql -c "SELECT attempt_no, bump_no, left(tx_hash, 12), outcome, coalesce(result_code, '-'), fee
	FROM outbox.attempts WHERE op_id = $OVERDRAFT_ID ORDER BY id" |
	while IFS='|' read -r an bn h oc code fee; do
		printf '   attempt %s.%s tx %s.. %s %s (fee %s stroops)\n' "$an" "$bn" "$h" "$oc" "$code" "$fee"
	done
info "last_error: $(sql -c "SELECT coalesce(last_error, '-') FROM outbox.ops WHERE id = $OVERDRAFT_ID")"

say "outboxctl stats (the process table; from each process's counters, the dispatch ones)"
"$B/outboxctl" stats 2>&1 | awk '
	/^[a-z]+ [0-9]+: / {
		line = $1 " " $2
		for (i = 3; i <= NF; i++)
			if ($i ~ /^outbox_(child_spawns|fee_publishes|claims|sends|ops_confirmed|ops_failed|fee_bumps)_total=/)
				line = line " " $i
		if (line != $1 " " $2) print "   " line
		next
	}
	/^fee snapshot|^latest ledger|^$/ { next }
	{ print "   " $0 }' || true
say "outboxctl fee"
"$B/outboxctl" fee 2>&1 | sed 's/^/   /' || true

say "stellar-sim /debug/executions: vault calls that executed, by op_ref = sha256(idempotency key)"
ex=$(curl -fsS "$SIM/debug/executions") || die "cannot read $SIM/debug/executions"
confirmed=0
while IFS='|' read -r id key status ref; do
	n=$(jq -r --arg r "$ref" '.by_ref[$r] // 0' <<<"$ex")
	printf '   op %-2s %-9s %-42s op_ref %s..  executed %s\n' "$id" "$status" "$key" "${ref:0:12}" "$n"
	if [[ $status == CONFIRMED ]]; then
		confirmed=$((confirmed + 1))
		[[ $n == 1 ]] || die "op $id is CONFIRMED but executed $n times"
	else
		[[ $n == 0 ]] || die "op $id is $status but executed $n times"
	fi
done < <(sql -c "SELECT id, idempotency_key, status,
	encode(sha256(convert_to(idempotency_key, 'UTF8')), 'hex') FROM outbox.ops ORDER BY id")
total=$(jq '.by_ref | length' <<<"$ex")
((total == confirmed)) || die "the sim executed $total op_refs, $confirmed ops are CONFIRMED"
maxp=$(jq '[.max_pending_per_account[]] | max // 0' <<<"$ex")
info "exactly once: $confirmed confirmed ops, $total executions, nothing else; at most $maxp tx in flight per signer"
st=$(curl -fsS "$SIM/debug/state") || die "cannot read $SIM/debug/state"
bal() { jq -r --arg a "$1" '(.balances[$a] // "0") | tonumber / 10000000 | tostring' <<<"$st"; }
info "balances now: alice $(bal "$ALICE") XLM, bob $(bal "$BOB") XLM, carol $(bal "$CAROL") XLM (fees are paid by the signers)"

# ---------------------------------------------------------------- 7. Kafka
if [[ -n $KAFKA ]]; then
	say "lifecycle events on Kafka: every row of outbox.events, checked by outboxctl audit --verify"
	for _ in $(seq 300); do
		left=$(sql -c "SELECT count(*) FROM outbox.events WHERE published_at IS NULL")
		((left == 0)) && break
		sleep 0.1
	done
	((left == 0)) || die "$left events still not published to Kafka after 30 s"
	info "$(sql -c "SELECT count(*) FROM outbox.events") events published (each role relays the chains it owns)"
	audit_rc=0
	"$B/outboxctl" audit --verify --brokers "$KAFKA" --topic "$TOPIC" >"$TMP/audit.txt" 2>&1 || audit_rc=$?
	sed 's/^/   /' "$TMP/audit.txt"
	((audit_rc == 0)) || die "outboxctl audit found problems (exit $audit_rc)"
fi

# ---------------------------------------------------------------- 8. stop
say "stopping: SIGTERM to outboxd (drain), then stellar-sim"
kill -TERM "$OUTBOXD_PID"
for _ in $(seq 150); do
	kill -0 "$OUTBOXD_PID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$OUTBOXD_PID" 2>/dev/null && die "outboxd did not exit within 15 s of SIGTERM"
rc=0
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
printf '\ndemo: OK in %ss\n' "$((SECONDS - START))"
