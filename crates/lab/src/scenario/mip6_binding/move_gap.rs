//! The delivery gap when the mobile node moves under traffic: a paced UDP stream from the
//! correspondent to the home address (`hipsec-traffic paced-send`, one datagram per interval
//! with its sequence number and send time), the mobile node's care-of address changed under it
//! (the new one added, the old one deleted), and what the receiver on the mobile node saw.
//!
//! Between the deletion and the home agent moving its tunnel, datagrams go to an address that
//! is gone: the mobile node notices the change when the kernel announces it (rtnetlink; a
//! once-a-second read backs it up, docs/mip6.md),
//! sends a Binding Update from the new address (RFC 6275 §11.5.1, §11.7.1), and the home agent
//! moves the tunnel's endpoint when it accepts it (§10.3.1). The gap is that time plus the
//! Binding Update's way to the home agent.
//!
//! A run moves several times, back and forth between the two care-of addresses, each move
//! under a stream of its own, and reports each move and the median.

use super::forward::{CARE_OF, CARE_OF_2, Forwarding, HOME};
use crate::error::LabError;
use crate::traffic::TrafficBin;
use crate::traffic::paced::{SendResult, SinkResult};
use crate::traffic::stats::median;
use serde_json::Value;
use std::net::{Ipv6Addr, SocketAddr};
use std::time::Duration;

/// The paced stream's UDP port on the mobile node.
pub const PORT: u16 = 9000;
/// The receiver's head start before the sender begins, ms.
pub const SINK_START_MS: u64 = 300;
/// How long the receiver listens after the sender's last datagram was due, ms.
pub const SINK_TAIL_MS: u64 = 700;

/// What the move cost the stream.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MoveGap {
    /// The care-of address before the move and after it.
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
    /// µs between datagrams.
    pub interval_us: u64,
    pub sent: u64,
    /// Sends the correspondent's kernel refused.
    pub send_errors: u64,
    /// Distinct datagrams delivered.
    pub delivered: u64,
    pub lost: u64,
    pub duplicates: u64,
    /// The longest time without a delivery, ms (from the first send to the last send, so that
    /// a stream that never came back counts to its end).
    pub longest_gap_ms: f64,
    /// Where that gap began, ms after the old address was deleted (negative: before).
    pub longest_gap_from_ms: f64,
    /// From adding the new address to the old one's deletion having returned, ms.
    pub add_to_delete_ms: f64,
    /// From the deletion to the first delivery of a datagram sent after it — one that can only
    /// have come to the new care-of address, ms (None: none came).
    pub first_after_move_ms: Option<f64>,
    /// Datagrams sent after the deletion that were delivered.
    pub delivered_after_move: u64,
    /// Registrations of the mobile node during the stream (Binding Acknowledgements that
    /// registered it: the re-registration from the new address).
    pub reregistrations: u64,
    /// Moves the mobile node noticed, and tunnel moves the home agent made.
    pub mn_moves: u64,
    pub ha_moved: u64,
    /// Binding Updates the mobile node sent during the stream.
    pub bu_sent: u64,
}

