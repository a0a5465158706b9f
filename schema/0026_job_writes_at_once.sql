-- 0026_job_writes_at_once.sql - a worker records the landings of many ops,
-- and the write-ahead rows of many new transactions, in one statement each.
--
-- Why. A ledger confirms the transactions of many ops at once, and the
-- worker settles each with its own op_landed call (0007, 0018): a fence, a
-- lock of the op, a read and an UPDATE of its attempt, an UPDATE of the op
-- with its event, and lane_settle, itself three statements. Group commit
-- (common/pgq.h) shares the commit among them, not the per-statement work:
-- bench_dispatch's throughput phase measured op_landed at ~1.0 ms of
-- statement time per confirmed op, half of all the statement time.
--
-- What. outbox.ops_landed takes op_landed's parameters as arrays, the i-th
-- element of each being one call, and does the work of them all with
-- set-based statements: one fence of every (vshard, epoch) named
-- (fence_all, 0024), one lock of the ops in id order, one check, one UPDATE
-- of the attempts, one of the superseded fee bumps, one UPDATE of the ops
-- with one INSERT of their events (in call order), and one UPDATE of the
-- lanes: lane_settle for each signer with the count of its ops. The
-- promise: the effect of op_landed(owners[i], vshards[i], ...) for i = 1..n
-- in that order, or an error and nothing written. It takes only the common case, every op
-- SUBMITTED in its vshard with that LIVE attempt, each op once; anything
-- else (a replay, a refusal, a malformed value) raises, and the caller runs
-- the calls one by one, which give each its own verdict. pgq merges
-- consecutive op_landed commands of a batch into this call and does exactly
-- that on an error (pgq_send_merge in common/pgq.h).
--
-- Why the same effect. Each landing touches only its op's row, its op's
-- attempts and its event; the lanes are the one thing two landings share,
-- and lane_settle(s, k) once after all the ops moved equals k calls of
-- lane_settle(s, 1) spread among them: in_flight falls by k (floored at 0
-- either way), and pending_best and next_due are computed from the ops as
-- the last call sees them, which is the state after all of them.
-- Tests: check_dispatch_sql's ops_landed_at_once (outcomes of every kind,
-- fee-bumped ops, two ops of one signer: rows equal to op_landed's one by
-- one; every refusal writes nothing) and check_pgq's merged commands.

-- What both set forms do first: their arrays are one call each (lens: the
-- cardinalities of the arrays besides these four), every call is the same
-- worker's and about another op; every (vshard, epoch) named is fenced
-- (fence_all) and the ops are locked in id order, so two statements that
-- lock several ops never deadlock on each other. Returns how many calls.
CREATE FUNCTION outbox.set_form_begin(owners text[], vshards integer[], epochs bigint[],
	op_ids bigint[], lens integer[])
RETURNS integer LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
	n integer := cardinality(op_ids);
	vs integer[];
	es bigint[];
BEGIN
	IF n IS NULL OR n NOT BETWEEN 1 AND 1000
			OR cardinality(owners) IS DISTINCT FROM n OR cardinality(vshards) IS DISTINCT FROM n
			OR cardinality(epochs) IS DISTINCT FROM n
			OR EXISTS (SELECT 1 FROM unnest(lens) l WHERE l IS DISTINCT FROM n) THEN
		PERFORM outbox.invalid_input('op_ids', NULL,
			'and every other array must have one length 1..1000');
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(owners) o WHERE o IS DISTINCT FROM owners[1]) THEN
		PERFORM outbox.invalid_input('owners', NULL, 'must all be the same worker');
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(op_ids) i GROUP BY i HAVING i IS NULL OR count(*) > 1) THEN
		PERFORM outbox.invalid_input('op_ids', NULL, 'must be distinct');
	END IF;
	SELECT array_agg(d.v ORDER BY d.v, d.e), array_agg(d.e ORDER BY d.v, d.e) INTO vs, es
	FROM (SELECT DISTINCT u.v, u.e FROM unnest(vshards, epochs) u (v, e)) d;
	PERFORM outbox.fence_all(owners[1], vs, es);
	PERFORM 1 FROM outbox.ops o WHERE o.id = ANY (op_ids) ORDER BY o.id FOR NO KEY UPDATE;
	RETURN n;
END
$$;

CREATE FUNCTION outbox.ops_landed(owners text[], vshards integer[], epochs bigint[],
	op_ids bigint[], tx_hashes text[], ledgers integer[], fees_charged bigint[],
	result_codes text[], errors text[], retry_delays_ms integer[], vias text[])
RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
	n integer;
	got integer;
