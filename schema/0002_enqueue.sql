-- 0002_enqueue.sql - outbox.enqueue(), the contract by which an application
-- records an intent inside its own transaction, and the vshard function.
--
--	SELECT * FROM outbox.enqueue(kind, user_id, business_record_id, signer,
--	                             payload jsonb, priority DEFAULT NULL);
--	-> one row (id, idempotency_key, status, priority, created)
--
-- Errors (all abort the caller's transaction, as any SQL error does):
--   SQLSTATE OB422  invalid input. COLUMN names the field (kind, user_id,
--                   business_record_id, signer, priority, payload,
--                   payload.<name>); the message is
--                   "<field>: '<value>' <what is wrong>" with the value cut
--                   at 80 characters.
--   SQLSTATE OB409  the idempotency key exists with another kind, signer or
--                   payload; COLUMN names the first field that differs and
--                   the message lists them all. Nothing is written.
--
-- Validation lives here, in the database, so every client language gets the
-- same rules; the C client (common/enqueue.c) only maps the SQLSTATEs.

-- The vshard of a signer: the first 4 bytes of SHA-256 of its strkey's
-- ASCII text, read as a big-endian unsigned 32-bit integer, modulo the
-- deployment's vshard count. common/vshard.c computes the same in C.
CREATE FUNCTION outbox.vshard_of(signer text, vshards integer) RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	-- One expression, not STRICT, and STABLE like convert_to(): only so
	-- does the planner inline it (an uninlined call costs ~20 us).
	SELECT ((('x' || left(encode(sha256(convert_to(signer, 'UTF8')), 'hex'), 8))::bit(32)::bigint
		% vshards))::integer
$$;

-- With the deployment's count. PL/pgSQL so its query plan is cached per
-- session (a SQL function with a FROM clause is not inlined and would be
-- planned again on every call).
CREATE FUNCTION outbox.vshard_of(signer text) RETURNS integer
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
	n integer;
BEGIN
	SELECT s.vshards INTO n FROM outbox.settings s;
	RETURN outbox.vshard_of(signer, n);
END
$$;

-- Raise the OB422 invalid-input error for field.
CREATE FUNCTION outbox.invalid_input(field text, value text, problem text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF value IS NULL THEN
		RAISE EXCEPTION '%: %', field, problem USING ERRCODE = 'OB422', COLUMN = field;
	END IF;
	RAISE EXCEPTION '%: % %', field, outbox.quote_value(value), problem
		USING ERRCODE = 'OB422', COLUMN = field;
END
$$;

-- The payload fields of each kind; every one is required and a JSON string.
CREATE FUNCTION outbox.payload_fields(kind text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	-- ARRAY[...] rather than '{...}'::text[], whose array_in is only
	-- STABLE and would keep this IMMUTABLE function from being inlined.
	SELECT CASE kind
		WHEN 'DEPOSIT' THEN ARRAY['account', 'amount']
		WHEN 'WITHDRAW' THEN ARRAY['account', 'amount']
		WHEN 'REBALANCE' THEN ARRAY['amount']
		WHEN 'REFERRAL_REWARD' THEN ARRAY['account', 'amount', 'conversion_id', 'leg']
	END
$$;

-- Raise OB422 for the first thing wrong with payload (kind already valid).
-- Order: shape, unknown fields (sorted), missing or non-string fields, values.
CREATE FUNCTION outbox.check_payload(kind text, payload jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	fields constant text[] := outbox.payload_fields(kind);
	needs constant text := 'a ' || kind || ' payload has ' || array_to_string(fields, ', ');
	k text;
	v text;
	p text;
BEGIN
	IF payload IS NULL THEN
		PERFORM outbox.invalid_input('payload', NULL, 'is missing (' || needs || ')');
	END IF;
	IF jsonb_typeof(payload) <> 'object' THEN
		PERFORM outbox.invalid_input('payload', payload::text, 'is not a JSON object');
	END IF;
	FOR k IN SELECT jsonb_object_keys(payload) ORDER BY 1 LOOP
		IF NOT k = ANY (fields) THEN
			PERFORM outbox.invalid_input(
				'payload.' || regexp_replace(left(k, 40), '[^[:alnum:]_-]', '?', 'g'),
				(payload -> k)::text, 'is not a field (' || needs || ')');
		END IF;
	END LOOP;
	FOREACH k IN ARRAY fields LOOP
		IF NOT payload ? k THEN
			PERFORM outbox.invalid_input('payload.' || k, NULL, 'is missing (' || needs || ')');
		END IF;
		IF jsonb_typeof(payload -> k) <> 'string' THEN
			PERFORM outbox.invalid_input('payload.' || k, (payload -> k)::text,
				'is not a JSON string');
		END IF;
		v := payload ->> k;
		p := CASE k
			WHEN 'account' THEN outbox.account_strkey_problem(v)
			WHEN 'amount' THEN outbox.amount_problem(v)
			WHEN 'conversion_id' THEN outbox.ident_problem(v, false)
			WHEN 'leg' THEN outbox.ident_problem(v, true)
		END;
		IF p IS NOT NULL THEN
			PERFORM outbox.invalid_input('payload.' || k, v, p);
		END IF;
	END LOOP;
END
$$;

-- The result row. A named type, because the input parameter "priority"
-- and the result column "priority" cannot share a name in RETURNS TABLE.
CREATE TYPE outbox.enqueue_result AS (
	id bigint,
	idempotency_key text,
	status text,
	priority text,
	created boolean
);

CREATE FUNCTION outbox.enqueue(kind text, user_id text, business_record_id text, signer text,
	payload jsonb, priority text DEFAULT NULL)
RETURNS outbox.enqueue_result
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	p text;
	brid text := enqueue.business_record_id;
	rank smallint;
	key text;
	shard integer;
	new_id bigint;
	old outbox.ops%ROWTYPE;
	diffs text[] := '{}';
BEGIN
	IF enqueue.kind IS NULL THEN
		PERFORM outbox.invalid_input('kind', NULL, 'is missing');
	END IF;
	IF outbox.payload_fields(enqueue.kind) IS NULL THEN
		PERFORM outbox.invalid_input('kind', enqueue.kind,
			'is not one of DEPOSIT, WITHDRAW, REBALANCE, REFERRAL_REWARD');
	END IF;
	p := outbox.ident_problem(enqueue.user_id, false);
	IF p IS NOT NULL THEN
		PERFORM outbox.invalid_input('user_id', enqueue.user_id, p);
	END IF;
	p := outbox.account_strkey_problem(enqueue.signer);
	IF p IS NOT NULL THEN
		PERFORM outbox.invalid_input('signer', enqueue.signer, p);
	END IF;
	PERFORM outbox.check_payload(enqueue.kind, enqueue.payload);
	IF enqueue.kind = 'REFERRAL_REWARD' THEN
		-- The record is the reward leg of a conversion; the payload says which.
		brid := (enqueue.payload ->> 'conversion_id') || ':' || (enqueue.payload ->> 'leg');
		IF enqueue.business_record_id IS NOT NULL AND enqueue.business_record_id <> brid THEN
			PERFORM outbox.invalid_input('business_record_id', enqueue.business_record_id,
				'differs from the payload''s "<conversion_id>:<leg>" '
				|| outbox.quote_value(brid) || ' (pass NULL to derive it)');
		END IF;
	ELSE
		p := outbox.ident_problem(brid, true);
		IF p IS NOT NULL THEN
			PERFORM outbox.invalid_input('business_record_id', brid, p);
		END IF;
	END IF;
	IF enqueue.priority IS NULL THEN
		rank := CASE enqueue.kind WHEN 'WITHDRAW' THEN 0 WHEN 'REBALANCE' THEN 2 ELSE 1 END;
	ELSE
		rank := outbox.priority_rank(enqueue.priority);
		IF rank IS NULL THEN
			PERFORM outbox.invalid_input('priority', enqueue.priority,
				'is not one of CRITICAL, NORMAL, LOW (or NULL for the kind''s default)');
		END IF;
	END IF;

	key := enqueue.kind || ':' || enqueue.user_id || ':' || brid;
	shard := outbox.vshard_of(enqueue.signer);
	IF shard IS NULL THEN
		RAISE EXCEPTION 'outbox.settings is empty: run outboxctl migrate';
	END IF;

	-- Concurrency: a racing transaction with the same key makes this wait
	-- for it; if it commits, DO NOTHING and we read its row below.
	INSERT INTO outbox.ops AS o (idempotency_key, kind, priority, user_id, business_record_id,
		signer, vshard, payload)
	VALUES (key, enqueue.kind, rank, enqueue.user_id, brid, enqueue.signer, shard,
		enqueue.payload)
	ON CONFLICT (idempotency_key) DO NOTHING
	RETURNING o.id INTO new_id;

	IF new_id IS NOT NULL THEN
		INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
		VALUES (new_id, 1, 'ENQUEUED', NULL, 'PENDING',
			jsonb_build_object('idempotency_key', key, 'kind', enqueue.kind,
				'priority', outbox.priority_name(rank), 'vshard', shard));
		RETURN (new_id, key, 'PENDING', outbox.priority_name(rank), true)::outbox.enqueue_result;
	END IF;

	SELECT * INTO old FROM outbox.ops o WHERE o.idempotency_key = key;
	IF NOT FOUND THEN
		-- Only under REPEATABLE READ or SERIALIZABLE can the conflicting
		-- row be invisible; the caller must retry the transaction.
		RAISE EXCEPTION 'idempotency_key: %: enqueued by a concurrent transaction; retry',
			outbox.quote_value(key) USING ERRCODE = '40001';
	END IF;
	IF old.kind <> enqueue.kind THEN
		diffs := diffs || 'kind'::text;
	END IF;
	IF old.signer <> enqueue.signer THEN
		diffs := diffs || 'signer'::text;
	END IF;
	IF old.payload <> enqueue.payload THEN
		diffs := diffs || ARRAY(
			SELECT 'payload.' || f FROM unnest(outbox.payload_fields(enqueue.kind)) f
			WHERE (old.payload -> f) IS DISTINCT FROM (enqueue.payload -> f));
	END IF;
	IF cardinality(diffs) > 0 THEN
		RAISE EXCEPTION 'idempotency_key: % was already enqueued with a different %; a reused key with other content is a caller bug, never a second payment',
			outbox.quote_value(key), array_to_string(diffs, ', ')
			USING ERRCODE = 'OB409', COLUMN = diffs[1];
	END IF;
	RETURN (old.id, old.idempotency_key, old.status, outbox.priority_name(old.priority),
		false)::outbox.enqueue_result;
END
$$;

COMMENT ON FUNCTION outbox.enqueue(text, text, text, text, jsonb, text) IS
	'Record an intent in the caller''s transaction; idempotent by "<kind>:<user_id>:<business_record_id>". See schema/0002_enqueue.sql.';
