#!/usr/bin/env bash
# ops/demo.sh - outboxd at work on this machine, in one command:
#
#   ops/demo.sh [--duration SECONDS] [--rate OPS_PER_S]   # about a minute (60 s of load at 10/s)
#   ops/demo.sh --quick                                    # the few-second run the tests use
#
#   1. installs what is missing (as root on Debian: ops/lib/deps.sh) and
#      builds (cmake, into build/ or OUTBOX_BUILD_DIR) when needed;
#   2. makes sure a Kafka broker answers (OUTBOX_KAFKA_BROKERS, else the one
#      ops/kafka.sh runs on 127.0.0.1:9092, else one of its own, stopped at
#      the end; OUTBOX_DEMO_KAFKA=0 leaves Kafka out);
#   3. makes a fresh database outboxd_demo_<pid> on the PostgreSQL of
#      OUTBOX_PG_BASE, else OUTBOX_DATABASE_URL's server, else 127.0.0.1:5432
#      (or a private server, ops/lib/pg.sh), migrates it, drops it at the end;
#   4. starts stellar-sim (the local Stellar network, 0.5 s ledgers), generates
#      signer keys (a 0600 keys file) and funds the accounts;
#   5. the default run (ops/demo/full.sh): 40 customers and 4 agents, outboxd
#      with 4 workers and its gateway (when the build has one), and
#      outbox-demo-load driving user deposits and withdrawals, recurring
#      deposits, referral payouts and agent rebalances through the public
#      entry points - outbox.enqueue() in the application's own transaction,
#      beside its business row, and the gateway's HTTP enqueue - with a line
#      a second, while ops/demo/scenario.sh injects RPC faults, SIGKILLs a
#      worker, congests the network and lags the RPC; then
#      outbox-demo-report: ops by final state, latency per priority, fee
#      bumps, deferrals, charts of throughput and latency over the run.
#      --quick (ops/demo/quick.sh): outboxd with 2 workers and six intents,
#      each watched to its end, one op's event trail, outboxctl stats and fee;
#   6. checks in the sim's /debug/executions that every confirmed op executed
#      exactly once, that every lifecycle event reached Kafka and that
#      `outboxctl audit --verify` finds the topic clean;
#   7. stops outboxd with SIGTERM (it drains, exits 0) and the sim, cleans up.
#
# Exits 0 when all of that happened as described, 1 with "demo: FAILED: <why>"
# when something did not (OUTBOX_DEMO_TIMEOUT seconds for the ops to settle:
# 60 with --quick, else 120 after the load), 2 on a usage error. Ctrl-C stops
# everything it started (exit 130). ops/README.md (demo.sh) has the details:
# every option and variable, what each step shows, the files of ops/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$SECONDS
CONTRACT=CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE # the vault
PASSPHRASE="Standalone Network ; February 2017"
XLM=10000000 # stroops

usage() {
	cat <<'EOF2'
usage: ops/demo.sh [--duration SECONDS] [--rate OPS_PER_S] | --quick | --help
  --duration SECONDS  seconds of load, 10..3600 (default 60)
  --rate OPS_PER_S    intents per second, 0.5..200 (default 10)
  --quick             the few-second demo: six intents, no load, no faults
environment: OUTBOX_BUILD_DIR, OUTBOX_BUILD_JOBS, OUTBOX_PG_BASE, OUTBOX_DATABASE_URL,
  OUTBOX_KAFKA_BROKERS, OUTBOX_DEMO_KAFKA=0, OUTBOX_DEMO_TIMEOUT, OUTBOX_DEMO_KEEP_DB=1,
  OUTBOX_DEMO_BG (ops/README.md, demo.sh, says what each does)
EOF2
}
bad_usage() {
	echo "demo: $*" >&2
	usage >&2
	exit 2
}

QUICK=0 DURATION=60 RATE=10
while (($#)); do
	case $1 in
	--quick) QUICK=1 ;;
	--duration | --rate)
		[[ $# -ge 2 ]] || bad_usage "$1 needs a value"
		[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad_usage "$1: '$2' is not a number"
		if [[ $1 == --duration ]]; then
			if ! [[ $2 =~ ^[0-9]+$ ]] || (($2 < 10 || $2 > 3600)); then
				bad_usage "--duration: '$2' is not a whole number of seconds in 10..3600"
			fi
			DURATION=$2
		else
			awk -v r="$2" 'BEGIN { exit !(r >= 0.5 && r <= 200) }' ||
				bad_usage "--rate: '$2' is not in 0.5..200"
			RATE=$2
		fi
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) bad_usage "unknown option '$1'" ;;
	esac
	shift
done
if ! [[ ${OUTBOX_DEMO_TIMEOUT:-60} =~ ^[1-9][0-9]{0,4}$ ]]; then
	bad_usage "OUTBOX_DEMO_TIMEOUT: '${OUTBOX_DEMO_TIMEOUT:-}' is not a whole number of seconds in 1..99999"
fi
if ! [[ ${OUTBOX_DEMO_BG:-18} =~ ^[0-9]{1,4}$ ]] || ((10#${OUTBOX_DEMO_BG:-18} > 1000)); then
	bad_usage "OUTBOX_DEMO_BG: '${OUTBOX_DEMO_BG:-}' is not a number of bids in 0..1000"
fi
if ((QUICK)); then
	TIMEOUT=${OUTBOX_DEMO_TIMEOUT:-60} VSHARDS=8
else
	DRAIN=${OUTBOX_DEMO_TIMEOUT:-120} VSHARDS=16
fi

. ops/lib/deps.sh
. ops/lib/pg.sh
. ops/demo/common.sh
. ops/demo/setup.sh
. ops/demo/quick.sh
. ops/demo/full.sh
. ops/demo/scenario.sh
. ops/demo/finish.sh

setup_packages
setup_build
setup_kafka
setup_database
if ((QUICK)); then
	quick_run
else
	full_run
fi
kafka_audit
stop_all
((QUICK)) || closing_words
printf '\ndemo: OK in %ss\n' "$((SECONDS - START))"
