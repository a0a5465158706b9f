# tests/db.cmake - the database area: the schema and its SQL (the enqueue
# contract against the C client, migrations through the real outboxctl, the
# dispatch SQL), and its benchmark.
outbox_suite(check_enqueue LIBS outbox_testsupport outbox_common)
outbox_suite(check_migrate LIBS outbox_testsupport DEPENDS outboxctl)
outbox_suite(check_dispatch_sql LIBS outbox_testsupport)
outbox_suite(check_row_rules LIBS outbox_testsupport)
outbox_suite(check_archive LIBS outbox_testsupport outbox_common DEPENDS outboxctl)

# bench_enqueue (tests/bench/enqueue.c): enqueue throughput and the cost of
# each wake-up design; built into the build root, not a ctest (benchmarks
# never assert on timings). Run: OUTBOX_PG_BASE=... ./bench_enqueue
add_executable(bench_enqueue ${CMAKE_CURRENT_SOURCE_DIR}/bench/enqueue.c)
target_link_libraries(bench_enqueue PRIVATE outbox_bench ${OUTBOX_TEST_LIBS} Threads::Threads m)
set_target_properties(bench_enqueue PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
