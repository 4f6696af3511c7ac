//! The mobile nodes' signalling SAs (RFC 3776 §4.1): ESP in transport mode between each home
//! address and the home agent, in an `ipsec::Engine` of their own on the control thread (the
//! data path's lanes never see Mobility Headers, which reach us by the link socket). Inbound
//! SAs are found by SPI, as any SAD does (RFC 4301 §4.4.2), and name the home address their
//! selectors protect; outbound SAs are found by home address.

use crate::config::home_agent::MobileNodeConf;
use ipsec::{DropReason, Engine, PacketBuf, Processed, SaHandle, SaParams, Spi, Time};
use mip6::{Extension, Outgoing, SaIdentity};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use wire::mip6::{IPPROTO_MH, ROUTING_HEADER_2_LEN, RoutingHeader2};

/// ESP's protocol number (RFC 4303).
const IPPROTO_ESP: u8 = 50;

/// Room in front of a packet for what sealing adds (transport mode: only ESP's header and IV).
const HEADROOM: usize = 64;
/// Largest packet handled (a Mobility Header is at most 2048 octets, wire::mip6::MAX_LEN).
const CAPACITY: usize = 4096;

/// The SAs and the buffer they work in.
#[derive(Debug)]
pub struct Signalling {
    engine: Engine,
    /// Inbound SPI → the home address its selector names.
    homes: HashMap<u32, Ipv6Addr>,
    /// Home address → outbound SA.
    out: HashMap<Ipv6Addr, SaHandle>,
    buf: PacketBuf,
}

impl Signalling {
    /// Builds every mobile node's pair (the config has checked them once already).
    pub fn new(nodes: &[MobileNodeConf], now: Time) -> Result<Signalling, String> {
        let mut engine = Engine::new(crate::datapath::cipher::provider());
        let mut homes = HashMap::new();
        let mut out = HashMap::new();
        // Mobile nodes keyed by IKEv2 get their pair when the CHILD SA comes up (`install`).
        for n in nodes {
            let Some((sa_in, sa_out)) = n.keys.manual() else { continue };
            let at = |e: ipsec::EngineError| format!("mobile node {}: {e}", n.home_address);
            engine.add_inbound(sa_in, now).map_err(at)?;
            let h = engine.add_outbound(sa_out, now).map_err(at)?;
            homes.insert(sa_in.spi.0, n.home_address);
            out.insert(n.home_address, h);
        }
        Ok(Signalling { engine, homes, out, buf: PacketBuf::new(CAPACITY, HEADROOM) })
    }

    /// Adds an IKEv2-made pair for `home` (RFC 4877 §4.4): the inbound SA takes Binding Updates
    /// at once; the outbound one seals Acknowledgements now if `send`, else after
    /// [`Signalling::send_on`].
    pub fn install(
        &mut self,
        home: Ipv6Addr,
        sa_in: &SaParams,
        sa_out: &SaParams,
        send: bool,
        now: Time,
    ) -> Result<(), String> {
        let h = add_pair(&mut self.engine, sa_in, sa_out, now)?;
        self.homes.insert(sa_in.spi.0, home);
        if send {
            self.out.insert(home, h);
        }
        Ok(())
    }

    /// Seals `home`'s Acknowledgements with the outbound SA `spi` from now on; false if there
    /// is no such SA.
    pub fn send_on(&mut self, home: Ipv6Addr, spi: Spi) -> bool {
        let Some(h) = outbound_to(&self.engine, spi, home) else { return false };
        self.out.insert(home, h);
        true
    }

    /// Drops a pair (its keys are wiped with it); if it was `home`'s sending SA, the home
    /// agent cannot answer until another pair sends.
    pub fn remove(&mut self, home: Ipv6Addr, spi_in: Spi, spi_out: Spi) {
        self.homes.remove(&spi_in.0);
        if let Some(h) = remove_pair(&mut self.engine, spi_in, spi_out, home) {
            if self.out.get(&home) == Some(&h) {
                self.out.remove(&home);
            }
        }
    }

    /// Verifies and decrypts the ESP of `packet` (ESP at the Destination Options header's end,
    /// RFC 3776 §3) in place of a copy: on success the buffer holds the packet without ESP
    /// (Next Header restored) and the SA's identity is returned.
    pub fn open(&mut self, packet: &[u8], now: Time) -> Result<(SaIdentity, &[u8]), DropReason> {
        self.buf.load(packet, HEADROOM).map_err(|_| DropReason::Malformed)?;
        let spi = match self.engine.inbound(&mut self.buf, now)? {
            Processed::Decapsulated { spi, .. } => spi,
            _ => return Err(DropReason::NotIpsec),
        };
        let home_address = *self.homes.get(&spi.0).ok_or(DropReason::NoSa)?;
        Ok((SaIdentity { spi, home_address }, self.buf.as_slice()))
    }

