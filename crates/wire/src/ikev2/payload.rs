//! The generic payload chain (RFC 7296 §3.2) and the payloads other than SA and TS: KE (§3.4),
//! IDi/IDr (§3.5), CERT/CERTREQ (§3.6–3.7, opaque here; `cert` reads them by encoding), AUTH
//! (§3.8), Nonce (§3.9), Notify (§3.10), Delete (§3.11), Vendor ID (§3.12) and the SK header
//! (§3.14, body opaque); CP (§3.15) is in `cp`. [`Message`] is a whole message: header plus payloads.

use super::consts::{
    AuthMethod, GENERIC_HEADER_LEN, IdType, NONCE_MAX_LEN, NONCE_MIN_LEN, NotifyType, PayloadType,
    ProtocolId,
};
use super::cp::Cp;
use super::eap::Eap;
use super::error::IkeError;
use super::header::{HEADER_LEN, Header, Packet};
use super::sa::Sa;
use super::ts::Ts;
use crate::cursor::{Reader, Writer, len16};

/// One payload of a chain before its body is parsed (§3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPayload<'a> {
    /// This payload's type (the previous header's Next Payload).
    pub payload_type: PayloadType,
    /// This payload's Next Payload field (for SK: the first payload inside).
    pub next: PayloadType,
    /// The critical bit.
    pub critical: bool,
    /// Offset of the generic header from the start of the chain's bytes.
    pub offset: usize,
    /// The body after the generic header.
    pub body: &'a [u8],
}

/// Iterates over a payload chain. Stops after SK (§3.14: always last) or at Next Payload 0;
/// yields one error and then stops on a malformed chain.
#[derive(Debug, Clone)]
pub struct RawPayloads<'a> {
    bytes: &'a [u8],
    pos: usize,
    next: PayloadType,
    done: bool,
}

impl<'a> RawPayloads<'a> {
    /// A chain in `bytes` whose first payload has type `first`.
    pub fn new(first: PayloadType, bytes: &'a [u8]) -> Self {
        RawPayloads { bytes, pos: 0, next: first, done: false }
    }

    fn step(&mut self) -> Result<Option<RawPayload<'a>>, IkeError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if self.next == PayloadType::NONE {
            if !rest.is_empty() {
                return Err(IkeError::BadLength {
                    what: "bytes after last payload",
                    value: rest.len(),
                });
            }
            return Ok(None);
        }
        let mut r = Reader::new(rest);
        let next = PayloadType(r.u8("generic payload header")?);
        let critical = r.u8("generic payload header")? & 0x80 != 0;
        let len = r.u16("payload length")? as usize;
        let body_len = len.checked_sub(GENERIC_HEADER_LEN);
        let body_len =
            body_len.ok_or(IkeError::BadLength { what: "payload length", value: len })?;
        let body = r.take(body_len, "payload body")?;
        let p = RawPayload { payload_type: self.next, next, critical, offset: self.pos, body };
        self.pos += len;
        self.next = next;
        if p.payload_type == PayloadType::SK {
            if !r.is_empty() {
                return Err(IkeError::SkNotLast);
            }
            self.done = true;
        }
        Ok(Some(p))
    }
}

impl<'a> Iterator for RawPayloads<'a> {
    type Item = Result<RawPayload<'a>, IkeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// Key Exchange payload body (§3.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ke {
    /// Diffie-Hellman group number (see `dh`).
    pub dh_group: u16,
    /// The public value (for ECP groups x || y, RFC 5903 §7).
    pub data: Vec<u8>,
}

/// Identification payload body (§3.5), for IDi and IDr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id {
    /// ID type.
    pub id_type: IdType,
    /// The identification data, as on the wire.
    pub data: Vec<u8>,
}

