#!/usr/bin/env python3
"""An independent Mobile IPv6 mobile node (scapy) against the hipsec home agent.

Two network namespaces joined by a veth pair: the home agent (`hipsec run` with [home-agent],
2001:db8:1::1, home prefix 2001:db8:1::/64) and a foreign link where scapy plays mobile nodes
(care-of addresses in 2001:db8:2::/64). Each mobile node — one with ESP AES-CBC + HMAC-SHA1-96,
one with AES-GCM — builds its Binding Updates with scapy's MIP6MH_BU and a Home Address option
(IPv6ExtHdrDestOpt/HAO), seals them with its own scapy SecurityAssociation (ESP transport,
RFC 3776 §3), and:
  1. registers: gets a BA, decrypts it with its SA, checks status 0, the sequence number, the
     type 2 routing header naming its home address and the MH checksum (RFC 6275 §6.1.1);
  2. sends the same ESP packet again: no BA, `esp_replayed` counted in `hipsec status --json`;
  3. sends an unprotected BU: no BA, `unprotected` counted (RFC 3776 §4.1);
  4. sends a BU with an old sequence number in fresh ESP: BA status 135 (RFC 6275 §9.5.1);
  5. de-registers (lifetime 0): BA status 0, the binding cache is empty again.
Then a BU claiming one mobile node's home address in the other's SA (wrong_sa) and a forged ESP
packet (esp_integrity_failed) are refused without an answer, and a registration of 4 s expires.
Then the cases RFC 6275 answers in so many words: a first registration while another node holds
the home address on the link fails Duplicate Address Detection (BA 134, §10.3.1); a BU with the H
bit clear over a home registration gets BA 139 (§9.5.1); a Mobility Header whose Payload Proto is
not 59 is discarded (§9.2); a de-registration with no binding left gets BA 133 (§10.3.2).
A pcap taken in the home agent's namespace is dissected by tshark, ESP decrypted with the
signalling SAs (selectors: home address and home agent): every BU and BA must be there, none
malformed, and no ICMPv6 Parameter Problem may leave the home agent (the kernel is kept away from
the Home Address option). Prints PASS/FAIL per check, exits 1 on any failure; SKIPPED (exit 0)
only without root or `ip netns`.

Usage: scapy_mip6.py [--hipsec PATH] [--keep DIR]   (or HIPSEC_BIN=PATH)
"""

import argparse
import ctypes
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from scapy.layers.inet6 import HAO, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, MIP6MH_BA, MIP6MH_BU
from scapy.layers.ipsec import ESP, SecurityAssociation

HA = "2001:db8:1::1"
HA_FOREIGN = "2001:db8:2::1"
TAG = "%d" % os.getpid()
NS_HA, NS_MN = "hmip-ha" + TAG, "hmip-mn" + TAG
DEV_HA, DEV_MN = "hmha" + TAG[-6:], "hmmn" + TAG[-6:]
WAIT = 1.5  # seconds to wait for a BA (or to be sure none comes)
# A first registration waits for the home agent's Duplicate Address Detection (RFC 6275
# §10.3.1; the kernel's DAD takes about a second).
WAIT_FIRST = 4.0

MOBILE_NODES = [
    {
        "name": "aes-cbc+hmac-sha1", "home": "2001:db8:1::100", "coa": "2001:db8:2::7",
        "spi_in": 0x1100, "spi_out": 0x2100,
        "toml": 'enc = "aes128cbc"\nauth = "sha1"\nenc-key = "0x%s"\nauth-key = "0x%s"\n',
        "keys_in": (bytes(range(16)), bytes(range(32, 52))),
        "keys_out": (bytes(range(100, 116)), bytes(range(132, 152))),
        "scapy": ("AES-CBC", "HMAC-SHA1-96"),
        "tshark": ("AES-CBC [RFC3602]", "HMAC-SHA-1-96 [RFC2404]"),
    },
    {
        "name": "aes-gcm", "home": "2001:db8:1::200", "coa": "2001:db8:2::8",
        "spi_in": 0x1200, "spi_out": 0x2200,
        "toml": 'aead = "aes128gcm"\nkey = "0x%s"\n',
        "keys_in": (bytes(range(60, 80)), b""),
        "keys_out": (bytes(range(160, 180)), b""),
        "scapy": ("AES-GCM", None),
        "tshark": ("AES-GCM with 16 octet ICV [RFC4106]", "NULL"),
    },
]

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail and not ok else ""))
    sys.stdout.flush()
    return ok


