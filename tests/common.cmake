# common/: its pure rules and small modules, each on its own.
foreach(s check_apikey check_backoff check_error check_events check_fate check_fee_policy check_fee_view
		check_pace check_publish_window
		check_feemath check_idempotency check_lifecycle check_log check_priority check_sha256
		check_vshard)
	outbox_suite(${s} LIBS outbox_common)
endforeach()
# common/pgq.c, the PostgreSQL driver of the roles, against a real server
# (and a silent one); its metrics are counted in a stats block (common/shm).
outbox_suite(check_pgq LIBS outbox_common outbox_shm outbox_testsupport)
