# Fuzz targets: tests/fuzz/fuzz_<name>.c, each a libFuzzer entry point
# (LLVMFuzzerTestOneInput), seeded from tests/fuzz/corpus/<name>/. Built only
# in the clang build (OUTBOX_FUZZ=ON); run for OUTBOX_FUZZ_SECONDS (default 20)
# each by ops/test.sh. New inputs go to a scratch dir, never into the repo.
if(OUTBOX_FUZZ)
	file(GLOB fuzz_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_*.c)
	foreach(src ${fuzz_srcs})
		get_filename_component(n ${src} NAME_WE)
		string(REGEX REPLACE "^fuzz_" "" short ${n})
		add_executable(${n} ${src})
		target_link_libraries(${n} PRIVATE ${OUTBOX_TEST_LIBS} m)
		if(n STREQUAL fuzz_gateway_request)
			# ops/gateway/request.c, the pure decoding (the rest of the
			# gateway is not linked in: static archives give what is used)
			target_link_libraries(${n} PRIVATE outbox_gateway)
		endif()
		target_link_options(${n} PRIVATE -fsanitize=fuzzer)
		add_test(NAME ${n} COMMAND sh -c
			"d=$(mktemp -d) && ./${n} -max_total_time=\${OUTBOX_FUZZ_SECONDS:-20} -rss_limit_mb=1024 -malloc_limit_mb=128 -timeout=5 -print_final_stats=1 \"$d\" ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${short}; rc=$?; rm -rf \"$d\"; exit $rc")
		set_tests_properties(${n} PROPERTIES LABELS fuzz TIMEOUT 300
			ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")
	endforeach()
endif()
