#!/usr/bin/env bash
# tests/chaos/secrets.sh - the signer seeds never leave outboxd's guarded
# memory.
#
# A dispatch flow runs with known seeds (deterministic, tests/chaos/keygen.py
# with a prefix) and then every place a seed could leak is searched for each
# seed in every spelling: the S... strkey, the raw 32 bytes, their hex
# (either case) and their base64.
#
#   logs         outboxd's and stellar-sim's
#   Kafka        every message of the run's topic (kcat: key, headers, value)
#   PostgreSQL   pg_dump of the outbox schema (rows and definitions)
#   shm          a copy of /dev/shm/outboxd-<instance> taken while it runs
#   cores        gcore of the supervisor, the oracle and every worker while
#                they work (gdb honours MADV_DONTDUMP, as the kernel does),
#                and a real kernel core dump of a worker killed with SIGABRT
#                (the machine's core_pattern must be a file name, not a pipe
#                to a collector; the scenario says so and skips that part
#                otherwise)
#
# The gateway's API keys too: three are created with `outboxctl keys create`
# (one then revoked) and used over HTTP (reads, an enqueue, a public route
# given a key), with near misses (a key with one character changed, a key
# one character too long) refused 401; every artifact above, the gateway's
# gcore included, is then searched for each key and near miss: the whole
# key, its secret part and that part's 32 bytes raw and in hex. Only their
# BLAKE2b hashes may be stored; the gateway wipes the Authorization value
# once hashed, so even a dump of the gateway that ignores MADV_DONTDUMP
# must not hold one.
#
# Exit 1 when any seed or key is found anywhere, naming the artifact and
# spelling.
. "$(dirname "$0")/lib.sh"
chaos_init secrets

N=${CHAOS_OPS:-300}
command -v gcore >/dev/null || die "gcore (gdb) is needed"
command -v kcat >/dev/null || die "kcat is needed"
KEYGEN_PREFIX=5ec2e75ec2e75ec2 # known seeds: sha256(prefix || index)

pg_start
db_make
kafka_topic
sim_start --ledger-ms 300 --ledger-capacity 200
keys_make 8
fund
# outboxd in $T with cores allowed, so a worker's core lands in a file we own
core_pattern=$(cat /proc/sys/kernel/core_pattern)
kernel_core=1
[[ $core_pattern == \|* ]] && kernel_core=0
HTTP_PORT=$(free_port 18480)
GW=http://127.0.0.1:$HTTP_PORT
# gcore stops a process while it dumps, seconds on a busy machine: the
# supervisor's watchdog must not take that for a hung child
OUTBOXD_CORES=1 outboxd_start "OUTBOX_HTTP_ADDR=127.0.0.1:$HTTP_PORT" \
	OUTBOX_HTTP_RATE_LIMIT=100000 OUTBOX_HTTP_RATE_BURST=100000 OUTBOX_HEARTBEAT_TIMEOUT_MS=300000
load_start "$N" 50
wait_confirmed $((N / 3)) 300

