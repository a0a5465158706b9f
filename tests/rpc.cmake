# tests/rpc.cmake - the RPC client's integration test runs its own
# libmicrohttpd fixture server (so it links libmicrohttpd) and, in its
# "stellar-sim" case, the project's simulator (so it needs that built).
if(TARGET check_rpc_client)
	target_link_libraries(check_rpc_client PRIVATE PkgConfig::MHD)
	add_dependencies(check_rpc_client stellar-sim)
	set_tests_properties(check_rpc_client PROPERTIES TIMEOUT 300)
endif()
