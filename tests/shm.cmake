# common/shm/: the segment's suites (unit), the multi-process snapshot stress
# test (integration), and the snapshot read benchmark (not a ctest; prints
# JSON lines; built into the build root: build-<x>/bench_snapshot_read).
foreach(s check_doorbell check_fee_snapshot check_qsbr check_shm_layout check_shm_segment
		check_spsc_ring check_stats check_shm_stress)
	outbox_suite(${s} LIBS outbox_shm)
endforeach()

add_executable(bench_snapshot_read ${CMAKE_CURRENT_SOURCE_DIR}/bench/snapshot_read.c)
target_link_libraries(bench_snapshot_read PRIVATE outbox_shm outbox_common)
if(HIREDIS_FOUND)
	target_link_libraries(bench_snapshot_read PRIVATE PkgConfig::HIREDIS)
	target_compile_definitions(bench_snapshot_read PRIVATE HAVE_HIREDIS)
endif()
set_target_properties(bench_snapshot_read PROPERTIES
	RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
