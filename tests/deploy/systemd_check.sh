#!/usr/bin/env bash
# systemd_check.sh OUTBOXD UNIT ENVFILE - the deployment files of ops/systemd/
# are what systemd and outboxd accept:
#   1. `systemd-analyze verify` of the unit, with ExecStart pointed at the
#      outboxd just built (verify checks that the binary exists; the shipped
#      unit names /usr/local/bin/outboxd, where ops/README.md installs it).
#      Any line it prints fails the check: it reports unknown keys and bad
#      values as warnings and still exits 0;
#   2. the settings ops/README.md promises are there (dedicated user, restart
#      policy, drain order, credentials, the main hardening options), and
#      `systemd-analyze security --offline` rates the unit's exposure at most
#      OUTBOX_UNIT_MAX_EXPOSURE tenths (25: 2.5 of 10; 1.3 with systemd 252,
#      newer versions rate more settings). The score moves little for one
#      option, hence the explicit list;
#   3. the example environment file: only KEY=VALUE lines that systemd and sh
#      read alike, only variables outboxd knows (`outboxd --help`) or libpq's
#      PG*, none that the unit sets itself, and `outboxd --check-config`
#      accepts it (with a generated keys file, as the unit passes it).
# Both work without systemd running (CI machines and containers).
set -euo pipefail
outboxd=$(realpath -- "$1") unit=$2 envfile=$(realpath -- "$3")
max_exposure=${OUTBOX_UNIT_MAX_EXPOSURE:-25} # tenths, as --threshold wants them

die() {
	echo "systemd_check: $*" >&2
	exit 1
}
command -v systemd-analyze >/dev/null || die "systemd-analyze is missing (Debian package systemd, in ops/lib/deps.sh)"
[[ -x $outboxd ]] || die "$outboxd is not an executable outboxd"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- 1. verify
installed=/usr/local/bin/outboxd
n=$(grep -c "^ExecStart=$installed\$" "$unit" || true)
[[ $n == 1 ]] || die "$unit: expected one 'ExecStart=$installed' line, found $n"
sed "s#^ExecStart=$installed\$#ExecStart=$outboxd#" "$unit" >"$tmp/outboxd.service"
if ! out=$(cd "$tmp" && systemd-analyze verify --man=no ./outboxd.service 2>&1); then
	die "systemd-analyze verify failed:"$'\n'"$out"
fi
[[ -z $out ]] || die "systemd-analyze verify warns (unknown keys or values count as failures):"$'\n'"$out"
echo "verify: clean"

# ---- 2. the promised settings, and the security exposure
for want in User=outboxd Type=exec Restart=on-failure RestartPreventExitStatus=2 KillMode=mixed \
	EnvironmentFile=/etc/outboxd/outboxd.env RuntimeDirectory=outboxd \
	Environment=OUTBOX_RUN_DIR=/run/outboxd 'Environment=OUTBOX_SIGNER_KEYS_FILE=%d/signer-keys' \
	LoadCredential=signer-keys:/etc/outboxd/signer-keys \
	NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes \
	CapabilityBoundingSet= 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' \
	MemoryDenyWriteExecute=yes SystemCallFilter=@system-service; do
	grep -qxF -- "$want" "$unit" || die "$unit: '$want' is missing (ops/README.md, Installing, relies on it)"
done
if ! out=$(cd "$tmp" && systemd-analyze security --offline=yes --threshold="$max_exposure" \
	./outboxd.service 2>&1); then
	die "exposure above $((max_exposure / 10)).$((max_exposure % 10)): the hardening of $unit weakened:"$'\n'"$(grep -E '✗|Overall' <<<"$out")"
fi
grep -E 'Overall exposure' <<<"$out" | sed 's/^→ //'

# ---- 3. the environment file
known=$("$outboxd" --help 2>&1 | sed -nE 's/^  ([A-Z][A-Z0-9_]+) +default: .*/\1/p')
[[ -n $known ]] || die "no variables in outboxd --help"
set_by_unit=$(sed -nE 's/^Environment=([A-Z][A-Z0-9_]*)=.*/\1/p' "$unit")
[[ -n $set_by_unit ]] || die "$unit sets no Environment= (expected OUTBOX_RUN_DIR and OUTBOX_SIGNER_KEYS_FILE)"
lineno=0 keys=0
while IFS= read -r line || [[ -n $line ]]; do
	lineno=$((lineno + 1))
	[[ -z $line || $line == \#* ]] && continue
	# KEY=value without shell or systemd specials, or KEY="value" without " $ ` \
	if ! [[ $line =~ ^([A-Z_][A-Z0-9_]*)=([^\"\'\$\`\\\ \;\&\|\<\>\(\)\#]*|\"[^\"\$\`\\]*\")$ ]]; then
		die "$envfile:$lineno: not a KEY=VALUE line that systemd and sh read alike (quote values with spaces, & or ;): $line"
	fi
	key=${BASH_REMATCH[1]}
	keys=$((keys + 1))
	if ! grep -qx "$key" <<<"$known" && [[ $key != PG* ]]; then
		die "$envfile:$lineno: $key is no variable of outboxd --help"
	fi
	if grep -qx "$key" <<<"$set_by_unit"; then
		die "$envfile:$lineno: $key is set by the unit itself (EnvironmentFile= would override it)"
	fi
done <"$envfile"
((keys > 0)) || die "$envfile sets no variable"
# A keys file of one generated seed (strkey: version 18<<3, 32 bytes, CRC16-XModem).
python3 - >"$tmp/keys" <<'PY'
import base64, os
d = bytes([18 << 3]) + os.urandom(32)
c = 0
for b in d:
    c ^= b << 8
    for _ in range(8):
        c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
print(base64.b32encode(d + bytes([c & 0xFF, c >> 8])).decode())
PY
chmod 0600 "$tmp/keys"
if ! out=$(env -i PATH="$PATH" OUTBOXD="$outboxd" ENVFILE="$envfile" KEYS="$tmp/keys" sh -c \
	'set -a; . "$ENVFILE"; OUTBOX_SIGNER_KEYS_FILE=$KEYS OUTBOX_RUN_DIR=$(dirname "$KEYS") exec "$OUTBOXD" --check-config' 2>&1); then
	die "outboxd --check-config refuses $envfile:"$'\n'"$out"
fi
echo "$envfile: $keys variables; $out"
