//! The seed's published numbers (binding-cache entries created per second with ESP-AES and
//! ESP-3DES, seed 000's Mobile IPv6 table) beside ours, for the HTML report's headline chart.

use super::plan::Results;
use crate::error::LabError;
use crate::report::Report;
use crate::report::compare::Comparison;

/// The chart both figures go in.
pub const CHART: &str = "Binding-cache entries created per second (ESP-protected BUs)";
const WHY: &str = "one core of today's x86 with AES-NI for the home agent, a second for the generator, against a 4-way 440 MHz PA-RISC fed by one instrumented mobile node over 100Base-T";

/// (seed key, our suite, label).
pub const PAIRS: [(&str, &str, &str); 2] = [
    ("esp_aes", "aes128cbc-sha1", "ESP-AES (ours: AES-128-CBC + HMAC-SHA-1)"),
    ("esp_3des", "3des-sha1", "ESP-3DES (ours: 3DES-CBC + HMAC-SHA-1)"),
];

/// Every published figure of the seed that this report measured (or should have).
pub fn comparisons(r: &Report) -> Result<Vec<Comparison>, LabError> {
    let Some(res) = r.extra_as::<Results>()? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (key, suite, label) in PAIRS {
        let Some(seed) = r.seed_num(&["binding_cache_entries_per_s", key]) else { continue };
        let ours = res.suites.iter().find(|s| s.suite == suite).map(|s| s.created_per_s);
        out.push(Comparison::new(CHART, label, "entries/s", seed).ours(ours).why(WHY));
    }
    Ok(out)
}
