//! Known-answer tests for inbound ESP: whole packets from RFC 3602 §4 (AES-128-CBC, encryption
//! only), draft-mcgrew-gcm-test-01 §4 (AES-GCM incl. ESN and AES-256) and RFC 7634 Appendix A
//! (ChaCha20-Poly1305), pushed through `SecurityAssociation::esp_open` and `Engine::inbound`.
//! Read first: `tests/data/esp_vectors.md` (where the bytes come from, packet layout), RFC 4303
//! §2 (packet format), §3.4 (inbound processing), Appendix A2 (ESN inference), RFC 4106 §5 (AAD).
//!
//! Which vectors reach the engine: RFC 3602 #5-#8, GCM-B, -C, -F, -H, -I and RFC 7634. The others
//! are checked at the crypto level (provider AEAD, AAD = SPI || seq_hi || seq_lo) because no SA
//! can open them: GCM-A, -E, -G and -J have non-zero ESN high bits, which a receiver infers from
//! its replay window (RFC 4303 Appendix A2); a new SA's window sits in block 0 and only accepted
//! packets move it, one 2^32 block per two packets, so those blocks are out of reach. GCM-D uses
//! SPI 0, which RFC 4303 §2.1 reserves, and `SecurityAssociation::new` rightly refuses it.
//!
//! The draft's GCM packets are synthetic (next header 1 in front of whole IPv4 datagrams, inner
//! lengths that cover the trailer), so they are opened in transport mode behind an IPv4 header
//! built here, and the decrypted payload is compared as opaque bytes.
#![allow(clippy::expect_used, reason = "test helpers: a malformed vector should panic loudly")]

use crypto::{AeadAlg, CryptoError, EncrAlg, EspSuite};
use ipsec::buf::DEFAULT_HEADROOM;
use ipsec::esp::Opened;
use ipsec::sa::Protocol;
use ipsec::{
    DropReason, Engine, Lifetime, Mode, PacketBuf, Processed, ReplayWindow, SaError, SaParams,
    SecurityAssociation, SeqNum, Spi, Time,
};
use std::net::{IpAddr, Ipv4Addr};
use wire::IpLayout;
use zeroize::Zeroizing;

/// One ESP packet from a published source and what it decrypts to.
#[derive(Clone, Copy)]
struct Vector {
    /// Suite name as `EspSuite` parses it.
    suite: &'static str,
    /// KEYMAT: the cipher key, then for AEADs the 4-byte salt (RFC 4106 §8.1, RFC 7634 §4).
    keymat: &'static str,
    spi: u32,
    /// The full sequence number (64 bits with ESN; only the low 32 travel).
    seq: u64,
    esn: bool,
    mode: Mode,
    pad_len: u8,
    next_header: u8,
    /// The encrypted part in clear: payload || padding || pad length || next header.
    plaintext: &'static str,
    /// The ESP packet, SPI through ICV.
    packet: &'static str,
    /// The source's own IPv4 header in front of the ESP packet, where it gives one.
    outer: Option<&'static str>,
    /// The source's original IPv4 header (transport mode), where it gives one.
    original_header: Option<&'static str>,
}

/// RFC 3602 §4 case #5: transport-mode ping 192.168.123.3 -> 192.168.123.100.
const RFC3602_5: Vector = Vector {
    suite: "aes128cbc",
    keymat: "90d382b410eeba7ad938c46cec1a82bf",
    spi: 0x4321,
    seq: 1,
    esn: false,
    mode: Mode::Transport,
    pad_len: 14,
    next_header: 1,
    plaintext: "08000ebd a70a0000 8e9c083d b95b0700 08090a0b 0c0d0e0f 10111213 14151617 \
        18191a1b 1c1d1e1f 20212223 24252627 28292a2b 2c2d2e2f 30313233 34353637 \
        01020304 05060708 090a0b0c 0d0e0e01",
    packet: "00004321 00000001 e96e8c08 ab465763 fd098d45 dd3ff893 f663c25d 325c18c6 \
        a9453e19 4e120849 a4870b66 cc6b9965 330013b4 898dc856 a4699e52 3a55db08 \
        0b59ec3a 8e4b7e52 775b07d1 db34ed9c 538ab50c 551b874a a269add0 47ad2d59 \
        13ac19b7 cfbad4a6",
    outer: Some("4500007c 08f20000 4032f9a5 c0a87b03 c0a87b64"),
    original_header: Some("45000054 08f20000 4001f9fe c0a87b03 c0a87b64"),
};

/// RFC 3602 §4 case #6: transport mode (the source gives no IP headers).
const RFC3602_6: Vector = Vector {
    suite: "aes128cbc",
    keymat: "90d382b410eeba7ad938c46cec1a82bf",
    spi: 0x4321,
    seq: 8,
    esn: false,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "0800b5e8 a80a0500 a69c083d 0b660e00 77777777 77777777 77777777 01020201",
    packet: "00004321 00000008 69d08df7 d203329d b093fc49 24e5bd80 f5199588 1ec4e0c4 \
        488987ce 742e8109 689bb379 d2d750c0 d915dca3 46a89f75",
    outer: None,
    original_header: None,
};

