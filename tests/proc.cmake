# Process group: unit tests whose modules live outside common/, or whose
# common/ module needs another wing, and the integration suites that run
# outboxd itself.
outbox_suite(check_congestion LIBS outbox_oracle)
# common/config.c and common/keys.c decode strkeys (common/stellar).
outbox_suite(check_config LIBS outbox_common outbox_stellar)
outbox_suite(check_keys LIBS outbox_common outbox_stellar)
# The integration suites drive the real binaries.
outbox_suite(check_supervisor LIBS outbox_testsupport DEPENDS outboxd outboxctl stellar-sim)
# check_oracle signs payments to land in stellar-sim (common/stellar).
outbox_suite(check_oracle LIBS outbox_testsupport outbox_stellar DEPENDS outboxd outboxctl stellar-sim)
