# ops/: outboxctl's pure parts, and the suites that drive it against a
# running instance.
outbox_suite(check_top_view LIBS outbox_top_view)
# check_top drives the live view in tmux (a Debian package of ops/lib/deps.sh).
outbox_suite(check_top LIBS outbox_testsupport outbox_stellar DEPENDS outboxd outboxctl stellar-sim
	TIMEOUT 600)
outbox_suite(check_ctl_ops LIBS outbox_testsupport outbox_stellar DEPENDS outboxd outboxctl stellar-sim
	TIMEOUT 300)
# Every outboxctl command answers --help with its usage on stdout and exit 0
# (the commands are read from `outboxctl --help`, so a new one is covered).
add_test(NAME outboxctl_help COMMAND sh -c "set -e
ctl=\"$0\"
cmds=$(\"$ctl\" --help | sed -n 's/^  \\([a-z]*\\) .*/\\1/p')
[ -n \"$cmds\" ] || { echo 'outboxctl --help lists no command'; exit 1; }
for c in $cmds; do
	[ \"$c\" = version ] && continue
	out=$(\"$ctl\" \"$c\" --help 2>/dev/null) || { echo \"outboxctl $c --help exited $?\"; exit 1; }
	printf '%s\\n' \"$out\" | grep -q \"^usage: outboxctl $c\" || { echo \"outboxctl $c --help: no usage line: $out\"; exit 1; }
done
echo \"ok: $cmds\"" $<TARGET_FILE:outboxctl>)
set_tests_properties(outboxctl_help PROPERTIES LABELS unit)