def sh(*args, check_rc=True, **kw):
    r = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if check_rc and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def can_run():
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode:
        return "no ip netns"
    return None


def setup():
    sh("ip", "netns", "add", NS_HA)
    sh("ip", "netns", "add", NS_MN)
    sh("ip", "link", "add", DEV_HA, "netns", NS_HA, "type", "veth", "peer", "name", DEV_MN, "netns", NS_MN)
    for ns, dev in ((NS_HA, DEV_HA), (NS_MN, DEV_MN)):
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "link", "set", dev, "up")
    sh("ip", "-n", NS_HA, "addr", "add", HA + "/64", "dev", DEV_HA, "nodad")
    sh("ip", "-n", NS_HA, "addr", "add", HA_FOREIGN + "/64", "dev", DEV_HA, "nodad")
    for mn in MOBILE_NODES:
        sh("ip", "-n", NS_MN, "addr", "add", mn["coa"] + "/64", "dev", DEV_MN, "nodad")
    sh("ip", "-n", NS_MN, "route", "add", "2001:db8:1::/64", "via", HA_FOREIGN)
    # The mobile node's kernel has no Mobile IPv6 either: it would answer the BA's type 2
    # routing header with Parameter Problem. scapy reads the BA off the link, so drop it there.
    nft = "table ip6 mn {\n chain pre {\n  type filter hook prerouting priority raw;\n  rt type 2 drop\n }\n}\n"
    sh("ip", "netns", "exec", NS_MN, "nft", "-f", "-", input=nft)


def teardown():
    for ns in (NS_HA, NS_MN):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def sa_table(src, dst, spi, mn, keys):
    if mn["keys_in"][1]:
        alg = mn["toml"] % (keys[0].hex(), keys[1].hex())
    else:
        alg = mn["toml"] % keys[0].hex()
    return 'src = "%s"\ndst = "%s"\nproto = "esp"\nmode = "transport"\nspi = %d\n%s' % (src, dst, spi, alg)


def node_config(d):
    c = """[interface]
name = "hmtun%s"
addresses = ["fd00:99::1/64"]

[network]
local = "[%s]:4500"

[data-path]
scheduling = "other"

[control]
socket = "%s/ha.sock"

[home-agent]
interface = "%s"
address = "%s"
home-prefix = "2001:db8:1::/64"
max-lifetime = 600
capacity = 1000
""" % (TAG[-6:], HA, d, DEV_HA, HA)
    for mn in MOBILE_NODES:
        c += '\n[[home-agent.mobile-node]]\nhome-address = "%s"\n' % mn["home"]
        c += "[home-agent.mobile-node.sa-in]\n" + sa_table(mn["home"], HA, mn["spi_in"], mn, mn["keys_in"])
        c += "[home-agent.mobile-node.sa-out]\n" + sa_table(HA, mn["home"], mn["spi_out"], mn, mn["keys_out"])
    return c


def enter(ns):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/var/run/netns/" + ns, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
        raise OSError(ctypes.get_errno(), "setns " + ns)
    os.close(fd)


def ones_sum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def mh_checksum(src, dst, mh):
    """RFC 6275 §6.1.1: pseudo-header (RFC 8200 §8.1) with the home address, Next Header 135."""
    ph = socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
    ph += struct.pack("!I3xB", len(mh), 135)
    return (~ones_sum(ph + mh)) & 0xFFFF


def scapy_sa(mn, direction):
    crypt, auth = mn["scapy"]
    keys = mn["keys_" + direction]
    spi = mn["spi_" + direction]
    if auth is None:
        return SecurityAssociation(ESP, spi=spi, crypt_algo=crypt, crypt_key=keys[0])
    return SecurityAssociation(ESP, spi=spi, crypt_algo=crypt, crypt_key=keys[0], auth_algo=auth, auth_key=keys[1])


