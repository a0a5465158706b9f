-- 0004_dispatch.sql - the dispatch engine's SQL side: shard leases with
-- fencing, per-signer lanes, the claim, write-ahead attempts, outcomes,
-- recovery, admin operations, lifecycle legality and terminal NOTIFY.
-- The contract with the worker: schema/README.md, "The dispatch contract"
-- (summary at each function below). All functions live in schema outbox.
--
-- Errors: SQLSTATE OB403 fence failed (lease not held with that epoch, or
-- an op outside the fenced vshard); OB404 unknown op; OB409 the op's state
-- forbids the move; OB422 invalid input. Messages name the values.
--
-- Locking order, everywhere: lease row (FOR SHARE, the fence), then the op
-- row, then the lane row. The claim takes lanes before ops, but with SKIP
-- LOCKED on both, so it never waits and cannot deadlock with a finalizer.
-- A finalizer's op row lock also serializes every writer of one op, which
-- is what makes events.seq = max + 1 gap-free and race-free.

-- Claims of ops that stay PENDING while a worker prepares them are kept in
-- the worker's memory; with OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT > 1 the claim
-- also stamps the op with the lease epoch so a second claim in the same
-- epoch skips it. Not indexed, so stamping is a HOT update.
ALTER TABLE outbox.ops ADD COLUMN claimed_epoch bigint;

-- The per-signer claim index: a signer's PENDING ops in dispatch order.
-- The claim reads it only for lanes that are ready (below), so ops queued
-- behind a busy signer are never scanned.
CREATE INDEX ops_signer_pending_idx ON outbox.ops (signer, priority, next_attempt_at, created_at)
	WHERE status = 'PENDING';

