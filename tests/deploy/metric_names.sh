#!/usr/bin/env bash
# metric_names.sh [--expect-unknown NAME] SRC FILE... - every metric the alert
# rules, their tests and the dashboard name (FILE: .yml or .json) is one
# outboxd exports. What it exports is read from the sources, never a copy:
#   - common/shm/metrics.h: the names of its X-macro tables (counters,
#     gauges, histograms, labeled families), which the gateway's /metrics
#     serves as they are;
#   - ops/gateway/*.c: the names the gateway's /metrics writes itself (fee
#     snapshot, process table, queue depth from PostgreSQL, ...): every
#     string literal that starts with a metric name.
# A histogram's series (_bucket, _sum, _count) count as its name. Names are
# the tokens outbox_* and fee_oracle_* outside comments; Prometheus's own
# (up, ...) are not checked.
# --expect-unknown NAME: succeed only if the check fails and names NAME (the
# proof that the check can fail; tests/deploy.cmake runs it on a fixture).
set -euo pipefail
expect=
if [[ ${1:-} == --expect-unknown ]]; then
	expect=$2
	shift 2
fi
src=$1
shift
die() {
	echo "metric_names: $*" >&2
	exit 1
}
metrics_h=$src/common/shm/metrics.h
[[ -f $metrics_h ]] || die "$metrics_h is missing"
known=$(grep -oE 'X\([A-Z0-9_]+, *"[a-z_:][a-z0-9_:]*"' "$metrics_h" | sed -E 's/.*"(.*)"/\1/')
[[ -n $known ]] || die "no metric names in $metrics_h"
n_h=$(wc -l <<<"$known")
n_gw=0
if compgen -G "$src/ops/gateway/*.c" >/dev/null; then
	gw=$(cat "$src"/ops/gateway/*.c | grep -oE '"(outbox|fee_oracle)_[a-z0-9_]+[ {"\\]' |
		sed -E 's/^"//; s/.$//' | sort -u)
	n_gw=$(grep -c . <<<"$gw" || true)
	known=$(printf '%s\n%s\n' "$known" "$gw")
	where="metrics.h ($n_h) and ops/gateway/ ($n_gw)"
else
	where="metrics.h ($n_h); this tree has no ops/gateway/, whose /metrics serves the names beyond it"
fi
known=$(sort -u <<<"$known")

# name<TAB>file of every metric token used
used=$(for f in "$@"; do
	case $f in
	*.json) jq -r '[.. | objects | (.expr?, .definition?, .query?)] | .[] | strings' "$f" ;;
	*) grep -vE '^[[:space:]]*#' "$f" ;;
	esac | grep -oE '\b(outbox|fee_oracle)_[a-z0-9_]+' | sort -u | sed "s|\$|	$(basename -- "$f")|"
done)
[[ -n $used ]] || die "no metric names found in $* (the check would prove nothing)"

unknown=
while IFS=$'\t' read -r name file; do
	base=$name
	if ! grep -qx "$name" <<<"$known"; then
		base=$(sed -E 's/_(bucket|sum|count)$//' <<<"$name")
		grep -qx "$base" <<<"$known" && continue
		unknown+="$name ($file)"$'\n'
	fi
done <<<"$used"

if [[ -n $expect ]]; then
	if [[ -z $unknown ]]; then
		die "expected an unknown metric '$expect', found none: the check cannot fail"
	fi
	grep -q "^$expect " <<<"$unknown" || die "expected '$expect' among the unknown names, got: $unknown"
	echo "the check fails as it must, naming: $(tr '\n' ' ' <<<"$unknown")"
	exit 0
fi
if [[ -n $unknown ]]; then
	echo "metric_names: not exported by outboxd (known: $where):" >&2
	printf '%s' "$unknown" | sed 's/^/  /' >&2
	exit 1
fi
echo "$(cut -f1 <<<"$used" | sort -u | wc -l) metric names used in $# files, all exported (known: $where)"
