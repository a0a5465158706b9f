-- 0003_wakeup.sql - how an enqueue wakes a dispatcher.
--
-- Design: NOTIFY only for CRITICAL work. An insert (or a retry back to
-- PENDING) of a CRITICAL op notifies at commit; NORMAL and LOW work is found
-- by the workers' periodic sweep (OUTBOX_DISPATCH_INTERVAL_MS, default
-- 1000 ms) and by the claim loop of a worker that is already busy.
--
-- Why: a NOTIFY makes the committing transaction take one cluster-wide lock
-- (the notification queue's) and hold it through its commit, WAL flush
-- included, so notifying transactions commit one at a time and lose group
-- commit. tests/bench/enqueue.c measured it (build-db/bench_enqueue,
-- BENCH_SECONDS=2 BENCH_ROUNDS=3, PostgreSQL 15, synchronous_commit=on, a
-- shared 2-core machine under load 4-8, so medians of 3 rounds; rows/s):
--
--   rows/txn conns  plain  enqueue: none  per_txn  per_stmt  critical
--        1     8     1552           579      176       183       403
--        1     1      277           222      196       250       149
--      100     8    10015          1250     1689      1990      1947
--      100     1     5492           750     1031       732       766
--
--   (per_txn: one NOTIFY per transaction, constant payload; per_stmt: one
--   per enqueue with the vshard as payload; critical: per enqueue, CRITICAL
--   ops only, which were 1 in 4 of the workload; plain: the same row into a
--   bare table.)
--
-- The shape that matters is the application's: many connections, each
-- committing one business row plus one intent. There a NOTIFY on every
-- transaction cut enqueue throughput from 579 to ~180 rows/s (-70%), while
-- CRITICAL-only cost in proportion to the CRITICAL share (579 -> 403 at
-- 25%). With 100 rows per transaction the lock is taken once per 100 rows
-- and every variant is within the (large) noise. Single-connection rows are
-- dominated by the shared disk's fsync latency and are noise too.
-- The price: a NORMAL or LOW op enqueued into an idle system waits up to
-- one sweep interval (1 s by default) before it is claimed; a Stellar
-- ledger closes every ~5 s, and LOW work is deferred under congestion
-- anyway. A CRITICAL op never waits for a sweep. To wake on every priority
-- instead, a later migration replaces the WHEN clause of ops_wake.
--
-- Channel: outbox_wake. Payload: the op's vshard as decimal text ("17"), so
-- the gateway (which LISTENs) can ring the one worker that owns that shard.
-- PostgreSQL folds identical notifications within a transaction, so a
-- transaction sends at most one per distinct vshard. A notification is a
-- hint only: workers also sweep every OUTBOX_DISPATCH_INTERVAL_MS, and a
-- lost or skipped hint costs latency, never an op.

CREATE FUNCTION outbox.wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('outbox_wake', NEW.vshard::text);
	RETURN NULL;
END
$$;

-- New CRITICAL work.
CREATE TRIGGER ops_wake AFTER INSERT ON outbox.ops
	FOR EACH ROW WHEN (NEW.priority = 0)
	EXECUTE FUNCTION outbox.wake();

-- CRITICAL work that becomes due again through an update (an admin retry
-- of a FAILED op); a backoff requeue with a future next_attempt_at does not
-- wake anyone, the sweep finds it when it is due.
CREATE TRIGGER ops_wake_requeue AFTER UPDATE OF status ON outbox.ops
	FOR EACH ROW WHEN (NEW.priority = 0 AND NEW.status = 'PENDING'
		AND OLD.status <> 'PENDING' AND NEW.next_attempt_at <= now())
	EXECUTE FUNCTION outbox.wake();
