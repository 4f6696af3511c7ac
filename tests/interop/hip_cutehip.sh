#!/usr/bin/env bash
# HIPv2 interop: a hipsec HIP node against cutehip (Dmitriy Kuptsov's pure-Python HIPv2 host),
# each in its own network namespace over a veth. What it shows is recorded in docs/hip.md,
# "Interop record".
#
#   ns A: hipsec  hipsec0 HIT-A/28 -- va 192.0.2.1 ==== vb 192.0.2.2 -- hip0 HIT-C/28  cutehip :ns C
#
# cutehip as published fails the exchange on faults of its own (docs/hip.md lists them with
# the RFC's sentences); the record there was made with a copy patched by hand for those.
#
# Usage: tests/interop/hip_cutehip.sh initiator|responder [OUTDIR]
#   initiator: hipsec pings cutehip's HIT (hipsec sends I1)
#   responder: cutehip pings hipsec's HIT (cutehip sends I1)
# Needs (else prints SKIPPED and exits 0): root with `ip netns`, /dev/net/tun, tcpdump;
#   CUTEHIP_DIR  a checkout of cutehip (it is copied, never changed);
#   CUTEHIP_PY   a python with pycryptodome and netifaces (e.g. a venv of its own);
#   HIPSEC       the hipsec binary (default target/debug/hipsec);
#   CUTEHIP_COMMIT  the commit the checkout is at, when it is not a git work tree.
# Exit status 0 when the base exchange completed and pings between the HITs were answered;
# 1 otherwise (the logs, the capture and tshark's reading of it are left in OUTDIR).
set -u
role=${1:-}
case "$role" in initiator | responder) ;; *) echo "usage: $0 initiator|responder [OUTDIR]" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
HIPSEC=${HIPSEC:-$root/target/debug/hipsec}
skip() { echo "SKIPPED: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v tcpdump >/dev/null || skip "no tcpdump"
[ -n "${CUTEHIP_DIR:-}" ] && [ -f "$CUTEHIP_DIR/cutehipd.py" ] || skip "CUTEHIP_DIR is not a cutehip checkout"
[ -n "${CUTEHIP_PY:-}" ] && "$CUTEHIP_PY" -c 'import Crypto, netifaces' 2>/dev/null ||
    skip "CUTEHIP_PY has no pycryptodome and netifaces"
[ -x "$HIPSEC" ] || skip "no hipsec binary at $HIPSEC"

out=${2:-$(mktemp -d /tmp/hip-cutehip.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
nsa=hipc-a-$$
nsc=hipc-c-$$
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsc" 2>/dev/null
}
trap cleanup EXIT

ip netns add "$nsa"
ip netns add "$nsc"
ip link add va netns "$nsa" type veth peer name vb netns "$nsc"
ip -n "$nsa" link set lo up
ip -n "$nsc" link set lo up
ip -n "$nsa" addr add 192.0.2.1/24 dev va
ip -n "$nsc" addr add 192.0.2.2/24 dev vb
ip -n "$nsa" link set va up
ip -n "$nsc" link set vb up
# cutehip takes its own locator from the interface of the default route.
ip -n "$nsc" route add default via 192.0.2.1 dev vb

# cutehip, copied: an ECDSA P-384 identity (HIT suite ECDSA/SHA-384), its config pointed at it.
cute=$out/cutehip
rm -rf "$cute"
cp -r "$CUTEHIP_DIR" "$cute"
rm -f "$cute/hip.log" "$cute/hip.pcap"
echo "${CUTEHIP_COMMIT:-$(git -C "$CUTEHIP_DIR" rev-parse HEAD 2>/dev/null || echo unknown)}" >"$out/cutehip.commit"
openssl ecparam -name secp384r1 -genkey -noout -out "$cute/config/private.pem"
openssl ec -in "$cute/config/private.pem" -pubout -out "$cute/config/public.pem" 2>/dev/null
sed -i 's/"sig_alg": 0x5,/"sig_alg": 0x7,/; s/"hash_alg": 0x1,/"hash_alg": 0x2,/' "$cute/config/config.py"
sed -i "s/\"puzzle_difficulty\": 0x10,/\"puzzle_difficulty\": ${CUTEHIP_K:-10},/" "$cute/config/config.py"
# cutehip sends its I1 before it records I1-SENT, so an R1 that comes back at once (ours does,
# in under a millisecond) is sometimes dropped as arriving in UNASSOCIATED; its I1 is then
# resent only after i1_timeout_s (20 s by default, longer than this run): 2 s here.
sed -i 's/"i1_timeout_s": 20,/"i1_timeout_s": 2,/' "$cute/config/config.py"
hit_c=$(cd "$cute" && "$CUTEHIP_PY" -c '
import sys; sys.path.insert(0, ".")
from crypto.asymmetric import ECDSAPublicKey
from utils.hi import ECDSAHostID
from utils.hit import HIT
k = ECDSAPublicKey.load_pem("config/public.pem")
print(HIT.get_hex_formated(ECDSAHostID(k.get_curve_id(), k.get_x(), k.get_y()).to_byte_array(), HIT.SHA384_OGA))')

# hipsec: an ECDSA P-256 identity; cutehip's HIT is its one peer.
"$HIPSEC" keygen --hip --json --force -o "$out/a.pem" >"$out/a.json"
hit_a=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hit"])' "$out/a.json")
hit_a_long=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]).exploded)' "$hit_a")
cat >"$out/a.toml" <<EOF
[interface]
name = "hipsec0"
addresses = ["10.0.1.1/24"]
[network]
local = "192.0.2.1:4500"
[control]
socket = "$out/a.sock"
[log]
level = "debug"
[hip]
identity = "$out/a.pem"
puzzle-k = ${HIPSEC_K:-10}
esp-suites = ["aes128cbc-sha256"]
[[hip.peer]]
hit = "$hit_c"
locator = "192.0.2.2"
EOF
# cutehip's resolver (HIT -> locator) and firewall (which HIT pairs may run an exchange).
echo "$hit_a_long 192.0.2.1" >"$cute/config/hosts"
printf '%s %s allow\n%s %s allow\n' "$hit_a_long" "$hit_c" "$hit_c" "$hit_a_long" >"$cute/config/rules"
echo "hipsec HIT $hit_a, cutehip HIT $hit_c, role of hipsec: $role" | tee "$out/summary.txt"

