-- 0013_archive.sql - terminal ops leave outbox.ops, so the table and its
-- indexes stay the size of the recent past under steady churn.
--
-- outbox.archive_terminal(older_than, batch) moves up to batch ops that are
-- CONFIRMED, FAILED or CANCELLED, last changed more than older_than ago
-- (at least one hour: far past any envelope's validity, 390 s by default,
-- so nothing about such an op can still happen on chain), and whose events
-- are all on Kafka (published_at set), out of outbox.ops:
--   * the op, its attempts and its events as the admin API shows them
--     (op_detail) into outbox.ops_archive, one row per op, with the columns
--     the enqueue contract compares (key, kind, signer, payload);
--   * its events rows, unchanged, into outbox.events_archive, so the hash
--     chains stay whole: outbox.events_all is both, and `outboxctl audit
--     --verify` rebuilds the chains from it.
-- HELD, PENDING and SUBMITTED ops are never moved, nor an op with an event
-- Kafka has not acknowledged (without OUTBOX_KAFKA_BROKERS nothing is
-- published, so nothing is archived: the table is then the only record).
-- The oracle calls it every minute with OUTBOX_ARCHIVE_AFTER (oracle/).
--
-- Idempotency outlives the op: an enqueue whose key belongs to an archived
-- op answers that op (created = false; OB409 when the content differs),
-- never a second one. The race with an archive run is closed like this:
--   * READ COMMITTED (the usual application transaction): enqueue inserts,
--     then, in a later statement (a fresh snapshot), looks the key up in
--     the archive. An archive run that deleted the op row first made the
--     insert wait for it, so once the insert succeeds the run has committed
--     and the lookup sees the archived op: the new row is deleted again and
--     the archived op answered.
--   * REPEATABLE READ / SERIALIZABLE: the snapshot may predate the run, so
--     enqueue first locks outbox.archive_state FOR SHARE, which every run
--     updates before it moves anything: a run committed after the snapshot
--     makes that lock fail with 40001 (retry the transaction), and a run
--     that starts later waits for the enqueue's transaction.

CREATE TABLE outbox.archive_state (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	runs bigint NOT NULL DEFAULT 0,
	archived bigint NOT NULL DEFAULT 0,
	last_run_at timestamptz
);
INSERT INTO outbox.archive_state DEFAULT VALUES;

-- One row per archived op; detail is what GET /api/admin/outbox/:id
-- answered for it when it was archived.
CREATE TABLE outbox.ops_archive (
	id bigint PRIMARY KEY,
	idempotency_key text NOT NULL UNIQUE,
	kind text NOT NULL,
	priority smallint NOT NULL,
	status text NOT NULL CHECK (status IN ('CONFIRMED', 'FAILED', 'CANCELLED')),
	signer text NOT NULL,
	payload jsonb NOT NULL,
	updated_at timestamptz NOT NULL,
	archived_at timestamptz NOT NULL DEFAULT now(),
	detail jsonb NOT NULL
);

-- The events of archived ops, as they were (sealed and published).
CREATE TABLE outbox.events_archive (
	id bigint PRIMARY KEY,
	op_id bigint NOT NULL,
	seq integer NOT NULL,
	type text NOT NULL,
	from_status text,
	to_status text,
	at timestamptz NOT NULL,
	body jsonb NOT NULL,
	published_at timestamptz NOT NULL,
	chain text NOT NULL,
	chain_seq bigint NOT NULL,
	chain_prev bytea NOT NULL,
	chain_hash bytea NOT NULL,
	UNIQUE (chain, chain_seq)
);

CREATE VIEW outbox.events_all AS
	SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status, e.at, e.body,
		e.published_at, e.chain, e.chain_seq, e.chain_prev, e.chain_hash
	FROM outbox.events e
	UNION ALL
	SELECT a.id, a.op_id, a.seq, a.type, a.from_status, a.to_status, a.at, a.body,
		a.published_at, a.chain, a.chain_seq, a.chain_prev, a.chain_hash
	FROM outbox.events_archive a;

-- The archiver's work list: terminal ops by age. Only terminal rows are in
-- it, and the archiver removes them, so it stays small.
CREATE INDEX ops_terminal_idx ON outbox.ops (updated_at)
	WHERE status IN ('CONFIRMED', 'FAILED', 'CANCELLED');