/// RFC 3602 §4 case #7: tunnel mode, inner ping 192.168.123.3 -> 192.168.123.200.
const RFC3602_7: Vector = Vector {
    suite: "aes128cbc",
    keymat: "0123456789abcdef0123456789abcdef",
    spi: 0x8765,
    seq: 2,
    esn: false,
    mode: Mode::Tunnel,
    pad_len: 10,
    next_header: 4,
    plaintext: "45000054 09040000 4001f988 c0a87b03 c0a87bc8 08009f76 a90a0100 b49c083d \
        02a20400 08090a0b 0c0d0e0f 10111213 14151617 18191a1b 1c1d1e1f 20212223 \
        24252627 28292a2b 2c2d2e2f 30313233 34353637 01020304 05060708 090a0a04",
    packet: "00008765 00000002 f4e76524 4f6407ad f13dc138 0f673f37 773b5241 a4c44922 \
        5e4f3ce5 ed611b0c 237ca96c f74a9301 3c1b0ea1 a0cf70f8 e4ecaec7 8ac53aad \
        7a0f022b 859243c6 47752e94 a859352b 8a4d4d2d ecd136e5 c177f132 ad3fbfb2 \
        201ac990 4c74ee0a 109e0ca1 e4dfe9d5 a100b842 f1c22f0d",
    outer: Some("4500008c 09050000 4032f91e c0a87b03 c0a87bc8"),
    original_header: None,
};

