//! The control plane's operator side: the control socket ([`socket`]) and its language
//! ([`commands`], carried out by [`exec`]), event streaming ([`monitor`]), the `status`
//! document ([`status`]) and the Prometheus endpoint ([`metrics`]), all served by the control
//! thread ([`server`]).

pub mod commands;
pub mod exec;
pub mod metrics;
pub mod monitor;
pub mod server;
pub mod socket;
pub mod status;
