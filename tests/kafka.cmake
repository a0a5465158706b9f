# Kafka (ops/kafka.sh runs a real single-node broker; ops/test.sh starts it
# and exports OUTBOX_KAFKA_BROKERS before ctest).
#
# kafka-topic: creates a topic with N partitions through librdkafka's admin
# API (the broker has no Kafka CLI tools); `ops/kafka.sh topic` runs it.
add_executable(kafka-topic ${CMAKE_SOURCE_DIR}/ops/kafka/kafka_topic.c)
target_link_libraries(kafka-topic PRIVATE PkgConfig::RDKAFKA)
set_target_properties(kafka-topic PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# tests/support/kafkatest.c (the broker from a Check suite) calls librdkafka.
if(TARGET outbox_testsupport)
	target_link_libraries(outbox_testsupport PUBLIC PkgConfig::RDKAFKA)
endif()

# check_kafka stops and restarts the broker through ops/kafka.sh (which
# creates its topics with kafka-topic). Any other test that talks to the
# broker takes the same RESOURCE_LOCK, so `ctest -j` never runs it during
# that outage.
outbox_suite(check_kafka LIBS outbox_testsupport DEPENDS kafka-topic TIMEOUT 240)
set_tests_properties(check_kafka PROPERTIES RESOURCE_LOCK kafka_broker)

# Lifecycle events relayed to the broker by outboxd (stops and restarts the
# broker in its outage case, hence the same lock).
outbox_suite(check_event_relay LIBS outbox_testsupport outbox_stellar outbox_common outbox_shm
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 900)
set_tests_properties(check_event_relay PROPERTIES RESOURCE_LOCK kafka_broker)

# bench_relay (tests/bench/relay.c): events/s the relay sustains to the
# broker and the lag from commit to acknowledgement; built into the build
# root, not a ctest (benchmarks never assert on timings). It creates its
# topic with kafka-topic, found next to it.
# Run: OUTBOX_PG_BASE=... OUTBOX_KAFKA_BROKERS=127.0.0.1:9092 ./bench_relay
add_executable(bench_relay ${CMAKE_CURRENT_SOURCE_DIR}/bench/relay.c)
target_link_libraries(bench_relay PRIVATE ${OUTBOX_TEST_LIBS} PkgConfig::RDKAFKA
	PkgConfig::JANSSON Threads::Threads)
set_target_properties(bench_relay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
add_dependencies(bench_relay kafka-topic)
