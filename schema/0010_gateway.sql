-- 0010_gateway.sql - the HTTP gateway's side of the database (ops/gateway/).
--
-- What it adds:
--   * API keys findable by a public prefix, and the outbox:enqueue scope;
--     a NOTIFY outbox_keys on every change, so the gateway's key cache
--     follows a create or a revoke at once;
--   * audit rows of HTTP calls: the key, the request and the result;
--   * one function per admin endpoint (api_*): each does its work and writes
--     its audit row in the same transaction, and answers (http, body), so a
--     call is one round trip and nothing is answered that was not audited.
--     Filters reach SQL only as parameters (EXECUTE ... USING).
--
-- JSON bodies use the HTTP API's camelCase names; errors are
-- {"error": {"code", "message"[, "field"]}}.

-- ---------------------------------------------------------------------
-- Keys and audit columns.

ALTER TABLE outbox.admin_keys DROP CONSTRAINT admin_keys_scopes_check;
ALTER TABLE outbox.admin_keys ADD CONSTRAINT admin_keys_scopes_check
	CHECK (cardinality(scopes) >= 1 AND array_ndims(scopes) = 1
		AND scopes <@ ARRAY['outbox:read', 'outbox:write', 'outbox:enqueue']::text[]);
-- The key's public part ("obx_" + 12 hex digits): how the gateway finds the
-- row of a presented key before it compares hashes, and what `outboxctl keys
-- list` shows. Rows made before this migration have none and never match.
ALTER TABLE outbox.admin_keys ADD COLUMN key_prefix text UNIQUE
	CHECK (key_prefix ~ '^obx_[0-9a-f]{12}$');

CREATE FUNCTION outbox.keys_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('outbox_keys', '');
	RETURN NULL;
END
$$;

CREATE TRIGGER admin_keys_changed AFTER INSERT OR UPDATE OR DELETE ON outbox.admin_keys
	FOR EACH STATEMENT EXECUTE FUNCTION outbox.keys_changed();

-- key_id: the key that made the call (NULL: none, or one that matched no
-- row); request: method, path, query, client, the parsed body of a write;
-- result: {"status": <http>, ...}. Never the key itself.
ALTER TABLE outbox.audit_log ADD COLUMN key_id bigint REFERENCES outbox.admin_keys (id),
	ADD COLUMN request jsonb CHECK (jsonb_typeof(request) = 'object'),
	ADD COLUMN result jsonb CHECK (jsonb_typeof(result) = 'object');

-- The audit row an admin function writes itself (admin_retry, admin_cancel)
-- is the HTTP call's row: api_admin below puts the call's key, request and
-- result in transaction-local settings, and this fills them in.
CREATE FUNCTION outbox.audit_from_api() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	req text := current_setting('outbox.api_request', true);
BEGIN
	IF coalesce(req, '') <> '' THEN
		NEW.key_id := nullif(current_setting('outbox.api_key_id', true), '')::bigint;
		NEW.request := req::jsonb;
		NEW.result := nullif(current_setting('outbox.api_result', true), '')::jsonb;
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER audit_log_from_api BEFORE INSERT ON outbox.audit_log
	FOR EACH ROW WHEN (NEW.request IS NULL) EXECUTE FUNCTION outbox.audit_from_api();

-- ---------------------------------------------------------------------
-- Helpers.

-- One audit row of an HTTP call.
CREATE FUNCTION outbox.api_audit(key_id bigint, actor text, action text, target text,
	request jsonb, result jsonb)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO outbox.audit_log (actor, action, target, detail, key_id, request, result)
	VALUES (left(coalesce(actor, 'anonymous'), 128), action, left(target, 256), '{}',
		key_id, coalesce(request, '{}'), coalesce(result, '{}'));
$$;