ip netns exec "$nsa" tcpdump -i va -U -w "$out/hip.pcap" 'ip proto 139 or ip proto 50' >/dev/null 2>&1 &
pids+=($!)
ip netns exec "$nsa" "$HIPSEC" run -c "$out/a.toml" >"$out/hipsec.log" 2>&1 &
pids+=($!)
(cd "$cute" && exec ip netns exec "$nsc" "$CUTEHIP_PY" cutehipd.py) >"$out/cutehip.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$out/a.sock" ] && ip -n "$nsc" link show hip0 >/dev/null 2>&1 && break; sleep 0.1; done
sleep 1

if [ "$role" = initiator ]; then
    ip netns exec "$nsa" ping -6 -c 10 -i 0.5 -W 2 -I "$hit_a" "$hit_c" >"$out/ping.txt" 2>&1
else
    ip netns exec "$nsc" ping -6 -c 10 -i 0.5 -W 2 -I "$hit_c" "$hit_a" >"$out/ping.txt" 2>&1
fi
"$HIPSEC" status --json "$out/a.sock" >"$out/status.json" 2>&1
# Then UPDATE (a rekey from hipsec, RFC 7402 section 6.8) with pings after it, and CLOSE
# (RFC 7401 section 5.3.7) from hipsec: recorded, not part of the exit status.
"$HIPSEC" hip rekey "$out/a.sock" "$hit_c" >"$out/rekey.txt" 2>&1
sleep 3
if [ "$role" = initiator ]; then
    ip netns exec "$nsa" ping -6 -c 5 -i 0.5 -W 2 -I "$hit_a" "$hit_c" >"$out/ping-after-rekey.txt" 2>&1
else
    ip netns exec "$nsc" ping -6 -c 5 -i 0.5 -W 2 -I "$hit_c" "$hit_a" >"$out/ping-after-rekey.txt" 2>&1
fi
"$HIPSEC" status --json "$out/a.sock" >"$out/status-after-rekey.json" 2>&1
"$HIPSEC" hip close "$out/a.sock" "$hit_c" >"$out/close.txt" 2>&1
sleep 3
"$HIPSEC" status --json "$out/a.sock" >"$out/status-after-close.json" 2>&1
sleep 0.5
kill -TERM "${pids[0]}" 2>/dev/null
sleep 0.5
tshark -r "$out/hip.pcap" -V >"$out/hip.tshark.txt" 2>&1
# tshark verifies HIP checksums (hip.checksum.status 1 = good) and flags malformed packets.
bad=$(tshark -r "$out/hip.pcap" -Y 'hip && (hip.checksum.status != 1 || _ws.malformed)' 2>/dev/null | wc -l)
echo "HIP packets tshark finds malformed or with a bad checksum: $bad"
tshark -r "$out/hip.pcap" >"$out/hip.summary.txt" 2>&1
cat "$out/hip.summary.txt"
grep -E 'packets transmitted' "$out/ping.txt"
received=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$out/ping.txt")
state=$(python3 -c 'import json,sys
try:
    a = json.load(open(sys.argv[1]))["hip"]["associations"]
    print(",".join(x["state"] for x in a) or "none")
except Exception as e:
    print("unknown")' "$out/status.json")
after=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$out/ping-after-rekey.txt")
rekeyed=$(python3 -c 'import json,sys
try:
    h = json.load(open(sys.argv[1]))["hip"]
    print(h["counters"].get("rekeys", "?"), ",".join(x["state"] for x in h["associations"]) or "none")
except Exception:
    print("unknown")' "$out/status-after-rekey.json")
closed=$(python3 -c 'import json,sys
try:
    print(",".join(x["state"] for x in json.load(open(sys.argv[1]))["hip"]["associations"]) or "none")
except Exception:
    print("unknown")' "$out/status-after-close.json")
echo "after rekey: rekeys and state $rekeyed, pings answered ${after:-0} of 5; after close: ${closed}"
echo "hipsec association state: $state; pings answered: ${received:-0}; output in $out"
[ "${received:-0}" -gt 0 ] && [ "$state" = ESTABLISHED ]
