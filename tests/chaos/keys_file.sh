#!/usr/bin/env bash
# tests/chaos/keys_file.sh - a bad signer keys file stops outboxd at start,
# with exit code 2 and one line that names the file (and the line, for a bad
# seed) and says what is wrong, without echoing the seed; no segment is left
# behind. A good file starts. Each case runs the real outboxd (not
# --check-config) with an otherwise valid configuration.
. "$(dirname "$0")/lib.sh"
chaos_init keys_file

keys_make 3
S0=${SEEDS[0]} S1=${SEEDS[1]} S2=${SEEDS[2]}
# a seed with its last character changed: the checksum fails
BAD=${S1:0:55}$([[ ${S1:55:1} == A ]] && echo B || echo A)
DB_URL="host=127.0.0.1 port=1 user=nobody dbname=none" # never reached: the start stops first
SIM=http://127.0.0.1:1
KAFKA=127.0.0.1:1

cases='[]'
# case NAME MODE CONTENT WANT_RC WANT_REGEX...: write the file, start outboxd, check
case_run() {
	local name=$1 mode=$2 content=$3 want_rc=$4 f out rc=0
	shift 4
	f=$T/keys.$name
	rm -f "$f"
	if [[ $content != @missing ]]; then
		printf '%b' "$content" >"$f"
		chmod "$mode" "$f"
	fi
	outboxd_env
	out=$(cd "$T" && timeout 60 env -i PATH="$PATH" "${OUTBOXD_ENV[@]}" "OUTBOX_SIGNER_KEYS_FILE=$f" \
		"$B/outboxd" 2>&1) || rc=$?
	local ok=true why=""
	((rc == want_rc)) || { ok=false why="exit $rc, want $want_rc"; }
	for re in "$@"; do
		grep -qE -- "$re" <<<"$out" || { ok=false why+="${why:+; }no line matching '$re'"; }
	done
	for s in "$S0" "$S1" "$S2" "$BAD"; do
		grep -qF -- "$s" <<<"$out" && { ok=false why+="${why:+; }the seed was echoed"; }
	done
	if [[ -e /dev/shm/outboxd-$INSTANCE ]] && ((want_rc != 0)); then
		ok=false why+="${why:+; }a segment was left behind"
		rm -f "/dev/shm/outboxd-$INSTANCE"
	fi
	$ok || violation "$name: $why (output: $(head -c 300 <<<"$out"))"
	cases=$(jq -c --arg n "$name" --argjson rc "$rc" --argjson ok "$ok" \
		--arg line "$(grep -m1 -E 'keys|KEYS' <<<"$out" | cut -c1-240)" \
		'. + [{case: $n, exit: $rc, ok: $ok, line: $line}]' <<<"$cases")
}

esc() { printf '%s' "$1" | sed 's/[.[\*^$()+?{|]/\\&/g'; }
F=$(esc "$T/keys.")
case_run world_readable 0644 "$S0\n" 2 "${F}world_readable.*mode 0644.*group or others"
case_run group_readable 0640 "$S0\n" 2 "${F}group_readable.*mode 0640"
case_run bad_checksum 0600 "# signers\n$S0\n\n$BAD\n$S2\n" 2 "${F}bad_checksum' line 4: not a secret seed"
case_run address_not_seed 0600 "$S0\n${SIGNERS[1]}\n" 2 "${F}address_not_seed' line 2: not a secret seed"
case_run truncated_seed 0600 "$S0\n${S1:0:40}\n" 2 "${F}truncated_seed' line 2"
case_run duplicate 0600 "$S0\n$S1\n$S0\n" 2 "${F}duplicate' line 3: duplicate of line 1"
case_run empty 0600 "# nothing here\n\n" 2 "${F}empty' contains no seed"
case_run missing 0600 @missing 2 "cannot open '${F}missing'"
case_run nul_byte 0600 "$S0\n${S1:0:10}\\0000${S1:11}\n" 2 "${F}nul_byte' line 2"
mkdir -p "$T/keys.directory"
chmod 0700 "$T/keys.directory"
outboxd_env
rc=0
out=$(timeout 60 env -i PATH="$PATH" "${OUTBOXD_ENV[@]}" "OUTBOX_SIGNER_KEYS_FILE=$T/keys.directory" \
	"$B/outboxd" 2>&1) || rc=$?
((rc == 2)) && grep -q 'is not a regular file' <<<"$out" ||
	violation "directory: exit $rc: $(head -c 200 <<<"$out")"
cases=$(jq -c --argjson rc "$rc" '. + [{case: "directory", exit: $rc}]' <<<"$cases")
# the good file passes the same check
rc=0
out=$(timeout 60 env -i PATH="$PATH" "${OUTBOXD_ENV[@]}" "$B/outboxd" --check-config 2>&1) || rc=$?
((rc == 0)) || violation "a good keys file was refused: exit $rc: $(head -c 300 <<<"$out")"
cases=$(jq -c --argjson rc "$rc" '. + [{case: "good_file_check_config", exit: $rc}]' <<<"$cases")

SUMMARY=$(jq -nc --argjson c "$cases" '{cases: $c}')
if ((${#VIOLATIONS[@]})); then
	summary_line false
	exit 1
fi
summary_line true
