//! [`Param`], any parameter as a typed repr (or raw when its type is not one of ours), and
//! [`Message`], a whole packet: header plus parameters, with the partial emits HIP_MAC and
//! HIP_SIGNATURE need.

use super::base::{
    DhGroupList, DiffieHellman, Encrypted, HipCipher, HitSuiteList, HostId, Puzzle, R1Counter,
    Solution, TransportFormatList,
};
use super::consts::{HEADER_LEN, MAX_PACKET_LEN, ParamType};
use super::header::{Header, Packet};
use super::more::{
    Ack, EchoRequestSigned, EchoRequestUnsigned, EchoResponseSigned, EchoResponseUnsigned, EspInfo,
    EspTransform, HipMac, HipMac2, HipSignature, HipSignature2, LocatorSet, Notification, Seq,
};
use super::param::{ParamRepr, Params, RawParam, emit_param, param_len};
use crate::error::WireError;

macro_rules! params {
    ($($variant:ident,)*) => {
        /// One parameter: a typed repr for every type this module knows, [`Param::Unknown`]
        /// for the rest (the caller decides what an unknown critical parameter means, §5.2.1).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Param {
            $(
                #[doc = concat!("A parsed ", stringify!($variant), ".")]
                $variant($variant),
            )*
            /// A parameter of another type, Contents kept as they are (also the way to send raw
            /// `(type, bytes)`).
            Unknown {
                /// Its type.
                param_type: ParamType,
                /// Its Contents, padding excluded.
                contents: Vec<u8>,
            },
        }

        impl Param {
            /// Reads the Contents of a parameter of type `ty` with the matching repr.
            pub fn parse(ty: ParamType, contents: &[u8]) -> Result<Param, WireError> {
                Ok(match ty {
                    $(<$variant as ParamRepr>::TYPE => Param::$variant($variant::parse(contents)?),)*
                    _ => Param::Unknown { param_type: ty, contents: contents.to_vec() },
                })
            }

            /// Its type.
            pub fn param_type(&self) -> ParamType {
                match self {
                    $(Param::$variant(_) => <$variant as ParamRepr>::TYPE,)*
                    Param::Unknown { param_type, .. } => *param_type,
                }
            }

            /// Octets of Contents (the Length field).
            pub fn contents_len(&self) -> usize {
                match self {
                    $(Param::$variant(p) => p.contents_len(),)*
                    Param::Unknown { contents, .. } => contents.len(),
                }
            }

            /// Writes the whole TLV into exactly `buffer_len()` octets.
            pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
                match self {
                    $(Param::$variant(p) => p.emit(out),)*
                    Param::Unknown { param_type, contents } => emit_param(*param_type, contents, out),
                }
            }
        }

        $(
            impl From<$variant> for Param {
                fn from(p: $variant) -> Param {
                    Param::$variant(p)
                }
            }

            impl ParamVariant for $variant {
                fn from_param(p: &Param) -> Option<&Self> {
                    match p {
                        Param::$variant(x) => Some(x),
                        _ => None,
                    }
                }
            }
        )*
    };
}

params! {
    EspInfo,
    R1Counter,
    LocatorSet,
    Puzzle,
    Solution,
    Seq,
    Ack,
    DhGroupList,
    DiffieHellman,
    HipCipher,
    Encrypted,
    HostId,
    HitSuiteList,
    Notification,
    EchoRequestSigned,
    EchoResponseSigned,
    TransportFormatList,
    EspTransform,
    HipMac,
    HipMac2,
    HipSignature2,
    HipSignature,
    EchoRequestUnsigned,
    EchoResponseUnsigned,
}

/// A repr that is one variant of [`Param`], so [`Message::find`] can hand it back typed.
pub trait ParamVariant: ParamRepr {
    /// The repr inside `p`, if `p` holds this type.
    fn from_param(p: &Param) -> Option<&Self>;
}

impl Param {
    /// Reads a raw parameter from a walk.
    pub fn from_raw(raw: &RawParam<'_>) -> Result<Param, WireError> {
        Param::parse(raw.param_type, raw.contents)
    }
    /// A raw `(type, contents)` parameter.
    pub fn raw(param_type: ParamType, contents: Vec<u8>) -> Param {
        Param::Unknown { param_type, contents }
    }
    /// The critical bit of its type (§5.2.1).
    pub fn is_critical(&self) -> bool {
        self.param_type().is_critical()
    }
    /// Octets the TLV takes, padding included.
    pub fn buffer_len(&self) -> usize {
        param_len(self.contents_len())
    }
}

/// Reads every parameter of a sequence (a packet's, or a decrypted ENCRYPTED's) into reprs.
pub fn parse_params(bytes: &[u8]) -> Result<Vec<Param>, WireError> {
    Params::new(bytes).map(|raw| Param::from_raw(&raw?)).collect()
}