def binding_update(mn, seq, lifetime, flags="AH", payload_proto=59):
    """IPv6 (care-of -> HA) | Destination Options (Home Address) | MH BU, checksum by hand."""
    mh = MIP6MH_BU(nh=payload_proto, seq=seq, flags=flags, mhtime=lifetime, cksum=0)
    mh.cksum = mh_checksum(mn["home"], HA, bytes(mh))
    return IPv6(src=mn["coa"], dst=HA, hlim=64) / IPv6ExtHdrDestOpt(options=[HAO(hoa=mn["home"])]) / mh


class Link:
    def __init__(self):
        self.tx = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x86DD))
        self.rx.bind((DEV_MN, 0x86DD))

    def drain(self):
        self.rx.setblocking(False)
        try:
            while True:
                self.rx.recv(65535)
        except BlockingIOError:
            pass
        self.rx.setblocking(True)

    def send(self, pkt_bytes, dst=HA):
        self.tx.sendto(pkt_bytes, (dst, 0))

    def replies(self, coa, wait=WAIT):
        """Packets from the home agent to `coa` within `wait` seconds."""
        out, end = [], time.time() + wait
        while time.time() < end:
            self.rx.settimeout(max(0.01, end - time.time()))
            try:
                data, addr = self.rx.recvfrom(65535)
            except socket.timeout:
                break
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            p = IPv6(data)
            if p.src == HA and p.dst == coa:
                out.append(p)
        return out


def status(sock, hipsec):
    r = sh(hipsec, "status", "--json", sock)
    return json.loads(r.stdout)["home_agent"]


def check_ba(mn, link, sa_out, seq, want_status, label, wait=WAIT):
    rs = link.replies(mn["coa"], wait)
    if not check("%s %s: one packet back" % (mn["name"], label), len(rs) == 1, "got %d" % len(rs)):
        return
    p = rs[0]
    rh = p.getlayer(IPv6ExtHdrRouting)
    check("%s %s: type 2 routing header names the home address" % (mn["name"], label),
          rh is not None and rh.type == 2 and rh.segleft == 1 and list(rh.addresses) == [mn["home"]],
          p.summary())
    check("%s %s: ESP with our outbound SA" % (mn["name"], label),
          ESP in p and p[ESP].spi == mn["spi_out"], p.summary())
    try:
        d = sa_out.decrypt(p)
    except Exception as e:  # noqa: BLE001: any failure of the decryption is a FAIL
        check("%s %s: decrypts" % (mn["name"], label), False, repr(e))
        return
    raw = bytes(d)
    ba_bytes = raw[40 + 24:]
    d = IPv6(raw)
    ok = MIP6MH_BA in d
    check("%s %s: decrypts to a Binding Acknowledgement" % (mn["name"], label), ok, d.summary())
    if not ok:
        return
    ba = d[MIP6MH_BA]
    check("%s %s: status %d, sequence %d" % (mn["name"], label, want_status, seq),
          ba.status == want_status and ba.seq == seq, "status %d seq %d" % (ba.status, ba.seq))
    check("%s %s: MH checksum over the home address" % (mn["name"], label),
          mh_checksum(HA, mn["home"], ba_bytes) == 0, "bad checksum")
    return ba