BEGIN
	n := outbox.set_form_begin(owners, vshards, epochs, op_ids, ARRAY[cardinality(tx_hashes),
		cardinality(ledgers), cardinality(fees_charged), cardinality(result_codes),
		cardinality(errors), cardinality(retry_delays_ms), cardinality(vias)]);
	FOR i IN 1 .. n LOOP
		IF result_codes[i] IS NOT NULL THEN
			PERFORM outbox.check_result_code(result_codes[i]);
		END IF;
		IF retry_delays_ms[i] IS NOT NULL THEN
			PERFORM outbox.check_delay(retry_delays_ms[i]);
		END IF;
	END LOOP;

	-- Scalar subqueries, which PostgreSQL never turns into joins: one probe
	-- by key per op. As joins, the generic plan walked every SUBMITTED op.
	SELECT count(*) INTO got
	FROM unnest(op_ids, vshards, tx_hashes) u (id, v, h)
	WHERE (SELECT o.vshard = u.v AND o.status = 'SUBMITTED' FROM outbox.ops o
			WHERE o.id = u.id)
		AND (SELECT a.op_id = u.id AND a.outcome = 'LIVE' FROM outbox.attempts a
			WHERE a.tx_hash = u.h);
	IF got <> n THEN
		RAISE EXCEPTION 'ops_landed: % of % ops are not SUBMITTED in their vshard with that '
			'LIVE attempt; land them one by one', n - got, n
			USING ERRCODE = 'OB409', COLUMN = 'op_ids';
	END IF;

	UPDATE outbox.attempts a SET
		outcome = CASE WHEN u.code IS NULL THEN 'CONFIRMED' ELSE 'FAILED' END,
		result_code = u.code, landed_ledger = u.ledger, decided_at = now()
	FROM unnest(tx_hashes, result_codes, ledgers) u (h, code, ledger)
	WHERE a.tx_hash = u.h;
	UPDATE outbox.attempts a SET outcome = 'SUPERSEDED', decided_at = now()
	FROM outbox.ops o
	WHERE o.id = ANY (op_ids) AND o.fee_bumps > 0 AND a.op_id = o.id AND a.outcome = 'LIVE';

	WITH u AS (
		SELECT x.*, CASE WHEN x.code IS NULL THEN 'CONFIRMED'
				WHEN x.delay IS NULL THEN 'FAILED' ELSE 'PENDING' END AS to_s
		FROM unnest(op_ids, tx_hashes, ledgers, fees_charged, result_codes, errors,
			retry_delays_ms, vias) WITH ORDINALITY x (id, h, ledger, fee, code, err, delay,
			via, k)),
	o AS (
		UPDATE outbox.ops o SET status = u.to_s,
			tx_hash = CASE WHEN u.to_s = 'CONFIRMED' THEN u.h ELSE o.tx_hash END,
			confirmed_at = CASE WHEN u.to_s = 'CONFIRMED' THEN now() ELSE o.confirmed_at END,
			next_attempt_at = CASE WHEN u.to_s = 'PENDING'
				THEN now() + make_interval(secs => u.delay / 1000.0)
				ELSE o.next_attempt_at END,
			last_error = CASE WHEN u.to_s = 'CONFIRMED' THEN o.last_error
				ELSE left(coalesce(u.err, 'failed on chain'), 2000) END,
			claimed_epoch = CASE WHEN u.to_s = 'CONFIRMED' THEN o.claimed_epoch END,
			updated_at = now(), event_seq = o.event_seq + 1
		FROM u
		WHERE o.id = u.id
		RETURNING o.id, o.event_seq, u.h, u.ledger, u.fee, u.code, u.err, u.delay, u.via,
			u.k, u.to_s)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq,
		CASE o.to_s WHEN 'PENDING' THEN 'RETRY_SCHEDULED' ELSE o.to_s END,
		'SUBMITTED', o.to_s,
		jsonb_strip_nulls(jsonb_build_object('tx_hash', o.h, 'ledger', o.ledger,
			'fee_charged', o.fee, 'result_code', o.code, 'error', left(o.err, 2000),
			'delay_ms', o.delay, 'via', o.via))
	FROM o ORDER BY o.k;

	-- lane_settle for every signer at once: the lanes locked in signer
	-- order, then each one's best and due read once (lane_best_due, after
	-- every op moved) and written with its in_flight less its ops.
	PERFORM 1 FROM outbox.lanes l
	WHERE l.signer = ANY (ARRAY(SELECT o.signer FROM outbox.ops o WHERE o.id = ANY (op_ids)))
	ORDER BY l.signer FOR NO KEY UPDATE;
	UPDATE outbox.lanes l SET in_flight = GREATEST(l.in_flight - s.k, 0),
		pending_best = (s.st).best, next_due = (s.st).due
	FROM (SELECT o.signer, count(*)::integer AS k, outbox.lane_best_due(o.signer) AS st
		FROM outbox.ops o WHERE o.id = ANY (op_ids) GROUP BY o.signer) s
	WHERE l.signer = s.signer;
END
$$;

