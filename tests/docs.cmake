# Documentation checks: the README's configuration table matches outboxd --help.
if(TARGET outboxd)
	add_test(NAME docs_readme_knobs COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_knobs.sh
		$<TARGET_FILE:outboxd> ${CMAKE_SOURCE_DIR}/README.md)
	set_tests_properties(docs_readme_knobs PROPERTIES LABELS unit TIMEOUT 30)
endif()

# The layout's arrows (tests/docs/layering.sh): by #include line in the sources
# and, with nm, by symbol in what the build made of each group.
set(layering_groups
	"common=$<TARGET_FILE:outbox_common>,$<TARGET_FILE:outbox_stellar>,$<TARGET_FILE:outbox_shm>"
	"oracle=$<TARGET_FILE:outbox_oracle>"
	"worker=$<TARGET_FILE:outbox_worker>"
	"gateway=$<TARGET_FILE:outbox_gateway>"
	"supervisor=$<JOIN:$<TARGET_OBJECTS:outboxd>,,>"
	"ops=$<JOIN:$<TARGET_OBJECTS:outboxctl>,,>")
add_test(NAME layering COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/layering.sh ${CMAKE_SOURCE_DIR}
	${layering_groups})
set_tests_properties(layering PROPERTIES LABELS unit TIMEOUT 60)

# The check proven once: a fixture object that calls a worker function,
# handed over as part of common/, must make it fail and be named.
add_library(layering_violation STATIC ${CMAKE_CURRENT_SOURCE_DIR}/docs/layering_violation.c)
add_test(NAME layering_catches_a_violation
	COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/layering.sh --expect-violation claim_tick
		${CMAKE_SOURCE_DIR}
		"common=$<TARGET_FILE:outbox_common>,$<TARGET_FILE:layering_violation>"
		"worker=$<TARGET_FILE:outbox_worker>")
set_tests_properties(layering_catches_a_violation PROPERTIES LABELS unit TIMEOUT 60)