-- An op, its attempts and its events as the admin API shows them.
CREATE FUNCTION outbox.op_detail(o outbox.ops) RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object('op', outbox.api_op_json(o),
		'attempts', coalesce((SELECT jsonb_agg(jsonb_build_object('attemptNo', a.attempt_no,
			'bumpNo', a.bump_no, 'txHash', a.tx_hash, 'innerTxHash', a.inner_tx_hash,
			'sourceAccount', a.source_account, 'sourceSequence', a.source_sequence,
			'maxTime', a.max_time, 'maxLedger', a.max_ledger, 'fee', a.fee,
			'submittedAt', a.submitted_at, 'outcome', a.outcome,
			'resultCode', a.result_code, 'decidedAt', a.decided_at,
			'landedLedger', a.landed_ledger, 'proof', a.proof)
			ORDER BY a.attempt_no, a.bump_no)
			FROM outbox.attempts a WHERE a.op_id = o.id), '[]'),
		'events', coalesce((SELECT jsonb_agg(jsonb_build_object('seq', e.seq, 'type', e.type,
			'from', e.from_status, 'to', e.to_status, 'at', e.at, 'body', e.body)
			ORDER BY e.seq)
			FROM outbox.events e WHERE e.op_id = o.id), '[]'))
$$;

-- archive_terminal(older_than, batch): moves at most batch ops (1..10000)
-- as the header says; returns how many. Concurrent runs (two hosts) take
-- turns on archive_state and skip each other's rows.
CREATE FUNCTION outbox.archive_terminal(older_than interval, batch integer) RETURNS integer
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
	-- First, before any op row: see the header (REPEATABLE READ enqueues).
	UPDATE outbox.archive_state SET runs = runs + 1, last_run_at = now();

	WITH v AS (
		SELECT o.* FROM outbox.ops o
		WHERE o.status IN ('CONFIRMED', 'FAILED', 'CANCELLED')
			AND o.updated_at < now() - older_than
			AND NOT EXISTS (SELECT 1 FROM outbox.events e
				WHERE e.op_id = o.id AND e.published_at IS NULL)
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
			e.published_at, e.chain, e.chain_seq, e.chain_prev, e.chain_hash
		FROM outbox.events e WHERE e.op_id IN (SELECT v.id FROM v)),
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

