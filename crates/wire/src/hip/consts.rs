//! HIPv2 numbers. Every value below was checked against the RFC that defines it and against the
//! IANA "Host Identity Protocol (HIP) Parameters" registry (as mirrored by PyPCAPKit's generated
//! `pcapkit/const/hip/*.py` tables); the doc comment of each constant names its source.
//! Numbers are newtypes with the RFC's names as associated constants, so unknown values pass
//! through losslessly and print as `Name(n)`.

named_number! {
    /// HIP packet type (RFC 7401 §5.3; UPDATE, NOTIFY, CLOSE, CLOSE_ACK in §5.3.5–5.3.9).
    PacketType(u8) {
        /// Initiator's first packet (§5.3.1).
        I1 = 1,
        /// Responder's first packet (§5.3.2).
        R1 = 2,
        /// Initiator's second packet (§5.3.3).
        I2 = 3,
        /// Responder's second packet (§5.3.4).
        R2 = 4,
        /// §5.3.5.
        UPDATE = 16,
        /// §5.3.6.
        NOTIFY = 17,
        /// §5.3.7.
        CLOSE = 18,
        /// §5.3.8.
        CLOSE_ACK = 19,
    }
}

named_number! {
    /// Parameter type (RFC 7401 §5.2, RFC 7402 §5.1, RFC 8046 §4). Bit 0 is the critical bit
    /// (§5.2.1), so odd types must be understood by the receiver.
    ParamType(u16) {
        /// RFC 7402 §5.1.1.
        ESP_INFO = 65,
        /// RFC 7401 §5.2.3 (HIPv1's R1_Counter was 128).
        R1_COUNTER = 129,
        /// RFC 8046 §4 (HIPv1's LOCATOR in RFC 5206 had the same number).
        LOCATOR_SET = 193,
        /// RFC 7401 §5.2.4.
        PUZZLE = 257,
        /// RFC 7401 §5.2.5.
        SOLUTION = 321,
        /// RFC 7401 §5.2.16.
        SEQ = 385,
        /// RFC 7401 §5.2.17.
        ACK = 449,
        /// RFC 7401 §5.2.6.
        DH_GROUP_LIST = 511,
        /// RFC 7401 §5.2.7.
        DIFFIE_HELLMAN = 513,
        /// RFC 7401 §5.2.8.
        HIP_CIPHER = 579,
        /// RFC 7401 §5.2.18.
        ENCRYPTED = 641,
        /// RFC 7401 §5.2.9.
        HOST_ID = 705,
        /// RFC 7401 §5.2.10.
        HIT_SUITE_LIST = 715,
        /// RFC 7401 §5.2 / RFC 8002 (kept opaque here).
        CERT = 768,
        /// RFC 7401 §5.2.19.
        NOTIFICATION = 832,
        /// RFC 7401 §5.2.20.
        ECHO_REQUEST_SIGNED = 897,
        /// RFC 7401 §5.2.22.
        ECHO_RESPONSE_SIGNED = 961,
        /// RFC 7401 §5.2.11.
        TRANSPORT_FORMAT_LIST = 2049,
        /// RFC 7402 §5.1.2.
        ESP_TRANSFORM = 4095,
        /// RFC 7401 §5.2.12.
        HIP_MAC = 61505,
        /// RFC 7401 §5.2.13.
        HIP_MAC_2 = 61569,
        /// RFC 7401 §5.2.15.
        HIP_SIGNATURE_2 = 61633,
        /// RFC 7401 §5.2.14.
        HIP_SIGNATURE = 61697,
        /// RFC 7401 §5.2.21.
        ECHO_REQUEST_UNSIGNED = 63661,
        /// RFC 7401 §5.2.23 (numbered below ECHO_REQUEST_UNSIGNED, as in the RFC).
        ECHO_RESPONSE_UNSIGNED = 63425,
    }
}

impl ParamType {
    /// The critical bit (§5.2.1): the receiver must understand this parameter or reject the
    /// packet with UNSUPPORTED_CRITICAL_PARAMETER_TYPE.
    pub fn is_critical(self) -> bool {
        self.0 & 1 == 1
    }
}

