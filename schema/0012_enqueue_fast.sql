-- 0012_enqueue_fast.sql - outbox.enqueue at close to the cost of an INSERT.
--
-- The contract of 0002 is unchanged (arguments, result, SQLSTATEs, fields
-- and messages, the first event); what changes is how much work a valid
-- intent costs. bench_enqueue measured the 0002 function at about a third of
-- a plain INSERT's rate, and the time went to (per enqueue, CPU of one
-- backend; README.md, Benchmarks, has the runs):
--   * decoding two StrKeys in PL/pgSQL (signer and payload.account), about
--     35 us each: seven loop turns of a dozen PL/pgSQL expressions;
--   * vshard_of(signer), a PL/pgSQL call that reads outbox.settings, three
--     times (once in enqueue, twice in the identity trigger), ~10 us each;
--   * regular expressions with bounded repetition ('^G[A-Z2-7]{55}$' in the
--     identity trigger, '^[A-Z][A-Z_]{0,47}$' on every events row), which
--     PostgreSQL's engine expands into large automata: over 10 us each;
--   * a dozen PL/pgSQL statements for the checks and two for the writes.
-- Here:
--   * account_strkey_valid(): the same StrKey rule (56 base32 characters,
--     version byte 0x30, CRC16-XModem of version + key) without a loop.
--     CRC16-XModem (no initial value, no final xor) is linear over GF(2),
--     so checksum bit k equals the parity of the message bits selected by a
--     fixed mask M_k; "CRC of version + key XOR the stored checksum" is zero
--     exactly when, for every k, the parity of (bits & (M_k + the position
--     of stored checksum bit k)) is 0. The bits come from base64-decoding
--     the key with '2'..'7' renamed 'a'..'f' (base64's values 26..31, which
--     are base32's): 6 bits a character, the first always 0, 336 in all.
--     The 16 masks below are in that layout; check_enqueue compares this
--     function with account_strkey_problem() over every one-character
--     change of 100 keys, so a wrong mask cannot go unnoticed. About
--     5 us instead of 35.
--   * enqueue checks a valid intent with one expression (intent_valid:
--     the same rules as 0002, each written without a loop or a bounded
--     repetition) and, only when it is false, runs 0002's checks in 0002's
--     order (enqueue_refuse) to raise the error the contract names. An
--     intent they both accept is the only one that is written; should the
--     two ever disagree, enqueue fails with an internal error rather than
--     writing anything unchecked.
--   * the op and its first event (seq 1: a new op has no other, so no
--     max(seq) lookup) are written by one statement.
--   * vshard_of(signer) is a SQL expression PostgreSQL inlines: the
--     deployment's vshard count, fixed at the first migrate (outbox.settings
--     refuses changes), becomes the body of the IMMUTABLE vshard_count().
--   * the identity trigger of 0005/0007 checks the same rules with cheap
--     expressions (the signer's shape by length, first character and an
--     unbounded character class).
--   * events.type keeps its rule (an upper-case letter, then at most 47 of
--     A-Z and '_') as length plus an unbounded character class.
-- Every row the old checks refused is still refused on insert: check_enqueue
-- runs the direct-INSERT cases of 0005 and the bad-input table of the
-- contract against this migration.

-- The deployment's vshard count as a constant, so that vshard_of(signer)
-- inlines to a hash and a modulo (no table read, no PL/pgSQL call).
DO $$
BEGIN
	EXECUTE format('CREATE FUNCTION outbox.vshard_count() RETURNS integer '
		'LANGUAGE sql IMMUTABLE PARALLEL SAFE AS %L',
		'SELECT ' || (SELECT s.vshards FROM outbox.settings s)::integer);
END
$$;

COMMENT ON FUNCTION outbox.vshard_count() IS
	'outbox.settings.vshards, fixed at the first migrate (settings refuses changes)';

CREATE OR REPLACE FUNCTION outbox.vshard_of(signer text) RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT outbox.vshard_of(signer, outbox.vshard_count())
$$;

