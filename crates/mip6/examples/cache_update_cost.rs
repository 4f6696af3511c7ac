//! Times the home agent's Binding Update path (parse, checksum, RFC 3776 SA check, sequence
//! window, cache update moving the entry in the timer wheel) at 1,000 and at 1,000,000 cached
//! bindings. Run with `cargo run --release -p mip6 --example cache_update_cost`; `hipsec bench`
//! can do the same through `mip6::workload`.

use std::time::Instant;

use ipsec::Time;
use mip6::BindingCache;
use mip6::workload::Workload;

fn main() {
    // Six rounds of 200,000 updates per mode: at 1,000,000 entries that is enough to include a
    // rebuild of the wheel (after about as many updates as entries), so the figure is the
    // amortized cost, not the cost between rebuilds.
    let (rounds, per_round) = (6u32, 200_000u32);
    let updates = f64::from(rounds * per_round);
    println!("entry: {} octets with its key", BindingCache::ENTRY_BYTES);
    for entries in [1_000u32, 1_000_000] {
        let now = Time::from_secs(1_000);
        let mut w = Workload::new(entries, now);
        let mem = w.home_agent.cache().memory_bytes();
        let (mut single, mut batched) = (0.0, 0.0);
        let mut accepted = 0;
        for r in 0..rounds {
            let t = Time::from_secs(1_001 + u64::from(r));
            let batch = w.prepare_updates(per_round);
            let start = Instant::now();
            accepted += batch.iter().filter(|b| w.apply(b, t)).count();
            single += start.elapsed().as_nanos() as f64;
            let batch = w.prepare_updates(per_round);
            let start = Instant::now();
            accepted += batch.chunks(32).map(|c| w.apply_batch(c, t)).sum::<usize>();
            batched += start.elapsed().as_nanos() as f64;
        }
        let (mentions, rebuilds) = w.home_agent.cache().wheel_mentions();
        println!(
            "{entries:>9} entries: {:7.1} ns per update one by one, {:7.1} ns in batches of 32 \
             ({accepted} of {} accepted; wheel rebuilt {rebuilds} times, {mentions} mentions \
             now); {:.1} B per entry after registration",
            single / updates,
            batched / updates,
            2.0 * updates,
            mem as f64 / f64::from(entries),
        );
    }
}
