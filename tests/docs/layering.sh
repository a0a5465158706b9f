#!/usr/bin/env bash
# layering.sh [--expect-violation SYMBOL] SRC [GROUP=FILE[,FILE...] ...]
#
# The dependency arrows of the layout (README.md): common/ knows no role, and
# no role knows another (roles talk only through shared memory, PostgreSQL
# and Kafka). The supervisor is where the roles meet: its role table
# (supervisor/roles.c) may include each role's entry header
# <role dir>/<role>_main.h and call <role>_main, and nothing else of a role.
# ops/gateway/ is a role of its own (the gateway), apart from the rest of
# ops/ (outboxctl).
#
# Checked twice:
#  - in the sources: the #include "..." lines of common/ supervisor/ oracle/
#    worker/ ops/;
#  - in the objects, when GROUP=FILES arguments name the built libraries and
#    objects of each group (common, oracle, worker, supervisor, ops): with
#    nm, every symbol an object of a group leaves undefined, and which group
#    defines it. A common object referencing a symbol a role defines, or a
#    role referencing another role's symbol, fails.
#
# --expect-violation SYMBOL turns the run into a test of the check itself:
# it must fail, and name SYMBOL (tests/docs/layering_violation.c is such a
# fixture).
set -uo pipefail
expect=
if [[ ${1-} == --expect-violation ]]; then
	expect=$2
	shift 2
fi
cd "$1" || exit 1
shift
# A path's group: common, a role (ops/gateway/ is the gateway role, the rest
# of ops/ is outboxctl's), or none (system headers, tests).
group_of() {
	case $1 in
	common/*) group=common ;;
	ops/gateway/*) group=gateway ;;
	oracle/* | worker/* | supervisor/* | ops/*) group=${1%%/*} ;;
	*) group= ;;
	esac
}
fail=0
out=()

violation() {
	out+=("$1")
	fail=1
}

check_includes() {
	local f inc from to
	while IFS= read -r f; do
		group_of "$f"
		from=$group
		while read -r inc; do
			group_of "$inc"
			to=$group
			[[ -z $to || $to == common || $to == "$from" ]] && continue
			if [[ $from == common ]]; then
				violation "$f: includes $inc"
			elif [[ $from == supervisor && $inc == "${inc%/*}/${to}_main.h" ]]; then
				continue # the role table's entry headers
			else
				violation "$f: includes $inc (another role)"
			fi
		done < <(sed -nE 's/^#include "([^"]+)".*/\1/p' "$f")
	done < <(find common oracle worker supervisor ops -name '*.[ch]' | sort)
}

declare -A files defined_by

# The external symbols the files of group $1 define (with -u: leave undefined,
# as "file symbol").
symbols() {
	local list
	IFS=, read -ra list <<<"${files[$1]}"
	if [[ ${2-} == -u ]]; then
		nm -A -g -P --undefined-only "${list[@]}" 2>/dev/null | awk 'NF >= 3 {print $1, $2}'
	else
		nm -g -P --defined-only "${list[@]}" 2>/dev/null | awk 'NF >= 2 && $2 ~ /^[A-Za-z]$/ {print $1}'
	fi
}

check_symbols() {
	local g sym where def
	for g in "${!files[@]}"; do
		while read -r sym; do defined_by[$sym]+=" $g"; done < <(symbols "$g")
	done
	for g in "${!files[@]}"; do
		while read -r where sym; do
			for def in ${defined_by[$sym]-}; do
				[[ $def == common ]] && continue
				[[ " ${defined_by[$sym]} " == *" $g "* ]] && continue # its own
				[[ $g == supervisor && $sym == "${def}_main" ]] && continue
				violation "$g: ${where%:} references $sym, defined by $def"
			done
		done < <(symbols "$g" -u)
	done
}

for arg in "$@"; do
	g=${arg%%=*}
	files[$g]=${arg#*=}
	IFS=, read -ra list <<<"${files[$g]}"
	for f in "${list[@]}"; do
		[[ -f $f ]] || violation "$g: $f does not exist (build first): nothing to check"
	done
done
check_includes
((${#files[@]})) && check_symbols
((${#out[@]})) && printf '%s\n' "${out[@]}"
if [[ -n $expect ]]; then
	if [[ $fail == 1 ]] && printf '%s\n' "${out[@]}" | grep -q "references $expect,"; then
		echo "layering: the fixture's reference to $expect is caught, as it must be"
		exit 0
	fi
	echo "layering: the check let the fixture's reference to $expect through"
	exit 1
fi
if [[ $fail == 0 ]]; then
	echo "layering ok: common/ knows no role, no role knows another" \
		"(#include lines${files[*]:+ and the symbols of ${!files[*]}})"
fi
exit $fail