impl Id {
    /// An ID_IPV4_ADDR or ID_IPV6_ADDR identity.
    pub fn ip(addr: std::net::IpAddr) -> Id {
        match addr {
            std::net::IpAddr::V4(a) => {
                Id { id_type: IdType::ID_IPV4_ADDR, data: a.octets().to_vec() }
            }
            std::net::IpAddr::V6(a) => {
                Id { id_type: IdType::ID_IPV6_ADDR, data: a.octets().to_vec() }
            }
        }
    }
    /// An ID_FQDN identity.
    pub fn fqdn(name: &str) -> Id {
        Id { id_type: IdType::ID_FQDN, data: name.as_bytes().to_vec() }
    }
    /// An ID_RFC822_ADDR identity.
    pub fn rfc822(addr: &str) -> Id {
        Id { id_type: IdType::ID_RFC822_ADDR, data: addr.as_bytes().to_vec() }
    }
    /// An ID_KEY_ID identity.
    pub fn key_id(id: &[u8]) -> Id {
        Id { id_type: IdType::ID_KEY_ID, data: id.to_vec() }
    }
    /// The address of an IP identity.
    pub fn ip_addr(&self) -> Option<std::net::IpAddr> {
        match self.id_type {
            IdType::ID_IPV4_ADDR => <[u8; 4]>::try_from(self.data.as_slice()).ok().map(Into::into),
            IdType::ID_IPV6_ADDR => <[u8; 16]>::try_from(self.data.as_slice()).ok().map(Into::into),
            _ => None,
        }
    }
    /// The body as on the wire: `ID Type | RESERVED | data`, the "RestOfIDPayload" that §2.15
    /// feeds to the PRF.
    pub fn to_body(&self) -> Vec<u8> {
        let mut v = vec![self.id_type.0, 0, 0, 0];
        v.extend_from_slice(&self.data);
        v
    }
}

/// CERT or CERTREQ payload body (§3.6, §3.7), kept opaque.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cert {
    /// Certificate encoding.
    pub encoding: u8,
    /// Certificate data, or certification authority hashes for CERTREQ.
    pub data: Vec<u8>,
}

/// Authentication payload body (§3.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// Auth method.
    pub method: AuthMethod,
    /// Authentication data.
    pub data: Vec<u8>,
}

/// Notify payload body (§3.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    /// Protocol of the SA it concerns (NONE or IKE when none).
    pub protocol_id: ProtocolId,
    /// SPI of that SA (empty, or 4 bytes for AH/ESP).
    pub spi: Vec<u8>,
    /// Notify message type.
    pub notify_type: NotifyType,
    /// Notification data.
    pub data: Vec<u8>,
}

impl Notify {
    /// A notify about no particular SA.
    pub fn new(notify_type: NotifyType, data: Vec<u8>) -> Notify {
        Notify { protocol_id: ProtocolId::NONE, spi: Vec::new(), notify_type, data }
    }
}

/// Delete payload body (§3.11): all IKE SA (no SPIs) or a list of 4-byte AH/ESP SPIs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delete {
    /// IKE, AH or ESP.
    pub protocol_id: ProtocolId,
    /// SPIs of the SAs to delete (the sender's inbound SPIs); empty for IKE.
    pub spis: Vec<u32>,
}

/// The Encrypted and Authenticated payload (§3.14): which payload comes first inside, and the
/// opaque `IV | ciphertext | ICV` that `ike::sk` opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sk {
    /// Type of the first inner payload (the SK header's Next Payload).
    pub first_inner: PayloadType,
    /// IV, encrypted payloads with padding, and ICV.
    pub body: Vec<u8>,
}

/// One payload's repr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// SA (§3.3).
    Sa(Sa),
    /// KE (§3.4).
    Ke(Ke),
    /// IDi (§3.5).
    IdI(Id),
    /// IDr (§3.5).
    IdR(Id),
    /// CERT (§3.6).
    Cert(Cert),
    /// CERTREQ (§3.7).
    CertReq(Cert),
    /// AUTH (§3.8).
    Auth(Auth),
    /// Nonce (§3.9), 16 to 256 bytes.
    Nonce(Vec<u8>),
    /// Notify (§3.10).
    Notify(Notify),
    /// Delete (§3.11).
    Delete(Delete),
    /// Vendor ID (§3.12).
    VendorId(Vec<u8>),
    /// TSi (§3.13).
    TsI(Ts),
    /// TSr (§3.13).
    TsR(Ts),
    /// SK (§3.14); must be last.
    Sk(Sk),
    /// CP (§3.15).
    Cp(Cp),
    /// EAP (§3.16): one EAP packet.
    Eap(Eap),
}

