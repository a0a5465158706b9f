# Deployment files of ops/ (ops/README.md): the systemd unit and its
# environment file, the Prometheus alert rules and their unit tests, the
# Grafana dashboard, and the metric names they use. Shell tests (label unit:
# no service needed); they need systemd-analyze, promtool and jq
# (ops/lib/deps.sh installs them), and fail, naming the tool, without them.
set(deploy_dir ${CMAKE_CURRENT_SOURCE_DIR}/deploy)

if(TARGET outboxd)
	add_test(NAME deploy_systemd COMMAND ${deploy_dir}/systemd_check.sh $<TARGET_FILE:outboxd>
		${CMAKE_SOURCE_DIR}/ops/systemd/outboxd.service ${CMAKE_SOURCE_DIR}/ops/systemd/outboxd.env)
	set_tests_properties(deploy_systemd PROPERTIES LABELS unit TIMEOUT 60)
endif()

add_test(NAME deploy_prometheus COMMAND ${deploy_dir}/prometheus_check.sh
	${CMAKE_SOURCE_DIR}/ops/prometheus/outboxd-alerts.yml
	${CMAKE_SOURCE_DIR}/ops/prometheus/outboxd-alerts.test.yml ${CMAKE_SOURCE_DIR}/ops/README.md)
set_tests_properties(deploy_prometheus PROPERTIES LABELS unit TIMEOUT 60)

add_test(NAME deploy_grafana COMMAND ${deploy_dir}/grafana_check.sh
	${CMAKE_SOURCE_DIR}/ops/grafana/outboxd-dashboard.json)
set_tests_properties(deploy_grafana PROPERTIES LABELS unit TIMEOUT 60)

set(deploy_metric_files ${CMAKE_SOURCE_DIR}/ops/prometheus/outboxd-alerts.yml
	${CMAKE_SOURCE_DIR}/ops/prometheus/outboxd-alerts.test.yml
	${CMAKE_SOURCE_DIR}/ops/grafana/outboxd-dashboard.json)
add_test(NAME deploy_metric_names COMMAND ${deploy_dir}/metric_names.sh ${CMAKE_SOURCE_DIR}
	${deploy_metric_files})
set_tests_properties(deploy_metric_names PROPERTIES LABELS unit TIMEOUT 60)

# The name check proven once: a rule with a misspelt metric must fail it.
add_test(NAME deploy_metric_names_catches_a_typo COMMAND ${deploy_dir}/metric_names.sh
	--expect-unknown outbox_stuck_submited ${CMAKE_SOURCE_DIR} ${deploy_metric_files}
	${deploy_dir}/fixtures/unknown-metric.yml)
set_tests_properties(deploy_metric_names_catches_a_typo PROPERTIES LABELS unit TIMEOUT 60)
