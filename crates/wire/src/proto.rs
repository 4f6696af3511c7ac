//! IP protocol numbers used here (IANA).

/// IPv4-in-IP (tunnel mode inner IPv4).
pub const IPV4: u8 = 4;
/// IPv6-in-IP (tunnel mode inner IPv6).
pub const IPV6: u8 = 41;
/// Encapsulating Security Payload.
pub const ESP: u8 = 50;
/// Authentication Header.
pub const AH: u8 = 51;
/// UDP.
pub const UDP: u8 = 17;
/// TCP.
pub const TCP: u8 = 6;
/// ICMP.
pub const ICMP: u8 = 1;
/// ICMPv6.
pub const ICMPV6: u8 = 58;
/// "No next header" (RFC 8200 §4.7): the ESP dummy-packet marker (RFC 4303 §2.6).
pub const NO_NEXT: u8 = 59;
