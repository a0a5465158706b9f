#!/usr/bin/env bash
# tests/bench/private_pg.sh - runs a benchmark against a private PostgreSQL
# cluster that preloads pg_stat_statements, so bench_dispatch's breakdown is
# by statement (nested ones included) instead of by PL/pgSQL function, and
# no other user's databases share the server's WAL and cores.
#
#   OUTBOX_BUILD_DIR=build tests/bench/private_pg.sh build/bench_dispatch
#   tests/bench/private_pg.sh build/bench_enqueue
#
# The cluster (initdb in a temporary directory, a free port on 127.0.0.1,
# trust authentication) keeps PostgreSQL's durability defaults (fsync and
# synchronous_commit on) and the shared server's shared_buffers (128MB) and
# max_wal_size (1GB); PG_BIN picks the server binaries (default: the newest
# /usr/lib/postgresql/*/bin), BENCH_PG_OPTS adds `-c` settings (space
# separated name=value). The command runs with OUTBOX_PG_BASE pointing at
# the cluster; the cluster is stopped and removed when it ends, whatever
# the outcome. Run as root, the server runs as the postgres user.
set -euo pipefail

die() { echo "private_pg: $*" >&2; exit 1; }
(($# > 0)) || die "usage: $0 COMMAND [ARGS...]"

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[[ -x $PG_BIN/initdb && -x $PG_BIN/pg_ctl ]] ||
	die "no PostgreSQL server binaries (PG_BIN or /usr/lib/postgresql/*/bin)"

pg_as() {
	if (($(id -u) == 0)); then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# A port no socket uses, below the kernel's ephemeral range.
free_port() {
	local p=$1
	while [[ -n $(ss -Htan "( sport = :$p )" 2>/dev/null) ]]; do
		p=$((p + 1))
	done
	echo "$p"
}

T=$(mktemp -d /tmp/outboxd-bench-pg.XXXXXX)
chmod 755 "$T" # the server's user traverses it
(($(id -u) == 0)) && chown postgres: "$T"
started=0
cleanup() {
	((started)) && pg_as "$PG_BIN/pg_ctl" -D "$T/data" -m fast -w -t 120 stop >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT

pg_as "$PG_BIN/initdb" -D "$T/data" -A trust -U postgres >"$T/initdb.log" 2>&1 ||
	die "initdb failed: $(tail -3 "$T/initdb.log")"
port=$(free_port $((25000 + $$ % 5000)))
opts="-p $port -k $T -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements"
opts+=" -c shared_buffers=128MB -c max_wal_size=1GB -c max_connections=200"
for o in ${BENCH_PG_OPTS:-}; do
	[[ $o == *=* ]] || die "BENCH_PG_OPTS: '$o' is not name=value"
	opts+=" -c $o"
done
pg_as "$PG_BIN/pg_ctl" -D "$T/data" -l "$T/log" -o "$opts" -w -t 120 start >/dev/null 2>&1 ||
	die "the private cluster did not start: $(tail -5 "$T/log")"
started=1
echo "private_pg: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, pg_stat_statements preloaded" >&2
OUTBOX_PG_BASE="host=127.0.0.1 port=$port user=postgres" "$@"