CREATE FUNCTION outbox.api_error(code text, message text, field text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_build_object('error', jsonb_strip_nulls(jsonb_build_object('code', code,
		'message', message, 'field', field)))
$$;

CREATE FUNCTION outbox.api_op_json(o outbox.ops) RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object('id', o.id, 'idempotencyKey', o.idempotency_key, 'kind', o.kind,
		'priority', outbox.priority_name(o.priority), 'status', o.status, 'userId', o.user_id,
		'businessRecordId', o.business_record_id, 'signer', o.signer, 'vshard', o.vshard,
		'payload', o.payload, 'attempts', o.attempts, 'feeBumps', o.fee_bumps,
		'nextAttemptAt', o.next_attempt_at, 'createdAt', o.created_at,
		'updatedAt', o.updated_at, 'confirmedAt', o.confirmed_at, 'lastError', o.last_error,
		'txHash', o.tx_hash, 'holdReason', o.hold_reason)
$$;

-- ---------------------------------------------------------------------
-- GET /api/admin/outbox: newest first, keyset paging by id (cursor: the
-- last id of the previous page), filters as parameters only.
CREATE FUNCTION outbox.api_list(key_id bigint, actor text, request jsonb, status text, kind text,
	priority text, user_id text, before_id bigint, lim integer)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	q text := 'SELECT coalesce(jsonb_agg(outbox.api_op_json(o) ORDER BY o.id DESC), ''[]''), '
		|| 'min(o.id), count(*) FROM (SELECT * FROM outbox.ops o WHERE true';
	items jsonb;
	last_id bigint;
	n integer;
BEGIN
	IF lim IS NULL OR lim NOT BETWEEN 1 AND 500 THEN
		RAISE EXCEPTION 'limit: % is not in 1..500', lim USING ERRCODE = 'OB422';
	END IF;
	IF status IS NOT NULL THEN q := q || ' AND o.status = $1'; END IF;
	IF kind IS NOT NULL THEN q := q || ' AND o.kind = $2'; END IF;
	IF priority IS NOT NULL THEN q := q || ' AND o.priority = outbox.priority_rank($3)'; END IF;
	IF user_id IS NOT NULL THEN q := q || ' AND o.user_id = $4'; END IF;
	IF before_id IS NOT NULL THEN q := q || ' AND o.id < $5'; END IF;
	q := q || ' ORDER BY o.id DESC LIMIT $6) o';
	EXECUTE q INTO items, last_id, n USING status, kind, priority, user_id, before_id, lim;
	PERFORM outbox.api_audit(key_id, actor, 'api.list', NULL, request,
		jsonb_build_object('status', 200, 'items', n));
	http := 200;
	body := jsonb_build_object('items', items, 'limit', lim,
		'nextCursor', CASE WHEN n = lim THEN last_id::text END);
	RETURN NEXT;
END
$$;

-- Queue depth by status and priority. Only the statuses an op waits in are
-- counted, each through a partial index (ops_held_idx below for HELD); the
-- history of terminal ops is outbox_ops_total's, not a table scan's.
CREATE INDEX ops_held_idx ON outbox.ops (priority) WHERE status = 'HELD';

CREATE FUNCTION outbox.depth_counts()
RETURNS TABLE (status text, priority text, n bigint)
LANGUAGE sql STABLE AS $$
	SELECT st.status, outbox.priority_name(pr.p), coalesce(c.n, 0)
	FROM (VALUES ('PENDING'), ('SUBMITTED'), ('HELD')) st (status)
		CROSS JOIN (VALUES (0::smallint), (1::smallint), (2::smallint)) pr (p)
		LEFT JOIN (
			SELECT 'PENDING' AS status, o.priority, count(*) AS n FROM outbox.ops o
			WHERE o.status = 'PENDING' GROUP BY o.priority
			UNION ALL
			SELECT 'SUBMITTED', o.priority, count(*) FROM outbox.ops o
			WHERE o.status = 'SUBMITTED' GROUP BY o.priority
			UNION ALL
			SELECT 'HELD', o.priority, count(*) FROM outbox.ops o
			WHERE o.status = 'HELD' GROUP BY o.priority) c
		ON c.status = st.status AND c.priority = pr.p
$$;

-- GET /api/admin/outbox/stats
CREATE FUNCTION outbox.api_stats(key_id bigint, actor text, request jsonb)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT jsonb_build_object('depth', (SELECT jsonb_object_agg(s.status, s.by_prio)
			FROM (SELECT d.status, jsonb_object_agg(d.priority, d.n) AS by_prio
				FROM outbox.depth_counts() d GROUP BY d.status) s),
		'oldestPendingCreatedAt', (SELECT min(o.created_at) FROM outbox.ops o
			WHERE o.status = 'PENDING'),
		'at', now()) INTO body;
	PERFORM outbox.api_audit(key_id, actor, 'api.stats', NULL, request, '{"status": 200}');
	http := 200;
	RETURN NEXT;
END
$$;

-- What /metrics shows from PostgreSQL: depth by status and priority, and the
-- ops SUBMITTED with no change for longer than stuck_ms (nobody follows,
-- bumps or decides them: lost in flight), as status 'STUCK'.
CREATE FUNCTION outbox.api_metrics(stuck_ms bigint)
RETURNS TABLE (status text, priority text, n bigint)
LANGUAGE sql STABLE AS $$
	SELECT * FROM outbox.depth_counts()
	UNION ALL
	SELECT 'STUCK', NULL, count(*) FROM outbox.ops o
	WHERE o.status = 'SUBMITTED'
		AND o.updated_at < now() - make_interval(secs => stuck_ms / 1000.0)
$$;

-- GET /api/admin/outbox/:id: the op, its attempts and its events.
CREATE FUNCTION outbox.api_op(key_id bigint, actor text, request jsonb, op_id bigint)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	o outbox.ops;
BEGIN
	SELECT * INTO o FROM outbox.ops x WHERE x.id = api_op.op_id;
	IF NOT FOUND THEN
		http := 404;
		body := outbox.api_error('not_found', format('op %s does not exist', op_id));
	ELSE
		http := 200;
		body := jsonb_build_object('op', outbox.api_op_json(o),
			'attempts', coalesce((SELECT jsonb_agg(jsonb_build_object('attemptNo', a.attempt_no,
				'bumpNo', a.bump_no, 'txHash', a.tx_hash, 'innerTxHash', a.inner_tx_hash,
				'sourceAccount', a.source_account, 'sourceSequence', a.source_sequence,
				'maxTime', a.max_time, 'maxLedger', a.max_ledger, 'fee', a.fee,
				'submittedAt', a.submitted_at, 'outcome', a.outcome,
				'resultCode', a.result_code, 'decidedAt', a.decided_at,
				'landedLedger', a.landed_ledger, 'proof', a.proof)
				ORDER BY a.attempt_no, a.bump_no)
				FROM outbox.attempts a WHERE a.op_id = o.id), '[]'),
			'events', coalesce((SELECT jsonb_agg(jsonb_build_object('seq', e.seq, 'type', e.type,
				'from', e.from_status, 'to', e.to_status, 'at', e.at, 'body', e.body)
				ORDER BY e.seq)
				FROM outbox.events e WHERE e.op_id = o.id), '[]'));
	END IF;
	PERFORM outbox.api_audit(key_id, actor, 'api.get', op_id::text, request,
		jsonb_build_object('status', http));
	RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------------
-- GET /api/admin/outbox/:id/why: why a PENDING op is not on the network
-- yet, in one sentence and a structured reason (the first that applies, in
-- the order the claim meets them; "others" lists the rest). facts comes
-- from the gateway's view of shared memory: {"congestion": 0..3,
-- "latestLedger", "closeTime" (unix s), "inFlight", "maxInFlight",
-- "lowMaxDeferMs"}.
CREATE FUNCTION outbox.why_pending(o outbox.ops, facts jsonb) RETURNS jsonb[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
	r jsonb[] := '{}';
	h record;
	busy record;
	ahead record;
	last_ev text;
	cong integer := coalesce((facts ->> 'congestion')::integer, 0);
	ledger bigint := coalesce((facts ->> 'latestLedger')::bigint, 0);
	ctime bigint := coalesce((facts ->> 'closeTime')::bigint, 0);
BEGIN
	SELECT hu.user_id, uh.reason, uh.held_by INTO h FROM outbox.held_users hu
		LEFT JOIN outbox.user_holds uh ON uh.user_id = hu.user_id
		WHERE hu.user_id = o.user_id LIMIT 1;
	IF FOUND THEN
		r := r || jsonb_strip_nulls(jsonb_build_object('code', 'user_halted',
			'sentence', format('its user %s is halted%s', o.user_id,
				coalesce(format(' by %s: %s', h.held_by, h.reason), '')),
			'userId', o.user_id, 'heldBy', h.held_by, 'holdReason', h.reason));
	END IF;
	IF o.next_attempt_at > now() THEN
		SELECT e.type INTO last_ev FROM outbox.events e WHERE e.op_id = o.id
			ORDER BY e.seq DESC LIMIT 1;
		IF last_ev = 'DEFERRED' THEN
			r := r || jsonb_build_object('code', 'low_deferred',
				'sentence', format('it is a LOW op deferred by congestion until %s',
					o.next_attempt_at), 'until', o.next_attempt_at);
		ELSE
			r := r || jsonb_strip_nulls(jsonb_build_object('code', 'backoff',
				'sentence', format('it backs off until %s after %s%s', o.next_attempt_at,
					CASE WHEN o.attempts - o.attempts_base = 1 THEN '1 attempt'
						ELSE (o.attempts - o.attempts_base) || ' attempts' END,
					coalesce(': ' || o.last_error, '')),
				'until', o.next_attempt_at, 'attempts', o.attempts - o.attempts_base,
				'lastError', o.last_error));
		END IF;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM outbox.shard_leases l WHERE l.vshard = o.vshard
			AND l.expires_at > now()) THEN
		r := r || jsonb_build_object('code', 'no_lease',
			'sentence', format('no worker holds the lease of its vshard %s', o.vshard),
			'vshard', o.vshard);
	END IF;
	SELECT x.id, a.tx_hash, a.max_time, a.max_ledger INTO busy FROM outbox.ops x
		LEFT JOIN outbox.attempts a ON a.op_id = x.id AND a.outcome = 'LIVE' AND a.bump_no = 0
		WHERE x.signer = o.signer AND x.status = 'SUBMITTED' AND x.id <> o.id
		ORDER BY x.id LIMIT 1;
	IF FOUND THEN
		IF busy.tx_hash IS NOT NULL AND ((busy.max_ledger IS NOT NULL AND ledger >= busy.max_ledger)
				OR (ctime > 0 AND ctime > busy.max_time)) THEN
			r := r || jsonb_build_object('code', 'awaiting_expiry_proof',
				'sentence', format('its signer waits for proof that op %s''s transaction %s expired unexecuted (its bounds have passed) before it signs again',
					busy.id, busy.tx_hash),
				'opId', busy.id, 'txHash', busy.tx_hash, 'maxTime', busy.max_time,
				'maxLedger', busy.max_ledger);
		ELSE
			r := r || jsonb_strip_nulls(jsonb_build_object('code', 'signer_busy',
				'sentence', format('its signer is busy with op %s%s', busy.id,
					coalesce(' (transaction ' || busy.tx_hash || ' in flight)', '')),
				'opId', busy.id, 'txHash', busy.tx_hash));
		END IF;
	END IF;
	SELECT min(x.id) AS first, count(*) AS n INTO ahead FROM outbox.ops x
		WHERE x.signer = o.signer AND x.status = 'PENDING' AND x.id <> o.id
			AND x.next_attempt_at <= now()
			AND (x.priority, x.next_attempt_at, x.created_at)
				< (o.priority, greatest(o.next_attempt_at, now()), o.created_at);
	IF ahead.n > 0 THEN
		r := r || jsonb_build_object('code', 'queued_behind',
			'sentence', format('%s op(s) of its signer go first (the next is op %s)',
				ahead.n, ahead.first), 'opId', ahead.first, 'ahead', ahead.n);
	END IF;
	IF o.priority = 2 AND cong >= 2 AND o.next_attempt_at <= now()
			AND now() - o.created_at
				< make_interval(secs => coalesce((facts ->> 'lowMaxDeferMs')::bigint, 0) / 1000.0) THEN
		r := r || jsonb_build_object('code', 'low_deferred',
			'sentence', 'it is a LOW op and congestion is high: its next claim defers it',
			'congestion', cong);
	END IF;
	IF (facts ->> 'inFlight')::bigint >= (facts ->> 'maxInFlight')::bigint THEN
		r := r || jsonb_build_object('code', 'global_cap',
			'sentence', format('the global cap of %s transactions in flight is reached',
				facts ->> 'maxInFlight'),
			'inFlight', (facts ->> 'inFlight')::bigint,
			'maxInFlight', (facts ->> 'maxInFlight')::bigint);
	END IF;
	RETURN r;
