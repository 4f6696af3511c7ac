//! IKEv2 numbers from the IANA registries RFC 7296 §3 points to: exchange types (§3.1), payload
//! types (§3.2), transform types and IDs (§3.3.2, RFC 4868/5282/7634/5903/8031), ID types (§3.5),
//! auth methods (§3.8, RFC 7427), notify types (§3.10.1, RFC 7296 and RFC 7427).

named_number! {
    /// Exchange type (§3.1).
    ExchangeType(u8) {
        /// §1.2.
        IKE_SA_INIT = 34,
        /// §1.2.
        IKE_AUTH = 35,
        /// §1.3.
        CREATE_CHILD_SA = 36,
        /// §1.4.
        INFORMATIONAL = 37,
    }
}

named_number! {
    /// Payload type, the "Next Payload" field (§3.2).
    PayloadType(u8) {
        /// No next payload.
        NONE = 0,
        /// Security Association (§3.3).
        SA = 33,
        /// Key Exchange (§3.4).
        KE = 34,
        /// Identification - Initiator (§3.5).
        IDI = 35,
        /// Identification - Responder (§3.5).
        IDR = 36,
        /// Certificate (§3.6).
        CERT = 37,
        /// Certificate Request (§3.7).
        CERTREQ = 38,
        /// Authentication (§3.8).
        AUTH = 39,
        /// Nonce (§3.9).
        NONCE = 40,
        /// Notify (§3.10).
        NOTIFY = 41,
        /// Delete (§3.11).
        DELETE = 42,
        /// Vendor ID (§3.12).
        VENDOR_ID = 43,
        /// Traffic Selector - Initiator (§3.13).
        TSI = 44,
        /// Traffic Selector - Responder (§3.13).
        TSR = 45,
        /// Encrypted and Authenticated (§3.14).
        SK = 46,
        /// Configuration (§3.15).
        CP = 47,
        /// EAP (§3.16).
        EAP = 48,
    }
}

named_number! {
    /// Protocol ID in proposals, notifies and deletes (§3.3.1).
    ProtocolId(u8) {
        /// None (notifies about no SA).
        NONE = 0,
        /// IKE.
        IKE = 1,
        /// AH.
        AH = 2,
        /// ESP.
        ESP = 3,
    }
}

named_number! {
    /// Transform type (§3.3.2).
    TransformType(u8) {
        /// Encryption algorithm.
        ENCR = 1,
        /// Pseudorandom function.
        PRF = 2,
        /// Integrity algorithm.
        INTEG = 3,
        /// Diffie-Hellman group (renamed Key Exchange Method by RFC 9370).
        DH = 4,
        /// Extended sequence numbers.
        ESN = 5,
    }
}

/// Transform IDs for ENCR (§3.3.2, RFC 5282 §8, RFC 7634 §4).
pub mod encr {
    /// ENCR_AES_CBC (RFC 3602); needs a Key Length attribute.
    pub const AES_CBC: u16 = 12;
    /// ENCR_AES_GCM_16 (RFC 5282); needs a Key Length attribute.
    pub const AES_GCM_16: u16 = 20;
    /// ENCR_CHACHA20_POLY1305 (RFC 7634); no Key Length attribute.
    pub const CHACHA20_POLY1305: u16 = 28;
}

/// Transform IDs for PRF (§3.3.2, RFC 4868).
pub mod prf {
    /// PRF_HMAC_SHA2_256.
    pub const HMAC_SHA2_256: u16 = 5;
    /// PRF_HMAC_SHA2_384.
    pub const HMAC_SHA2_384: u16 = 6;
    /// PRF_HMAC_SHA2_512.
    pub const HMAC_SHA2_512: u16 = 7;
}

/// Transform IDs for INTEG (§3.3.2, RFC 4868).
pub mod integ {
    /// NONE (with an AEAD).
    pub const NONE: u16 = 0;
    /// AUTH_HMAC_SHA2_256_128.
    pub const HMAC_SHA2_256_128: u16 = 12;
    /// AUTH_HMAC_SHA2_384_192.
    pub const HMAC_SHA2_384_192: u16 = 13;
    /// AUTH_HMAC_SHA2_512_256.
    pub const HMAC_SHA2_512_256: u16 = 14;
}

/// Transform IDs for DH (§3.3.2, RFC 3526, RFC 5903, RFC 8031).
pub mod dh {
    /// NONE (no PFS for a CHILD_SA).
    pub const NONE: u16 = 0;
    /// 2048-bit MODP group (RFC 3526 §3).
    pub const MODP_2048: u16 = 14;
    /// 256-bit random ECP group (RFC 5903).
    pub const ECP_256: u16 = 19;
    /// 384-bit random ECP group (RFC 5903).
    pub const ECP_384: u16 = 20;
    /// Curve25519 (RFC 8031).
    pub const CURVE25519: u16 = 31;
}

