#!/usr/bin/env bash
# Installs 10,000 SAs (5,000 peers, a pair each) and 5,000 host policies in a running node
# through the command line, and prints how long each command took and the node's resident
# memory before and after. Needs root; HIPSEC points at the binary (default: release build).
#   bash scripts/install-10k.sh
set -euo pipefail
HIPSEC="${HIPSEC:-$(dirname "$0")/../target/release/hipsec}"
PEERS="${PEERS:-5000}"
d=$(mktemp -d); ns="hinst-$$"; pid=0
cleanup() { [ "$pid" = 0 ] || kill "$pid" 2>/dev/null || true; sleep 0.5; ip netns del "$ns" 2>/dev/null || true; rm -rf "$d"; }
trap cleanup EXIT
ip netns add "$ns"; ip -n "$ns" link set lo up
ip -n "$ns" link add d0 type veth peer name d1; ip -n "$ns" addr add 192.0.2.1/16 dev d0
ip -n "$ns" link set d0 up; ip -n "$ns" link set d1 up
cat > "$d/node.toml" <<EOT
[interface]
name = "hinst0"
addresses = ["10.0.0.1/8"]
[network]
local = "192.0.2.1:4500"
[control]
socket = "$d/node.sock"
EOT
python3 - "$PEERS" "$d" <<'PY'
import sys
n, d = int(sys.argv[1]), sys.argv[2]
key = lambda i: "0x%040x" % (i * 7919 + 1)
with open(d + "/sas.toml", "w") as f:
    for p in range(n):
        peer = "198.18.%d.%d" % (p // 250, p % 250 + 1)
        for dirn, spi, src, dst in (("out", 0x10000000 + p, "192.0.2.1", peer), ("in", 0x20000000 + p, peer, "192.0.2.1")):
            f.write('[[sa]]\ndirection="%s"\nsrc="%s"\ndst="%s"\nproto="esp"\nspi=%d\nmode="tunnel"\naead="aes128gcm"\nkey="%s"\npeer="%s:4500"\n' % (dirn, src, dst, spi, key(spi), peer))
with open(d + "/policies.toml", "w") as f:
    for p in range(n):
        f.write('[[policy]]\nsrc="10.0.0.1/32"\ndst="10.%d.%d.%d/32"\naction="protect"\nsas=[{spi=%d, dst="198.18.%d.%d"}]\nin-sas=[%d]\n' % (1 + p // 65536, (p // 256) % 256, p % 256, 0x10000000 + p, p // 250, p % 250 + 1, 0x20000000 + p))
PY
chmod 600 "$d"/*.toml
ip netns exec "$ns" "$HIPSEC" run -c "$d/node.toml" 2>"$d/node.log" &
pid=$!
for _ in $(seq 100); do [ -S "$d/node.sock" ] && "$HIPSEC" status --json "$d/node.sock" >/dev/null 2>&1 && break; sleep 0.05; done
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }
r0=$(rss)
t0=$(date +%s.%N); "$HIPSEC" sa add "$d/node.sock" --file "$d/sas.toml" >/dev/null; t1=$(date +%s.%N)
r1=$(rss)
"$HIPSEC" policy add "$d/node.sock" --file "$d/policies.toml" >/dev/null; t2=$(date +%s.%N)
r2=$(rss)
n=$("$HIPSEC" sa list --json "$d/node.sock" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["sas"]))')
python3 - "$t0" "$t1" "$t2" "$r0" "$r1" "$r2" "$n" "$PEERS" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:4]); r0, r1, r2, n, peers = map(int, sys.argv[4:9])
print(f"sa add --file ({2*peers} SAs): {t1-t0:.2f} s = {2*peers/(t1-t0):.0f} SAs/s; node RSS +{(r1-r0)*1024/(2*peers):.0f} B per SA")
print(f"policy add --file ({peers} policies): {t2-t1:.2f} s; node RSS +{(r2-r1)*1024/peers:.0f} B per policy")
print(f"sa list: {n} SAs")
PY