fn with_reserved<'a>(r: &mut Reader<'a>, what: &'static str) -> Result<u8, IkeError> {
    let v = r.u8(what)?;
    r.take(3, what)?;
    Ok(v)
}

impl Payload {
    /// Its payload type.
    pub fn payload_type(&self) -> PayloadType {
        match self {
            Payload::Sa(_) => PayloadType::SA,
            Payload::Ke(_) => PayloadType::KE,
            Payload::IdI(_) => PayloadType::IDI,
            Payload::IdR(_) => PayloadType::IDR,
            Payload::Cert(_) => PayloadType::CERT,
            Payload::CertReq(_) => PayloadType::CERTREQ,
            Payload::Auth(_) => PayloadType::AUTH,
            Payload::Nonce(_) => PayloadType::NONCE,
            Payload::Notify(_) => PayloadType::NOTIFY,
            Payload::Delete(_) => PayloadType::DELETE,
            Payload::VendorId(_) => PayloadType::VENDOR_ID,
            Payload::TsI(_) => PayloadType::TSI,
            Payload::TsR(_) => PayloadType::TSR,
            Payload::Sk(_) => PayloadType::SK,
            Payload::Cp(_) => PayloadType::CP,
            Payload::Eap(_) => PayloadType::EAP,
        }
    }

    /// Parses a raw payload's body. `Ok(None)`: an unknown, non-critical payload, to be skipped
    /// (§2.5); an unknown critical one is [`IkeError::UnsupportedCriticalPayload`].
    pub fn parse(raw: &RawPayload<'_>) -> Result<Option<Payload>, IkeError> {
        let body = raw.body;
        let mut r = Reader::new(body);
        let p = match raw.payload_type {
            PayloadType::SA => Payload::Sa(Sa::parse(body)?),
            PayloadType::KE => {
                let dh_group = r.u16("ke dh group")?;
                r.u16("ke reserved")?;
                Payload::Ke(Ke { dh_group, data: r.rest().to_vec() })
            }
            PayloadType::IDI | PayloadType::IDR => {
                let id_type = IdType(with_reserved(&mut r, "id type")?);
                let data = r.rest().to_vec();
                let want = match id_type {
                    IdType::ID_IPV4_ADDR => Some(4),
                    IdType::ID_IPV6_ADDR => Some(16),
                    _ => None,
                };
                if want.is_some_and(|w| w != data.len()) || data.is_empty() {
                    return Err(IkeError::BadLength { what: "id data", value: data.len() });
                }
                let id = Id { id_type, data };
                if raw.payload_type == PayloadType::IDI {
                    Payload::IdI(id)
                } else {
                    Payload::IdR(id)
                }
            }
            PayloadType::CERT | PayloadType::CERTREQ => {
                let c = Cert { encoding: r.u8("cert encoding")?, data: r.rest().to_vec() };
                if raw.payload_type == PayloadType::CERT {
                    Payload::Cert(c)
                } else {
                    Payload::CertReq(c)
                }
            }
            PayloadType::AUTH => {
                let method = AuthMethod(with_reserved(&mut r, "auth method")?);
                Payload::Auth(Auth { method, data: r.rest().to_vec() })
            }
            PayloadType::NONCE => {
                if !(NONCE_MIN_LEN..=NONCE_MAX_LEN).contains(&body.len()) {
                    return Err(IkeError::BadLength { what: "nonce data", value: body.len() });
                }
                Payload::Nonce(body.to_vec())
            }
            PayloadType::NOTIFY => {
                let protocol_id = ProtocolId(r.u8("notify protocol id")?);
                let spi_size = r.u8("notify spi size")?;
                let notify_type = NotifyType(r.u16("notify message type")?);
                let spi = r.take(spi_size.into(), "notify spi")?.to_vec();
                Payload::Notify(Notify { protocol_id, spi, notify_type, data: r.rest().to_vec() })
            }
            PayloadType::DELETE => {
                let protocol_id = ProtocolId(r.u8("delete protocol id")?);
                let spi_size = r.u8("delete spi size")?;
                let n = r.u16("delete num of spis")? as usize;
                let want = if protocol_id == ProtocolId::IKE { 0 } else { 4 };
                if spi_size != want || (want == 0 && n != 0) {
                    return Err(IkeError::BadLength {
                        what: "delete spi size",
                        value: spi_size.into(),
                    });
                }
                let mut spis = Vec::with_capacity(n.min(body.len() / 4));
                for _ in 0..n {
                    spis.push(r.u32("delete spi")?);
                }
                if !r.is_empty() {
                    return Err(IkeError::BadLength { what: "delete num of spis", value: n });
                }
                Payload::Delete(Delete { protocol_id, spis })
            }
            PayloadType::VENDOR_ID => Payload::VendorId(body.to_vec()),
            PayloadType::TSI => Payload::TsI(Ts::parse(body)?),
            PayloadType::TSR => Payload::TsR(Ts::parse(body)?),
            PayloadType::SK => Payload::Sk(Sk { first_inner: raw.next, body: body.to_vec() }),
            PayloadType::CP => Payload::Cp(Cp::parse(body)?),
            PayloadType::EAP => Payload::Eap(Eap::parse(body)?),
            other if raw.critical => {
                return Err(IkeError::UnsupportedCriticalPayload { payload_type: other.0 });
            }
            _ => return Ok(None),
        };
        Ok(Some(p))
    }

