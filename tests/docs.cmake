# Documentation checks: the README's configuration table matches outboxd --help.
if(TARGET outboxd)
	add_test(NAME docs_readme_knobs COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_knobs.sh
		$<TARGET_FILE:outboxd> ${CMAKE_SOURCE_DIR}/README.md)
	set_tests_properties(docs_readme_knobs PROPERTIES LABELS unit TIMEOUT 30)
endif()
add_test(NAME layering COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/docs/layering.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(layering PROPERTIES LABELS unit TIMEOUT 30)
