#!/usr/bin/env bash
# readme_knobs.sh OUTBOXD README - every variable `outboxd --help` lists is
# documented in the README's configuration table with the same default, and
# the table lists no variable outboxd does not know. Keeps the docs true.
set -euo pipefail
outboxd=$1 readme=$2
help=$("$outboxd" --help 2>&1)
vars=$(sed -nE 's/^  ([A-Z][A-Z0-9_]+) +default: (.*)$/\1/p' <<<"$help")
[[ -n $vars ]] || { echo "no variables in outboxd --help"; exit 1; }
fail=0
while read -r v; do
	def=$(sed -nE "s/^  $v +default: (.*)\$/\1/p" <<<"$help" | sed -E 's/ +\[reload\]$//')
	row=$(grep -F "| \`$v\` |" "$readme" || true)
	if [[ -z $row ]]; then
		echo "README.md: $v is not documented"; fail=1
	elif [[ $row != *"| $def |"* ]]; then
		echo "README.md: $v default differs (outboxd says '$def'): $row"; fail=1
	fi
done <<<"$vars"
while read -r v; do
	grep -qx "$v" <<<"$vars" || { echo "README.md documents unknown variable $v"; fail=1; }
done < <(sed -nE 's/^\| `([A-Z][A-Z0-9_]+)` \|.*/\1/p' "$readme")
n=$(wc -l <<<"$vars")
[[ $fail == 0 ]] && echo "README documents all $n variables with their defaults"
exit $fail
