-- 0025_seal_vshards_at_once.sql - the relay seals the vshard chains of one
-- read in one statement.
--
-- Why. A worker's relay reads the unsealed events of all its vshards (one
-- page every 100 ms when idle) and sealed each vshard's chain with its own
-- events_seal statement (0009, 0019, 0021). The statements of a read share a
-- commit (group commit), but each has a fixed cost: the fence, the chain
-- head's upsert and lock, its plan and PL/pgSQL call. At 500 ops/s offered a
-- read found ~12 ops' events spread over ~10 of the worker's 16 vshards:
-- bench_dispatch's latency phase measured 0.95 events_seal calls per op,
-- 0.42 ms of statement time per op. With this function, alternated with
-- the code before it: 0.08 calls per op, 0.22 ms (0.55 before, in the same
-- pair); in the backlog's throughput phase 0.12-0.13 ms per op, against
-- 0.23-0.24.
--
-- What. outbox.events_seal_vshards links the rows of several vshard chains
-- with set-based statements: one fence of every lease (fence_all, 0024),
-- one upsert of the missing heads, the heads locked in chain order (so two
-- sealers never deadlock), one check of every head against what the relay
-- linked after, one UPDATE of every event (a hash join of the events and
-- the rows given, linear in the page), one of every head. The promise is
-- events_seal's, for each chain at once: every listed event is an unsealed
-- op event of that vshard, each chain's head is the link the relay read,
-- and the vshard is leased to owner with that epoch; otherwise nothing is
-- written (OB409, OB403 naming the vshard, OB422 for malformed arrays). The
-- rows of chain i are ids[offs[i] + 1 .. offs[i] + lens[i]], where offs[i]
-- is the sum of lens before i, each chain's in id order as the relay read
-- them.
--
-- The relay (common/relay.c) uses it when a read has rows of two vshard
-- chains or more; a failed call makes the next read seal chain by chain
-- with events_seal, so a chain that cannot be sealed (a lease moving, a
-- head another sealer moved) never holds back the others.
-- Tests: check_event_relay's seal_vshards_at_once (every refusal of
-- seal_refuses_foreign_events across several chains, nothing written;
-- the links equal events_seal's for the same rows).

CREATE FUNCTION outbox.events_seal_vshards(owner text, vshards integer[], epochs bigint[],
	after_seqs bigint[], prevs_hex text[], lens integer[], ids bigint[], hashes_hex text[])
RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_nestloop = on
SET max_parallel_workers_per_gather = 0
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
	k integer := cardinality(vshards);
	offs integer[];
	grp integer[];
	n integer;
	bad record;
	sop bigint[];
	sv integer[];