-- outbox.attempts_record: attempt_record's arrays, the same way. It takes
-- only the common case, a new inner transaction (bump_no 0) for an op that
-- is PENDING in its vshard, signed by the op's signer, numbered above its
-- attempts, with no LIVE attempt and a sequence number no other live
-- transaction holds, each op once; it returns RECORDED, what attempt_record
-- returns for each of them. Anything else (a fee bump, an op cancelled or
-- HELD under the claim: GONE, a refusal) raises, and the calls go one by
-- one. Two transactions of the batch with one sequence number break
-- attempts_account_sequence, which raises too.
CREATE FUNCTION outbox.attempts_record(owners text[], vshards integer[], epochs bigint[],
	op_ids bigint[], attempt_nos integer[], bump_nos integer[], tx_hashes text[],
	inner_tx_hashes text[], envelopes_xdr text[], source_accounts text[],
	source_sequences bigint[], max_times bigint[], fees bigint[], max_ledgers integer[],
	sent_after_ledgers integer[])
RETURNS text LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
	n integer;
	got integer;
BEGIN
	n := outbox.set_form_begin(owners, vshards, epochs, op_ids, ARRAY[cardinality(attempt_nos),
		cardinality(bump_nos), cardinality(tx_hashes), cardinality(inner_tx_hashes),
		cardinality(envelopes_xdr), cardinality(source_accounts),
		cardinality(source_sequences), cardinality(max_times), cardinality(fees),
		cardinality(max_ledgers), cardinality(sent_after_ledgers)]);
	IF EXISTS (SELECT 1 FROM unnest(bump_nos, attempt_nos) u (b, a)
			WHERE b IS DISTINCT FROM 0 OR a IS NULL) THEN
		PERFORM outbox.invalid_input('bump_nos', NULL,
			'must all be 0 (new transactions), each with its attempt_no; '
			|| 'record fee bumps one by one');
	END IF;
	-- What attempt_record checks before its INSERT, by one probe by key per
	-- op and check: scalar subqueries, which are never turned into joins. As
	-- NOT EXISTS, the generic plan was an anti join that read every bound
	-- sequence number (attempts_account_sequence) for each op: 5 ms per op
	-- in bench_dispatch.
	SELECT count(*) INTO got
	FROM unnest(op_ids, vshards, attempt_nos, source_accounts, source_sequences)
		u (id, v, a, acct, sq)
	WHERE (SELECT o.vshard = u.v AND o.status = 'PENDING' AND o.signer = u.acct
				AND u.a > o.attempts
			FROM outbox.ops o WHERE o.id = u.id)
		AND (SELECT true FROM outbox.attempts a
			WHERE a.op_id = u.id AND a.outcome = 'LIVE' LIMIT 1) IS NULL
		AND (SELECT true FROM outbox.attempts a
			WHERE a.source_account = u.acct AND a.source_sequence = u.sq AND a.bump_no = 0
				AND a.outcome NOT IN ('EXPIRED', 'REJECTED') LIMIT 1) IS NULL;
	IF got <> n THEN
		RAISE EXCEPTION 'attempts_record: % of % ops cannot take a new transaction as given; '
			'record them one by one', n - got, n
			USING ERRCODE = 'OB409', COLUMN = 'op_ids';
	END IF;

	INSERT INTO outbox.attempts (op_id, attempt_no, bump_no, tx_hash, inner_tx_hash,
		envelope_xdr, source_account, source_sequence, max_time, fee, max_ledger,
		sent_after_ledger)
	SELECT u.id, u.a, 0, u.h, u.ih, u.env, u.acct, u.sq, u.mt, u.fee, u.ml, u.sa
	FROM unnest(op_ids, attempt_nos, tx_hashes, inner_tx_hashes, envelopes_xdr,
		source_accounts, source_sequences, max_times, fees, max_ledgers, sent_after_ledgers)
		WITH ORDINALITY u (id, a, h, ih, env, acct, sq, mt, fee, ml, sa, k)
	ORDER BY u.k;
	WITH u AS (
		SELECT * FROM unnest(op_ids, attempt_nos, tx_hashes, source_sequences, max_times, fees,
			max_ledgers) WITH ORDINALITY x (id, a, h, sq, mt, fee, ml, k)),
	o AS (
		UPDATE outbox.ops o SET status = 'SUBMITTED', attempts = u.a, tx_hash = u.h,
			claimed_epoch = NULL, updated_at = now(), event_seq = o.event_seq + 1
		FROM u
		WHERE o.id = u.id
		RETURNING o.id, o.event_seq, u.a, u.h, u.sq, u.mt, u.fee, u.ml, u.k)
	INSERT INTO outbox.events (op_id, seq, type, from_status, to_status, body)
	SELECT o.id, o.event_seq, 'SUBMITTED', 'PENDING', 'SUBMITTED',
		jsonb_strip_nulls(jsonb_build_object('attempt_no', o.a, 'tx_hash', o.h, 'fee', o.fee,
			'source_sequence', o.sq, 'max_time', o.mt, 'max_ledger', o.ml))
	FROM o ORDER BY o.k;
	RETURN 'RECORDED';
END
$$;
