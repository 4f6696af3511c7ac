//! The Mobility Header messages (RFC 6275 §6.1.2–§6.1.9) as owned reprs: [`Message`] is Payload
//! Proto plus a [`Body`]; each body has its fixed fields and its mobility options (§6.2).
//! `Message::parse` checks the header (§6.1.1) and that the Header Len leaves room for the
//! message's fixed fields; `Message::emit` writes a header padded to 8 octets, checksum zero
//! (fill it with [`super::fill_checksum`] or use [`Message::to_vec_with_checksum`]).

use std::net::Ipv6Addr;

use super::consts::{BaStatus, BeStatus, IPPROTO_NONE, MAX_LEN, MhType};
use super::header::{MESSAGE_DATA_OFFSET, MhPacket, fill_checksum};
use super::options::{MobilityOption, emit_options, options_len, parse_options};
use crate::cursor::{Reader, Writer};
use crate::error::WireError;

/// Binding Update (§6.1.7). Flags A, H, L, K are the top four bits of the second 16-bit word;
/// the other bits (reserved here, used by later RFCs) are sent as zero and ignored.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BindingUpdate {
    /// Sequence # (compared modulo 2^16, §9.5.1).
    pub sequence: u16,
    /// A: the sender asks for a Binding Acknowledgement.
    pub acknowledge: bool,
    /// H: a home registration.
    pub home_registration: bool,
    /// L: the link-local address has the same interface identifier as the home address.
    pub link_local_compatibility: bool,
    /// K: key management mobility capability (RFC 4877 §7).
    pub key_management_mobility: bool,
    /// Lifetime in 4-second units; 0 asks to delete the binding.
    pub lifetime: u16,
    /// Mobility options.
    pub options: Vec<MobilityOption>,
}

/// Binding Acknowledgement (§6.1.8).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BindingAck {
    /// Status: below 128 accepted.
    pub status: BaStatus,
    /// K: key management mobility capability (RFC 4877 §7).
    pub key_management_mobility: bool,
    /// Sequence #: copied from the Binding Update, or for status 135 the last accepted one.
    pub sequence: u16,
    /// Lifetime granted, in 4-second units.
    pub lifetime: u16,
    /// Mobility options.
    pub options: Vec<MobilityOption>,
}

/// Binding Error (§6.1.9).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BindingError {
    /// Status.
    pub status: BeStatus,
    /// The home address of the offending packet's Home Address option, or unspecified.
    pub home_address: Ipv6Addr,
    /// Mobility options.
    pub options: Vec<MobilityOption>,
}

/// Home Test Init (§6.1.3) or Care-of Test Init (§6.1.4): Reserved, then the init cookie.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TestInit {
    /// Home or Care-of Init Cookie.
    pub cookie: [u8; 8],
    /// Mobility options.
    pub options: Vec<MobilityOption>,
}

/// Home Test (§6.1.5) or Care-of Test (§6.1.6).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Test {
    /// Home or Care-of Nonce Index.
    pub nonce_index: u16,
    /// The init cookie echoed.
    pub cookie: [u8; 8],
    /// Home or Care-of Keygen Token.
    pub keygen_token: [u8; 8],
    /// Mobility options.
    pub options: Vec<MobilityOption>,
}

/// The message after the Checksum, by MH Type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Body {
    /// §6.1.2: Reserved, then options.
    BindingRefreshRequest(Vec<MobilityOption>),
    /// §6.1.3.
    HomeTestInit(TestInit),
    /// §6.1.4.
    CareOfTestInit(TestInit),
    /// §6.1.5.
    HomeTest(Test),
    /// §6.1.6.
    CareOfTest(Test),
    /// §6.1.7.
    BindingUpdate(BindingUpdate),
    /// §6.1.8.
    BindingAck(BindingAck),
    /// §6.1.9.
    BindingError(BindingError),
    /// An MH Type above 7, its Message Data kept as bytes (a length 2 modulo 8).
    Unknown {
        /// MH Type.
        mh_type: MhType,
        /// Message Data.
        data: Vec<u8>,
    },
}

/// Octets of fixed fields after the Checksum, before the options, per message (§6.1.2–§6.1.9).
fn fixed_len(t: MhType) -> usize {
    match t {
        MhType::BINDING_REFRESH_REQUEST => 2,
        MhType::HOME_TEST_INIT | MhType::CARE_OF_TEST_INIT => 10,
        MhType::HOME_TEST | MhType::CARE_OF_TEST => 18,
        MhType::BINDING_UPDATE | MhType::BINDING_ACK => 6,
        MhType::BINDING_ERROR => 18,
        _ => 0,
    }
}

