-- 0022_status_trigger.sql - one trigger function, without a WHEN clause,
-- for everything an op's status move must do; the same for an attempt's
-- outcome.
--
-- Why. A trigger's WHEN clause is stored as a node tree in text, and
-- PostgreSQL parses it back and compiles it for every statement that fires
-- the trigger (as it did the CHECKs 0021 replaced). An op's status move
-- fired four of them (ops_status_legal, ops_no_live_attempt before the row
-- is written; ops_notify_done and ops_wake_requeue after), an attempt's
-- outcome one, and an op moves twice on its way to CONFIRMED: after 0021,
-- perf of bench_dispatch's backends put 5% of their samples in parsing
-- those WHEN clauses. A PL/pgSQL function is compiled once per session.
--
-- What holds, unchanged:
--   * the lifecycle: the moves common/lifecycle.c allows, the expression of
--     0007 (check_dispatch_sql's status_trigger_is_the_lifecycle compares
--     every pair; it still switches the check off by the trigger's name);
--   * an op leaves SUBMITTED only when none of its attempts is LIVE (0007);
--   * NOTIFY outbox_done '<op id>' when an op becomes CONFIRMED, FAILED,
--     CANCELLED or HELD, and NOTIFY outbox_wake '<vshard>' when a CRITICAL op
--     becomes PENDING and due through an update (0003, 0004, 0007). They are
--     now queued before the row is written instead of after: a NOTIFY is
--     delivered at commit either way, and is dropped with the (sub)transaction
--     if the statement fails afterwards (a broken row rule, a unique index);
--   * an attempt's outcome is decided once, from LIVE; afterwards only what a
--     ledger showed (CONFIRMED or FAILED) may overrule it (0007).
-- The error codes and messages are those of 0004 and 0007.

CREATE FUNCTION outbox.ops_status_moved() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	-- (this check first: 0007's triggers fired in this order, by name)
	IF OLD.status = 'SUBMITTED' AND NEW.status <> 'SUBMITTED' AND EXISTS (SELECT 1
			FROM outbox.attempts a WHERE a.op_id = NEW.id AND a.outcome = 'LIVE') THEN
		RAISE EXCEPTION 'op %: cannot move % -> %: an attempt is still LIVE (it could land)',
			NEW.id, OLD.status, NEW.status USING ERRCODE = 'OB409', COLUMN = 'status';
	END IF;
	IF NOT ((OLD.status = 'PENDING'
				AND NEW.status IN ('PENDING', 'SUBMITTED', 'FAILED', 'CANCELLED', 'HELD'))
			OR (OLD.status = 'SUBMITTED'
				AND NEW.status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'HELD'))
			OR (OLD.status = 'FAILED' AND NEW.status IN ('PENDING', 'HELD'))
			OR (OLD.status = 'CANCELLED' AND NEW.status = 'HELD')
			OR (OLD.status = 'HELD' AND NEW.status IN ('PENDING', 'CONFIRMED', 'FAILED'))) THEN
		RAISE EXCEPTION 'op %: illegal status move % -> %', OLD.id, OLD.status, NEW.status
			USING ERRCODE = 'OB409', COLUMN = 'status';
	END IF;
	IF NEW.status IN ('CONFIRMED', 'FAILED', 'CANCELLED', 'HELD')
			AND OLD.status IS DISTINCT FROM NEW.status THEN
		PERFORM pg_notify('outbox_done', NEW.id::text);
	ELSIF NEW.priority = 0 AND NEW.status = 'PENDING' AND OLD.status <> 'PENDING'
			AND NEW.next_attempt_at <= now() THEN
		PERFORM pg_notify('outbox_wake', NEW.vshard::text);
	END IF;
	RETURN NEW;
END
$$;

CREATE FUNCTION outbox.attempts_outcome_moved() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF NOT (OLD.outcome = NEW.outcome
			OR OLD.outcome = 'LIVE'
			OR (OLD.outcome IN ('LANDED', 'EXPIRED', 'REJECTED', 'SUPERSEDED')
				AND NEW.outcome IN ('CONFIRMED', 'FAILED'))) THEN
		RAISE EXCEPTION 'attempt %: illegal outcome move % -> %', OLD.tx_hash, OLD.outcome,
			NEW.outcome USING ERRCODE = 'OB409', COLUMN = 'outcome';
	END IF;
	RETURN NEW;
END
$$;

DROP TRIGGER ops_status_legal ON outbox.ops;
DROP TRIGGER ops_no_live_attempt ON outbox.ops;
DROP TRIGGER ops_notify_done ON outbox.ops;
DROP TRIGGER ops_wake_requeue ON outbox.ops;
DROP TRIGGER attempts_outcome_legal ON outbox.attempts;
DROP FUNCTION outbox.status_move_refused();
DROP FUNCTION outbox.op_live_refused();
DROP FUNCTION outbox.notify_done();
DROP FUNCTION outbox.attempt_move_refused();

CREATE TRIGGER ops_status_legal BEFORE UPDATE OF status ON outbox.ops
	FOR EACH ROW EXECUTE FUNCTION outbox.ops_status_moved();
CREATE TRIGGER attempts_outcome_legal BEFORE UPDATE OF outcome ON outbox.attempts
	FOR EACH ROW EXECUTE FUNCTION outbox.attempts_outcome_moved();
