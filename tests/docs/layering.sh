#!/usr/bin/env bash
# layering.sh SRC - the dependency arrows of the layout (README.md): common/
# includes no role header, and no role includes another role's header (roles
# talk only through shared memory, PostgreSQL and Kafka).
set -uo pipefail
cd "$1"
fail=0
for dir in common supervisor oracle worker ops; do
	for f in $(git ls-files "$dir" | grep -E '\.[ch]$'); do
		while read -r inc; do
			top=${inc%%/*}
			case $top in
			common) ;;
			"$dir") [[ $dir != common ]] || { echo "$f: includes $inc"; fail=1; } ;;
			supervisor | oracle | worker | ops) echo "$f: includes $inc (another role)"; fail=1 ;;
			esac
		done < <(sed -nE 's/^#include "([^"]+)".*/\1/p' "$f")
	done
done
[[ $fail == 0 ]] && echo "layering ok: common/ includes no role, no role includes another"
exit $fail
