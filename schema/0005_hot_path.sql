-- 0005_hot_path.sql - cheaper updates of outbox.ops on the dispatch path.
--
-- PostgreSQL evaluates EVERY CHECK constraint of a row on EVERY update, even
-- when the update touches none of the checked columns. The identity checks
-- of 0001 (user_id and business_record_id without control characters, the
-- signer's StrKey shape, the payload being an object, the idempotency key's
-- composition) are regular expressions and a jsonb read: bench_dispatch's
-- single-row measurement put them at ~90 of ~160 microseconds per update,
-- and an op is updated three times on its way to CONFIRMED (claim stamp,
-- attempt_record, op_confirm).
--
-- These columns are the op's identity and never change after enqueue: a
-- changed signer, payload or key would be a different payment. So the same
-- invariants move to triggers that run only when they can matter:
--   * ops_identity_insert (BEFORE INSERT) checks exactly what the dropped
--     constraints checked, and fails with SQLSTATE 23514 (check_violation)
--     naming the column, so a direct INSERT that bypasses outbox.enqueue is
--     held to the same rules;
--   * ops_identity_frozen (BEFORE UPDATE OF those columns, only when one of
--     them really changes) refuses the update with OB409: an op's identity
--     is immutable, which is stronger than the CHECKs were.
-- The cheap checks (enums, ranges, status-dependent ones, tx_hash, which the
-- dispatcher does change) stay declarative CHECK constraints.

CREATE FUNCTION outbox.ops_identity_check() RETURNS trigger
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

CREATE TRIGGER ops_identity_insert BEFORE INSERT ON outbox.ops
	FOR EACH ROW EXECUTE FUNCTION outbox.ops_identity_check();

CREATE TRIGGER ops_identity_frozen
	BEFORE UPDATE OF idempotency_key, kind, user_id, business_record_id, signer, vshard, payload
	ON outbox.ops
	FOR EACH ROW WHEN (NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
		OR NEW.kind IS DISTINCT FROM OLD.kind
		OR NEW.user_id IS DISTINCT FROM OLD.user_id
		OR NEW.business_record_id IS DISTINCT FROM OLD.business_record_id
		OR NEW.signer IS DISTINCT FROM OLD.signer
		OR NEW.vshard IS DISTINCT FROM OLD.vshard
		OR NEW.payload IS DISTINCT FROM OLD.payload)
	EXECUTE FUNCTION outbox.ops_identity_check();

ALTER TABLE outbox.ops
	DROP CONSTRAINT ops_user_id_check,
	DROP CONSTRAINT ops_business_record_id_check,
	DROP CONSTRAINT ops_signer_check,
	DROP CONSTRAINT ops_payload_check,
	DROP CONSTRAINT ops_idempotency_key_check,
	DROP CONSTRAINT ops_check1;

-- The lane lookups (lane_best_due, lane_due_future) probe one signer's
-- range of ops_signer_pending_idx, which yields each priority's ops in
-- next_attempt_at order. PL/pgSQL caches a generic plan per session, costed
-- with the statistics of that moment; bench_dispatch caught sessions whose
-- cached plan answered "priority = 0" through ops_claim_idx instead (the
-- statistics knew no CRITICAL op, so that looked free), but vshard leads
-- that index, so each probe read every PENDING op and then sorted: ~97 ms
-- per call behind a 20 000-op backlog, and confirmations crawled. With
-- sorting disabled for these two functions only the signer index, which
-- needs no sort, is ever chosen, whatever the statistics or the plan cache
-- hold (and the calls measured faster: ~100 against ~150 microseconds).
ALTER FUNCTION outbox.lane_best_due(text) SET enable_sort = off;
ALTER FUNCTION outbox.lane_due_future(text) SET enable_sort = off;
