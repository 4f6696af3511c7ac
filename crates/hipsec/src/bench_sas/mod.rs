//! `hipsec bench sas`: how the node scales with the number of SAs and peers.
//!
//! 1. Per packet: seal (SPD lookup + ESP) and open (SAD lookup + replay + ESP + inbound SPD) with
//!    N SAs to N/2 distinct peers (one policy per peer host), packets spread round-robin (in a scattered order, see `visit`) over
//!    every peer, beside the same with one peer, in the same run: ns per packet and the ratio.
//! 2. Install rate through the in-process control interface (`node::keying::plane`): the SAs
//!    keyed on the calling thread, one envelope to a lane that files them in its tables and
//!    engine (the lane here is a thread serving the mailbox exactly as a worker does between
//!    batches, without TUN or sockets), acknowledged.
//! 3. Memory per SA: the process's resident set before and after those installs.
//!
//! The command-line install rate is measured on a real node by the netns test
//! `crates/hipsec/tests/control_plane.rs` and reported in the issue note.
//!
//! Files: `args` (the command line), `peers` (the synthetic peers and their order), `rounds`
//! (alternating rounds and medians), `packets` (the engine's figures), `refs` (the AEAD-only
//! and bare references), `install` (install rate and memory).

mod args;
mod install;
mod packets;
mod peers;
mod refs;
mod rounds;

pub use args::BenchSasArgs;
pub(crate) use install::install;
use packets::Packets;
use refs::{Bare, Raw};
use rounds::interleaved;
use serde::Serialize;

/// One SA count's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// SAs (outbound + inbound).
    pub sas: usize,
    /// Peers.
    pub peers: usize,
    /// Seal, ns per packet (median of rounds).
    pub seal_ns: f64,
    /// Open, ns per packet.
    pub open_ns: f64,
    /// seal_ns / the 1-SA figure: the median of the ratios of rounds that alternate with the
    /// 1-SA pair's own rounds (`interleaved`).
    pub seal_ratio: f64,
    /// open_ns / the 1-SA figure, taken as `seal_ratio` is.
    pub open_ratio: f64,
    /// SAs per second through the in-process control interface (plus their policies).
    pub install_per_s: f64,
    /// Resident memory added per SA installed (bytes; engines, tables, control records).
    pub bytes_per_sa: f64,
    /// The reference: the raw AEAD sealing the same bytes with one key per peer, taken in the
    /// same order (ns per call), and its ratio to the 1-key figure: how much of the growth is
    /// the cipher's own state going cold rather than the stack's lookups.
    pub raw_seal_ns: f64,
    /// raw_seal_ns / the 1-key figure.
    pub raw_ratio: f64,
    /// The raw AEAD again, each key prefetched `ipsec::engine::PREFETCH_LEAD` calls ahead
    /// (`Aead::warm`, the engine's lead): what the cipher's own state costs when its misses are overlapped as the stack
    /// overlaps them, a floor for the stack's own ratio.
    pub raw_warm_ns: f64,
    /// raw_warm_ns / the 1-key figure (with the same prefetch).
    pub raw_warm_ratio: f64,
    /// The raw AEAD once more, prefetched the same way, with one key per SA (every outbound and
    /// inbound context the node holds, each used once per round, as the node's seal-then-open
    /// rounds use them), against two keys: the ratio a node would show if its own state took no
    /// room in the cache at all, only its ciphers' keys. The floor for `seal_ratio` and
    /// `open_ratio` with this cipher library on this machine.
    pub key_floor_ratio: f64,
    /// The bare reference against two SAs: the raw AEAD behind the least state and lookup
    /// any stack needs per SA (an SPI hash slot and a counter line; see `Bare`), one SA per
    /// SA the node holds, prefetched as the engine does. How near the key floor a stack can
    /// come here; the stack's own lines beyond these are what `seal_ratio` adds on top.
    pub bare_ratio: f64,
    /// What the growth costs in time: seal_ns minus the 1-SA seal (medians of the same
    /// alternating rounds). The 10 % target allows a tenth of the 1-SA seal.
    pub seal_extra_ns: f64,
    /// open_ns minus the 1-SA open.
    pub open_extra_ns: f64,
    /// The bare reference's ns per packet minus its two-SA figure: what the least state any
    /// stack keeps per SA costs per packet when every packet meets another SA. Comparing ns
    /// rather than ratios is fairer to a stack, whose 1-SA figure (the ratio's denominator) is
    /// larger than bare's.
    pub bare_extra_ns: f64,
    /// The stack's own work per sealed packet beside the cipher's: seal_ns − raw_seal_ns (SPD
    /// lookup, SA state, headers, counters).
    pub stack_seal_ns: f64,
    /// stack_seal_ns / the 1-SA figure.
    pub stack_seal_ratio: f64,
    /// The memory the engines ran on: `thp-heap` (glibc's heap on transparent huge pages, as
    /// the node runs), `thp-always`, or `off` (4 KiB pages; `HIPSEC_HUGE_PAGES=off`).
    pub huge_pages: &'static str,
    /// open_ns − raw_seal_ns (SAD lookup, replay window, headers, inbound SPD check).
    pub stack_open_ns: f64,
    /// stack_open_ns / the 1-SA figure.
    pub stack_open_ratio: f64,
}

