-- 0028_published_cursor.sql - what is on Kafka is one cursor per chain,
-- not a mark on every event row.
--
-- Why. The relay marked every delivered event with published_at (0009):
-- an UPDATE of each event row after the seal's, never HOT (the mark moves
-- the row out of events_unpublished_idx's predicate), with its check, its
-- index entries and its WAL: three events per op, each written three times.
-- bench_dispatch, same code with and without the relay: 1 372 against
-- 1 900 confirmed ops/s, 0.82 against 0.60 ms of PostgreSQL CPU per op.
--
-- What. chain_heads.published_seq: every link of the chain up to it is on
-- the topic; published_at: when it last moved. A relay produces a chain's
-- links in chain order and moves the cursor over the prefix Kafka has
-- acknowledged (common/publish_window.h: reports come back out of order
-- across partitions), many chains per statement:
--   * events_published_upto(chains, from_seqs, to_seqs): chain i's links
--     from_seqs[i] .. to_seqs[i] are on the topic. The cursor moves to
--     to_seqs[i] only if that range starts at or before the link after it
--     (no gap) and ends at or before the chain's head; it never moves back.
--     A gap made only of links no longer in outbox.events is no gap: such a
--     link was archived, and archive_terminal moves only published links
--     (before this migration, links marked published_at one by one: after
--     an upgrade, an unmarked link can sit below archived ones). Answers the
--     chains it refused (a gap, a range past the head, no such chain),
--     which the relay produces again from their cursor. The heads are
--     locked in chain order first, the order events_seal_vshards locks
--     them in, so a sealer and a marker of the same chains never deadlock.
--   * events_unpublished(chains, after_chain, after_seq, lim): the sealed
--     links past each chain's cursor, in (chain, chain_seq) order, paged by
--     the last (chain, chain_seq) read: what a relay produces again after a
--     takeover, a failed delivery or a lost connection. Chain order keeps
--     each op's events in order (an op's events are one chain's links, in
--     the order they were written), and it is the order the cursor needs.
--   * events_not_published: the view of every event Kafka has not
--     acknowledged (unsealed, or past its chain's cursor).
-- The cursor is not fenced by a lease: any relay that saw a link delivered
-- may say so, and the no-gap rule keeps the cursor behind every link not
-- delivered whoever moves it.
--
-- Upgrade. Each chain's cursor starts before its first sealed row that was
-- not marked published (or at its head when there is none); a marked row
-- after that is produced once more (at least once). events.published_at
-- stays for the rows marked before this migration and is written no more.
-- archive_terminal moves an op once every event of it is covered by its
-- chain's cursor; the archived row's published_at is the row's own mark or,
-- for a newer row, its chain's published_at when it was archived.

ALTER TABLE outbox.chain_heads ADD COLUMN published_seq bigint NOT NULL DEFAULT 0,
	ADD COLUMN published_at timestamptz,
	ADD CONSTRAINT chain_heads_published_seq CHECK (published_seq BETWEEN 0 AND seq);

UPDATE outbox.chain_heads h SET
	published_seq = coalesce((SELECT min(e.chain_seq) - 1 FROM outbox.events e
		WHERE e.published_at IS NULL AND e.chain_seq IS NOT NULL AND e.chain = h.chain),
		h.seq),
	published_at = now();

DROP FUNCTION outbox.events_published(bigint[]);
DROP FUNCTION outbox.events_unpublished(text[], bigint, integer);
DROP INDEX outbox.events_unpublished_idx;

CREATE VIEW outbox.events_not_published AS
	SELECT e.* FROM outbox.events e
	LEFT JOIN outbox.chain_heads h ON h.chain = e.chain
	WHERE e.chain_seq IS NULL OR h.chain IS NULL OR e.chain_seq > h.published_seq;

-- chain i's links from_seqs[i] .. to_seqs[i] are on the topic (the header);
-- returns the chains whose cursor could not move.
CREATE FUNCTION outbox.events_published_upto(chains text[], from_seqs bigint[],
	to_seqs bigint[]) RETURNS SETOF text
LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
	IF chains IS NULL OR from_seqs IS NULL OR to_seqs IS NULL
			OR cardinality(chains) NOT BETWEEN 1 AND 8192
			OR cardinality(from_seqs) <> cardinality(chains)
			OR cardinality(to_seqs) <> cardinality(chains)
			OR EXISTS (SELECT 1 FROM unnest(chains, from_seqs, to_seqs) u (c, f, t)
				WHERE c IS NULL OR f IS NULL OR t IS NULL OR f < 1 OR t < f)
			OR EXISTS (SELECT 1 FROM unnest(chains) c GROUP BY c HAVING count(*) > 1) THEN
		PERFORM outbox.invalid_input('chains', NULL, 'must be distinct, with from_seqs '
			|| 'and to_seqs of one length 1..8192 and 1 <= from <= to');
	END IF;
	PERFORM 1 FROM outbox.chain_heads h WHERE h.chain = ANY (chains)
	ORDER BY h.chain FOR NO KEY UPDATE;
	-- The heads are locked: the refusals and the moves read the same rows.
	RETURN QUERY
	WITH u AS (SELECT * FROM unnest(chains, from_seqs, to_seqs) u (c, f, t)),
	v AS (
		SELECT u.c, u.t, h.chain IS NOT NULL AND u.t <= h.seq
			AND (h.published_seq >= u.f - 1
				OR NOT EXISTS (SELECT 1 FROM outbox.events e
					WHERE e.chain = u.c AND e.chain_seq > h.published_seq
						AND e.chain_seq < u.f)) AS ok
		FROM u LEFT JOIN outbox.chain_heads h ON h.chain = u.c),
	m AS (
		UPDATE outbox.chain_heads h SET published_seq = v.t, published_at = now()
		FROM v
		WHERE h.chain = ANY (chains) AND h.chain = v.c AND v.ok AND h.published_seq < v.t
		RETURNING h.chain)
	SELECT v.c FROM v WHERE NOT v.ok;
END
$$;

-- The sealed links of these chains past their cursors, after (after_chain,
-- after_seq) in (chain, chain_seq) order, at most lim (the header). One
-- index range scan per chain, in chain order, until lim rows are found: a
-- page costs what it returns, however many chains wait.
CREATE FUNCTION outbox.events_unpublished(chains text[], after_chain text, after_seq bigint,
	lim integer)
RETURNS TABLE (id bigint, op_id bigint, seq integer, type text, from_status text,
	to_status text, at_us bigint, body text, idempotency_key text, kind text, priority text,
	chain text, chain_seq bigint, chain_prev bytea, chain_hash bytea)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET max_parallel_workers_per_gather = 0
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
	h record;
	left_ integer := lim;
	n integer;
BEGIN
	IF chains IS NULL OR after_chain IS NULL OR after_seq IS NULL OR lim IS NULL
			OR lim NOT BETWEEN 1 AND 10000 THEN
		PERFORM outbox.invalid_input('lim', lim::text, 'is not in 1..10000, with chains, '
			|| 'after_chain and after_seq given');
	END IF;
	FOR h IN SELECT x.chain, x.published_seq FROM outbox.chain_heads x
			WHERE x.chain = ANY (chains) AND x.chain >= after_chain
				AND x.published_seq < x.seq
			ORDER BY x.chain LOOP
		RETURN QUERY
		SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status,
			(extract(epoch FROM e.at) * 1000000)::bigint, e.body::text, o.idempotency_key,
			o.kind, outbox.priority_name(o.priority), e.chain, e.chain_seq, e.chain_prev,
			e.chain_hash
		FROM outbox.events e
		LEFT JOIN outbox.ops o ON o.id = e.op_id
		WHERE e.chain = h.chain AND e.chain_seq IS NOT NULL
			AND e.chain_seq > greatest(h.published_seq,
				CASE WHEN h.chain = after_chain THEN after_seq ELSE 0 END)
		ORDER BY e.chain_seq
		LIMIT left_;
		GET DIAGNOSTICS n = ROW_COUNT;
		left_ := left_ - n;
		EXIT WHEN left_ <= 0;
	END LOOP;
END
$$;

-- archive_terminal of 0013: an op's events are published when its chain's
-- cursor covers them (the header).
CREATE OR REPLACE FUNCTION outbox.archive_terminal(older_than interval, batch integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	n integer;
BEGIN
	IF older_than IS NULL OR older_than < interval '1 hour' THEN
		PERFORM outbox.invalid_input('older_than', older_than::text,
			'is not at least 1 hour (an op must be past any envelope''s validity)');
	END IF;
	IF batch IS NULL OR batch NOT BETWEEN 1 AND 10000 THEN
		PERFORM outbox.invalid_input('batch', batch::text, 'is not in 1..10000');
	END IF;
	-- First, before any op row: see 0013's header (REPEATABLE READ enqueues).
	UPDATE outbox.archive_state SET runs = runs + 1, last_run_at = now();

	WITH v AS (
		SELECT o.* FROM outbox.ops o
		WHERE o.status IN ('CONFIRMED', 'FAILED', 'CANCELLED')
			AND o.updated_at < now() - older_than
			AND NOT EXISTS (SELECT 1 FROM outbox.events e
				LEFT JOIN outbox.chain_heads h ON h.chain = e.chain
				WHERE e.op_id = o.id AND (e.chain_seq IS NULL OR h.chain IS NULL
					OR e.chain_seq > h.published_seq))
		ORDER BY o.updated_at
		LIMIT batch
		FOR UPDATE OF o SKIP LOCKED),
	a AS (
		INSERT INTO outbox.ops_archive (id, idempotency_key, kind, priority, status, signer,
			payload, updated_at, detail)
		SELECT v.id, v.idempotency_key, v.kind, v.priority, v.status, v.signer, v.payload,
			v.updated_at, outbox.op_detail(v::outbox.ops)
		FROM v
		RETURNING id),
	ea AS (
		INSERT INTO outbox.events_archive (id, op_id, seq, type, from_status, to_status, at,
			body, published_at, chain, chain_seq, chain_prev, chain_hash)
		SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status, e.at, e.body,
			coalesce(e.published_at, h.published_at, now()), e.chain, e.chain_seq,
			e.chain_prev, e.chain_hash
		FROM outbox.events e JOIN outbox.chain_heads h ON h.chain = e.chain
		WHERE e.op_id IN (SELECT v.id FROM v)),
	ed AS (
		DELETE FROM outbox.events e WHERE e.op_id IN (SELECT v.id FROM v)),
	ad AS (
		DELETE FROM outbox.attempts x WHERE x.op_id IN (SELECT v.id FROM v))
	DELETE FROM outbox.ops o WHERE o.id IN (SELECT a.id FROM a);
	GET DIAGNOSTICS n = ROW_COUNT;
	UPDATE outbox.archive_state SET archived = archived + n;
	RETURN n;
END
$$;
