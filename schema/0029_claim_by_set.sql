-- 0029_claim_by_set.sql - a claim takes the plainly takeable lanes in a
-- few statements for the whole batch, not five per lane.
--
-- Why. outbox.claim (0024, 0027) visits its candidate lanes one by one in
-- PL/pgSQL: per lane a locking read of the lane, a read of its best ready
-- op, max(source_sequence) of the signer's attempts and an UPDATE of the
-- lane. Each is a statement with its own executor start and end, which
-- perf put among the largest costs of the hot path. bench_dispatch's
-- throughput phase (pg_stat_statements): 4 of the 14.5 nested statements
-- per confirmed op, ~0.12 ms of statement time per op.
--
-- What. With per_account_max 1 (outboxd accepts no other value,
-- OUTBOX_PER_ACCOUNT_MAX_IN_FLIGHT), the claim first calls
-- outbox.claim_lanes: one statement that reads the due candidate lanes in
-- the claim's order (up to batch), locks those still due with nothing in
-- flight (SKIP LOCKED, in that order), takes each one's best ready op as
-- the loop would (same conditions, same order, FOR NO KEY UPDATE SKIP
-- LOCKED), reserves every lane that gave an op (in_flight 1, next_due
-- 'infinity', recheck_s 1: the loop's UPDATE for a lane that is then
-- full) and returns the rows with each signer's seq_high. A lane that gave
-- nothing is only locked, and stays due: the loop that follows (0027's,
-- unchanged) visits it and does what it always did (park a reserved lane,
-- back off a held one, move a lane due later), while the batch has room.
-- So every row the claim returns is one the loop would have returned for
-- that lane, and every lane ends as the loop would leave it; the rows come
-- in the loop's lane order, but for lanes tied on (pending_best, next_due),
-- which either order may take first. A vshard named twice counts once.
-- per_account_max above 1 (SQL callers) runs the loop alone.
--
-- Plans: the candidates are one lanes_ready_idx scan per vshard (LATERAL,
-- as 0017), the lanes and ops are reached by key (lanes_pkey, the signer's
-- ops index), the attempts by attempts_account_sequence; claim_lanes runs
-- with sequential and bitmap scans, hash and merge joins switched off and
-- one generic plan per session. check_dispatch_sql's hot_plans holds it to
-- index access with bounded buffers under a 100 000-op backlog; its claim
-- cases (claim_by_set among them) compare it with the loop.

CREATE FUNCTION outbox.claim_lanes(vshards integer[], epochs bigint[], batch integer,
	max_priority integer)
RETURNS TABLE (op_id bigint, vshard integer, signer text, kind text, priority smallint,
	user_id text, idempotency_key text, payload jsonb, attempts integer, fee_bumps integer,
	created_at timestamptz, attempts_base integer, seq_high bigint)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET max_parallel_workers_per_gather = 0
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH c AS MATERIALIZED (
		SELECT r.signer, r.pending_best, r.next_due
		FROM (SELECT DISTINCT x FROM unnest(vshards) x) u (v)
		CROSS JOIN LATERAL (
			SELECT l.signer, l.pending_best, l.next_due FROM outbox.lanes l
			WHERE l.vshard = u.v AND l.pending_best <= claim_lanes.max_priority
				AND l.next_due <= now()
			ORDER BY l.pending_best, l.next_due
			LIMIT claim_lanes.batch) r
		ORDER BY r.pending_best, r.next_due
		LIMIT claim_lanes.batch),
	k AS MATERIALIZED (
		SELECT l.signer, l.seq_floor, c.pending_best AS pb, c.next_due AS nd
		FROM c JOIN outbox.lanes l ON l.signer = c.signer
		WHERE l.pending_best <= claim_lanes.max_priority AND l.next_due <= now()
			AND l.in_flight = 0
		ORDER BY c.pending_best, c.next_due
		FOR NO KEY UPDATE OF l SKIP LOCKED),
	p AS MATERIALIZED (
		SELECT k.pb, k.nd, k.seq_floor, o.* FROM k
		CROSS JOIN LATERAL (
			SELECT x.id, x.vshard, x.signer, x.kind, x.priority, x.user_id,
				x.idempotency_key, x.payload, x.attempts, x.fee_bumps, x.created_at,
				x.attempts_base
			FROM outbox.ops x
			WHERE x.signer = k.signer AND x.status = 'PENDING'
				AND x.priority <= claim_lanes.max_priority
				AND x.next_attempt_at <= now()
				AND NOT EXISTS (SELECT 1 FROM outbox.held_users h
					WHERE h.user_id = x.user_id OFFSET 0)
			ORDER BY x.priority, x.next_attempt_at, x.created_at
			LIMIT 1
			FOR NO KEY UPDATE OF x SKIP LOCKED) o),
	r AS (
		UPDATE outbox.lanes l SET in_flight = l.in_flight + 1, next_due = 'infinity',
			recheck_s = 1
		FROM p WHERE l.signer = p.signer)
	SELECT p.id, p.vshard, p.signer, p.kind, p.priority, p.user_id, p.idempotency_key,
		p.payload, p.attempts, p.fee_bumps, p.created_at, p.attempts_base,
		GREATEST((SELECT max(a.source_sequence) FROM outbox.attempts a
			WHERE a.source_account = p.signer AND a.bump_no = 0
				AND a.outcome NOT IN ('EXPIRED', 'REJECTED')), p.seq_floor)
	FROM p
	ORDER BY p.pb, p.nd;
