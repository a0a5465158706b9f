# tests/rpc.cmake - the RPC client's integration test runs its own
# libmicrohttpd fixture server, so it links libmicrohttpd too.
if(TARGET check_rpc_client)
	target_link_libraries(check_rpc_client PRIVATE PkgConfig::MHD)
	set_tests_properties(check_rpc_client PROPERTIES TIMEOUT 300)
endif()
