-- 0018_event_seq_on_op.sql - an op's events are numbered from a counter on
-- the op row, and the worker's write functions move an op with fewer
-- statements and row writes.
--
-- events.seq must stay unique and gap-free per op (schema/README.md,
-- conventions; the relay's consumers and `outboxctl audit --verify` detect
-- loss by gaps). event_add (0004) found the next number with max(seq) over
-- the op's events, a probe of events_op_id_seq_key per event. Now
-- ops.event_seq holds the seq of the op's newest event, and whoever appends
-- an event increments it in the UPDATE of the op row that the move makes
-- anyway (RETURNING the new value), then inserts the event with it, in one
-- statement. Why it is still gap-free and unique: the counter and the event
-- row are written in the same transaction under the op row's lock (the lock
-- order of 0004 is unchanged: every writer of an op's events holds it), so
-- two writers never read the same value and a rolled-back move takes its
-- number back with it. (op_id, seq) stays UNIQUE: a writer that inserted an
-- event without the counter would fail loudly, never skip or repeat a number.
-- enqueue (0012) writes seq 1 with the op, which the column's default is.
--
-- Row writes and statements (measured: a private PostgreSQL 15 with
-- pg_stat_statements.track = all, 1 000 ops each recorded and confirmed, one
-- statement per transaction, on the shared 2-core machine at load 6-8;
-- figures per call):
--   * attempt_record: the attempt's INSERT, the op's UPDATE and the SUBMITTED
--     event are one statement (was three, and event_add's call);
--   * op_landed: the landed attempt and its LIVE siblings (SUPERSEDED) are
--     decided by one UPDATE (was two), the op's UPDATE and its event are one
--     statement, check_result_code runs only for a result code;
--   * op_fail, op_retry_later, op_defer, op_hold: the op's UPDATE and its
--     event are one statement.
--   before -> after, per call: op_confirm 101.6 -> 95.0 buffers,
--   attempt_record 68.6 -> 65.2; nested statements per op 29 -> 23. WAL per
--   op is unchanged (50.8 records; 6 646 -> 6 725 bytes: the counter is 4
--   bytes of every op row version): the same rows are written, by fewer
--   statements. Statement times on that machine varied by 1.5x between two
--   runs of the same code; the figures of record are bench_dispatch's.
-- Every check, error code and message of 0007 and 0015 is kept, in the same
-- order; the lane (lane_settle) and the fence are untouched.
--
-- The terminal NOTIFY (0004, 0007) is left one per op: a worker's statement
-- finalizes one op (op_confirm, op_fail, op_hold each take one op), so a
-- payload of ids per statement would carry one id, and per transaction the
-- worker's group commit averaged 2.65 statements in bench_dispatch. The
-- pg_notify itself measured 0.002 ms per call above; the commit-time cost of
-- NOTIFY (the notification queue's lock) is per transaction, not per id.
-- check_dispatch_sql proves every id of several ended in one transaction
-- reaches a listener.

ALTER TABLE outbox.ops ADD COLUMN event_seq integer NOT NULL DEFAULT 1;

-- Ops that already have more than their ENQUEUED event (or, from some
-- earlier version, none). ALTER TABLE holds ops exclusively until commit,
-- so no writer appends an event meanwhile.
UPDATE outbox.ops o SET event_seq = m.seq
FROM (SELECT e.op_id, max(e.seq) AS seq FROM outbox.events e
	WHERE e.op_id IS NOT NULL GROUP BY e.op_id) m
WHERE m.op_id = o.id AND m.seq <> 1;
UPDATE outbox.ops o SET event_seq = 0
WHERE NOT EXISTS (SELECT 1 FROM outbox.events e WHERE e.op_id = o.id);

-- For every other writer (admin_retry, admin_cancel, admin_resolve,
-- attempt_landed, ...): the caller holds the op row lock; the counter and
-- the event in one statement.
CREATE OR REPLACE FUNCTION outbox.event_add(op bigint, ev text, from_s text, to_s text, b jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	WITH o AS (
		UPDATE outbox.ops o SET event_seq = o.event_seq + 1 WHERE o.id = op
		RETURNING o.id, o.event_seq)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, ev, from_s, to_s, b FROM o;
END
$$;

-- attempt_record of 0015: the op's UPDATE and its event in one statement
-- (the attempt's INSERT stays its own, before them, as in 0015).
CREATE OR REPLACE FUNCTION outbox.attempt_record(owner text, vshard integer, epoch bigint, op_id bigint,
	attempt_no integer, bump_no integer, tx_hash text, inner_tx_hash text, envelope_xdr text,
	source_account text, source_sequence bigint, max_time bigint, fee bigint,
	max_ledger integer DEFAULT NULL, sent_after_ledger integer DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
	inner_a outbox.attempts;
	other outbox.attempts;
BEGIN
	PERFORM outbox.fence(attempt_record.owner, attempt_record.vshard, attempt_record.epoch);
	op := outbox.op_lock(attempt_record.op_id, attempt_record.vshard);
	IF attempt_record.attempt_no IS NULL OR attempt_record.bump_no IS NULL THEN
		PERFORM outbox.invalid_input('attempt_no', NULL, 'and bump_no are required');
	END IF;
	IF attempt_record.source_account IS DISTINCT FROM op.signer THEN
		PERFORM outbox.invalid_input('source_account', attempt_record.source_account,
			'is not the op''s signer');
	END IF;
	IF attempt_record.bump_no = 0 THEN
		IF op.status IN ('CANCELLED', 'HELD') THEN
			PERFORM outbox.lane_settle(op.signer, 1);
			RETURN 'GONE';
		END IF;
		IF op.status <> 'PENDING' THEN
			PERFORM outbox.refuse(op.id, 'attempt_record (new transaction)', op.status);
		END IF;
		IF attempt_record.attempt_no <= op.attempts THEN
			RAISE EXCEPTION 'op %: attempt_no % is not above the op''s attempts %', op.id,
				attempt_record.attempt_no, op.attempts
				USING ERRCODE = 'OB409', COLUMN = 'attempt_no';
		END IF;
		IF EXISTS (SELECT 1 FROM outbox.attempts a
				WHERE a.op_id = op.id AND a.outcome = 'LIVE') THEN
			RAISE EXCEPTION 'op %: a live inner transaction exists; decide it first', op.id
				USING ERRCODE = 'OB409';
		END IF;
		SELECT * INTO other FROM outbox.attempts a
		WHERE a.source_account = attempt_record.source_account
			AND a.source_sequence = attempt_record.source_sequence
			AND a.bump_no = 0 AND a.outcome NOT IN ('EXPIRED', 'REJECTED');
		IF FOUND THEN
			RAISE EXCEPTION 'source_sequence: % of % is bound to op %''s transaction % (%): it may be reused only once that one is proven dead',
				attempt_record.source_sequence, attempt_record.source_account, other.op_id,
				other.tx_hash, other.outcome USING ERRCODE = 'OB409', COLUMN = 'source_sequence';
		END IF;
	ELSE
		IF op.status <> 'SUBMITTED' THEN
			PERFORM outbox.refuse(op.id, 'attempt_record (fee bump)', op.status);
		END IF;
		SELECT * INTO inner_a FROM outbox.attempts a
		WHERE a.tx_hash = attempt_record.inner_tx_hash;
		IF NOT FOUND OR inner_a.op_id <> op.id OR inner_a.bump_no <> 0
				OR inner_a.attempt_no <> attempt_record.attempt_no
				OR inner_a.outcome <> 'LIVE' THEN
			RAISE EXCEPTION 'op %: fee bump of %: no live inner transaction with that hash and attempt_no %',
				op.id, outbox.quote_value(attempt_record.inner_tx_hash),
				attempt_record.attempt_no USING ERRCODE = 'OB409', COLUMN = 'inner_tx_hash';
		END IF;
		IF inner_a.source_sequence <> attempt_record.source_sequence
				OR inner_a.max_time <> attempt_record.max_time
				OR inner_a.max_ledger IS DISTINCT FROM attempt_record.max_ledger THEN
			RAISE EXCEPTION 'op %: fee bump of %: sequence and bounds must be the inner transaction''s (%, %, %)',
				op.id, inner_a.tx_hash, inner_a.source_sequence, inner_a.max_time,
				inner_a.max_ledger USING ERRCODE = 'OB409', COLUMN = 'source_sequence';
		END IF;
	END IF;
	INSERT INTO outbox.attempts (op_id, attempt_no, bump_no, tx_hash, inner_tx_hash,
		envelope_xdr, source_account, source_sequence, max_time, fee, max_ledger,
		sent_after_ledger)
	VALUES (op.id, attempt_record.attempt_no, attempt_record.bump_no, attempt_record.tx_hash,
		attempt_record.inner_tx_hash, attempt_record.envelope_xdr,
		attempt_record.source_account, attempt_record.source_sequence,
		attempt_record.max_time, attempt_record.fee, attempt_record.max_ledger,
		attempt_record.sent_after_ledger);
	IF attempt_record.bump_no = 0 THEN
		WITH o AS (
			UPDATE outbox.ops o SET status = 'SUBMITTED', attempts = attempt_record.attempt_no,
				tx_hash = attempt_record.tx_hash, claimed_epoch = NULL, updated_at = now(),
				event_seq = o.event_seq + 1
			WHERE o.id = op.id RETURNING o.id, o.event_seq)
		INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
		SELECT o.id, o.event_seq, 'SUBMITTED', 'PENDING', 'SUBMITTED',
			jsonb_strip_nulls(jsonb_build_object('attempt_no', attempt_record.attempt_no,
				'tx_hash', attempt_record.tx_hash, 'fee', attempt_record.fee,
				'source_sequence', attempt_record.source_sequence,
				'max_time', attempt_record.max_time,
				'max_ledger', attempt_record.max_ledger))
		FROM o;
	ELSE
		WITH o AS (
			UPDATE outbox.ops o SET fee_bumps = o.fee_bumps + 1, updated_at = now(),
				event_seq = o.event_seq + 1
			WHERE o.id = op.id RETURNING o.id, o.event_seq)
		INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
		SELECT o.id, o.event_seq, 'FEE_BUMPED', 'SUBMITTED', 'SUBMITTED',
			jsonb_build_object('attempt_no', attempt_record.attempt_no,
				'bump_no', attempt_record.bump_no, 'tx_hash', attempt_record.tx_hash,
				'inner_tx_hash', attempt_record.inner_tx_hash, 'fee', attempt_record.fee)
		FROM o;
	END IF;
	RETURN 'RECORDED';
END
$$;

-- op_landed of 0007. The landed attempt is decided first, then its LIVE
-- siblings (fee bumps of the same inner transaction: there are none unless
-- the op recorded a fee bump, ops.fee_bumps > 0; a sibling left LIVE would
-- make ops_no_live_attempt refuse the op's move, never pass silently);
-- then the op's move and its event, one statement.
CREATE OR REPLACE FUNCTION outbox.op_landed(owner text, vshard integer, epoch bigint, op_id bigint,
	tx_hash text, ledger integer, fee_charged bigint, result_code text, error text,
	retry_delay_ms integer, via text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
	a outbox.attempts;
	to_s text;
	ev text;
BEGIN
	PERFORM outbox.fence(op_landed.owner, op_landed.vshard, op_landed.epoch);
	IF op_landed.result_code IS NOT NULL THEN
		PERFORM outbox.check_result_code(op_landed.result_code);
	END IF;
	IF op_landed.retry_delay_ms IS NOT NULL THEN
		PERFORM outbox.check_delay(op_landed.retry_delay_ms);
	END IF;
	op := outbox.op_lock(op_landed.op_id, op_landed.vshard);
	SELECT * INTO a FROM outbox.attempts x
	WHERE x.op_id = op.id AND x.tx_hash = op_landed.tx_hash;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'op %: tx_hash % is not one of its attempts', op.id,
			outbox.quote_value(op_landed.tx_hash) USING ERRCODE = 'OB409', COLUMN = 'tx_hash';
	END IF;
	IF a.outcome = (CASE WHEN op_landed.result_code IS NULL THEN 'CONFIRMED' ELSE 'FAILED' END)
			AND op.status <> 'SUBMITTED' THEN
		RETURN;
	END IF;
	IF op.status <> 'SUBMITTED' THEN
		PERFORM outbox.refuse(op.id, 'op_landed', op.status);
	END IF;
	IF a.outcome <> 'LIVE' THEN
		RAISE EXCEPTION 'op %: attempt % is %, not LIVE', op.id, a.tx_hash, a.outcome
			USING ERRCODE = 'OB409', COLUMN = 'tx_hash';
	END IF;
	UPDATE outbox.attempts x SET
		outcome = CASE WHEN op_landed.result_code IS NULL THEN 'CONFIRMED' ELSE 'FAILED' END,
		result_code = op_landed.result_code, landed_ledger = op_landed.ledger,
		decided_at = now()
	WHERE x.id = a.id;
	IF op.fee_bumps > 0 THEN
		UPDATE outbox.attempts x SET outcome = 'SUPERSEDED', decided_at = now()
		WHERE x.op_id = op.id AND x.outcome = 'LIVE';
	END IF;
	IF op_landed.result_code IS NULL THEN
		to_s := 'CONFIRMED';
		ev := 'CONFIRMED';
	ELSIF op_landed.retry_delay_ms IS NULL THEN
		to_s := 'FAILED';
		ev := 'FAILED';
	ELSE
		to_s := 'PENDING';
		ev := 'RETRY_SCHEDULED';
	END IF;
	WITH o AS (
		UPDATE outbox.ops o SET status = to_s,
			tx_hash = CASE WHEN to_s = 'CONFIRMED' THEN op_landed.tx_hash ELSE o.tx_hash END,
			confirmed_at = CASE WHEN to_s = 'CONFIRMED' THEN now() ELSE o.confirmed_at END,
			next_attempt_at = CASE WHEN to_s = 'PENDING'
				THEN now() + make_interval(secs => op_landed.retry_delay_ms / 1000.0)
				ELSE o.next_attempt_at END,
			last_error = CASE WHEN to_s = 'CONFIRMED' THEN o.last_error
				ELSE left(coalesce(op_landed.error, 'failed on chain'), 2000) END,
			claimed_epoch = CASE WHEN to_s = 'CONFIRMED' THEN o.claimed_epoch END,
			updated_at = now(), event_seq = o.event_seq + 1
		WHERE o.id = op.id RETURNING o.id, o.event_seq)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, ev, 'SUBMITTED', to_s,
		jsonb_strip_nulls(jsonb_build_object('tx_hash', op_landed.tx_hash,
			'ledger', op_landed.ledger, 'fee_charged', op_landed.fee_charged,
			'result_code', op_landed.result_code,
			'error', left(op_landed.error, 2000), 'delay_ms', op_landed.retry_delay_ms,
			'via', op_landed.via))
	FROM o;
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_fail, op_retry_later, op_defer and op_hold of 0007: the op's move and
-- its event in one statement.
CREATE OR REPLACE FUNCTION outbox.op_fail(owner text, vshard integer, epoch bigint, op_id bigint,
	error text, result_code text, tx_hash text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	IF op_fail.tx_hash IS NOT NULL THEN
		PERFORM outbox.op_landed(op_fail.owner, op_fail.vshard, op_fail.epoch, op_fail.op_id,
			op_fail.tx_hash, NULL, NULL, coalesce(op_fail.result_code, 'txFAILED'),
			op_fail.error, NULL);
		RETURN;
	END IF;
	PERFORM outbox.fence(op_fail.owner, op_fail.vshard, op_fail.epoch);
	PERFORM outbox.check_result_code(op_fail.result_code);
	op := outbox.op_lock(op_fail.op_id, op_fail.vshard);
	IF op.status = 'CANCELLED' THEN
		PERFORM outbox.lane_settle(op.signer, 1); -- cancelled under the caller's claim
		RETURN;
	END IF;
	IF op.status NOT IN ('PENDING', 'SUBMITTED') THEN
		PERFORM outbox.refuse(op.id, 'op_fail', op.status);
	END IF;
	WITH o AS (
		UPDATE outbox.ops o SET status = 'FAILED', last_error = left(op_fail.error, 2000),
			claimed_epoch = NULL, updated_at = now(), event_seq = o.event_seq + 1
		WHERE o.id = op.id RETURNING o.id, o.event_seq)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, 'FAILED', op.status, 'FAILED',
		jsonb_strip_nulls(jsonb_build_object('error', left(op_fail.error, 2000),
			'result_code', op_fail.result_code))
	FROM o;
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

CREATE OR REPLACE FUNCTION outbox.op_retry_later(owner text, vshard integer, epoch bigint,
	op_id bigint, delay_ms integer, error text, count_attempt boolean)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_retry_later.owner, op_retry_later.vshard, op_retry_later.epoch);
	PERFORM outbox.check_delay(delay_ms);
	op := outbox.op_lock(op_retry_later.op_id, op_retry_later.vshard);
	IF op.status = 'CANCELLED' THEN
		PERFORM outbox.lane_settle(op.signer, 1);
		RETURN;
	END IF;
	IF op.status NOT IN ('PENDING', 'SUBMITTED') THEN
		PERFORM outbox.refuse(op.id, 'op_retry_later', op.status);
	END IF;
	WITH o AS (
		UPDATE outbox.ops o SET status = 'PENDING',
			next_attempt_at = now() + make_interval(secs => delay_ms / 1000.0),
			attempts = o.attempts + CASE WHEN count_attempt THEN 1 ELSE 0 END,
			last_error = left(op_retry_later.error, 2000), claimed_epoch = NULL,
			updated_at = now(), event_seq = o.event_seq + 1
		WHERE o.id = op.id RETURNING o.id, o.event_seq)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, 'RETRY_SCHEDULED', op.status, 'PENDING',
		jsonb_strip_nulls(jsonb_build_object('delay_ms', delay_ms,
			'error', left(op_retry_later.error, 2000),
			'count_attempt', coalesce(count_attempt, false)))
	FROM o;
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

CREATE OR REPLACE FUNCTION outbox.op_defer(owner text, vshard integer, epoch bigint, op_id bigint,
	delay_ms integer)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_defer.owner, op_defer.vshard, op_defer.epoch);
	PERFORM outbox.check_delay(delay_ms);
	op := outbox.op_lock(op_defer.op_id, op_defer.vshard);
	IF op.status = 'CANCELLED' THEN
		PERFORM outbox.lane_settle(op.signer, 1);
		RETURN;
	END IF;
	IF op.status <> 'PENDING' THEN
		PERFORM outbox.refuse(op.id, 'op_defer', op.status);
	END IF;
	WITH o AS (
		UPDATE outbox.ops o SET status = 'PENDING',
			next_attempt_at = now() + make_interval(secs => delay_ms / 1000.0),
			claimed_epoch = NULL, updated_at = now(), event_seq = o.event_seq + 1
		WHERE o.id = op.id RETURNING o.id, o.event_seq)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, 'DEFERRED', 'PENDING', 'PENDING',
		jsonb_build_object('delay_ms', delay_ms)
	FROM o;
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

CREATE OR REPLACE FUNCTION outbox.op_hold(owner text, vshard integer, epoch bigint, op_id bigint,
	reason text, detail jsonb)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.fence(op_hold.owner, op_hold.vshard, op_hold.epoch);
	IF reason IS NULL OR length(reason) NOT BETWEEN 1 AND 2000 THEN
		PERFORM outbox.invalid_input('reason', left(reason, 100), 'is not 1..2000 characters');
	END IF;
	IF detail IS NOT NULL AND jsonb_typeof(detail) <> 'object' THEN
		PERFORM outbox.invalid_input('detail', left(detail::text, 100), 'is not a JSON object');
	END IF;
	op := outbox.op_lock(op_hold.op_id, op_hold.vshard);
	IF op.status = 'CANCELLED' THEN
		PERFORM outbox.lane_settle(op.signer, 1); -- cancelled under the caller's claim
		RETURN;
	END IF;
	IF op.status NOT IN ('PENDING', 'SUBMITTED') THEN
		PERFORM outbox.refuse(op.id, 'op_hold', op.status);
	END IF;
	UPDATE outbox.attempts a SET outcome = 'LANDED', proof = op_hold.detail, decided_at = now()
	WHERE a.op_id = op.id AND a.outcome = 'LIVE';
	WITH o AS (
		UPDATE outbox.ops o SET status = 'HELD', hold_reason = reason, claimed_epoch = NULL,
			updated_at = now(), event_seq = o.event_seq + 1
		WHERE o.id = op.id RETURNING o.id, o.event_seq)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, 'HELD', op.status, 'HELD',
		coalesce(detail, '{}') || jsonb_build_object('reason', reason)
	FROM o;
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;
