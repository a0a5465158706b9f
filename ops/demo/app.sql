-- ops/demo/app.sql - the demo application's own tables, beside outboxd's.
--
-- app.payments is the business row of every money movement the demo's core
-- application makes: the load driver (ops/demo/app.c) inserts it in the same
-- transaction as outbox.enqueue(), and the trigger below mirrors the op's
-- outcome onto it in the transaction that decides the outcome
-- (schema/examples/mirror_business_row.sql explains the pattern). So a row
-- is 'paid' exactly when its op is CONFIRMED, and the demo's summary checks
-- that every row agrees with its op.
--
-- demo.samples and demo.marks are the demo's own record of the run (one
-- sample a second from the load driver, one mark per injected fault), read
-- by outbox-demo-report for its charts.

CREATE SCHEMA app;

CREATE TABLE app.payments (
	kind text NOT NULL,
	user_id text NOT NULL,
	record_id text NOT NULL,
	amount numeric NOT NULL CHECK (amount > 0),
	account text,
	op_id bigint NOT NULL UNIQUE,
	status text NOT NULL DEFAULT 'requested'
		CHECK (status IN ('requested', 'paid', 'failed', 'cancelled')),
	tx_hash text,
	requested_at timestamptz NOT NULL DEFAULT now(),
	settled_at timestamptz,
	-- the op's idempotency key is kind:user_id:record_id: one row per op
	PRIMARY KEY (kind, user_id, record_id)
);

CREATE FUNCTION app.mirror_outbox_outcome() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	-- One indexed UPDATE: this runs inside the worker's transaction. A
	-- missing row is not an error (ops enqueued by other services have none).
	UPDATE app.payments p SET
		status = CASE NEW.status WHEN 'CONFIRMED' THEN 'paid'
			WHEN 'FAILED' THEN 'failed' ELSE 'cancelled' END,
		tx_hash = NEW.tx_hash,
		settled_at = now()
	WHERE p.op_id = NEW.id;
	RETURN NULL;
END
$$;

CREATE TRIGGER app_mirror_outcome
	AFTER UPDATE OF status ON outbox.ops
	FOR EACH ROW
	WHEN (NEW.status IN ('CONFIRMED', 'FAILED', 'CANCELLED')
		AND OLD.status IS DISTINCT FROM NEW.status)
	EXECUTE FUNCTION app.mirror_outbox_outcome();

CREATE SCHEMA demo;

CREATE TABLE demo.samples (
	at timestamptz NOT NULL DEFAULT clock_timestamp(),
	recommended_fee bigint,
	aggressive_fee bigint,
	congestion text,
	capacity_usage double precision,
	pending bigint NOT NULL,
	submitted bigint NOT NULL,
	confirmed bigint NOT NULL,
	failed bigint NOT NULL
);

CREATE TABLE demo.marks (
	id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	label text NOT NULL CHECK (length(label) BETWEEN 1 AND 40),
	started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	ended_at timestamptz
);
