# tests/db.cmake - the database area's extra targets.
#
# bench_enqueue (tests/bench/enqueue.c): enqueue throughput and the cost of
# each wake-up design; built into the build root, not a ctest (benchmarks
# never assert on timings). Run: OUTBOX_PG_BASE=... ./bench_enqueue
add_executable(bench_enqueue ${CMAKE_CURRENT_SOURCE_DIR}/bench/enqueue.c)
target_link_libraries(bench_enqueue PRIVATE ${OUTBOX_TEST_LIBS} Threads::Threads m)
set_target_properties(bench_enqueue PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# check_migrate runs the real outboxctl binary: build it first.
if(TARGET check_migrate AND TARGET outboxctl)
	add_dependencies(check_migrate outboxctl)
endif()