/// The figures of `sent` and `got`, with the new address added at `added_us` and the old one
/// gone at `deleted_us` (µs since the epoch); the node counters stay 0 (see [`run`]).
pub fn summarise(sent: &SendResult, got: &SinkResult, added_us: u64, deleted_us: u64) -> MoveGap {
    let mut seqs: Vec<u64> = got.arrivals.iter().map(|a| a.seq).collect();
    seqs.sort_unstable();
    let all = seqs.len() as u64;
    seqs.dedup();
    // Sequence numbers beyond what was sent are not this stream's.
    let delivered = seqs.iter().filter(|&&s| s < sent.sent + sent.errors).count() as u64;
    let mut times: Vec<u64> = got.arrivals.iter().map(|a| a.recv_us).collect();
    times.sort_unstable();
    let mut points = vec![sent.first_us];
    points.extend(times.iter().copied().filter(|&t| t >= sent.first_us));
    if points.last().is_some_and(|&t| t < sent.last_us) {
        points.push(sent.last_us);
    }
    let (gap, from) = points
        .windows(2)
        .map(|w| (w[1].saturating_sub(w[0]), w[0]))
        .max_by_key(|&(g, _)| g)
        .unwrap_or((0, sent.first_us));
    let after: Vec<u64> =
        got.arrivals.iter().filter(|a| a.sent_us > deleted_us).map(|a| a.recv_us).collect();
    let ms = |us: i128| us as f64 / 1e3;
    MoveGap {
        from: String::new(),
        to: String::new(),
        interval_us: sent.interval_us,
        sent: sent.sent,
        send_errors: sent.errors,
        delivered,
        lost: (sent.sent + sent.errors).saturating_sub(delivered),
        duplicates: all - seqs.len() as u64,
        longest_gap_ms: ms(i128::from(gap)),
        longest_gap_from_ms: ms(i128::from(from) - i128::from(deleted_us)),
        add_to_delete_ms: ms(i128::from(deleted_us) - i128::from(added_us)),
        first_after_move_ms: after
            .iter()
            .min()
            .map(|&t| ms(i128::from(t) - i128::from(deleted_us))),
        delivered_after_move: after.len() as u64,
        reregistrations: 0,
        mn_moves: 0,
        ha_moved: 0,
        bu_sent: 0,
    }
}

/// `v`'s counter at `path` (0 if absent).
fn counter(v: &Value, path: &[&str]) -> u64 {
    path.iter().fold(v, |v, k| &v[*k]).as_u64().unwrap_or(0)
}

fn parse<T: serde::de::DeserializeOwned>(out: &str, what: &str) -> Result<T, LabError> {
    serde_json::from_str(out.trim()).map_err(|e| LabError::parse(what, e.to_string()))
}

/// `moves` moves in `fw` (nodes registered at the first care-of address), alternately to the
/// second care-of address and back, each under its own paced stream (see [`run`]); after each,
/// the home agent's tunnel is at the new address before the next begins.
pub fn run_moves(
    fw: &mut Forwarding,
    moves: usize,
    (lead_ms, after_ms, interval_us): (u64, u64, u64),
    bin: &TrafficBin,
) -> Result<Vec<MoveGap>, LabError> {
    let mut at = CARE_OF;
    let mut out = Vec::with_capacity(moves);
    for _ in 0..moves {
        if crate::sys::interrupted() {
            return Err(LabError::Interrupted);
        }
        let to = if at == CARE_OF { CARE_OF_2 } else { CARE_OF };
        out.push(run(fw, (at, to), lead_ms, after_ms, interval_us, bin)?);
        let want = to.to_string();
        fw.wait_status("ha", "tunnel at the new care-of address", |s| {
            s["home_agent"]["forwarding"]["tunnels"][0]["care_of_address"] == want.as_str()
        })?;
        at = to;
    }
    Ok(out)
}

/// The median over `moves` of the longest time without delivery, and of the time from the
/// deletion to the first delivery at the new address (moves where none came are left out of
/// the second).
pub fn medians(moves: &[MoveGap]) -> (Option<f64>, Option<f64>) {
    let firsts: Vec<f64> = moves.iter().filter_map(|m| m.first_after_move_ms).collect();
    (medians_of(moves, |m| m.longest_gap_ms), median(&firsts))
}

/// The median of `f` over `moves`.
pub fn medians_of(moves: &[MoveGap], f: impl Fn(&MoveGap) -> f64) -> Option<f64> {
    median(&moves.iter().map(f).collect::<Vec<_>>())
}

