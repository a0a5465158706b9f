# Chaos scenarios (tests/chaos/, README there): outboxd against its
# environment - PostgreSQL restarted, starved and slow, the RPC killed and
# hostile, the supervisor killed, bad keys files, secrets in every artifact.
#
# ctest runs a bounded selection, each scenario smaller than in the full run
# (tests/chaos/run.sh, the documented command, runs them all at full size;
# tests/chaos/soak.sh is never a ctest). A few minutes in all on a 2-core
# machine. Each prints its JSON summary line and fails on any violation.
#
# They need what ops/test.sh provides: root (a private PostgreSQL cluster per
# scenario, run as the postgres user through runuser), a Kafka broker
# (OUTBOX_KAFKA_BROKERS; they fail without one, like every Kafka suite, and
# take the broker's lock: check_event_relay stops it in its outage case),
# gdb's gcore and kcat (secrets).
#
# backlog.sh is not here: even 2 000 ops take 2-4 minutes on this machine
# (two outboxd runs, three CRITICAL loads, two plan readings, a verdict),
# and a million 5-7.
#
# name|environment of its bounded run (KEY=VALUE, comma-separated)
set(chaos_bounded
	"keys_file|"
	"pg_restart|CHAOS_OPS=600"
	"sim_restart|CHAOS_OPS=300"
	"supervisor_kill|CHAOS_OPS=450"
	"hostile_rpc|CHAOS_OPS=300,CHAOS_FAULT_S=20"
	"secrets|CHAOS_OPS=150")
if(TARGET outboxd AND TARGET outboxctl)
	foreach(entry ${chaos_bounded})
		string(REPLACE "|" ";" parts "${entry}")
		list(GET parts 0 name)
		list(REMOVE_AT parts 0)
		string(REPLACE "," ";" parts "${parts}")
		add_test(NAME chaos_${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/chaos/${name}.sh)
		set_tests_properties(chaos_${name} PROPERTIES LABELS "integration;chaos" TIMEOUT 900
			ENVIRONMENT "OUTBOX_BUILD_DIR=${CMAKE_BINARY_DIR};${parts}"
			REQUIRED_FILES "${CMAKE_BINARY_DIR}/outboxd;${CMAKE_BINARY_DIR}/outboxctl;${CMAKE_BINARY_DIR}/stellar-sim;${CMAKE_BINARY_DIR}/kafka-topic"
			RESOURCE_LOCK kafka_broker)
	endforeach()
endif()
