-- 0007_exactly_once.sql - an envelope's fate is decided only from proof.
--
-- The rule (common/fate.h states it in full): a new transaction for an op is
-- built only after the earlier one is proven DEAD - the signer's sequence
-- number, read as of a ledger that closed after the transaction's last
-- chance, is still below the transaction's. A refusal at submission
-- (txBAD_SEQ, txTOO_LATE, ...) or an RPC's NOT_FOUND proves nothing: a resend
-- of a transaction that already landed answers exactly that. A transaction
-- whose sequence number was consumed ran; when no RPC answer can show how it
-- ended, the op is HELD for an operator, never sent again and never failed
-- as if unexecuted.
--
-- What this migration adds to the database's side of that promise:
--   * op status HELD, ops.hold_reason; attempt outcomes LANDED (its sequence
--     number is gone, the outcome unknown) and SUPERSEDED (a sibling envelope
--     of the same inner transaction landed); REJECTED is no longer written
--     (rows from earlier versions keep it);
--   * attempts.max_ledger (the ledger bound: valid only in ledgers below it),
--     attempts.sent_after_ledger (a ledger that closed before the envelope
--     existed: a lookup must reach back past it) and attempts.proof (what
--     decided it);
--   * precondition P2 as a unique index: an (account, sequence) pair belongs
--     to one inner transaction until that one is proven dead (EXPIRED);
--   * triggers that refuse what the dispatcher must never do: a status move
--     the lifecycle (common/lifecycle.c) does not have, an op leaving
--     SUBMITTED while an attempt of it is LIVE, an attempt outcome changing
--     other than from LIVE (or to what the chain showed), an op whose vshard
--     is not vshard_of(signer);
--   * attempt_decide accepts EXPIRED only with its proof; op_landed settles a
--     landing (retryable on-chain failures go back to PENDING); op_hold;
--     attempt_landed settles a landing the dispatcher did not expect, loudly;
--     admin_retry keeps attempt numbers growing (attempts_base restarts the
--     retry budget); admin_resolve ends a HELD op; attempt_record gives a
--     claim back when the op was cancelled or held under it.

-- ---------------------------------------------------------------------
-- Columns and constraints.

