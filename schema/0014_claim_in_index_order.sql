-- 0014_claim_in_index_order.sql - the claim and the ledger follower's
-- lookup keep to their indexes under a large backlog, whatever plan a
-- session settles on.
--
-- The claim's per-signer scan must read ops in the order of
-- ops_signer_pending_idx and stop after LIMIT rows. Its held-users test was
-- a correlated NOT EXISTS, which the planner may pull up into an anti join;
-- with a generic plan (LIMIT a parameter, which a PL/pgSQL statement gets
-- after five runs in a session) and many held users it chose a hash anti
-- join of every PENDING op of the signer followed by a sort: every op of the
-- signer read to return one (~5 000 buffers per signer, ~113 000 per claim
-- over a million-op backlog). "OFFSET 0" keeps the subquery a per-row probe
-- of held_users' unique index (the planner never pulls up a subquery with
-- an OFFSET), so the scan stays in index order and stops at LIMIT. The
-- meaning is unchanged: an op of a held user is never claimed.
--
-- attempt_lookup joined attempts to ops in one query, which the planner may
-- run as a merge join over all of ops_pkey (~180 000 buffers with a million
-- ops); a scalar subquery per matching attempt is one primary-key probe
-- each, whatever the tables' sizes.

CREATE OR REPLACE FUNCTION outbox.claim(owner text, vshards integer[], epochs bigint[],
	per_account_max integer, batch integer)
RETURNS TABLE (op_id bigint, vshard integer, signer text, kind text, priority smallint,
	user_id text, idempotency_key text, payload jsonb, attempts integer, fee_bumps integer,
	created_at timestamptz, attempts_base integer, seq_high bigint)
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

	FOR ln IN
		SELECT l.signer, l.vshard, l.in_flight, l.gen, l.seq_floor FROM outbox.lanes l
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

CREATE OR REPLACE FUNCTION outbox.attempt_lookup(tx_hashes text[])
RETURNS TABLE (tx_hash text, op_id bigint, vshard integer)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
	IF cardinality(tx_hashes) > 100000 THEN
		PERFORM outbox.invalid_input('tx_hashes', NULL, 'has more than 100000 hashes');
	END IF;
	RETURN QUERY
	SELECT a.tx_hash, a.op_id, (SELECT o.vshard FROM outbox.ops o WHERE o.id = a.op_id)
	FROM outbox.attempts a
	WHERE a.tx_hash = ANY (tx_hashes);
END
$$;