impl Body {
    /// The MH Type of this body.
    pub fn mh_type(&self) -> MhType {
        match self {
            Body::BindingRefreshRequest(_) => MhType::BINDING_REFRESH_REQUEST,
            Body::HomeTestInit(_) => MhType::HOME_TEST_INIT,
            Body::CareOfTestInit(_) => MhType::CARE_OF_TEST_INIT,
            Body::HomeTest(_) => MhType::HOME_TEST,
            Body::CareOfTest(_) => MhType::CARE_OF_TEST,
            Body::BindingUpdate(_) => MhType::BINDING_UPDATE,
            Body::BindingAck(_) => MhType::BINDING_ACK,
            Body::BindingError(_) => MhType::BINDING_ERROR,
            Body::Unknown { mh_type, .. } => *mh_type,
        }
    }

    /// The mobility options (none for an unknown message).
    pub fn options(&self) -> &[MobilityOption] {
        match self {
            Body::BindingRefreshRequest(o) => o,
            Body::HomeTestInit(m) | Body::CareOfTestInit(m) => &m.options,
            Body::HomeTest(m) | Body::CareOfTest(m) => &m.options,
            Body::BindingUpdate(m) => &m.options,
            Body::BindingAck(m) => &m.options,
            Body::BindingError(m) => &m.options,
            Body::Unknown { .. } => &[],
        }
    }

    fn parse(t: MhType, data: &[u8]) -> Result<Body, WireError> {
        let what = "mobility message";
        let mut r = Reader::new(data);
        let fixed = r.take(fixed_len(t), what)?;
        let mut f = Reader::new(fixed);
        let rest = r.rest();
        let options = || parse_options(rest);
        Ok(match t {
            MhType::BINDING_REFRESH_REQUEST => Body::BindingRefreshRequest(options()?),
            MhType::HOME_TEST_INIT | MhType::CARE_OF_TEST_INIT => {
                f.take(2, "test init reserved")?;
                let m = TestInit { cookie: f.array("init cookie")?, options: options()? };
                if t == MhType::HOME_TEST_INIT {
                    Body::HomeTestInit(m)
                } else {
                    Body::CareOfTestInit(m)
                }
            }
            MhType::HOME_TEST | MhType::CARE_OF_TEST => {
                let m = Test {
                    nonce_index: f.u16("nonce index")?,
                    cookie: f.array("init cookie")?,
                    keygen_token: f.array("keygen token")?,
                    options: options()?,
                };
                if t == MhType::HOME_TEST { Body::HomeTest(m) } else { Body::CareOfTest(m) }
            }
            MhType::BINDING_UPDATE => {
                let sequence = f.u16("binding update sequence")?;
                let flags = f.u16("binding update flags")?;
                Body::BindingUpdate(BindingUpdate {
                    sequence,
                    acknowledge: flags & 0x8000 != 0,
                    home_registration: flags & 0x4000 != 0,
                    link_local_compatibility: flags & 0x2000 != 0,
                    key_management_mobility: flags & 0x1000 != 0,
                    lifetime: f.u16("binding update lifetime")?,
                    options: options()?,
                })
            }
            MhType::BINDING_ACK => {
                let status = BaStatus(f.u8("binding ack status")?);
                let flags = f.u8("binding ack flags")?;
                Body::BindingAck(BindingAck {
                    status,
                    key_management_mobility: flags & 0x80 != 0,
                    sequence: f.u16("binding ack sequence")?,
                    lifetime: f.u16("binding ack lifetime")?,
                    options: options()?,
                })
            }
            MhType::BINDING_ERROR => {
                let status = BeStatus(f.u8("binding error status")?);
                f.take(1, "binding error reserved")?;
                Body::BindingError(BindingError {
                    status,
                    home_address: Ipv6Addr::from(f.array::<16>("binding error home address")?),
                    options: options()?,
                })
            }
            mh_type => Body::Unknown { mh_type, data: data.to_vec() },
        })
    }