-- Is v a valid account StrKey (G...)? Exactly account_strkey_problem(v) IS
-- NULL, at a seventh of its cost (see the header). PL/pgSQL only to decode
-- once and test the 16 parities in one expression.
CREATE FUNCTION outbox.account_strkey_valid(v text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	b bit(336);
BEGIN
	-- 'GA'..'GD': base32 'G' (6) then a character below 4 is version byte
	-- 00110 000 = 0x30; the character class keeps decode() from failing.
	IF v IS NULL OR length(v) <> 56 OR left(v, 2) NOT IN ('GA', 'GB', 'GC', 'GD')
			OR v !~ '^[A-Z2-7]+$' THEN
		RETURN false;
	END IF;
	-- replace(), not translate(): translate() costs far more on 56 characters.
	b := ('x' || encode(decode(replace(replace(replace(replace(replace(replace(v,
		'2', 'a'), '3', 'b'), '4', 'c'), '5', 'd'), '6', 'e'), '7', 'f'), 'base64'),
		'hex'))::bit(336);
	RETURN bit_count(b & B'001000001001011010001100000110001000001111011110011001000001001000001100010110000001000010011001010001010110010110000011001101010110001100010111011111011100001000001000010100010010010011011101000000010110000000010101001110001011001010001111010000010110001101010000001000000010011000011100001011000000001100010001000010000000001000000000') % 2 = 0
		AND bit_count(b & B'010000010011010100011000001100010000011111011101010010000010010000011001001100000010000101010011000011001101001100000110011011001100011001001111011111011000010000010001001001000101000111011010000001001100000001001010011100010110010100011111000001001100011011000000010000000101010001011000010110000000011001000010000100000000010000000000') % 2 = 0
		AND bit_count(b & B'000001000111001001010000011001000001011111011011000100000101000001010010011000000100001011000110000110011010011000001101010110011001010010011111011111010001000001000010010010001010001111010100000010011000000010010101011001001101001001011110000010011001010110000001000000001011000011010001001100000001010010000100001000000001000000000000') % 2 = 0
		AND bit_count(b & B'000010001110010011000001010010000011011111010110001000001010000011000101010000001000010110001100001101010101010000011011001101010011000101011111011111000010000010000101000100010100011111001000000101010000000101001011010010011010010011011100000101010011001100000010000000010110000111000010011000000011000100001000010000000010000000000000') % 2 = 0
		AND bit_count(b & B'000100011101000110000011000100000111011111001100010000010100000110001011000000010001001100011000011011001011000001010110011011000110001011011111011110000100000100001010001001001001011110010000001011000000001010010111000101010101000111011000001011000110011000000100000001001100001110000101010000000110001000010001000000000100000000000000') % 2 = 0
		AND bit_count(b & B'000001010011010110001010001110000111010001000111011000001001000100011010010111000011011011001000000111000000010101001110011011011010011011001000000011010100000000011100000110000001001110011101010110010110010101011011000101000001000101011111000110011011011101011000001010011010000100010111001011001100011101010011000010001000000000000000') % 2 = 0
		AND bit_count(b & B'000011000111001100010100011100001111000010001111010000010010001001010101001110000111010110010000001110000001001010011101010111010101010110010000000111001000000001011000001100000010011101011011001101001101001011010110001010000010001011011110001101010111011011010000010101010100001001001110010110011001011011000110000100010000000000000000') % 2 = 0
		AND bit_count(b & B'000110001110011001001001011000011110000100011111000001000100010011001010011100001111001101000000011100000010010101011011001111001011001101000000001110010000000011010000011000000101011011010110011010011010010111001100010100000100010111011100011011001111010111000001001011001000010010011101001101010011010110001100001001000000000000000000') % 2 = 0
		AND bit_count(b & B'001100011101010010010011010001011100001001011110000010001001000110010101011000011110011010000001011000000101001011010110011110010110011010000000011101000000000111000001010000001011010111001101010101010101001110011001001000001001001111011001010110011111001110000010010110010001000101011010011011000111001100011000010000000000000000000001') % 2 = 0
		AND bit_count(b & B'011001011011000101000111000011011000010011011100000100010010001101001011010001011101010100000011010000001010010111001101011101001101010100000001011010000000001110000011000000010111001110011011001011001010011101010010010000010010011111010011001101011110011100000101001101000010001011010101010110001110011001010001000000000000000000000010') % 2 = 0
		AND bit_count(b & B'010011010110001010001110000111010001000111011000001001000100011010010111000011011011001000000111000000010101001110011011011010011011001000000011010100000000011100000110000001001110011101010110010110010101011011000101000001000101011111000110011011011101011000001010011010000100010111001011001100011101010011000010000000000000000000000100') % 2 = 0
		AND bit_count(b & B'000111001100010100011100001111000010001111010000010010001001010101001110000111010110010000001110000001001010011101010111010101010110010000000111001000000001011000001100000010011101011011001101001101001011010110001010000010001011011110001101010111011011010000010101010100001001001110010110011001011011000110000100000000000000000000001000') % 2 = 0
		AND bit_count(b & B'000110010000010011010100011000001100010000011111011101010010000010010000011001001100000010000101010011000011001101001100000110011011001100011001001111011111011000010000010001001001000101000111011010000001001100000001001010011100010110010100011111000001001100011011000000010000000101010001011000010110000000011001000010000000000000010000') % 2 = 0
		AND bit_count(b & B'001101000001000111001001010000011001000001011111011011000100000101000001010010011000000100001011000110000110011010011000001101010110011001010010011111011111010001000001000010010010001010001111010100000010011000000010010101011001001101001001011110000010011001010110000001000000001011000011010001001100000001010010000100000000000001000000') % 2 = 0
		AND bit_count(b & B'011010000010001110010011000001010010000011011111010110001000001010000011000101010000001000010110001100001101010101010000011011001101010011000101011111011111000010000010000101000100010100011111001000000101010000000101001011010010011010010011011100000101010011001100000010000000010110000111000010011000000011000100001000000000000010000000') % 2 = 0
		AND bit_count(b & B'010100000100011101000110000011000100000111011111001100010000010100000110001011000000010001001100011000011011001011000001010110011011000110001011011111011110000100000100001010001001001001011110010000001011000000001010010111000101010101000111011000001011000110011000000100000001001100001110000101010000000110001000010000000000000100000000') % 2 = 0;
END
$$;

-- Is v a valid amount? Exactly amount_problem(v) IS NULL (so NULL is not): digits without a
-- leading zero (so positive), and at most the i128 maximum (39 digits; at 39,
-- digit strings of equal length compare as numbers under "C").
CREATE FUNCTION outbox.amount_valid(v text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT coalesce(v ~ '^[1-9][0-9]*$' AND (length(v) < 39 OR (length(v) = 39
		AND v COLLATE "C" <= '170141183460469231731687303715884105727')), false)
$$;

-- Would check_payload(kind, payload) accept it? (kind already valid.) The
-- CASE keeps "payload - fields" from running on a non-object.
CREATE FUNCTION outbox.payload_valid(kind text, payload jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(payload) IS DISTINCT FROM 'object' THEN false
		WHEN kind = 'REBALANCE' THEN payload - 'amount' = '{}'::jsonb
			AND jsonb_typeof(payload -> 'amount') = 'string'
			AND outbox.amount_valid(payload ->> 'amount')
		WHEN kind IN ('DEPOSIT', 'WITHDRAW') THEN payload - ARRAY['account', 'amount'] = '{}'::jsonb
			AND jsonb_typeof(payload -> 'account') = 'string'
			AND jsonb_typeof(payload -> 'amount') = 'string'
			AND outbox.amount_valid(payload ->> 'amount')
			AND outbox.account_strkey_valid(payload ->> 'account')
		WHEN kind = 'REFERRAL_REWARD' THEN
			payload - ARRAY['account', 'amount', 'conversion_id', 'leg'] = '{}'::jsonb
			AND jsonb_typeof(payload -> 'account') = 'string'
			AND jsonb_typeof(payload -> 'amount') = 'string'
			AND jsonb_typeof(payload -> 'conversion_id') = 'string'
			AND jsonb_typeof(payload -> 'leg') = 'string'
			AND outbox.amount_valid(payload ->> 'amount')
			AND outbox.ident_problem(payload ->> 'conversion_id', false) IS NULL
			AND outbox.ident_problem(payload ->> 'leg', true) IS NULL
			AND outbox.account_strkey_valid(payload ->> 'account')
		ELSE false END
$$;

-- Raise the OB422 error 0002's enqueue raised for the first thing wrong
-- with an intent, in 0002's order; return when nothing is.
CREATE FUNCTION outbox.enqueue_refuse(kind text, user_id text, business_record_id text,
	signer text, payload jsonb, priority text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	p text;
	brid text;
BEGIN
	IF kind IS NULL THEN
		PERFORM outbox.invalid_input('kind', NULL, 'is missing');
	END IF;
	IF outbox.payload_fields(kind) IS NULL THEN
		PERFORM outbox.invalid_input('kind', kind,
			'is not one of DEPOSIT, WITHDRAW, REBALANCE, REFERRAL_REWARD');
	END IF;
	p := outbox.ident_problem(user_id, false);
	IF p IS NOT NULL THEN
		PERFORM outbox.invalid_input('user_id', user_id, p);
	END IF;
	p := outbox.account_strkey_problem(signer);
	IF p IS NOT NULL THEN
		PERFORM outbox.invalid_input('signer', signer, p);
	END IF;
	PERFORM outbox.check_payload(kind, payload);
	IF kind = 'REFERRAL_REWARD' THEN
		brid := (payload ->> 'conversion_id') || ':' || (payload ->> 'leg');
		IF business_record_id IS NOT NULL AND business_record_id <> brid THEN
			PERFORM outbox.invalid_input('business_record_id', business_record_id,
				'differs from the payload''s "<conversion_id>:<leg>" '
				|| outbox.quote_value(brid) || ' (pass NULL to derive it)');
		END IF;
	ELSE
		p := outbox.ident_problem(business_record_id, true);
		IF p IS NOT NULL THEN
			PERFORM outbox.invalid_input('business_record_id', business_record_id, p);
		END IF;
	END IF;
	IF priority IS NOT NULL AND outbox.priority_rank(priority) IS NULL THEN
		PERFORM outbox.invalid_input('priority', priority,
			'is not one of CRITICAL, NORMAL, LOW (or NULL for the kind''s default)');
	END IF;
END
$$;

-- Is the intent valid? brid is the record id enqueue will store (derived
-- for REFERRAL_REWARD), rank the priority (NULL when priority is unknown).
-- Inlined into enqueue: one expression, no PL/pgSQL statement per rule.
CREATE FUNCTION outbox.intent_valid(kind text, user_id text, business_record_id text,
	brid text, signer text, payload jsonb, rank smallint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT coalesce(rank IS NOT NULL
		AND outbox.ident_problem(user_id, false) IS NULL
		AND CASE WHEN kind = 'REFERRAL_REWARD'
			THEN business_record_id IS NULL OR business_record_id = brid
			ELSE outbox.ident_problem(brid, true) IS NULL END
		AND outbox.payload_valid(kind, payload)
		AND outbox.account_strkey_valid(signer), false)
$$;

CREATE OR REPLACE FUNCTION outbox.enqueue(kind text, user_id text, business_record_id text,
	signer text, payload jsonb, priority text DEFAULT NULL)
RETURNS outbox.enqueue_result
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	-- An unknown kind has no default: rank stays NULL and the intent invalid.
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
	diffs text[] := '{}';
BEGIN
	IF NOT outbox.intent_valid(enqueue.kind, enqueue.user_id, enqueue.business_record_id,
			brid, enqueue.signer, enqueue.payload, rank) THEN
		PERFORM outbox.enqueue_refuse(enqueue.kind, enqueue.user_id,
			enqueue.business_record_id, enqueue.signer, enqueue.payload, enqueue.priority);
		RAISE EXCEPTION 'outbox.enqueue: the intent failed the fast check but passed the full one (kind %)',
			outbox.quote_value(enqueue.kind) USING ERRCODE = 'XX000';
	END IF;

	-- Concurrency: a racing transaction with the same key makes this wait
	-- for it; if it commits, DO NOTHING and we read its row below. The
	-- event is written only with a new op, as seq 1.
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

-- The identity trigger of 0007 with the same rules in cheaper expressions:
-- '^G[A-Z2-7]{55}$' is length 56, a leading 'G' and the unbounded class;
-- vshard_of() is inlined now.
CREATE OR REPLACE FUNCTION outbox.ops_identity_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	problem text;
	col text;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		col := CASE
			WHEN NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key THEN 'idempotency_key'
			WHEN NEW.kind IS DISTINCT FROM OLD.kind THEN 'kind'
			WHEN NEW.user_id IS DISTINCT FROM OLD.user_id THEN 'user_id'
			WHEN NEW.business_record_id IS DISTINCT FROM OLD.business_record_id
				THEN 'business_record_id'
			WHEN NEW.signer IS DISTINCT FROM OLD.signer THEN 'signer'
			WHEN NEW.vshard IS DISTINCT FROM OLD.vshard THEN 'vshard'
			ELSE 'payload' END;
		RAISE EXCEPTION 'op %: % cannot change after enqueue (an op''s identity is immutable)',
			OLD.id, col USING ERRCODE = 'OB409', COLUMN = col;
	END IF;
	-- One expression for a valid row; the column only when it is not.
	IF coalesce(outbox.ident_problem(NEW.user_id, false) IS NULL
			AND length(NEW.business_record_id) BETWEEN 1 AND 257
			AND NEW.business_record_id !~ '[[:cntrl:]]'
			AND length(NEW.signer) = 56 AND left(NEW.signer, 1) = 'G'
			AND NEW.signer ~ '^[A-Z2-7]+$'
			AND NEW.vshard = outbox.vshard_of(NEW.signer)
			AND jsonb_typeof(NEW.payload) = 'object'
			AND length(NEW.idempotency_key) BETWEEN 5 AND 420
			AND NEW.idempotency_key = NEW.kind || ':' || NEW.user_id || ':'
				|| NEW.business_record_id, false) THEN
		-- (NULLs take the long way, which treats them as 0007 did.)
		RETURN NEW;
	END IF;
	problem := outbox.ident_problem(NEW.user_id, false);
	IF problem IS NOT NULL THEN
		col := 'user_id';
	ELSIF length(NEW.business_record_id) NOT BETWEEN 1 AND 257
			OR NEW.business_record_id ~ '[[:cntrl:]]' THEN
		col := 'business_record_id';
		problem := 'is not 1..257 characters without control characters';
	ELSIF length(NEW.signer) <> 56 OR left(NEW.signer, 1) <> 'G'
			OR NEW.signer !~ '^[A-Z2-7]+$' THEN
		col := 'signer';
		problem := 'is not a G... account id';
	ELSIF NEW.vshard IS DISTINCT FROM outbox.vshard_of(NEW.signer) THEN
		col := 'vshard';
		problem := NEW.vshard || ' is not the signer''s vshard ' || outbox.vshard_of(NEW.signer);
	ELSIF jsonb_typeof(NEW.payload) <> 'object' THEN
		col := 'payload';
		problem := 'is not a JSON object';
	ELSIF length(NEW.idempotency_key) NOT BETWEEN 5 AND 420
			OR NEW.idempotency_key <> NEW.kind || ':' || NEW.user_id || ':'
				|| NEW.business_record_id THEN
		col := 'idempotency_key';
		problem := 'is not kind:user_id:business_record_id (5..420 characters)';
	END IF;
	IF problem IS NOT NULL THEN
		RAISE EXCEPTION 'new row for relation "ops" violates check: % %', col, problem
			USING ERRCODE = 'check_violation', COLUMN = col, TABLE = 'ops',
				SCHEMA = 'outbox';
	END IF;
	RETURN NEW;
END
$$;

-- events.type: '^[A-Z][A-Z_]{0,47}$' without the bounded repetition. The
-- same rule, so every writer of events (dispatch, relay, oracle) is held to
-- what it was held to before. IF EXISTS: another migration may have
-- replaced it already.
ALTER TABLE outbox.events DROP CONSTRAINT IF EXISTS events_type_check;
ALTER TABLE outbox.events ADD CONSTRAINT events_type_check
	CHECK (length(type) <= 48 AND type ~ '^[A-Z][A-Z_]*$');