END
$$;

CREATE FUNCTION outbox.why_json(o outbox.ops, facts jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
	rs jsonb[];
	r jsonb;
	landed text;
BEGIN
	IF o.status = 'PENDING' THEN
		rs := outbox.why_pending(o, facts);
		IF cardinality(rs) = 0 THEN
			r := jsonb_build_object('code', 'ready',
				'sentence', 'it is due now: the next claim of its vshard takes it');
		ELSE
			r := rs[1];
		END IF;
	ELSIF o.status = 'HELD' THEN
		SELECT string_agg(a.tx_hash, ', ' ORDER BY a.id) INTO landed FROM outbox.attempts a
			WHERE a.op_id = o.id AND a.outcome = 'LANDED';
		r := jsonb_strip_nulls(jsonb_build_object('code', 'held',
			'sentence', format('it is HELD for an operator: %s%s',
				coalesce(o.hold_reason, 'its transaction ran with an outcome no RPC answer can show'),
				coalesce(' (transaction ' || landed || ')', '')),
			'holdReason', o.hold_reason, 'txHashes', landed));
	ELSIF o.status = 'SUBMITTED' THEN
		r := jsonb_strip_nulls(jsonb_build_object('code', 'on_network',
			'sentence', format('it is on the network: transaction %s', o.tx_hash),
			'txHash', o.tx_hash));
	ELSE
		r := jsonb_build_object('code', 'terminal',
			'sentence', format('it is %s: nothing more will be sent', o.status));
	END IF;
	RETURN jsonb_build_object('opId', o.id, 'status', o.status,
		'why', format('Op %s is not on the network because %s.', o.id, r ->> 'sentence'),
		'reason', r - 'sentence',
		'others', coalesce((SELECT jsonb_agg(x - 'sentence') FROM unnest(rs[2:]) x), '[]'));
END
$$;

CREATE FUNCTION outbox.api_why(key_id bigint, actor text, request jsonb, op_id bigint,
	facts jsonb)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	o outbox.ops;
BEGIN
	SELECT * INTO o FROM outbox.ops x WHERE x.id = api_why.op_id;
	IF NOT FOUND THEN
		http := 404;
		body := outbox.api_error('not_found', format('op %s does not exist', op_id));
	ELSE
		http := 200;
		body := outbox.why_json(o, facts);
	END IF;
	PERFORM outbox.api_audit(key_id, actor, 'api.why', op_id::text, request,
		jsonb_build_object('status', http) || CASE WHEN http = 200
			THEN jsonb_build_object('reason', body -> 'reason' ->> 'code') ELSE '{}' END);
	RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------------
-- POST /api/admin/outbox/:id/retry and /cancel: admin_retry and
-- admin_cancel, whose own audit row becomes the call's (audit_from_api). A
-- refusal rolls their work back and is audited here with its reason.
CREATE FUNCTION outbox.api_admin(key_id bigint, actor text, request jsonb, action text,
	op_id bigint)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	st text;
	msg text;
	code text;
	o outbox.ops;
BEGIN
	BEGIN
		PERFORM set_config('outbox.api_key_id', coalesce(key_id::text, ''), true);
		PERFORM set_config('outbox.api_request', request::text, true);
		PERFORM set_config('outbox.api_result', '{"status": 200}', true);
		IF action = 'op.retry' THEN
			st := outbox.admin_retry(op_id, actor);
		ELSIF action = 'op.cancel' THEN
			st := outbox.admin_cancel(op_id, actor);
		ELSE
			RAISE EXCEPTION 'action: % is not op.retry or op.cancel', action
				USING ERRCODE = 'OB422';
		END IF;
	EXCEPTION WHEN SQLSTATE 'OB404' OR SQLSTATE 'OB409' OR SQLSTATE 'OB422' THEN
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, code = RETURNED_SQLSTATE;
		http := CASE code WHEN 'OB404' THEN 404 WHEN 'OB409' THEN 409 ELSE 400 END;
		body := outbox.api_error(CASE code WHEN 'OB404' THEN 'not_found'
			WHEN 'OB409' THEN 'conflict' ELSE 'invalid' END, msg);
		PERFORM set_config('outbox.api_request', '', true);
		PERFORM outbox.api_audit(key_id, actor, action, op_id::text, request,
			jsonb_build_object('status', http, 'error', msg));
		RETURN NEXT;
		RETURN;
	END;
	PERFORM set_config('outbox.api_request', '', true);
	SELECT * INTO o FROM outbox.ops x WHERE x.id = api_admin.op_id;
	http := 200;
	body := jsonb_build_object('op', outbox.api_op_json(o));
	RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------------
-- POST /api/v1/ops: outbox.enqueue over HTTP. 201 with the new op, 200 with
-- the existing one of the same key, 400 naming the field (camelCase) of bad
-- input, 409 for a key reused with other content.
CREATE FUNCTION outbox.api_field(col text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE col WHEN 'user_id' THEN 'userId'
		WHEN 'business_record_id' THEN 'businessRecordId'
		WHEN 'idempotency_key' THEN 'idempotencyKey' ELSE nullif(col, '') END
$$;

CREATE FUNCTION outbox.api_enqueue(key_id bigint, actor text, request jsonb, kind text,
	user_id text, business_record_id text, signer text, payload jsonb, priority text)
RETURNS TABLE (http integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	e outbox.enqueue_result;
	o outbox.ops;
	msg text;
	col text;
	code text;
BEGIN
	BEGIN
		e := outbox.enqueue(kind, user_id, business_record_id, signer, payload, priority);
	EXCEPTION WHEN SQLSTATE 'OB422' OR SQLSTATE 'OB409' OR SQLSTATE '23514' THEN
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, col = COLUMN_NAME, code = RETURNED_SQLSTATE;
		http := CASE code WHEN 'OB409' THEN 409 ELSE 400 END;
		body := outbox.api_error(CASE code WHEN 'OB409' THEN 'conflict' ELSE 'invalid' END, msg,
			outbox.api_field(col));
		PERFORM outbox.api_audit(key_id, actor, 'op.enqueue', NULL, request,
			jsonb_build_object('status', http, 'error', msg));
		RETURN NEXT;
		RETURN;
	END;
	SELECT * INTO o FROM outbox.ops x WHERE x.id = e.id;
	http := CASE WHEN e.created THEN 201 ELSE 200 END;
	body := jsonb_build_object('op', outbox.api_op_json(o), 'created', e.created);
	PERFORM outbox.api_audit(key_id, actor, 'op.enqueue', e.id::text, request,
		jsonb_build_object('status', http, 'created', e.created));
	RETURN NEXT;
END
$$;

-- The op of a synchronous enqueue ("wait": true), when it has ended (or
-- timed out): its JSON, one statement for many ops.
CREATE FUNCTION outbox.api_ops_status(ids bigint[])
RETURNS TABLE (id bigint, status text, op jsonb)
LANGUAGE sql STABLE AS $$
	SELECT o.id, o.status, outbox.api_op_json(o) FROM outbox.ops o WHERE o.id = ANY (ids)
$$;

-- The gateway's key cache: every key with a prefix, revoked ones too (a
-- revoked key is refused as revoked, and audited with its id).
CREATE FUNCTION outbox.api_keys()
RETURNS TABLE (id bigint, name text, key_prefix text, key_hash bytea, scopes text[],
	revoked boolean)
LANGUAGE sql STABLE AS $$
	SELECT k.id, k.name, k.key_prefix, k.key_hash, k.scopes, k.revoked_at IS NOT NULL
	FROM outbox.admin_keys k WHERE k.key_prefix IS NOT NULL ORDER BY k.key_prefix
$$;
