//! The IKE driver with its sockets: what the control thread holds. It feeds the driver the
//! datagrams of port 500 and those the lanes punted from 4500, and sends what comes out.

use super::sockets::IkeSockets;
use super::{IkeDriver, Transmit};
use crate::keying::plane::ControlPlane;
use serde_json::Value;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Largest IKE message we read (RFC 7296 §2: at least 1280 must be accepted; fragments and
/// certificates may be larger, so take a jumbo datagram's worth).
const MAX_MESSAGE: usize = 65_535;

/// Driver and sockets.
#[derive(Debug)]
pub struct IkeRuntime {
    driver: IkeDriver,
    sockets: IkeSockets,
    started: bool,
    buf: Vec<u8>,
}

impl IkeRuntime {
    /// Puts them together; the clock starts now.
    pub fn new(driver: IkeDriver, sockets: IkeSockets) -> IkeRuntime {
        IkeRuntime { driver, sockets, started: false, buf: vec![0; MAX_MESSAGE] }
    }

    /// The port-500 socket, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.sockets.fd()
    }

    fn send(&self, out: Vec<Transmit>) {
        for t in out {
            if let Err(e) = self.sockets.send(t.natt, t.to, &t.bytes) {
                tracing::warn!(to = %t.to, why = e.to_string(), "ike-send-failed");
            }
        }
    }

    /// What waits on port 500, at most [`crate::keying::READ_BATCH`] datagrams.
    pub fn read_socket(&mut self, plane: &mut ControlPlane) {
        for _ in 0..crate::keying::READ_BATCH {
            let Some((n, from)) = self.sockets.recv(&mut self.buf) else { break };
            let bytes = self.buf[..n].to_vec();
            let out = self.driver.datagram(plane, from, false, &bytes);
            self.send(out);
        }
    }

    /// An IKE message the lanes punted from the ESP-in-UDP port (marker removed).
    pub fn punted(&mut self, plane: &mut ControlPlane, from: SocketAddr, bytes: &[u8]) {
        let out = self.driver.datagram(plane, from, true, bytes);
        self.send(out);
    }

    /// Timers; the first call also installs the traps and initiates the
    /// `start_action = start` connections.
    pub fn tick(&mut self, plane: &mut ControlPlane) {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            self.driver.install_traps(plane);
            out = self.driver.start(plane);
        }
        out.extend(self.driver.tick(plane));
        self.send(out);
    }

    /// Starts connection `name` (`hipsec initiate`).
    pub fn initiate(&mut self, plane: &mut ControlPlane, name: &str) -> Result<(), String> {
        let out = self.driver.initiate(plane, name)?;
        self.send(out);
        Ok(())
    }

    /// An acquire from the data path (a packet met a policy whose SA is missing).
    pub fn acquire(&mut self, plane: &mut ControlPlane, policy: u64) {
        let out = self.driver.acquire(plane, policy);
        self.send(out);
    }

    /// `hipsec terminate NAME [--child CHILD]`.
    pub fn terminate(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        child: Option<&str>,
    ) -> Result<usize, String> {
        let (out, n) = self.driver.terminate(plane, name, child)?;
        self.send(out);
        Ok(n)
    }

    /// `hipsec rekey NAME [--child CHILD | --ike]`.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        child: Option<&str>,
        ike: bool,
    ) -> Result<usize, String> {
        let (out, n) = self.driver.rekey(plane, name, child, ike)?;
        self.send(out);
        Ok(n)
    }

    /// `hipsec ike wireshark-keys`: `None` unless the node was started with the switch.
    pub fn wireshark_keys(&self) -> Option<&super::KeyLog> {
        self.driver.wireshark_keys()
    }

    /// The steps of `mip6 = "signalling"` children since the last call, for the Mobile IPv6
    /// role (`keying::handover`).
    pub fn take_signalling(&mut self) -> Vec<crate::keying::handover::SignallingEvent> {
        self.driver.take_signalling()
    }

    /// The `ike` part of `status`.
    pub fn status(&self) -> Value {
        self.driver.status()
    }
}
