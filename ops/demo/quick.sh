# shellcheck shell=bash
# ops/demo/quick.sh - sourced by ops/demo.sh: the few-second demo
# (--quick). Three signers, three customers, six intents through
# outbox.enqueue() - one a withdrawal beyond the balance, one key enqueued
# again and once reused with another amount - each watched to its end.

quick_population() {
	say "stellar-sim: a local Stellar network, one ledger every 0.5 s"
	setup_sim --ledger-ms 500
	local keys i
	mapfile -t keys < <(keygen 6)
	((${#keys[@]} == 6)) || die "key generation failed"
	SIGNERS=()
	for i in 0 1 2; do SIGNERS+=("${keys[i]#* }"); done
	write_keys "${keys[0]% *}" "${keys[1]% *}" "${keys[2]% *}"
	ALICE=${keys[3]#* } BOB=${keys[4]#* } CAROL=${keys[5]#* }
	info "3 signer seeds generated into $TMP/keys (mode 0600)"
	{
		for i in 0 1 2; do acct "${SIGNERS[i]}" $(((i + 1) * 1000)) $((100000 * XLM)); done
		acct "$ALICE" 4000 $((100 * XLM))
		acct "$BOB" 5000 $((10 * XLM))
	} | fund
	info "funded: signers $(short "${SIGNERS[0]}") $(short "${SIGNERS[1]}") $(short "${SIGNERS[2]}") with 100000 XLM each"
	info "        customers alice $(short "$ALICE") 100 XLM, bob $(short "$BOB") 10 XLM, carol $(short "$CAROL") none"
}

quick_outboxd() {
	say "outboxd: supervisor + fee oracle + 2 workers (log: $TMP/outboxd.log)"
	# OUTBOX_HTTP_ADDR port 0: a gateway, in a build that has one, takes any
	# free port rather than 8080, which another run may hold.
	start_outboxd OUTBOX_WORKERS=2 OUTBOX_DISPATCH_INTERVAL_MS=200 OUTBOX_BACKOFF_BASE_MS=200 \
		OUTBOX_BACKOFF_MAX_MS=1000 FEE_ORACLE_POLL_MS=500 FEE_ORACLE_TTL_MS=2000 \
		OUTBOX_HTTP_ADDR=127.0.0.1:0
}

declare -A LAST # op id -> the status last shown
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

quick_enqueue() {
	say "enqueue: the application calls outbox.enqueue() inside its own transactions"
	enqueue "alice withdraws 25 XLM" WITHDRAW alice wd-1001 "${SIGNERS[0]}" "$(pay "$ALICE" $((25 * XLM)))"
	enqueue "alice deposits 100 XLM" DEPOSIT alice dep-1001 "${SIGNERS[1]}" "$(pay "$ALICE" $((100 * XLM)))"
	local dup=$E_ID err
	enqueue "bob deposits 5 XLM" DEPOSIT bob dep-2001 "${SIGNERS[1]}" "$(pay "$BOB" $((5 * XLM)))"
	enqueue "treasury tops up the vault reserve 1000 XLM" REBALANCE treasury rb-1 "${SIGNERS[2]}" \
		"{\"amount\": \"$((1000 * XLM))\"}"
	enqueue "carol's referral reward, 2 XLM" REFERRAL_REWARD carol "" "${SIGNERS[2]}" \
		"{\"account\": \"$CAROL\", \"amount\": \"$((2 * XLM))\", \"conversion_id\": \"conv-77\", \"leg\": \"referrer\"}"
	enqueue "bob withdraws 1000 XLM (he has about 10)" WITHDRAW bob wd-2001 "${SIGNERS[0]}" "$(pay "$BOB" $((1000 * XLM)))"
	OVERDRAFT_ID=$E_ID
	info "the application retries alice's deposit (same business record, same key):"
	enqueue "alice deposits 100 XLM (again)" DEPOSIT alice dep-1001 "${SIGNERS[1]}" "$(pay "$ALICE" $((100 * XLM)))"
	[[ $E_CREATED == f && $E_ID == "$dup" ]] || die "the repeated key was not deduplicated (op $E_ID, created=$E_CREATED)"
	info "-> the same op $E_ID, created=f: no second deposit"
	info "and a buggy caller reuses that key with another amount:"
	if err=$(sql -c "SELECT * FROM outbox.enqueue('DEPOSIT', 'alice', 'dep-1001', '${SIGNERS[1]}',
		'$(pay "$ALICE" $((999 * XLM)))'::jsonb)" 2>&1); then
		die "a reused key with another amount was accepted"
	fi
	info "-> refused: $(grep -m1 -o 'ERROR:.*' <<<"$err")"
}

# quick_show_changes: one line per op whose status changed; sets OPEN.
quick_show_changes() {
	local prio=(CRITICAL NORMAL LOW) rows id kind p status hash
	rows=$(sql -c "SELECT id, kind, priority, status, coalesce(tx_hash, '') FROM outbox.ops ORDER BY id") ||
		die "cannot read outbox.ops"
	OPEN=0
	while IFS='|' read -r id kind p status hash; do
		[[ -n $id ]] || continue
		[[ $status == PENDING || $status == SUBMITTED ]] && OPEN=$((OPEN + 1))
		[[ ${LAST[$id]:-} == "$status" ]] && continue
		printf '   %s  op %-2s %-15s %-8s %-9s -> %-9s %s\n' "$(elapsed)" "$id" "$kind" \
			"${prio[p]}" "${LAST[$id]:-(new)}" "$status" "${hash:+tx ${hash:0:12}..}"
		LAST[$id]=$status
	done <<<"$rows"
}

quick_watch() {
	say "watching outbox.ops (every 0.5 s) until every op is CONFIRMED or FAILED"
	local deadline=$((SECONDS + TIMEOUT))
	while :; do
		quick_show_changes
		((OPEN == 0)) && break
		((SECONDS < deadline)) || die "ops still open after ${TIMEOUT}s: $(sql -c \
			"SELECT string_agg(id || ' ' || status, ', ') FROM outbox.ops WHERE status IN ('PENDING','SUBMITTED')")"
		kill -0 "$OUTBOXD_PID" 2>/dev/null || die "outboxd died"
		sleep 0.5
	done
	info "all ${#LAST[@]} ops terminal"
	# The expected outcome: the overdraft FAILED on chain, everything else CONFIRMED.
	local bad
	bad=$(sql -c "SELECT string_agg(id || ' ' || kind || ' ' || status, ', ') FROM outbox.ops
		WHERE status <> CASE WHEN id = $OVERDRAFT_ID THEN 'FAILED' ELSE 'CONFIRMED' END")
	[[ -z $bad ]] || die "unexpected outcome: $bad"
}

quick_trail() {
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
}

quick_stats() {
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
}

quick_balances() {
	local st
	st=$(curl -fsS "$SIM/debug/state") || die "cannot read $SIM/debug/state"
	bal() { jq -r --arg a "$1" '(.balances[$a] // "0") | tonumber / 10000000 | tostring' <<<"$st"; }
	info "balances now: alice $(bal "$ALICE") XLM, bob $(bal "$BOB") XLM, carol $(bal "$CAROL") XLM (fees are paid by the signers)"
}

quick_run() {
	quick_population
	quick_outboxd
	quick_enqueue
	quick_watch
	quick_trail
	quick_stats
	exactly_once per-op
	quick_balances
}
