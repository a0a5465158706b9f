#!/usr/bin/env bash
# grafana_check.sh DASHBOARD - the Grafana dashboard JSON imports: it parses,
# has a uid and title, takes its Prometheus from the `datasource` variable,
# and every panel has a unique id, a title, a place on the 24-column grid
# that no other panel covers, and queries (each with a refId and an expr,
# on the dashboard's datasource), and every query is PromQL that Prometheus
# parses (promtool, with the dashboard's variables filled in). Which metrics
# the queries name is metric_names.sh's check.
set -euo pipefail
dash=$1
die() {
	echo "grafana_check: $*" >&2
	exit 1
}
command -v jq >/dev/null || die "jq is missing (Debian package jq, in ops/lib/deps.sh)"
jq -e . "$dash" >/dev/null || die "$dash is not valid JSON"
problems=$(jq -r '
	def panels: .panels[] | ., (.panels? // [] | .[]);
	def place: .gridPos | "x=\(.x) y=\(.y) w=\(.w) h=\(.h)";
	[
	  (if (.uid | type) != "string" or .uid == "" then "no uid" else empty end),
	  (if (.title | type) != "string" or .title == "" then "no title" else empty end),
	  (if (.schemaVersion | type) != "number" then "no schemaVersion" else empty end),
	  (if ([.templating.list[]? | select(.name == "datasource" and .type == "datasource"
	        and .query == "prometheus")] | length) != 1
	   then "no datasource variable of type prometheus" else empty end),
	  (if ([panels] | length) == 0 then "no panels" else empty end),
	  ([panels | .id] | group_by(.) | map(select(length > 1) | "panel id \(.[0]) used twice") | .[]),
	  (panels | select(.type != "row") |
	    ("panel \(.id) (\(.title // "untitled"))") as $p |
	    (if (.title // "") == "" then "\($p): no title" else empty end),
	    (if ([.gridPos.x, .gridPos.y, .gridPos.w, .gridPos.h] | all(type == "number")) | not
	     then "\($p): no gridPos" elif .gridPos.x < 0 or .gridPos.w < 1 or .gridPos.h < 1
	       or .gridPos.x + .gridPos.w > 24 then "\($p): off the 24-column grid (\(place))"
	     else empty end),
	    (if .datasource.uid != "${datasource}" then "\($p): datasource is not ${datasource}" else empty end),
	    (if ((.targets // []) | length) == 0 then "\($p): no query" else empty end),
	    (.targets[]? | if (.expr // "") == "" then "\($p): query \(.refId // "?") has no expr"
	                   elif (.refId // "") == "" then "\($p): a query has no refId" else empty end),
	    ([.targets[]?.refId] | group_by(.) | map(select(length > 1) | "\($p): refId \(.[0]) twice") | .[])),
	  # overlapping panels (rows included: they take a line of the grid)
	  ([panels | {id, title, g: .gridPos}] | . as $all |
	    [range(0; length) as $i | range($i + 1; length) as $j | [$all[$i], $all[$j]]] |
	    map(select(.[0].g.x < .[1].g.x + .[1].g.w and .[1].g.x < .[0].g.x + .[0].g.w
	               and .[0].g.y < .[1].g.y + .[1].g.h and .[1].g.y < .[0].g.y + .[0].g.h)
	        | "panels \(.[0].id) (\(.[0].title)) and \(.[1].id) (\(.[1].title)) overlap") | .[])
	] | .[]' "$dash")
[[ -z $problems ]] || die "$dash:"$'\n'"$problems"

# Each query as the expr of a rule, variables filled in as Grafana would.
command -v promtool >/dev/null || die "promtool is missing (Debian package prometheus, in ops/lib/deps.sh)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jq -r '"groups:\n  - name: dashboard\n    rules:",
	([.panels[] | ., (.panels? // [] | .[]) | .targets[]?.expr] | to_entries[] |
	 "      - record: query_\(.key)\n        expr: \(.value | tojson)")' "$dash" |
	sed -e 's/\$__rate_interval/5m/g; s/\$__interval/1m/g; s/\$__range/1h/g' \
		-e 's/\$job/outboxd/g; s/\$instance/.*/g' >"$tmp/queries.yml"
if ! out=$(promtool check rules "$tmp/queries.yml" 2>&1); then
	die "$dash: a query is not valid PromQL:"$'\n'"$out"
fi
echo "$dash: $(jq '[.panels[] | select(.type != "row")] | length' "$dash") panels, $(jq '[.panels[].targets[]?] | length' "$dash") queries"
