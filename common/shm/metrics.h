/*
 * metrics.h - the fixed table of metric ids kept in the per-process stats
 * blocks (layout.h: struct shm_stats_block).
 *
 * Adding a metric is ONE line in one of the X-macro tables below: append it
 * (never reorder or delete a row in a released build: the id is its index in
 * the block). The arrays in shm have fixed capacities (SHM_*_CAP), so adding
 * rows does not change the segment layout; a _Static_assert in stats.c stops
 * the build when a table outgrows its capacity.
 *
 * Columns:
 *	counters:   X(ID, "prometheus_name", "help text")      monotonic uint64
 *	gauges:     X(ID, "prometheus_name", "help text")      int64, set/add
 *	histograms: X(ID, "prometheus_name", "help text", B)   buckets with upper
 *	            bounds B, 2B, 4B, ... B*2^(SHM_HIST_BUCKETS-2), then +Inf
 *
 * Names follow Prometheus conventions (counters end in _total, units in the
 * name). Every process has every metric; a metric a role never touches stays
 * 0 and /metrics or outboxctl may skip zero rows of other roles.
 *
 * Labeled families (appended in layout 1.1): one counter or histogram per
 * combination of label values, each label a fixed list (enum shm_dim):
 *	counter families:   X(ID, "name", "help", D1, D2, D3)
 *	histogram families: X(ID, "name", "help", D1, D2, D3, B, DIV)
 * where Dn is KIND, PRIORITY, OUTCOME or NONE; a histogram family observes
 * integers with bounds B, 2B, ... like the histograms above, and an exporter
 * divides bounds and sums by DIV (milliseconds exported as seconds). Their
 * cells live in fixed-capacity arrays too (SHM_FAMILY_CAP,
 * SHM_FAMILY_HIST_CAP): adding a family is one line. The gateway's /metrics
 * sums every process's cells; which label values exist is stats.c's.
 */
#ifndef OUTBOX_SHM_METRICS_H
#define OUTBOX_SHM_METRICS_H

#define SHM_COUNTER_CAP     64
#define SHM_GAUGE_CAP       32
#define SHM_HIST_CAP        8
#define SHM_HIST_BUCKETS    16
#define SHM_FAMILY_CAP      128 /* counter cells of all counter families */
#define SHM_FAMILY_HIST_CAP 16  /* histograms of all histogram families */

