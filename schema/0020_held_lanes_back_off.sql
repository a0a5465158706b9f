-- 0020_held_lanes_back_off.sql - a lane whose ready ops are all held is
-- re-checked less and less often, and a released hold wakes it at once.
--
-- The claim (0017) walks a lane's ready PENDING ops in index order,
-- skipping those of held users (outbox.held_users), up to its room. When
-- every ready op of the signer belongs to a held user it walks them all and
-- takes nothing, and it set the lane due again in 1 s: as long as the hold
-- lasted, every second, each such lane cost a read of all its held ops.
-- Measured: with the backlog's users held at the end of tests/chaos/
-- backlog.sh, claims that returned nothing read 27 844 and 57 837 buffers
-- (100 000 ops) and 637 140 (1 000 000 ops); bench_dispatch's enqueue phase
-- (20 000 ops enqueued for a held user) showed the same cost per second.
--
-- Now each lane has recheck_s: the wait before the next look when ready ops
-- were left behind. It starts at 1 s (what it was) and doubles, up to 30 s,
-- each time a look takes nothing; a look that takes an op, or finds the lane
-- drained, sets it back to 1. A row locked by another transaction (the
-- other reason ops are left behind) is free again long before the second
-- look, so only a lasting hold backs off.
--
-- A release must not wait up to 30 s: a statement trigger on
-- outbox.user_holds (DELETE, UPDATE, TRUNCATE) calls outbox.holds_changed(),
-- which makes every backed-off lane due now (one pass over outbox.lanes,
-- a row per signer: a hold is an operator's action, not traffic). An
-- application that replaced the outbox.held_users view (0004) with its own
-- table calls outbox.holds_changed() after lifting a hold; without it the
-- lane notices within 30 s.
--
-- Nothing about which ops may be claimed changes: an op of a held user is
-- never claimed, and every other ready op is claimed on the lane's next
-- look, as before; only the time between looks at a blocked lane grows.
-- Tests: check_dispatch_sql's held_users (a release is claimed at once)
-- and held_lane_backs_off (the waits double to 30 s, a taken op resets
-- them, a release wakes the lane, holds_changed() for a replaced view).

ALTER TABLE outbox.lanes ADD COLUMN recheck_s integer NOT NULL DEFAULT 1
	CHECK (recheck_s BETWEEN 1 AND 30);

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
		SELECT l.signer, l.vshard, l.in_flight, l.gen, l.seq_floor, l.recheck_s INTO ln
		FROM outbox.lanes l
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
			-- nothing (clear the lane, gen-guarded).
			st := outbox.lane_best_due(ln.signer);
			recheck := 1;
			IF st.best IS NOT NULL AND st.due <= now() THEN
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

-- Every lane that backed off, due now (its next look recomputes the wait).
-- Lanes at their in-flight cap (next_due 'infinity') wait for their
-- settle, as before. Returns the lanes woken.
CREATE FUNCTION outbox.holds_changed() RETURNS integer
LANGUAGE sql AS $$
	WITH w AS (
		UPDATE outbox.lanes l SET next_due = now(), recheck_s = 1
		WHERE l.recheck_s > 1 AND l.pending_best IS NOT NULL
			AND l.next_due <> 'infinity'
		RETURNING 1)
	SELECT count(*)::integer FROM w
$$;

CREATE FUNCTION outbox.user_holds_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM outbox.holds_changed();
	RETURN NULL;
END
$$;

CREATE TRIGGER user_holds_wake AFTER DELETE OR UPDATE OR TRUNCATE ON outbox.user_holds
	FOR EACH STATEMENT EXECUTE FUNCTION outbox.user_holds_wake();