named_number! {
    /// HIP Cipher ID for HIP_CIPHER and ENCRYPTED (RFC 7401 §5.2.8).
    CipherId(u16) {
        /// No encryption (§5.2.8: 1).
        NULL_ENCRYPT = 1,
        /// AES-128 in CBC mode, 16-octet IV (§5.2.8: 2).
        AES_128_CBC = 2,
        /// AES-256 in CBC mode, 16-octet IV (§5.2.8: 4; 3 is reserved).
        AES_256_CBC = 4,
    }
}

named_number! {
    /// Diffie-Hellman Group ID (RFC 7401 §5.2.7). 1, 2, 5, 6 are HIPv1 groups, deprecated. The
    /// registry holds no Curve25519/X25519 group: 12 and up are unassigned.
    DhGroupId(u8) {
        /// 1536-bit MODP group (RFC 3526).
        MODP_1536 = 3,
        /// 3072-bit MODP group (RFC 3526).
        MODP_3072 = 4,
        /// NIST P-256 (ECDH).
        NIST_P256 = 7,
        /// NIST P-384 (ECDH).
        NIST_P384 = 8,
        /// NIST P-521 (ECDH).
        NIST_P521 = 9,
        /// SECP160R1 (ECDH, for constrained devices).
        SECP160R1 = 10,
        /// 2048-bit MODP group (RFC 3526).
        MODP_2048 = 11,
    }
}

named_number! {
    /// Host Identity algorithm, the HOST_ID Algorithm and HIP_SIGNATURE SIG alg fields
    /// (RFC 7401 §5.2.9; EdDSA 13 from RFC 9374 §3.4, IANA registry).
    HiAlgorithm(u16) {
        /// DSA (RFC 2536 key format), §5.2.9.
        DSA = 3,
        /// RSA (RFC 3110 key format), §5.2.9.
        RSA = 5,
        /// ECDSA: ECC Curve (16 bits) then the public key, §5.2.9.
        ECDSA = 7,
        /// ECDSA_LOW (SECP160R1), §5.2.9.
        ECDSA_LOW = 9,
        /// EdDSA: EdDSA Curve (16 bits) then the public key (RFC 9374 §3.4.1).
        EDDSA = 13,
    }
}

named_number! {
    /// ECC curve label at the start of an ECDSA Host Identity (RFC 7401 §5.2.9, "ECDSA Curve
    /// Label" registry).
    EcdsaCurve(u16) {
        /// NIST P-256.
        NIST_P256 = 1,
        /// NIST P-384.
        NIST_P384 = 2,
    }
}

named_number! {
    /// ECC curve label of an ECDSA_LOW Host Identity (RFC 7401 §5.2.9).
    EcdsaLowCurve(u16) {
        /// SECP160R1.
        SECP160R1 = 1,
    }
}

named_number! {
    /// Curve label of an EdDSA Host Identity (RFC 9374 §3.4.1, "EdDSA Curve Label" registry).
    EddsaCurve(u16) {
        /// Ed25519 (RFC 8032).
        ED25519 = 1,
        /// Ed25519ph.
        ED25519PH = 2,
        /// Ed448.
        ED448 = 3,
        /// Ed448ph.
        ED448PH = 4,
    }
}

named_number! {
    /// HIT Suite ID, the 4-bit value of the ORCHID OGA ID (RFC 7401 §5.2.10; 5 from RFC 9374).
    /// In HIT_SUITE_LIST each ID sits in the high four bits of an octet.
    HitSuiteId(u8) {
        /// RSA or DSA Host Identities, SHA-256.
        RSA_DSA_SHA256 = 1,
        /// ECDSA (P-256/P-384), SHA-384.
        ECDSA_SHA384 = 2,
        /// ECDSA_LOW (SECP160R1), SHA-1.
        ECDSA_LOW_SHA1 = 3,
        /// EdDSA, cSHAKE128 (RFC 9374 §3.2).
        EDDSA_CSHAKE128 = 5,
    }
}

named_number! {
    /// DI-type of HOST_ID's Domain Identifier (RFC 7401 §5.2.9).
    DiType(u8) {
        /// No Domain Identifier.
        NONE = 0,
        /// A fully qualified domain name, in binary format.
        FQDN = 1,
        /// A Network Access Identifier.
        NAI = 2,
    }
}

