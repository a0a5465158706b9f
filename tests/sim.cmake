# stellar-sim: the local Stellar RPC network (tests/stellar-sim/), its node
# interop checks (tests/sim/) and its load bench (tests/bench/sim_load).
file(GLOB sim_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/stellar-sim/*.c)
add_executable(stellar-sim ${sim_srcs})
target_link_libraries(stellar-sim PRIVATE outbox_stellar outbox_common PkgConfig::MHD
	PkgConfig::JANSSON PkgConfig::SODIUM Threads::Threads)
set_target_properties(stellar-sim PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
outbox_suite(check_stellar_sim LIBS outbox_stellar DEPENDS stellar-sim)

# The official SDK against the sim (tests/sim/*.js, one test each, sim_<name>):
# sdk_flow.js uses @stellar/stellar-base from tests/interop/node_modules
# (ops/lib/prepare.d/interop.sh); sdk_rpc.js drives the sim with
# @stellar/stellar-sdk's rpc.Server from tests/sim/node_modules
# (ops/lib/prepare.d/sim.sh). A missing package fails the test.
file(GLOB sim_js CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/sim/*.js)
foreach(js ${sim_js})
	get_filename_component(n ${js} NAME_WE)
	add_test(NAME sim_${n} COMMAND node ${js} ${CMAKE_BINARY_DIR})
	set_tests_properties(sim_${n} PROPERTIES LABELS integration TIMEOUT 120)
endforeach()

# Load bench helper: pre-generates signed sendTransaction bodies (tests/bench/sim_load).
add_executable(sim_txgen ${CMAKE_SOURCE_DIR}/tests/bench/sim_txgen.c)
target_link_libraries(sim_txgen PRIVATE outbox_stellar PkgConfig::CURL PkgConfig::JANSSON
	PkgConfig::SODIUM)
set_target_properties(sim_txgen PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
