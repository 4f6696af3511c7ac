//! Keying: how SAs and policies reach the data path. Today manual keying from the node config
//! ([`manual`]); the IKEv2, HIP and Mobile IPv6 drivers will each get a file here, all speaking
//! to the lanes through the same control interface.

/// Datagrams a driver reads from its socket per turn of the control thread. A flood that
/// outruns the driver never empties the socket: an unbounded read would keep the control
/// thread from its timers (rekeys, retransmissions) and from the requests the front thread
/// hands it. At 55,000 spoofed IKE_SA_INIT a second (`tests/ike_flood.rs`), 64 is about 2.5 ms
/// of work in a debug build between two looks at everything else.
pub const READ_BATCH: usize = 64;

pub mod handover;
pub mod hip;
pub mod ike;
pub mod manual;
pub mod mip6;
pub mod plane;
pub mod sequence;
