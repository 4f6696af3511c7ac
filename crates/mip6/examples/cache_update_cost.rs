//! Times the home agent's Binding Update path (parse, checksum, RFC 3776 SA check, sequence
//! window, cache update moving the entry in the timer wheel) at 1,000 and at 1,000,000 cached
//! bindings. Run with `cargo run --release -p mip6 --example cache_update_cost`; `hipsec bench`
//! can do the same through `mip6::workload`.

use std::time::Instant;

use ipsec::Time;
use mip6::BindingCache;
use mip6::workload::Workload;

fn main() {
    let updates = 200_000;
    println!("entry: {} octets", BindingCache::ENTRY_BYTES);
    for entries in [1_000u32, 1_000_000] {
        let now = Time::from_secs(1_000);
        let mut w = Workload::new(entries, now);
        let batch = w.prepare_updates(updates);
        let start = Instant::now();
        let accepted = batch.iter().filter(|b| w.apply(b, Time::from_secs(1_001))).count();
        let ns = start.elapsed().as_nanos() as f64 / f64::from(updates);
        let mem = w.home_agent.cache().memory_bytes();
        println!(
            "{entries:>9} entries: {ns:7.1} ns per update ({accepted} accepted), {:.1} B per entry",
            mem as f64 / f64::from(entries)
        );
        let batch = w.prepare_updates(updates);
        let start = Instant::now();
        let accepted: usize =
            batch.chunks(32).map(|c| w.apply_batch(c, Time::from_secs(1_002))).sum();
        let ns = start.elapsed().as_nanos() as f64 / f64::from(updates);
        println!(
            "{entries:>9} entries: {ns:7.1} ns per update in batches of 32 ({accepted} accepted)"
        );
    }
}
