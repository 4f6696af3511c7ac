//! The HIP driver with its socket: what the control thread holds. It feeds the driver the
//! packets of protocol 139, the acquires of its traps and its clock, and sends what comes out.

use super::socket::HipSocket;
use super::{HipDriver, Transmit};
use crate::keying::plane::ControlPlane;
use ipsec::spd_table::PolicyId;
use serde_json::Value;
use std::os::fd::RawFd;
use std::time::Instant;

/// Driver and socket.
#[derive(Debug)]
pub struct HipRuntime {
    driver: HipDriver,
    socket: HipSocket,
    start: Instant,
    started: bool,
    buf: Vec<u8>,
}

impl HipRuntime {
    /// Puts them together; the clock starts now.
    pub fn new(driver: HipDriver, socket: HipSocket) -> HipRuntime {
        HipRuntime { driver, socket, start: Instant::now(), started: false, buf: vec![0; 4096] }
    }

    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// The socket, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.socket.fd()
    }

    fn send(&self, out: Vec<Transmit>) {
        for t in out {
            if let Err(e) = self.socket.send(t.to, &t.bytes) {
                tracing::warn!(to = %t.to, why = e.to_string(), "hip-send-failed");
            }
        }
    }

    /// What waits on the socket, at most [`crate::keying::READ_BATCH`] datagrams.
    pub fn read_socket(&mut self, plane: &mut ControlPlane) {
        for _ in 0..crate::keying::READ_BATCH {
            let Some((range, from, to)) = self.socket.recv(&mut self.buf) else { break };
            let now = self.now_us();
            let bytes = self.buf.get(range).unwrap_or_default().to_vec();
            let out = self.driver.packet(plane, from, to, &bytes, now);
            self.send(out);
        }
    }

    /// Timers; the first call installs the traps.
    pub fn tick(&mut self, plane: &mut ControlPlane) {
        if !self.started {
            self.started = true;
            self.driver.install_traps(plane);
        }
        let now = self.now_us();
        let out = self.driver.tick(plane, now);
        self.send(out);
    }

    /// `hipsec hip close HIT`.
    pub fn close(
        &mut self,
        plane: &mut ControlPlane,
        peer: hip::HostIdentityTag,
    ) -> Result<(), String> {
        let now = self.now_us();
        let out = self.driver.close(plane, peer, now)?;
        self.send(out);
        Ok(())
    }

    /// `hipsec hip rekey HIT`.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        peer: hip::HostIdentityTag,
    ) -> Result<(), String> {
        let now = self.now_us();
        let out = self.driver.rekey(plane, peer, now)?;
        self.send(out);
        Ok(())
    }

    /// An acquire from the data path.
    pub fn acquire(&mut self, plane: &mut ControlPlane, policy: PolicyId) {
        let now = self.now_us();
        let out = self.driver.acquire(plane, policy, now);
        let sent = !out.is_empty();
        self.send(out);
        if sent {
            self.driver.prepare_keys();
        }
    }

    /// `hipsec hip wireshark-keys`: `None` unless the node was started with the switch.
    pub fn wireshark_keys(&self) -> Option<Vec<String>> {
        self.driver.wireshark_keys().map(<[String]>::to_vec)
    }

    /// The `hip` part of `status`.
    pub fn status(&self) -> Value {
        self.driver.status()
    }
}
