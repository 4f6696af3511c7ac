//! `hipsec lab compare A.json B.json`: do two calibrations of this machine agree? For each
//! cost both profiles hold, the two medians with their ranges over the rounds, the change, and
//! whether the ranges overlap (`sizing::agree`); then how many agree, and the machine's
//! interference during each.

use sizing::Profile;
use sizing::agree::{CostAgreement, agreement};
use std::path::PathBuf;

/// Arguments of `hipsec lab compare`.
#[derive(Debug, Clone, clap::Args)]
pub struct CompareArgs {
    /// The first profile.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second profile (of the same machine).
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Only the costs whose ranges do not overlap.
    #[arg(long)]
    pub disagreeing: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn load(p: &PathBuf) -> Result<Profile, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))?;
    Profile::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))
}

fn interference(p: &Profile) -> String {
    p.interference.map_or("not recorded".into(), |i| {
        format!("steal {:.1} %, other processes {:.1} %", i.steal_pct, i.other_cpu_pct)
    })
}

/// The table and its summary.
pub fn render(a: &Profile, b: &Profile, rows: &[CostAgreement], only_bad: bool) -> String {
    let mut s = format!(
        "A: {} ({}, {} rounds; {})\nB: {} ({}, {} rounds; {})\n\n",
        a.machine.date,
        a.machine.commit,
        rounds(a),
        interference(a),
        b.machine.date,
        b.machine.commit,
        rounds(b),
        interference(b)
    );
    s.push_str(
        "| cost | A median (range) | B median (range) | change | agree |\n|---|---|---|---|---|\n",
    );
    for r in rows.iter().filter(|r| !only_bad || !r.agree) {
        let range =
            |x: &sizing::profile::Spread| format!("{:.4} ({:.4}–{:.4})", x.median, x.min, x.max);
        s.push_str(&format!(
            "| {} | {} | {} | {:+.1} % | {} |\n",
            r.figure,
            range(&r.a),
            range(&r.b),
            r.change * 100.0,
            if r.agree { "yes" } else { "no" }
        ));
    }
    let n = rows.iter().filter(|r| r.agree).count();
    s.push_str(&format!(
        "\n{n} of {} costs agree (their ranges over the rounds overlap).\n",
        rows.len()
    ));
    s
}

fn rounds(p: &Profile) -> u32 {
    p.spread.values().map(|s| s.rounds).max().unwrap_or(1)
}

/// `hipsec lab compare`.
pub fn run(args: &CompareArgs) -> Result<(), String> {
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let rows = agreement(&a, &b);
    if rows.is_empty() {
        return Err("the two profiles have no cost in common".into());
    }
    if args.json {
        let shown: Vec<&CostAgreement> =
            rows.iter().filter(|r| !args.disagreeing || !r.agree).collect();
        println!("{}", serde_json::to_string_pretty(&shown).map_err(|e| e.to_string())?);
    } else {
        print!("{}", render(&a, &b, &rows, args.disagreeing));
    }
    Ok(())
}
