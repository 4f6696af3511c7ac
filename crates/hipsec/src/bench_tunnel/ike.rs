//! `--keying ike`: the two nodes key the tunnel with IKEv2 (RFC 7296; PSK, node 0 initiating
//! at start) instead of SAs in their configs, so the data path carries an IKE-made CHILD SA —
//! with several lanes, its outbound SA on every lane sharing one sequence counter
//! (`node::keying::plane::EVERY_LANE`).

use crate::bench_net::{TUN, Topo};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The ESP proposal (swanctl syntax) of a `--suite`.
fn esp_proposal(suite: &str) -> Result<&'static str, String> {
    Ok(match suite {
        "aes128gcm" => "aes128gcm16",
        "aes256gcm" => "aes256gcm16",
        "chacha20poly1305" => "chacha20poly1305",
        "aes128cbc-sha256" => "aes128-sha256",
        other => {
            return Err(format!(
                "--suite {other:?}: use aes128gcm, aes256gcm, chacha20poly1305 or aes128cbc-sha256"
            ));
        }
    })
}

/// Node `side`'s config: the TUN device and carrier of `Topo::config`, one connection.
pub(super) fn config(
    topo: &Topo,
    side: usize,
    suite: &str,
    queues: u32,
) -> Result<PathBuf, String> {
    let addr = |s: usize| ["192.0.2.1", "192.0.2.2"][s];
    let (me, peer) = (side, 1 - side);
    let start = if side == 0 { "start" } else { "none" };
    let t = format!(
        "[interface]\nname = \"{TUN}\"\nmtu = 1500\nqueues = {queues}\n\
         addresses = [\"10.99.0.{}/24\"]\n\n\
         [network]\ntransport = \"udp\"\nlocal = \"{}:4500\"\n\n\
         [control]\nsocket = \"{}\"\n\n[log]\nlevel = \"warn\"\n\n\
         [[connection]]\nname = \"bench\"\nremote_addrs = \"{}\"\nencap = true\n\
         proposals = [\"aes128gcm16-prfsha256-x25519\"]\n\
         [connection.local]\nauth = \"psk\"\nid = \"node{me}.bench\"\n\
         [connection.remote]\nauth = \"psk\"\nid = \"node{peer}.bench\"\n\
         [connection.children.net]\nlocal_ts = [\"10.99.0.{}/32\"]\nremote_ts = [\"10.99.0.{}/32\"]\n\
         esp_proposals = [\"{}\"]\nstart_action = \"{start}\"\n\n\
         [secrets.bench]\nid = [\"node0.bench\", \"node1.bench\"]\nsecret = \"bench tunnel\"\n",
        me + 1,
        addr(me),
        topo.sock(side).display(),
        addr(peer),
        me + 1,
        peer + 1,
        esp_proposal(suite)?,
    );
    let path = topo.dir.join(format!("node{side}-ike.toml"));
    std::fs::write(&path, t).map_err(|e| format!("{}: {e}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Waits until both nodes have the CHILD SA in their data path.
pub(super) fn wait_child(topo: &Topo) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let up = [0, 1].iter().all(|&i| {
            node::status(&topo.sock(i))
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v["ike"]["ike_sas"][0]["children"].as_array().map(|c| !c.is_empty()))
                .unwrap_or(false)
        });
        if up {
            return Ok(());
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(topo.dir.join("node0.log")).unwrap_or_default();
            return Err(format!("bench tunnel: no CHILD SA within 15 s; node 0 log:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