def mobile_node(mn, link, sock, hipsec):
    sa_in, sa_out = scapy_sa(mn, "in"), scapy_sa(mn, "out")
    link.drain()
    # 1. Register.
    reg = bytes(sa_in.encrypt(binding_update(mn, 1, 100)))
    link.send(reg)
    ba = check_ba(mn, link, sa_out, 1, 0, "register", WAIT_FIRST)
    if ba is not None:
        check("%s register: lifetime granted" % mn["name"], ba.mhtime == 100, str(ba.mhtime))
    st = status(sock, hipsec)
    mine = [b for b in st["binding_cache"]["sample"] if b["home_address"] == mn["home"]]
    check("%s register: binding cache holds home -> care-of" % mn["name"],
          len(mine) == 1 and mine[0]["care_of_address"] == mn["coa"], json.dumps(st["binding_cache"]))
    # 2. The same ESP packet again: a replay, refused before the binding cache.
    before = st["refused"].get("esp_replayed", 0)
    link.send(reg)
    rs = link.replies(mn["coa"])
    st = status(sock, hipsec)
    check("%s replayed BU: no answer, esp_replayed counted" % mn["name"],
          not rs and st["refused"].get("esp_replayed", 0) == before + 1,
          "%d replies, refused %s" % (len(rs), st["refused"]))
    # 3. Unprotected BU (RFC 3776 §4.1: must come in the SA).
    before = st["refused"]["unprotected"]
    link.send(bytes(binding_update(mn, 3, 100)))
    rs = link.replies(mn["coa"])
    st = status(sock, hipsec)
    check("%s unprotected BU: no answer, unprotected counted" % mn["name"],
          not rs and st["refused"]["unprotected"] == before + 1,
          "%d replies, refused %s" % (len(rs), st["refused"]))
    # 4. An old sequence number in fresh ESP: BA 135 carrying the last accepted number.
    link.send(bytes(sa_in.encrypt(binding_update(mn, 1, 100))))
    check_ba(mn, link, sa_out, 1, 135, "old sequence number")
    # 5. De-register.
    link.send(bytes(sa_in.encrypt(binding_update(mn, 2, 0))))
    check_ba(mn, link, sa_out, 2, 0, "de-register")
    st = status(sock, hipsec)
    mine = [b for b in st["binding_cache"]["sample"] if b["home_address"] == mn["home"]]
    check("%s de-register: binding gone" % mn["name"], not mine, json.dumps(st["binding_cache"]))


def wrongly_protected(link, sock, hipsec):
    """RFC 3776 §4.1: a BU counts only in the SA of the mobile node whose home address it claims,
    and only if its ESP verifies."""
    one, two = MOBILE_NODES
    st = status(sock, hipsec)
    # The first mobile node's home address in the second one's SA (sequence numbers past the
    # ones that SA has seen, so the replay window lets it through to the check).
    sa = scapy_sa(two, "in")
    sa.seq_num = 100
    link.send(bytes(sa.encrypt(binding_update(one, 10, 100))))
    rs = link.replies(one["coa"])
    after = status(sock, hipsec)
    check("BU in another mobile node's SA: no answer, wrong_sa counted",
          not rs and after["refused"]["wrong_sa"] == st["refused"]["wrong_sa"] + 1
          and after["binding_cache"]["count"] == 0, "%d replies, %s" % (len(rs), after["refused"]))
    # A forged one: the right SA, one bit of the ciphertext flipped.
    sa = scapy_sa(one, "in")
    sa.seq_num = 100
    forged = bytearray(bytes(sa.encrypt(binding_update(one, 10, 100))))
    forged[-20] ^= 1
    link.send(bytes(forged))
    rs = link.replies(one["coa"])
    st = status(sock, hipsec)
    check("forged ESP: no answer, esp_integrity_failed counted",
          not rs and st["refused"].get("esp_integrity_failed", 0) == 1, "%d replies, %s" % (len(rs), st["refused"]))


def expiry(link, sock, hipsec):
    """A registration of one lifetime unit (4 s) leaves the cache by itself (RFC 6275 §10.3.1)."""
    mn = MOBILE_NODES[0]
    sa_in, sa_out = scapy_sa(mn, "in"), scapy_sa(mn, "out")
    sa_in.seq_num = 200
    link.send(bytes(sa_in.encrypt(binding_update(mn, 5, 1))))
    ba = check_ba(mn, link, sa_out, 5, 0, "short registration", WAIT_FIRST)
    if ba is not None:
        check("short registration: 1 unit granted", ba.mhtime == 1, str(ba.mhtime))
    st = status(sock, hipsec)
    for _ in range(40):
        st = status(sock, hipsec)
        if st["binding_cache"]["count"] == 0:
            break
        time.sleep(0.25)
    check("short registration: expired within 10 s", st["binding_cache"]["count"] == 0
          and st["bindings"]["expired"] == 1, json.dumps(st["bindings"]))