    fn emit_fixed(&self, w: &mut Writer<'_>) -> Result<(), WireError> {
        match self {
            Body::BindingRefreshRequest(_) => w.zeros(2),
            Body::HomeTestInit(m) | Body::CareOfTestInit(m) => {
                w.zeros(2)?;
                w.bytes(&m.cookie)
            }
            Body::HomeTest(m) | Body::CareOfTest(m) => {
                w.u16(m.nonce_index)?;
                w.bytes(&m.cookie)?;
                w.bytes(&m.keygen_token)
            }
            Body::BindingUpdate(m) => {
                w.u16(m.sequence)?;
                let bit = |b: bool, v: u16| if b { v } else { 0 };
                w.u16(
                    bit(m.acknowledge, 0x8000)
                        | bit(m.home_registration, 0x4000)
                        | bit(m.link_local_compatibility, 0x2000)
                        | bit(m.key_management_mobility, 0x1000),
                )?;
                w.u16(m.lifetime)
            }
            Body::BindingAck(m) => {
                w.u8(m.status.0)?;
                w.u8(if m.key_management_mobility { 0x80 } else { 0 })?;
                w.u16(m.sequence)?;
                w.u16(m.lifetime)
            }
            Body::BindingError(m) => {
                w.u8(m.status.0)?;
                w.u8(0)?;
                w.bytes(&m.home_address.octets())
            }
            Body::Unknown { data, .. } => w.bytes(data),
        }
    }
}

/// One Mobility Header message (§6.1.1): Payload Proto and the body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Message {
    /// Payload Proto: 59 (no next header) unless data rides in the packet (§6.1.1).
    pub payload_proto: u8,
    /// The message.
    pub body: Body,
}

impl Message {
    /// A message with Payload Proto 59, as §6.1.1 says a sender should use.
    pub fn new(body: Body) -> Message {
        Message { payload_proto: IPPROTO_NONE, body }
    }

    /// Parses the Mobility Header at the start of `bytes` (octets past its Header Len are
    /// ignored). The checksum is not checked here: use [`MhPacket::verify_checksum`].
    pub fn parse(bytes: &[u8]) -> Result<Message, WireError> {
        let p = MhPacket::new_checked(bytes)?;
        Message::from_packet(&p)
    }

    /// Reads the message from a checked view.
    pub fn from_packet<T: AsRef<[u8]>>(p: &MhPacket<T>) -> Result<Message, WireError> {
        Ok(Message {
            payload_proto: p.payload_proto(),
            body: Body::parse(p.mh_type(), p.message_data())?,
        })
    }

    /// Octets [`Message::emit`] writes: a multiple of 8.
    pub fn buffer_len(&self) -> usize {
        let start = MESSAGE_DATA_OFFSET + fixed_len(self.body.mh_type());
        match &self.body {
            Body::Unknown { data, .. } => MESSAGE_DATA_OFFSET + data.len(),
            b => start + options_len(start, b.options()),
        }
    }

    /// Writes the header into exactly [`Message::buffer_len`] octets, Checksum zero.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let len = self.buffer_len();
        if len > MAX_LEN || len % 8 != 0 {
            return Err(WireError::BadLength { what: "mobility header length", value: len });
        }
        let t = self.body.mh_type();
        if matches!(self.body, Body::Unknown { .. }) && t.0 <= MhType::BINDING_ERROR.0 {
            return Err(WireError::BadValue { what: "unknown mh type", value: u64::from(t.0) });
        }
        let mut w = Writer::new(out, len, "mobility header")?;
        w.u8(self.payload_proto)?;
        w.u8(u8::try_from(len / 8 - 1).unwrap_or(u8::MAX))?;
        w.u8(t.0)?;
        w.u8(0)?;
        w.u16(0)?;
        self.body.emit_fixed(&mut w)?;
        let start = MESSAGE_DATA_OFFSET + fixed_len(t);
        if !matches!(self.body, Body::Unknown { .. }) {
            let opts = self.body.options();
            emit_options(start, opts, w.sub(options_len(start, opts))?)?;
        }
        w.finish()
    }

    /// The header as bytes, Checksum zero.
    pub fn to_vec(&self) -> Result<Vec<u8>, WireError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }

    /// The header as bytes with the Checksum for the pseudo-header `src` → `dst` (§6.1.1).
    pub fn to_vec_with_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> Result<Vec<u8>, WireError> {
        let mut v = self.to_vec()?;
        fill_checksum(src, dst, &mut v)?;
        Ok(v)
    }
}
