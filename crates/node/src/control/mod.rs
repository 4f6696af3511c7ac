//! The control plane's operator side: the control socket ([`socket`]) and its language
//! ([`commands`], carried out by [`exec`]), event streaming ([`monitor`]), the `status`
//! document ([`status`]) and the Prometheus endpoint ([`metrics`]). The front thread
//! ([`front`], over the connection table [`conn`]) serves the clients; the control thread
//! ([`server`]) runs the keying drivers and answers the requests the front hands it.

pub mod commands;
pub mod conn;
pub mod exec;
pub mod front;
pub mod metrics;
pub mod monitor;
pub mod server;
pub mod socket;
pub mod status;
pub mod stream;
