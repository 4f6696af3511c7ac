//! Keying: how SAs and policies reach the data path. Today manual keying from the node config
//! ([`manual`]); the IKEv2, HIP and Mobile IPv6 drivers will each get a file here, all speaking
//! to the lanes through the same control interface.

pub mod handover;
pub mod hip;
pub mod ike;
pub mod manual;
pub mod mip6;
pub mod plane;
pub mod sequence;
