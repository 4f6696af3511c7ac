//! ESP, mobility, UPDATE, NOTIFY and authentication parameters: ESP_INFO and ESP_TRANSFORM
//! (RFC 7402 §5.1.1–§5.1.2), LOCATOR_SET (RFC 8046 §4), SEQ and ACK (RFC 7401 §5.2.16–17),
//! NOTIFICATION (§5.2.19), the four ECHO parameters (§5.2.20–23), HIP_MAC, HIP_MAC_2,
//! HIP_SIGNATURE and HIP_SIGNATURE_2 (§5.2.12–15).

use std::net::Ipv6Addr;

use super::consts::{EspSuite, HiAlgorithm, LocatorType, NotifyType, ParamType, TrafficType};
use super::param::ParamRepr;
use crate::cursor::{Reader, Writer};
use crate::error::WireError;

/// A parameter whose Contents are one opaque field.
macro_rules! opaque_param {
    ($(#[$m:meta])* $name:ident, $ty:ident, $field:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            /// The Contents.
            pub $field: Vec<u8>,
        }

        impl ParamRepr for $name {
            const TYPE: ParamType = ParamType::$ty;

            fn parse(contents: &[u8]) -> Result<Self, WireError> {
                Ok($name { $field: contents.to_vec() })
            }

            fn contents_len(&self) -> usize {
                self.$field.len()
            }

            fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
                let mut w = Writer::new(out, self.contents_len(), stringify!($ty))?;
                w.bytes(&self.$field)?;
                w.finish()
            }
        }
    };
}

opaque_param! {
    /// ECHO_REQUEST_SIGNED (§5.2.20): opaque data the peer returns in ECHO_RESPONSE_SIGNED.
    EchoRequestSigned, ECHO_REQUEST_SIGNED, data
}
opaque_param! {
    /// ECHO_RESPONSE_SIGNED (§5.2.22): the opaque data of the ECHO_REQUEST it answers.
    EchoResponseSigned, ECHO_RESPONSE_SIGNED, data
}
opaque_param! {
    /// ECHO_REQUEST_UNSIGNED (§5.2.21): like ECHO_REQUEST_SIGNED but outside the signature.
    EchoRequestUnsigned, ECHO_REQUEST_UNSIGNED, data
}
opaque_param! {
    /// ECHO_RESPONSE_UNSIGNED (§5.2.23): answers an ECHO_REQUEST, outside the signature.
    EchoResponseUnsigned, ECHO_RESPONSE_UNSIGNED, data
}
opaque_param! {
    /// HIP_MAC (§5.2.12): HMAC over the packet up to this parameter (see
    /// [`super::Packet::to_vec_before`]), its natural length for the hash.
    HipMac, HIP_MAC, mac
}
opaque_param! {
    /// HIP_MAC_2 (§5.2.13): HMAC as HIP_MAC, computed with the sender's HOST_ID inserted.
    HipMac2, HIP_MAC_2, mac
}

/// A signature parameter: SIG alg (16 bits, an HI algorithm), then the signature.
macro_rules! signature_param {
    ($(#[$m:meta])* $name:ident, $ty:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            /// SIG alg: the algorithm of the signer's Host Identity.
            pub algorithm: HiAlgorithm,
            /// The signature.
            pub signature: Vec<u8>,
        }

        impl ParamRepr for $name {
            const TYPE: ParamType = ParamType::$ty;

            fn parse(contents: &[u8]) -> Result<Self, WireError> {
                let mut r = Reader::new(contents);
                let algorithm = HiAlgorithm(r.u16(concat!(stringify!($ty), " SIG alg"))?);
                Ok($name { algorithm, signature: r.rest().to_vec() })
            }

            fn contents_len(&self) -> usize {
                2 + self.signature.len()
            }

            fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
                let mut w = Writer::new(out, self.contents_len(), stringify!($ty))?;
                w.u16(self.algorithm.0)?;
                w.bytes(&self.signature)?;
                w.finish()
            }
        }
    };
}

signature_param! {
    /// HIP_SIGNATURE (§5.2.14): signature over the packet up to this parameter.
    HipSignature, HIP_SIGNATURE
}
signature_param! {
    /// HIP_SIGNATURE_2 (§5.2.15): R1's signature, with the Receiver's HIT and PUZZLE's Opaque
    /// and #I zeroed (see [`super::zero_for_signature_2`]).
    HipSignature2, HIP_SIGNATURE_2
}

