-- mirror_business_row.sql - EXAMPLE (not a migration; embed.cmake only
-- globs schema/*.sql): mirror an op's terminal outcome onto the
-- application's own business row, in the same transaction as the outcome.
--
-- outboxd moves an op to CONFIRMED, FAILED or CANCELLED with one UPDATE of
-- outbox.ops.status (op_confirm, op_fail, admin_cancel). An AFTER UPDATE OF
-- status trigger on outbox.ops therefore runs inside that transaction: the
-- business row changes if and only if the outcome commits, and a rolled-back
-- outcome leaves it untouched. Keep the trigger cheap (one indexed UPDATE):
-- it runs on the dispatcher's hot path. An error in it aborts the outcome,
-- and the worker retries the outcome later, so never raise for "row not
-- found" - the op may belong to another kind of business record.
--
-- Adapt: app.withdrawals stands for your table; business_record_id is the
-- id you passed to outbox.enqueue(kind, user_id, business_record_id, ...).
-- An op can come back from FAILED (admin retry -> PENDING -> ... ->
-- CONFIRMED), so the mirror must accept a later CONFIRMED after a FAILED.

CREATE SCHEMA IF NOT EXISTS app;

CREATE TABLE IF NOT EXISTS app.withdrawals (
	id text PRIMARY KEY,
	user_id text NOT NULL,
	amount numeric NOT NULL,
	status text NOT NULL DEFAULT 'requested'
		CHECK (status IN ('requested', 'paid', 'failed', 'cancelled')),
	tx_hash text,
	settled_at timestamptz
);

CREATE OR REPLACE FUNCTION app.mirror_outbox_outcome() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.withdrawals w SET
		status = CASE NEW.status WHEN 'CONFIRMED' THEN 'paid'
			WHEN 'FAILED' THEN 'failed' ELSE 'cancelled' END,
		tx_hash = NEW.tx_hash,
		settled_at = now()
	WHERE w.id = NEW.business_record_id AND w.user_id = NEW.user_id;
	RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS app_mirror_outcome ON outbox.ops;
CREATE TRIGGER app_mirror_outcome
	AFTER UPDATE OF status ON outbox.ops
	FOR EACH ROW
	WHEN (NEW.status IN ('CONFIRMED', 'FAILED', 'CANCELLED')
		AND OLD.status IS DISTINCT FROM NEW.status
		AND NEW.kind = 'WITHDRAW')
	EXECUTE FUNCTION app.mirror_outbox_outcome();
