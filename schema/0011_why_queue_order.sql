-- why_pending's "queued_behind": which ops of the signer go first.
--
-- The claim takes a signer's due ops in (priority, next_attempt_at,
-- created_at) order. 0010 compared the others with the op's due time raised
-- to now(), so every due op of the same priority enqueued before now looked
-- ahead of it, the op the claim takes first included. Ops go first when
-- they are due and come before it in the claim's own order; the rest of
-- the function is 0010's.
CREATE OR REPLACE FUNCTION outbox.why_pending(o outbox.ops, facts jsonb) RETURNS jsonb[]
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
				< (o.priority, o.next_attempt_at, o.created_at);
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