/// Transform IDs for ESN (§3.3.2).
pub mod esn {
    /// No extended sequence numbers.
    pub const NO_ESN: u16 = 0;
    /// Extended sequence numbers.
    pub const ESN: u16 = 1;
}

named_number! {
    /// Identification type (§3.5).
    IdType(u8) {
        /// A single four-octet IPv4 address.
        ID_IPV4_ADDR = 1,
        /// A fully qualified domain name string.
        ID_FQDN = 2,
        /// An RFC 822 email address string.
        ID_RFC822_ADDR = 3,
        /// A single sixteen-octet IPv6 address.
        ID_IPV6_ADDR = 5,
        /// DER ASN.1 X.500 distinguished name.
        ID_DER_ASN1_DN = 9,
        /// DER ASN.1 X.509 GeneralName.
        ID_DER_ASN1_GN = 10,
        /// An opaque octet stream.
        ID_KEY_ID = 11,
    }
}

named_number! {
    /// Authentication method (§3.8, RFC 7427 §3).
    AuthMethod(u8) {
        /// RSA Digital Signature (PKCS#1 v1.5 with SHA-1).
        RSA_DIGITAL_SIGNATURE = 1,
        /// Shared Key Message Integrity Code (§2.15).
        SHARED_KEY_MIC = 2,
        /// DSS Digital Signature.
        DSS_DIGITAL_SIGNATURE = 3,
        /// ECDSA with SHA-256 on P-256 (RFC 4754).
        ECDSA_SHA256_P256 = 9,
        /// Digital Signature (RFC 7427): AlgorithmIdentifier + signature.
        DIGITAL_SIGNATURE = 14,
    }
}

named_number! {
    /// Notify message type (§3.10.1). Below 16384: errors; from 16384: status.
    NotifyType(u16) {
        /// §3.10.1.
        UNSUPPORTED_CRITICAL_PAYLOAD = 1,
        /// §3.10.1.
        INVALID_IKE_SPI = 4,
        /// §3.10.1.
        INVALID_MAJOR_VERSION = 5,
        /// §3.10.1.
        INVALID_SYNTAX = 7,
        /// §3.10.1.
        INVALID_MESSAGE_ID = 9,
        /// §3.10.1.
        INVALID_SPI = 11,
        /// §3.10.1.
        NO_PROPOSAL_CHOSEN = 14,
        /// §1.2, §1.3: data is the accepted DH group (2 bytes).
        INVALID_KE_PAYLOAD = 17,
        /// §3.10.1.
        AUTHENTICATION_FAILED = 24,
        /// §3.10.1.
        SINGLE_PAIR_REQUIRED = 34,
        /// §3.10.1.
        NO_ADDITIONAL_SAS = 35,
        /// §3.10.1.
        INTERNAL_ADDRESS_FAILURE = 36,
        /// §3.10.1.
        FAILED_CP_REQUIRED = 37,
        /// §3.10.1.
        TS_UNACCEPTABLE = 38,
        /// §3.10.1.
        INVALID_SELECTORS = 39,
        /// §2.25.
        TEMPORARY_FAILURE = 43,
        /// §2.25.
        CHILD_SA_NOT_FOUND = 44,
        /// §3.10.1.
        INITIAL_CONTACT = 16384,
        /// §3.10.1.
        SET_WINDOW_SIZE = 16385,
        /// §3.10.1.
        ADDITIONAL_TS_POSSIBLE = 16386,
        /// §3.10.1.
        IPCOMP_SUPPORTED = 16387,
        /// §2.23.
        NAT_DETECTION_SOURCE_IP = 16388,
        /// §2.23.
        NAT_DETECTION_DESTINATION_IP = 16389,
        /// §2.6.
        COOKIE = 16390,
        /// §1.3.1.
        USE_TRANSPORT_MODE = 16391,
        /// §3.10.1.
        HTTP_CERT_LOOKUP_SUPPORTED = 16392,
        /// §1.3.3.
        REKEY_SA = 16393,
        /// §1.3.1.
        ESP_TFC_PADDING_NOT_SUPPORTED = 16394,
        /// §1.3.1.
        NON_FIRST_FRAGMENTS_ALSO = 16395,
        /// RFC 7383 §2.3.
        IKEV2_FRAGMENTATION_SUPPORTED = 16430,
        /// RFC 7427 §4.
        SIGNATURE_HASH_ALGORITHMS = 16431,
    }
}

impl NotifyType {
    /// Error types are below 16384 (§3.10.1).
    pub fn is_error(self) -> bool {
        self.0 < 16384
    }
}

/// Length of a generic payload header (§3.2).
pub const GENERIC_HEADER_LEN: usize = 4;
/// Smallest nonce a peer may send (§3.9: at least 16 bytes).
pub const NONCE_MIN_LEN: usize = 16;
/// Largest nonce a peer may send (§3.9: at most 256 bytes).
pub const NONCE_MAX_LEN: usize = 256;