-- OB409 when an intent differs from what its key was enqueued with.
CREATE FUNCTION outbox.enqueue_check_same(key text, old_kind text, old_signer text,
	old_payload jsonb, kind text, signer text, payload jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	diffs text[] := '{}';
BEGIN
	IF old_kind <> kind THEN
		diffs := diffs || 'kind'::text;
	END IF;
	IF old_signer <> signer THEN
		diffs := diffs || 'signer'::text;
	END IF;
	IF old_payload <> payload THEN
		diffs := diffs || ARRAY(
			SELECT 'payload.' || f FROM unnest(outbox.payload_fields(kind)) f
			WHERE (old_payload -> f) IS DISTINCT FROM (payload -> f));
	END IF;
	IF cardinality(diffs) > 0 THEN
		RAISE EXCEPTION 'idempotency_key: % was already enqueued with a different %; a reused key with other content is a caller bug, never a second payment',
			outbox.quote_value(key), array_to_string(diffs, ', ')
			USING ERRCODE = 'OB409', COLUMN = diffs[1];
	END IF;
END
$$;

-- The enqueue of 0012, answering archived ops (see the header).
CREATE OR REPLACE FUNCTION outbox.enqueue(kind text, user_id text, business_record_id text,
	signer text, payload jsonb, priority text DEFAULT NULL)
RETURNS outbox.enqueue_result
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	rank constant smallint := CASE WHEN enqueue.priority IS NOT NULL
		THEN outbox.priority_rank(enqueue.priority)
		WHEN enqueue.kind = 'WITHDRAW' THEN 0 WHEN enqueue.kind = 'REBALANCE' THEN 2
		WHEN enqueue.kind IN ('DEPOSIT', 'REFERRAL_REWARD') THEN 1 END;
	brid constant text := CASE WHEN enqueue.kind = 'REFERRAL_REWARD'
		THEN (enqueue.payload ->> 'conversion_id') || ':' || (enqueue.payload ->> 'leg')
		ELSE enqueue.business_record_id END;
	key constant text := enqueue.kind || ':' || enqueue.user_id || ':' || brid;
	new_id bigint;
	old outbox.ops%ROWTYPE;
	arc outbox.ops_archive%ROWTYPE;
BEGIN
	IF NOT outbox.intent_valid(enqueue.kind, enqueue.user_id, enqueue.business_record_id,
			brid, enqueue.signer, enqueue.payload, rank) THEN
		PERFORM outbox.enqueue_refuse(enqueue.kind, enqueue.user_id,
			enqueue.business_record_id, enqueue.signer, enqueue.payload, enqueue.priority);
		RAISE EXCEPTION 'outbox.enqueue: the intent failed the fast check but passed the full one (kind %)',
			outbox.quote_value(enqueue.kind) USING ERRCODE = 'XX000';
	END IF;
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		PERFORM 1 FROM outbox.archive_state FOR SHARE;
	END IF;

	WITH o AS (
		INSERT INTO outbox.ops AS o (idempotency_key, kind, priority, user_id,
			business_record_id, signer, vshard, payload)
		VALUES (key, enqueue.kind, rank, enqueue.user_id, brid, enqueue.signer,
			outbox.vshard_of(enqueue.signer), enqueue.payload)
		ON CONFLICT (idempotency_key) DO NOTHING
		RETURNING o.id, o.vshard),
	e AS (
		INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
		SELECT o.id, 1, 'ENQUEUED', NULL, 'PENDING',
			jsonb_build_object('idempotency_key', key, 'kind', enqueue.kind,
				'priority', outbox.priority_name(rank), 'vshard', o.vshard)
		FROM o)
	SELECT o.id INTO new_id FROM o;

	IF new_id IS NOT NULL THEN
		-- A later statement: its snapshot sees an archive run the insert waited for.
		SELECT * INTO arc FROM outbox.ops_archive a WHERE a.idempotency_key = key;
		IF NOT FOUND THEN
			RETURN (new_id, key, 'PENDING', outbox.priority_name(rank),
				true)::outbox.enqueue_result;
		END IF;
		DELETE FROM outbox.events x WHERE x.op_id = new_id;
		DELETE FROM outbox.ops x WHERE x.id = new_id;
	ELSE
		SELECT * INTO old FROM outbox.ops o WHERE o.idempotency_key = key;
		IF FOUND THEN
			PERFORM outbox.enqueue_check_same(key, old.kind, old.signer, old.payload,
				enqueue.kind, enqueue.signer, enqueue.payload);
			RETURN (old.id, old.idempotency_key, old.status,
				outbox.priority_name(old.priority), false)::outbox.enqueue_result;
		END IF;
		SELECT * INTO arc FROM outbox.ops_archive a WHERE a.idempotency_key = key;
		IF NOT FOUND THEN
			-- Only under REPEATABLE READ or SERIALIZABLE can the conflicting
			-- row be invisible; the caller must retry the transaction.
			RAISE EXCEPTION 'idempotency_key: %: enqueued by a concurrent transaction; retry',
				outbox.quote_value(key) USING ERRCODE = '40001';
		END IF;
	END IF;
	PERFORM outbox.enqueue_check_same(key, arc.kind, arc.signer, arc.payload,
		enqueue.kind, enqueue.signer, enqueue.payload);
	RETURN (arc.id, arc.idempotency_key, arc.status, outbox.priority_name(arc.priority),
		false)::outbox.enqueue_result;
END
$$;

-- GET /api/admin/outbox/:id (and outboxctl ops show): an archived op is
-- answered from the archive, marked "archived": true with its archivedAt.
CREATE OR REPLACE FUNCTION outbox.api_op(key_id bigint, actor text, request jsonb, op_id bigint)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	o outbox.ops;
BEGIN
	SELECT * INTO o FROM outbox.ops x WHERE x.id = api_op.op_id;
	IF FOUND THEN
		http := 200;
		body := outbox.op_detail(o);
	ELSE
		SELECT 200, a.detail || jsonb_build_object('archived', true,
			'archivedAt', a.archived_at)
		INTO http, body FROM outbox.ops_archive a WHERE a.id = api_op.op_id;
		IF NOT FOUND THEN
			http := 404;
			body := outbox.api_error('not_found', format('op %s does not exist', op_id));
		END IF;
	END IF;
	PERFORM outbox.api_audit(key_id, actor, 'api.get', op_id::text, request,
		jsonb_build_object('status', http));
	RETURN NEXT;
END
$$;
