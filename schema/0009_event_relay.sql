-- 0009_event_relay.sql - outbox.events leaves PostgreSQL: sealed into hash
-- chains by their one writer, relayed to Kafka, marked published.
--
-- common/events.h defines the chain and the CloudEvent; common/relay.h the
-- relay. In short:
--   * a chain has exactly one sealer: "vshard:<v>" (the op events of vshard
--     v) is sealed by the worker holding v's lease (fenced), an oracle's
--     fee events ("oracle:<instance>") by that oracle; so sealing never
--     contends, and an application's enqueue (which writes an ENQUEUED
--     event) never touches a chain;
--   * the sealer reads unsealed rows in id order, computes each link in C
--     (hash = SHA-256(prev hash || canonical event)) and writes the links
--     back here, checked against the chain's head (chain_heads), which only
--     moves forward;
--   * a sealed row is produced to Kafka and marked published from the
--     delivery report; a sealed row not yet published is produced again
--     after a crash or an outage (at least once).

ALTER TABLE outbox.events ALTER COLUMN op_id DROP NOT NULL,
	ALTER COLUMN seq DROP NOT NULL;
ALTER TABLE outbox.events ADD COLUMN chain text CHECK (length(chain) BETWEEN 1 AND 64
		AND chain ~ '^(vshard:[0-9]{1,4}|oracle:[A-Za-z0-9_-]{1,32})$'),
	ADD COLUMN chain_seq bigint CHECK (chain_seq >= 1),
	ADD COLUMN chain_prev bytea CHECK (octet_length(chain_prev) = 32),
	ADD COLUMN chain_hash bytea CHECK (octet_length(chain_hash) = 32),
	-- an op's event has its per-op sequence; an event of no op names its chain
	ADD CONSTRAINT events_op_or_chain CHECK ((op_id IS NOT NULL AND seq IS NOT NULL)
		OR (op_id IS NULL AND seq IS NULL AND chain IS NOT NULL)),
	ADD CONSTRAINT events_sealed CHECK ((chain_seq IS NULL) = (chain_hash IS NULL)
		AND (chain_seq IS NULL) = (chain_prev IS NULL)
		AND (chain_seq IS NULL OR chain IS NOT NULL));

-- One link per (chain, sequence); also the verifier's ordered read.
CREATE UNIQUE INDEX events_chain_link ON outbox.events (chain, chain_seq)
	WHERE chain_seq IS NOT NULL;
-- The sealers' work list: small, because sealed rows leave it.
CREATE INDEX events_unsealed_idx ON outbox.events (id) WHERE chain_seq IS NULL;

-- The newest link of each chain. A hash chain alone cannot show that its
-- newest links were cut off: the head can (outboxctl audit --verify).
CREATE TABLE outbox.chain_heads (
	chain text PRIMARY KEY CHECK (length(chain) BETWEEN 1 AND 64),
	seq bigint NOT NULL CHECK (seq >= 0),
	hash bytea NOT NULL CHECK (octet_length(hash) = 32),
	sealed_at timestamptz NOT NULL DEFAULT now()
);

-- The deployment's identity: the CloudEvents source of its events, the same
-- from every process and host, so consumers dedupe by (source, id).
ALTER TABLE outbox.settings ADD COLUMN deployment uuid NOT NULL DEFAULT gen_random_uuid();

-- ---------------------------------------------------------------------

-- The rows a sealer of vshards reads: unsealed op events in id order, with
-- what the CloudEvent needs of their op and each chain's current head.
CREATE FUNCTION outbox.events_unsealed(vshards integer[], lim integer)
RETURNS TABLE (id bigint, op_id bigint, seq integer, type text, from_status text,
	to_status text, at_us bigint, body text, vshard integer, idempotency_key text, kind text,
	priority text, head_seq bigint, head_hash bytea)
