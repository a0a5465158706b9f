# ops/lib/pg.sh - make sure a PostgreSQL server answers, and hand out fresh
# databases. Uses the server on 127.0.0.1:5432 when it answers; otherwise
# initdb's a private one under a temporary directory (stopped by pg_stop).
#
# After pg_ensure: PGHOST, PGPORT, PGUSER are exported and OUTBOX_PG_BASE is a
# conninfo prefix without dbname.

OUTBOX_PG_PRIVATE_DIR=""

pg_ensure() {
	export PGUSER=${PGUSER:-postgres}
	if pg_isready -q -h 127.0.0.1 -p 5432 -t 3 2>/dev/null; then
		export PGHOST=127.0.0.1 PGPORT=5432
	else
		local bindir
		bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
		if [[ -z $bindir || ! -x $bindir/initdb ]]; then
			DEBIAN_FRONTEND=noninteractive apt-get update -qq
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
			bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
		fi
		OUTBOX_PG_PRIVATE_DIR=$(mktemp -d /tmp/outboxd-pg.XXXXXX)
		chown postgres: "$OUTBOX_PG_PRIVATE_DIR"
		echo "pg: no server on 127.0.0.1:5432, starting a private one in $OUTBOX_PG_PRIVATE_DIR" >&2
		runuser -u postgres -- "$bindir/initdb" -D "$OUTBOX_PG_PRIVATE_DIR/data" -A trust -U postgres >/dev/null
		runuser -u postgres -- "$bindir/pg_ctl" -D "$OUTBOX_PG_PRIVATE_DIR/data" -l "$OUTBOX_PG_PRIVATE_DIR/log" \
			-o "-p 55432 -k $OUTBOX_PG_PRIVATE_DIR -c listen_addresses=127.0.0.1 -c max_connections=200" -w start >/dev/null
		export PGHOST=127.0.0.1 PGPORT=55432
		OUTBOX_PG_BINDIR=$bindir
	fi
	export OUTBOX_PG_BASE="host=$PGHOST port=$PGPORT user=$PGUSER"
}

# pg_fresh_db NAME: drop and create database NAME; prints its conninfo.
pg_fresh_db() {
	psql -q -d postgres -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null
	psql -q -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$1\"" >/dev/null
	echo "$OUTBOX_PG_BASE dbname=$1"
}

pg_drop_db() {
	psql -q -d postgres -c "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null 2>&1 || true
}

pg_stop() {
	if [[ -n $OUTBOX_PG_PRIVATE_DIR ]]; then
		runuser -u postgres -- "$OUTBOX_PG_BINDIR/pg_ctl" -D "$OUTBOX_PG_PRIVATE_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
		rm -rf "$OUTBOX_PG_PRIVATE_DIR"
	fi
}