/// RFC 3602 §4 case #8: tunnel mode (the source's outer header is not available).
const RFC3602_8: Vector = Vector {
    suite: "aes128cbc",
    keymat: "0123456789abcdef0123456789abcdef",
    spi: 0x8765,
    seq: 5,
    esn: false,
    mode: Mode::Tunnel,
    pad_len: 10,
    next_header: 4,
    plaintext: "45000044 090c0000 4001f990 c0a87b03 c0a87bc8 0800d63c aa0a0200 c69c083d \
        a3de0300 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff \
        ffffffff 01020304 05060708 090a0a04",
    packet: "00008765 00000005 85d47224 b5f3dd5d 2101d4ea 8dffab22 15b92683 819596a8 \
        047232cc 00f7048f e45318e1 1f8a0f62 ede3c3fc 61203bb5 0f980a08 c9843fd3 \
        a1b06d5c 07ff9639 b7eb7dfb 3512e5de 435e7207 ed971ef3 d2726d9b 5ef6affc \
        6d17a0de cbb13892",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-A: AES-128-GCM, ESN 0x87654321_00000000.
const GCM_A: Vector = Vector {
    suite: "aes128gcm",
    keymat: "4c80cdef bb5d10da 906ac73c 3613a634 2e443b68",
    spi: 0x4321,
    seq: 0x8765_4321_0000_0000,
    esn: true,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "45000048 699a0000 80114db7 c0a80102 c0a80101 0a9bf156 38d30100 00010000 \
        00000000 045f7369 70045f75 64700373 69700963 79626572 63697479 02646b00 \
        00210001 01020201",
    packet: "00004321 00000000 4956ed7e 3b244cfe fecf537e 729d5b07 dc30df52 8dd22b76 \
        8d1b9873 6696a6fd 348509fa 13ceac34 cfa2436f 14a3f3cf 65925bf1 f4a13c5d \
        15b21e18 84f5ff62 47aeabb7 86b93bce 61bc17d7 68fd9732 45901814 8f6cbe72 \
        2fd04796 562dfdb4",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-B: AES-128-GCM, 32-bit sequence number 10.
const GCM_B: Vector = Vector {
    suite: "aes128gcm",
    keymat: "feffe992 8665731c 6d6a8f94 67308308 cafebabe",
    spi: 0xa5f8,
    seq: 0xa,
    esn: false,
    mode: Mode::Transport,
    pad_len: 0,
    next_header: 1,
    plaintext: "4500003e 698f0000 80114dcc c0a80102 c0a80101 0a980035 002a2343 b2d00100 \
        00010000 00000000 03736970 09637962 65726369 74790264 6b000001 00010001",
    packet: "0000a5f8 0000000a facedbad decaf888 deb22cd9 b07c72c1 6e3a65be eb8df304 \
        a5a5897d 33ae530f 1ba76d5d 114d2a5c 3de81827 c10e9a4f 51330d0e ec416642 \
        cfbb85a5 b47e48a4 ec3b9ba9 5d918bd1 83b70d3a a8bc6ee4 c309e9d8 5a41ad4a",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-C: AES-256-GCM, 32-bit sequence number 2.
const GCM_C: Vector = Vector {
    suite: "aes256gcm",
    keymat: "abbccdde f0011223 34455667 78899aab abbccdde f0011223 34455667 78899aab \
        11223344",
    spi: 0x4a2c_bfe3,
    seq: 2,
    esn: false,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "45000030 69a64000 80062690 c0a80102 9389155e 0a9e008b 2dc57ee0 00000000 \
        70024000 20bf0000 020405b4 01010402 01020201",
    packet: "4a2cbfe3 00000002 01020304 05060708 ff425c9b 724599df 7a3bcd51 0194e00d \
        6a78107f 1b0b1cbf 06efae9d 65a5d763 748a6379 85771d34 7f054565 9f14e99d \
        ef842d8e b335f4ee cfdbf831 824b4c49 15956c96",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-D: AES-128-GCM, all-zero key, SPI 0 (reserved), seq 1.
const GCM_D: Vector = Vector {
    suite: "aes128gcm",
    keymat: "00000000 00000000 00000000 00000000 00000000",
    spi: 0,
    seq: 1,
    esn: false,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "4500003c 99c50000 8001cb7a 40679318 01010101 0800075c 02004400 61626364 \
        65666768 696a6b6c 6d6e6f70 71727374 75767761 62636465 66676869 01020201",
    packet: "00000000 00000001 00000000 00000000 4688daf2 f973a392 732909c3 31d56d60 \
        f694abaa 414b5e7f f5fdcdff f5e9a284 45647649 2719ffb6 4de7d9dc a1e1d894 \
        bc3bd578 73ed4d18 1d19d4d5 c8c18af3 f821d496 eeb096e9 8ad2b69e 4799c71d",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-E: AES-128-GCM, ESN 0x10101010_10101010.
const GCM_E: Vector = Vector {
    suite: "aes128gcm",
    keymat: "3de09874 b388e649 1988d0c3 607eae1f 57690e43",
    spi: 0x42f6_7e3f,
    seq: 0x1010_1010_1010_1010,
    esn: true,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "4500003c 99c30000 8001cb7c 40679318 01010101 0800085c 02004300 61626364 \
        65666768 696a6b6c 6d6e6f70 71727374 75767761 62636465 66676869 01020201",
    packet: "42f67e3f 10101010 4e280000 a2fca1a3 fba2caa4 853cf9f0 f22cb10d 86dd83b0 \
        fec75691 cf1a04b0 0d1138ec 9c357917 65acbd87 01ad7984 5bf9fe3f ba487bc9 \
        1755e666 2b4c8d0d 1f5e2273 9530320a e0d731cc 978ecafa eae88f00 e80d6e48",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-F: AES-128-GCM, ESN 0x00000000_00000001.
const GCM_F: Vector = Vector {
    suite: "aes128gcm",
    keymat: "abbccdde f0011223 34455667 78899aab decaf888",
    spi: 0x100,
    seq: 1,
    esn: true,
    mode: Mode::Transport,
    pad_len: 1,
    next_header: 1,
    plaintext: "45000049 33ba0000 7f119106 c3fb1d10 c2b1d326 c02831ce 0035dd7b 800302d5 \
        00004e20 001e8c18 d75b81dc 91baa047 6b91b924 b280389d 92c963ba c046ec95 \
        9b6266c0 4722b149 23010101",
    packet: "00000100 00000001 cafedeba ceface74 18a6fd42 f72cbf4a b2a2ea90 1f73d814 \
        e3e7f243 d95412e1 c349c1d2 fbec168f 9190feeb af2cb019 84e65863 965d7472 \
        b79da345 e0e78019 1f0d2f0e 0f496c22 6f2127b2 7db35724 e7845d68 651f57e6 \
        5f354f75 ff170157 69623436",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-G: AES-256-GCM, ESN 0x156f3126_dd0db99b.
const GCM_G: Vector = Vector {
    suite: "aes256gcm",
    keymat: "abbccdde f0011223 34455667 78899aab abbccdde f0011223 34455667 78899aab \
        73616c74",
    spi: 0x1740_5e67,
    seq: 0x156f_3126_dd0d_b99b,
    esn: true,
    mode: Mode::Transport,
    pad_len: 0,
    next_header: 1,
    plaintext: "45080028 732c0000 4006e9f9 0a010612 0a01038f 06b88023 dd6bafbe cb712602 \
        50101f64 6d540001",
    packet: "17405e67 dd0db99b 616e6401 69766563 f2d69ecd bd5a0d5b 8d5ef38b ad4da58d \
        1f278fde 98ef6754 9d524a30 18d9a57f f4d3a31c e673119e 451626c2 415771e3 \
        b7eebca6 14c89b35",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-H: AES-128-GCM, seq 0xffffffff, no payload at all.
const GCM_H: Vector = Vector {
    suite: "aes128gcm",
    keymat: "7d773d00 c144c525 ac619d18 c84a3f47 d9664267",
    spi: 0x3354_67ae,
    seq: 0xffff_ffff,
    esn: false,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "01020201",
    packet: "335467ae ffffffff 43457e91 82443bc6 437f866b cb3f699f e9b0822b ac961c45 \
        04bef270",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-I: AES-128-GCM, ESN 0x00000000_00000001, non-IP payload.
const GCM_I: Vector = Vector {
    suite: "aes128gcm",
    keymat: "abbccdde f0011223 34455667 78899aab decaf888",
    spi: 0x100,
    seq: 1,
    esn: true,
    mode: Mode::Transport,
    pad_len: 0,
    next_header: 1,
    plaintext: "746f0162 65016f72 016e6f74 01746f01 62650001",
    packet: "00000100 00000001 cafedeba ceface74 29c9fc69 a197d038 ccdd14e2 ddfcaa05 \
        43332164 41250352 4303ed3c 6c5f2838 43af8c3e",
    outer: None,
    original_header: None,
};

/// draft-mcgrew-gcm-test-01 §4, GCM-J: AES-256-GCM, ESN 0xffffffff_ffffffff (the largest).
const GCM_J: Vector = Vector {
    suite: "aes256gcm",
    keymat: "6c656761 6c697a65 6d617269 6a75616e 61616e64 646f6974 6265666f 72656961 \
        7475726e",
    spi: 0x796b_6963,
    seq: u64::MAX,
    esn: true,
    mode: Mode::Transport,
    pad_len: 2,
    next_header: 1,
    plaintext: "45000030 da3a0000 8001df3b c0a80005 c0a80001 0800c6cd 02000700 61626364 \
        65666768 696a6b6c 6d6e6f70 71727374 01020201",
    packet: "796b6963 ffffffff 33302169 6765746d f97ab2aa 356d8edc e17644ac 8c78e25d \
        d24dedbb 29ebf1b6 4a274b39 b49c3a86 4cd3d78c a4ae68a3 2b42458f b57dbe82 \
        1dcc63b9 d0937ba2 945f6693 68661a32 9fb4c053",
    outer: None,
    original_header: None,
};

/// RFC 7634 Appendix A: ChaCha20-Poly1305, tunnel mode, inner IPv4 ping (outer header not copied).
const RFC7634_A: Vector = Vector {
    suite: "chacha20poly1305",
    keymat: "80818283 84858687 88898a8b 8c8d8e8f 90919293 94959697 98999a9b 9c9d9e9f \
        a0a1a2a3",
    spi: 0x0102_0304,
    seq: 5,
    esn: false,
    mode: Mode::Tunnel,
    pad_len: 2,
    next_header: 4,
    plaintext: "45000054 a6f20000 4001e778 c6336405 c0000205 08005b7a 3a080000 553bec10 \
        00073627 08090a0b 0c0d0e0f 10111213 14151617 18191a1b 1c1d1e1f 20212223 \
        24252627 28292a2b 2c2d2e2f 30313233 34353637 01020204",
    packet: "01020304 00000005 10111213 14151617 24039428 b97f417e 3c13753a 4f05087b \
        67c352e6 a7fab1b9 82d466ef 407ae5c6 14ee8099 d52844eb 61aa95df ab4c02f7 \
        2aa71e7c 4c4f64c9 befe2fac c638e8f3 cbec163f ac469b50 2773f6fb 94e664da \
        9165b828 29f641e0 76aaa826 6b7fb0f7 b11b3699 07e1ad43",
    outer: None,
    original_header: None,
};

const ALL: [Vector; 15] = [
    RFC3602_5, RFC3602_6, RFC3602_7, RFC3602_8, GCM_A, GCM_B, GCM_C, GCM_D, GCM_E, GCM_F, GCM_G,
    GCM_H, GCM_I, GCM_J, RFC7634_A,
];

// ---- helpers ----

fn h(s: &str) -> Vec<u8> {
    hex::decode(s.split_whitespace().collect::<String>()).expect("vector hex")
}

fn suite(v: &Vector) -> EspSuite {
    v.suite.parse().expect("suite name")
}

/// RFC 1071 checksum, written out here so the expected headers do not come from the code under test.
fn checksum(data: &[u8]) -> u16 {
    let word = |c: &[u8]| (u32::from(c[0]) << 8) | u32::from(c.get(1).copied().unwrap_or(0));
    let mut sum: u32 = data.chunks(2).map(word).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn set_len_and_checksum(hdr: &mut [u8], total_len: usize) {
    hdr[2..4].copy_from_slice(&u16::try_from(total_len).expect("fits").to_be_bytes());
    hdr[10..12].fill(0);
    let c = checksum(&hdr[..20]);
    hdr[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Addresses of the ESP packet: the source's, or 192.0.2.1 -> 192.0.2.2 (RFC 5737).
fn addrs(v: &Vector) -> ([u8; 4], [u8; 4]) {
    match v.outer.map(h) {
        Some(o) => (o[12..16].try_into().expect("4"), o[16..20].try_into().expect("4")),
        None => ([192, 0, 2, 1], [192, 0, 2, 2]),
    }
}

/// The IPv4 header in front of an ESP packet of `esp_len` bytes: the source's own where it has
/// one (and the length fits), else one built here (protocol 50, TTL 64).
fn outer_header(v: &Vector, esp_len: usize) -> Vec<u8> {
    if let Some(o) = v.outer.map(h) {
        if usize::from(u16::from_be_bytes([o[2], o[3]])) == 20 + esp_len {
            return o;
        }
    }
    let (s, d) = addrs(v);
    let mut hdr = vec![0x45, 0, 0, 0, 0x12, 0x34, 0, 0, 64, 50, 0, 0];
    hdr.extend_from_slice(&s);
    hdr.extend_from_slice(&d);
    set_len_and_checksum(&mut hdr, 20 + esp_len);
    hdr
}

fn datagram(v: &Vector, esp: &[u8]) -> Vec<u8> {
    let mut d = outer_header(v, esp.len());
    d.extend_from_slice(esp);
    d
}

/// The vector's ESP packet with `mask` flipped in byte `at`.
fn flipped(v: &Vector, at: usize, mask: u8) -> Vec<u8> {
    let mut p = h(v.packet);
    p[at] ^= mask;
    p
}

fn params(v: &Vector) -> SaParams {
    let (s, d) = addrs(v);
    SaParams {
        spi: Spi(v.spi),
        protocol: Protocol::Esp(suite(v)),
        mode: v.mode,
        src: IpAddr::V4(Ipv4Addr::from(s)),
        dst: IpAddr::V4(Ipv4Addr::from(d)),
        enc_key: Zeroizing::new(h(v.keymat)),
        auth_key: Zeroizing::new(vec![]),
        esn: v.esn,
        replay_window: 64,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    }
}

fn new_sa(v: &Vector) -> SecurityAssociation {
    SecurityAssociation::new(&params(v), crypto::default_provider(), Time(0)).expect("SA builds")
}

fn load(datagram: &[u8]) -> PacketBuf {
    let mut buf = PacketBuf::with_max_packet();
    buf.load(datagram, DEFAULT_HEADROOM).expect("buffer fits the packet");
    buf
}

/// Opens one IPv4/ESP datagram on `sa`; returns the verdict and what the buffer holds after.
fn open(sa: &mut SecurityAssociation, datagram: &[u8]) -> (Result<Opened, DropReason>, Vec<u8>) {
    let mut buf = load(datagram);
    let layout = IpLayout::parse(buf.as_slice()).expect("outer header parses");
    let r = sa.esp_open(&mut buf, &layout, Time(0));
    (r, buf.as_slice().to_vec())
}

/// Payload data: the plaintext without its trailer, after checking the trailer is what the
/// source says and the padding is RFC 4303 §2.4's default 1, 2, 3, ...
fn payload(v: &Vector) -> Vec<u8> {
    let pt = h(v.plaintext);
    let n = pt.len();
    assert_eq!((pt[n - 2], pt[n - 1]), (v.pad_len, v.next_header), "trailer");
    let data_len = n - 2 - usize::from(v.pad_len);
    let pad: Vec<u8> = (1..=v.pad_len).collect();
    assert_eq!(pt[data_len..n - 2], pad[..], "default padding");
    pt[..data_len].to_vec()
}

/// What a correct receiver leaves in the buffer: the inner packet (tunnel mode) or the IP header,
/// protocol set to next header and length fixed, followed by the payload (transport mode).
fn expected_output(v: &Vector) -> Vec<u8> {
    let data = payload(v);
    match v.mode {
        Mode::Tunnel => data,
        Mode::Transport => {
            let mut out = outer_header(v, h(v.packet).len());
            out[9] = v.next_header;
            set_len_and_checksum(&mut out, 20 + data.len());
            if let Some(orig) = v.original_header {
                assert_eq!(hex::encode(&out), hex::encode(h(orig)), "source's original header");
            }
            out.extend_from_slice(&data);
            out
        }
    }
}

/// The ESP packet is SPI || seq low || IV || ciphertext || ICV (RFC 4303 §2).
fn check_layout(v: &Vector) {
    let p = h(v.packet);
    let s = suite(v);
    assert_eq!(p[..4], v.spi.to_be_bytes());
    assert_eq!(p[4..8], (v.seq as u32).to_be_bytes());
    assert_eq!(p.len(), 8 + s.encr.iv_len() + h(v.plaintext).len() + s.icv_len());
    assert!(v.esn || v.seq <= u64::from(u32::MAX), "a 64-bit seq needs ESN");
}

// ---- engine-level checks ----

fn check_opens(v: &Vector) {
    check_layout(v);
    let mut sa = new_sa(v);
    let (r, out) = open(&mut sa, &datagram(v, &h(v.packet)));
    assert_eq!(r, Ok(Opened { seq: SeqNum(v.seq), next_header: v.next_header }));
    assert_eq!(hex::encode(&out), hex::encode(expected_output(v)));
    if v.mode == Mode::Transport {
        assert_eq!(out[9], v.next_header, "protocol byte");
        assert_eq!(usize::from(u16::from_be_bytes([out[2], out[3]])), out.len(), "total length");
        assert_eq!(checksum(&out[..20]), 0, "header checksum");
    }
    assert_eq!(sa.replay().top(), SeqNum(v.seq));
    assert_eq!(sa.usage().packets, 1);
}

/// A packet altered at `at` is dropped for `want`; the forgery moves neither the replay window
/// nor the counters (RFC 4303 §3.4.3), so the genuine packet still opens afterwards.
fn check_tamper(v: &Vector, at: usize, mask: u8, want: DropReason) {
    let mut sa = new_sa(v);
    let (r, _) = open(&mut sa, &datagram(v, &flipped(v, at, mask)));
    assert_eq!(r, Err(want), "byte {at} ^= {mask:#04x}");
    assert_eq!(sa.replay().top(), SeqNum(0));
    assert_eq!(sa.usage().packets, 0);
    let (r, out) = open(&mut sa, &datagram(v, &h(v.packet)));
    assert!(r.is_ok(), "genuine packet after a forgery: {r:?}");
    assert_eq!(out, expected_output(v));
}

/// AEAD: the ICV covers the sequence number (AAD), the IV (nonce), the ciphertext and itself.
/// (The SPI is in the AAD too, but `esp_open` takes it from the SA, which the caller found by the
/// packet's SPI; a changed SPI is the engine's `NoSa`, see `check_engine`.)
fn check_aead_tamper(v: &Vector) {
    let len = h(v.packet).len();
    for (at, mask) in [(16, 0x01), (len - 17, 0x80), (len - 1, 0x01), (8, 0x01), (4, 0x80)] {
        check_tamper(v, at, mask, DropReason::IntegrityFailed);
    }
}

/// Encryption-only CBC has no ICV (RFC 4303 §3.2), so what is certain is padding: flipping the
/// top bit of the pad length byte (via the ciphertext block or IV before it: CBC
/// chaining) makes it larger than the plaintext, which §2.4's check must refuse.
fn check_cbc_tamper(v: &Vector) {
    let at = h(v.packet).len() - 16 - 2;
    assert!(usize::from(v.pad_len ^ 0x80) > h(v.plaintext).len() - 2);
    check_tamper(v, at, 0x80, DropReason::BadPadding);
}

/// ... and a flipped IV bit flips the same plaintext bit and nothing else: the packet is accepted
/// with altered contents. This is why RFC 4303 §3.2 and RFC 8221 advise against encryption-only ESP.
fn check_cbc_iv_flip_undetected(v: &Vector) {
    let mut sa = new_sa(v);
    let (r, out) = open(&mut sa, &datagram(v, &flipped(v, 8 + 8, 0x01)));
    assert!(r.is_ok(), "{r:?}");
    let mut want = expected_output(v);
    want[if v.mode == Mode::Transport { 20 + 8 } else { 8 }] ^= 0x01;
    assert_eq!(out, want);
}

/// Opening the same bytes twice: the second is a replay (RFC 4303 §3.4.3).
fn check_replay(v: &Vector) {
    let mut sa = new_sa(v);
    let d = datagram(v, &h(v.packet));
    assert!(open(&mut sa, &d).0.is_ok());
    assert_eq!(open(&mut sa, &d).0, Err(DropReason::Replayed));
    assert_eq!(sa.replay().top(), SeqNum(v.seq));
    assert_eq!(sa.usage().packets, 1);
}

/// The same packet through `Engine::inbound` (SAD lookup by SPI, RFC 4301 §4.4.2), with counters.
fn check_engine(v: &Vector, at: usize, mask: u8, tamper: DropReason) {
    let mut e = Engine::new(crypto::default_provider());
    e.add_inbound(&params(v), Time(0)).expect("SA installs");
    let d = datagram(v, &h(v.packet));
    assert_eq!(e.inbound(&mut load(&datagram(v, &flipped(v, at, mask))), Time(0)), Err(tamper));
    let mut buf = load(&d);
    let r = e.inbound(&mut buf, Time(0));
    assert_eq!(r, Ok(Processed::Decapsulated { spi: Spi(v.spi), seq: SeqNum(v.seq) }));
    assert_eq!(hex::encode(buf.as_slice()), hex::encode(expected_output(v)));
    assert_eq!(e.inbound(&mut load(&d), Time(0)), Err(DropReason::Replayed));
    // Another SPI finds no SA: fail closed (RFC 4301 §5.2).
    assert_eq!(
        e.inbound(&mut load(&datagram(v, &flipped(v, 3, 0x01))), Time(0)),
        Err(DropReason::NoSa)
    );
    assert_eq!(e.counters().get(tamper), 1);
    assert_eq!(e.counters().get(DropReason::Replayed), 1);
    assert_eq!(e.counters().get(DropReason::NoSa), 1);
    assert_eq!(e.counters().total(), 3);
    assert_eq!(e.totals().in_packets, 1);
}

// ---- crypto-level checks (the provider the engine uses, RFC 4106 §5 / RFC 7634 §2.1) ----

fn aead_alg(v: &Vector) -> AeadAlg {
    match suite(v).encr {
        EncrAlg::Aead(a) => a,
        e => panic!("{} is not an AEAD", e.name()),
    }
}

/// nonce = salt || IV (RFC 4106 §4); AAD = SPI || seq (8 bytes) or SPI || seq_hi || seq_lo (ESN).
fn nonce_aad(v: &Vector, seq: SeqNum, packet: &[u8]) -> ([u8; 12], Vec<u8>) {
    let keymat = h(v.keymat);
    let mut nonce = [0u8; 12];
    nonce[..4].copy_from_slice(&keymat[keymat.len() - 4..]);
    nonce[4..].copy_from_slice(&packet[8..16]);
    let mut aad = packet[..4].to_vec();
    if v.esn {
        aad.extend_from_slice(&seq.high().to_be_bytes());
    }
    aad.extend_from_slice(&seq.low().to_be_bytes());
    (nonce, aad)
}

fn aead_key(v: &Vector) -> Box<dyn crypto::Aead> {
    let keymat = h(v.keymat);
    crypto::default_provider().aead(aead_alg(v), &keymat[..keymat.len() - 4]).expect("key")
}

fn crypto_open(v: &Vector, seq: SeqNum, packet: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let (nonce, aad) = nonce_aad(v, seq, packet);
    let mut body = packet[16..].to_vec();
    let n = aead_key(v).open_in_place(&nonce, &aad, &mut body)?;
    body.truncate(n);
    Ok(body)
}

/// The receiver's view of the sequence number: a window whose top is just below the packet's
/// sequence number infers the full 64 bits from the 32 in the packet (RFC 4303 Appendix A2.2).
fn window_before(v: &Vector) -> ReplayWindow {
    let mut w = ReplayWindow::new(64, v.esn).expect("window");
    if v.seq > 1 {
        w.commit(SeqNum(v.seq - 1));
    }
    w
}

fn seq_low(packet: &[u8]) -> u32 {
    u32::from_be_bytes([packet[4], packet[5], packet[6], packet[7]])
}

fn check_crypto_level(v: &Vector) {
    check_layout(v);
    let p = h(v.packet);
    let w = window_before(v);
    let seq = w.infer(seq_low(&p));
    assert_eq!(seq, SeqNum(v.seq), "inferred sequence number");
    assert_eq!(w.check(seq), Ok(()));
    assert_eq!(crypto_open(v, seq, &p).map(hex::encode), Ok(hex::encode(h(v.plaintext))));
    // And the other way: sealing the plaintext reproduces ciphertext || ICV.
    let (nonce, aad) = nonce_aad(v, seq, &p);
    let mut body = h(v.plaintext);
    let mut tag = [0u8; 16];
    aead_key(v).seal_in_place(&nonce, &aad, &mut body, &mut tag).expect("seal");
    body.extend_from_slice(&tag);
    assert_eq!(hex::encode(body), hex::encode(&p[16..]));
}

fn check_crypto_tamper(v: &Vector) {
    let p = h(v.packet);
    let seq = SeqNum(v.seq);
    assert_eq!(crypto_open(v, seq, &flipped(v, 16, 0x01)), Err(CryptoError::Integrity));
    assert_eq!(crypto_open(v, seq, &flipped(v, p.len() - 1, 0x01)), Err(CryptoError::Integrity));
    if v.esn {
        // The high bits never travel but are authenticated (RFC 4303 §2.2.1, RFC 4106 §5).
        let wrong = SeqNum(v.seq ^ (1 << 40));
        assert_eq!(crypto_open(v, wrong, &p), Err(CryptoError::Integrity));
    }
}

/// Replay at the window level: after the packet is committed, the same bytes infer the same
/// sequence number and are refused (RFC 4303 §3.4.3).
fn check_window_replay(v: &Vector) {
    let mut w = window_before(v);
    let low = seq_low(&h(v.packet));
    let seq = w.infer(low);
    assert_eq!(w.check(seq), Ok(()));
    w.commit(seq);
    assert_eq!(w.top(), SeqNum(v.seq));
    assert_eq!(w.infer(low), seq);
    assert_eq!(w.check(seq), Err(DropReason::Replayed));
}

/// A new ESN SA infers high bits 0 (RFC 4303 Appendix A2: nothing received yet), so a packet from
/// a higher 2^32 block fails the ICV (or, if its low bits are 0, is sequence number 0, never sent),
/// and leaves the window where it was.
fn check_new_sa_cannot_open(v: &Vector) {
    assert!(v.esn && v.seq >> 32 != 0);
    let mut sa = new_sa(v);
    let (r, _) = open(&mut sa, &datagram(v, &h(v.packet)));
    let want = if v.seq as u32 == 0 { DropReason::BadSeq } else { DropReason::IntegrityFailed };
    assert_eq!(r, Err(want));
    assert_eq!(sa.replay().top(), SeqNum(0));
}

// ---- the tests, one module per vector; each test's doc names its source ----

macro_rules! engine_aead_vector {
    ($name:ident, $v:expr, $src:literal) => {
        #[doc = $src]
        mod $name {
            use super::*;
            #[doc = $src]
            #[test]
            fn opens() {
                check_opens(&$v);
            }
            #[doc = $src]
            #[test]
            fn tampered_fails_integrity() {
                check_aead_tamper(&$v);
            }
            #[doc = $src]
            #[test]
            fn replay_dropped() {
                check_replay(&$v);
            }
            #[doc = $src]
            #[test]
            fn engine_inbound() {
                check_engine(&$v, 16, 0x01, DropReason::IntegrityFailed);
            }
            #[doc = $src]
            #[test]
            fn crypto_level() {
                check_crypto_level(&$v);
            }
        }
    };
}

macro_rules! engine_cbc_vector {
    ($name:ident, $v:expr, $src:literal) => {
        #[doc = $src]
        mod $name {
            use super::*;
            #[doc = $src]
            #[test]
            fn opens() {
                check_opens(&$v);
            }
            #[doc = $src]
            #[test]
            fn tampered_pad_length_bad_padding() {
                check_cbc_tamper(&$v);
            }
            #[doc = $src]
            #[test]
            fn iv_flip_undetected_without_icv() {
                check_cbc_iv_flip_undetected(&$v);
            }
            #[doc = $src]
            #[test]
            fn replay_dropped() {
                check_replay(&$v);
            }
            #[doc = $src]
            #[test]
            fn engine_inbound() {
                let at = h($v.packet).len() - 18;
                check_engine(&$v, at, 0x80, DropReason::BadPadding);
            }
        }
    };
}

macro_rules! crypto_only_vector {
    ($name:ident, $v:expr, $src:literal $(, replay: #[$ra:meta])?) => {
        #[doc = $src]
        mod $name {
            use super::*;
            #[doc = $src]
            #[test]
            fn crypto_level() {
                check_crypto_level(&$v);
            }
            #[doc = $src]
            #[test]
            fn tampered_fails_integrity() {
                check_crypto_tamper(&$v);
            }
            #[doc = $src]
            #[test]
            $(#[$ra])?
            fn replay_dropped_by_window() {
                check_window_replay(&$v);
            }
        }
    };
}

engine_cbc_vector!(rfc3602_case5, RFC3602_5, "RFC 3602 §4 case #5 (transport mode, AES-128-CBC).");
engine_cbc_vector!(rfc3602_case6, RFC3602_6, "RFC 3602 §4 case #6 (transport mode, AES-128-CBC).");
engine_cbc_vector!(rfc3602_case7, RFC3602_7, "RFC 3602 §4 case #7 (tunnel mode, AES-128-CBC).");
engine_cbc_vector!(rfc3602_case8, RFC3602_8, "RFC 3602 §4 case #8 (tunnel mode, AES-128-CBC).");
engine_aead_vector!(gcm_b, GCM_B, "draft-mcgrew-gcm-test-01 §4, GCM-B (AES-128-GCM, seq 10).");
engine_aead_vector!(gcm_c, GCM_C, "draft-mcgrew-gcm-test-01 §4, GCM-C (AES-256-GCM, seq 2).");
engine_aead_vector!(
    gcm_f,
    GCM_F,
    "draft-mcgrew-gcm-test-01 §4, GCM-F (AES-128-GCM, ESN, high bits 0)."
);
engine_aead_vector!(
    gcm_h,
    GCM_H,
    "draft-mcgrew-gcm-test-01 §4, GCM-H (AES-128-GCM, seq 2^32-1, empty payload)."
);
engine_aead_vector!(
    gcm_i,
    GCM_I,
    "draft-mcgrew-gcm-test-01 §4, GCM-I (AES-128-GCM, ESN, high bits 0)."
);
engine_aead_vector!(rfc7634_a, RFC7634_A, "RFC 7634 Appendix A (ChaCha20-Poly1305, tunnel mode).");
crypto_only_vector!(
    gcm_a,
    GCM_A,
    "draft-mcgrew-gcm-test-01 §4, GCM-A (AES-128-GCM, ESN high 0x87654321)."
);
crypto_only_vector!(gcm_d, GCM_D, "draft-mcgrew-gcm-test-01 §4, GCM-D (AES-128-GCM, SPI 0).");
crypto_only_vector!(
    gcm_e,
    GCM_E,
    "draft-mcgrew-gcm-test-01 §4, GCM-E (AES-128-GCM, ESN high 0x10101010)."
);
crypto_only_vector!(
    gcm_g,
    GCM_G,
    "draft-mcgrew-gcm-test-01 §4, GCM-G (AES-256-GCM, ESN high 0x156f3126)."
);
crypto_only_vector!(gcm_j, GCM_J, "draft-mcgrew-gcm-test-01 §4, GCM-J (AES-256-GCM, ESN 2^64-1).");

// ---- vectors that no SA can open ----

/// draft-mcgrew-gcm-test-01 §4, GCM-A, -E, -G, -J: a new SA infers ESN high bits 0 and so
/// cannot authenticate them (see the file header for why no SA here can reach those blocks).
#[test]
fn esn_high_vectors_fail_on_new_sa() {
    for v in [GCM_A, GCM_E, GCM_G, GCM_J] {
        check_new_sa_cannot_open(&v);
    }
}

/// draft-mcgrew-gcm-test-01 §4, GCM-D: SPI 0 is reserved (RFC 4303 §2.1), so no SA is built.
#[test]
fn gcm_d_spi_zero_refused() {
    let r = SecurityAssociation::new(&params(&GCM_D), crypto::default_provider(), Time(0));
    assert_eq!(r.err(), Some(SaError::ReservedSpi(Spi(0))));
}

/// RFC 3602 §4 case #5 with one byte cut off: the ciphertext is no longer whole AES blocks.
#[test]
fn rfc3602_case5_partial_block_refused() {
    let mut p = h(RFC3602_5.packet);
    p.pop();
    let (r, _) = open(&mut new_sa(&RFC3602_5), &datagram(&RFC3602_5, &p));
    assert_eq!(r, Err(DropReason::BadCiphertextLen));
}

/// Every byte string above is copied from tests/data/esp_vectors.md (which cites RFC 3602 §4,
/// draft-mcgrew-gcm-test-01 §4 and RFC 7634 Appendix A); this guards against drift.
#[test]
fn vectors_match_data_file() {
    let md: String = include_str!("data/esp_vectors.md").split_whitespace().collect();
    for v in ALL {
        let fields =
            [Some(v.keymat), Some(v.plaintext), Some(v.packet), v.outer, v.original_header];
        for f in fields.into_iter().flatten() {
            let f: String = f.split_whitespace().collect();
            assert!(md.contains(&f), "not in esp_vectors.md: {f}");
        }
        assert!(md.contains(&format!("{:08x}", v.spi)), "spi {:08x}", v.spi);
        assert!(md.contains(&format!("{:016x}", v.seq)) || v.seq <= u64::from(u32::MAX));
    }
}
