-- 0023_generic_plans.sql - the lane merge and the relay's read plan their
-- statements once per session, not on every call.
--
-- Why. PostgreSQL caches a PL/pgSQL statement's plan, but for a statement
-- with parameters it plans the first five calls with their values and then
-- keeps planning per call whenever the generic plan's estimated cost is
-- higher than those custom plans' (an array parameter of unknown length
-- makes it so). A SQL function with SET clauses is never inlined and plans
-- its body on every call. pg_stat_statements (track = all, track_planning)
-- over bench_dispatch's run: lane_merge's two statements were planned on
-- 1 831 and 1 740 of 1 834 calls, ~0.23 ms each, and events_unsealed's body
-- on every one of its 1 375 calls, 0.33 ms each: together ~50 us of planning
-- per confirmed op, more than the statements took to run.
--
-- What holds. The plans are the ones these functions were pinned to (0017,
-- 0019: sequential and bitmap scans, sorts, hash and merge joins switched
-- off where they were), now kept for the session: lane_merge reads the
-- signals by vshard through lane_signals_vshard_idx and
-- lane_signals_critical_idx, the lanes by primary key, and deletes the
-- signals by ctid; events_unsealed walks events_unsealed_idx in id order and
-- probes ops and chain_heads by key. A cached plan is replanned when a
-- table's statistics or definition change. Same rows, same order, same
-- locks. check_dispatch_sql's hot_plans holds both to index access and
-- bounded buffers under a 100 000-op backlog, with plans cached while the
-- tables were small and after an ANALYZE.

ALTER FUNCTION outbox.lane_merge(integer[]) SET plan_cache_mode = force_generic_plan;

CREATE OR REPLACE FUNCTION outbox.events_unsealed(vshards integer[], lim integer)
RETURNS TABLE (id bigint, op_id bigint, seq integer, type text, from_status text,
	to_status text, at_us bigint, body text, vshard integer, idempotency_key text, kind text,
	priority text, head_seq bigint, head_hash bytea)
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
	SELECT e.id, e.op_id, e.seq, e.type, e.from_status, e.to_status,
		(extract(epoch FROM e.at) * 1000000)::bigint, e.body::text, o.vshard,
		o.idempotency_key, o.kind, outbox.priority_name(o.priority),
		coalesce(h.seq, 0), coalesce(h.hash,
			'\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
	FROM outbox.events e
	JOIN outbox.ops o ON o.id = e.op_id
	LEFT JOIN outbox.chain_heads h ON h.chain = 'vshard:' || o.vshard
	WHERE e.chain_seq IS NULL AND o.vshard = ANY (events_unsealed.vshards)
	ORDER BY e.id
	LIMIT events_unsealed.lim;
END
$$;
