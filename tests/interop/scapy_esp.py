#!/usr/bin/env python3
"""Cross-check hipsec's ESP/AH against scapy's independent implementation (scapy.layers.ipsec).

For every suite both implement, in tunnel and transport mode, over IPv4, IPv6 and IPv4-in-IPv6
tunnels, with ESN off and on:
  (a) hipsec seals a plaintext capture; scapy decrypts/verifies each packet; must equal the input.
  (b) scapy encrypts; `hipsec pcap open` decrypts; must equal the input.
  (c) a scapy-sealed packet with one flipped byte: hipsec drops it with integrity_failed, and the
      untouched packet after it still opens (the forgery did not move the replay window).
Prints one PASS/FAIL line per case and `N passed, M failed` last; exits 1 on any failure.

Usage: scapy_esp.py [--hipsec PATH] [--keep DIR] [-k FILTER]...   (or HIPSEC_BIN=PATH)
"""

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import AH, ESP, SecurityAssociation

# hipsec name -> (scapy crypt algo, key bytes incl. salt)
ENC = {
    "aes128gcm": ("AES-GCM", 20),
    "aes256gcm": ("AES-GCM", 36),
    "chacha20poly1305": ("CHACHA20-POLY1305", 36),
    "aes128cbc": ("AES-CBC", 16),
    "aes256cbc": ("AES-CBC", 32),
    "3des": ("3DES", 24),
    "null": ("NULL", 0),
}
AUTH = {
    "sha1": ("HMAC-SHA1-96", 20, 12),
    "sha256": ("SHA2-256-128", 32, 16),
    "sha384": ("SHA2-384-192", 48, 24),
    "sha512": ("SHA2-512-256", 64, 32),
}
ESP_SUITES = [
    "aes128gcm", "aes256gcm", "chacha20poly1305",
    "aes128cbc-sha1", "aes128cbc-sha256", "aes256cbc-sha256", "aes256cbc-sha384", "aes256cbc-sha512",
    "3des-sha1", "3des-sha256",
    "null-sha1", "null-sha256", "null-sha384", "null-sha512",
]
AH_ALGS = ["sha1", "sha256", "sha384", "sha512"]

V4 = ("192.0.2.1", "192.0.2.2")
V6 = ("2001:db8::1", "2001:db8::2")
OUT4 = ("198.51.100.1", "198.51.100.2")
OUT6 = ("2001:db8:ffff::1", "2001:db8:ffff::2")
SPI = 0x00001000