named_number! {
    /// Notify Message Type of NOTIFICATION (RFC 7401 §5.2.19; 18, 19 from RFC 7402 §5.1.3;
    /// 46 from RFC 8046 §4). Below 16384: errors; from 16384: status.
    NotifyType(u16) {
        /// §5.2.19.
        UNSUPPORTED_CRITICAL_PARAMETER_TYPE = 1,
        /// §5.2.19.
        INVALID_SYNTAX = 7,
        /// §5.2.19.
        NO_DH_PROPOSAL_CHOSEN = 14,
        /// §5.2.19.
        INVALID_DH_CHOSEN = 15,
        /// §5.2.19.
        NO_HIP_PROPOSAL_CHOSEN = 16,
        /// §5.2.19.
        INVALID_HIP_CIPHER_CHOSEN = 17,
        /// RFC 7402 §5.1.3.
        NO_ESP_PROPOSAL_CHOSEN = 18,
        /// RFC 7402 §5.1.3.
        INVALID_ESP_TRANSFORM_CHOSEN = 19,
        /// §5.2.19.
        UNSUPPORTED_HIT_SUITE = 20,
        /// §5.2.19.
        AUTHENTICATION_FAILED = 24,
        /// §5.2.19.
        CHECKSUM_FAILED = 26,
        /// §5.2.19.
        HIP_MAC_FAILED = 28,
        /// §5.2.19.
        ENCRYPTION_FAILED = 32,
        /// §5.2.19.
        INVALID_HIT = 40,
        /// §5.2.19.
        BLOCKED_BY_POLICY = 42,
        /// §5.2.19.
        RESPONDER_BUSY_PLEASE_RETRY = 44,
        /// RFC 8046 §4.
        LOCATOR_TYPE_UNSUPPORTED = 46,
        /// §5.2.19 (status).
        I2_ACKNOWLEDGEMENT = 16384,
    }
}

named_number! {
    /// ESP transform Suite ID of ESP_TRANSFORM (RFC 7402 §5.1.2). 2–6 are deprecated.
    EspSuite(u16) {
        /// AES-128-CBC with HMAC-SHA1 (RFC 3602, RFC 2404).
        AES_128_CBC_HMAC_SHA1 = 1,
        /// NULL with HMAC-SHA-256 (RFC 2410, RFC 4868).
        NULL_HMAC_SHA256 = 7,
        /// AES-128-CBC with HMAC-SHA-256 (RFC 3602, RFC 4868).
        AES_128_CBC_HMAC_SHA256 = 8,
        /// AES-256-CBC with HMAC-SHA-256 (RFC 3602, RFC 4868).
        AES_256_CBC_HMAC_SHA256 = 9,
        /// AES-CCM with an 8-octet ICV (RFC 4309).
        AES_CCM_8 = 10,
        /// AES-CCM with a 16-octet ICV (RFC 4309).
        AES_CCM_16 = 11,
        /// AES-GCM with an 8-octet ICV (RFC 4106).
        AES_GCM_8 = 12,
        /// AES-GCM with a 16-octet ICV (RFC 4106).
        AES_GCM_16 = 13,
        /// AES-CMAC-96 (RFC 4493, RFC 4494).
        AES_CMAC_96 = 14,
        /// AES-GMAC (RFC 4543).
        AES_GMAC = 15,
    }
}

named_number! {
    /// Locator Type in LOCATOR_SET (RFC 8046 §4).
    LocatorType(u8) {
        /// An IPv6 address or an IPv4-in-IPv6 address (Locator Length 4).
        IPV6 = 0,
        /// An ESP SPI followed by an IPv6 address (Locator Length 5).
        ESP_SPI_IPV6 = 1,
    }
}

named_number! {
    /// Traffic Type in LOCATOR_SET (RFC 8046 §4).
    TrafficType(u8) {
        /// Both signaling and data.
        BOTH = 0,
        /// HIP signaling only.
        SIGNALING = 1,
        /// Data only.
        DATA = 2,
    }
}

/// Length of the fixed HIP header (§5.1): 8 octets, then two 16-octet HITs.
pub const HEADER_LEN: usize = 40;
/// Largest HIP packet the 8-bit Header Length can describe: (255 + 1) × 8 octets, i.e. the
/// 40-octet header and at most (255 × 8) − 32 = 2008 octets of parameters (§5.1; the minimum
/// Header Length is 4, the two HITs).
pub const MAX_PACKET_LEN: usize = 2048;
/// Length of a parameter's Type and Length fields (§5.2.1).
pub const PARAM_HEADER_LEN: usize = 4;
/// The HIP version this module speaks (RFC 7401 §5.1).
pub const VERSION: u8 = 2;
