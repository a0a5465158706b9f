# shellcheck shell=bash
# ops/demo/full.sh - sourced by ops/demo.sh: the product at work. A funded
# population, outboxd with 4 workers, the load driver (outbox-demo-load)
# for DURATION seconds at RATE intents/s with the fault scenario
# (scenario.sh) running beside it, then the summary (outbox-demo-report).

N_CUSTOMERS=40
N_AGENTS=4
LEDGER_CAPACITY=20 # transactions per ledger in the sim; the oracle's FEE_ORACLE_LEDGER_MAX_TX

# Each signer has one transaction in flight at a time (the network's rule),
# about one op a second with 0.5 s ledgers: twice the rate leaves headroom
# for the congestion phase.
full_signers() { awk -v r="$RATE" 'BEGIN { n = int(r * 2 + 0.999); print (n < 8 ? 8 : n > 200 ? 200 : n) }'; }

full_population() {
	say "stellar-sim: a local Stellar network, one ledger every 0.5 s, $LEDGER_CAPACITY transactions per ledger"
	setup_sim --ledger-ms 500 --ledger-capacity "$LEDGER_CAPACITY" --fee-window-soroban 10
	local ns keys i seeds=() p=$TMP/population
	ns=$(full_signers)
	mapfile -t keys < <(keygen $((ns + N_CUSTOMERS)))
	((${#keys[@]} == ns + N_CUSTOMERS)) || die "key generation failed"
	for ((i = 0; i < ns; i++)); do seeds+=("${keys[i]% *}"); done
	write_keys "${seeds[@]}"
	{
		echo "# the demo's population for outbox-demo-load"
		for ((i = 0; i < ns; i++)); do echo "signer ${keys[i]#* }"; done
		for ((i = 0; i < N_CUSTOMERS; i++)); do
			printf 'customer user-%02d %s %s\n' $((i + 1)) "${keys[ns + i]#* }" $(((5000 + RANDOM % 15000) * XLM))
		done
		for ((i = 1; i <= N_AGENTS; i++)); do echo "agent agent-$i"; done
	} >"$p"
	{
		awk '$1 == "signer" { printf "{\"id\": \"%s\", \"seq\": \"%d\", \"balance\": \"%d\"}\n", $2, NR * 1000, 1000000 * 10000000 }' "$p"
		awk '$1 == "customer" { printf "{\"id\": \"%s\", \"seq\": \"%d\", \"balance\": \"%s\"}\n", $3, NR * 1000, $4 }' "$p"
	} | fund
	info "$ns signer seeds generated into $TMP/keys (mode 0600); each signer funded with 1000000 XLM"
	info "$N_CUSTOMERS customers funded with 5000..20000 XLM each; $N_AGENTS liquidity agents"
	sql -f "$ROOT/ops/demo/app.sql" >/dev/null || die "cannot create the application's tables (ops/demo/app.sql)"
	info "the application's tables: app.payments (its business rows) + a trigger mirroring each outcome onto them"
}

# The gateway (ops/gateway/) when this build has one: a free port for its
# HTTP API, and later an API key for the services that enqueue over HTTP.
GATEWAY=""
GW_ENV=()
full_gateway_port() {
	local usage
	usage=$("$B/outboxctl" keys 2>&1) || true # its usage (exit 2) when this outboxctl has keys
	grep -q 'keys create' <<<"$usage" || return 0
	local port=18080
	while [[ -n $(ss -Hltn "( sport = :$port )" 2>/dev/null) ]]; do
		port=$((port + 1))
		((port < 18400)) || die "no free port for the gateway in 18080..18399"
	done
	GATEWAY=http://127.0.0.1:$port
	GW_ENV=("OUTBOX_HTTP_ADDR=127.0.0.1:$port")
}

full_gateway_key() {
	[[ -n $GATEWAY ]] || return 0
	for _ in $(seq 200); do
		curl -fsS -o /dev/null --max-time 2 "$GATEWAY/healthz" 2>/dev/null && break
		sleep 0.1
	done
	curl -fsS -o /dev/null --max-time 2 "$GATEWAY/healthz" || die "the gateway does not answer on $GATEWAY/healthz"
	(umask 077 && "$B/outboxctl" keys create --name demo-services --scopes outbox:enqueue >"$TMP/api.key") ||
		die "outboxctl keys create failed"
	info "gateway on $GATEWAY (admin API, /metrics, POST /api/v1/ops); an API key of scope outbox:enqueue in $TMP/api.key (0600)"
}

# The demo's outboxd: the seed's behaviour on a fast clock (README, Configuration).
full_outboxd() {
	full_gateway_port
	say "outboxd: supervisor + fee oracle + 4 workers${GATEWAY:+ + gateway} (log: $TMP/outboxd.log)"
	start_outboxd "${GW_ENV[@]}" OUTBOX_WORKERS=4 OUTBOX_DISPATCH_INTERVAL_MS=200 \
		OUTBOX_BACKOFF_BASE_MS=200 OUTBOX_BACKOFF_MAX_MS=2000 \
		OUTBOX_SUBMITTED_TIMEOUT_MS=3000 \
		OUTBOX_LOW_DEFER_MS=2000 OUTBOX_LOW_MAX_DEFER_MS=12000 \
		FEE_ORACLE_POLL_MS=500 FEE_ORACLE_TTL_MS=2000 FEE_ORACLE_DWELL_MS=2000 \
		FEE_ORACLE_LEDGER_MAX_TX="$LEDGER_CAPACITY"
	info "fast clock for the demo: fee bump after 3 s in SUBMITTED, LOW deferred 2 s at a time (12 s at most)"
	full_gateway_key
	info "while it runs, in another terminal: OUTBOX_INSTANCE=$INSTANCE OUTBOX_DATABASE_URL='$DB_URL' $B/outboxctl top"
}

# The load in the background, watched every half second: a dead outboxd or
# stellar-sim ends the demo at once, and Ctrl-C is handled at once (pause).
full_load() {
	say "load: $RATE intents/s for ${DURATION}s, then until every op settles (a line a second)"
	scenario_run &
	BG_PIDS+=($!)
	"$B/outbox-demo-load" --population "$TMP/population" --rate "$RATE" --duration "$DURATION" \
		--drain-timeout "$DRAIN" --instance "$INSTANCE" \
		${GATEWAY:+--gateway "$GATEWAY" --api-key-file "$TMP/api.key"} 2>"$TMP/load.err" &
	local load=$! rc=0
	BG_PIDS+=("$load")
	while kill -0 "$load" 2>/dev/null; do
		kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd exited during the load"
		kill -0 "$SIM_PID" 2>/dev/null || die "stellar-sim exited during the load"
		pause 0.5
	done
	wait "$load" || rc=$?
	cat "$TMP/load.err" >&2
	((rc == 0)) || die "the load driver failed (exit $rc)"
	wait "${BG_PIDS[0]}" || die "the fault scenario failed"
	BG_PIDS=()
}

# One request as a client would write it: an urgent reserve top-up that
# waits for its outcome ("wait": true), then a few lines of /metrics.
full_gateway_show() {
	[[ -n $GATEWAY ]] || return 0
	say "the gateway: a synchronous enqueue over HTTP, and /metrics"
	local signer body ans t0
	signer=$(awk '$1 == "signer" { print $2; exit }' "$TMP/population")
	body=$(jq -nc --arg s "$signer" '{kind: "REBALANCE", userId: "treasury", businessRecordId: "rb-urgent-1",
		signer: $s, payload: {amount: "50000000000"}, priority: "CRITICAL", wait: true}')
	(umask 077 && printf 'Authorization: Bearer %s\n' "$(cat "$TMP/api.key")" >"$TMP/auth.header")
	info "curl -H 'Authorization: Bearer <key>' -d '${body//$signer/G...}' $GATEWAY/api/v1/ops"
	t0=$(date +%s.%N)
	ans=$(curl -sS --max-time 130 -H @"$TMP/auth.header" -H 'Content-Type: application/json' \
		-d "$body" "$GATEWAY/api/v1/ops") || die "POST $GATEWAY/api/v1/ops failed"
	jq -e '.op.status == "CONFIRMED"' <<<"$ans" >/dev/null ||
		die "the synchronous enqueue did not end CONFIRMED: $ans"
	info "-> $(jq -c '{op: (.op | {id, status, priority}), timedOut}' <<<"$ans") after $(awk -v t="$t0" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - t }') s"
	curl -fsS --max-time 5 "$GATEWAY/metrics" |
		grep -E '^outbox_(ops_confirmed|fee_bumps|ops_deferred|low_deferred)_total|^outbox_queue_depth' |
		head -n 8 | sed 's/^/   \/metrics: /' || true
}

full_report() {
	say "summary"
	local rc=0
	"$B/outbox-demo-report" --db "$DB_URL" || rc=$?
	((rc == 0)) || die "the run's outcome is not what it should be (above)"
}

full_run() {
	full_population
	full_outboxd
	full_load
	full_gateway_show
	full_report
	exactly_once
}

closing_words() {
	say "next"
	info "watch a longer run live: ops/demo.sh --duration 600 & then, in another terminal,"
	info "  OUTBOX_INSTANCE=<the instance it prints> build/outboxctl top   (processes, rates, fees, queue depth)"
	info "more load: ops/demo.sh --rate 30; how the demo works: ops/README.md (demo.sh)"
}