/// Runs the benchmark.
pub fn measure_all(args: &BenchSasArgs) -> Result<Vec<Row>, String> {
    if args.sas.is_empty() || args.sas.iter().any(|&n| n == 0 || n > 1_000_000) {
        return Err("--sas: counts in 1..=1000000".into());
    }
    if !(28..=9000).contains(&args.size) {
        return Err(format!("--size {}: 28..=9000", args.size));
    }
    let mut rows: Vec<Row> = Vec::new();
    let (mut base, mut base_raw) = (Packets::new(1, args)?, Raw::new(1, args)?);
    let mut base_pair = Raw::warm_only(2, args)?;
    let mut base_bare = Bare::new(2, args)?;
    for &n in &args.sas {
        let peers = (n / 2).max(1);
        eprintln!("bench sas: {n} SAs ({peers} peers)");
        // One SA pair against itself: its rounds alternate with a copy of the same setup.
        let mut other = Packets::new(peers, args)?;
        let [base_seal, base_open, seal, open, seal_ratio, open_ratio] =
            interleaved(&mut base, &mut other, args.seconds)?;
        drop(other);
        let mut other_raw = Raw::new(peers, args)?;
        let [raw1, _, raw, raw_warm, raw_ratio, raw_warm_ratio] =
            interleaved(&mut base_raw, &mut other_raw, args.seconds)?;
        drop(other_raw);
        // The keys alone, one per SA the node holds (`Row::key_floor_ratio`).
        let mut all_keys = Raw::warm_only(2 * peers, args)?;
        let [_, _, _, _, _, key_floor_ratio] =
            interleaved(&mut base_pair, &mut all_keys, args.seconds)?;
        drop(all_keys);
        let mut bare = Bare::new(2 * peers, args)?;
        let [bare1, _, bare_ns, _, bare_ratio, _] =
            interleaved(&mut base_bare, &mut bare, args.seconds)?;
        drop(bare);
        let (rate, bytes) = install(n)?;
        let (base_stack_seal, base_stack_open) = (base_seal - raw1, base_open - raw1);
        rows.push(Row {
            sas: n,
            peers,
            seal_ns: seal,
            open_ns: open,
            seal_ratio,
            open_ratio,
            install_per_s: rate,
            bytes_per_sa: bytes,
            raw_seal_ns: raw,
            raw_ratio,
            raw_warm_ns: raw_warm,
            raw_warm_ratio,
            key_floor_ratio,
            bare_ratio,
            seal_extra_ns: seal - base_seal,
            open_extra_ns: open - base_open,
            bare_extra_ns: bare_ns - bare1,
            stack_seal_ns: seal - raw,
            stack_seal_ratio: (seal - raw) / base_stack_seal,
            huge_pages: node::huge_pages::current().name(),
            stack_open_ns: open - raw,
            stack_open_ratio: (open - raw) / base_stack_open,
        });
    }
    Ok(rows)
}

/// Runs and prints.
pub fn run(args: &BenchSasArgs) -> Result<(), String> {
    let rows = measure_all(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "bench sas: {}, tunnel mode, {}-byte packets spread over every peer ({} in a row); \
         {} order, SPIs: {}; ratios against 1 SA pair (medians of alternating rounds); raw: the AEAD alone, \
         one key per peer, same order; raw pf: the same with each key prefetched {} calls ahead, as \
         the engine does; keys: raw pf with one key per SA (all the contexts the node holds), \
         the floor for seal and open's ratios; bare: keys behind an SPI index and a counter line \
         per SA, the least state a stack keeps; +ns: seal, open and bare minus their 1-SA \
         figures; stack: seal or open minus raw, the work besides the cipher's; memory: {} \
         (HIPSEC_HUGE_PAGES=off for 4 KiB pages)",
        args.suite,
        args.size,
        args.burst,
        args.order,
        args.spis,
        ipsec::engine::PREFETCH_LEAD,
        node::huge_pages::current().name()
    );
    println!(
        "{:>7} {:>6} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>12} {:>9}",
        "SAs",
        "peers",
        "seal ns",
        "ratio",
        "open ns",
        "ratio",
        "raw ns",
        "ratio",
        "raw pf",
        "keys",
        "bare",
        "seal+ns",
        "open+ns",
        "bare+ns",
        "stack s",
        "stack o",
        "install SA/s",
        "B/SA"
    );
    for r in &rows {
        println!(
            "{:>7} {:>6} {:>9.1} {:>6.3} {:>9.1} {:>6.3} {:>9.1} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.1} {:>7.1} {:>7.1} {:>7.3} {:>7.3} {:>12.0} {:>9.0}",
            r.sas,
            r.peers,
            r.seal_ns,
            r.seal_ratio,
            r.open_ns,
            r.open_ratio,
            r.raw_seal_ns,
            r.raw_ratio,
            r.raw_warm_ratio,
            r.key_floor_ratio,
            r.bare_ratio,
            r.seal_extra_ns,
            r.open_extra_ns,
            r.bare_extra_ns,
            r.stack_seal_ratio,
            r.stack_open_ratio,
            r.install_per_s,
            r.bytes_per_sa
        );
    }
    Ok(())
}
