-- 0015_attempts_probes_by_key.sql - attempt_record's two lookups of
-- outbox.attempts name no partial index's predicate, so no plan can read a
-- partial index whole.
--
-- Both lookups said "bump_no = 0 AND outcome = 'LIVE'", which implies the
-- predicates of attempts_one_live_inner and attempts_account_sequence
-- (0001, 0007). The planner may then scan such a partial index from end to
-- end, filtering on op_id or tx_hash, and it costs that scan from the index's
-- estimated size, which statistics from a smaller table make as cheap as a
-- one-row probe. A worker's session keeps a generic plan it chose early:
-- bench_dispatch on a fresh database (machine at rest) showed the live-inner
-- test reading every inner attempt of the table through
-- attempts_account_sequence (650 rows filtered at 5 000 ops, 708 buffers;
-- attempt_record 26.8 ms of function time per call at 20 000 ops, PostgreSQL
-- 11.4 ms of CPU per confirmed op).
--
-- Now:
--   * the live test asks for any LIVE attempt of the op. Same answer: a fee
--     bump is LIVE only while its inner transaction is (attempt_decide and
--     the outcome triggers decide them together). Only the op_id-led unique
--     index (op_id, attempt_no, bump_no) serves it.
--   * the fee bump's inner transaction is read by its hash (the unique
--     tx_hash index) and the rest is checked on the row.
-- The errors, codes and messages are those of 0007.

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
		UPDATE outbox.ops o SET status = 'SUBMITTED', attempts = attempt_record.attempt_no,
			tx_hash = attempt_record.tx_hash, claimed_epoch = NULL, updated_at = now()
		WHERE o.id = op.id;
		PERFORM outbox.event_add(op.id, 'SUBMITTED', 'PENDING', 'SUBMITTED',
			jsonb_strip_nulls(jsonb_build_object('attempt_no', attempt_record.attempt_no,
				'tx_hash', attempt_record.tx_hash, 'fee', attempt_record.fee,
				'source_sequence', attempt_record.source_sequence,
				'max_time', attempt_record.max_time,
				'max_ledger', attempt_record.max_ledger)));
	ELSE
		UPDATE outbox.ops o SET fee_bumps = o.fee_bumps + 1, updated_at = now()
		WHERE o.id = op.id;
		PERFORM outbox.event_add(op.id, 'FEE_BUMPED', 'SUBMITTED', 'SUBMITTED',
			jsonb_build_object('attempt_no', attempt_record.attempt_no,
				'bump_no', attempt_record.bump_no, 'tx_hash', attempt_record.tx_hash,
				'inner_tx_hash', attempt_record.inner_tx_hash, 'fee', attempt_record.fee));
	END IF;
	RETURN 'RECORDED';
END
$$;
