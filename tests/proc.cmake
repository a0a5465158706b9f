# Process group (issue 5): unit tests whose modules live outside common/, or
# whose common/ module needs another wing, and the integration suites that
# run outboxd itself.
if(TARGET check_congestion)
	target_link_libraries(check_congestion PRIVATE outbox_oracle)
endif()
# common/config.c and common/keys.c decode strkeys (common/stellar).
foreach(t check_config check_keys)
	if(TARGET ${t})
		target_link_libraries(${t} PRIVATE outbox_common outbox_stellar outbox_common)
	endif()
endforeach()
# The integration suites drive the real binaries.
foreach(t check_supervisor check_oracle)
	if(TARGET ${t})
		foreach(dep outboxd outboxctl stellar-sim)
			if(TARGET ${dep})
				add_dependencies(${t} ${dep})
			endif()
		endforeach()
	endif()
endforeach()