/* clang-format off */
#define SHM_COUNTERS(X) \
	X(MET_CHILD_SPAWNS, "outbox_child_spawns_total", "children forked by the supervisor") \
	X(MET_CHILD_CRASHES, "outbox_child_crashes_total", "children that died by signal or with their slot active") \
	X(MET_HEARTBEATS, "outbox_heartbeats_total", "heartbeats written by this process") \
	X(MET_LOOP_ITERATIONS, "outbox_loop_iterations_total", "event loop iterations") \
	X(MET_FEE_POLLS, "outbox_fee_polls_total", "fee oracle polls of the RPC") \
	X(MET_FEE_POLL_FAILURES, "outbox_fee_poll_failures_total", "fee oracle polls that failed") \
	X(MET_FEE_CLAMP_MIN, "outbox_fee_clamp_min_total", "fees raised to FEE_ORACLE_MIN") \
	X(MET_FEE_CLAMP_MAX, "outbox_fee_clamp_max_total", "fees lowered to FEE_ORACLE_MAX") \
	X(MET_FEE_CLAMP_FLOOR, "outbox_fee_clamp_floor_total", "fees raised to the 100 stroop floor") \
	X(MET_FEE_PUBLISHES, "outbox_fee_publishes_total", "fee snapshots published") \
	X(MET_FEE_PUBLISH_WAITS, "outbox_fee_publish_waits_total", "publishes that waited for a QSBR reader") \
	X(MET_SNAPSHOT_READS, "outbox_snapshot_reads_total", "fee snapshot reads") \
	X(MET_SNAPSHOT_STALE, "outbox_snapshot_stale_total", "reads that fell back to the default fee (stale snapshot)") \
	X(MET_HINTS_RECEIVED, "outbox_hints_received_total", "ring hints consumed") \
	X(MET_HINTS_SENT, "outbox_hints_sent_total", "ring hints pushed") \
	X(MET_HINTS_DROPPED, "outbox_hints_dropped_total", "ring hints dropped because a ring was full") \
	X(MET_INFLIGHT_DENIED, "outbox_inflight_denied_total", "transactions refused by the global in-flight cap") \
	X(MET_DOORBELL_WAKEUPS, "outbox_doorbell_wakeups_total", "doorbell waits ended by a ring") \
	X(MET_DOORBELL_TIMEOUTS, "outbox_doorbell_timeouts_total", "doorbell waits ended by their timeout") \
	X(MET_CLAIMS, "outbox_claims_total", "ops claimed by workers") \
	X(MET_CRITICAL_CLAIMS, "outbox_critical_claims_total", "CRITICAL-only claims: one per CRITICAL NOTIFY for a vshard this worker holds") \
	X(MET_ATTEMPTS_RECORDED, "outbox_attempts_recorded_total", "attempt rows committed before a send") \
	X(MET_SENDS, "outbox_sends_total", "sendTransaction calls (first sends and re-sends)") \
	X(MET_OPS_CONFIRMED, "outbox_ops_confirmed_total", "ops confirmed on chain") \
	X(MET_OPS_FAILED, "outbox_ops_failed_total", "ops marked FAILED") \
	X(MET_OPS_RETRIED, "outbox_ops_retried_total", "ops sent back to PENDING with backoff") \
	X(MET_OPS_DEFERRED, "outbox_ops_deferred_total", "LOW ops deferred under congestion") \
	X(MET_FEE_BUMPS, "outbox_fee_bumps_total", "fee-bump envelopes recorded and sent") \
	X(MET_MAX_FEE_HIT, "outbox_max_fee_hit_total", "fee bids capped, or bumps held back, by OUTBOX_MAX_ABS_FEE") \
	X(MET_EXPIRED, "outbox_tx_expired_total", "transactions proven expired unexecuted") \
	X(MET_OPS_HELD, "outbox_ops_held_total", "ops held for an operator: executed with an outcome no answer shows, or the signer used by someone else") \
	X(MET_SEQ_ALARMS, "outbox_sequence_alarms_total", "signer sequence numbers seen past anything outboxd recorded") \
	X(MET_LANDED_LATE, "outbox_landed_late_total", "landings of envelopes outboxd had decided could not land (alarm)") \
	X(MET_RESYNCS, "outbox_vshard_resyncs_total", "vshards dropped and reconciled again after a write with an unknown or refused outcome") \
	X(MET_ACCOUNT_READS, "outbox_account_reads_total", "signer account reads (getLedgerEntries)") \
	X(MET_EVENTS_SEALED, "outbox_events_sealed_total", "events linked into their hash chain") \
	X(MET_EVENTS_PRODUCED, "outbox_events_produced_total", "events handed to the Kafka producer (re-sends included)") \
	X(MET_EVENTS_PUBLISHED, "outbox_events_published_total", "events acknowledged by Kafka and marked published") \
	X(MET_EVENT_DELIVERY_FAILURES, "outbox_event_delivery_failures_total", "events Kafka did not acknowledge (produced again later)") \
	X(MET_AGGRESSIVE_FEE_USED, "outbox_aggressive_fee_used_total", "attempts bid from the aggressive (p95) fee: CRITICAL under congestion") \
	X(MET_HTTP_REQUESTS, "outbox_http_requests_total", "HTTP requests answered by the gateway") \
	X(MET_HTTP_CLIENT_ERRORS, "outbox_http_client_errors_total", "HTTP answers 4xx other than 401, 403 and 429") \
	X(MET_HTTP_SERVER_ERRORS, "outbox_http_server_errors_total", "HTTP answers 5xx") \
	X(MET_HTTP_AUTH_REFUSED, "outbox_http_auth_refused_total", "HTTP calls refused 401 or 403") \
	X(MET_HTTP_RATE_LIMITED, "outbox_http_rate_limited_total", "HTTP calls refused 429") \
	X(MET_HTTP_KEY_REFRESHES, "outbox_http_key_refreshes_total", "API key cache reloads from PostgreSQL") \
	X(MET_PG_BATCHES, "outbox_pg_batches_total", "group commits: transactions that carried two or more queued writes") \
	X(MET_PG_MERGED, "outbox_pg_merged_writes_total", "writes sent merged into one set-form statement of a group commit") \
	X(MET_PG_BATCH_RETRIES, "outbox_pg_batch_retries_total", "group commits that failed, every write then sent again alone") \
	X(MET_LANE_LOOKS, "outbox_lane_watch_looks_total", "looks of the oracle's lane watcher that PostgreSQL answered") \
	X(MET_LANE_WAKES, "outbox_lane_watch_wakes_total", "workers woken by the lane watcher (NEW_OP hints pushed)") \
	X(MET_CLAIM_POLLS, "outbox_claim_polls_total", "claims a busy worker scheduled by itself (5 ms polls) while the lane watcher was silent") \
	X(MET_CLAIMS_PACED, "outbox_claims_paced_total", "regular claims sent CRITICAL-only: OUTBOX_NORMAL_LOW_MAX_RATE's share held no NORMAL or LOW op")