    /// Builds `o` as an IPv6 packet (type 2 routing header, RFC 6275 §6.4) and seals it with
    /// the outbound SA of `home` (RFC 3776 §4.1: the Binding Acknowledgement goes back
    /// through the node's SA); the bytes to send.
    pub fn seal(&mut self, home: Ipv6Addr, o: &Outgoing, now: Time) -> Result<&[u8], DropReason> {
        let h = *self.out.get(&home).ok_or(DropReason::NoSa)?;
        // The home agent answers a mobile node away from home through a type 2 routing header
        // (§9.5.4), written straight into the buffer; other extensions are rare enough to build.
        let ext_len = match o.extension {
            Extension::RoutingHeader2(_) => ROUTING_HEADER_2_LEN,
            _ => o.extension_bytes(IPPROTO_MH).map_err(|_| DropReason::Malformed)?.len(),
        };
        let len = 40 + ext_len + o.mh.len();
        let payload = u16::try_from(len - 40).map_err(|_| DropReason::Malformed)?;
        self.buf.set_window(HEADROOM, len).map_err(|_| DropReason::NoRoom)?;
        let p = self.buf.as_mut_slice();
        p[..4].copy_from_slice(&[0x60, 0, 0, 0]);
        p[4..6].copy_from_slice(&payload.to_be_bytes());
        p[6] = o.first_next_header();
        p[7] = 64;
        p[8..24].copy_from_slice(&o.src.octets());
        p[24..40].copy_from_slice(&o.dst.octets());
        let (ext, mh) = p[40..].split_at_mut(ext_len);
        match o.extension {
            Extension::RoutingHeader2(home) => RoutingHeader2::new(IPPROTO_MH, home)
                .emit(ext)
                .map_err(|_| DropReason::Malformed)?,
            _ => ext.copy_from_slice(
                &o.extension_bytes(IPPROTO_MH).map_err(|_| DropReason::Malformed)?,
            ),
        }
        mh.copy_from_slice(&o.mh);
        self.engine.protect_with(&[h], &mut self.buf, now)?;
        Ok(self.buf.as_slice())
    }

    /// The inbound SAs' drop counters and per-SA state (replay window top, packets), by home
    /// address: for `status`, never keys.
    pub fn status(&self) -> serde_json::Value {
        let sas: Vec<serde_json::Value> = self
            .engine
            .inbound_sas()
            .map(|sa| {
                let home = self.homes.get(&sa.spi().0).map(|h| h.to_string());
                serde_json::json!({
                    "direction": "in", "spi": sa.spi().to_string(), "home_address": home,
                    "replay_top": sa.replay().top().0, "packets": sa.usage().packets,
                })
            })
            .chain(self.engine.outbound_sas().map(|sa| {
                let (_, dst) = sa.addrs();
                serde_json::json!({
                    "direction": "out", "spi": sa.spi().to_string(),
                    "home_address": ip_string(dst), "seq_out": sa.last_seq_out().0,
                })
            }))
            .collect();
        serde_json::json!({ "sas": sas })
    }
}

fn ip_string(a: IpAddr) -> String {
    a.to_string()
}

// The engine work of an IKEv2-made pair, the same for both roles (the home agent's
// `Signalling`, the mobile node's engine): signalling SAs are ESP (RFC 3776 §4.1; the config
// and IKE make nothing else).

/// Adds a pair's inbound and outbound SA, both or neither; the outbound SA's handle.
pub fn add_pair(
    engine: &mut Engine,
    sa_in: &SaParams,
    sa_out: &SaParams,
    now: Time,
) -> Result<SaHandle, String> {
    engine.add_inbound(sa_in, now).map_err(|e| format!("inbound SA: {e}"))?;
    engine.add_outbound(sa_out, now).map_err(|e| {
        engine.remove_inbound(sa_in.spi, sa_in.protocol.number());
        format!("outbound SA: {e}")
    })
}

/// The outbound SA with SPI `spi` to `dst` (outbound SPIs are the peers' choice: two mobile
/// nodes may pick the same one).
pub fn outbound_to(engine: &Engine, spi: Spi, dst: Ipv6Addr) -> Option<SaHandle> {
    engine
        .outbound_entries()
        .find(|(_, sa)| sa.spi() == spi && sa.addrs().1 == IpAddr::V6(dst))
        .map(|(h, _)| h)
}

/// Removes a pair (keys wiped with the SAs); the outbound SA's handle as it was, if it was there.
pub fn remove_pair(
    engine: &mut Engine,
    spi_in: Spi,
    spi_out: Spi,
    dst: Ipv6Addr,
) -> Option<SaHandle> {
    engine.remove_inbound(spi_in, IPPROTO_ESP);
    let h = outbound_to(engine, spi_out, dst)?;
    engine.remove_outbound(h);
    Some(h)
}