def tshark_check(pcap):
    args = ["tshark", "-n", "-r", pcap, "-o", "esp.enable_encryption_decode:TRUE"]
    for mn in MOBILE_NODES:
        enc, auth = mn["tshark"]
        for src, dst, d in ((mn["home"], HA, "in"), (HA, mn["home"], "out")):
            k = mn["keys_" + d]
            rec = '"IPv6","%s","%s","0x%08x","%s","0x%s","%s","0x%s"' % (
                src, dst, mn["spi_" + d], enc, k[0].hex(), auth, k[1].hex())
            args += ["-o", "uat:esp_sa:" + rec]
    fields = ["frame.number", "mip6.mhtype", "mip6.bu.seqnr", "mip6.ba.status", "_ws.malformed",
              "icmpv6.type", "ipv6.src", "esp.spi"]
    out = sh(*args, "-T", "fields", *sum((["-e", f] for f in fields), []), "-E", "separator=|").stdout
    rows = [dict(zip(fields, line.split("|"))) for line in out.splitlines() if line.strip()]
    bus = [r for r in rows if r["mip6.mhtype"] == "5"]
    bas = [r for r in rows if r["mip6.mhtype"] == "6"]
    n = len(MOBILE_NODES)
    check("tshark: every BU dissected (5 per mobile node, 1 short registration, 6 RFC cases)",
          len(bus) == 5 * n + 1 + 6, "%d BUs" % len(bus))
    check("tshark: every BA dissected (3 per mobile node, 1 short registration, 5 RFC cases)",
          len(bas) == 3 * n + 1 + 5, "%d BAs" % len(bas))
    bad = [r for r in rows if r["_ws.malformed"]]
    check("tshark: no malformed packets", not bad, str(bad))
    undecrypted = [r for r in rows if r["esp.spi"] and not r["mip6.mhtype"]]
    # Not the forged one, nor the one in the second node's SA claiming the first's home address
    # (tshark's esp_sa selectors name the home address, as the SA's do: RFC 3776 §4.1).
    spis = sorted(r["esp.spi"] for r in undecrypted)
    want = sorted(["0x%08x" % MOBILE_NODES[1]["spi_in"], "0x%08x" % MOBILE_NODES[0]["spi_in"]])
    check("tshark: every ESP packet decrypts to a Mobility Header but the forged and wrong-SA ones",
          spis == want, str(undecrypted))
    # Only the home agent's kernel could send one here (the mobile node's drops the RH2 first).
    pp = [r for r in rows if r["icmpv6.type"] == "4"]
    check("no ICMPv6 Parameter Problem from the home agent", not pp, str(pp))


