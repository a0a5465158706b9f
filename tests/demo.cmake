# The demo (ops/demo.sh) as a test, so the README's first screen stays true:
# it runs against this build tree (OUTBOX_BUILD_DIR) and the PostgreSQL the
# other integration suites use (OUTBOX_PG_BASE / OUTBOX_DATABASE_URL from the
# environment, else 127.0.0.1:5432), must exit 0, and its output must show
# every op terminal: the watcher's "all N ops terminal", and one CONFIRMED or
# FAILED line per op in the exactly-once table; and `outboxctl audit --verify`
# of the events on Kafka clean (the broker of OUTBOX_KAFKA_BROKERS, which
# ops/test.sh exports).
# stellar-sim comes from sim.cmake, included after this file: REQUIRED_FILES
# names it with the two daemons' binaries (all three are in the default build).
if(TARGET outboxd AND TARGET outboxctl)
	add_test(NAME demo COMMAND sh -c "out=$(\"$0\" 2>&1); rc=$?
printf '%s\\n' \"$out\"
[ $rc -eq 0 ] || { echo \"demo.sh exited $rc\"; exit 1; }
n=$(printf '%s\\n' \"$out\" | sed -n 's/^ *all \\([0-9][0-9]*\\) ops terminal$/\\1/p')
[ -n \"$n\" ] || { echo 'no \"all N ops terminal\" line'; exit 1; }
t=$(printf '%s\\n' \"$out\" | grep -cE '^ +op [0-9]+ +(CONFIRMED|FAILED) .* executed [01]$')
[ \"$t\" -eq \"$n\" ] || { echo \"$t terminal ops in the executions table, want $n\"; exit 1; }
printf '%s\\n' \"$out\" | grep -q '^ *audit: clean$' || { echo 'no clean audit of the events on Kafka'; exit 1; }
printf '%s\\n' \"$out\" | grep -q '^demo: OK in ' || { echo 'no \"demo: OK\" line'; exit 1; }
echo \"demo test: ok ($n ops terminal)\"" ${CMAKE_SOURCE_DIR}/ops/demo.sh)
	set_tests_properties(demo PROPERTIES LABELS integration TIMEOUT 150
		ENVIRONMENT "OUTBOX_BUILD_DIR=${CMAKE_BINARY_DIR};OUTBOX_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
		REQUIRED_FILES "${CMAKE_BINARY_DIR}/outboxd;${CMAKE_BINARY_DIR}/outboxctl;${CMAKE_BINARY_DIR}/stellar-sim;${CMAKE_BINARY_DIR}/kafka-topic"
		RESOURCE_LOCK kafka_broker)
endif()
