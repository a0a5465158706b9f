# Documentation checks: the README's configuration table matches outboxd --help.
if(TARGET outboxd)
	add_test(NAME docs_readme_knobs COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_knobs.sh
		$<TARGET_FILE:outboxd> ${CMAKE_SOURCE_DIR}/README.md)
	set_tests_properties(docs_readme_knobs PROPERTIES LABELS unit TIMEOUT 30)
endif()
