//! The control plane's operator side: the control socket ([`socket`]), the `status` document
//! ([`status`]) and the Prometheus endpoint ([`metrics`]), all served by the control thread.

pub mod metrics;
pub mod socket;
pub mod status;
