-- 0016_hot_path_fence_attempts.sql - less PostgreSQL work per dispatched op:
-- the fence probed once per lease per transaction, always by index; the
-- identity columns of outbox.attempts checked once, on insert; one index of
-- attempts that no lookup needs dropped.
--
-- 1. The fence. Every write of the hot path calls outbox.fence first, and
--    group commit (common/pgq.h) puts several job writes of one data
--    connection in one transaction, so an op paid for 4-6 probes of the lease
--    row. Once a transaction holds the lease row FOR KEY SHARE with an epoch,
--    a later probe of the same (vshard, owner, epoch) in that transaction
--    cannot answer differently where it matters:
--      * the lock lasts until commit, and a takeover or re-acquire by another
--        owner (lease_acquire's ON CONFLICT UPDATE names owner and epoch, the
--        key columns) waits for it, so no other owner can write the vshard
--        before this transaction ends;
--      * `expires_at > now()` compares with the transaction's start time, the
--        same now() at every probe; only a release or a renewal by another
--        transaction of the same owner (a no-key update, which does not wait)
--        could change what a re-probe reads, and neither lets anyone else in.
--    So fence keeps a transaction-local memo of the leases it has locked
--    (set_config(..., true)): the owner once, then each vshard:epoch. A
--    subtransaction that rolls back (a savepoint, a PL/pgSQL exception block)
--    reverts the memo entries it set exactly as it releases the row locks
--    taken inside it, so the memo never names a lease whose lock is gone.
--    Any change of a lease row by this same transaction (acquire, renew,
--    release, a direct UPDATE, DELETE or TRUNCATE) clears the memo
--    (shard_leases_fence_memo), so the next fence probes the row again.
--    The probe itself (fence_lock) runs with sequential scans disabled: the
--    shard_leases table is a page or two, and a generic plan cached by a
--    worker session flipped between the index and a sequential scan that read
--    every lease row (273 rows per op in issue 13's measurement).
--
-- 2. outbox.attempts' identity. PostgreSQL evaluates every CHECK constraint
--    of a row on every UPDATE, and an attempt's row is updated once more when
--    its outcome is known: the regular expressions on tx_hash, inner_tx_hash,
--    envelope_xdr and source_account (~11-12 us each) ran again for nothing.
--    As 0005 did for outbox.ops: attempts_identity_insert (BEFORE INSERT)
--    checks the same rules and fails with SQLSTATE 23514 (check_violation)
--    naming the column and the constraint the CHECK had; attempts_identity_
--    frozen (BEFORE UPDATE OF those columns, only when one really changes)
--    refuses with OB409: a recorded envelope is what was signed and maybe
--    sent, and rewriting it would break the write-ahead proof. The outcome
--    UPDATEs name none of those columns, so they run no trigger and no regex.
--    The cheap CHECKs stay (outcome values, decided_at set exactly when the
--    outcome is decided, the numeric ranges, inner hash = hash for bump 0).
--
-- 3. attempts_inner_hash_idx (0001, on inner_tx_hash) is read by no lookup
--    since 0015: attempt_record reads the fee bump's inner transaction by its
--    hash (the unique tx_hash index); attempt_decide's update of an inner
--    transaction's fee bumps starts from op_id (the unique (op_id, attempt_no,
--    bump_no) index); reconcile_list and the admin views read inner_tx_hash
--    from rows found by op_id. Every attempt row wrote an entry into it.
--
-- Measured on the shared 2-core machine (a database with a 20 000-op
-- backlog and 64 leases; microbenchmarks are PL/pgSQL loops, best of 3-4):
--   * a fence: 0006's 9.6-10.6 us (its plan there: a sequential scan of the
--     lease rows); fence_lock by index 4.5 us (8.5 us without the SET
--     clause, a sequential scan); a memo hit 2.8 us, a miss ~7.7 us;
--   * an UPDATE of an attempt's non-identity column 121 -> 78 us, an INSERT
--     of an attempt ~150 -> ~115 us (load 10-12);
--   * shared buffers per call (EXPLAIN ANALYZE BUFFERS, steady state):
--     attempt_record 63.3 -> 62.3, op_confirm 96.9 -> 95.7 (one call per
--     transaction) and 101.4 -> 98.4 (three per transaction), attempt_decide
--     35.7 -> 32.2.