END
$$;

-- The claim of 0027, with the set step first (the header).
CREATE OR REPLACE FUNCTION outbox.claim(owner text, vshards integer[], epochs bigint[],
	per_account_max integer, batch integer, max_priority integer DEFAULT 2)
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
	recheck integer;
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
	IF max_priority IS NULL OR max_priority NOT BETWEEN 0 AND 2 THEN
		PERFORM outbox.invalid_input('max_priority', max_priority::text, 'is not in 0..2');
	END IF;
	-- Nothing to take: return before the merge and the fence's locks (they
	-- would give the transaction an xid, WAL and a flush at commit); a
	-- stale owner is still refused.
	IF NOT outbox.claim_ready(vshards, claim.max_priority) THEN
		PERFORM outbox.fence_held(claim.owner, vshards, epochs);
		RETURN;
	END IF;
	PERFORM outbox.fence_all(claim.owner, vshards, epochs);
	PERFORM outbox.lane_merge(vshards);
	-- One reservation per signer (outboxd's only setting): the lanes that
	-- are plainly takeable, at once; the loop below then visits what is
	-- left (a lane whose ops are held, locked or due later, one still
	-- reserved) as before, while the batch has room.
	IF per_account_max = 1 THEN
		RETURN QUERY SELECT * FROM outbox.claim_lanes(vshards, epochs, batch,
			claim.max_priority);
		GET DIAGNOSTICS taken = ROW_COUNT;
	END IF;

	FOR cand IN
		SELECT r.signer FROM unnest(vshards) u (v)
		CROSS JOIN LATERAL (
			SELECT l.signer, l.pending_best, l.next_due FROM outbox.lanes l
			WHERE l.vshard = u.v AND l.pending_best <= claim.max_priority
				AND l.next_due <= now()
			ORDER BY l.pending_best, l.next_due) r
		ORDER BY r.pending_best, r.next_due
	LOOP
		EXIT WHEN taken >= batch;
		SELECT l.signer, l.vshard, l.in_flight, l.gen, l.seq_floor, l.recheck_s INTO ln
		FROM outbox.lanes l
		WHERE l.signer = cand.signer AND l.pending_best <= claim.max_priority
			AND l.next_due <= now()
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
				AND x.priority <= claim.max_priority
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
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got, next_due = 'infinity',
				recheck_s = 1
			WHERE l.signer = ln.signer;
		ELSIF got = room THEN
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got, recheck_s = 1
			WHERE l.signer = ln.signer;
		ELSE
			-- Fewer ready ops than room: what is left is due later, or
			-- held, or locked by another transaction (re-checked after
			-- recheck_s, doubled while nothing can be taken: 0020), or
			-- less urgent than max_priority (due now, for a claim of
			-- them), or nothing (clear the lane, gen-guarded).
			st := outbox.lane_best_due(ln.signer);
			recheck := 1;
			IF st.best IS NOT NULL AND st.due <= now() AND st.best <= claim.max_priority THEN
				fut := outbox.lane_due_future(ln.signer);
				st.due := LEAST(now() + make_interval(secs => ln.recheck_s), fut);
				IF got = 0 THEN
					recheck := LEAST(ln.recheck_s * 2, 30);
				END IF;
			END IF;
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got,
				pending_best = CASE WHEN l.gen = ln.gen THEN st.best ELSE l.pending_best END,
				next_due = CASE WHEN l.gen = ln.gen THEN st.due ELSE l.next_due END,
				recheck_s = recheck
			WHERE l.signer = ln.signer;
		END IF;
	END LOOP;
END
$$;
