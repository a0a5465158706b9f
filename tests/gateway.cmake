# The HTTP gateway (ops/gateway/) over real HTTP: libcurl against outboxd +
# stellar-sim + PostgreSQL; /metrics through promtool (Debian's prometheus).
outbox_suite(check_gateway LIBS outbox_testsupport outbox_stellar PkgConfig::CURL
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 900)
# The web console (ops/gateway/console/) in Debian's chromium, headless, driven
# by puppeteer-core (tests/console/console.mjs; installed into tests/console by
# ops/lib/prepare.d/console.sh) against outboxd + stellar-sim + PostgreSQL.
outbox_suite(check_console LIBS outbox_testsupport outbox_stellar PkgConfig::CURL
	DEPENDS outboxd outboxctl stellar-sim TIMEOUT 900)
# The console's chart and rates (ops/gateway/console_chart.c), pure.
outbox_suite(check_console_chart LIBS outbox_gateway m)
