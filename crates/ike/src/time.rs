//! The time type of the protocol crates, shared with HIP and Mobile IPv6 so one virtual clock
//! drives them all: [`wire::Time`], microseconds since an epoch the caller owns.

pub use wire::Time;
