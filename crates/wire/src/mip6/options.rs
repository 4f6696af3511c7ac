//! Mobility options (RFC 6275 §6.2): Binding Refresh Advice (§6.2.4), Alternate Care-of Address
//! (§6.2.5), Nonce Indices (§6.2.6), Binding Authorization Data (§6.2.7), and unknown ones kept
//! as bytes (§6.2.1: a receiver skips options it does not understand). Pad1 and PadN (§6.2.2,
//! §6.2.3) are dropped on parse and written on emit to meet each option's alignment and to make
//! the Mobility Header a multiple of 8 octets.

use std::net::Ipv6Addr;

use super::consts::MobilityOptionType;
use super::tlv::{self, Align};
use crate::error::WireError;

/// One mobility option (§6.2) other than padding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MobilityOption {
    /// §6.2.4: the interval, in 4-second units, after which the mobile node should refresh.
    BindingRefreshAdvice {
        /// Refresh Interval (units of 4 seconds).
        refresh_interval: u16,
    },
    /// §6.2.5: the care-of address to bind instead of the packet's source address.
    AlternateCareOfAddress(Ipv6Addr),
    /// §6.2.6: the nonce indices of return routability.
    NonceIndices {
        /// Home Nonce Index.
        home_nonce_index: u16,
        /// Care-of Nonce Index.
        care_of_nonce_index: u16,
    },
    /// §6.2.7: the authenticator of a correspondent registration.
    BindingAuthorizationData(Vec<u8>),
    /// An option this module does not know, kept as bytes (type is not 0–5).
    Unknown {
        /// Option Type.
        option_type: MobilityOptionType,
        /// Option Data.
        data: Vec<u8>,
    },
}

impl MobilityOption {
    /// The option's type.
    pub fn option_type(&self) -> MobilityOptionType {
        match self {
            MobilityOption::BindingRefreshAdvice { .. } => {
                MobilityOptionType::BINDING_REFRESH_ADVICE
            }
            MobilityOption::AlternateCareOfAddress(_) => {
                MobilityOptionType::ALTERNATE_CARE_OF_ADDRESS
            }
            MobilityOption::NonceIndices { .. } => MobilityOptionType::NONCE_INDICES,
            MobilityOption::BindingAuthorizationData(_) => {
                MobilityOptionType::BINDING_AUTHORIZATION_DATA
            }
            MobilityOption::Unknown { option_type, .. } => *option_type,
        }
    }

    /// The alignment requirement of §6.2.4–§6.2.7: 2n, 8n+6, 2n, 8n+2; none for unknown.
    pub(crate) fn align(&self) -> Align {
        match self {
            MobilityOption::BindingRefreshAdvice { .. } | MobilityOption::NonceIndices { .. } => {
                Align { x: 2, y: 0 }
            }
            MobilityOption::AlternateCareOfAddress(_) => Align { x: 8, y: 6 },
            MobilityOption::BindingAuthorizationData(_) => Align { x: 8, y: 2 },
            MobilityOption::Unknown { .. } => Align::NONE,
        }
    }

    /// Option Data as bytes.
    pub(crate) fn data(&self) -> Vec<u8> {
        match self {
            MobilityOption::BindingRefreshAdvice { refresh_interval } => {
                refresh_interval.to_be_bytes().to_vec()
            }
            MobilityOption::AlternateCareOfAddress(a) => a.octets().to_vec(),
            MobilityOption::NonceIndices { home_nonce_index, care_of_nonce_index } => {
                let mut v = home_nonce_index.to_be_bytes().to_vec();
                v.extend_from_slice(&care_of_nonce_index.to_be_bytes());
                v
            }
            MobilityOption::BindingAuthorizationData(d) => d.clone(),
            MobilityOption::Unknown { data, .. } => data.clone(),
        }
    }

    /// Parses one option's data; the fixed-size options check their Length (§6.2.4–§6.2.6).
    fn parse(option_type: u8, data: &[u8]) -> Result<MobilityOption, WireError> {
        let fixed = |n: usize, what: &'static str| {
            if data.len() == n {
                Ok(())
            } else {
                Err(WireError::BadLength { what, value: data.len() })
            }
        };
        let u16_at = |i: usize| u16::from_be_bytes([data[i], data[i + 1]]);
        Ok(match MobilityOptionType(option_type) {
            MobilityOptionType::BINDING_REFRESH_ADVICE => {
                fixed(2, "binding refresh advice length")?;
                MobilityOption::BindingRefreshAdvice { refresh_interval: u16_at(0) }
            }
            MobilityOptionType::ALTERNATE_CARE_OF_ADDRESS => {
                fixed(16, "alternate care-of address length")?;
                let mut a = [0u8; 16];
                a.copy_from_slice(data);
                MobilityOption::AlternateCareOfAddress(Ipv6Addr::from(a))
            }
            MobilityOptionType::NONCE_INDICES => {
                fixed(4, "nonce indices length")?;
                MobilityOption::NonceIndices {
                    home_nonce_index: u16_at(0),
                    care_of_nonce_index: u16_at(2),
                }
            }
            MobilityOptionType::BINDING_AUTHORIZATION_DATA => {
                MobilityOption::BindingAuthorizationData(data.to_vec())
            }
            t => MobilityOption::Unknown { option_type: t, data: data.to_vec() },
        })
    }

    fn check(&self) -> Result<(), WireError> {
        if let MobilityOption::Unknown { option_type, .. } = self
            && option_type.0 <= MobilityOptionType::BINDING_AUTHORIZATION_DATA.0
        {
            return Err(WireError::BadValue {
                what: "unknown mobility option type",
                value: u64::from(option_type.0),
            });
        }
        Ok(())
    }
}

/// Parses the mobility options of a message (the octets after its fixed fields up to the end
/// of the Mobility Header), dropping padding.
pub fn parse_options(area: &[u8]) -> Result<Vec<MobilityOption>, WireError> {
    tlv::walk(area, "mobility option")?
        .into_iter()
        .map(|raw| MobilityOption::parse(raw.option_type, raw.data))
        .collect()
}

/// Octets the options take when they start at offset `start` of the Mobility Header, including
/// the padding before each and the padding that ends the header on a multiple of 8.
pub fn options_len(start: usize, options: &[MobilityOption]) -> usize {
    let (_, end) = tlv::layout(start, options.iter().map(|o| (o.align(), o.data().len())));
    end - start
}

/// Writes `options` into `area`, which starts at offset `start` of the Mobility Header and is
/// exactly [`options_len`] octets long.
pub fn emit_options(
    start: usize,
    options: &[MobilityOption],
    area: &mut [u8],
) -> Result<(), WireError> {
    let need = options_len(start, options);
    if area.len() != need {
        return Err(WireError::Truncated { what: "mobility options", len: area.len(), need });
    }
    for o in options {
        o.check()?;
    }
    let datas: Vec<(Align, u8, Vec<u8>)> =
        options.iter().map(|o| (o.align(), o.option_type().0, o.data())).collect();
    tlv::emit(
        start,
        area,
        datas.iter().map(|(a, t, d)| (*a, *t, d.as_slice())),
        "mobility option length",
    )
}
