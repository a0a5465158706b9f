# tests/bench.cmake - what the benchmarks share: the CPU meter (/proc, by
# class of process: tests/bench/cpumeter.h) and PostgreSQL's time by
# statement or function (tests/bench/stmtstats.h); and the unit suite of the
# meter's classification rule. The benchmarks themselves are declared in
# their areas' files (db.cmake, worker.cmake, kafka.cmake, shm.cmake).
add_library(outbox_bench STATIC ${CMAKE_CURRENT_SOURCE_DIR}/bench/cpumeter.c
	${CMAKE_CURRENT_SOURCE_DIR}/bench/stmtstats.c)
target_link_libraries(outbox_bench PUBLIC outbox_common PkgConfig::JANSSON)
outbox_suite(check_cpumeter LIBS outbox_bench)