#define SHM_GAUGES(X) \
	X(MET_INFLIGHT, "outbox_inflight", "transactions in flight in this process") \
	X(MET_FEE_RECOMMENDED, "outbox_fee_recommended_stroops", "recommended base fee last published/used") \
	X(MET_FEE_AGGRESSIVE, "outbox_fee_aggressive_stroops", "aggressive base fee last published/used") \
	X(MET_FEE_CONGESTION, "outbox_fee_congestion_level", "congestion level 0=low 1=elevated 2=high 3=severe") \
	X(MET_SNAPSHOT_AGE_MS, "outbox_snapshot_age_ms", "age of the fee snapshot at the last read") \
	X(MET_CHILDREN_RUNNING, "outbox_children_running", "children currently running (supervisor)") \
	X(MET_KAFKA_QUEUE, "outbox_kafka_queue", "events in the Kafka producer's queue (not yet acknowledged)") \
	X(MET_EVENTS_BACKLOG, "outbox_events_unpublished", "events of this process's chains not yet on Kafka") \
	X(MET_HTTP_WAITING, "outbox_http_waiting_requests", "synchronous enqueues waiting for their op to end")

#define SHM_HISTOGRAMS(X) \
	X(MET_LOOP_LATENCY_US, "outbox_loop_latency_us", "event loop iteration time in microseconds", 16) \
	X(MET_FEE_POLL_MS, "outbox_fee_poll_ms", "fee oracle poll round trip in milliseconds", 4) \
	X(MET_PUBLISH_WAIT_US, "outbox_fee_publish_wait_us", "time a publish waited for a free slot in microseconds", 1) \
	X(MET_ENQUEUE_TO_CLAIM_MS, "outbox_enqueue_to_claim_ms", "op creation to claim in milliseconds", 1) \
	X(MET_ENQUEUE_TO_SEND_MS, "outbox_enqueue_to_send_ms", "op creation to first send in milliseconds", 1) \
	X(MET_CLAIM_MS, "outbox_claim_ms", "a worker's claim statement, sent to answered, in milliseconds (regular and CRITICAL-only)", 1) \
	X(MET_SIMULATE_MS, "outbox_simulate_ms", "a worker's simulateTransaction call, sent to answered, in milliseconds", 1) \
	X(MET_ATTEMPT_WRITE_MS, "outbox_attempt_write_ms", "a write-ahead attempt row, sent to committed (queue and group commit included), in milliseconds", 1)
#define SHM_COUNTER_FAMILIES(X) \
	X(FAM_OPS, "outbox_ops_total", "worker decisions about ops: confirmed, sent back for a retry, failed", KIND, PRIORITY, OUTCOME) \
	X(FAM_FEE_BUMPS, "outbox_fee_bump_total", "fee-bump envelopes recorded and sent", KIND, NONE, NONE) \
	X(FAM_MAX_FEE_HIT, "outbox_max_fee_hit_total", "fee bids capped, or bumps held back, by OUTBOX_MAX_ABS_FEE", PRIORITY, NONE, NONE)

#define SHM_HIST_FAMILIES(X) \
	X(HFAM_OP_LATENCY, "outbox_op_latency_seconds", "op creation to confirmation", KIND, PRIORITY, NONE, 50, 1000) \
	X(HFAM_DISPATCH, "outbox_dispatch_seconds", "claim of an op to its first send: fee policy, simulation, signing, the write-ahead attempt row (no wait for the signer: a claim takes only free signers)", PRIORITY, NONE, NONE, 1, 1000)
/* clang-format on */

/* Label dimensions of the families; each value list is fixed (stats.c). */
enum shm_dim { SHM_DIM_NONE, SHM_DIM_KIND, SHM_DIM_PRIORITY, SHM_DIM_OUTCOME, SHM_N_DIMS };
#define SHM_DIM_NONE_N     1
#define SHM_DIM_KIND_N     4 /* enum op_kind (common/priority.h) */
#define SHM_DIM_PRIORITY_N 3 /* enum op_priority */
#define SHM_DIM_OUTCOME_N  3 /* enum shm_outcome */
enum shm_outcome { SHM_OUTCOME_CONFIRMED, SHM_OUTCOME_RETRY, SHM_OUTCOME_FAILED };

#define SHM_METRIC_ENUM_(id, ...) id,
enum shm_counter_id { SHM_COUNTERS(SHM_METRIC_ENUM_) SHM_N_COUNTERS };
enum shm_gauge_id { SHM_GAUGES(SHM_METRIC_ENUM_) SHM_N_GAUGES };
enum shm_hist_id { SHM_HISTOGRAMS(SHM_METRIC_ENUM_) SHM_N_HISTS };
enum shm_family_id { SHM_COUNTER_FAMILIES(SHM_METRIC_ENUM_) SHM_N_FAMILIES };
enum shm_hfamily_id { SHM_HIST_FAMILIES(SHM_METRIC_ENUM_) SHM_N_HFAMILIES };

#endif