    /// Bytes of the body (without the generic header).
    pub fn body_len(&self) -> usize {
        match self {
            Payload::Sa(sa) => sa.buffer_len(),
            Payload::Ke(ke) => 4 + ke.data.len(),
            Payload::IdI(id) | Payload::IdR(id) => 4 + id.data.len(),
            Payload::Cert(c) | Payload::CertReq(c) => 1 + c.data.len(),
            Payload::Auth(a) => 4 + a.data.len(),
            Payload::Nonce(n) | Payload::VendorId(n) => n.len(),
            Payload::Notify(n) => 4 + n.spi.len() + n.data.len(),
            Payload::Delete(d) => 4 + 4 * d.spis.len(),
            Payload::TsI(ts) | Payload::TsR(ts) => ts.buffer_len(),
            Payload::Sk(sk) => sk.body.len(),
            Payload::Cp(cp) => cp.buffer_len(),
            Payload::Eap(e) => e.buffer_len(),
        }
    }

    /// Bytes with the generic header.
    pub fn buffer_len(&self) -> usize {
        GENERIC_HEADER_LEN + self.body_len()
    }

    /// Writes generic header and body into exactly `buffer_len()` bytes. For SK, `next` is
    /// ignored and the first inner payload type is written instead.
    pub fn emit(&self, next: PayloadType, out: &mut [u8]) -> Result<(), IkeError> {
        let len = self.buffer_len();
        let mut w = Writer::new(out, len, "payload")?;
        let next = if let Payload::Sk(sk) = self { sk.first_inner } else { next };
        w.u8(next.0)?;
        w.u8(0)?;
        w.u16(len16(len, "payload length")?)?;
        match self {
            Payload::Sa(sa) => sa.emit(w.sub(sa.buffer_len())?)?,
            Payload::Ke(ke) => {
                w.u16(ke.dh_group)?;
                w.u16(0)?;
                w.bytes(&ke.data)?;
            }
            Payload::IdI(id) | Payload::IdR(id) => w.bytes(&id.to_body())?,
            Payload::Cert(c) | Payload::CertReq(c) => {
                w.u8(c.encoding)?;
                w.bytes(&c.data)?;
            }
            Payload::Auth(a) => {
                w.bytes(&[a.method.0, 0, 0, 0])?;
                w.bytes(&a.data)?;
            }
            Payload::Nonce(n) => {
                if !(NONCE_MIN_LEN..=NONCE_MAX_LEN).contains(&n.len()) {
                    return Err(IkeError::BadLength { what: "nonce data", value: n.len() });
                }
                w.bytes(n)?;
            }
            Payload::VendorId(v) => w.bytes(v)?,
            Payload::Notify(n) => {
                w.u8(n.protocol_id.0)?;
                let spi_size = u8::try_from(n.spi.len());
                w.u8(spi_size.map_err(|_| IkeError::BadLength {
                    what: "notify spi size",
                    value: n.spi.len(),
                })?)?;
                w.u16(n.notify_type.0)?;
                w.bytes(&n.spi)?;
                w.bytes(&n.data)?;
            }
            Payload::Delete(d) => {
                w.u8(d.protocol_id.0)?;
                let ike = d.protocol_id == ProtocolId::IKE;
                if ike && !d.spis.is_empty() {
                    return Err(IkeError::BadLength {
                        what: "delete num of spis",
                        value: d.spis.len(),
                    });
                }
                w.u8(if ike { 0 } else { 4 })?;
                w.u16(len16(d.spis.len(), "delete num of spis")?)?;
                d.spis.iter().try_for_each(|s| w.u32(*s))?;
            }
            Payload::TsI(ts) | Payload::TsR(ts) => ts.emit(w.sub(ts.buffer_len())?)?,
            Payload::Sk(sk) => w.bytes(&sk.body)?,
            Payload::Cp(cp) => cp.emit(w.sub(cp.buffer_len())?)?,
            Payload::Eap(e) => e.emit(w.sub(e.buffer_len())?)?,
        }
        Ok(w.finish()?)
    }
}

