//! The check of the commands docs_commands.rs finds in the pages' prose: the subcommand path
//! exists (`hipsec PATH --help` answers) and each flag is one its help names.

use crate::common::BIN;
use std::process::Command;

/// `hipsec PATH --help`, cached.
pub fn help_of(
    cache: &mut std::collections::HashMap<Vec<String>, Option<String>>,
    path: &[String],
) -> Option<String> {
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let o = Command::new(BIN).args(path).arg("--help").output().ok()?;
            o.status.success().then(|| String::from_utf8_lossy(&o.stdout).into_owned())
        })
        .clone()
}

/// The subcommands a help text lists.
pub fn listed(help: &str) -> Vec<String> {
    let list = help.lines().skip_while(|l| !l.starts_with("Commands:")).skip(1);
    list.take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

pub type HelpCache = std::collections::HashMap<Vec<String>, Option<String>>;

/// What is wrong with `words` after `hipsec PATH`: a subcommand that does not exist, a flag
/// the subcommand does not take. `a/b` and `a|b` in a subcommand's place are alternatives.
pub fn inline_problems(cache: &mut HelpCache, path: &[String], words: &[&str]) -> Vec<String> {
    let Some(help) = help_of(cache, path) else {
        return vec![format!("`hipsec {}` is not a subcommand", path.join(" "))];
    };
    let Some((w, rest)) = words.split_first() else { return Vec::new() };
    let w = w.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | ',' | '.'));
    if let Some(flag) = w.strip_prefix('-') {
        let flag = flag.split('=').next().unwrap_or("");
        let mut out = Vec::new();
        let named = help.match_indices(&format!("-{flag}")).any(|(i, m)| {
            let next = help[i + m.len()..].chars().next().unwrap_or(' ');
            !(next.is_ascii_alphanumeric() || next == '-')
        });
        if !flag.is_empty() && !named {
            out.push(format!("`hipsec {}` has no -{flag}", path.join(" ")));
        }
        out.extend(inline_problems(cache, path, rest));
        return out;
    }
    let subs = listed(&help);
    let alts: Vec<&str> = w.split(['/', '|', '\\']).filter(|a| !a.is_empty()).collect();
    if !subs.is_empty() && alts.iter().all(|a| subs.iter().any(|s| s == a)) {
        return alts
            .iter()
            .flat_map(|a| {
                let mut p = path.to_vec();
                p.push(a.to_string());
                inline_problems(cache, &p, rest)
            })
            .collect();
    }
    // Where a subcommand must come, a lower-case word is one (arguments are written in
    // capitals: SOCKET, NAME, DIR).
    let word =
        |a: &&str| a.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !subs.is_empty() && alts.iter().all(word) {
        let missing: Vec<&&str> = alts.iter().filter(|a| !subs.iter().any(|s| s == *a)).collect();
        return vec![format!("`hipsec {}` has no {missing:?} (it has {subs:?})", path.join(" "))];
    }
    // A positional argument (a socket, a scenario): what follows may still be flags.
    inline_problems(cache, path, rest)
}
