# The demo (ops/demo.sh), so the README's first screen stays true. Each test
# runs it against this build tree (OUTBOX_BUILD_DIR) and the PostgreSQL the
# other integration suites use (OUTBOX_PG_BASE / OUTBOX_DATABASE_URL from the
# environment, else 127.0.0.1:5432), with the broker of OUTBOX_KAFKA_BROKERS
# (which ops/test.sh exports), else its own:
#   demo            --quick: every op terminal, each confirmed one executed
#                   exactly once, the events on Kafka audited clean (demo/quick.sh)
#   demo_load       a 15 s load with every fault: the summary (every op
#                   settled as it should, business rows, exactly once, the
#                   audit, the charts) (demo/load.sh)
#   demo_interrupt  Ctrl-C in the middle of the load stops everything it
#                   started and removes what it made (demo/interrupt.sh)
# stellar-sim comes from sim.cmake, included after this file: REQUIRED_FILES
# names it with the other binaries the demo runs (all in the default build).
# check_demo: the demo's pure parts (the business mix, the charts).
outbox_suite(check_demo LIBS outbox_demo_pure PkgConfig::JANSSON)
if(TARGET outboxd AND TARGET outboxctl)
	set(demo_bins outboxd outboxctl stellar-sim kafka-topic outbox-demo-load outbox-demo-report)
	list(TRANSFORM demo_bins PREPEND ${CMAKE_BINARY_DIR}/ OUTPUT_VARIABLE demo_files)
	foreach(t quick load interrupt)
		set(name demo_${t})
		if(t STREQUAL quick)
			set(name demo)
		endif()
		add_test(NAME ${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/demo/${t}.sh
			${CMAKE_SOURCE_DIR}/ops/demo.sh)
		set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 300
			ENVIRONMENT "OUTBOX_BUILD_DIR=${CMAKE_BINARY_DIR};OUTBOX_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
			REQUIRED_FILES "${demo_files}"
			RESOURCE_LOCK kafka_broker)
	endforeach()
endif()
