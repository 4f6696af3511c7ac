//! The `hipsec` tool's library half: the SA file, capture reading/writing, the pcap tools and the
//! benchmarks, kept here so that integration tests can reach them; `main.rs` is only the CLI.

pub mod bench_esp;
pub mod bench_filter;
pub mod bench_hip;
pub mod bench_ike;
pub mod bench_ike_clients;
mod bench_ike_crypto;
mod bench_ike_gen;
mod bench_net;
pub mod bench_rekey;
pub mod bench_rekey_loss;
mod bench_rekey_udp;
pub mod bench_sas;
pub mod bench_tunnel;
pub mod calibrate;
mod calibrate_ah;
mod calibrate_load;
pub mod capture;
pub mod compare;
pub mod ctl;
pub mod hip_cli;
pub mod ike_cli;
pub mod pcap;
pub mod size_cli;
pub mod status;
pub mod validate;
/// The SA file of the pcap tools: the same parser as the node config's `[[sa]]` tables.
pub use node::safile;
pub mod wireshark;
