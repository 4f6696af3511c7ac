//! Mobile IPv6 numbers (RFC 6275 §6.1.2, §6.1.8, §6.1.9, §6.2, §6.3, §6.4 and the IANA
//! "Mobile IPv6 parameters" registry). Numbers are newtypes with the RFC's names as associated
//! constants, so unknown values pass through losslessly and print as `Name(n)`.

/// IP protocol number of the Mobility Header (RFC 6275 §6.1: 135), used as the Next Header
/// before it and in its checksum's pseudo-header (§6.1.1).
pub const IPPROTO_MH: u8 = 135;
/// IP protocol number of the Destination Options header (RFC 8200 §4.6) that carries the Home
/// Address option.
pub const IPPROTO_DSTOPTS: u8 = 60;
/// IP protocol number of the Routing header (RFC 8200 §4.4), here the type 2 one of §6.4.
pub const IPPROTO_ROUTING: u8 = 43;
/// "No next header" (RFC 8200 §4.7): the Payload Proto a Mobility Header SHOULD carry (§6.1.1).
pub const IPPROTO_NONE: u8 = 59;
/// Option Type of the Home Address destination option (§6.3: 201, 0xC9: the top two bits 11
/// make a node that does not understand it answer with ICMP Parameter Problem, bit 3 says the
/// data does not change en route).
pub const HOME_ADDRESS_OPTION_TYPE: u8 = 201;
/// Routing Type of the type 2 routing header (§6.4).
pub const ROUTING_TYPE_2: u8 = 2;

named_number! {
    /// MH Type (§6.1.1, messages in §6.1.2–§6.1.9).
    MhType(u8) {
        /// Binding Refresh Request (§6.1.2).
        BINDING_REFRESH_REQUEST = 0,
        /// Home Test Init (§6.1.3).
        HOME_TEST_INIT = 1,
        /// Care-of Test Init (§6.1.4).
        CARE_OF_TEST_INIT = 2,
        /// Home Test (§6.1.5).
        HOME_TEST = 3,
        /// Care-of Test (§6.1.6).
        CARE_OF_TEST = 4,
        /// Binding Update (§6.1.7).
        BINDING_UPDATE = 5,
        /// Binding Acknowledgement (§6.1.8).
        BINDING_ACK = 6,
        /// Binding Error (§6.1.9).
        BINDING_ERROR = 7,
    }
}

named_number! {
    /// Binding Acknowledgement Status (§6.1.8): below 128 the Binding Update was accepted,
    /// from 128 on it was rejected.
    BaStatus(u8) {
        /// 0: Binding Update accepted.
        ACCEPTED = 0,
        /// 1: Accepted but prefix discovery necessary.
        ACCEPTED_PREFIX_DISCOVERY_NECESSARY = 1,
        /// 128: Reason unspecified.
        REASON_UNSPECIFIED = 128,
        /// 129: Administratively prohibited.
        ADMINISTRATIVELY_PROHIBITED = 129,
        /// 130: Insufficient resources.
        INSUFFICIENT_RESOURCES = 130,
        /// 131: Home registration not supported.
        HOME_REGISTRATION_NOT_SUPPORTED = 131,
        /// 132: Not home subnet.
        NOT_HOME_SUBNET = 132,
        /// 133: Not home agent for this mobile node.
        NOT_HOME_AGENT_FOR_THIS_MOBILE_NODE = 133,
        /// 134: Duplicate Address Detection failed.
        DUPLICATE_ADDRESS_DETECTION_FAILED = 134,
        /// 135: Sequence number out of window (the BA carries the last accepted number).
        SEQUENCE_NUMBER_OUT_OF_WINDOW = 135,
        /// 136: Expired home nonce index.
        EXPIRED_HOME_NONCE_INDEX = 136,
        /// 137: Expired care-of nonce index.
        EXPIRED_CARE_OF_NONCE_INDEX = 137,
        /// 138: Expired nonces.
        EXPIRED_NONCES = 138,
        /// 139: Registration type change disallowed.
        REGISTRATION_TYPE_CHANGE_DISALLOWED = 139,
    }
}

impl BaStatus {
    /// True if the status says the Binding Update was accepted (§6.1.8: values below 128).
    pub fn is_accepted(self) -> bool {
        self.0 < 128
    }
}

named_number! {
    /// Binding Error Status (§6.1.9).
    BeStatus(u8) {
        /// 1: Unknown binding for Home Address destination option.
        UNKNOWN_BINDING_FOR_HOME_ADDRESS_OPTION = 1,
        /// 2: Unrecognized MH Type value.
        UNRECOGNIZED_MH_TYPE = 2,
    }
}

named_number! {
    /// Mobility option type (§6.2).
    MobilityOptionType(u8) {
        /// §6.2.2: a single octet of padding, no Length field.
        PAD1 = 0,
        /// §6.2.3: N octets of padding.
        PADN = 1,
        /// §6.2.4.
        BINDING_REFRESH_ADVICE = 2,
        /// §6.2.5.
        ALTERNATE_CARE_OF_ADDRESS = 3,
        /// §6.2.6.
        NONCE_INDICES = 4,
        /// §6.2.7.
        BINDING_AUTHORIZATION_DATA = 5,
    }
}

/// Smallest Mobility Header: 8 octets (Header Len 0).
pub const MIN_LEN: usize = 8;
/// Largest Mobility Header the 8-bit Header Len can describe: (255 + 1) × 8 octets.
pub const MAX_LEN: usize = 2048;
/// Seconds in one unit of the Binding Update and Acknowledgement Lifetime (§6.1.7, §6.1.8).
pub const LIFETIME_UNIT_SECS: u32 = 4;
