//! CHILD SAs that do not go to the data path: the IKEv2 driver negotiates them, a Mobile IPv6
//! role uses them. RFC 4877 §4.4: the mobile node and its home agent key the ESP transport-mode
//! SAs that protect Binding Updates and Acknowledgements with IKEv2; those packets never cross
//! the lanes (the home agent reads them off the link, the mobile node seals them itself), so
//! their SAs belong to the role's own engine. The IKE driver queues these events, the control
//! thread hands them to the home agent or the mobile node. Neither side imports the other.

use ipsec::{SaParams, Spi};
use std::net::Ipv6Addr;

/// One step of a signalling CHILD SA's life, in the order the driver decided it.
#[derive(Debug)]
pub enum SignallingEvent {
    /// A new pair: admit `sa_in` at once; send on `sa_out` now if `send` (the first pair, or a
    /// rekey this end asked for: the peer installed first), else after [`Self::Send`].
    Install {
        /// The `[[connection]]` it was negotiated on.
        connection: String,
        /// Our traffic selector's address (the mobile node's home address on a mobile node,
        /// the home agent's address on a home agent).
        local: Ipv6Addr,
        /// The peer's traffic selector's address.
        remote: Ipv6Addr,
        /// Ours to receive on (`src` the peer's selector, `dst` ours).
        sa_in: Box<SaParams>,
        /// Ours to send on.
        sa_out: Box<SaParams>,
        /// Whether `sa_out` replaces the outbound SA now.
        send: bool,
    },
    /// Send on the outbound SA with this SPI from now on (the peer deleted the old pair after
    /// a rekey it started, RFC 7296 §2.8).
    Send {
        /// The connection.
        connection: String,
        /// The outbound SA's SPI.
        spi_out: Spi,
    },
    /// The pair is gone (deleted, or the IKE SA closed).
    Remove {
        /// The connection.
        connection: String,
        /// Its inbound SA.
        spi_in: Spi,
        /// Its outbound SA.
        spi_out: Spi,
    },
}

impl SignallingEvent {
    /// The connection the event belongs to.
    pub fn connection(&self) -> &str {
        match self {
            SignallingEvent::Install { connection, .. }
            | SignallingEvent::Send { connection, .. }
            | SignallingEvent::Remove { connection, .. } => connection,
        }
    }
}