LANGUAGE sql STABLE AS $$
	SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status,
		(extract(epoch FROM e.at) * 1000000)::bigint, e.body::text, o.vshard,
		o.idempotency_key, o.kind, outbox.priority_name(o.priority),
		coalesce(h.seq, 0), coalesce(h.hash, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
	FROM outbox.events e
	JOIN outbox.ops o ON o.id = e.op_id
	LEFT JOIN outbox.chain_heads h ON h.chain = 'vshard:' || o.vshard
	WHERE e.chain_seq IS NULL AND o.vshard = ANY (vshards)
	ORDER BY e.id
	LIMIT lim
$$;

-- The same for a chain of events of no op (an oracle's).
CREATE FUNCTION outbox.events_unsealed_chain(chain text, lim integer)
RETURNS TABLE (id bigint, op_id bigint, seq integer, type text, from_status text,
	to_status text, at_us bigint, body text, vshard integer, idempotency_key text, kind text,
	priority text, head_seq bigint, head_hash bytea)
LANGUAGE sql STABLE AS $$
	SELECT e.id, NULL::bigint, NULL::integer, e.type, e.from_status, e.to_status,
		(extract(epoch FROM e.at) * 1000000)::bigint, e.body::text, NULL::integer,
		NULL::text, NULL::text, NULL::text,
		coalesce(h.seq, 0), coalesce(h.hash, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
	FROM outbox.events e
	LEFT JOIN outbox.chain_heads h ON h.chain = events_unsealed_chain.chain
	WHERE e.chain_seq IS NULL AND e.chain = events_unsealed_chain.chain
	ORDER BY e.id
	LIMIT lim
$$;

-- Write the links computed by the sealer: ids[i] becomes link after_seq + i
-- of chain, with hash hashes_hex[i] and prev hashes_hex[i - 1] (prev_hex for
-- the first); hashes in lowercase hex.
-- Refused (OB409) unless the chain's head is exactly (after_seq, prev) and
-- every id is an unsealed event of that chain; a vshard chain is fenced by
-- the lease (owner, vshard, epoch), a chain of no op needs no lease (it has
-- one writer by name: oracle:<instance>).
CREATE FUNCTION outbox.events_seal(owner text, vshard integer, epoch bigint, chain text,
	after_seq bigint, prev_hex text, ids bigint[], hashes_hex text[])
RETURNS void LANGUAGE plpgsql AS $$
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
	UPDATE outbox.events e SET chain = events_seal.chain, chain_seq = after_seq + u.ord,
		chain_prev = CASE WHEN u.ord = 1 THEN prev ELSE hashes[u.ord - 1] END,
		chain_hash = u.h
	FROM unnest(ids, hashes) WITH ORDINALITY u (id, h, ord)
	WHERE e.id = u.id AND e.chain_seq IS NULL
		AND (events_seal.vshard IS NULL AND e.chain = events_seal.chain
			OR EXISTS (SELECT 1 FROM outbox.ops o
				WHERE o.id = e.op_id AND o.vshard = events_seal.vshard));
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n <> cardinality(ids) THEN
		RAISE EXCEPTION 'chain %: % of % events are not unsealed events of it', events_seal.chain,
			cardinality(ids) - n, cardinality(ids) USING ERRCODE = 'OB409', COLUMN = 'ids';
	END IF;
	UPDATE outbox.chain_heads x SET seq = after_seq + n, hash = hashes[n], sealed_at = now()
	WHERE x.chain = events_seal.chain;
END
$$;

-- Sealed events of these chains not published yet, from after_id on, in id
-- order: what a relay produces (again) after a crash or an outage.
CREATE FUNCTION outbox.events_unpublished(chains text[], after_id bigint, lim integer)
RETURNS TABLE (id bigint, op_id bigint, seq integer, type text, from_status text,
	to_status text, at_us bigint, body text, idempotency_key text, kind text, priority text,
	chain text, chain_seq bigint, chain_prev bytea, chain_hash bytea)
LANGUAGE sql STABLE AS $$
	SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status,
		(extract(epoch FROM e.at) * 1000000)::bigint, e.body::text, o.idempotency_key, o.kind,
		outbox.priority_name(o.priority), e.chain, e.chain_seq, e.chain_prev, e.chain_hash
	FROM outbox.events e
	LEFT JOIN outbox.ops o ON o.id = e.op_id
	WHERE e.published_at IS NULL AND e.chain_seq IS NOT NULL AND e.chain = ANY (chains)
		AND e.id > after_id
	ORDER BY e.id
	LIMIT lim
$$;

-- Delivery reports: these events are on the topic.
CREATE FUNCTION outbox.events_published(ids bigint[]) RETURNS void
LANGUAGE sql AS $$
	UPDATE outbox.events e SET published_at = now()
	WHERE e.id = ANY (ids) AND e.published_at IS NULL
$$;

-- An oracle's fee snapshot change, as an event of no op on its chain.
CREATE FUNCTION outbox.fee_event(instance text, body jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF instance IS NULL OR instance !~ '^[A-Za-z0-9_-]{1,32}$' THEN
		PERFORM outbox.invalid_input('instance', instance, 'is not [A-Za-z0-9_-]{1,32}');
	END IF;
	IF jsonb_typeof(body) IS DISTINCT FROM 'object' OR length(body::text) > 4000 THEN
		PERFORM outbox.invalid_input('body', left(body::text, 100),
			'is not a JSON object of at most 4000 characters');
	END IF;
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body, chain)
	VALUES (NULL, NULL, 'FEE_SNAPSHOT', NULL, NULL, body, 'oracle:' || instance);
END
$$;
