# Dispatch engine: the structural executors test and the integration suites
# that drive outboxd + stellar-sim.

# Only worker/executors.c may call the raw submit function: every envelope
# leaves through the executors table, after its attempt row committed. The
# test lists the undefined references to submit_raw_send in every object of
# the worker library and fails on any object but executors.c.o (and when
# executors.c.o does not reference it, or submit.c.o does not define it, so
# the check cannot pass vacuously after a rename).
if(TARGET outbox_worker)
	find_program(OUTBOX_NM nm)
	if(OUTBOX_NM)
		add_test(NAME worker_raw_submit_only_in_executors
			COMMAND sh -c "set -e
out=$(\"$0\" -A \"$1\")
bad=$(printf '%s\\n' \"$out\" | grep ' U submit_raw_send$' | grep -v ':executors\\.c\\.o:' || true)
if [ -n \"$bad\" ]; then echo \"raw submit referenced outside executors.c: $bad\"; exit 1; fi
printf '%s\\n' \"$out\" | grep -q ':executors\\.c\\.o: *U submit_raw_send$' || { echo 'executors.c.o does not call submit_raw_send'; exit 1; }
printf '%s\\n' \"$out\" | grep -q ':submit\\.c\\.o:.* T submit_raw_send$' || { echo 'submit.c.o does not define submit_raw_send'; exit 1; }
echo ok" ${OUTBOX_NM} $<TARGET_FILE:outbox_worker>)
		set_tests_properties(worker_raw_submit_only_in_executors PROPERTIES LABELS unit)
	endif()
endif()

# worker/due.c, the jobs by due time: a pure structure, tested against a list.
outbox_suite(check_due LIBS outbox_worker)
# worker/tx_index.c, the jobs by their envelopes' hashes, against the walk it replaced.
outbox_suite(check_tx_index LIBS outbox_worker)
# worker/trace.c, an op's path to its send split into parts.
outbox_suite(check_send_trace LIBS outbox_worker)

foreach(s check_dispatch check_dispatch_multi check_dispatch_fees check_exactly_once)
	outbox_suite(${s} LIBS outbox_testsupport outbox_stellar DEPENDS outboxd outboxctl stellar-sim)
endforeach()

# bench_dispatch (tests/bench/dispatch.c): confirmed ops/s, enqueue-to-send
# latency, CPU per op of every process of the run, PostgreSQL's time by
# statement, the minimal durable outbox (pgbench) and the graphile-worker
# peer (tests/bench/graphile/); built into the build root, not a ctest
# (benchmarks never assert on timings).
# Run: OUTBOX_BUILD_DIR=<build> OUTBOX_PG_BASE=... ./bench_dispatch
add_executable(bench_dispatch ${CMAKE_CURRENT_SOURCE_DIR}/bench/dispatch.c)
target_link_libraries(bench_dispatch PRIVATE outbox_bench ${OUTBOX_TEST_LIBS})
target_compile_definitions(bench_dispatch PRIVATE
	BENCH_GRAPHILE_DIR="${CMAKE_SOURCE_DIR}/tests/bench/graphile")
set_target_properties(bench_dispatch PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
foreach(dep outboxd outboxctl stellar-sim)
	if(TARGET ${dep})
		add_dependencies(bench_dispatch ${dep})
	endif()
endforeach()
