#!/usr/bin/env python3
"""scapy's own ESP (scapy.layers.ipsec) against the ESP of hipsec's IKE-made CHILD SAs on the
wire, with the keys `hipsec ike wireshark-keys --esp` exports (Wireshark `esp_sa` lines).

  decrypt PCAP KEYS   reads a capture; prints one JSON object: how many ESP packets went as IP
                      protocol 50 and how many in UDP (RFC 3948, non-zero first word), how many
                      of the protocol-50 ones scapy decrypted, and the ICMP echoes inside them
                      as [type, id] pairs.
  inject KEYS SRC DST INNER_SRC INNER_DST SEQ ID
                      seals an ICMP echo request INNER_SRC -> INNER_DST (ICMP id ID) with
                      scapy under the SA SRC -> DST of KEYS, sequence number SEQ, and sends it
                      as IP protocol 50 from this namespace.

Only the suites the tests use: AES-GCM with a 16-octet ICV (RFC 4106), tunnel mode, IPv4.
"""

import json
import sys

from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.ipsec import ESP, SecurityAssociation
from scapy.sendrecv import send
from scapy.utils import rdpcap


def read_keys(path):
    """(src, dst, spi) -> scapy SA for each esp_sa line of KEYS."""
    sas = {}
    for line in open(path):
        cols = [c.strip('"') for c in line.strip().split('","')]
        if len(cols) < 8 or not cols[4].startswith("AES-GCM"):
            continue
        src, dst, spi, key = cols[1], cols[2], int(cols[3], 16), bytes.fromhex(cols[5][2:])
        # RFC 4106 §8.1: the key material is the AES key and the 4-octet salt, scapy's form.
        sas[(src, dst, spi)] = SecurityAssociation(
            ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=key,
            tunnel_header=IP(src=src, dst=dst))
    return sas


def decrypt(pcap, keys):
    sas = read_keys(keys)
    out = {"raw_esp": 0, "udp_esp": 0, "decrypted": 0, "echoes": []}
    for frame in rdpcap(pcap):
        pkt = frame[IP] if IP in frame else None
        if pkt is None:
            continue
        if pkt.proto == 17 and UDP in pkt and 4500 in (pkt[UDP].sport, pkt[UDP].dport):
            payload = bytes(pkt[UDP].payload)
            if len(payload) >= 8 and payload[:4] != b"\0\0\0\0":
                out["udp_esp"] += 1
            continue
        if pkt.proto != 50:
            continue
        out["raw_esp"] += 1
        spi = int.from_bytes(bytes(pkt.payload)[:4], "big")
        sa = sas.get((pkt.src, pkt.dst, spi))
        if sa is None:
            continue
        try:
            inner = sa.decrypt(IP(bytes(pkt)))
        except Exception:  # an ICV that does not verify: not counted
            continue
        out["decrypted"] += 1
        if ICMP in inner:
            out["echoes"].append([inner[ICMP].type, inner[ICMP].id])
    print(json.dumps(out))


def inject(keys, src, dst, inner_src, inner_dst, seq, ident):
    match = [s for (a, b, _), s in read_keys(keys).items() if (a, b) == (src, dst)]
    if not match:
        sys.exit(f"no AES-GCM SA {src} -> {dst} in {keys}")
    inner = IP(src=inner_src, dst=inner_dst) / ICMP(type=8, id=int(ident), seq=1) / (b"s" * 32)
    sealed = match[-1].encrypt(inner, seq_num=int(seq))
    send(sealed, verbose=False)
    print(json.dumps({"sent": 1, "spi": match[-1].spi}))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "decrypt":
        decrypt(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 9 and sys.argv[1] == "inject":
        inject(*sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
