//! What every subcommand's `--help` ends with: a working example where its own text has none,
//! and the doc page that explains it, so that the help teaches rather than lists flags. One
//! table for all of them, which `crates/hipsec/tests/help_examples.rs` reads back through
//! `--help` and runs where it can.

use clap::Command;

/// `(subcommand path, example lines or "" when the command's own help has them, doc page)`.
/// Example lines name the control socket of docs/node-example.toml and `examples/`; the files they name are described beside them.
const PAGES: &[(&str, &str, &str)] = &[
    ("run", "", "docs/getting-started.md"),
    ("status", "", "docs/troubleshooting.md"),
    ("lab", "", "docs/lab.md"),
    ("lab list", "hipsec lab list", "docs/lab.md"),
    ("lab run", "hipsec lab run hip-bex --quick --out results/", "docs/lab.md"),
    ("lab report", "", "docs/lab.md"),
    ("lab calibrate", "hipsec lab calibrate --out profile.json", "docs/sizing.md"),
    ("lab validate", "hipsec lab validate --profile profile.json --repeat 3", "docs/sizing.md"),
    (
        "lab compare",
        "hipsec lab compare morning.json afternoon.json   # two calibrations of this machine",
        "docs/sizing.md",
    ),
    ("reload-filter", "hipsec reload-filter /run/hipsec-node.sock", "docs/node-example.toml"),
    ("sa", "hipsec sa list /run/hipsec-node.sock", "docs/sa-file.md"),
    ("sa add", "", "docs/sa-file.md"),
    (
        "sa update",
        "hipsec sa update /run/hipsec-node.sock --file spoke7.toml   # new keys, same SPIs",
        "docs/sa-file.md",
    ),
    (
        "sa del",
        "hipsec sa del /run/hipsec-node.sock --direction out --spi 0x1008",
        "docs/sa-file.md",
    ),
    (
        "sa list",
        "hipsec sa list /run/hipsec-node.sock\n  hipsec sa list --json /run/hipsec-node.sock | jq '.sas[].spi'",
        "docs/sa-file.md",
    ),
    ("sa rekey", "", "docs/sa-file.md"),
    ("policy", "hipsec policy list /run/hipsec-node.sock", "docs/sa-file.md"),
    ("policy add", "", "docs/sa-file.md"),
    (
        "policy update",
        "hipsec policy update /run/hipsec-node.sock id=2 src=10.0.0.0/24 dst=10.7.0.0/24 action=discard",
        "docs/sa-file.md",
    ),
    ("policy del", "hipsec policy del /run/hipsec-node.sock 2", "docs/sa-file.md"),
    ("policy list", "hipsec policy list /run/hipsec-node.sock", "docs/sa-file.md"),
    ("monitor", "", "docs/sa-file.md"),
    ("guard", "", "docs/restarts.md"),
    ("guard show", "hipsec guard show", "docs/restarts.md"),
    ("guard remove", "hipsec guard remove --interface hipsec0", "docs/restarts.md"),
    ("pcap", "hipsec pcap wireshark-keys --sa sa.toml", "docs/sa-file.md"),
    ("pcap seal", "", "docs/sa-file.md"),
    ("pcap open", "", "docs/sa-file.md"),
    ("pcap wireshark-keys", "", "docs/sa-file.md"),
    ("bench", "hipsec bench esp --suite aes128gcm", "docs/architecture.md"),
    ("bench esp", "", "docs/architecture.md"),
    ("bench filter", "", "docs/architecture.md"),
    ("bench tunnel", "", "docs/architecture.md"),
    ("bench sas", "", "docs/architecture.md"),
    ("bench ike", "", "docs/ike.md"),
    ("bench hip", "", "docs/hip.md"),
    ("bench rekey", "", "docs/sa-file.md"),
    ("initiate", "hipsec initiate /run/hipsec-node.sock site-b", "docs/ike.md"),
    (
        "terminate",
        "hipsec terminate /run/hipsec-node.sock site-b                # IKE SA and CHILD SAs\n  hipsec terminate --child net /run/hipsec-node.sock site-b    # one CHILD SA",
        "docs/ike.md",
    ),
    (
        "rekey",
        "hipsec rekey /run/hipsec-node.sock site-b          # the CHILD SA\n  hipsec rekey --ike /run/hipsec-node.sock site-b    # the IKE SA",
        "docs/ike.md",
    ),
    (
        "ike",
        "hipsec ike wireshark-keys /run/hipsec-node.sock > ~/.config/wireshark/ikev2_decryption_table",
        "docs/ike.md",
    ),
    ("ike wireshark-keys", "", "docs/ike.md"),
    (
        "hip",
        "hipsec hip rekey /run/hipsec-node.sock 2001:22:aaf2:d77d:f996:f6a1:b2df:73d7",
        "docs/hip.md",
    ),
    (
        "hip close",
        "hipsec hip close /run/hipsec-node.sock 2001:22:aaf2:d77d:f996:f6a1:b2df:73d7",
        "docs/hip.md",
    ),
    (
        "hip rekey",
        "hipsec hip rekey /run/hipsec-node.sock 2001:22:aaf2:d77d:f996:f6a1:b2df:73d7",
        "docs/hip.md",
    ),
    ("hip wireshark-keys", "", "docs/hip.md"),
    ("keygen", "", "docs/hip.md"),
    ("size", "", "docs/sizing.md"),
];

/// The text after a command's help: its example (if the table gives one) and its doc page.
fn after(example: &str, page: &str) -> String {
    let mut s = String::new();
    if !example.is_empty() {
        s.push_str("Example:\n  ");
        s.push_str(example);
        s.push_str("\n\n");
    }
    s.push_str("More: ");
    s.push_str(page);
    s.push_str(" (in the hipsec repository)");
    s
}

/// `cmd` with every subcommand of [`PAGES`] given its example and page.
pub(crate) fn annotate(mut cmd: Command) -> Command {
    for (path, example, page) in PAGES {
        let parts: Vec<&str> = path.split(' ').collect();
        cmd = at(cmd, &parts, &after(example, page));
    }
    cmd
}

fn at(cmd: Command, path: &[&str], text: &str) -> Command {
    match path {
        [] => cmd.after_help(text.to_string()),
        [first, rest @ ..] => {
            let (first, rest) = (first.to_string(), rest.to_vec());
            let text = text.to_string();
            cmd.mut_subcommand(first, move |c| at(c, &rest, &text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The control socket of docs/node-example.toml and `examples/`.
    const SOCKET: &str = "/run/hipsec-node.sock";

    #[test]
    fn every_example_uses_the_documented_socket() {
        for (path, example, _) in PAGES {
            if example.contains(".sock") {
                assert!(example.contains(SOCKET), "{path}: {example}");
            }
        }
    }
}