/// Writes parameters back to back (no header), checking their order; for ENCRYPTED plaintext.
pub fn emit_params(params: &[Param]) -> Result<Vec<u8>, WireError> {
    check_order(params)?;
    let mut out = vec![0; params.iter().map(Param::buffer_len).sum()];
    let mut at = 0;
    for p in params {
        let n = p.buffer_len();
        p.emit(out.get_mut(at..at + n).unwrap_or_default())?;
        at += n;
    }
    Ok(out)
}

fn check_order(params: &[Param]) -> Result<(), WireError> {
    for w in params.windows(2) {
        if let [a, b] = w {
            if b.param_type() < a.param_type() {
                return Err(WireError::BadValue {
                    what: "parameter order",
                    value: u64::from(b.param_type().0),
                });
            }
        }
    }
    Ok(())
}

/// A whole HIP packet as reprs: the header and the parameters in ascending type order
/// (§5.2.1). The Header Length is computed on emit; the Checksum is left zero — fill it with
/// [`super::fill_checksum`] once the IP addresses are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Header fields.
    pub header: Header,
    /// Parameters, ascending by type.
    pub params: Vec<Param>,
}

impl Message {
    /// A message with no parameters.
    pub fn new(header: Header) -> Message {
        Message { header, params: Vec::new() }
    }

    /// Appends a parameter (builder style).
    pub fn with(mut self, p: impl Into<Param>) -> Message {
        self.params.push(p.into());
        self
    }

    /// Parses a packet: the header, then every parameter with its repr. Unknown types become
    /// [`Param::Unknown`]; a known type with bad Contents is an error naming the field.
    pub fn parse(bytes: &[u8]) -> Result<Message, WireError> {
        let p = Packet::new_checked(bytes)?;
        let header = Header::parse(&p);
        let params = p.params().map(|raw| Param::from_raw(&raw?)).collect::<Result<_, _>>()?;
        Ok(Message { header, params })
    }

    /// The first parameter of type `ty`.
    pub fn get(&self, ty: ParamType) -> Option<&Param> {
        self.params.iter().find(|p| p.param_type() == ty)
    }

    /// The first parameter of repr `P`, typed: `m.find::<Puzzle>()`.
    pub fn find<P: ParamVariant>(&self) -> Option<&P> {
        self.params.iter().find_map(P::from_param)
    }

    /// Every parameter of repr `P`, in order (e.g. the ESP_INFOs of an UPDATE).
    pub fn find_all<P: ParamVariant + 'static>(&self) -> impl Iterator<Item = &P> {
        self.params.iter().filter_map(P::from_param)
    }

    fn len_before(&self, ty: Option<ParamType>) -> usize {
        HEADER_LEN
            + self
                .params
                .iter()
                .take_while(|p| ty.is_none_or(|t| p.param_type() < t))
                .map(Param::buffer_len)
                .sum::<usize>()
    }

    /// Octets `emit` writes.
    pub fn buffer_len(&self) -> usize {
        self.len_before(None)
    }

    fn emit_before(&self, ty: Option<ParamType>, out: &mut [u8]) -> Result<(), WireError> {
        check_order(&self.params)?;
        let len = self.len_before(ty);
        if len > MAX_PACKET_LEN {
            return Err(WireError::BadLength { what: "hip packet length", value: len });
        }
        if out.len() != len {
            return Err(WireError::Truncated { what: "hip packet", len: out.len(), need: len });
        }
        let (head, mut rest) = out.split_at_mut(HEADER_LEN);
        self.header.emit(len, head)?;
        for p in self.params.iter().take_while(|p| ty.is_none_or(|t| p.param_type() < t)) {
            let (this, tail) = rest.split_at_mut(p.buffer_len().min(rest.len()));
            p.emit(this)?;
            rest = tail;
        }
        Ok(())
    }

    /// Writes the packet (checksum zero) into exactly `buffer_len()` octets.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        self.emit_before(None, out)
    }

    /// The packet as a new vector (checksum zero).
    pub fn to_vec(&self) -> Result<Vec<u8>, WireError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }

    /// The input of a HIP_MAC, HIP_MAC_2, HIP_SIGNATURE or HIP_SIGNATURE_2 of type `ty`:
    /// the header and every parameter whose type is below `ty`, with the Header Length set as
    /// if the packet ended there and the Checksum zero. RFC 7401 §5.2.12 (HIP_MAC: "excluding
    /// the HIP_MAC parameter and any following parameters ... the Checksum field MUST be set to
    /// zero, and the HIP header length ... MUST be calculated not to cover any excluded
    /// parameters"), §5.2.14 (HIP_SIGNATURE, the same up to the signature). For HIP_MAC_2
    /// (§5.2.13, R2) put the sender's HOST_ID among `params` (in type order) before calling; for
    /// HIP_SIGNATURE_2 (§5.2.15, R1) zero the Receiver's HIT and PUZZLE's Opaque and #I, or
    /// apply [`super::zero_for_signature_2`] to the result.
    pub fn to_vec_before(&self, ty: ParamType) -> Result<Vec<u8>, WireError> {
        let mut v = vec![0; self.len_before(Some(ty))];
        self.emit_before(Some(ty), &mut v)?;
        Ok(v)
    }
}
