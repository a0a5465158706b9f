# The HTTP gateway (ops/gateway/) over real HTTP: libcurl against outboxd +
# stellar-sim + PostgreSQL; /metrics through promtool (Debian's prometheus).
outbox_suite(check_gateway LIBS outbox_testsupport outbox_stellar PkgConfig::CURL
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 900)