BEGIN
	IF vshards IS NULL OR epochs IS NULL OR after_seqs IS NULL OR prevs_hex IS NULL
			OR lens IS NULL OR k NOT BETWEEN 1 AND 4096 OR cardinality(epochs) <> k
			OR cardinality(after_seqs) <> k OR cardinality(prevs_hex) <> k
			OR cardinality(lens) <> k
			OR EXISTS (SELECT 1 FROM unnest(vshards) v GROUP BY v
				HAVING v IS NULL OR count(*) > 1) THEN
		PERFORM outbox.invalid_input('vshards', NULL, 'must be distinct, and with epochs, '
			|| 'after_seqs, prevs and lens arrays of one length 1..4096');
	END IF;
	IF ids IS NULL OR hashes_hex IS NULL OR cardinality(ids) <> cardinality(hashes_hex)
			OR cardinality(ids) NOT BETWEEN 1 AND 10000
			OR EXISTS (SELECT 1 FROM unnest(lens) l WHERE l IS NULL OR l < 1)
			OR (SELECT sum(l) FROM unnest(lens) l) <> cardinality(ids) THEN
		PERFORM outbox.invalid_input('ids', NULL, 'and hashes must be arrays of equal '
			|| 'length 1..10000, split by lens (each at least 1)');
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(prevs_hex || hashes_hex) x
			WHERE x IS NULL OR length(x) <> 64 OR x ~ '[^0-9a-f]') THEN
		PERFORM outbox.invalid_input('hashes', NULL,
			'and prevs must be 64 lowercase hex characters each');
	END IF;
	PERFORM outbox.fence_all(events_seal_vshards.owner, vshards, epochs);

	INSERT INTO outbox.chain_heads AS x (chain, seq, hash)
	SELECT 'vshard:' || v, 0,
		'\x0000000000000000000000000000000000000000000000000000000000000000'::bytea
	FROM unnest(vshards) v ORDER BY 1
	ON CONFLICT (chain) DO NOTHING;
	PERFORM 1 FROM outbox.chain_heads x
	WHERE x.chain = ANY (ARRAY(SELECT 'vshard:' || v FROM unnest(vshards) v))
	ORDER BY x.chain FOR UPDATE;
	SELECT x.chain, x.seq, x.hash, u.s, u.p INTO bad
	FROM unnest(vshards, after_seqs, prevs_hex) u (v, s, p)
	JOIN outbox.chain_heads x ON x.chain = 'vshard:' || u.v
	WHERE x.seq <> u.s OR x.hash <> decode(u.p, 'hex')
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'chain %: its head is link % (%), not % (%)', bad.chain, bad.seq,
			encode(bad.hash, 'hex'), bad.s, bad.p
			USING ERRCODE = 'OB409', COLUMN = 'after_seq';
	END IF;

	-- Chain i's rows start after offs[i]; grp names each row's chain.
	offs := ARRAY(SELECT (sum(l) OVER (ORDER BY i) - l)::integer
		FROM unnest(lens) WITH ORDINALITY u (l, i) ORDER BY i);
	grp := ARRAY(SELECT u.i::integer FROM unnest(lens) WITH ORDINALITY u (l, i)
		CROSS JOIN LATERAL generate_series(1, u.l) ORDER BY u.i);
	-- The events and the rows given meet in a hash join: a nested loop
	-- (what the estimates for two arrays of unknown length suggest) rescans
	-- the rows given once per event, ~0.2 us per pair: 4 ms for 150 events,
	-- ~1 s for a page of 2 000. These settings last until the function
	-- returns (its SET clauses scope them).
	PERFORM set_config('enable_nestloop', 'off', true), set_config('enable_hashjoin', 'on', true);
	WITH y AS (
		SELECT x.id, x.g, decode(x.h, 'hex') AS h,
			after_seqs[x.g] + (x.ord - offs[x.g]) AS seq,
			CASE WHEN x.ord = offs[x.g] + 1 THEN decode(prevs_hex[x.g], 'hex')
				ELSE decode(hashes_hex[(x.ord - 1)::integer], 'hex') END AS prev
		FROM unnest(ids, hashes_hex, grp) WITH ORDINALITY x (id, h, g, ord)),
	s AS (
		UPDATE outbox.events e SET chain = 'vshard:' || vshards[y.g], chain_seq = y.seq,
			chain_prev = y.prev, chain_hash = y.h
		FROM y
		WHERE e.id = ANY (ids) AND e.id = y.id AND e.chain_seq IS NULL
			AND e.op_id IS NOT NULL
		RETURNING e.op_id, vshards[y.g] AS v)
	SELECT array_agg(s.op_id), array_agg(s.v) INTO sop, sv FROM s;
	PERFORM set_config('enable_nestloop', 'on', true), set_config('enable_hashjoin', 'off', true);
	SELECT count(*) INTO n FROM unnest(sop, sv) u (op, v)
	JOIN outbox.ops o ON o.id = u.op AND o.vshard = u.v;
	IF n <> cardinality(ids) THEN
		RAISE EXCEPTION 'chains of vshards %: % of % events are not unsealed events of them',
			array_to_string(vshards, ','), cardinality(ids) - n, cardinality(ids)
			USING ERRCODE = 'OB409', COLUMN = 'ids';
	END IF;
	UPDATE outbox.chain_heads x SET seq = after_seqs[u.i] + lens[u.i],
		hash = decode(hashes_hex[offs[u.i] + lens[u.i]], 'hex'), sealed_at = now()
	FROM unnest(vshards) WITH ORDINALITY u (v, i)
	WHERE x.chain = 'vshard:' || u.v;
END
$$;
