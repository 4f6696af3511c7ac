//! What the endpoint shows of itself for status and tests: its CHILD SA pairs and its
//! associations, never their keys.

use super::AssocId;
use super::endpoint::Endpoint;
use crate::time::Time;
use std::net::SocketAddr;

/// A CHILD SA pair as the endpoint holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildView {
    /// Its association.
    pub assoc: AssocId,
    /// Its connection.
    pub conn: String,
    /// Its child's name.
    pub child: String,
    /// Inbound SPI.
    pub spi_in: u32,
    /// Outbound SPI.
    pub spi_out: u32,
    /// Whether the child's traffic is sent on it.
    pub sending: bool,
    /// When it is rekeyed next (none: never, or it has a successor).
    pub rekey_at: Option<Time>,
    /// Its hard lifetime.
    pub expires: Option<Time>,
    /// Our rekeys of it that failed in a row (each is retried with back-off).
    pub rekey_failures: u32,
    /// Our rekey of it is under way.
    pub rekeying: bool,
    /// The peer rekeyed its predecessor; outbound moves here when the peer deletes that.
    pub awaiting_switch: bool,
}

/// An association as the endpoint holds it (never its keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssocView {
    /// Its handle.
    pub assoc: AssocId,
    /// Its connection.
    pub conn: String,
    /// Our address.
    pub local: SocketAddr,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Its state's name.
    pub state: &'static str,
    /// We initiated it.
    pub initiated: bool,
    /// When it was made.
    pub created: Time,
    /// Once established: initiator and responder SPI, and the negotiated suite.
    pub ike: Option<(u64, u64, crate::suite::IkeSuite)>,
}

impl Endpoint {
    /// Every CHILD SA pair in the data path.
    pub fn children(&self) -> Vec<ChildView> {
        let mut v = Vec::new();
        for a in self.assocs.values() {
            for (p, sending) in a.pairs() {
                let cfg = &self.conns[a.conn].cfg;
                v.push(ChildView {
                    assoc: a.id,
                    conn: cfg.name.clone(),
                    child: cfg.child_name(p.child),
                    spi_in: p.spi_in,
                    spi_out: p.spi_out,
                    sending,
                    rekey_at: p.rekey_at,
                    expires: p.expires,
                    rekey_failures: p.rekey_failures,
                    rekeying: a.rekeying(p.spi_in),
                    awaiting_switch: p.awaiting_switch,
                });
            }
        }
        v
    }

    /// Every association, oldest first.
    pub fn views(&self) -> Vec<AssocView> {
        self.assocs
            .values()
            .map(|a| AssocView {
                assoc: a.id,
                conn: self.conns[a.conn].cfg.name.clone(),
                local: a.local,
                peer: a.peer,
                state: a.state_name(),
                initiated: a.initiated,
                created: a.created,
                ike: a.ike_sa().map(|s| (s.spi_i, s.spi_r, s.suite)),
            })
            .collect()
    }
}
