-- 0031_acquire_new_epoch.sql - every lease_acquire that takes a vshard
-- gives it a new epoch, the same owner's included.
--
-- Why. 0004's lease_acquire handed an owner that still held a vshard its
-- epoch unchanged. A worker asks for a vshard only when it does not hold it
-- as far as it knows, and the one case where it still holds it in the
-- database is a worker that lost a PostgreSQL connection: it dropped every
-- vshard (worker/worker_main.c, on_connect) and acquires them again once it
-- is reconnected. The session it lost may still be alive on the server,
-- though (the client saw the socket fail, the backend did not), in the
-- middle of a group-commit transaction: attempt rows or landings of several
-- vshards, each fenced with the old epoch. Re-acquired with that epoch, a
-- vshard could be reconciled (its SUBMITTED ops listed, its lanes reset)
-- before such a leftover statement fenced it, passed, and committed: an op
-- SUBMITTED with a LIVE attempt that no job follows, and a lane that does
-- not count it, until the next takeover.
--
-- A leftover that had fenced the vshard was already waited for: it holds
-- the lease row FOR KEY SHARE, and the acquire's ON CONFLICT UPDATE sets
-- the key columns (0006), so it waits for that transaction to end. One
-- that had not fenced yet was the hole: it passed the fence afterwards.
-- Now the epoch moves, and such a statement fails its fence (OB403) and
-- its transaction rolls back. The fencing token now changes with every
-- holding, as a fencing token should. A renewal is lease_renew, which
-- keeps the epoch; a vshard's events chain and its ops do not depend on
-- the epoch's value (claimed_epoch only tells this holding's claims apart).
-- Tests: check_dispatch_sql's fencing (a second acquire by the owner fences
-- out the first epoch) and reacquire_fences_leftovers (the acquire waits
-- for an old session's fenced transaction; an old session's next statement
-- fails its fence).

CREATE OR REPLACE FUNCTION outbox.lease_acquire(owner text, vshard integer, ttl_ms integer)
RETURNS bigint LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	e bigint;
BEGIN
	PERFORM outbox.check_owner(lease_acquire.owner);
	PERFORM outbox.check_vshard(lease_acquire.vshard);
	PERFORM outbox.check_ttl(ttl_ms);
	INSERT INTO outbox.shard_leases AS l (vshard, owner, epoch, expires_at)
	VALUES (lease_acquire.vshard, lease_acquire.owner, 1,
		now() + make_interval(secs => ttl_ms / 1000.0))
	ON CONFLICT (vshard) DO UPDATE SET
		epoch = l.epoch + 1,
		owner = excluded.owner,
		expires_at = excluded.expires_at
	WHERE l.owner = excluded.owner OR l.expires_at <= now()
	RETURNING l.epoch INTO e;
	RETURN e;
END
$$;

COMMENT ON FUNCTION outbox.lease_acquire(text, integer, integer) IS
	'the vshard''s lease for owner with a new epoch (absent: 1); NULL when another live owner holds it';
