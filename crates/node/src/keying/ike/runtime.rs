//! The IKE driver with its sockets: what the control thread holds. It feeds the driver the
//! datagrams of port 500 and those the lanes punted from 4500, its clock in milliseconds, and
//! sends what comes out.

use super::sockets::IkeSockets;
use super::{IkeDriver, Transmit};
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use serde_json::Value;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::Instant;

/// Largest IKE message we read (RFC 7296 §2: at least 1280 must be accepted; fragments and
/// certificates may be larger, so take a jumbo datagram's worth).
const MAX_MESSAGE: usize = 65_535;

/// Driver and sockets.
#[derive(Debug)]
pub struct IkeRuntime {
    driver: IkeDriver,
    sockets: IkeSockets,
    start: Instant,
    started: bool,
    buf: Vec<u8>,
}

impl IkeRuntime {
    /// Puts them together; the clock starts now.
    pub fn new(driver: IkeDriver, sockets: IkeSockets) -> IkeRuntime {
        IkeRuntime {
            driver,
            sockets,
            start: Instant::now(),
            started: false,
            buf: vec![0; MAX_MESSAGE],
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// The port-500 socket, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.sockets.fd()
    }

    fn send(&self, out: Vec<Transmit>) {
        for t in out {
            if let Err(e) = self.sockets.send(t.natt, t.to, &t.bytes) {
                log_event!(Level::Warn, "ike-send-failed", "to" => t.to, "why" => e.to_string());
            }
        }
    }

    /// What waits on port 500, at most [`crate::keying::READ_BATCH`] datagrams.
    pub fn read_socket(&mut self, plane: &mut ControlPlane) {
        for _ in 0..crate::keying::READ_BATCH {
            let Some((n, from)) = self.sockets.recv(&mut self.buf) else { break };
            let now = self.now_ms();
            let bytes = self.buf[..n].to_vec();
            let out = self.driver.datagram(plane, from, false, &bytes, now);
            self.send(out);
        }
    }

    /// An IKE message the lanes punted from the ESP-in-UDP port (marker removed).
    pub fn punted(&mut self, plane: &mut ControlPlane, from: SocketAddr, bytes: &[u8]) {
        let now = self.now_ms();
        let out = self.driver.datagram(plane, from, true, bytes, now);
        self.send(out);
    }

    /// Timers; the first call also installs the traps and initiates the
    /// `start_action = start` connections.
    pub fn tick(&mut self, plane: &mut ControlPlane) {
        let now = self.now_ms();
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            self.driver.install_traps(plane);
            out = self.driver.start(now);
        }
        out.extend(self.driver.tick(plane, now));
        self.send(out);
    }

    /// Starts connection `name` (`hipsec initiate`).
    pub fn initiate(&mut self, name: &str) -> Result<(), String> {
        let i = self.driver.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        let now = self.now_ms();
        let out = self.driver.initiate(i, now)?;
        self.send(out);
        Ok(())
    }

    /// An acquire from the data path (a packet met a policy whose SA is missing).
    pub fn acquire(&mut self, policy: u64) {
        let now = self.now_ms();
        let out = self.driver.acquire(policy, now);
        self.send(out);
    }

    /// `hipsec terminate NAME`.
    pub fn terminate(&mut self, plane: &mut ControlPlane, name: &str) -> Result<usize, String> {
        let now = self.now_ms();
        let (out, n) = self.driver.terminate(plane, name, now)?;
        self.send(out);
        Ok(n)
    }

    /// `hipsec rekey NAME [--ike]`.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        ike: bool,
    ) -> Result<usize, String> {
        let now = self.now_ms();
        let (out, n) = self.driver.rekey(plane, name, ike, now)?;
        self.send(out);
        Ok(n)
    }

    /// `hipsec ike wireshark-keys`: `None` unless the node was started with the switch.
    pub fn wireshark_keys(&self) -> Option<Vec<String>> {
        self.driver.wireshark_keys().map(<[String]>::to_vec)
    }

    /// The steps of `mip6 = "signalling"` children since the last call, for the Mobile IPv6
    /// role (`keying::handover`).
    pub fn take_signalling(&mut self) -> Vec<crate::keying::handover::SignallingEvent> {
        self.driver.take_signalling()
    }

    /// The `ike` part of `status`.
    pub fn status(&self) -> Value {
        self.driver.status(self.now_ms())
    }
}