/// ESP_INFO (RFC 7402 §5.1.1): Reserved (16), KEYMAT Index (16), OLD SPI (32), NEW SPI (32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EspInfo {
    /// Where in KEYMAT to continue drawing ESP keys (octets).
    pub keymat_index: u16,
    /// The SPI being replaced; zero when setting up a new SA.
    pub old_spi: u32,
    /// The SPI the sender wants to receive on; zero when deleting an SA.
    pub new_spi: u32,
}

impl ParamRepr for EspInfo {
    const TYPE: ParamType = ParamType::ESP_INFO;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        r.u16("ESP_INFO reserved")?;
        let keymat_index = r.u16("ESP_INFO KEYMAT index")?;
        let old_spi = r.u32("ESP_INFO OLD SPI")?;
        let new_spi = r.u32("ESP_INFO NEW SPI")?;
        r.end("ESP_INFO length")?;
        Ok(EspInfo { keymat_index, old_spi, new_spi })
    }

    fn contents_len(&self) -> usize {
        12
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, 12, "ESP_INFO")?;
        w.u16(0)?;
        w.u16(self.keymat_index)?;
        w.u32(self.old_spi)?;
        w.u32(self.new_spi)?;
        w.finish()
    }
}

/// ESP_TRANSFORM (RFC 7402 §5.1.2): Reserved (16), then 16-bit Suite IDs by preference.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EspTransform {
    /// Suite IDs (at most 6 by §5.1.2, not enforced here).
    pub suites: Vec<EspSuite>,
}

impl ParamRepr for EspTransform {
    const TYPE: ParamType = ParamType::ESP_TRANSFORM;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        r.u16("ESP_TRANSFORM reserved")?;
        if r.len() % 2 != 0 {
            return Err(WireError::BadLength { what: "ESP_TRANSFORM suites", value: r.len() });
        }
        let suites =
            r.rest().chunks_exact(2).map(|c| EspSuite(u16::from_be_bytes([c[0], c[1]]))).collect();
        Ok(EspTransform { suites })
    }

    fn contents_len(&self) -> usize {
        2 + 2 * self.suites.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "ESP_TRANSFORM")?;
        w.u16(0)?;
        for s in &self.suites {
            w.u16(s.0)?;
        }
        w.finish()
    }
}

/// SEQ (§5.2.16): the 32-bit Update ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seq {
    /// Update ID.
    pub update_id: u32,
}

impl ParamRepr for Seq {
    const TYPE: ParamType = ParamType::SEQ;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        let update_id = r.u32("SEQ update ID")?;
        r.end("SEQ length")?;
        Ok(Seq { update_id })
    }

    fn contents_len(&self) -> usize {
        4
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, 4, "SEQ")?;
        w.u32(self.update_id)?;
        w.finish()
    }
}

/// ACK (§5.2.17): the peer Update IDs acknowledged, 32 bits each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ack {
    /// Peer Update IDs.
    pub update_ids: Vec<u32>,
}

impl ParamRepr for Ack {
    const TYPE: ParamType = ParamType::ACK;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        if contents.len() % 4 != 0 {
            return Err(WireError::BadLength { what: "ACK length", value: contents.len() });
        }
        let update_ids = contents
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(Ack { update_ids })
    }

    fn contents_len(&self) -> usize {
        4 * self.update_ids.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "ACK")?;
        for id in &self.update_ids {
            w.u32(*id)?;
        }
        w.finish()
    }
}

/// NOTIFICATION (§5.2.19): Reserved (16), Notify Message Type (16), Notification Data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Notification {
    /// Notify Message Type.
    pub notify_type: NotifyType,
    /// Notification Data (type specific).
    pub data: Vec<u8>,
}

impl ParamRepr for Notification {
    const TYPE: ParamType = ParamType::NOTIFICATION;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        r.u16("NOTIFICATION reserved")?;
        let notify_type = NotifyType(r.u16("NOTIFICATION type")?);
        Ok(Notification { notify_type, data: r.rest().to_vec() })
    }

    fn contents_len(&self) -> usize {
        4 + self.data.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "NOTIFICATION")?;
        w.u16(0)?;
        w.u16(self.notify_type.0)?;
        w.bytes(&self.data)?;
        w.finish()
    }
}

/// The Locator field of one LOCATOR_SET entry (RFC 8046 §4), by Locator Type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// Type 0: an IPv6 address or an IPv4-in-IPv6 mapped address (Locator Length 4).
    Address(Ipv6Addr),
    /// Type 1: the ESP SPI used on this address, then the address (Locator Length 5).
    EspSpiAddress {
        /// SPI of the ESP SA bound to this locator.
        spi: u32,
        /// The address.
        address: Ipv6Addr,
    },
    /// Any other type: Locator Length × 4 octets, kept opaque.
    Other {
        /// Its Locator Type.
        locator_type: LocatorType,
        /// The locator (a multiple of 4 octets, at most 1020).
        data: Vec<u8>,
    },
}