/// Runs the paced stream (a datagram every `interval_us`) and one move in `fw` from care-of
/// address `from` to `to` (nodes registered at `from`): `lead_ms` of stream, the move,
/// `after_ms` more.
pub fn run(
    fw: &Forwarding,
    (from, to): (Ipv6Addr, Ipv6Addr),
    lead_ms: u64,
    after_ms: u64,
    interval_us: u64,
    bin: &TrafficBin,
) -> Result<MoveGap, LabError> {
    let interval = interval_us.max(1);
    let count = ((lead_ms + after_ms) * 1000 / interval).max(1);
    let mn0 = fw.status("mn")?;
    let ha0 = fw.status("ha")?;
    let (prog, lead) = bin.command();
    let with = |more: Vec<String>| lead.iter().cloned().chain(more).collect::<Vec<String>>();
    let sink_ms = SINK_START_MS + lead_ms + after_ms + SINK_TAIL_MS;
    let listen = SocketAddr::new(std::net::Ipv6Addr::UNSPECIFIED.into(), PORT).to_string();
    let sink = fw.topo.spawn(
        "mn",
        &prog,
        &with(vec![
            "paced-sink".into(),
            "--listen".into(),
            listen,
            "--duration-ms".into(),
            sink_ms.to_string(),
        ]),
    )?;
    std::thread::sleep(Duration::from_millis(SINK_START_MS));
    let sender = fw.topo.spawn(
        "cn",
        &prog,
        &with(vec![
            "paced-send".into(),
            "--to".into(),
            SocketAddr::new(HOME.into(), PORT).to_string(),
            "--interval-us".into(),
            interval.to_string(),
            "--count".into(),
            count.to_string(),
        ]),
    )?;
    std::thread::sleep(Duration::from_millis(lead_ms));
    let (added, deleted) = fw.change_care_of(from, to)?;
    let sent: SendResult = parse(&sender.wait_output()?, "paced-send output")?;
    let got: SinkResult = parse(&sink.wait_output()?, "paced-sink output")?;
    let (mn1, ha1) = (fw.status("mn")?, fw.status("ha")?);
    let mut g = summarise(&sent, &got, added, deleted);
    (g.from, g.to) = (from.to_string(), to.to_string());
    let d = |a: &Value, b: &Value, p: &[&str]| counter(b, p).saturating_sub(counter(a, p));
    g.reregistrations = d(&mn0, &mn1, &["mobile_node", "counters", "registered"]);
    g.mn_moves = d(&mn0, &mn1, &["mobile_node", "counters", "moves"]);
    g.bu_sent = d(&mn0, &mn1, &["mobile_node", "counters", "bu_sent"]);
    g.ha_moved = d(&ha0, &ha1, &["home_agent", "forwarding", "counters", "moved"]);
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::paced::Arrival;

    #[test]
    fn a_gap_around_the_move_is_measured_from_the_deletion() {
        // 100 datagrams at 1 ms from t = 1 s; 40..=69 lost around a deletion at 1.040 s;
        // one duplicate; received 200 µs after sending.
        let t0 = 1_000_000;
        let sent = SendResult {
            sent: 100,
            errors: 0,
            first_us: t0,
            last_us: t0 + 99_000,
            interval_us: 1000,
        };
        let mut arrivals: Vec<Arrival> = (0..100u64)
            .filter(|s| !(40..70).contains(s))
            .map(|s| Arrival { seq: s, sent_us: t0 + s * 1000, recv_us: t0 + s * 1000 + 200 })
            .collect();
        arrivals.push(arrivals[0]);
        let got = SinkResult { arrivals, malformed: 0 };
        let g = summarise(&sent, &got, t0 + 39_500, t0 + 40_000);
        assert_eq!((g.delivered, g.lost, g.duplicates), (70, 30, 1));
        assert!((g.longest_gap_ms - 31.0).abs() < 1e-9, "{g:?}");
        assert!((g.longest_gap_from_ms - -0.8).abs() < 1e-9, "{g:?}");
        assert_eq!(g.first_after_move_ms, Some(30.2));
        assert_eq!(g.delivered_after_move, 30);
        assert!((g.add_to_delete_ms - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_stream_that_never_comes_back_counts_to_its_end() {
        let sent =
            SendResult { sent: 10, errors: 0, first_us: 0, last_us: 9000, interval_us: 1000 };
        let got = SinkResult {
            arrivals: vec![Arrival { seq: 0, sent_us: 0, recv_us: 100 }],
            malformed: 0,
        };
        let g = summarise(&sent, &got, 0, 500);
        assert_eq!((g.delivered, g.lost), (1, 9));
        assert!((g.longest_gap_ms - 8.9).abs() < 1e-9);
        assert_eq!(g.first_after_move_ms, None);
        let none = summarise(&sent, &SinkResult { arrivals: vec![], malformed: 0 }, 0, 0);
        assert_eq!((none.delivered, none.longest_gap_ms), (0, 9.0));
    }
}
