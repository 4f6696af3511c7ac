//! The Home Address destination option (RFC 6275 §6.3) inside a Destination Options header
//! (RFC 8200 §4.6): a mobile node away from home sends from its care-of address and names its
//! home address here; the receiver swaps the two before upper layers (and the Mobility Header
//! checksum, §6.1.1) see the packet. The option is type 201, 16 octets of data, aligned 8n+6.
//!
//! ```text
//! | Next Header   | Hdr Ext Len   |  (padding to 8n+6)            |
//! |  Option Type  | Option Length |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+         Home Address          +
//! ```

use std::net::Ipv6Addr;

use super::consts::HOME_ADDRESS_OPTION_TYPE;
use super::tlv::{self, Align};
use crate::cursor::Writer;
use crate::error::WireError;

/// Length of the Home Address option's data (§6.3).
pub const HOME_ADDRESS_OPTION_DATA_LEN: usize = 16;

/// One destination option other than padding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DestinationOption {
    /// §6.3: the mobile node's home address.
    HomeAddress(Ipv6Addr),
    /// Any other option, kept as bytes (type not 0, 1 or 201).
    Unknown {
        /// Option Type.
        option_type: u8,
        /// Option Data.
        data: Vec<u8>,
    },
}

impl DestinationOption {
    fn parts(&self) -> (Align, u8, Vec<u8>) {
        match self {
            DestinationOption::HomeAddress(a) => {
                (Align { x: 8, y: 6 }, HOME_ADDRESS_OPTION_TYPE, a.octets().to_vec())
            }
            DestinationOption::Unknown { option_type, data } => {
                (Align::NONE, *option_type, data.clone())
            }
        }
    }
}

/// A Destination Options header (RFC 8200 §4.6) as a repr: Next Header and its options
/// (padding dropped on parse, written on emit).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DestinationOptions {
    /// Next Header: the protocol after this header (ESP 50 under RFC 3776, or MH 135).
    pub next_header: u8,
    /// The options.
    pub options: Vec<DestinationOption>,
}

impl DestinationOptions {
    /// A header holding only a Home Address option (the layout of §6.3's figure: PadN of 4
    /// octets, then the option at offset 6; 24 octets in all).
    pub fn home_address(next_header: u8, home_address: Ipv6Addr) -> DestinationOptions {
        DestinationOptions {
            next_header,
            options: vec![DestinationOption::HomeAddress(home_address)],
        }
    }

    /// The address of the first Home Address option, if any.
    pub fn find_home_address(&self) -> Option<Ipv6Addr> {
        self.options.iter().find_map(|o| match o {
            DestinationOption::HomeAddress(a) => Some(*a),
            DestinationOption::Unknown { .. } => None,
        })
    }

    /// Parses the Destination Options header at the start of `bytes`; returns it and its length
    /// in octets. A Home Address option whose Option Length is not 16 is refused (§6.3), as is
    /// more than one (§6.3: at most one per packet).
    pub fn parse(bytes: &[u8]) -> Result<(DestinationOptions, usize), WireError> {
        let what = "destination options header";
        let (&next_header, &ext_len) = match bytes {
            [a, b, ..] => (a, b),
            _ => return Err(WireError::Truncated { what, len: bytes.len(), need: 2 }),
        };
        let len = (usize::from(ext_len) + 1) * 8;
        let Some(area) = bytes.get(2..len) else {
            return Err(WireError::BadLength {
                what: "destination options hdr ext len",
                value: len,
            });
        };
        let mut options = Vec::new();
        for raw in tlv::walk(area, "destination option")? {
            if raw.option_type == HOME_ADDRESS_OPTION_TYPE {
                let mut a = [0u8; 16];
                if raw.data.len() != HOME_ADDRESS_OPTION_DATA_LEN {
                    return Err(WireError::BadLength {
                        what: "home address option length",
                        value: raw.data.len(),
                    });
                }
                a.copy_from_slice(raw.data);
                if options.iter().any(|o| matches!(o, DestinationOption::HomeAddress(_))) {
                    return Err(WireError::BadValue {
                        what: "second home address option",
                        value: u64::from(HOME_ADDRESS_OPTION_TYPE),
                    });
                }
                options.push(DestinationOption::HomeAddress(Ipv6Addr::from(a)));
            } else {
                let data = raw.data.to_vec();
                options.push(DestinationOption::Unknown { option_type: raw.option_type, data });
            }
        }
        Ok((DestinationOptions { next_header, options }, len))
    }

    /// Octets [`DestinationOptions::emit`] writes: a multiple of 8.
    pub fn buffer_len(&self) -> usize {
        let parts = self.options.iter().map(|o| {
            let (a, _, d) = o.parts();
            (a, d.len())
        });
        tlv::layout(2, parts).1
    }

    /// Writes the header into exactly [`DestinationOptions::buffer_len`] octets.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let len = self.buffer_len();
        if len > 256 * 8 {
            return Err(WireError::BadLength { what: "destination options length", value: len });
        }
        self.check()?;
        let parts: Vec<(Align, u8, Vec<u8>)> = self.options.iter().map(|o| o.parts()).collect();
        let mut w = Writer::new(out, len, "destination options header")?;
        w.u8(self.next_header)?;
        w.u8(u8::try_from(len / 8 - 1).unwrap_or(u8::MAX))?;
        let area = w.sub(len - 2)?;
        tlv::emit(
            2,
            area,
            parts.iter().map(|(a, t, d)| (*a, *t, d.as_slice())),
            "destination option length",
        )?;
        w.finish()
    }

    /// At most one Home Address option (§6.3); an unknown option may not use a known type.
    fn check(&self) -> Result<(), WireError> {
        let mut homes = 0;
        for o in &self.options {
            match o {
                DestinationOption::HomeAddress(_) => homes += 1,
                DestinationOption::Unknown { option_type, .. }
                    if matches!(*option_type, tlv::PAD1 | tlv::PADN | HOME_ADDRESS_OPTION_TYPE) =>
                {
                    return Err(WireError::BadValue {
                        what: "destination option type",
                        value: u64::from(*option_type),
                    });
                }
                DestinationOption::Unknown { .. } => {}
            }
        }
        if homes > 1 {
            return Err(WireError::BadValue {
                what: "second home address option",
                value: u64::from(HOME_ADDRESS_OPTION_TYPE),
            });
        }
        Ok(())
    }

    /// The header as bytes.
    pub fn to_vec(&self) -> Result<Vec<u8>, WireError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}