impl Locator {
    /// Its Locator Type.
    pub fn locator_type(&self) -> LocatorType {
        match self {
            Locator::Address(_) => LocatorType::IPV6,
            Locator::EspSpiAddress { .. } => LocatorType::ESP_SPI_IPV6,
            Locator::Other { locator_type, .. } => *locator_type,
        }
    }
    /// The address, for types 0 and 1.
    pub fn address(&self) -> Option<Ipv6Addr> {
        match self {
            Locator::Address(a) | Locator::EspSpiAddress { address: a, .. } => Some(*a),
            Locator::Other { .. } => None,
        }
    }
    fn len(&self) -> usize {
        match self {
            Locator::Address(_) => 16,
            Locator::EspSpiAddress { .. } => 20,
            Locator::Other { data, .. } => data.len(),
        }
    }
}

/// One entry of LOCATOR_SET (RFC 8046 §4): Traffic Type (8), Locator Type (8), Locator Length
/// (8, in 4-octet units), Reserved (7) and P (1), Locator Lifetime (32, seconds), Locator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatorEntry {
    /// Which traffic the locator is for.
    pub traffic_type: TrafficType,
    /// P: the preferred locator for its traffic type.
    pub preferred: bool,
    /// Lifetime in seconds.
    pub lifetime: u32,
    /// The locator.
    pub locator: Locator,
}

/// LOCATOR_SET (RFC 8046 §4): one or more locator entries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LocatorSet {
    /// The entries, in order.
    pub locators: Vec<LocatorEntry>,
}

impl ParamRepr for LocatorSet {
    const TYPE: ParamType = ParamType::LOCATOR_SET;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        let mut locators = Vec::new();
        while !r.is_empty() {
            let traffic_type = TrafficType(r.u8("LOCATOR_SET traffic type")?);
            let locator_type = LocatorType(r.u8("LOCATOR_SET locator type")?);
            let units = r.u8("LOCATOR_SET locator length")?;
            let preferred = r.u8("LOCATOR_SET reserved")? & 1 == 1;
            let lifetime = r.u32("LOCATOR_SET lifetime")?;
            let body = r.take(usize::from(units) * 4, "LOCATOR_SET locator")?;
            let bad =
                || WireError::BadLength { what: "LOCATOR_SET locator length", value: units.into() };
            let locator = match locator_type {
                LocatorType::IPV6 => {
                    Locator::Address(<[u8; 16]>::try_from(body).map_err(|_| bad())?.into())
                }
                LocatorType::ESP_SPI_IPV6 => {
                    let mut b = Reader::new(body);
                    let spi = b.u32("LOCATOR_SET SPI")?;
                    let address = b.array::<16>("LOCATOR_SET address")?.into();
                    b.end("LOCATOR_SET locator length")?;
                    Locator::EspSpiAddress { spi, address }
                }
                _ => Locator::Other { locator_type, data: body.to_vec() },
            };
            locators.push(LocatorEntry { traffic_type, preferred, lifetime, locator });
        }
        Ok(LocatorSet { locators })
    }

    fn contents_len(&self) -> usize {
        self.locators.iter().map(|l| 8 + l.locator.len()).sum()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "LOCATOR_SET")?;
        for l in &self.locators {
            let n = l.locator.len();
            let units = u8::try_from(n / 4)
                .ok()
                .filter(|_| n % 4 == 0)
                .ok_or(WireError::BadLength { what: "LOCATOR_SET locator length", value: n })?;
            w.u8(l.traffic_type.0)?;
            w.u8(l.locator.locator_type().0)?;
            w.u8(units)?;
            w.u8(u8::from(l.preferred))?;
            w.u32(l.lifetime)?;
            match &l.locator {
                Locator::Address(a) => w.bytes(&a.octets())?,
                Locator::EspSpiAddress { spi, address } => {
                    w.u32(*spi)?;
                    w.bytes(&address.octets())?;
                }
                Locator::Other { locator_type, data } => {
                    if matches!(*locator_type, LocatorType::IPV6 | LocatorType::ESP_SPI_IPV6) {
                        return Err(WireError::BadValue {
                            what: "LOCATOR_SET opaque locator type",
                            value: u64::from(locator_type.0),
                        });
                    }
                    w.bytes(data)?
                }
            }
        }
        w.finish()
    }
}