/// Parses a whole chain (the message's, or the decrypted inside of SK) into payload reprs,
/// skipping unknown non-critical payloads (§2.5).
pub fn parse_chain(first: PayloadType, bytes: &[u8]) -> Result<Vec<Payload>, IkeError> {
    let mut out = Vec::new();
    for raw in RawPayloads::new(first, bytes) {
        if let Some(p) = Payload::parse(&raw?)? {
            out.push(p);
        }
    }
    Ok(out)
}

/// Bytes `emit_chain` writes.
pub(crate) fn chain_len(payloads: &[Payload]) -> usize {
    payloads.iter().map(Payload::buffer_len).sum()
}

/// Writes a chain into exactly `chain_len` bytes; returns the first payload's type.
pub fn emit_chain(payloads: &[Payload], out: &mut [u8]) -> Result<PayloadType, IkeError> {
    let mut w = Writer::new(out, chain_len(payloads), "payload chain")?;
    let mut iter = payloads.iter().peekable();
    while let Some(p) = iter.next() {
        if matches!(p, Payload::Sk(_)) && iter.peek().is_some() {
            return Err(IkeError::SkNotLast);
        }
        let next = iter.peek().map_or(PayloadType::NONE, |n| n.payload_type());
        p.emit(next, w.sub(p.buffer_len())?)?;
    }
    w.finish()?;
    Ok(payloads.first().map_or(PayloadType::NONE, Payload::payload_type))
}

/// A whole IKE message: header and payloads, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The header (its next-payload and length fields are derived).
    pub header: Header,
    /// The payloads.
    pub payloads: Vec<Payload>,
}

impl Message {
    /// Checks and parses a message.
    pub fn parse(bytes: &[u8]) -> Result<Message, IkeError> {
        let p = Packet::new_checked(bytes)?;
        Ok(Message {
            header: Header::parse(&p),
            payloads: parse_chain(p.next_payload(), p.payload_bytes())?,
        })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + chain_len(&self.payloads)
    }

    /// Writes the message into exactly `buffer_len()` bytes.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), IkeError> {
        let len = self.buffer_len();
        if out.len() != len {
            return Err(IkeError::EmitBuffer { what: "message", len: out.len(), need: len });
        }
        let len32 = u32::try_from(len);
        let len32 = len32.map_err(|_| IkeError::BadLength { what: "header length", value: len })?;
        let (hdr, rest) = out.split_at_mut(HEADER_LEN);
        let first = emit_chain(&self.payloads, rest)?;
        self.header.emit(first, len32, hdr)
    }

    /// The message as a new vector.
    pub fn to_vec(&self) -> Result<Vec<u8>, IkeError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }

    /// The first Notify of `notify_type`.
    pub fn notify(&self, notify_type: NotifyType) -> Option<&Notify> {
        self.payloads.iter().find_map(|p| match p {
            Payload::Notify(n) if n.notify_type == notify_type => Some(n),
            _ => None,
        })
    }
}
