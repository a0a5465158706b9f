-- 0024_claim_fence_once.sql - a claim fences all its vshards in one
-- statement, and can be limited to the most urgent priorities.
--
-- 1. outbox.fence_all. The claim fenced its vshards one call at a time:
-- a worker holding 16 of 64 vshards ran outbox.fence and outbox.fence_lock
-- 16 times each per claim. bench_dispatch's latency phase (500 ops/s
-- offered, about one claim per op) measured 18.9 fence and 18.3 fence_lock
-- calls per op, 0.5 ms of PostgreSQL time per op out of ~2.4. fence_all
-- locks every lease row of the claim FOR KEY SHARE in one statement (one
-- probe of shard_leases' primary key per vshard, linear in the vshards
-- however the statistics look) and counts them: all held, it returns. Otherwise it fences them one by one, which raises the
-- same OB403, naming the first vshard not leased, as before. What a fence
-- promises is unchanged (0004, 0006): every (vshard, epoch) is leased to
-- owner and unexpired now, and its lease row stays locked FOR KEY SHARE
-- until the transaction ends, so a takeover (which changes the key
-- columns owner and epoch) waits for the claim to commit, while the
-- owner's renewal does not. fence_all leaves the per-transaction memo of
-- outbox.fence alone: a claim runs alone in its transaction. Measured in
-- the same phase, alternated with the code before it: the claim's
-- statement time per op 0.85-0.91 -> 0.60-0.62 ms, fence calls per op 15-16
-- -> 0.8.
--
-- 2. claim's max_priority (0 CRITICAL, 1 NORMAL, 2 LOW; default 2: all, as
-- before). A worker runs a CRITICAL-only claim when a CRITICAL op's
-- NOTIFY arrives while its regular claim is on the wire (worker/claim.c):
-- under a backlog the regular claim takes tens of milliseconds, and the
-- CRITICAL op would wait for it and then for one more. With max_priority
-- the claim only looks at lanes whose best pending op is that urgent
-- (lanes_ready_idx's pending_best bound), takes only such ops (the bound of
-- ops_signer_pending_idx's priority), and leaves a lane whose remaining
-- ready ops are less urgent due at once, for the regular claim: the
-- back-off of 0020 applies only to ops the claim was allowed to take.
-- Everything else is 0020's claim: the same lanes, order, locks and
-- reservations. Two claims of one owner may run at once; they skip each
-- other's locked lanes and ops (SKIP LOCKED), as claims of two workers do.
--
-- Tests: check_dispatch_sql's fencing (a wrong epoch among several names
-- its vshard), fence_blocks_takeover (a takeover of the second vshard of a
-- claim waits for it) and claim_max_priority.

CREATE FUNCTION outbox.fence_all(owner text, vshards integer[], epochs bigint[])
RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
	held integer;
BEGIN
	IF vshards IS NULL OR epochs IS NULL OR cardinality(vshards) <> cardinality(epochs) THEN
		PERFORM outbox.invalid_input('vshards', NULL,
			'and epochs must be arrays of equal length');
	END IF;
	-- One primary-key probe per vshard: a subquery with FOR KEY SHARE is
	-- never flattened into a join, which the planner could run as a scan
	-- of the owner's leases once per vshard (quadratic in the vshards).
	SELECT count(*) INTO held
	FROM unnest(fence_all.vshards, fence_all.epochs) u (v, e)
	CROSS JOIN LATERAL (
		SELECT 1 FROM outbox.shard_leases l
		WHERE l.vshard = u.v AND l.epoch = u.e AND l.owner = fence_all.owner
			AND l.expires_at > now()
		FOR KEY SHARE) k;
	IF held = cardinality(fence_all.vshards) THEN
		RETURN;
	END IF;
	-- Not all held: the one-by-one fence names the first that is not.
	FOR i IN 1 .. cardinality(fence_all.vshards) LOOP
		PERFORM outbox.fence(fence_all.owner, fence_all.vshards[i], fence_all.epochs[i]);
	END LOOP;
END
$$;

DROP FUNCTION outbox.claim(text, integer[], bigint[], integer, integer);

CREATE FUNCTION outbox.claim(owner text, vshards integer[], epochs bigint[],
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
	PERFORM outbox.fence_all(claim.owner, vshards, epochs);
	PERFORM outbox.lane_merge(vshards);

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