def rfc_cases(link, sock, hipsec):
    """RFC 6275's answers for the cases a home agent easily misreads, in one mobile node's SA."""
    mn = MOBILE_NODES[0]
    sa_in, sa_out = scapy_sa(mn, "in"), scapy_sa(mn, "out")
    sa_in.seq_num = 300
    # §10.3.1: DAD for the home address before its first binding; another node on the link holds
    # it (this namespace's kernel answers the home agent's probe), so BA 134 and no binding.
    sh("ip", "-n", NS_MN, "-6", "addr", "add", mn["home"] + "/128", "dev", DEV_MN, "nodad")
    link.send(bytes(sa_in.encrypt(binding_update(mn, 20, 100))))
    check_ba(mn, link, sa_out, 20, 134, "home address in use on the link (DAD)", WAIT_FIRST)
    sh("ip", "-n", NS_MN, "-6", "addr", "del", mn["home"] + "/128", "dev", DEV_MN)
    st = status(sock, hipsec)
    check("DAD failed: no binding, duplicate_address counted",
          st["binding_cache"]["count"] == 0 and st["refused"].get("duplicate_address") == 1,
          json.dumps(st["refused"]))
    # The address free again: DAD passes and the registration goes through.
    link.send(bytes(sa_in.encrypt(binding_update(mn, 21, 100))))
    check_ba(mn, link, sa_out, 21, 0, "register after DAD", WAIT_FIRST)
    # §9.5.1: H clear over a home registration: 139, the home registration stays.
    link.send(bytes(sa_in.encrypt(binding_update(mn, 22, 100, flags="A"))))
    check_ba(mn, link, sa_out, 22, 139, "H bit clear over a home registration")
    st = status(sock, hipsec)
    check("H bit clear: the home registration stays", st["binding_cache"]["count"] == 1,
          json.dumps(st["binding_cache"]))
    # §9.2: Payload Proto 6 instead of 59: discarded, no answer.
    before = st["refused"].get("bad_payload_proto", 0)
    link.send(bytes(sa_in.encrypt(binding_update(mn, 23, 100, payload_proto=6))))
    rs = link.replies(mn["coa"])
    st = status(sock, hipsec)
    check("Payload Proto 6: no answer, bad_payload_proto counted",
          not rs and st["refused"].get("bad_payload_proto", 0) == before + 1, "%d replies, %s" % (len(rs), st["refused"]))
    # §10.3.2: de-register, then de-register again with nothing left: 133.
    link.send(bytes(sa_in.encrypt(binding_update(mn, 24, 0))))
    check_ba(mn, link, sa_out, 24, 0, "de-register")
    link.send(bytes(sa_in.encrypt(binding_update(mn, 25, 0))))
    check_ba(mn, link, sa_out, 25, 133, "de-register without a binding")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hipsec", default=os.environ.get("HIPSEC_BIN", "hipsec"))
    ap.add_argument("--keep", help="keep config, pcap and node log in this directory")
    a = ap.parse_args()
    why = can_run()
    if why:
        print("SKIPPED: scapy mobile node needs root and ip netns (%s)" % why)
        return 0
    for tool in ("tshark", "tcpdump", "nft"):
        if shutil.which(tool) is None:
            print("FAIL %s missing (scripts/test-all.sh installs it)" % tool)
            return 1
    d = a.keep or tempfile.mkdtemp(prefix="hipsec-mip6-")
    os.makedirs(d, exist_ok=True)
    conf, pcap, log = os.path.join(d, "ha.toml"), os.path.join(d, "ha.pcap"), os.path.join(d, "ha.log")
    sock = os.path.join(d, "ha.sock")
    node = dump = None
    try:
        setup()
        with open(conf, "w") as f:
            f.write(node_config(d))
        os.chmod(conf, 0o600)
        dump = subprocess.Popen(["ip", "netns", "exec", NS_HA, "tcpdump", "-i", DEV_HA, "-U", "-w", pcap, "ip6"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        node = subprocess.Popen(["ip", "netns", "exec", NS_HA, a.hipsec, "run", "-c", conf],
                                stdout=open(log, "w"), stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(sock) or node.poll() is not None:
                break
            time.sleep(0.05)
        if not check("home agent starts", os.path.exists(sock) and node.poll() is None,
                     open(log).read()):
            return 1
        monitor = subprocess.Popen([a.hipsec, "monitor", sock], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)  # tcpdump and the monitor attached
        enter(NS_MN)
        link = Link()
        for mn in MOBILE_NODES:
            mobile_node(mn, link, sock, a.hipsec)
        wrongly_protected(link, sock, a.hipsec)
        expiry(link, sock, a.hipsec)
        rfc_cases(link, sock, a.hipsec)
        st = status(sock, a.hipsec)
        check("status: binding cache empty; four registrations, three de-registered, one expired",
              st["binding_cache"]["count"] == 0 and st["bindings"]["created"] == 4
              and st["bindings"]["deregistered"] == 3 and st["bindings"]["expired"] == 1,
              json.dumps(st["bindings"]))
        human = sh(a.hipsec, "status", sock).stdout
        check("hipsec status shows the home agent and its refusals",
              "home agent 2001:db8:1::1" in human and "esp_replayed" in human, human)
        time.sleep(0.3)
        monitor.terminate()
        events = [json.loads(line) for line in monitor.communicate(timeout=10)[0].splitlines() if line]
        kinds = [e.get("event") for e in events]
        reasons = sorted(e["reason"] for e in events if e.get("event") == "binding-refused")
        check("hipsec monitor: binding-created, -deleted and -refused events",
              kinds.count("binding-created") == 4 and kinds.count("binding-deleted") == 4
              and [e.get("why") for e in events if e.get("event") == "binding-deleted"].count("expired") == 1
              and reasons == sorted(["esp_replayed", "unprotected", "out_of_window"] * 2
                                    + ["wrong_sa", "esp_integrity_failed", "duplicate_address",
                                       "registration_type_change", "bad_payload_proto",
                                       "nothing_to_deregister"]), str(events))
    finally:
        if node is not None and node.poll() is None:
            node.terminate()
            node.wait(timeout=10)
        if dump is not None:
            time.sleep(0.2)
            dump.terminate()
            dump.wait(timeout=10)
        teardown()
    tshark_check(pcap)
    if a.keep is None:
        shutil.rmtree(d, ignore_errors=True)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
