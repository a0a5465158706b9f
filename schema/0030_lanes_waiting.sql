-- 0030_lanes_waiting.sql - which vshards hold work a claim could take, for
-- the oracle's lane watcher (oracle/lane_watch.h), which rings their workers.
--
-- Why. NORMAL and LOW ops have no NOTIFY (0003: it would serialize every
-- enqueue's commit on the notification queue's lock), so every busy worker
-- polled outbox.claim every 5 ms: bench_dispatch at 100 ops/s offered ran
-- 7.2 claims per op, 2.4 ms of statement time per op (0.33 ms a call, most
-- of them empty, each with its fence check), and an idle worker found a
-- NORMAL op only at its sweep (OUTBOX_DISPATCH_INTERVAL_MS, 1 s by
-- default). One watcher per outboxd instance asks this instead, every few
-- milliseconds, and wakes only the workers that have something to claim.
--
-- lanes_waiting(due): every vshard with a lane signal (new work: an
-- enqueue, a retry, an operator's action) and, when due is true, every
-- leased vshard with a lane due now with a ready op (pending_best set,
-- next_due passed: a backoff or a deferral that ended), each with the owner
-- of its unexpired lease, NULL when none. Read only, no lock, nothing
-- written: an answer is a hint, as a NOTIFY is.
--
-- Plans (pinned and cached per session, as in 0023, since lane_signals
-- swings between empty and a bulk load's 100 000 rows): the signals by a
-- skip scan of lane_signals_vshard_idx, one probe per signalled vshard and
-- one more, however many signals each holds; the due lanes by one
-- lanes_ready_idx probe per leased vshard; the leases by primary key.
-- check_dispatch_sql's hot_plans holds it to index access and bounded
-- buffers under a 100 000-op backlog.
--
-- Measured (bench_dispatch's latency phase at 100 ops/s offered, the
-- 2-core project VM). A private PostgreSQL 15 with pg_stat_statements:
-- claims per op 7.2 -> 1.8, their statement time 2.40 -> 1.29 ms per op,
-- plus 1.3 looks per op at 0.21 ms each (0.06 ms of it the query; pgbench:
-- 0.05-0.08 ms a look against 0.04 for SELECT 1). Two alternating pairs on
-- the shared server: PostgreSQL CPU per op 6.77-6.84 -> 5.79-5.81 ms,
-- outboxd's 1.29-1.35 -> 1.07-1.08 ms, enqueue-to-send p50 7.8-8.0 ->
-- 8.4-8.5 ms (one more hop: the look, then the claim), p99 34-47 ->
-- 29-31 ms. At 500 ops/s offered, where claims mostly find work anyway,
-- within the noise (2.79-2.83 against 2.76-2.88 ms). A look that also asks
-- for due lanes probes lanes_ready_idx once per leased vshard and priority
-- (64 vshards: 0.2 ms).
CREATE FUNCTION outbox.lanes_waiting(due boolean)
RETURNS TABLE (vshard integer, owner text)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET max_parallel_workers_per_gather = 0
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH RECURSIVE s (v) AS (
		(SELECT y.vshard FROM outbox.lane_signals y ORDER BY y.vshard LIMIT 1)
		UNION ALL
		SELECT (SELECT y.vshard FROM outbox.lane_signals y WHERE y.vshard > s.v
			ORDER BY y.vshard LIMIT 1)
		FROM s WHERE s.v IS NOT NULL
	), w (v) AS (
		SELECT s.v FROM s WHERE s.v IS NOT NULL
		UNION
		SELECT l.vshard FROM outbox.shard_leases l
		WHERE lanes_waiting.due AND EXISTS (SELECT 1
			FROM unnest('{0,1,2}'::smallint[]) p (best)
			CROSS JOIN LATERAL (SELECT 1 FROM outbox.lanes x
				WHERE x.vshard = l.vshard AND x.pending_best = p.best
					AND x.next_due <= now() LIMIT 1) d)
	)
	SELECT w.v, l.owner FROM w
	LEFT JOIN outbox.shard_leases l ON l.vshard = w.v AND l.expires_at > now();
END
$$;
