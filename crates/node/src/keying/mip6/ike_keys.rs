//! The home agent's IKEv2-made signalling SAs (RFC 4877 §4.4). A mobile node listed with
//! `ike = "NAME"` gets its pair when connection NAME's CHILD SA comes up; RFC 4877 §4.4 asks the
//! home agent to check that the peer may use the home address the SA protects, which here is:
//! the negotiated selectors are exactly that entry's home address and our address. Until then
//! its Binding Updates fail the SA look-up and are counted (`esp_no_sa`), never accepted.

use super::HomeAgentRuntime;
use crate::keying::handover::SignallingEvent;
use serde_json::json;

impl HomeAgentRuntime {
    /// A step of a signalling CHILD SA's life from the IKE driver.
    pub fn signalling(&mut self, e: SignallingEvent) {
        let Some(home) = self.ike_homes.get(e.connection()).copied() else {
            tracing::warn!(connection = %e.connection(), "mip6-ike-not-ours");
            return;
        };
        let now = self.now();
        match e {
            SignallingEvent::Install { connection, local, remote, sa_in, sa_out, send } => {
                if remote != home || local != self.conf.address {
                    self.counters.ike_refused += 1;
                    let why = format!(
                        "selectors {remote} ↔ {local}, want {home} ↔ {}",
                        self.conf.address
                    );
                    tracing::warn!(connection = %connection, why = why.to_string(), "mip6-ike-refused");
                    return;
                }
                match self.sigs.install(home, &sa_in, &sa_out, send, now) {
                    Ok(()) => {
                        let (spi_in, spi_out) = (sa_in.spi.to_string(), sa_out.spi.to_string());
                        tracing::info!(connection = %connection, home_address = %home, spi_in = %spi_in, spi_out = %spi_out, "mip6-signalling-sa-up");
                        if self.want_events {
                            self.events.push(json!({
                                "event": "signalling-sa-up", "connection": connection,
                                "home_address": home.to_string(), "spi_in": spi_in,
                                "spi_out": spi_out,
                            }));
                        }
                    }
                    Err(why) => {
                        tracing::warn!(connection = %connection, why = why.to_string(), "mip6-ike-install-failed");
                    }
                }
            }
            SignallingEvent::Send { connection, spi_out } => {
                if !self.sigs.send_on(home, spi_out) {
                    tracing::warn!(connection = %connection, spi_out = %spi_out, "mip6-ike-switch-failed");
                }
            }
            SignallingEvent::Remove { spi_in, spi_out, .. } => {
                self.sigs.remove(home, spi_in, spi_out);
            }
        }
    }
}