-- ---------------------------------------------------------------------
-- 1. The fence.

-- fence_lock: the probe. True when the lease is held by owner with epoch and
-- not expired at the transaction's start; the row is then locked FOR KEY
-- SHARE until commit. Sequential scans off: an index probe whatever plan the
-- session caches.
CREATE FUNCTION outbox.fence_lock(owner text, vshard integer, epoch bigint)
RETURNS boolean LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
	PERFORM 1 FROM outbox.shard_leases l
	WHERE l.vshard = fence_lock.vshard AND l.owner = fence_lock.owner
		AND l.epoch = fence_lock.epoch AND l.expires_at > now()
	FOR KEY SHARE;
	RETURN FOUND;
END
$$;

-- fence: as 0006 (same promise, same error), probing the lease row only the
-- first time a transaction fences this (owner, vshard, epoch). The memo is
-- '<length(owner)>:<owner>|' followed by '<vshard>:<epoch>|' per lease: the
-- length prefix makes the owner part unambiguous whatever characters the
-- owner has, and the rest holds only digits, ':' and '|'. Another owner in
-- the same transaction (tests, tools) starts a new memo. Only fence writes
-- outbox.fenced; a session that set it by hand would bypass the fence as
-- surely as one that wrote the tables directly, which the fence never
-- guarded against (it stops a worker that lost its lease without knowing).
CREATE OR REPLACE FUNCTION outbox.fence(owner text, vshard integer, epoch bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	memo text := current_setting('outbox.fenced', true);
	head text := length(fence.owner) || ':' || fence.owner || '|';
	entry text := fence.vshard || ':' || fence.epoch || '|';
BEGIN
	IF starts_with(memo, head)
			AND strpos('|' || substr(memo, length(head) + 1), '|' || entry) > 0 THEN
		RETURN;
	END IF;
	IF NOT coalesce(outbox.fence_lock(fence.owner, fence.vshard, fence.epoch), false) THEN
		RAISE EXCEPTION 'fence: vshard % is not leased to owner % with epoch %',
			fence.vshard, outbox.quote_value(fence.owner), fence.epoch
			USING ERRCODE = 'OB403';
	END IF;
	IF NOT coalesce(starts_with(memo, head), false) THEN
		memo := head;
	END IF;
	-- Bounded (~200 leases): a claim over thousands of vshards would copy and
	-- search an ever longer string; past the bound a fence just probes.
	IF length(memo) < 2048 THEN
		PERFORM set_config('outbox.fenced', memo || entry, true);
	END IF;
END
$$;

-- A lease row changed by this transaction: its memo no longer stands.
CREATE FUNCTION outbox.fence_memo_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('outbox.fenced', '', true);
	RETURN NULL;
END
$$;

CREATE TRIGGER shard_leases_fence_memo AFTER UPDATE OR DELETE OR TRUNCATE ON outbox.shard_leases
	FOR EACH STATEMENT EXECUTE FUNCTION outbox.fence_memo_clear();

-- ---------------------------------------------------------------------
-- 2. outbox.attempts' identity: checked on insert, frozen after.

CREATE FUNCTION outbox.attempts_identity_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	col text;
	problem text;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		col := CASE
			WHEN NEW.op_id IS DISTINCT FROM OLD.op_id THEN 'op_id'
			WHEN NEW.attempt_no IS DISTINCT FROM OLD.attempt_no THEN 'attempt_no'
			WHEN NEW.bump_no IS DISTINCT FROM OLD.bump_no THEN 'bump_no'
			WHEN NEW.tx_hash IS DISTINCT FROM OLD.tx_hash THEN 'tx_hash'
			WHEN NEW.inner_tx_hash IS DISTINCT FROM OLD.inner_tx_hash THEN 'inner_tx_hash'
			WHEN NEW.envelope_xdr IS DISTINCT FROM OLD.envelope_xdr THEN 'envelope_xdr'
			WHEN NEW.source_account IS DISTINCT FROM OLD.source_account THEN 'source_account'
			WHEN NEW.source_sequence IS DISTINCT FROM OLD.source_sequence
				THEN 'source_sequence'
			WHEN NEW.max_time IS DISTINCT FROM OLD.max_time THEN 'max_time'
			WHEN NEW.fee IS DISTINCT FROM OLD.fee THEN 'fee'
			WHEN NEW.max_ledger IS DISTINCT FROM OLD.max_ledger THEN 'max_ledger'
			WHEN NEW.sent_after_ledger IS DISTINCT FROM OLD.sent_after_ledger
				THEN 'sent_after_ledger'
			ELSE 'submitted_at' END;
		RAISE EXCEPTION 'attempt %: % cannot change once recorded (a recorded envelope is immutable)',
			OLD.tx_hash, col USING ERRCODE = 'OB409', COLUMN = col;
	END IF;
	-- The rules of 0001's CHECKs, without bounded repetitions; NULLs pass
	-- here as they passed a CHECK (NOT NULL refuses them after the trigger).
	IF NOT (length(NEW.tx_hash) = 64 AND NEW.tx_hash !~ '[^0-9a-f]') THEN
		col := 'tx_hash';
		problem := 'is not 64 lowercase hex digits';
	ELSIF NOT (length(NEW.inner_tx_hash) = 64 AND NEW.inner_tx_hash !~ '[^0-9a-f]') THEN
		col := 'inner_tx_hash';
		problem := 'is not 64 lowercase hex digits';
	ELSIF NOT (length(NEW.envelope_xdr) BETWEEN 4 AND 1000000
			AND length(NEW.envelope_xdr) % 4 = 0
			AND NEW.envelope_xdr ~ '^[A-Za-z0-9+/]+(=|==)?$') THEN
		col := 'envelope_xdr';
		problem := 'is not base64 of 4..1000000 characters';
	ELSIF NOT (length(NEW.source_account) = 56 AND left(NEW.source_account, 1) = 'G'
			AND NEW.source_account ~ '^[A-Z2-7]+$') THEN
		col := 'source_account';
		problem := 'is not a G... account id';
	END IF;
	IF problem IS NOT NULL THEN
		RAISE EXCEPTION 'new row for relation "attempts" violates check constraint "attempts_%_check": % %',
			col, col, problem
			USING ERRCODE = 'check_violation', COLUMN = col, TABLE = 'attempts',
				SCHEMA = 'outbox', CONSTRAINT = 'attempts_' || col || '_check';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER attempts_identity_insert BEFORE INSERT ON outbox.attempts
	FOR EACH ROW EXECUTE FUNCTION outbox.attempts_identity_check();

CREATE TRIGGER attempts_identity_frozen
	BEFORE UPDATE OF op_id, attempt_no, bump_no, tx_hash, inner_tx_hash, envelope_xdr,
		source_account, source_sequence, max_time, fee, max_ledger, sent_after_ledger,
		submitted_at
	ON outbox.attempts
	FOR EACH ROW WHEN ((NEW.op_id, NEW.attempt_no, NEW.bump_no, NEW.tx_hash, NEW.inner_tx_hash,
			NEW.envelope_xdr, NEW.source_account, NEW.source_sequence, NEW.max_time, NEW.fee,
			NEW.max_ledger, NEW.sent_after_ledger, NEW.submitted_at)
		IS DISTINCT FROM (OLD.op_id, OLD.attempt_no, OLD.bump_no, OLD.tx_hash,
			OLD.inner_tx_hash, OLD.envelope_xdr, OLD.source_account, OLD.source_sequence,
			OLD.max_time, OLD.fee, OLD.max_ledger, OLD.sent_after_ledger, OLD.submitted_at))
	EXECUTE FUNCTION outbox.attempts_identity_check();

ALTER TABLE outbox.attempts
	DROP CONSTRAINT attempts_tx_hash_check,
	DROP CONSTRAINT attempts_inner_tx_hash_check,
	DROP CONSTRAINT attempts_envelope_xdr_check,
	DROP CONSTRAINT attempts_source_account_check;

-- ---------------------------------------------------------------------
-- 3. An index no lookup reads.

DROP INDEX outbox.attempts_inner_hash_idx;
