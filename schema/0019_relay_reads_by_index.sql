-- 0019_relay_reads_by_index.sql - the relay's read and its seal touch only
-- the rows they name, whatever the statistics say.
--
-- Two statements of the relay (0009) read far more than they return once
-- outbox.events is large and its statistics are stale (autovacuum off or
-- behind, a bulk load since the last ANALYZE):
--   * events_unsealed: the planner, believing few events, sorted a hash
--     join of every unsealed event with every op of the worker's vshards
--     for a LIMIT of 2 000: 502 762 buffers for 100 rows on a 100 000-op
--     backlog. The plan that is right at every size walks
--     events_unsealed_idx in id order (it holds only unsealed rows), probes
--     ops by key and stops at the limit; the function now runs with the
--     alternatives switched off, so that is the only plan left. (SET on a
--     function also stops its inlining: one call, one plan, per read.)
--   * events_seal: its UPDATE joined the ids it was given to the events by
--     `e.id = u.id`, and with `chain_seq IS NULL` in the same WHERE the
--     planner read the whole of events_unsealed_idx and hashed it: 302 995
--     buffers to seal 20 rows, 30-50 ms per seal in bench_dispatch. Adding
--     `e.id = ANY (ids)` gives it the primary key to probe, one per id.
--     Even so, a plan cached while outbox.ops was small turned the UPDATE's
--     `OR EXISTS (... ops o WHERE o.id = e.op_id AND o.vshard = ...)` into
--     a hashed subplan over a sequential scan of ops (1 093-1 804 buffers
--     per seal in bench_dispatch: the top statement by time). The UPDATE
--     now finds its rows by id alone and returns their op ids, and one
--     probe of ops' primary key per row checks that every one is of the
--     vshard; a row of another chain still refuses the whole seal (OB409,
--     the function's error rolls its UPDATE back), as before. The function
--     runs, like events_unsealed, with the sequential scan and hash and
--     merge joins switched off. It is otherwise 0009's.
--
-- Measured (bench_dispatch with the event relay, the 2-core machine):
-- events_seal 10.1 -> 1.66 ms of statement time per op; confirmed ops/s
-- 210 -> 255, PostgreSQL CPU 7.25 -> 5.06 ms per op.
-- Tests: check_event_relay's seal_refuses (every refusal of events_seal;
-- a seal of two events under generic plans with 20 000 ops: 951 buffers
-- with the OR EXISTS form, 47 now); check_dispatch_sql's hot_plans (every
-- hot-path statement under a 100 000-op backlog: 0009's seal read ~314 000
-- buffers there). No test reproduces events_unsealed's bad plan (a hash
-- join it chose with most unsealed rows outside the worker's vshards); its
-- SET clauses hold it.

ALTER FUNCTION outbox.events_unsealed(integer[], integer)
	SET enable_seqscan = off
	SET enable_bitmapscan = off
	SET enable_sort = off
	SET enable_hashjoin = off
	SET enable_mergejoin = off
	SET max_parallel_workers_per_gather = 0;

CREATE OR REPLACE FUNCTION outbox.events_seal(owner text, vshard integer, epoch bigint, chain text,
	after_seq bigint, prev_hex text, ids bigint[], hashes_hex text[])
RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET max_parallel_workers_per_gather = 0
AS $$
#variable_conflict use_column
DECLARE
	h outbox.chain_heads;
	n integer;
	prev bytea;
	hashes bytea[];
BEGIN
	IF prev_hex IS NULL OR prev_hex !~ '^[0-9a-f]{64}$' OR EXISTS (SELECT 1 FROM unnest(hashes_hex) x
			WHERE x IS NULL OR x !~ '^[0-9a-f]{64}$') THEN
		PERFORM outbox.invalid_input('hashes', NULL, 'and prev must be 64 lowercase hex characters each');
	END IF;
	prev := decode(prev_hex, 'hex');
	hashes := ARRAY(SELECT decode(x, 'hex') FROM unnest(hashes_hex) WITH ORDINALITY u (x, i) ORDER BY i);
	IF events_seal.vshard IS NOT NULL THEN
		PERFORM outbox.fence(events_seal.owner, events_seal.vshard, events_seal.epoch);
		IF events_seal.chain IS DISTINCT FROM 'vshard:' || events_seal.vshard THEN
			PERFORM outbox.invalid_input('chain', events_seal.chain,
				'is not the chain of vshard ' || events_seal.vshard);
		END IF;
	ELSIF events_seal.chain IS NULL OR events_seal.chain !~ '^oracle:' THEN
		PERFORM outbox.invalid_input('chain', events_seal.chain,
			'is not a chain of no op (oracle:<instance>); vshard chains need the lease');
	END IF;
	IF ids IS NULL OR hashes IS NULL OR cardinality(ids) <> cardinality(hashes)
			OR cardinality(ids) NOT BETWEEN 1 AND 10000 THEN
		PERFORM outbox.invalid_input('ids', NULL,
			'and hashes must be arrays of equal length 1..10000');
	END IF;
	INSERT INTO outbox.chain_heads AS x (chain, seq, hash)
	VALUES (events_seal.chain, 0, '\x0000000000000000000000000000000000000000000000000000000000000000')
	ON CONFLICT (chain) DO NOTHING;
	SELECT * INTO h FROM outbox.chain_heads x WHERE x.chain = events_seal.chain FOR UPDATE;
	IF h.seq <> after_seq OR h.hash <> prev THEN
		RAISE EXCEPTION 'chain %: its head is link % (%), not % (%)', h.chain, h.seq,
			encode(h.hash, 'hex'), after_seq, encode(prev, 'hex')
			USING ERRCODE = 'OB409', COLUMN = 'after_seq';
	END IF;
	WITH s AS (
		UPDATE outbox.events e SET chain = events_seal.chain, chain_seq = after_seq + u.ord,
			chain_prev = CASE WHEN u.ord = 1 THEN prev ELSE hashes[u.ord - 1] END,
			chain_hash = u.h
		FROM unnest(ids, hashes) WITH ORDINALITY u (id, h, ord)
		WHERE e.id = ANY (ids) AND e.id = u.id AND e.chain_seq IS NULL
			AND CASE WHEN events_seal.vshard IS NULL THEN e.chain = events_seal.chain
				ELSE e.op_id IS NOT NULL END
		RETURNING e.op_id)
	SELECT count(*) FILTER (WHERE events_seal.vshard IS NULL OR o.vshard = events_seal.vshard)
	INTO n
	FROM s LEFT JOIN outbox.ops o ON o.id = s.op_id;
	IF n <> cardinality(ids) THEN
		RAISE EXCEPTION 'chain %: % of % events are not unsealed events of it', events_seal.chain,
			cardinality(ids) - n, cardinality(ids) USING ERRCODE = 'OB409', COLUMN = 'ids';
	END IF;
	UPDATE outbox.chain_heads x SET seq = after_seq + n, hash = hashes[n], sealed_at = now()
	WHERE x.chain = events_seal.chain;
END
$$;