# ---- API keys: created, used, refused, then searched for like the seeds
octl() { env OUTBOX_DATABASE_URL="$DB_URL" "$B/outboxctl" "$@"; }
# http KEY METHOD PATH [BODY]: the status code
http() {
	local args=(-s -o /dev/null -w '%{http_code}' --max-time 60 -X "$2" -H "Authorization: Bearer $1")
	[[ -n ${4:-} ]] && args+=(-H 'Content-Type: application/json' --data "$4")
	curl "${args[@]}" "$GW$3" || true
}
expect_http() { # expect_http STATUS KEY METHOD PATH [BODY]
	local got
	got=$(http "${@:2}")
	[[ $got == "$1" ]] || violation "$3 $4 with a key: HTTP $got, not $1"
}
near_miss() { # the key with its last character changed
	local k=$1 last=${1: -1}
	[[ $last == A ]] && echo "${k%?}B" || echo "${k%?}A"
}
API_KEYS=()
for name in reader writer old; do
	k=$(octl keys create --name "api-$name" --scopes outbox:read,outbox:write,outbox:enqueue 2>>"$T/keys.log") ||
		die "outboxctl keys create failed: $(tail -1 "$T/keys.log")"
	[[ ${#k} == 60 ]] || die "outboxctl keys create printed no key"
	API_KEYS+=("$k")
done
octl keys revoke api-old >>"$T/keys.log" 2>&1 || die "outboxctl keys revoke failed"
NEAR=()
for k in "${API_KEYS[@]}"; do NEAR+=("$(near_miss "$k")" "${k}x"); done
wait_for 30 "the gateway to accept the API keys" bash -c \
	"[[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer ${API_KEYS[1]}' $GW/api/admin/outbox/stats) == 200 ]]"
wait_for 30 "the gateway to refuse the revoked key" bash -c \
	"[[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer ${API_KEYS[2]}' $GW/api/admin/outbox/stats) == 401 ]]"
api_ops=0
for i in 0 1; do
	k=${API_KEYS[i]}
	expect_http 200 "$k" GET '/api/admin/outbox?limit=5'
	expect_http 200 "$k" GET /api/admin/outbox/stats
	expect_http 200 "$k" GET /api/admin/outbox/1/why
	expect_http 200 "$k" GET /healthz
	for j in 1 2 3; do
		body=$(jq -nc --arg s "${SIGNERS[j]}" --arg a "${CUSTOMERS[j]}" --arg r "api-$i-$j" \
			'{kind: "DEPOSIT", userId: "api-user", businessRecordId: $r, signer: $s,
			  payload: {account: $a, amount: "100"}}')
		expect_http 201 "$k" POST /api/v1/ops "$body"
		api_ops=$((api_ops + 1))
	done
done
expect_http 401 "${API_KEYS[2]}" POST /api/v1/ops '{}'
for k in "${NEAR[@]}"; do
	expect_http 401 "$k" GET /api/admin/outbox/stats
	expect_http 401 "$k" POST /api/v1/ops '{}'
done
printf '%s\n' "${API_KEYS[@]}" "${NEAR[@]}" >"$T/apikeys.txt"

mkdir -p "$T/artifacts"
cp "/dev/shm/outboxd-$INSTANCE" "$T/artifacts/shm.bin"
for p in $(pgrep -g "$OUTBOXD_PID"); do
	gcore -o "$T/artifacts/gcore" "$p" >/dev/null 2>&1 || violation "gcore of $p failed"
done
worker=$(ctl stats --json | jq -r '[.processes[] | select(.role == "worker")][0].pid')
gateway=$(ctl stats --json | jq -r '[.processes[] | select(.role == "gateway")][0].pid')
[[ $gateway =~ ^[0-9]+$ ]] || die "no gateway process"
# For the record, not a check: a dump that ignores MADV_DONTDUMP (gdb told to
# include excluded mappings) shows whether the seeds are in memory at all, so
# the clean cores above owe it to libsodium's guarded pages being left out.
mkdir -p "$T/full"
gdb -batch -p "$worker" -ex 'set use-coredump-filter off' -ex 'set dump-excluded-mappings on' \
	-ex "gcore $T/full/worker.core" >/dev/null 2>&1 || true
# The gateway keeps no key in guarded memory: it wipes them. Even this dump
# must hold none (checked below).
mkdir -p "$T/full-gateway"
gdb -batch -p "$gateway" -ex 'set use-coredump-filter off' -ex 'set dump-excluded-mappings on' \
	-ex "gcore $T/full-gateway/gateway.core" >/dev/null 2>&1 ||
	violation "a full dump of the gateway failed"
if ((kernel_core)); then
	wcwd=$(readlink "/proc/$worker/cwd")
	kill -ABRT "$worker"
	core=$wcwd/$core_pattern
	[[ $(cat /proc/sys/kernel/core_uses_pid) == 1 ]] && core=$core.$worker
	wait_for 60 "the worker's core file $core" test -s "$core"
	sleep 1 # the kernel has finished writing it when the supervisor reaped the worker
	mv "$core" "$T/artifacts/kernel-core.worker"
fi
load_wait 300
wait_for 300 "every op to reach a final state" all_terminal
wait_until 60 bash -c "[[ \$(psql -X -At -d '$ADMIN_URL' -c 'SELECT count(*) FROM outbox.events_not_published') == 0 ]]" || true
outboxd_stop

cp "$T/outboxd.log" "$T/artifacts/outboxd.log"
cp "$T/sim.log" "$T/artifacts/sim.log"
kcat -C -b "$KAFKA" -t "$TOPIC" -e -q -f 'key=%k headers=%h value=%s\n' >"$T/artifacts/kafka.txt" 2>/dev/null ||
	violation "kcat could not read $TOPIC"
[[ -s $T/artifacts/kafka.txt ]] || violation "no events read back from Kafka"
pg_dump -h 127.0.0.1 -p "$PG_PORT" -U postgres -n outbox chaos >"$T/artifacts/outbox.sql" ||
	violation "pg_dump failed"

printf '%s\n' "${SEED_HEX[@]}" >"$T/seeds.hex"
mkdir -p "$T/control"
cp "$T/keys" "$T/control/keys" # the scan must find them where they are
cp "$T/apikeys.txt" "$T/control/apikeys.txt"
scan() {
	python3 - "$T/seeds.hex" "$1" "$T/apikeys.txt" <<'EOF'
import base64, json, os, sys
seeds = [bytes.fromhex(l.strip()) for l in open(sys.argv[1]) if l.strip()]
apikeys = [l.strip() for l in open(sys.argv[3]) if l.strip()]

def secret_raw(k):  # the 43 base64url characters after "obx_<12 hex>_"
    s = k[17:60]
    try:
        return base64.urlsafe_b64decode(s + "=")
    except Exception:
        return None

key_spellings = {
    "key": lambda k: k.encode(), "secret": lambda k: k[17:60].encode(),
    "secret_raw": secret_raw, "secret_hex": lambda k: (secret_raw(k) or b"").hex().encode(),
}

def strkey(raw):  # S... for a seed (version 18 << 3), as keygen.py
    b, crc = bytes([18 << 3]) + raw, 0
    for c in b:
        crc ^= c << 8
        for _ in range(8):
            crc = (crc << 1 ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return base64.b32encode(b + crc.to_bytes(2, "little"))

spellings = {
    "strkey": strkey, "raw": lambda r: r, "hex": lambda r: r.hex().encode(),
    "HEX": lambda r: r.hex().upper().encode(), "base64": lambda r: base64.b64encode(r),
}
out = {"artifacts": {}, "hits": [], "key_hits": []}
for name in sorted(os.listdir(sys.argv[2])):
    data = open(os.path.join(sys.argv[2], name), "rb").read()
    out["artifacts"][name] = len(data)
    for i, s in enumerate(seeds):
        for sp, f in spellings.items():
            if f(s) in data:
                out["hits"].append({"artifact": name, "seed": i, "spelling": sp})
    for i, k in enumerate(apikeys):
        for sp, f in key_spellings.items():
            v = f(k)
            if v and len(v) >= 32 and v in data:
                out["key_hits"].append({"artifact": name, "key": i, "spelling": sp})
print(json.dumps(out))
EOF
}
scan=$(scan "$T/artifacts") || die "the scan failed"
control=$(scan "$T/control") || die "the scan failed"
full=$(scan "$T/full") || die "the scan failed"
full_gateway=$(scan "$T/full-gateway") || die "the scan failed"
(($(jq '[.hits[] | select(.spelling == "strkey")] | length' <<<"$control") == 8)) ||
	violation "the scan does not find the 8 seeds in the keys file itself: $control"
(($(jq '[.key_hits[] | select(.spelling == "key")] | length' <<<"$control") == ${#API_KEYS[@]} * 3)) ||
	violation "the scan does not find the API keys in their own file: $control"
hits=$(jq '.hits | length' <<<"$scan")
((hits == 0)) || violation "seeds found: $(jq -c '.hits[:10]' <<<"$scan")"
key_hits=$(jq '.key_hits | length' <<<"$scan")
((key_hits == 0)) || violation "API keys found: $(jq -c '.key_hits[:10]' <<<"$scan")"
gw_hits=$(jq '(.hits + .key_hits) | length' <<<"$full_gateway")
((gw_hits == 0)) || violation "secrets in the gateway's full dump: $(jq -c '.key_hits[:10]' <<<"$full_gateway")"
# the scan must see the keys' traces where they may be: their prefixes in the audit rows
grep -q "${API_KEYS[0]:0:16}" "$T/artifacts/outbox.sql" || violation "no API key prefix in the dump: were the keys used?"
# the scan must be able to find something: the signers' public keys are in the logs and rows
grep -q "${SIGNERS[0]}" "$T/artifacts/outbox.sql" || violation "the scan saw no signer address in the dump: is it reading the right run?"
SUMMARY=$(jq -nc --argjson s "$scan" --argjson k "$kernel_core" --arg cp "$core_pattern" --argjson f "$full" \
	--argjson g "$full_gateway" --argjson nk ${#API_KEYS[@]} --argjson nn ${#NEAR[@]} --argjson no "$api_ops" \
	'{seeds: 8, artifacts: $s.artifacts, hits: ($s.hits | length), kernel_core: ($k == 1), core_pattern: $cp,
	  seeds_in_a_dump_that_ignores_dontdump: ($f.hits | map(.seed) | unique | length),
	  api_keys: {keys: $nk, near_misses: $nn, enqueued_over_http: $no, hits: ($s.key_hits | length),
	             in_a_full_gateway_dump: ($g.key_hits | length)}}')
if ((${#VIOLATIONS[@]})); then
	summary_line false
	exit 1
fi
summary_line true