-- One row per signer.
--   pending_best  best (lowest) priority among its PENDING ops; NULL = none
--   next_due      when the claim should look at the lane next: NULL with
--                 no pending work; 'infinity' while in_flight has reached
--                 the per-account cap (set by the claim, undone by every
--                 release); a future time while its ops back off or are
--                 held (a held user's ops are re-checked every second)
--   in_flight     reservations: ops claimed and not yet finalized
--   gen           bumped by every merge of enqueue signals; a lane is
--                 cleared only under "gen = <gen read>", and only under
--                 its row lock (see lane_signals for why that suffices)
-- Only (vshard, pending_best, next_due) is indexed, so in_flight and gen
-- updates are HOT; fillfactor leaves room for them on the page. signer has
-- no regex CHECK: it only ever comes from ops.signer (checked there), and
-- a CHECK is evaluated again on every UPDATE of this hot row.
CREATE TABLE outbox.lanes (
	signer text PRIMARY KEY,
	vshard integer NOT NULL CHECK (vshard BETWEEN 0 AND 4095),
	pending_best smallint CHECK (pending_best BETWEEN 0 AND 2),
	next_due timestamptz,
	in_flight integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
	gen bigint NOT NULL DEFAULT 0,
	CHECK ((pending_best IS NULL) = (next_due IS NULL))
) WITH (fillfactor = 50);

-- Not partial: the same index finds a vshard's lanes for reconcile. NULLs
-- sort last, so "pending_best IS NOT NULL" is a range of it.
CREATE INDEX lanes_ready_idx ON outbox.lanes (vshard, pending_best, next_due);

-- The compliance-halt hook: the claim skips ops whose user_id is in this
-- view. An application that keeps halts on its own users table replaces
-- it (CREATE OR REPLACE VIEW outbox.held_users AS SELECT id AS user_id
-- FROM app.users WHERE halted) - keep user_id unique and indexed there, the
-- claim probes it once per candidate op.
CREATE VIEW outbox.held_users AS
	SELECT h.user_id FROM outbox.user_holds h;

-- ---------------------------------------------------------------------
-- Lifecycle legality (common/lifecycle.c): checked in the WHEN clause, so
-- a legal move costs no function call.
CREATE FUNCTION outbox.status_move_refused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'op %: illegal status move % -> %', OLD.id, OLD.status, NEW.status
		USING ERRCODE = 'OB409', COLUMN = 'status';
END
$$;

CREATE TRIGGER ops_status_legal BEFORE UPDATE OF status ON outbox.ops
	FOR EACH ROW WHEN (NOT (
		(OLD.status = 'PENDING' AND NEW.status IN ('PENDING', 'SUBMITTED', 'FAILED', 'CANCELLED'))
		OR (OLD.status = 'SUBMITTED' AND NEW.status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED'))
		OR (OLD.status = 'FAILED' AND NEW.status = 'PENDING')))
	EXECUTE FUNCTION outbox.status_move_refused();

-- Terminal outcomes: NOTIFY outbox_done '<op id>' at commit, whichever
-- function made the move. (A NOTIFY takes the notification queue's lock
-- through commit: finalize several ops per transaction where possible.)
CREATE FUNCTION outbox.notify_done() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('outbox_done', NEW.id::text);
	RETURN NULL;
END
$$;

CREATE TRIGGER ops_notify_done AFTER UPDATE OF status ON outbox.ops
	FOR EACH ROW WHEN (NEW.status IN ('CONFIRMED', 'FAILED', 'CANCELLED')
		AND OLD.status IS DISTINCT FROM NEW.status)
	EXECUTE FUNCTION outbox.notify_done();

-- ---------------------------------------------------------------------
-- How an enqueue reaches the lanes: an append-only signal row, merged into
-- lanes by the next claim of that vshard (and by the worker's sweep).
--
-- Why not update the lane from the enqueue: the enqueue runs in the
-- APPLICATION's transaction. Updating (or locking) the shared lane row
-- there (a) serializes every enqueue of one signer on that row until
-- commit, (b) makes workers finalizing that signer's ops wait for the
-- application's transaction, and (c) fails a REPEATABLE READ or
-- SERIALIZABLE application transaction with 40001 whenever a worker
-- updated the lane during it. Measured with pgbench (8 clients, enqueue of
-- one NORMAL op per transaction, this 2-core machine under load): an
-- upsert trigger cost 35-40% of enqueue throughput over 256 signers and
-- 60% on one hot signer. An INSERT conflicts with nothing.
--
-- Race-freedom (the enqueue-lane race): a worker clears a lane only under
-- its row lock, after reading the ops in a later statement. An enqueue
-- whose op it could not see yet commits its signal with the op, and the
-- next claim merges it (setting pending_best again, gen + 1). A signal
-- committed before the claim's merge statement is merged and its op is
-- visible to the claim's later statements. Nothing is stranded, whatever
-- the interleaving and whatever the application's isolation level.
-- (Workers use READ COMMITTED, the default.)
CREATE TABLE outbox.lane_signals (
	vshard integer NOT NULL CHECK (vshard BETWEEN 0 AND 4095),
	signer text NOT NULL,
	priority smallint NOT NULL,
	due timestamptz NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000);
CREATE INDEX lane_signals_vshard_idx ON outbox.lane_signals (vshard);

-- Statement level: a bulk insert of n ops writes one signal per signer.
CREATE FUNCTION outbox.lane_signal() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO outbox.lane_signals (vshard, signer, priority, due)
	SELECT n.vshard, n.signer, min(n.priority), min(n.next_attempt_at)
	FROM new_ops n GROUP BY n.vshard, n.signer;
	RETURN NULL;
END
$$;

CREATE TRIGGER ops_lane_signal AFTER INSERT ON outbox.ops
	REFERENCING NEW TABLE AS new_ops
	FOR EACH STATEMENT EXECUTE FUNCTION outbox.lane_signal();

-- Merge the committed signals of vshards into their lanes.
CREATE FUNCTION outbox.lane_merge(vshards integer[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	WITH s AS (
		DELETE FROM outbox.lane_signals x WHERE x.vshard = ANY (vshards)
		RETURNING x.vshard, x.signer, x.priority, x.due)
	INSERT INTO outbox.lanes AS l (signer, vshard, pending_best, next_due, gen)
	SELECT s.signer, min(s.vshard), min(s.priority), min(s.due), 1
	FROM s GROUP BY s.signer
	ON CONFLICT (signer) DO UPDATE SET
		pending_best = LEAST(l.pending_best, excluded.pending_best),
		next_due = CASE WHEN l.next_due = 'infinity' THEN l.next_due
			ELSE LEAST(l.next_due, excluded.next_due) END,
		gen = l.gen + 1;
END
$$;

-- Backfill lanes for ops that exist already. After the trigger exists: its
-- creation waited for in-progress inserts, so nothing falls between (an op
-- both backfilled and signalled is merged harmlessly: LEAST is idempotent).
INSERT INTO outbox.lanes (signer, vshard, pending_best, next_due, in_flight, gen)
SELECT o.signer, min(o.vshard),
	min(o.priority) FILTER (WHERE o.status = 'PENDING'),
	min(o.next_attempt_at) FILTER (WHERE o.status = 'PENDING'),
	count(*) FILTER (WHERE o.status = 'SUBMITTED'), 1
FROM outbox.ops o WHERE o.status IN ('PENDING', 'SUBMITTED')
GROUP BY o.signer;

-- A lane's best pending priority and earliest due time, from the signer
-- index: three probes (one per priority), no scan. PL/pgSQL, not SQL: a
-- SQL function that is not inlined is planned again on every call
-- (~0.3 ms here); PL/pgSQL caches the plan per session.
CREATE FUNCTION outbox.lane_best_due(s text, OUT best smallint, OUT due timestamptz)
LANGUAGE plpgsql STABLE AS $$
DECLARE
	d0 timestamptz;
	d1 timestamptz;
	d2 timestamptz;
BEGIN
	SELECT (SELECT o.next_attempt_at FROM outbox.ops o
			WHERE o.signer = s AND o.status = 'PENDING' AND o.priority = 0
			ORDER BY o.next_attempt_at LIMIT 1),
		(SELECT o.next_attempt_at FROM outbox.ops o
			WHERE o.signer = s AND o.status = 'PENDING' AND o.priority = 1
			ORDER BY o.next_attempt_at LIMIT 1),
		(SELECT o.next_attempt_at FROM outbox.ops o
			WHERE o.signer = s AND o.status = 'PENDING' AND o.priority = 2
			ORDER BY o.next_attempt_at LIMIT 1)
	INTO d0, d1, d2;
	best := CASE WHEN d0 IS NOT NULL THEN 0 WHEN d1 IS NOT NULL THEN 1
		WHEN d2 IS NOT NULL THEN 2 END;
	due := LEAST(d0, d1, d2);
END
$$;

-- The earliest due time after now() among a lane's PENDING ops.
CREATE FUNCTION outbox.lane_due_future(s text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN LEAST(
		(SELECT o.next_attempt_at FROM outbox.ops o
			WHERE o.signer = s AND o.status = 'PENDING' AND o.priority = 0
				AND o.next_attempt_at > now() ORDER BY o.next_attempt_at LIMIT 1),
		(SELECT o.next_attempt_at FROM outbox.ops o
			WHERE o.signer = s AND o.status = 'PENDING' AND o.priority = 1
				AND o.next_attempt_at > now() ORDER BY o.next_attempt_at LIMIT 1),
		(SELECT o.next_attempt_at FROM outbox.ops o
			WHERE o.signer = s AND o.status = 'PENDING' AND o.priority = 2
				AND o.next_attempt_at > now() ORDER BY o.next_attempt_at LIMIT 1));
END
$$;

-- Give back `release` reservations of a lane and recompute its pending
-- state. Lock first, read ops after: an enqueue committed before the lock
-- is visible to the reads; one committing later waits for this
-- transaction and then applies its LEAST/gen update on top.
CREATE FUNCTION outbox.lane_settle(s text, release integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	g bigint;
	st record;
BEGIN
	SELECT l.gen INTO g FROM outbox.lanes l WHERE l.signer = s FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	st := outbox.lane_best_due(s);
	UPDATE outbox.lanes l SET in_flight = GREATEST(l.in_flight - release, 0),
		pending_best = CASE WHEN l.gen = g THEN st.best ELSE l.pending_best END,
		next_due = CASE WHEN l.gen <> g THEN l.next_due
			ELSE st.due END
	WHERE l.signer = s;
END
$$;

-- Append an op's next event. The caller holds the op row lock, which
-- serializes writers of one op: seq = max + 1 is gap-free.
CREATE FUNCTION outbox.event_add(op bigint, ev text, from_s text, to_s text, b jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT op, coalesce(max(e.seq), 0) + 1, ev, from_s, to_s, b
	FROM outbox.events e WHERE e.op_id = op;
END
$$;

-- ---------------------------------------------------------------------
-- Leases and the fence.

CREATE FUNCTION outbox.check_owner(owner text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF owner IS NULL OR length(owner) NOT BETWEEN 1 AND 128 OR owner ~ '[[:cntrl:]]' THEN
		PERFORM outbox.invalid_input('owner', owner,
			'is not 1..128 characters without control characters');
	END IF;
END
$$;

CREATE FUNCTION outbox.check_vshard(v integer) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
	n integer;
BEGIN
	SELECT s.vshards INTO n FROM outbox.settings s;
	IF v IS NULL OR v < 0 OR v >= n THEN
		PERFORM outbox.invalid_input('vshard', v::text, 'is not in 0..' || (n - 1));
	END IF;
END
$$;

CREATE FUNCTION outbox.check_ttl(ttl_ms integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF ttl_ms IS NULL OR ttl_ms NOT BETWEEN 100 AND 3600000 THEN
		PERFORM outbox.invalid_input('ttl_ms', ttl_ms::text, 'is not in 100..3600000');
	END IF;
END
$$;

-- lease_acquire: the new epoch when taken (absent or expired: epoch + 1,
-- or 1), the same epoch when owner holds it (renewed), NULL when another
-- live owner holds it. A lease this owner let expire is re-taken with a new
-- epoch (it must reconcile again).
CREATE FUNCTION outbox.lease_acquire(owner text, vshard integer, ttl_ms integer)
RETURNS bigint LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	e bigint;
BEGIN
	PERFORM outbox.check_owner(lease_acquire.owner);
	PERFORM outbox.check_vshard(lease_acquire.vshard);
	PERFORM outbox.check_ttl(ttl_ms);
	INSERT INTO outbox.shard_leases AS l (vshard, owner, epoch, expires_at)
	VALUES (lease_acquire.vshard, lease_acquire.owner, 1,
		now() + make_interval(secs => ttl_ms / 1000.0))
	ON CONFLICT (vshard) DO UPDATE SET
		epoch = CASE WHEN l.owner = excluded.owner AND l.expires_at > now() THEN l.epoch
			ELSE l.epoch + 1 END,
		owner = excluded.owner,
		expires_at = excluded.expires_at
	WHERE l.owner = excluded.owner OR l.expires_at <= now()
	RETURNING l.epoch INTO e;
	RETURN e;
END
$$;

-- lease_renew: extends every lease still held (owner and epoch unchanged;
-- a lease that lapsed but was not taken is revived, nobody wrote meanwhile
-- since every takeover changes the epoch); returns the vshards LOST.
CREATE FUNCTION outbox.lease_renew(owner text, vshards integer[], epochs bigint[], ttl_ms integer)
RETURNS integer[] LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	lost integer[];
BEGIN
	PERFORM outbox.check_owner(lease_renew.owner);
	PERFORM outbox.check_ttl(ttl_ms);
	IF vshards IS NULL OR epochs IS NULL OR cardinality(vshards) <> cardinality(epochs)
		OR cardinality(vshards) > 4096 THEN
		PERFORM outbox.invalid_input('vshards', NULL,
			'and epochs must be arrays of equal length (at most 4096)');
	END IF;
	WITH renewed AS (
		UPDATE outbox.shard_leases l
		SET expires_at = now() + make_interval(secs => ttl_ms / 1000.0)
		FROM unnest(vshards, epochs) u (v, e)
		WHERE l.vshard = u.v AND l.owner = lease_renew.owner AND l.epoch = u.e
		RETURNING l.vshard)
	SELECT coalesce(array_agg(u.v ORDER BY u.v), '{}') INTO lost
	FROM unnest(vshards) u (v) WHERE u.v NOT IN (SELECT r.vshard FROM renewed r);
	RETURN lost;
END
$$;

-- lease_release: on drain; a peer can take the vshard at once.
CREATE FUNCTION outbox.lease_release(owner text, vshard integer, epoch bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	UPDATE outbox.shard_leases l SET expires_at = LEAST(l.expires_at, now())
	WHERE l.vshard = lease_release.vshard AND l.owner = lease_release.owner
		AND l.epoch = lease_release.epoch;
END
$$;

-- The fence: the lease is held with that epoch, locked FOR SHARE until
-- commit, so a takeover (an UPDATE of the row) waits for this transaction
-- and every write after a takeover fails here.
CREATE FUNCTION outbox.fence(owner text, vshard integer, epoch bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	PERFORM 1 FROM outbox.shard_leases l
	WHERE l.vshard = fence.vshard AND l.owner = fence.owner AND l.epoch = fence.epoch
		AND l.expires_at > now()
	FOR SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'fence: vshard % is not leased to owner % with epoch %',
			fence.vshard, outbox.quote_value(fence.owner), fence.epoch
			USING ERRCODE = 'OB403';
	END IF;
END
$$;

-- Lock an op of vshard for a finalizing write; OB404 unknown, OB403 when
-- it belongs to another vshard.
CREATE FUNCTION outbox.op_lock(op bigint, v integer) RETURNS outbox.ops
LANGUAGE plpgsql AS $$
DECLARE
	r outbox.ops;
BEGIN
	SELECT * INTO r FROM outbox.ops o WHERE o.id = op FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'op_id: % is not an op', op USING ERRCODE = 'OB404', COLUMN = 'op_id';
	END IF;
	IF v IS NOT NULL AND r.vshard <> v THEN
		RAISE EXCEPTION 'op %: is in vshard %, not the fenced vshard %', op, r.vshard, v
			USING ERRCODE = 'OB403';
	END IF;
	RETURN r;
END
$$;

CREATE FUNCTION outbox.refuse(op bigint, what text, status text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'op %: % refused: status is %', op, what, status
		USING ERRCODE = 'OB409', COLUMN = 'status';
END
$$;

CREATE FUNCTION outbox.check_delay(delay_ms integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF delay_ms IS NULL OR delay_ms NOT BETWEEN 0 AND 604800000 THEN
		PERFORM outbox.invalid_input('delay_ms', delay_ms::text, 'is not in 0..604800000');
	END IF;
END
$$;

-- ---------------------------------------------------------------------
-- The claim. Lane-driven: per ready lane (pending work due, below the cap)
-- its best ready ops, lanes in (pending_best, next_due) order, so CRITICAL
-- work of any signer comes first. Index probes: the ready lanes of the
-- vshards, then per lane one ordered range of ops_signer_pending_idx that
-- stops after `room` rows. Busy lanes (next_due = 'infinity') and future
-- lanes are not even visited in the heap.
CREATE FUNCTION outbox.claim(owner text, vshards integer[], epochs bigint[],
	per_account_max integer, batch integer)
RETURNS TABLE (op_id bigint, vshard integer, signer text, kind text, priority smallint,
	user_id text, idempotency_key text, payload jsonb, attempts integer, fee_bumps integer,
	created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	ln record;
	o record;
	taken integer := 0;
	room integer;
	got integer;
	ep bigint;
	st record;
	fut timestamptz;
BEGIN
	PERFORM outbox.check_owner(claim.owner);
	IF vshards IS NULL OR epochs IS NULL OR cardinality(vshards) <> cardinality(epochs)
		OR cardinality(vshards) NOT BETWEEN 1 AND 4096 THEN
		PERFORM outbox.invalid_input('vshards', NULL,
			'and epochs must be non-empty arrays of equal length (at most 4096)');
	END IF;
	IF per_account_max IS NULL OR per_account_max NOT BETWEEN 1 AND 1000 THEN
		PERFORM outbox.invalid_input('per_account_max', per_account_max::text,
			'is not in 1..1000');
	END IF;
	IF batch IS NULL OR batch NOT BETWEEN 1 AND 10000 THEN
		PERFORM outbox.invalid_input('batch', batch::text, 'is not in 1..10000');
	END IF;
	FOR i IN 1 .. cardinality(vshards) LOOP
		PERFORM outbox.fence(claim.owner, vshards[i], epochs[i]);
	END LOOP;
	PERFORM outbox.lane_merge(vshards);

	FOR ln IN
		SELECT l.signer, l.vshard, l.in_flight, l.gen FROM outbox.lanes l
		WHERE l.vshard = ANY (vshards) AND l.pending_best IS NOT NULL
			AND l.next_due <= now()
		ORDER BY l.pending_best, l.next_due
		FOR NO KEY UPDATE SKIP LOCKED
	LOOP
		EXIT WHEN taken >= batch;
		IF ln.in_flight >= per_account_max THEN
			UPDATE outbox.lanes l SET next_due = 'infinity' WHERE l.signer = ln.signer;
			CONTINUE;
		END IF;
		room := LEAST(per_account_max - ln.in_flight, batch - taken);
		ep := epochs[array_position(vshards, ln.vshard)];
		got := 0;
		-- With nothing reserved on the lane no op of it is claimed, so
		-- epoch stamps are ignored (and never need clearing).
		FOR o IN
			SELECT x.id, x.vshard, x.signer, x.kind, x.priority, x.user_id,
				x.idempotency_key, x.payload, x.attempts, x.fee_bumps, x.created_at
			FROM outbox.ops x
			WHERE x.signer = ln.signer AND x.status = 'PENDING'
				AND x.next_attempt_at <= now()
				AND (ln.in_flight = 0 OR x.claimed_epoch IS DISTINCT FROM ep)
				AND NOT EXISTS (SELECT 1 FROM outbox.held_users h WHERE h.user_id = x.user_id)
			ORDER BY x.priority, x.next_attempt_at, x.created_at
			LIMIT room
			FOR NO KEY UPDATE OF x SKIP LOCKED
		LOOP
			got := got + 1;
			IF per_account_max > 1 THEN
				UPDATE outbox.ops x SET claimed_epoch = ep WHERE x.id = o.id;
			END IF;
			op_id := o.id; vshard := o.vshard; signer := o.signer; kind := o.kind;
			priority := o.priority; user_id := o.user_id;
			idempotency_key := o.idempotency_key; payload := o.payload;
			attempts := o.attempts; fee_bumps := o.fee_bumps; created_at := o.created_at;
			RETURN NEXT;
		END LOOP;
		taken := taken + got;
		IF ln.in_flight + got >= per_account_max THEN
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got, next_due = 'infinity'
			WHERE l.signer = ln.signer;
		ELSIF got = room THEN
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got WHERE l.signer = ln.signer;
		ELSE
			-- Fewer ready ops than room: what is left is due later, or
			-- held, or locked by another transaction (re-check in 1 s),
			-- or nothing (clear the lane, gen-guarded).
			st := outbox.lane_best_due(ln.signer);
			IF st.best IS NOT NULL AND st.due <= now() THEN
				fut := outbox.lane_due_future(ln.signer);
				st.due := LEAST(now() + interval '1 second', fut);
			END IF;
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got,
				pending_best = CASE WHEN l.gen = ln.gen THEN st.best ELSE l.pending_best END,
				next_due = CASE WHEN l.gen = ln.gen THEN st.due ELSE l.next_due END
			WHERE l.signer = ln.signer;
		END IF;
	END LOOP;
END
$$;

-- claim_release: give back n reservations of a signer's lane the worker
-- will not use (global cap hit, op cancelled under it). op_ids, when
-- given, are un-stamped (only needed with per_account_max > 1). Do NOT
-- call it after op_retry_later / op_defer / op_fail / op_confirm: those
-- release the op's reservation themselves.
CREATE FUNCTION outbox.claim_release(owner text, vshard integer, epoch bigint, signer text,
	n integer, op_ids bigint[] DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	v integer;
BEGIN
	PERFORM outbox.fence(claim_release.owner, claim_release.vshard, claim_release.epoch);
	IF n IS NULL OR n NOT BETWEEN 1 AND 1000 THEN
		PERFORM outbox.invalid_input('n', n::text, 'is not in 1..1000');
	END IF;
	SELECT l.vshard INTO v FROM outbox.lanes l WHERE l.signer = claim_release.signer;
	IF NOT FOUND THEN
		PERFORM outbox.invalid_input('signer', claim_release.signer, 'has no lane');
	END IF;
	IF v <> claim_release.vshard THEN
		RAISE EXCEPTION 'signer %: is in vshard %, not the fenced vshard %',
			claim_release.signer, v, claim_release.vshard USING ERRCODE = 'OB403';
	END IF;
	IF op_ids IS NOT NULL THEN
		UPDATE outbox.ops o SET claimed_epoch = NULL
		WHERE o.id = ANY (op_ids) AND o.signer = claim_release.signer
			AND o.claimed_epoch IS NOT NULL;
	END IF;
	PERFORM outbox.lane_settle(claim_release.signer, n);
END
$$;

-- ---------------------------------------------------------------------
-- Attempts, written and committed BEFORE the envelope is sent.
CREATE FUNCTION outbox.attempt_record(owner text, vshard integer, epoch bigint, op_id bigint,
	attempt_no integer, bump_no integer, tx_hash text, inner_tx_hash text, envelope_xdr text,
	source_account text, source_sequence bigint, max_time bigint, fee bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(attempt_record.owner, attempt_record.vshard, attempt_record.epoch);
	op := outbox.op_lock(attempt_record.op_id, attempt_record.vshard);
	IF attempt_record.attempt_no IS NULL OR attempt_record.bump_no IS NULL THEN
		PERFORM outbox.invalid_input('attempt_no', NULL, 'and bump_no are required');
	END IF;
	IF attempt_record.bump_no = 0 THEN
		IF op.status <> 'PENDING' THEN
			PERFORM outbox.refuse(op.id, 'attempt_record (new transaction)', op.status);
		END IF;
		IF attempt_record.attempt_no <= op.attempts THEN
			RAISE EXCEPTION 'op %: attempt_no % is not above the op''s attempts %', op.id,
				attempt_record.attempt_no, op.attempts
				USING ERRCODE = 'OB409', COLUMN = 'attempt_no';
		END IF;
		IF EXISTS (SELECT 1 FROM outbox.attempts a
				WHERE a.op_id = op.id AND a.outcome = 'LIVE' AND a.bump_no = 0) THEN
			RAISE EXCEPTION 'op %: a live inner transaction exists; decide it first', op.id
				USING ERRCODE = 'OB409';
		END IF;
	ELSE
		IF op.status <> 'SUBMITTED' THEN
			PERFORM outbox.refuse(op.id, 'attempt_record (fee bump)', op.status);
		END IF;
		IF NOT EXISTS (SELECT 1 FROM outbox.attempts a
				WHERE a.tx_hash = attempt_record.inner_tx_hash AND a.op_id = op.id
					AND a.bump_no = 0 AND a.attempt_no = attempt_record.attempt_no
					AND a.outcome = 'LIVE') THEN
			RAISE EXCEPTION 'op %: fee bump of %: no live inner transaction with that hash and attempt_no %',
				op.id, outbox.quote_value(attempt_record.inner_tx_hash),
				attempt_record.attempt_no USING ERRCODE = 'OB409', COLUMN = 'inner_tx_hash';
		END IF;
	END IF;
	INSERT INTO outbox.attempts (op_id, attempt_no, bump_no, tx_hash, inner_tx_hash,
		envelope_xdr, source_account, source_sequence, max_time, fee)
	VALUES (op.id, attempt_record.attempt_no, attempt_record.bump_no, attempt_record.tx_hash,
		attempt_record.inner_tx_hash, attempt_record.envelope_xdr,
		attempt_record.source_account, attempt_record.source_sequence,
		attempt_record.max_time, attempt_record.fee);
	IF attempt_record.bump_no = 0 THEN
		UPDATE outbox.ops o SET status = 'SUBMITTED', attempts = attempt_record.attempt_no,
			tx_hash = attempt_record.tx_hash, claimed_epoch = NULL, updated_at = now()
		WHERE o.id = op.id;
		PERFORM outbox.event_add(op.id, 'SUBMITTED', 'PENDING', 'SUBMITTED',
			jsonb_build_object('attempt_no', attempt_record.attempt_no,
				'tx_hash', attempt_record.tx_hash, 'fee', attempt_record.fee,
				'source_sequence', attempt_record.source_sequence,
				'max_time', attempt_record.max_time));
	ELSE
		UPDATE outbox.ops o SET fee_bumps = o.fee_bumps + 1, updated_at = now()
		WHERE o.id = op.id;
		PERFORM outbox.event_add(op.id, 'FEE_BUMPED', 'SUBMITTED', 'SUBMITTED',
			jsonb_build_object('attempt_no', attempt_record.attempt_no,
				'bump_no', attempt_record.bump_no, 'tx_hash', attempt_record.tx_hash,
				'inner_tx_hash', attempt_record.inner_tx_hash, 'fee', attempt_record.fee));
	END IF;
END
$$;

-- attempt_decide: LIVE -> EXPIRED (proven: a closed ledger's close time is
-- past max_time and the hash is unknown) or REJECTED (refused at
-- submission). An inner transaction decided EXPIRED takes its fee bumps
-- with it. Deciding an attempt again with the same outcome is a no-op.
CREATE FUNCTION outbox.attempt_decide(owner text, vshard integer, epoch bigint, tx_hash text,
	outcome text, result_code text)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	a outbox.attempts;
BEGIN
	PERFORM outbox.fence(attempt_decide.owner, attempt_decide.vshard, attempt_decide.epoch);
	IF attempt_decide.outcome IS NULL OR attempt_decide.outcome NOT IN ('EXPIRED', 'REJECTED') THEN
		PERFORM outbox.invalid_input('outcome', attempt_decide.outcome,
			'is not EXPIRED or REJECTED');
	END IF;
	SELECT * INTO a FROM outbox.attempts x WHERE x.tx_hash = attempt_decide.tx_hash;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'tx_hash: % is not an attempt', outbox.quote_value(attempt_decide.tx_hash)
			USING ERRCODE = 'OB404', COLUMN = 'tx_hash';
	END IF;
	PERFORM outbox.op_lock(a.op_id, attempt_decide.vshard);
	SELECT * INTO a FROM outbox.attempts x WHERE x.id = a.id;
	IF a.outcome = attempt_decide.outcome THEN
		RETURN;
	END IF;
	IF a.outcome <> 'LIVE' THEN
		RAISE EXCEPTION 'attempt %: is %, cannot become %', a.tx_hash, a.outcome,
			attempt_decide.outcome USING ERRCODE = 'OB409', COLUMN = 'outcome';
	END IF;
	UPDATE outbox.attempts x SET outcome = attempt_decide.outcome,
		result_code = attempt_decide.result_code, decided_at = now()
	WHERE x.id = a.id;
	IF a.bump_no = 0 AND attempt_decide.outcome = 'EXPIRED' THEN
		UPDATE outbox.attempts x SET outcome = 'EXPIRED', decided_at = now()
		WHERE x.op_id = a.op_id AND x.inner_tx_hash = a.tx_hash AND x.bump_no > 0
			AND x.outcome = 'LIVE';
	END IF;
END
$$;

-- ---------------------------------------------------------------------
-- Outcomes.

-- op_confirm: SUBMITTED -> CONFIRMED. The landed attempt CONFIRMED, every
-- other LIVE one EXPIRED (they share the inner transaction, only one can
-- execute). Confirming again with the same hash is a no-op (both the
-- worker and the ledger follower's hint may report it).
CREATE FUNCTION outbox.op_confirm(owner text, vshard integer, epoch bigint, op_id bigint,
	tx_hash text, ledger integer, fee_charged bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_confirm.owner, op_confirm.vshard, op_confirm.epoch);
	op := outbox.op_lock(op_confirm.op_id, op_confirm.vshard);
	IF op.status = 'CONFIRMED' AND op.tx_hash = op_confirm.tx_hash THEN
		RETURN;
	END IF;
	IF op.status <> 'SUBMITTED' THEN
		PERFORM outbox.refuse(op.id, 'op_confirm', op.status);
	END IF;
	UPDATE outbox.attempts a SET outcome = 'CONFIRMED', decided_at = now()
	WHERE a.op_id = op.id AND a.tx_hash = op_confirm.tx_hash AND a.outcome <> 'FAILED';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'op %: tx_hash % is not one of its attempts (or it failed)', op.id,
			outbox.quote_value(op_confirm.tx_hash) USING ERRCODE = 'OB409', COLUMN = 'tx_hash';
	END IF;
	UPDATE outbox.attempts a SET outcome = 'EXPIRED', decided_at = now()
	WHERE a.op_id = op.id AND a.outcome = 'LIVE';
	UPDATE outbox.ops o SET status = 'CONFIRMED', tx_hash = op_confirm.tx_hash,
		confirmed_at = now(), updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'CONFIRMED', 'SUBMITTED', 'CONFIRMED',
		jsonb_build_object('tx_hash', op_confirm.tx_hash, 'ledger', op_confirm.ledger,
			'fee_charged', op_confirm.fee_charged));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_fail: PENDING or SUBMITTED -> FAILED. tx_hash, when given, is the
-- attempt that landed and failed on chain: it is marked FAILED with
-- result_code and the op's other LIVE attempts EXPIRED (same inner
-- transaction: its sequence number is consumed). Refused (OB409) while any
-- attempt is still LIVE: an op is never FAILED while an envelope of it
-- could still land. Releases the op's lane reservation.
CREATE FUNCTION outbox.op_fail(owner text, vshard integer, epoch bigint, op_id bigint,
	error text, result_code text, tx_hash text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_fail.owner, op_fail.vshard, op_fail.epoch);
	op := outbox.op_lock(op_fail.op_id, op_fail.vshard);
	IF op.status NOT IN ('PENDING', 'SUBMITTED') THEN
		PERFORM outbox.refuse(op.id, 'op_fail', op.status);
	END IF;
	IF op_fail.tx_hash IS NOT NULL THEN
		UPDATE outbox.attempts a SET outcome = 'FAILED', result_code = op_fail.result_code,
			decided_at = now()
		WHERE a.op_id = op.id AND a.tx_hash = op_fail.tx_hash AND a.outcome = 'LIVE';
		IF NOT FOUND THEN
			RAISE EXCEPTION 'op %: tx_hash % is not a live attempt of it', op.id,
				outbox.quote_value(op_fail.tx_hash) USING ERRCODE = 'OB409', COLUMN = 'tx_hash';
		END IF;
		UPDATE outbox.attempts a SET outcome = 'EXPIRED', decided_at = now()
		WHERE a.op_id = op.id AND a.outcome = 'LIVE';
	ELSIF EXISTS (SELECT 1 FROM outbox.attempts a WHERE a.op_id = op.id AND a.outcome = 'LIVE') THEN
		RAISE EXCEPTION 'op %: op_fail refused: an attempt is still LIVE (it could land)', op.id
			USING ERRCODE = 'OB409';
	END IF;
	UPDATE outbox.ops o SET status = 'FAILED', last_error = left(op_fail.error, 2000),
		claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'FAILED', op.status, 'FAILED',
		jsonb_strip_nulls(jsonb_build_object('error', left(op_fail.error, 2000),
			'result_code', op_fail.result_code, 'tx_hash', op_fail.tx_hash)));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_retry_later: SUBMITTED -> PENDING (refused while an attempt is LIVE)
-- or PENDING stays PENDING (failed before any envelope); due after
-- delay_ms; count_attempt adds one to attempts (a try that used no
-- envelope still counts toward OUTBOX_MAX_ATTEMPTS). Releases the op's
-- lane reservation.
CREATE FUNCTION outbox.op_retry_later(owner text, vshard integer, epoch bigint, op_id bigint,
	delay_ms integer, error text, count_attempt boolean)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_retry_later.owner, op_retry_later.vshard, op_retry_later.epoch);
	PERFORM outbox.check_delay(delay_ms);
	op := outbox.op_lock(op_retry_later.op_id, op_retry_later.vshard);
	IF op.status NOT IN ('PENDING', 'SUBMITTED') THEN
		PERFORM outbox.refuse(op.id, 'op_retry_later', op.status);
	END IF;
	IF op.status = 'SUBMITTED' AND EXISTS (SELECT 1 FROM outbox.attempts a
			WHERE a.op_id = op.id AND a.outcome = 'LIVE') THEN
		RAISE EXCEPTION 'op %: op_retry_later refused: an attempt is still LIVE (it could land)',
			op.id USING ERRCODE = 'OB409';
	END IF;
	UPDATE outbox.ops o SET status = 'PENDING',
		next_attempt_at = now() + make_interval(secs => delay_ms / 1000.0),
		attempts = o.attempts + CASE WHEN count_attempt THEN 1 ELSE 0 END,
		last_error = left(op_retry_later.error, 2000), claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'RETRY_SCHEDULED', op.status, 'PENDING',
		jsonb_strip_nulls(jsonb_build_object('delay_ms', delay_ms,
			'error', left(op_retry_later.error, 2000),
			'count_attempt', coalesce(count_attempt, false))));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_defer: a claimed PENDING (LOW) op deferred by delay_ms; releases the
-- op's lane reservation.
CREATE FUNCTION outbox.op_defer(owner text, vshard integer, epoch bigint, op_id bigint,
	delay_ms integer)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_defer.owner, op_defer.vshard, op_defer.epoch);
	PERFORM outbox.check_delay(delay_ms);
	op := outbox.op_lock(op_defer.op_id, op_defer.vshard);
	IF op.status <> 'PENDING' THEN
		PERFORM outbox.refuse(op.id, 'op_defer', op.status);
	END IF;
	UPDATE outbox.ops o SET status = 'PENDING',
		next_attempt_at = now() + make_interval(secs => delay_ms / 1000.0),
		claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'DEFERRED', 'PENDING', 'PENDING',
		jsonb_build_object('delay_ms', delay_ms));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- ---------------------------------------------------------------------
-- Recovery.

-- reconcile_list: for a worker that took a vshard. Resets the vshard's
-- lane reservations to its SUBMITTED ops per signer (a predecessor's
-- claims die with it) and lists every SUBMITTED op of the vshard with its
-- LIVE attempts - one row per LIVE attempt, or one row with NULL attempt
-- columns when none is LIVE (the predecessor decided them but died before
-- moving the op: retry or fail it).
CREATE FUNCTION outbox.reconcile_list(owner text, vshard integer, epoch bigint)
RETURNS TABLE (op_id bigint, signer text, tx_hash text, inner_tx_hash text, bump_no integer,
	envelope_xdr text, source_sequence bigint, max_time bigint, fee bigint, attempt_no integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	PERFORM outbox.fence(reconcile_list.owner, reconcile_list.vshard, reconcile_list.epoch);
	UPDATE outbox.lanes l SET in_flight = coalesce(s.n, 0),
		next_due = CASE WHEN l.next_due = 'infinity' THEN now() ELSE l.next_due END
	FROM outbox.lanes l2
	LEFT JOIN (SELECT o.signer, count(*)::integer AS n FROM outbox.ops o
		WHERE o.vshard = reconcile_list.vshard AND o.status = 'SUBMITTED'
		GROUP BY o.signer) s ON s.signer = l2.signer
	WHERE l2.signer = l.signer AND l2.vshard = reconcile_list.vshard
		AND (l2.in_flight <> coalesce(s.n, 0) OR l2.next_due = 'infinity');
	RETURN QUERY
	SELECT o.id, o.signer, a.tx_hash, a.inner_tx_hash, a.bump_no, a.envelope_xdr,
		a.source_sequence, a.max_time, a.fee, a.attempt_no
	FROM outbox.ops o
	LEFT JOIN outbox.attempts a ON a.op_id = o.id AND a.outcome = 'LIVE'
	WHERE o.vshard = reconcile_list.vshard AND o.status = 'SUBMITTED'
	ORDER BY o.id, a.bump_no;
END
$$;

-- attempt_lookup: which of a closed ledger's hashes are ours (unfenced;
-- the oracle's ledger follower reads it).
CREATE FUNCTION outbox.attempt_lookup(tx_hashes text[])
RETURNS TABLE (tx_hash text, op_id bigint, vshard integer)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
	IF cardinality(tx_hashes) > 100000 THEN
		PERFORM outbox.invalid_input('tx_hashes', NULL, 'has more than 100000 hashes');
	END IF;
	RETURN QUERY
	SELECT a.tx_hash, a.op_id, o.vshard
	FROM outbox.attempts a JOIN outbox.ops o ON o.id = a.op_id
	WHERE a.tx_hash = ANY (tx_hashes);
END
$$;

-- ---------------------------------------------------------------------
-- Admin (SQL level; CLI and HTTP call these). Each writes an audit_log
-- row; a refusal raises and writes nothing.

CREATE FUNCTION outbox.check_actor(actor text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF actor IS NULL OR length(actor) NOT BETWEEN 1 AND 128 OR actor ~ '[[:cntrl:]]' THEN
		PERFORM outbox.invalid_input('actor', actor,
			'is not 1..128 characters without control characters');
	END IF;
END
$$;

-- admin_retry: FAILED -> PENDING, due now, with a fresh budget: attempts
-- and fee_bumps are reset to 0 (an admin retry is a new decision, so the
-- op gets OUTBOX_MAX_ATTEMPTS tries again); last_error is kept until the
-- next outcome. Returns the new status.
CREATE FUNCTION outbox.admin_retry(op_id bigint, actor text) RETURNS text
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.check_actor(actor);
	op := outbox.op_lock(admin_retry.op_id, NULL);
	IF op.status <> 'FAILED' THEN
		PERFORM outbox.refuse(op.id, 'admin_retry', op.status);
	END IF;
	UPDATE outbox.ops o SET status = 'PENDING', next_attempt_at = now(), attempts = 0,
		fee_bumps = 0, claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'ADMIN_RETRY', 'FAILED', 'PENDING',
		jsonb_build_object('actor', actor, 'previous_attempts', op.attempts));
	INSERT INTO outbox.audit_log (actor, action, target, detail)
	VALUES (actor, 'op.retry', op.id::text,
		jsonb_build_object('from', 'FAILED', 'to', 'PENDING', 'previous_attempts', op.attempts));
	INSERT INTO outbox.lane_signals (vshard, signer, priority, due)
	VALUES (op.vshard, op.signer, op.priority, now());
	RETURN 'PENDING';
END
$$;

-- admin_cancel: PENDING -> CANCELLED only (a SUBMITTED op's envelope could
-- still land: refused). A worker holding a claim of the op learns it from
-- attempt_record's OB409 and gives the reservation back (claim_release).
-- Returns the new status.
CREATE FUNCTION outbox.admin_cancel(op_id bigint, actor text) RETURNS text
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.check_actor(actor);
	op := outbox.op_lock(admin_cancel.op_id, NULL);
	IF op.status <> 'PENDING' THEN
		PERFORM outbox.refuse(op.id, 'admin_cancel', op.status);
	END IF;
	UPDATE outbox.ops o SET status = 'CANCELLED', claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'CANCELLED', 'PENDING', 'CANCELLED',
		jsonb_build_object('actor', actor));
	INSERT INTO outbox.audit_log (actor, action, target, detail)
	VALUES (actor, 'op.cancel', op.id::text,
		jsonb_build_object('from', 'PENDING', 'to', 'CANCELLED'));
	-- The lane is left alone: the next claim that finds nothing ready
	-- there recomputes it.
	RETURN 'CANCELLED';
END
$$;