def write_pcap(path, packets):
    """Classic little-endian microsecond pcap, LINKTYPE_RAW."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        for i, p in enumerate(packets):
            f.write(struct.pack("<IIII", 1700000000, i, len(p), len(p)))
            f.write(p)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    link = struct.unpack(end + "I", data[20:24])[0]
    assert link == 101, "hipsec writes LINKTYPE_RAW, got %d" % link
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def plaintexts(rnd, family):
    src, dst = V4 if family == 4 else V6
    L3 = (lambda: IP(src=src, dst=dst, id=rnd.randrange(65536))) if family == 4 else \
        (lambda: IPv6(src=src, dst=dst, fl=rnd.randrange(1 << 20)))
    pkts = []
    for n in (1, 16, 100, 1400):
        # Not port 4500: scapy dissects UDP/4500 as NAT-T ESP, and its AH signing then appends the
        # ICV to that inner "ESP" instead of the AH header (AuthAlgo.sign checks ESP before AH).
        pkts.append(L3() / UDP(sport=rnd.randrange(1024, 65535), dport=5001) / rnd.randbytes(n))
        pkts.append(L3() / TCP(sport=rnd.randrange(1024, 65535), dport=443, seq=rnd.randrange(1 << 32),
                               flags="PA") / rnd.randbytes(n))
    return [bytes(p) for p in pkts]


def parse_ip(b):
    return IP(b) if b[0] >> 4 == 4 else IPv6(b)


class Case:
    def __init__(self, proto, alg, mode, outer, inner, esn, seed):
        self.proto, self.alg, self.mode, self.esn = proto, alg, mode, esn
        self.outer, self.inner = outer, inner
        rnd = random.Random(seed)
        self.rnd = rnd
        if mode == "tunnel":
            self.src, self.dst = OUT4 if outer == 4 else OUT6
        else:
            self.src, self.dst = V4 if inner == 4 else V6
        self.toml = ['[[sa]]', 'src = "%s"' % self.src, 'dst = "%s"' % self.dst, 'proto = "%s"' % proto,
                     'spi = "0x%08x"' % SPI, 'mode = "%s"' % mode, "esn = %s" % ("true" if esn else "false")]
        kw = {}
        if proto == "ah":
            name, klen, self.icv = AUTH[alg]
            key = rnd.randbytes(klen)
            self.toml += ['auth = "%s"' % alg, 'auth-key = "0x%s"' % key.hex()]
            kw.update(auth_algo=name, auth_key=key)
        else:
            enc, _, auth = alg.partition("-")
            cname, klen = ENC[enc]
            key = rnd.randbytes(klen)
            if cname in ("AES-GCM", "CHACHA20-POLY1305"):
                self.toml += ['aead = "%s"' % enc, 'key = "0x%s"' % key.hex()]
                self.icv = 16
            else:
                self.toml.append('enc = "%s"' % enc)
                if klen:
                    self.toml.append('enc-key = "0x%s"' % key.hex())
            kw.update(crypt_algo=cname, crypt_key=key if klen else None)
            if auth:
                aname, aklen, self.icv = AUTH[auth]
                akey = rnd.randbytes(aklen)
                self.toml += ['auth = "%s"' % auth, 'auth-key = "0x%s"' % akey.hex()]
                kw.update(auth_algo=aname, auth_key=akey)
        if mode == "tunnel":
            kw["tunnel_header"] = IP(src=self.src, dst=self.dst) if outer == 4 else IPv6(src=self.src, dst=self.dst)
        self.kw = kw

    def name(self):
        fam = {(4, 4): "v4", (6, 6): "v6", (6, 4): "v4-in-v6"}[(self.outer, self.inner)]
        return "%s %s %s %s esn=%d" % (self.proto, self.alg, self.mode, fam, self.esn)

    def scapy_sa(self):
        return SecurityAssociation(ESP if self.proto == "esp" else AH, spi=SPI, esn_en=self.esn, esn=0, **self.kw)


def hipsec(binary, cmd, sa, inp, out):
    r = subprocess.run([binary, "pcap", cmd, "--json", "--sa", sa, inp, out], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("hipsec %s exited %d: %s" % (cmd, r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


def run_case(c, binary, d):
    """Returns a list of (direction, ok, detail)."""
    results = []
    sa_path = os.path.join(d, "sa.toml")
    with open(sa_path, "w") as f:
        f.write("\n".join(c.toml) + "\n")
    plain = plaintexts(c.rnd, c.inner)
    write_pcap(os.path.join(d, "plain.pcap"), plain)

    # (a) hipsec seals, scapy opens.
    try:
        s = hipsec(binary, "seal", sa_path, os.path.join(d, "plain.pcap"), os.path.join(d, "sealed.pcap"))
        sealed = read_pcap(os.path.join(d, "sealed.pcap"))
        bad = None
        if s["packets_out"] != len(plain):
            bad = "hipsec sealed %d of %d: %s" % (s["packets_out"], len(plain), s["drops"])
        sa = c.scapy_sa()
        for i, (p, e) in enumerate(zip(plain, sealed)):
            if bad:
                break
            got = bytes(sa.decrypt(parse_ip(e)))
            if got != p:
                bad = "packet %d differs after scapy decrypt:\n  want %s\n  got  %s" % (i + 1, p.hex(), got.hex())
        results.append(("hipsec->scapy", bad is None, bad))
    except Exception as ex:  # scapy raises IPSecIntegrityError, struct errors, ...
        results.append(("hipsec->scapy", False, "%s: %s" % (type(ex).__name__, ex)))

    # (b) scapy seals, hipsec opens.
    try:
        sa = c.scapy_sa()
        sealed = [bytes(sa.encrypt(parse_ip(p))) for p in plain]
        write_pcap(os.path.join(d, "scapy.pcap"), sealed)
        s = hipsec(binary, "open", sa_path, os.path.join(d, "scapy.pcap"), os.path.join(d, "opened.pcap"))
        opened = read_pcap(os.path.join(d, "opened.pcap"))
        bad = None
        if s["packets_out"] != len(plain):
            bad = "hipsec opened %d of %d: %s %s" % (s["packets_out"], len(plain), s["drops"],
                                                     s["dropped_packets"][:3])
        for i, (p, o) in enumerate(zip(plain, opened)):
            if bad:
                break
            if o != p:
                bad = "packet %d differs after hipsec open:\n  want %s\n  got  %s" % (i + 1, p.hex(), o.hex())
        results.append(("scapy->hipsec", bad is None, bad))

        # (c) one flipped byte in the protected part, then the genuine packet.
        forged = bytearray(sealed[0])
        forged[len(forged) - c.icv - 2] ^= 0x40
        write_pcap(os.path.join(d, "forged.pcap"), [bytes(forged), sealed[0]])
        s = hipsec(binary, "open", sa_path, os.path.join(d, "forged.pcap"), os.path.join(d, "opened2.pcap"))
        drops = s["dropped_packets"]
        ok = (len(drops) == 1 and drops[0]["packet"] == 1 and drops[0]["reason"] == "integrity_failed"
              and s["packets_out"] == 1)
        results.append(("tamper", ok, None if ok else "expected packet 1 integrity_failed, packet 2 opened: %s" % s))
    except Exception as ex:
        results.append(("scapy->hipsec", False, "%s: %s" % (type(ex).__name__, ex)))
    return results


def cases():
    seed = 1
    for proto, algs in (("esp", ESP_SUITES), ("ah", AH_ALGS)):
        for alg in algs:
            for mode in ("tunnel", "transport"):
                fams = [(4, 4), (6, 6)] + ([(6, 4)] if mode == "tunnel" else [])
                for outer, inner in fams:
                    for esn in (False, True):
                        seed += 1
                        yield Case(proto, alg, mode, outer, inner, esn, seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--hipsec", default=os.environ.get("HIPSEC_BIN", os.path.join(root, "target/release/hipsec")))
    ap.add_argument("--keep", help="keep the files of each case under this directory")
    ap.add_argument("-k", dest="filters", action="append", default=[],
                    help="only cases whose name contains this (repeatable: any of them)")
    a = ap.parse_args()
    if not os.access(a.hipsec, os.X_OK):
        print("hipsec binary not found at %s (set HIPSEC_BIN or --hipsec)" % a.hipsec, file=sys.stderr)
        return 2
    passed = failed = 0
    for c in cases():
        if a.filters and not any(f in c.name() for f in a.filters):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            d = tmp
            if a.keep:
                d = os.path.join(a.keep, c.name().replace(" ", "_").replace("=", ""))
                os.makedirs(d, exist_ok=True)
            for direction, ok, detail in run_case(c, a.hipsec, d):
                print("%s %s %s" % ("PASS" if ok else "FAIL", c.name(), direction))
                if not ok:
                    print("     " + str(detail).replace("\n", "\n     "))
                passed += ok
                failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
