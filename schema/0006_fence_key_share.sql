-- 0006_fence_key_share.sql - the fence stops blocking lease renewals.
--
-- 0004's fence held the lease row FOR SHARE until commit, which conflicts
-- with every UPDATE of the row, the owner's own renewal included. With
-- group-committed batches of job writes (worker/pgq.h) fenced transactions
-- last longer and overlap, PostgreSQL lets new FOR SHARE lockers join while
-- an UPDATE waits, and a renewal waiting there also holds up the claims
-- queued behind it on the worker's control connection: a renewal must not
-- depend on a gap between the owner's own writes.
--
-- What the fence must block is an epoch change, not a renewal. A unique
-- index over (vshard, owner, epoch) makes owner and epoch KEY columns for
-- row locking, so:
--   * the fence takes FOR KEY SHARE: it conflicts only with key updates
--     (a takeover or re-acquire changes owner or epoch) and deletes;
--   * lease_renew and lease_release change expires_at only, a no-key
--     update, so they never wait for fenced writers;
--   * lease_acquire's ON CONFLICT UPDATE names owner and epoch, so it takes
--     the exclusive key lock and still waits for every fenced transaction
--     in flight, after which their epoch is gone and later writes fail the
--     fence (check_dispatch_sql: test_fence_blocks_takeover).

CREATE UNIQUE INDEX shard_leases_holder ON outbox.shard_leases (vshard, owner, epoch);

-- The fence: the lease is held with that epoch, locked FOR KEY SHARE until
-- commit, so a takeover (which changes the key columns owner and epoch)
-- waits for this transaction and every write after a takeover fails here.
CREATE OR REPLACE FUNCTION outbox.fence(owner text, vshard integer, epoch bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	PERFORM 1 FROM outbox.shard_leases l
	WHERE l.vshard = fence.vshard AND l.owner = fence.owner AND l.epoch = fence.epoch
		AND l.expires_at > now()
	FOR KEY SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'fence: vshard % is not leased to owner % with epoch %',
			fence.vshard, outbox.quote_value(fence.owner), fence.epoch
			USING ERRCODE = 'OB403';
	END IF;
END
$$;
