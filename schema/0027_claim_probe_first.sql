-- 0027_claim_probe_first.sql - a claim with nothing to take reads two
-- indexes and returns, writing nothing.
--
-- Why. NORMAL and LOW ops have no NOTIFY (worker/claim.c): a busy worker
-- polls with a claim every 5 ms, and most of those polls find nothing. An
-- empty claim still fenced its vshards (fence_all: a FOR KEY SHARE lock of
-- every lease row it holds, 16 for a worker of 4 on 64 vshards) and ran
-- lane_merge: the row locks gave the transaction an xid, heap writes, WAL
-- and a WAL flush at commit. bench_dispatch's latency phase at 150 ops/s
-- offered ran 4.5 claims per op and spent 5.4 ms of PostgreSQL CPU per op,
-- half of the two cores for 150 ops/s.
--
-- What. outbox.claim_ready(vshards, max_priority) is true when a claim of
-- those vshards could take anything: a lane signal (of a CRITICAL op, for
-- a CRITICAL-only claim) waits in one of them to be merged, or a lane of
-- them is due with a pending op that urgent. The claim asks it first and,
-- false, returns no rows before fencing or merging. The rest of the claim
-- is 0024's. An empty claim still checks its leases, without locking
-- them (outbox.fence_held): a stale owner's claim fails with OB403 whether
-- or not there is work, as before; the lock that makes a takeover wait
-- matters only to a claim that takes rows, which still fences with
-- fence_all.
--
-- Why no op is missed. A claim takes ops only from lanes that are due with
-- pending_best <= max_priority once lane_merge has run, and lane_merge
-- changes only the lanes named by signals of the claim's vshards. So a claim
-- that takes a row had, when it started, such a signal or such a lane: the
-- probe sees the same committed rows (READ COMMITTED, one snapshot per
-- statement) and says true. A lane or signal committed after the probe is
-- the next claim's, as it was for a claim whose merge had just read. A
-- CRITICAL-only claim leaves NORMAL and LOW signals to the regular claim,
-- which merges them.
--
-- Plans: each probe is one index scan over all the claim's vshards (= ANY:
-- one descent per vshard inside the scan, not one executor node per
-- vshard, which cost as much as the fence it saves): lane_signals by vshard
-- (its CRITICAL partial index for a CRITICAL-only claim), lanes_ready_idx
-- with (vshard, pending_best, next_due) all as index conditions, so a lane
-- reserved until 'infinity' is skipped in the index, never fetched.
--
-- Tests: check_dispatch_sql's fencing cases (an empty claim of a stale
-- owner fails too), claim_probe (every kind of work found, an
-- idle claim writes nothing and takes no xid) and hot_plans (the probes are
-- index scans with bounded buffers under a backlog).

CREATE FUNCTION outbox.claim_ready(vshards integer[], max_priority integer)
RETURNS boolean LANGUAGE plpgsql STABLE
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
BEGIN
	IF max_priority = 0 THEN
		IF EXISTS (SELECT 1 FROM outbox.lane_signals y
			WHERE y.vshard = ANY (claim_ready.vshards) AND y.priority = 0) THEN
			RETURN true;
		END IF;
	ELSIF EXISTS (SELECT 1 FROM outbox.lane_signals y
		WHERE y.vshard = ANY (claim_ready.vshards)) THEN
		RETURN true;
	END IF;
	RETURN EXISTS (SELECT 1 FROM outbox.lanes l
		WHERE l.vshard = ANY (claim_ready.vshards)
			AND l.pending_best <= claim_ready.max_priority AND l.next_due <= now());
END
$$;

-- fence_all's check without its locks: every (vshard, epoch) leased to
-- owner and unexpired now, or OB403 naming the first that is not (by
-- fence_all, which runs only then).
CREATE FUNCTION outbox.fence_held(owner text, vshards integer[], epochs bigint[])
RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
	held integer;
BEGIN
	-- One index scan over every vshard named (= ANY); a repeated vshard
	-- counts once, so it goes to fence_all, which takes it.
	SELECT count(*) INTO held FROM outbox.shard_leases l
	WHERE l.vshard = ANY (fence_held.vshards) AND l.owner = fence_held.owner
		AND l.expires_at > now()
		AND l.epoch = fence_held.epochs[array_position(fence_held.vshards, l.vshard)];
	IF held IS DISTINCT FROM cardinality(fence_held.vshards) THEN
		PERFORM outbox.fence_all(fence_held.owner, fence_held.vshards, fence_held.epochs);
	END IF;
END
$$;

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
