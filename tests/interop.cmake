# SDK interop (tests/interop/): outboxd's C Stellar layer against the official
# JavaScript SDK (@stellar/stellar-base 15, installed into tests/interop by
# ops/lib/prepare.d/interop.sh), both directions, over random transactions:
#   C builds + signs (interop_gen)  -> the SDK decodes, hashes, verifies;
#   the SDK builds + signs          -> outboxctl tx decode, compared field by field.
# 1000 transactions per direction (OUTBOX_INTEROP_COUNT overrides; the seed is
# printed, OUTBOX_INTEROP_SEED replays it).
add_executable(interop_gen ${CMAKE_CURRENT_SOURCE_DIR}/interop/gen_c.c)
target_link_libraries(interop_gen PRIVATE outbox_stellar)
set_target_properties(interop_gen PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

add_test(NAME interop_sdk COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/interop/interop.js
	--gen $<TARGET_FILE:interop_gen> --ctl $<TARGET_FILE:outboxctl>)
set_tests_properties(interop_sdk PROPERTIES LABELS integration TIMEOUT 900)
