//! Mobile IPv6 on the wire (RFC 6275 §6): the Mobility Header and its messages (§6.1), the
//! mobility options (§6.2), the Home Address destination option (§6.3) and the type 2 routing
//! header (§6.4). Read §6.1.1 (header and checksum), §6.1.7–§6.1.8 (Binding Update and
//! Acknowledgement) and §6.2.1 (option format and alignment) first.
//!
//! Shape (as [`crate::hip`]): [`MhPacket`] is a view whose accessors cannot panic after
//! `new_checked`; [`Message`] is the owned repr with `parse`/`buffer_len`/`emit`, its [`Body`]
//! one variant per MH Type; padding options are dropped on parse and written on emit, so every
//! header emitted is a multiple of 8 octets and every option meets its alignment. Errors are
//! [`crate::WireError`]s naming the field.
//!
//! ```
//! use std::net::Ipv6Addr;
//! use wire::mip6::*;
//! let home: Ipv6Addr = "2001:db8:1::100".parse().unwrap();
//! let ha: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
//! let bu = Message::new(Body::BindingUpdate(BindingUpdate {
//!     sequence: 7, acknowledge: true, home_registration: true, lifetime: 150,
//!     ..BindingUpdate::default()
//! }));
//! // With a Home Address option the pseudo-header's source is the home address (§6.1.1).
//! let bytes = bu.to_vec_with_checksum(home, ha).unwrap();
//! let p = MhPacket::new_checked(&bytes[..]).unwrap();
//! assert!(p.verify_checksum(home, ha));
//! assert_eq!(Message::parse(&bytes).unwrap(), bu);
//! ```

mod consts;
mod header;
mod home_address;
mod message;
mod options;
mod routing;
mod tlv;

pub use consts::{
    BaStatus, BeStatus, HOME_ADDRESS_OPTION_TYPE, IPPROTO_DSTOPTS, IPPROTO_MH, IPPROTO_NONE,
    IPPROTO_ROUTING, LIFETIME_UNIT_SECS, MAX_LEN, MIN_LEN, MhType, MobilityOptionType,
    ROUTING_TYPE_2,
};
pub use header::{MESSAGE_DATA_OFFSET, MhPacket, compute_checksum, fill_checksum, verify_checksum};
pub use home_address::{DestinationOption, DestinationOptions, HOME_ADDRESS_OPTION_DATA_LEN};
pub use message::{BindingAck, BindingError, BindingUpdate, Body, Message, Test, TestInit};
pub use options::{MobilityOption, emit_options, options_len, parse_options};
pub use routing::{ROUTING_HEADER_2_LEN, RoutingHeader2};

#[cfg(test)]
mod tests;
