-- 0017_bounded_lane_merge.sql - a claim's work on lane signals and ready
-- lanes stays bounded under a huge backlog, and CRITICAL signals never wait
-- behind NORMAL or LOW ones.
--
-- 1. lane_merge. 0004's trigger writes one signal per INSERT statement, and
-- enqueue inserts one row per call, so the documented bulk path (one
-- enqueue per row, schema/README.md "Loading a backlog") leaves one signal
-- per op. 0004's lane_merge moved every signal of its vshards in ONE
-- statement: after a 100 000-op load, the next claim of each vshard read
-- them all by a sequential scan (203 712 buffers, tests/chaos/backlog.sh)
-- while the CRITICAL ops that arrived on top waited behind it. Now a call
-- takes at most 100 CRITICAL signals (a partial index finds them without
-- reading any other) and then at most 100 others (by lane_signals_vshard_idx,
-- LIMIT), each by ctid in the same DELETE ... RETURNING that merges them.
-- Both are forced index scans (the function sets enable_seqscan and
-- enable_bitmapscan off for its statements): with a vshard's signals dense
-- the planner costs a sequential scan that stops at LIMIT as cheaper, but
-- the signals merged before are dead rows at the front of the heap, which
-- such a scan reads again on every call until VACUUM (1 239 pages after a
-- 100 000-op load in backlog.sh), and a bitmap scan reads every entry of
-- the vshard before its LIMIT; the index skips entries it found dead.
-- A lane locked by another transaction (a worker's finalizers settle
-- several lanes in one transaction, in their own order) is skipped, its
-- signals left in place: the merge locks the lanes it updates first, in
-- signer order, SKIP LOCKED, and never waits for one (waiting, as 0004's
-- merge did, deadlocked with those finalizers 21 times in one backlog.sh
-- run once every claim merged a slice of 200 signals).
-- The rest wait for the next claims (a busy worker polls every
-- WORKER_LANE_POLL_MS; an idle one claims on every sweep), and only the
-- first signal of a signer matters: once its lane is ready the claim reads
-- the signer's ops themselves, so a signal merged late costs a lane upsert,
-- never an op.
--
-- Race-freedom, updating 0004's argument (the enqueue-lane race). A lane is
-- set only by merging signals (LEAST, gen + 1) and cleared only from what
-- the ops say: under the lane's row lock, "gen = <gen read>", from reads of
-- the ops in a later statement (the claim, lane_settle). So:
--   - a signal merged by this call: as in 0004 (committed before the merge
--     statement, so its op is visible to the claim's later statements; a
--     clear that read before the merge fails its gen guard).
--   - a signal NOT merged by this call (past the slice, or its lane locked
--     by another transaction) stays in lane_signals, untouched
--     (nothing deletes a signal except the statement that merges it: the
--     DELETE's RETURNING feeds the upsert in the same statement, whichever
--     rows it deleted). Its op is committed, so every later read of the ops
--     sees it: no clear of that lane can ignore it, and the next calls merge
--     the signal (each takes up to 100 more, CRITICAL first; claims run as
--     long as a worker holds the vshard, at least on every sweep). Merged
--     late into a lane whose op is gone, it marks the lane ready for one
--     claim, which finds nothing and clears it from the ops, gen-guarded.
-- Nothing is stranded, whatever the interleaving; the enqueue still only
-- INSERTs (it neither updates nor locks a lane: 0004 says why).
--
-- 2. The claim's ready lanes. `vshard = ANY (vshards) AND pending_best IS
-- NOT NULL AND next_due <= now() ORDER BY ... FOR NO KEY UPDATE SKIP LOCKED`
-- was planned as a sequential scan of lanes once the table had bloated
-- (122 pages for 200 signers after the backlog run: claims and settles
-- change next_due, which is indexed, so lane updates are never HOT). Now one
-- probe of lanes_ready_idx per vshard (unnest + LATERAL: vshard equal, so
-- only that vshard's ready range is read whatever the table's size or
-- statistics), sorted by (pending_best, next_due) as before, without locks;
-- each lane is then locked by primary key, SKIP LOCKED, re-checking that it
-- is still ready. Locking lazily, one lane at a time as the loop reaches it,
-- is what 0014's query did (its LockRows sat above the sort); a lane that
-- changed between the read and the lock is re-read under the lock (READ
-- COMMITTED: a new statement sees the latest commit), so in_flight and gen
-- are the ones the loop's updates are guarded by, as before.

CREATE INDEX lane_signals_critical_idx ON outbox.lane_signals (vshard) WHERE priority = 0;

CREATE OR REPLACE FUNCTION outbox.lane_merge(vshards integer[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sig tid[];
	mine text[];
BEGIN
	sig := ARRAY(
		SELECT c.t FROM unnest(vshards) u (v)
		CROSS JOIN LATERAL (SELECT y.ctid AS t FROM outbox.lane_signals y
			WHERE y.vshard = u.v AND y.priority = 0 LIMIT 100) c
		LIMIT 100)
		|| ARRAY(
		SELECT n.t FROM unnest(vshards) u (v)
		CROSS JOIN LATERAL (SELECT y.ctid AS t FROM outbox.lane_signals y
			WHERE y.vshard = u.v LIMIT 100) n
		LIMIT 100);
	IF cardinality(sig) = 0 THEN
		RETURN;
	END IF;
	mine := ARRAY(
		SELECT l.signer FROM outbox.lanes l
		WHERE l.signer IN (SELECT y.signer FROM outbox.lane_signals y WHERE y.ctid = ANY (sig))
		ORDER BY l.signer
		FOR NO KEY UPDATE SKIP LOCKED);
	WITH s AS (
		DELETE FROM outbox.lane_signals x
		WHERE x.ctid = ANY (sig)
			AND (x.signer = ANY (mine)
				OR NOT EXISTS (SELECT 1 FROM outbox.lanes l WHERE l.signer = x.signer))
		RETURNING x.vshard, x.signer, x.priority, x.due)
	INSERT INTO outbox.lanes AS l (signer, vshard, pending_best, next_due, gen)
	SELECT s.signer, min(s.vshard), min(s.priority), min(s.due), 1
	FROM s GROUP BY s.signer ORDER BY s.signer
	ON CONFLICT (signer) DO UPDATE SET
		pending_best = LEAST(l.pending_best, excluded.pending_best),
		next_due = CASE WHEN l.next_due = 'infinity' THEN l.next_due
			ELSE LEAST(l.next_due, excluded.next_due) END,
		gen = l.gen + 1;
END
$$ SET enable_seqscan = off SET enable_bitmapscan = off;

CREATE OR REPLACE FUNCTION outbox.claim(owner text, vshards integer[], epochs bigint[],
	per_account_max integer, batch integer)
RETURNS TABLE (op_id bigint, vshard integer, signer text, kind text, priority smallint,
	user_id text, idempotency_key text, payload jsonb, attempts integer, fee_bumps integer,
	created_at timestamptz, attempts_base integer, seq_high bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	cand record;
	ln record;
	o record;
	taken integer := 0;
	room integer;
	got integer;
	ep bigint;
	st record;
	fut timestamptz;
	high bigint;
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

	FOR cand IN
		SELECT r.signer FROM unnest(vshards) u (v)
		CROSS JOIN LATERAL (
			SELECT l.signer, l.pending_best, l.next_due FROM outbox.lanes l
			WHERE l.vshard = u.v AND l.pending_best IS NOT NULL AND l.next_due <= now()
			ORDER BY l.pending_best, l.next_due) r
		ORDER BY r.pending_best, r.next_due
	LOOP
		EXIT WHEN taken >= batch;
		SELECT l.signer, l.vshard, l.in_flight, l.gen, l.seq_floor INTO ln FROM outbox.lanes l
		WHERE l.signer = cand.signer AND l.pending_best IS NOT NULL AND l.next_due <= now()
		FOR NO KEY UPDATE SKIP LOCKED;
		CONTINUE WHEN NOT FOUND;
		IF ln.in_flight >= per_account_max THEN
			UPDATE outbox.lanes l SET next_due = 'infinity' WHERE l.signer = ln.signer;
			CONTINUE;
		END IF;
		room := LEAST(per_account_max - ln.in_flight, batch - taken);
		ep := epochs[array_position(vshards, ln.vshard)];
		got := 0;
		FOR o IN
			SELECT x.id, x.vshard, x.signer, x.kind, x.priority, x.user_id,
				x.idempotency_key, x.payload, x.attempts, x.fee_bumps, x.created_at,
				x.attempts_base
			FROM outbox.ops x
			WHERE x.signer = ln.signer AND x.status = 'PENDING'
				AND x.next_attempt_at <= now()
				AND (ln.in_flight = 0 OR x.claimed_epoch IS DISTINCT FROM ep)
				AND NOT EXISTS (SELECT 1 FROM outbox.held_users h
					WHERE h.user_id = x.user_id OFFSET 0)
			ORDER BY x.priority, x.next_attempt_at, x.created_at
			LIMIT room
			FOR NO KEY UPDATE OF x SKIP LOCKED
		LOOP
			IF got = 0 THEN
				SELECT max(a.source_sequence) INTO high FROM outbox.attempts a
				WHERE a.source_account = ln.signer AND a.bump_no = 0
					AND a.outcome NOT IN ('EXPIRED', 'REJECTED');
				high := GREATEST(high, ln.seq_floor);
			END IF;
			got := got + 1;
			IF per_account_max > 1 THEN
				UPDATE outbox.ops x SET claimed_epoch = ep WHERE x.id = o.id;
			END IF;
			op_id := o.id; vshard := o.vshard; signer := o.signer; kind := o.kind;
			priority := o.priority; user_id := o.user_id;
			idempotency_key := o.idempotency_key; payload := o.payload;
			attempts := o.attempts; fee_bumps := o.fee_bumps; created_at := o.created_at;
			attempts_base := o.attempts_base; seq_high := high;
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