ALTER TABLE outbox.ops DROP CONSTRAINT ops_status_check;
ALTER TABLE outbox.ops ADD CONSTRAINT ops_status_check
	CHECK (status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED', 'HELD'));
-- Why an op is HELD (NULL otherwise); attempts at the last admin retry: the
-- retry budget (OUTBOX_MAX_ATTEMPTS) counts attempts - attempts_base, while
-- attempt numbers keep growing (each attempt row stays unique).
ALTER TABLE outbox.ops ADD COLUMN hold_reason text CHECK (length(hold_reason) <= 2000),
	ADD COLUMN attempts_base integer NOT NULL DEFAULT 0 CHECK (attempts_base >= 0);

ALTER TABLE outbox.events DROP CONSTRAINT events_from_status_check,
	DROP CONSTRAINT events_to_status_check;
ALTER TABLE outbox.events ADD CONSTRAINT events_from_status_check
		CHECK (from_status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED', 'HELD')),
	ADD CONSTRAINT events_to_status_check
		CHECK (to_status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED', 'HELD'));

ALTER TABLE outbox.attempts DROP CONSTRAINT attempts_outcome_check;
ALTER TABLE outbox.attempts ADD CONSTRAINT attempts_outcome_check
	CHECK (outcome IN ('LIVE', 'CONFIRMED', 'FAILED', 'SUPERSEDED', 'LANDED', 'EXPIRED', 'REJECTED'));
ALTER TABLE outbox.attempts ADD COLUMN max_ledger integer CHECK (max_ledger > 0),
	ADD COLUMN sent_after_ledger integer CHECK (sent_after_ledger >= 0),
	ADD COLUMN landed_ledger integer CHECK (landed_ledger > 0),
	ADD COLUMN proof jsonb CHECK (jsonb_typeof(proof) = 'object');

-- A sequence number the signer's account can use once is bound to one inner
-- transaction at a time. Earlier versions could sign a second transaction
-- with the sequence number of one that had landed; such rows make the index
-- impossible, and an operator must look at them first.
DO $$
DECLARE
	d record;
BEGIN
	SELECT a.source_account, a.source_sequence, array_agg(a.op_id ORDER BY a.op_id) AS ops
	INTO d
	FROM outbox.attempts a
	WHERE a.bump_no = 0 AND a.outcome NOT IN ('EXPIRED', 'REJECTED')
	GROUP BY a.source_account, a.source_sequence HAVING count(*) > 1 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'attempts: account % sequence % is recorded by more than one undecided or landed transaction (ops %): check on chain which ran, mark the others EXPIRED, then migrate again',
			d.source_account, d.source_sequence, d.ops USING ERRCODE = 'OB409';
	END IF;
END
$$;
CREATE UNIQUE INDEX attempts_account_sequence ON outbox.attempts (source_account, source_sequence)
	WHERE bump_no = 0 AND outcome NOT IN ('EXPIRED', 'REJECTED');

-- An operator's acknowledgement that the signer's sequence number moved
-- past outboxd's records (admin_retry of an op held for it): the claim's
-- "highest sequence recorded" is at least this.
ALTER TABLE outbox.lanes ADD COLUMN seq_floor bigint;

-- ---------------------------------------------------------------------
-- Triggers.

-- The lifecycle, exactly as common/lifecycle.c has it (check_dispatch_sql
-- compares the two pair by pair).
DROP TRIGGER ops_status_legal ON outbox.ops;
CREATE TRIGGER ops_status_legal BEFORE UPDATE OF status ON outbox.ops
	FOR EACH ROW WHEN (NOT (
		(OLD.status = 'PENDING'
			AND NEW.status IN ('PENDING', 'SUBMITTED', 'FAILED', 'CANCELLED', 'HELD'))
		OR (OLD.status = 'SUBMITTED'
			AND NEW.status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'HELD'))
		OR (OLD.status = 'FAILED' AND NEW.status IN ('PENDING', 'HELD'))
		OR (OLD.status = 'CANCELLED' AND NEW.status = 'HELD')
		OR (OLD.status = 'HELD' AND NEW.status IN ('PENDING', 'CONFIRMED', 'FAILED'))))
	EXECUTE FUNCTION outbox.status_move_refused();

-- An op is never moved on while an envelope of it could still land.
CREATE FUNCTION outbox.op_live_refused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM outbox.attempts a WHERE a.op_id = NEW.id AND a.outcome = 'LIVE') THEN
		RAISE EXCEPTION 'op %: cannot move % -> %: an attempt is still LIVE (it could land)',
			NEW.id, OLD.status, NEW.status USING ERRCODE = 'OB409', COLUMN = 'status';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER ops_no_live_attempt BEFORE UPDATE OF status ON outbox.ops
	FOR EACH ROW WHEN (OLD.status = 'SUBMITTED' AND NEW.status <> 'SUBMITTED')
	EXECUTE FUNCTION outbox.op_live_refused();

-- An attempt's outcome is decided once, from LIVE; afterwards only what a
-- ledger showed may overrule it (CONFIRMED or FAILED: the chain is the truth).
CREATE FUNCTION outbox.attempt_move_refused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'attempt %: illegal outcome move % -> %', OLD.tx_hash, OLD.outcome,
		NEW.outcome USING ERRCODE = 'OB409', COLUMN = 'outcome';
END
$$;

CREATE TRIGGER attempts_outcome_legal BEFORE UPDATE OF outcome ON outbox.attempts
	FOR EACH ROW WHEN (NOT (
		OLD.outcome = NEW.outcome
		OR OLD.outcome = 'LIVE'
		OR (OLD.outcome IN ('LANDED', 'EXPIRED', 'REJECTED', 'SUPERSEDED')
			AND NEW.outcome IN ('CONFIRMED', 'FAILED'))))
	EXECUTE FUNCTION outbox.attempt_move_refused();

-- The identity check of 0005, plus: the vshard is the signer's (a wrong one
-- would hand the signer to a worker that does not own it, and two workers
-- could race on its sequence number).
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
	problem := outbox.ident_problem(NEW.user_id, false);
	IF problem IS NOT NULL THEN
		col := 'user_id';
	ELSIF length(NEW.business_record_id) NOT BETWEEN 1 AND 257
			OR NEW.business_record_id ~ '[[:cntrl:]]' THEN
		col := 'business_record_id';
		problem := 'is not 1..257 characters without control characters';
	ELSIF NEW.signer !~ '^G[A-Z2-7]{55}$' THEN
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

