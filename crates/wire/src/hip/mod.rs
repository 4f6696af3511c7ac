//! HIPv2 packets (RFC 7401 §5): the fixed header and its checksum (§5.1), the parameter TLVs
//! (§5.2.1) and every parameter the base exchange, UPDATE, NOTIFY and CLOSE use, plus the ESP
//! parameters of RFC 7402 §5.1 and LOCATOR_SET of RFC 8046 §4. Read RFC 7401 §5.1–5.2 first.
//!
//! Shape (as `ikev2`): [`Packet`] is a view over bytes whose accessors cannot panic after
//! [`Packet::new_checked`]; [`Packet::params`] walks the parameters, refusing truncation, bad
//! lengths and misordered types. Each parameter has an owned repr implementing [`ParamRepr`]
//! (`parse` from Contents, `emit` a whole padded TLV); [`Param`] holds any of them or an
//! unknown one; [`Message`] is header + parameters, with [`Message::to_vec_before`] (and
//! [`Packet::to_vec_before`] for received packets) giving the bytes HIP_MAC and HIP_SIGNATURE
//! cover. Numbers on the wire are newtypes with the RFC's names as associated constants.
//!
//! Errors are [`crate::WireError`]s naming the field: `Truncated` for a field cut short (and for
//! an emit buffer of the wrong size), `BadLength` for a length field that disagrees with the
//! bytes or the RFC, `BadValue` for a forbidden value (version, fixed bits, parameter order).
//!
//! ```
//! use wire::hip::*;
//! let hdr = Header::new(PacketType::I1, [1; 16], [2; 16]);
//! let i1 = Message::new(hdr).with(DhGroupList { groups: vec![DhGroupId::NIST_P256] });
//! let bytes = i1.to_vec().unwrap();
//! let p = Packet::new_checked(&bytes[..]).unwrap();
//! assert_eq!(p.packet_type(), PacketType::I1);
//! assert_eq!(Message::parse(&bytes).unwrap(), i1);
//! ```

mod base;
mod consts;
mod header;
mod message;
mod more;
mod param;

pub use base::{
    DhGroupList, DhPublicValue, DiffieHellman, Encrypted, HipCipher, HitSuiteList, HostId, Puzzle,
    R1Counter, Solution, TransportFormatList,
};
pub use consts::{
    CipherId, DhGroupId, DiType, EcdsaCurve, EcdsaLowCurve, EddsaCurve, EspSuite, HEADER_LEN,
    HiAlgorithm, HitSuiteId, LocatorType, MAX_PACKET_LEN, NotifyType, PARAM_HEADER_LEN, PacketType,
    ParamType, TrafficType, VERSION,
};
pub use header::{
    CONTROLS_NONE, Header, IPPROTO_HIP, Packet, compute_checksum, fill_checksum, set_header_length,
    verify_checksum, zero_for_signature_2,
};
pub use message::{Message, Param, ParamVariant, emit_params, parse_params};
pub use more::{
    Ack, EchoRequestSigned, EchoRequestUnsigned, EchoResponseSigned, EchoResponseUnsigned, EspInfo,
    EspTransform, HipMac, HipMac2, HipSignature, HipSignature2, Locator, LocatorEntry, LocatorSet,
    Notification, Seq,
};
pub use param::{ParamRepr, Params, RawParam, emit_param, param_len};

#[cfg(test)]
mod tests;
