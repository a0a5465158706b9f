-- 0021_row_rules.sql - the row rules of the four hot tables, checked by one
-- PL/pgSQL function per table instead of 40 declarative CHECKs; no bounded
-- repetition left in a regular expression of the dispatch path.
--
-- Why. PostgreSQL rebuilds a table's CHECK constraints for every statement
-- that writes it: each constraint's stored expression is parsed back from
-- text (stringToNode), planned and compiled before the first row is checked,
-- and a write statement of a PL/pgSQL function starts a new executor each
-- time. outbox.ops has 11 CHECKs, attempts 13, events 11, lanes 5, and an op
-- writes these tables about ten times on its way to CONFIRMED. perf of
-- bench_dispatch's PostgreSQL backends (DWARF call graphs, the 2-core
-- machine): 15% of their samples were stringToNode, three quarters of it
-- called from ExecConstraints. A PL/pgSQL function is compiled once per
-- session and its expressions are planned once; what a statement rebuilds
-- is one function call whose argument is the row (one whole-row reference:
-- passing the columns one by one left a node tree of a dozen references to
-- parse per statement, 7 us more per UPDATE below).
--
-- And why not regular expressions with bounded repetition: `x ~
-- '^[0-9a-f]{64}$'` costs ~20 us per evaluation (PostgreSQL's regex engine
-- expands the repetition into 64 states), against well under a microsecond
-- for `length(x) = 64 AND x !~ '[^0-9a-f]'`, which accepts exactly the same
-- strings (0016 did the same for attempts' identity columns). ops.tx_hash is
-- checked on every update of an op, and events_seal checked every hash it
-- was given.
--
-- Measured on the shared 2-core machine (a PL/pgSQL loop of 20 000 UPDATEs
-- of a copy of outbox.ops, 100 per commit; microseconds per UPDATE): no
-- CHECK at all 12-20; 0001-0020's 11 CHECKs 82-92; the same merged into one
-- CHECK expression 75-78 (the cost is the expressions, not their count);
-- ops_rules with the regular expression 47-48; without it, taking the
-- columns as arguments 23-29; taking the row, as below, 20-22.
-- bench_dispatch, runs with and without 0021-0022 alternated on that machine
-- (README.md, Dispatch performance): 813-885 -> 877-1 010 confirmed ops/s,
-- PostgreSQL 1.70-1.86 -> 1.34-1.52 ms of CPU per op.
--
-- What holds. Each rule is the expression of the CHECK it replaces, copied
-- (the regular expressions rewritten as said), and a CHECK's meaning is
-- kept: a rule that is NULL passes, as a CHECK whose expression is NULL
-- does (`false = ANY (ok)` is true only for a rule that is false). A broken
-- rule fails the statement as before: SQLSTATE 23514 (check_violation),
-- naming the old constraint and the column, with the value in the detail
-- (outbox.rule_broken). The rules run in CHECK constraints, not triggers, so
-- nothing can switch them off (session_replication_role, DISABLE TRIGGER)
-- that could not switch off the constraints before. Adding the constraints
-- checks every existing row once (about 10 us per row).
-- Tests: check_row_rules breaks every rule of the four tables
-- alone and expects its constraint and column, passes NULLs where the old
-- CHECKs passed them, and compares each rewritten pattern with the regular
-- expression it replaces over a corpus of strings.

-- A broken rule: the statement fails as the CHECK it replaces failed.
-- rules[i] is '<constraint> <column>' for ok[i]; vals[i] is that column's value.
CREATE FUNCTION outbox.rule_broken(tbl text, rules text[], ok boolean[], vals text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	i integer := array_position(ok, false);
	con text := split_part(rules[i], ' ', 1);
	col text := split_part(rules[i], ' ', 2);
BEGIN
	RAISE EXCEPTION 'new row for relation "%" violates check constraint "%"', tbl, con
		USING ERRCODE = 'check_violation', CONSTRAINT = con, COLUMN = col, TABLE = tbl,
			SCHEMA = 'outbox',
			DETAIL = format('%s is %s', col, coalesce(outbox.quote_value(left(vals[i], 200)),
				'NULL'));
END
$$;

CREATE FUNCTION outbox.ops_rules(r outbox.ops)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	ok boolean[] := ARRAY[
		r.kind = ANY (ARRAY['DEPOSIT', 'WITHDRAW', 'REBALANCE', 'REFERRAL_REWARD']),
		r.priority >= 0 AND r.priority <= 2,
		r.status = ANY (ARRAY['PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED',
			'HELD']),
		r.vshard >= 0 AND r.vshard <= 4095,
		r.attempts >= 0,
		r.fee_bumps >= 0,
		r.attempts_base >= 0,
		r.confirmed_at IS NULL OR r.status = 'CONFIRMED',
		length(r.last_error) <= 2000,
		length(r.hold_reason) <= 2000,
		length(r.tx_hash) = 64 AND r.tx_hash !~ '[^0-9a-f]'];
BEGIN
	IF false = ANY (ok) THEN
		PERFORM outbox.rule_broken('ops', ARRAY['ops_kind_check kind',
			'ops_priority_check priority', 'ops_status_check status',
			'ops_vshard_check vshard', 'ops_attempts_check attempts',
			'ops_fee_bumps_check fee_bumps', 'ops_attempts_base_check attempts_base',
			'ops_check confirmed_at', 'ops_last_error_check last_error',
			'ops_hold_reason_check hold_reason', 'ops_tx_hash_check tx_hash'], ok,
			ARRAY[r.kind, r.priority::text, r.status, r.vshard::text, r.attempts::text,
				r.fee_bumps::text, r.attempts_base::text, r.confirmed_at::text, r.last_error,
				r.hold_reason, r.tx_hash]);
	END IF;
	RETURN true;
END
$$;

CREATE FUNCTION outbox.attempts_rules(r outbox.attempts)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	ok boolean[] := ARRAY[
		r.attempt_no >= 1,
		r.bump_no >= 0,
		r.bump_no > 0 OR r.inner_tx_hash = r.tx_hash,
		(r.outcome = 'LIVE') = (r.decided_at IS NULL),
		r.fee > 0,
		r.landed_ledger > 0,
		r.max_ledger > 0,
		r.max_time > 0,
		r.outcome = ANY (ARRAY['LIVE', 'CONFIRMED', 'FAILED', 'SUPERSEDED', 'LANDED',
			'EXPIRED', 'REJECTED']),
		jsonb_typeof(r.proof) = 'object',
		length(r.result_code) >= 1 AND length(r.result_code) <= 64,
		r.sent_after_ledger >= 0,
		r.source_sequence > 0];
BEGIN
	IF false = ANY (ok) THEN
		PERFORM outbox.rule_broken('attempts', ARRAY['attempts_attempt_no_check attempt_no',
			'attempts_bump_no_check bump_no', 'attempts_check inner_tx_hash',
			'attempts_check1 decided_at', 'attempts_fee_check fee',
			'attempts_landed_ledger_check landed_ledger',
			'attempts_max_ledger_check max_ledger', 'attempts_max_time_check max_time',
			'attempts_outcome_check outcome', 'attempts_proof_check proof',
			'attempts_result_code_check result_code',
			'attempts_sent_after_ledger_check sent_after_ledger',
			'attempts_source_sequence_check source_sequence'], ok,
			ARRAY[r.attempt_no::text, r.bump_no::text, r.inner_tx_hash, r.decided_at::text,
				r.fee::text, r.landed_ledger::text, r.max_ledger::text, r.max_time::text,
				r.outcome, r.proof::text, r.result_code, r.sent_after_ledger::text,
				r.source_sequence::text]);
	END IF;
	RETURN true;
END
$$;

CREATE FUNCTION outbox.events_rules(r outbox.events)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	ok boolean[] := ARRAY[
		jsonb_typeof(r.body) = 'object',
		-- '^(vshard:[0-9]{1,4}|oracle:[A-Za-z0-9_-]{1,32})$' within 1..64 characters
		CASE left(r.chain, 7)
			WHEN 'vshard:' THEN length(r.chain) BETWEEN 8 AND 11
				AND substr(r.chain, 8) !~ '[^0-9]'
			WHEN 'oracle:' THEN length(r.chain) BETWEEN 8 AND 39
				AND substr(r.chain, 8) !~ '[^A-Za-z0-9_-]'
			ELSE r.chain IS NULL END,
		octet_length(r.chain_hash) = 32,
		octet_length(r.chain_prev) = 32,
		r.chain_seq >= 1,
		r.from_status = ANY (ARRAY['PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED',
			'HELD']),
		(r.op_id IS NOT NULL AND r.seq IS NOT NULL)
			OR (r.op_id IS NULL AND r.seq IS NULL AND r.chain IS NOT NULL),
		(r.chain_seq IS NULL) = (r.chain_hash IS NULL)
			AND (r.chain_seq IS NULL) = (r.chain_prev IS NULL)
			AND (r.chain_seq IS NULL OR r.chain IS NOT NULL),
		r.seq >= 1,
		r.to_status = ANY (ARRAY['PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED',
			'HELD']),
		length(r.type) <= 48 AND r.type ~ '^[A-Z][A-Z_]*$'];
BEGIN
	IF false = ANY (ok) THEN
		PERFORM outbox.rule_broken('events', ARRAY['events_body_check body',
			'events_chain_check chain', 'events_chain_hash_check chain_hash',
			'events_chain_prev_check chain_prev', 'events_chain_seq_check chain_seq',
			'events_from_status_check from_status', 'events_op_or_chain op_id',
			'events_sealed chain_seq', 'events_seq_check seq',
			'events_to_status_check to_status', 'events_type_check type'], ok,
			ARRAY[r.body::text, r.chain, r.chain_hash::text, r.chain_prev::text,
				r.chain_seq::text, r.from_status, r.op_id::text, r.chain_seq::text, r.seq::text,
				r.to_status, r.type]);
	END IF;
	RETURN true;
END
$$;

CREATE FUNCTION outbox.lanes_rules(r outbox.lanes)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	ok boolean[] := ARRAY[
		(r.pending_best IS NULL) = (r.next_due IS NULL),
		r.in_flight >= 0,
		r.pending_best >= 0 AND r.pending_best <= 2,
		r.recheck_s >= 1 AND r.recheck_s <= 30,
		r.vshard >= 0 AND r.vshard <= 4095];
BEGIN
	IF false = ANY (ok) THEN
		PERFORM outbox.rule_broken('lanes', ARRAY['lanes_check next_due',
			'lanes_in_flight_check in_flight', 'lanes_pending_best_check pending_best',
			'lanes_recheck_s_check recheck_s', 'lanes_vshard_check vshard'], ok,
			ARRAY[r.next_due::text, r.in_flight::text, r.pending_best::text,
				r.recheck_s::text, r.vshard::text]);
	END IF;
	RETURN true;
END
$$;

ALTER TABLE outbox.ops
	DROP CONSTRAINT ops_attempts_base_check, DROP CONSTRAINT ops_attempts_check,
	DROP CONSTRAINT ops_check, DROP CONSTRAINT ops_fee_bumps_check,
	DROP CONSTRAINT ops_hold_reason_check, DROP CONSTRAINT ops_kind_check,
	DROP CONSTRAINT ops_last_error_check, DROP CONSTRAINT ops_priority_check,
	DROP CONSTRAINT ops_status_check, DROP CONSTRAINT ops_tx_hash_check,
	DROP CONSTRAINT ops_vshard_check,
	ADD CONSTRAINT ops_rules CHECK (outbox.ops_rules(ops));

ALTER TABLE outbox.attempts
	DROP CONSTRAINT attempts_attempt_no_check, DROP CONSTRAINT attempts_bump_no_check,
	DROP CONSTRAINT attempts_check, DROP CONSTRAINT attempts_check1,
	DROP CONSTRAINT attempts_fee_check, DROP CONSTRAINT attempts_landed_ledger_check,
	DROP CONSTRAINT attempts_max_ledger_check, DROP CONSTRAINT attempts_max_time_check,
	DROP CONSTRAINT attempts_outcome_check, DROP CONSTRAINT attempts_proof_check,
	DROP CONSTRAINT attempts_result_code_check,
	DROP CONSTRAINT attempts_sent_after_ledger_check,
	DROP CONSTRAINT attempts_source_sequence_check,
	ADD CONSTRAINT attempts_rules CHECK (outbox.attempts_rules(attempts));

ALTER TABLE outbox.events
	DROP CONSTRAINT events_body_check, DROP CONSTRAINT events_chain_check,
	DROP CONSTRAINT events_chain_hash_check, DROP CONSTRAINT events_chain_prev_check,
	DROP CONSTRAINT events_chain_seq_check, DROP CONSTRAINT events_from_status_check,
	DROP CONSTRAINT events_op_or_chain, DROP CONSTRAINT events_sealed,
	DROP CONSTRAINT events_seq_check, DROP CONSTRAINT events_to_status_check,
	DROP CONSTRAINT events_type_check,
	ADD CONSTRAINT events_rules CHECK (outbox.events_rules(events));

ALTER TABLE outbox.lanes
	DROP CONSTRAINT lanes_check, DROP CONSTRAINT lanes_in_flight_check,
	DROP CONSTRAINT lanes_pending_best_check, DROP CONSTRAINT lanes_recheck_s_check,
	DROP CONSTRAINT lanes_vshard_check,
	ADD CONSTRAINT lanes_rules CHECK (outbox.lanes_rules(lanes));

-- The hashes a seal is given, and a landed transaction's hash: the same
-- rule, without the 64-fold repetition.
CREATE OR REPLACE FUNCTION outbox.check_hash(field text, h text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF h IS NULL OR length(h) <> 64 OR h ~ '[^0-9a-f]' THEN
		PERFORM outbox.invalid_input(field, h, 'is not 64 lowercase hex characters');
	END IF;
END
$$;

-- events_seal of 0019, its hashes checked by the same rule (one regular
-- expression with a 64-fold repetition per event sealed, before).
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
	IF prev_hex IS NULL OR length(prev_hex) <> 64 OR prev_hex ~ '[^0-9a-f]'
			OR EXISTS (SELECT 1 FROM unnest(hashes_hex) x
				WHERE x IS NULL OR length(x) <> 64 OR x ~ '[^0-9a-f]') THEN
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
