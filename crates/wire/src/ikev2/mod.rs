//! IKEv2 messages (RFC 7296 §3): the fixed header, the generic payload chain and every payload the
//! initial exchanges, CREATE_CHILD_SA and INFORMATIONAL use. Read RFC 7296 §3.1–3.3 first, then
//! §3.10 (notify types) and §3.14 (the encrypted payload, kept opaque here; `ike::sk` opens it).
//!
//! Shape (smoltcp's): [`Packet`] is a view over bytes whose accessors cannot panic after
//! [`Packet::new_checked`]; [`Message`] and the payload types are owned reprs with
//! `parse` / `buffer_len` / `emit`. Numbers on the wire are newtypes with the RFC's names as
//! associated constants, so unknown values pass through losslessly.

mod cert;
mod consts;
mod cp;
mod eap;
mod error;
mod header;
mod mschapv2;
mod payload;
mod sa;
mod ts;

pub use cert::{CA_HASH_LEN, CertEncoding};
pub use consts::{
    AuthMethod, ExchangeType, GENERIC_HEADER_LEN, IdType, NONCE_MAX_LEN, NONCE_MIN_LEN, NotifyType,
    PayloadType, ProtocolId, TransformType, dh, encr, esn, integ, prf,
};
pub use cp::{CfgAttrType, CfgAttribute, CfgType, Cp, KnownAttribute};
pub use eap::{EAP_HEADER_LEN, Eap, EapCode, EapType};
pub use error::IkeError;
pub use header::{Flags, HEADER_LEN, Header, Packet};
pub use mschapv2::{MSCHAPV2_CHALLENGE_LEN, MSCHAPV2_RESPONSE_LEN, MsChapV2, MsChapV2OpCode};
pub use payload::{
    Auth, Cert, Delete, Id, Ke, Message, Notify, Payload, RawPayload, RawPayloads, Sk, emit_chain,
    parse_chain,
};
pub use sa::{ATTR_KEY_LENGTH, Attribute, AttributeValue, Proposal, Sa, Transform};
pub use ts::{TS_IPV4_ADDR_RANGE, TS_IPV6_ADDR_RANGE, TrafficSelector, Ts};

#[cfg(test)]
mod cp_tests;
#[cfg(test)]
mod eap_tests;
#[cfg(test)]
mod scapy_tests;
#[cfg(test)]
mod tests;