-- A HELD op is the end of what the dispatcher does by itself: wake whoever
-- waits for the op (the gateway's synchronous enqueue) as for a terminal one.
DROP TRIGGER ops_notify_done ON outbox.ops;
CREATE TRIGGER ops_notify_done AFTER UPDATE OF status ON outbox.ops
	FOR EACH ROW WHEN (NEW.status IN ('CONFIRMED', 'FAILED', 'CANCELLED', 'HELD')
		AND OLD.status IS DISTINCT FROM NEW.status)
	EXECUTE FUNCTION outbox.notify_done();

-- ---------------------------------------------------------------------
-- Small helpers.

CREATE FUNCTION outbox.check_result_code(code text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF code IS NOT NULL AND (length(code) NOT BETWEEN 1 AND 64 OR code ~ '[[:cntrl:]]') THEN
		PERFORM outbox.invalid_input('result_code', code,
			'is not 1..64 characters without control characters');
	END IF;
END
$$;

CREATE FUNCTION outbox.check_hash(field text, h text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF h IS NULL OR h !~ '^[0-9a-f]{64}$' THEN
		PERFORM outbox.invalid_input(field, h, 'is not 64 lowercase hex characters');
	END IF;
END
$$;

-- ---------------------------------------------------------------------
-- Attempts, written and committed BEFORE the envelope is sent.
--
-- Returns 'RECORDED', or 'GONE' when a new transaction was to be recorded
-- for an op that was cancelled or held while the worker prepared it: the
-- worker's claim is given back here (lane reservation) and nothing is sent.
-- For a new inner transaction (bump_no = 0): the op is PENDING, attempt_no
-- is above its attempts, no inner transaction of it is LIVE, the source is
-- the op's signer, and (source_account, source_sequence) is not held by an
-- inner transaction that is not proven dead. A fee bump wraps the op's LIVE
-- inner transaction: same attempt_no, account, sequence and bounds.
DROP FUNCTION outbox.attempt_record(text, integer, bigint, bigint, integer, integer, text, text,
	text, text, bigint, bigint, bigint);
CREATE FUNCTION outbox.attempt_record(owner text, vshard integer, epoch bigint, op_id bigint,
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
				WHERE a.op_id = op.id AND a.outcome = 'LIVE' AND a.bump_no = 0) THEN
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
		WHERE a.tx_hash = attempt_record.inner_tx_hash AND a.op_id = op.id
			AND a.bump_no = 0 AND a.attempt_no = attempt_record.attempt_no
			AND a.outcome = 'LIVE';
		IF NOT FOUND THEN
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

-- attempt_decide: LIVE -> EXPIRED, only with the proof of death
-- (common/fate.h): proof = {"account_seq": n, "as_of_ledger": L,
-- "deadline_ledger": D} where the account's sequence number n, read as of
-- ledger L >= D, is below the transaction's, and D is the first ledger past
-- its last chance (its max_ledger, or a ledger whose close time is past its
-- max_time: the database cannot check close times, so it checks what it can).
-- The inner transaction takes its fee bumps with it. Deciding again the
-- same way is a no-op. REJECTED is refused: a refusal at submission proves
-- nothing.
DROP FUNCTION outbox.attempt_decide(text, integer, bigint, text, text, text);
CREATE FUNCTION outbox.attempt_decide(owner text, vshard integer, epoch bigint, tx_hash text,
	outcome text, result_code text, proof jsonb DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	a outbox.attempts;
	seq bigint;
	at_ledger bigint;
	deadline bigint;
BEGIN
	PERFORM outbox.fence(attempt_decide.owner, attempt_decide.vshard, attempt_decide.epoch);
	PERFORM outbox.check_result_code(attempt_decide.result_code);
	IF attempt_decide.outcome IS DISTINCT FROM 'EXPIRED' THEN
		PERFORM outbox.invalid_input('outcome', attempt_decide.outcome,
			'is not EXPIRED (a refusal at submission proves nothing: only a proof of death decides)');
	END IF;
	SELECT * INTO a FROM outbox.attempts x WHERE x.tx_hash = attempt_decide.tx_hash;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'tx_hash: % is not an attempt', outbox.quote_value(attempt_decide.tx_hash)
			USING ERRCODE = 'OB404', COLUMN = 'tx_hash';
	END IF;
	PERFORM outbox.op_lock(a.op_id, attempt_decide.vshard);
	SELECT * INTO a FROM outbox.attempts x WHERE x.id = a.id;
	IF a.outcome = 'EXPIRED' THEN
		RETURN;
	END IF;
	IF a.bump_no <> 0 THEN
		PERFORM outbox.invalid_input('tx_hash', a.tx_hash,
			'is a fee bump: decide its inner transaction (they share one fate)');
	END IF;
	IF a.outcome <> 'LIVE' THEN
		RAISE EXCEPTION 'attempt %: is %, cannot become EXPIRED', a.tx_hash, a.outcome
			USING ERRCODE = 'OB409', COLUMN = 'outcome';
	END IF;
	IF jsonb_typeof(proof) IS DISTINCT FROM 'object'
			OR coalesce(jsonb_typeof(proof -> 'account_seq') <> 'number'
				OR proof ->> 'account_seq' !~ '^-?[0-9]{1,18}$'
				OR jsonb_typeof(proof -> 'as_of_ledger') <> 'number'
				OR proof ->> 'as_of_ledger' !~ '^[0-9]{1,10}$'
				OR jsonb_typeof(proof -> 'deadline_ledger') <> 'number'
				OR proof ->> 'deadline_ledger' !~ '^[0-9]{1,10}$', true) THEN
		PERFORM outbox.invalid_input('proof', left(proof::text, 200),
			'must be {"account_seq", "as_of_ledger", "deadline_ledger"} integers');
	END IF;
	seq := (proof ->> 'account_seq')::bigint;
	at_ledger := (proof ->> 'as_of_ledger')::bigint;
	deadline := (proof ->> 'deadline_ledger')::bigint;
	IF seq >= a.source_sequence OR at_ledger < deadline
			OR deadline <= coalesce(a.sent_after_ledger, 0)
			OR (a.max_ledger IS NOT NULL AND deadline > a.max_ledger) THEN
		PERFORM outbox.invalid_input('proof', left(proof::text, 200),
			format('does not prove %s dead (sequence %s, max_ledger %s, sent after ledger %s)',
				a.tx_hash, a.source_sequence, a.max_ledger, a.sent_after_ledger));
	END IF;
	UPDATE outbox.attempts x SET outcome = 'EXPIRED', result_code = attempt_decide.result_code,
		proof = attempt_decide.proof, decided_at = now()
	WHERE x.id = a.id;
	UPDATE outbox.attempts x SET outcome = 'EXPIRED', decided_at = now()
	WHERE x.op_id = a.op_id AND x.inner_tx_hash = a.tx_hash AND x.bump_no > 0
		AND x.outcome = 'LIVE';
END
$$;

-- ---------------------------------------------------------------------
-- Outcomes.

-- op_landed: one of the op's envelopes (tx_hash) is in ledger `ledger`. It is
-- CONFIRMED (result_code NULL) or FAILED with result_code; its siblings (the
-- same inner transaction) are SUPERSEDED. The op becomes CONFIRMED, FAILED,
-- or - a failure the classifier calls retryable (re-simulate, restore) -
-- PENDING after retry_delay_ms. `via`: the outer hash the ledger showed when
-- it is not one outboxd recorded (anyone may fee-bump a signed transaction).
-- Settling again the same way is a no-op.
CREATE FUNCTION outbox.op_landed(owner text, vshard integer, epoch bigint, op_id bigint,
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
	PERFORM outbox.check_result_code(op_landed.result_code);
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
	UPDATE outbox.attempts x SET outcome = 'SUPERSEDED', decided_at = now()
	WHERE x.op_id = op.id AND x.outcome = 'LIVE';
	IF op_landed.result_code IS NULL THEN
		to_s := 'CONFIRMED';
		ev := 'CONFIRMED';
		UPDATE outbox.ops o SET status = 'CONFIRMED', tx_hash = op_landed.tx_hash,
			confirmed_at = now(), updated_at = now()
		WHERE o.id = op.id;
	ELSIF op_landed.retry_delay_ms IS NULL THEN
		to_s := 'FAILED';
		ev := 'FAILED';
		UPDATE outbox.ops o SET status = 'FAILED',
			last_error = left(coalesce(op_landed.error, 'failed on chain'), 2000),
			claimed_epoch = NULL, updated_at = now()
		WHERE o.id = op.id;
	ELSE
		to_s := 'PENDING';
		ev := 'RETRY_SCHEDULED';
		UPDATE outbox.ops o SET status = 'PENDING',
			next_attempt_at = now() + make_interval(secs => op_landed.retry_delay_ms / 1000.0),
			last_error = left(coalesce(op_landed.error, 'failed on chain'), 2000),
			claimed_epoch = NULL, updated_at = now()
		WHERE o.id = op.id;
	END IF;
	PERFORM outbox.event_add(op.id, ev, 'SUBMITTED', to_s,
		jsonb_strip_nulls(jsonb_build_object('tx_hash', op_landed.tx_hash,
			'ledger', op_landed.ledger, 'fee_charged', op_landed.fee_charged,
			'result_code', op_landed.result_code,
			'error', left(op_landed.error, 2000), 'delay_ms', op_landed.retry_delay_ms,
			'via', op_landed.via)));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_confirm and op_fail with a landed hash: the same as op_landed.
CREATE OR REPLACE FUNCTION outbox.op_confirm(owner text, vshard integer, epoch bigint,
	op_id bigint, tx_hash text, ledger integer, fee_charged bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM outbox.op_landed(owner, vshard, epoch, op_id, tx_hash, ledger, fee_charged, NULL,
		NULL, NULL);
END
$$;

-- op_fail: PENDING (before any envelope) or SUBMITTED with no LIVE attempt
-- (every envelope proven dead) -> FAILED; with tx_hash: that envelope landed
-- and failed on chain (op_landed). Releases the op's lane reservation.
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
	UPDATE outbox.ops o SET status = 'FAILED', last_error = left(op_fail.error, 2000),
		claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'FAILED', op.status, 'FAILED',
		jsonb_strip_nulls(jsonb_build_object('error', left(op_fail.error, 2000),
			'result_code', op_fail.result_code)));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_retry_later and op_defer of 0004, and op_fail below: a claimed op that
-- an operator cancelled while the worker prepared it (admin_cancel takes
-- PENDING ops only, so the caller's claim is what remains of it) is given
-- back quietly: the lane reservation is released and nothing else changes.
-- Any other status the caller did not expect is still refused (OB409).
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
	UPDATE outbox.ops o SET status = 'PENDING',
		next_attempt_at = now() + make_interval(secs => delay_ms / 1000.0),
		attempts = o.attempts + CASE WHEN count_attempt THEN 1 ELSE 0 END,
		last_error = left(op_retry_later.error, 2000), claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'RETRY_SCHEDULED', op.status, 'PENDING',
		jsonb_strip_nulls(jsonb_build_object('delay_ms', delay_ms,
			'error', left(op_retry_later.error, 2000),
			'count_attempt', coalesce(count_attempt, false))));
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
	UPDATE outbox.ops o SET status = 'PENDING',
		next_attempt_at = now() + make_interval(secs => delay_ms / 1000.0),
		claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'DEFERRED', 'PENDING', 'PENDING',
		jsonb_build_object('delay_ms', delay_ms));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- op_hold: SUBMITTED -> HELD (its transaction consumed its sequence number,
-- or the account's moved past it, and no answer can show the outcome: its
-- LIVE attempts become LANDED) or PENDING -> HELD (the signer's sequence
-- number moved past anything outboxd recorded; nothing was sent). detail
-- goes into the HELD event (the proof, the account's sequence). Releases
-- the op's lane reservation.
CREATE FUNCTION outbox.op_hold(owner text, vshard integer, epoch bigint, op_id bigint,
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
	UPDATE outbox.ops o SET status = 'HELD', hold_reason = reason, claimed_epoch = NULL,
		updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'HELD', op.status, 'HELD',
		coalesce(detail, '{}') || jsonb_build_object('reason', reason));
	PERFORM outbox.lane_settle(op.signer, 1);
END
$$;

-- attempt_landed: a ledger holds tx_hash and no job of the worker was
-- following it (the oracle's ledger follower saw it). vshards/epochs are
-- the caller's leases (the op's vshard must be one of them). Returns:
--   'LIVE'      the op is SUBMITTED and this attempt LIVE: its job settles it;
--   'SETTLED'   already recorded as landed;
--   'RESOLVED'  the op was HELD for this transaction: the ledger shows how it
--               ended, so the op ends the same way;
--   'ALARM'     the attempt had been decided otherwise (proven dead,
--               superseded, or an earlier version's REJECTED) or its op had
--               moved on: the chain is the truth, the attempt records what
--               landed, and the op is HELD (CONFIRMED stays: it ran twice) with
--               an event saying so. Nothing here may happen when the rule of
--               fate.h holds; it is there so that nothing is ever silent.
CREATE FUNCTION outbox.attempt_landed(owner text, vshards integer[], epochs bigint[],
	tx_hash text, ledger integer, fee_charged bigint, result_code text)
RETURNS text LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	a outbox.attempts;
	op outbox.ops;
	i integer;
	landed text := CASE WHEN attempt_landed.result_code IS NULL THEN 'CONFIRMED' ELSE 'FAILED' END;
	body jsonb;
BEGIN
	PERFORM outbox.check_hash('tx_hash', attempt_landed.tx_hash);
	PERFORM outbox.check_result_code(attempt_landed.result_code);
	SELECT * INTO a FROM outbox.attempts x WHERE x.tx_hash = attempt_landed.tx_hash;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'tx_hash: % is not an attempt', attempt_landed.tx_hash
			USING ERRCODE = 'OB404', COLUMN = 'tx_hash';
	END IF;
	SELECT * INTO op FROM outbox.ops o WHERE o.id = a.op_id;
	i := array_position(vshards, op.vshard);
	IF i IS NULL OR epochs IS NULL OR cardinality(epochs) < i THEN
		RAISE EXCEPTION 'op %: its vshard % is not among the caller''s', op.id, op.vshard
			USING ERRCODE = 'OB403';
	END IF;
	PERFORM outbox.fence(attempt_landed.owner, op.vshard, epochs[i]);
	op := outbox.op_lock(op.id, op.vshard);
	SELECT * INTO a FROM outbox.attempts x WHERE x.id = a.id;
	IF a.outcome IN ('CONFIRMED', 'FAILED') THEN
		RETURN 'SETTLED';
	END IF;
	IF a.outcome = 'LIVE' AND op.status = 'SUBMITTED' THEN
		RETURN 'LIVE';
	END IF;
	body := jsonb_strip_nulls(jsonb_build_object('tx_hash', a.tx_hash, 'ledger', ledger,
		'fee_charged', fee_charged, 'result_code', attempt_landed.result_code,
		'attempt_was', a.outcome));
	UPDATE outbox.attempts x SET outcome = landed, result_code = attempt_landed.result_code,
		landed_ledger = attempt_landed.ledger, decided_at = now()
	WHERE x.id = a.id;
	IF a.outcome = 'LANDED' AND op.status = 'HELD' THEN
		UPDATE outbox.ops o SET status = landed, hold_reason = NULL,
			tx_hash = CASE WHEN landed = 'CONFIRMED' THEN a.tx_hash ELSE o.tx_hash END,
			confirmed_at = CASE WHEN landed = 'CONFIRMED' THEN now() END,
			last_error = CASE WHEN landed = 'FAILED' THEN 'failed on chain' ELSE o.last_error END,
			updated_at = now()
		WHERE o.id = op.id;
		PERFORM outbox.event_add(op.id, 'RESOLVED', 'HELD', landed,
			body || '{"by": "chain"}');
		RETURN 'RESOLVED';
	END IF;
	body := body || '{"alarm": "an envelope landed after outboxd had decided it could not"}';
	IF op.status IN ('CONFIRMED', 'HELD') THEN
		PERFORM outbox.event_add(op.id, 'LANDED_LATE', NULL, NULL, body);
		RETURN 'ALARM';
	END IF;
	UPDATE outbox.attempts x SET outcome = 'LANDED', decided_at = now()
	WHERE x.op_id = op.id AND x.outcome = 'LIVE';
	UPDATE outbox.ops o SET status = 'HELD', claimed_epoch = NULL, updated_at = now(),
		hold_reason = left(format('transaction %s landed in ledger %s after it was decided %s',
			a.tx_hash, ledger, a.outcome), 2000)
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'HELD', op.status, 'HELD', body);
	IF op.status = 'SUBMITTED' THEN
		PERFORM outbox.lane_settle(op.signer, 1);
	END IF;
	RETURN 'ALARM';
END
$$;

-- ---------------------------------------------------------------------
-- Recovery: reconcile_list also returns the ledger facts of each attempt.
DROP FUNCTION outbox.reconcile_list(text, integer, bigint);
CREATE FUNCTION outbox.reconcile_list(owner text, vshard integer, epoch bigint)
RETURNS TABLE (op_id bigint, signer text, tx_hash text, inner_tx_hash text, bump_no integer,
	envelope_xdr text, source_sequence bigint, max_time bigint, fee bigint, attempt_no integer,
	max_ledger integer, sent_after_ledger integer, attempts_base integer, kind text,
	attempts integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	PERFORM outbox.fence(reconcile_list.owner, reconcile_list.vshard, reconcile_list.epoch);
	UPDATE outbox.lanes l SET in_flight = coalesce(s.n, 0),
		next_due = CASE WHEN l.next_due = 'infinity' THEN now() ELSE l.next_due END
	FROM outbox.lanes l2
	LEFT JOIN (SELECT o.signer, count(*)::integer AS n FROM outbox.ops o
		WHERE o.vshard = reconcile_list.vshard AND o.status = 'SUBMITTED'
		GROUP BY o.signer) s ON s.signer = l2.signer
	WHERE l2.signer = l.signer AND l2.vshard = reconcile_list.vshard
		AND (l2.in_flight <> coalesce(s.n, 0) OR l2.next_due = 'infinity');
	RETURN QUERY
	SELECT o.id, o.signer, a.tx_hash, a.inner_tx_hash, a.bump_no, a.envelope_xdr,
		a.source_sequence, a.max_time, a.fee, a.attempt_no, a.max_ledger, a.sent_after_ledger,
		o.attempts_base, o.kind, o.attempts
	FROM outbox.ops o
	LEFT JOIN outbox.attempts a ON a.op_id = o.id AND a.outcome = 'LIVE'
	WHERE o.vshard = reconcile_list.vshard AND o.status = 'SUBMITTED'
	ORDER BY o.id, a.bump_no;
END
$$;

-- ---------------------------------------------------------------------
-- The claim (0004) also returns, per op, attempts_base (the retry budget
-- restarts at an admin retry) and seq_high: the highest sequence number of
-- the signer that outboxd recorded for a transaction not proven dead (or an
-- operator acknowledged), so a worker that reads the account sees at once
-- when someone else used it. One index probe per claimed lane.
DROP FUNCTION outbox.claim(text, integer[], bigint[], integer, integer);
CREATE FUNCTION outbox.claim(owner text, vshards integer[], epochs bigint[],
	per_account_max integer, batch integer)
RETURNS TABLE (op_id bigint, vshard integer, signer text, kind text, priority smallint,
	user_id text, idempotency_key text, payload jsonb, attempts integer, fee_bumps integer,
	created_at timestamptz, attempts_base integer, seq_high bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	ln record;
	o record;
	taken integer := 0;
	room integer;
	got integer;
	ep bigint;
	st record;
	fut timestamptz;
	high bigint;
BEGIN
	PERFORM outbox.check_owner(claim.owner);
	IF vshards IS NULL OR epochs IS NULL OR cardinality(vshards) <> cardinality(epochs)
		OR cardinality(vshards) NOT BETWEEN 1 AND 4096 THEN
		PERFORM outbox.invalid_input('vshards', NULL,
			'and epochs must be non-empty arrays of equal length (at most 4096)');
	END IF;
	IF per_account_max IS NULL OR per_account_max NOT BETWEEN 1 AND 1000 THEN
		PERFORM outbox.invalid_input('per_account_max', per_account_max::text,
			'is not in 1..1000');
	END IF;
	IF batch IS NULL OR batch NOT BETWEEN 1 AND 10000 THEN
		PERFORM outbox.invalid_input('batch', batch::text, 'is not in 1..10000');
	END IF;
	FOR i IN 1 .. cardinality(vshards) LOOP
		PERFORM outbox.fence(claim.owner, vshards[i], epochs[i]);
	END LOOP;
	PERFORM outbox.lane_merge(vshards);

	FOR ln IN
		SELECT l.signer, l.vshard, l.in_flight, l.gen, l.seq_floor FROM outbox.lanes l
		WHERE l.vshard = ANY (vshards) AND l.pending_best IS NOT NULL
			AND l.next_due <= now()
		ORDER BY l.pending_best, l.next_due
		FOR NO KEY UPDATE SKIP LOCKED
	LOOP
		EXIT WHEN taken >= batch;
		IF ln.in_flight >= per_account_max THEN
			UPDATE outbox.lanes l SET next_due = 'infinity' WHERE l.signer = ln.signer;
			CONTINUE;
		END IF;
		room := LEAST(per_account_max - ln.in_flight, batch - taken);
		ep := epochs[array_position(vshards, ln.vshard)];
		got := 0;
		FOR o IN
			SELECT x.id, x.vshard, x.signer, x.kind, x.priority, x.user_id,
				x.idempotency_key, x.payload, x.attempts, x.fee_bumps, x.created_at,
				x.attempts_base
			FROM outbox.ops x
			WHERE x.signer = ln.signer AND x.status = 'PENDING'
				AND x.next_attempt_at <= now()
				AND (ln.in_flight = 0 OR x.claimed_epoch IS DISTINCT FROM ep)
				AND NOT EXISTS (SELECT 1 FROM outbox.held_users h WHERE h.user_id = x.user_id)
			ORDER BY x.priority, x.next_attempt_at, x.created_at
			LIMIT room
			FOR NO KEY UPDATE OF x SKIP LOCKED
		LOOP
			IF got = 0 THEN
				SELECT max(a.source_sequence) INTO high FROM outbox.attempts a
				WHERE a.source_account = ln.signer AND a.bump_no = 0
					AND a.outcome NOT IN ('EXPIRED', 'REJECTED');
				high := GREATEST(high, ln.seq_floor);
			END IF;
			got := got + 1;
			IF per_account_max > 1 THEN
				UPDATE outbox.ops x SET claimed_epoch = ep WHERE x.id = o.id;
			END IF;
			op_id := o.id; vshard := o.vshard; signer := o.signer; kind := o.kind;
			priority := o.priority; user_id := o.user_id;
			idempotency_key := o.idempotency_key; payload := o.payload;
			attempts := o.attempts; fee_bumps := o.fee_bumps; created_at := o.created_at;
			attempts_base := o.attempts_base; seq_high := high;
			RETURN NEXT;
		END LOOP;
		taken := taken + got;
		IF ln.in_flight + got >= per_account_max THEN
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got, next_due = 'infinity'
			WHERE l.signer = ln.signer;
		ELSIF got = room THEN
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got WHERE l.signer = ln.signer;
		ELSE
			-- Fewer ready ops than room: what is left is due later, or
			-- held, or locked by another transaction (re-check in 1 s),
			-- or nothing (clear the lane, gen-guarded).
			st := outbox.lane_best_due(ln.signer);
			IF st.best IS NOT NULL AND st.due <= now() THEN
				fut := outbox.lane_due_future(ln.signer);
				st.due := LEAST(now() + interval '1 second', fut);
			END IF;
			UPDATE outbox.lanes l SET in_flight = l.in_flight + got,
				pending_best = CASE WHEN l.gen = ln.gen THEN st.best ELSE l.pending_best END,
				next_due = CASE WHEN l.gen = ln.gen THEN st.due ELSE l.next_due END
			WHERE l.signer = ln.signer;
		END IF;
	END LOOP;
END
$$;

-- ---------------------------------------------------------------------
-- Admin.

-- admin_retry: FAILED or HELD -> PENDING, due now. Attempt numbers keep
-- growing (attempt rows stay unique); the retry budget restarts
-- (attempts_base = attempts). Refused for a HELD op that may have executed
-- (an attempt LANDED or CONFIRMED): resolve it with admin_resolve instead.
-- Retrying an op held because its signer's sequence number moved past
-- outboxd's records acknowledges that sequence number (lanes.seq_floor).
-- Returns the new status.
CREATE OR REPLACE FUNCTION outbox.admin_retry(op_id bigint, actor text) RETURNS text
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
	seen bigint;
BEGIN
	PERFORM outbox.check_actor(actor);
	op := outbox.op_lock(admin_retry.op_id, NULL);
	IF op.status NOT IN ('FAILED', 'HELD') THEN
		PERFORM outbox.refuse(op.id, 'admin_retry', op.status);
	END IF;
	IF op.status = 'HELD' AND EXISTS (SELECT 1 FROM outbox.attempts a
			WHERE a.op_id = op.id AND a.outcome IN ('LANDED', 'CONFIRMED')) THEN
		RAISE EXCEPTION 'op %: admin_retry refused: a transaction of it ran (or may have); resolve it with admin_resolve after checking the chain',
			op.id USING ERRCODE = 'OB409', COLUMN = 'status';
	END IF;
	IF op.status = 'HELD' THEN
		SELECT max((e.body ->> 'account_seq')::bigint) INTO seen FROM outbox.events e
		WHERE e.op_id = op.id AND e.type = 'HELD' AND jsonb_typeof(e.body -> 'account_seq') = 'number';
		IF seen IS NOT NULL THEN
			UPDATE outbox.lanes l SET seq_floor = GREATEST(l.seq_floor, seen)
			WHERE l.signer = op.signer;
		END IF;
	END IF;
	UPDATE outbox.ops o SET status = 'PENDING', next_attempt_at = now(),
		attempts_base = o.attempts, hold_reason = NULL, claimed_epoch = NULL, updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'ADMIN_RETRY', op.status, 'PENDING',
		jsonb_strip_nulls(jsonb_build_object('actor', actor, 'previous_attempts', op.attempts,
			'acknowledged_seq', seen)));
	INSERT INTO outbox.audit_log (actor, action, target, detail)
	VALUES (actor, 'op.retry', op.id::text,
		jsonb_strip_nulls(jsonb_build_object('from', op.status, 'to', 'PENDING',
			'previous_attempts', op.attempts, 'acknowledged_seq', seen)));
	INSERT INTO outbox.lane_signals (vshard, signer, priority, due)
	VALUES (op.vshard, op.signer, op.priority, now());
	RETURN 'PENDING';
END
$$;

-- admin_resolve: HELD -> CONFIRMED or FAILED, as an operator found it on
-- chain; note says how they know. Returns the new status.
CREATE FUNCTION outbox.admin_resolve(op_id bigint, outcome text, actor text, note text)
RETURNS text LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	op outbox.ops;
BEGIN
	PERFORM outbox.check_actor(actor);
	IF outcome IS NULL OR outcome NOT IN ('CONFIRMED', 'FAILED') THEN
		PERFORM outbox.invalid_input('outcome', outcome, 'is not CONFIRMED or FAILED');
	END IF;
	IF note IS NULL OR length(note) NOT BETWEEN 1 AND 2000 THEN
		PERFORM outbox.invalid_input('note', left(note, 100),
			'is not 1..2000 characters (say how the outcome was established)');
	END IF;
	op := outbox.op_lock(admin_resolve.op_id, NULL);
	IF op.status <> 'HELD' THEN
		PERFORM outbox.refuse(op.id, 'admin_resolve', op.status);
	END IF;
	UPDATE outbox.ops o SET status = outcome, hold_reason = NULL,
		confirmed_at = CASE WHEN outcome = 'CONFIRMED' THEN now() END,
		last_error = CASE WHEN outcome = 'FAILED' THEN left('resolved by ' || actor || ': ' || note, 2000)
			ELSE o.last_error END,
		updated_at = now()
	WHERE o.id = op.id;
	PERFORM outbox.event_add(op.id, 'RESOLVED', 'HELD', outcome,
		jsonb_build_object('by', actor, 'note', note));
	INSERT INTO outbox.audit_log (actor, action, target, detail)
	VALUES (actor, 'op.resolve', op.id::text,
		jsonb_build_object('from', 'HELD', 'to', outcome, 'note', note));
	RETURN outcome;
END
$$;
