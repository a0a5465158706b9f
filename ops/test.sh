#!/usr/bin/env bash
# ops/test.sh - the one test command (CI runs it through .ci/run).
#
#   1. installs what is missing (Debian packages; npm packages for the SDK
#      interop tests), idempotently;
#   2. makes sure PostgreSQL answers (the server on 127.0.0.1:5432, else a
#      private one it starts and stops) and creates a fresh database;
#   3. starts a Kafka broker of its own with ops/kafka.sh (127.0.0.1:9092, or
#      the next free port pair 9192, 9292, ... when taken; a fresh data
#      directory) and exports OUTBOX_KAFKA_BROKERS; a broker that does not
#      start fails the run; it is stopped after the whole-suite ctest, or on
#      any exit;
#   4. builds the test build (RelWithDebInfo, gcc, crash points compiled in)
#      and runs the whole suite with ctest;
#   5. builds what a user builds, Release with gcc, so warnings that only
#      optimisation reveals stop CI too (build only: the test build above
#      already ran the suites);
#   6. rebuilds under ASan+UBSan (clang) and runs the unit suites again;
#   7. builds the libFuzzer targets with clang and runs each for a bounded time.
# Every build here passes -DOUTBOX_WERROR=ON: a warning fails the run.
#
# Exits non-zero on any failure; ends with ctest's summary line.
# Environment: OUTBOX_TEST_JOBS (build parallelism, default 2),
#              OUTBOX_KAFKA_PORT (the broker's port, exactly; default: see 2),
#              OUTBOX_FUZZ_SECONDS (per fuzz target, default 20),
#              OUTBOX_TEST_SKIP_ASAN=1 / OUTBOX_TEST_SKIP_FUZZ=1 for quick local runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${OUTBOX_TEST_JOBS:-2}

. ops/lib/deps.sh
. ops/lib/pg.sh

outbox_ensure_packages

# Area-specific preparation (npm installs and the like), one script per area.
for f in ops/lib/prepare.d/*.sh; do
	[[ -e $f ]] && . "$f"
done

pg_ensure
DB=outboxd_test_$$
export OUTBOX_DATABASE_URL
OUTBOX_DATABASE_URL=$(pg_fresh_db "$DB")
export OUTBOX_PG_BASE
KAFKA_DATA=""
kafka_stop() {
	if [[ -n $KAFKA_DATA ]]; then
		bash ops/kafka.sh stop || true
		rm -rf "$KAFKA_DATA"
		KAFKA_DATA=""
	fi
}
cleanup() {
	kafka_stop
	pg_drop_db "$DB"
	pg_stop
}
trap cleanup EXIT
trap 'exit 130' INT # through cleanup: no broker or database left behind
trap 'exit 143' TERM

echo "== kafka broker (ops/kafka.sh)"
# This run's own broker, in a fresh data directory, so runs in parallel on
# one machine never share (or stop) each other's broker. The lock keeps
# another run from picking the same free port before this broker binds it.
exec {kafka_lock}>/tmp/outboxd-kafka-port.lock
flock "$kafka_lock"
if [[ -z ${OUTBOX_KAFKA_PORT:-} ]]; then
	OUTBOX_KAFKA_PORT=9092
	while [[ -n $(ss -Hltn "( sport = :$OUTBOX_KAFKA_PORT or sport = :$((OUTBOX_KAFKA_PORT + 1)) )") ]]; do
		if ((OUTBOX_KAFKA_PORT >= 11000)); then
			echo "test.sh: no free port pair for Kafka in 9092..11000" >&2
			exit 1
		fi
		OUTBOX_KAFKA_PORT=$((OUTBOX_KAFKA_PORT + 100))
	done
fi
KAFKA_DATA=$(mktemp -d /tmp/outboxd-kafka.XXXXXX)
export OUTBOX_KAFKA_PORT OUTBOX_KAFKA_DATA=$KAFKA_DATA
export OUTBOX_KAFKA_BROKERS=127.0.0.1:$OUTBOX_KAFKA_PORT
bash ops/kafka.sh start || { echo "test.sh: the Kafka broker did not start (see above)" >&2; exit 1; }
exec {kafka_lock}>&-

echo "== build (RelWithDebInfo, gcc, crash points, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOUTBOX_WERROR=ON \
	-DOUTBOX_CRASHPOINTS=ON >/dev/null
cmake --build build -j"$JOBS"

echo "== build (Release, gcc, -Werror; build only)"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DOUTBOX_WERROR=ON \
	-DOUTBOX_CRASHPOINTS=OFF >/dev/null
cmake --build build-release -j"$JOBS"

if [[ ${OUTBOX_TEST_SKIP_ASAN:-0} != 1 ]]; then
	echo "== build (ASan+UBSan, clang)"
	# clang here, gcc above: every commit builds warning-free with both compilers.
	CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DOUTBOX_SANITIZE=ON \
		-DOUTBOX_WERROR=ON -DOUTBOX_CRASHPOINTS=ON >/dev/null
	cmake --build build-asan -j"$JOBS"
fi

if [[ ${OUTBOX_TEST_SKIP_FUZZ:-0} != 1 ]] && compgen -G "tests/fuzz/fuzz_*.c" >/dev/null; then
	echo "== build (libFuzzer, clang)"
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DOUTBOX_FUZZ=ON \
		-DOUTBOX_WERROR=ON >/dev/null
	fuzz_targets=$(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c; done)
	# shellcheck disable=SC2086 # one target per word
	cmake --build build-fuzz -j"$JOBS" --target $fuzz_targets
fi

status=0
echo "== ctest: whole suite"
(cd build && ctest --no-label-summary --output-on-failure -LE fuzz) || status=1
kafka_stop

if [[ ${OUTBOX_TEST_SKIP_FUZZ:-0} != 1 && -d build-fuzz ]]; then
	echo "== ctest: fuzz targets (${OUTBOX_FUZZ_SECONDS:-20}s each)"
	(cd build-fuzz && ctest --no-label-summary --output-on-failure -L fuzz) || status=1
fi

if [[ ${OUTBOX_TEST_SKIP_ASAN:-0} != 1 ]]; then
	echo "== ctest: unit suites under ASan+UBSan"
	(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --no-label-summary --output-on-failure -L unit) || status=1
fi
exit $status
