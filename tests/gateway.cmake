# The HTTP gateway (ops/gateway/) over real HTTP: libcurl against outboxd +
# stellar-sim + PostgreSQL; /metrics through promtool (Debian's prometheus).
outbox_suite(check_gateway LIBS outbox_testsupport outbox_stellar PkgConfig::CURL
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 900)
# Hostile HTTP over raw sockets against a running gateway: oversized,
# truncated, invalid and pipelined requests, slow drips, idle connections
# beyond the limits; the gateway must stay the same process and keep serving.
outbox_suite(check_gateway_hostile LIBS outbox_testsupport outbox_stellar
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 1200)
# The gateway's pure request decoding (ops/gateway/request.c), no service.
outbox_suite(check_gateway_request LIBS outbox_gateway)
# The web console (ops/gateway/console/) in Debian's chromium, headless, driven
# by puppeteer-core (tests/console/console.mjs; installed into tests/console by
# ops/lib/prepare.d/console.sh) against outboxd + stellar-sim + PostgreSQL.
outbox_suite(check_console LIBS outbox_testsupport outbox_stellar PkgConfig::CURL
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 900)
# The console's chart and rates (ops/gateway/console_chart.c), pure.
outbox_suite(check_console_chart LIBS outbox_gateway m)
