//! The command line's subcommands, a module per group: what each takes, its `--help`, and the
//! call into the library that does the work.

pub(crate) mod bench;
pub(crate) mod control;
pub(crate) mod guard;
pub(crate) mod help;
pub(crate) mod keygen;
pub(crate) mod lab;
pub(crate) mod pcap;
mod spi;
