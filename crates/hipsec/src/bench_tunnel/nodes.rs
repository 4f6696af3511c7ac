//! The two hipsec nodes of the tunnel: their configs (the carrier, the filter), start, stop
//! and status.

use super::args::{BenchTunnelArgs, Carrier, KeyingArg};
use crate::bench_net::{Topo, stop_child};
use serde_json::Value;

/// Writes both nodes' configs for `carrier` and starts them; returns their pids.
pub(super) fn start_nodes(
    topo: &mut Topo,
    args: &BenchTunnelArgs,
    carrier: Carrier,
) -> Result<[u32; 2], String> {
    let mut pids = [0u32; 2];
    for (side, pid) in pids.iter_mut().enumerate() {
        let path = match args.keying {
            KeyingArg::Manual => topo.config(side, &args.suite, args.queues)?,
            KeyingArg::Ike => super::ike::config(topo, side, &args.suite, args.queues)?,
        };
        let path = match carrier {
            Carrier::Udp => path,
            Carrier::Raw => {
                let udp = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let raw = raw_config(&udp)?;
                let p = topo.dir.join(format!("node{side}-raw.toml"));
                std::fs::write(&p, raw).map_err(|e| format!("{}: {e}", p.display()))?;
                p
            }
        };
        let path = if args.filter_rules > 0 { with_filter(topo, &path, args)? } else { path };
        *pid = topo.start_node(side, &path)?;
    }
    if args.keying == KeyingArg::Ike {
        super::ike::wait_child(topo)?;
    }
    Ok(pids)
}

/// `config` with a `[filter]` of `--filter-rules` rules (the filter-rules lab scenario's: none
/// matches the tunnel's traffic, so every packet meets all of them and passes by default).
fn with_filter(
    topo: &Topo,
    config: &std::path::Path,
    args: &BenchTunnelArgs,
) -> Result<std::path::PathBuf, String> {
    let rules = topo.dir.join("rules.txt");
    if !rules.exists() {
        let text = lab::scenario::filter_rules::plan::rules_text(args.filter_rules as usize);
        std::fs::write(&rules, text).map_err(|e| format!("{}: {e}", rules.display()))?;
    }
    let mut t =
        std::fs::read_to_string(config).map_err(|e| format!("{}: {e}", config.display()))?;
    t += &format!("\n[filter]\nrules = \"{}\"\nengine = \"classifier\"\n", rules.display());
    let out = config.with_extension("filter.toml");
    std::fs::write(&out, t).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

/// The raw-carrier config from the ESP-in-UDP one `Topo::config` writes: the same SAs and
/// policy, `[network] transport = "raw"` with the addresses alone (no port).
fn raw_config(udp: &str) -> Result<String, String> {
    let raw =
        udp.replacen("transport = \"udp\"", "transport = \"raw\"", 1).replace(":4500\"", "\"");
    if raw == udp || raw.contains(":4500") || !raw.contains("transport = \"raw\"") {
        return Err("bench tunnel: the node config has no [network] to make raw".into());
    }
    Ok(raw)
}

/// Stops the nodes `pids` (SIGTERM, as `Topo` does on drop).
pub(super) fn stop_nodes(topo: &mut Topo, pids: [u32; 2]) {
    for pid in pids {
        if let Some(i) = topo.children.iter().position(|c| c.id() == pid) {
            let mut c = topo.children.remove(i);
            stop_child(&mut c);
        }
    }
}

/// Both nodes' status (the control socket's JSON; Null where it did not answer).
pub(super) fn statuses(topo: &Topo) -> [Value; 2] {
    [0, 1].map(|i| {
        node::status(&topo.sock(i))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw config keeps everything but the carrier: addresses without the UDP port.
    #[test]
    fn raw_config_from_udp() {
        let udp = "[network]\ntransport = \"udp\"\nlocal = \"192.0.2.1:4500\"\n\
                   peer = \"192.0.2.2:4500\"\n\n[[sa]]\nsrc = \"192.0.2.1\"\n";
        let raw = raw_config(udp).unwrap_or_default();
        assert_eq!(
            raw,
            "[network]\ntransport = \"raw\"\nlocal = \"192.0.2.1\"\npeer = \"192.0.2.2\"\n\n\
             [[sa]]\nsrc = \"192.0.2.1\"\n"
        );
        assert!(raw_config("[interface]\n").is_err());
    }
}
