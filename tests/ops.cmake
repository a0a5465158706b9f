# ops/: outboxctl's pure parts, and the suites that drive it against a
# running instance.
outbox_suite(check_top_view LIBS outbox_top_view)
# check_top drives the live view in tmux (a Debian package of ops/lib/deps.sh).
outbox_suite(check_top LIBS outbox_testsupport outbox_stellar DEPENDS outboxd outboxctl stellar-sim
	TIMEOUT 600)
outbox_suite(check_ctl_ops LIBS outbox_testsupport outbox_stellar DEPENDS outboxd outboxctl stellar-sim
	TIMEOUT 300)
