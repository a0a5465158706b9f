#!/usr/bin/env bash
# prometheus_check.sh RULES TESTS RUNBOOK - the alert rules load (`promtool
# check rules`) and behave as their unit tests say (`promtool test rules`):
# each alert fires on the series that must fire it, at the time its window
# and `for:` decide, with its labels and annotations, and stays quiet
# otherwise. Every alert has a test expecting it to fire and one expecting
# silence, and a runbook: its annotation points at RUNBOOK#<alert, lower
# case>, and RUNBOOK has that heading.
set -euo pipefail
rules=$1 tests=$2 runbook=$3
die() {
	echo "prometheus_check: $*" >&2
	exit 1
}
command -v promtool >/dev/null || die "promtool is missing (Debian package prometheus, in ops/lib/deps.sh)"
promtool check rules "$rules" || die "promtool check rules $rules failed"
# promtool resolves rule_files relative to the test file's directory.
[[ $(dirname -- "$(realpath -- "$rules")") == $(dirname -- "$(realpath -- "$tests")") ]] ||
	die "$tests must sit beside $rules (its rule_files names the rules by file name)"
promtool test rules "$tests" || die "promtool test rules $tests failed"
# Every alert of the rules has a test that expects it to fire.
alerts=$(sed -nE 's/^ *- alert: *([A-Za-z0-9_]+) *$/\1/p' "$rules" | sort -u)
[[ -n $alerts ]] || die "no alert in $rules"
fail=0
while read -r a; do
	# an alert_rule_test entry for it whose exp_alerts is not empty
	for want in fire silence; do
		if ! awk -v a="$a" -v want="$want" '
			$1 == "alertname:" { cur = $2 }
			$1 == "exp_alerts:" && cur == a && (want == "silence") == ($2 == "[]") { found = 1 }
			END { exit !found }' "$tests"; then
			echo "prometheus_check: $a has no test in $tests that expects it to $want" >&2
			fail=1
		fi
	done
	anchor=$(tr '[:upper:]' '[:lower:]' <<<"$a")
	link="$(basename -- "$(dirname -- "$runbook")")/$(basename -- "$runbook")#$anchor"
	# the rule's runbook annotation: the first one after its "- alert:" line
	got=$(awk -v a="$a" '
		$1 == "-" && $2 == "alert:" { cur = $3 }
		$1 == "runbook:" && cur == a { print $2; exit }' "$rules")
	[[ $got == "$link" ]] || {
		echo "prometheus_check: $a: runbook annotation '$got', expected '$link'" >&2
		fail=1
	}
	grep -qE "^#+ +$a *\$" "$runbook" || {
		echo "prometheus_check: $runbook has no heading '$a' (the runbook of the alert)" >&2
		fail=1
	}
done <<<"$alerts"
((fail == 0)) || exit 1
echo "$(wc -l <<<"$alerts") alerts, each tested firing and silent, each with its runbook section"
