//! docs/troubleshooting.md explains every drop counter a user sees: each `ipsec::DropReason`
//! and each of the node's own drop counters has a row of its own, so a reason added to the
//! engine or the node without a docs entry fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

fn page() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/troubleshooting.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The table rows of the page, by the counter named in their first cell.
fn rows(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), l.to_string()))
        })
        .collect()
}

#[test]
fn every_drop_reason_has_a_row_that_says_what_to_check() {
    let text = page();
    let rows = rows(&text);
    let mut missing = Vec::new();
    for r in ipsec::DropReason::ALL {
        match rows.iter().find(|(n, _)| n == r.name()) {
            // Three cells: the name, what it means, what to check; neither left empty.
            Some((_, line)) => {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                assert!(
                    cells.len() >= 5 && !cells[2].is_empty() && !cells[3].is_empty(),
                    "{}: the row needs a meaning and a check: {line}",
                    r.name()
                );
            }
            None => missing.push(r.name()),
        }
    }
    assert!(
        missing.is_empty(),
        "DropReasons without a row in docs/troubleshooting.md: {missing:?}"
    );
}

/// The node's counters that count a packet not delivered (the rest count work done).
const NODE_DROPS: &[&str] = &[
    "runts",
    "ike_dropped",
    "filter_blocked",
    "icmp_too_big",
    "bypass_unforwarded",
    "held_expired",
    "unsendable",
    "send_errors",
    "tun_write_errors",
    "tun_read_errors",
];

/// Counters of the node that count work, not losses; anything else must be in NODE_DROPS.
const NODE_WORK: &[&str] = &[
    "tun_rx",
    "tun_tx",
    "net_rx",
    "net_tx",
    "punted",
    "nat_rebinds",
    "keepalives",
    "bypass_forwarded",
    "held",
    "held_sent",
    "batches",
    "tun_reads",
    "tun_write_batches",
    "tun_writes",
    "send_syscalls",
    "recv_syscalls",
];

#[test]
fn every_node_drop_counter_has_a_row() {
    let rows = rows(&page());
    for (name, _) in node::datapath::counters::NodeCounters::HELP {
        assert!(
            NODE_DROPS.contains(name) || NODE_WORK.contains(name),
            "new node counter {name}: a drop (add it to NODE_DROPS and the page) or work?"
        );
    }
    let missing: Vec<_> =
        NODE_DROPS.iter().filter(|n| !rows.iter().any(|(r, _)| r == *n)).collect();
    assert!(missing.is_empty(), "node drop counters without a row: {missing:?}");
}

#[test]
fn the_page_explains_the_no_policy_drops_of_a_working_tunnel() {
    let text = page();
    assert!(text.contains("working tunnel shows one or two `no_policy`"), "section missing");
    assert!(text.contains("router solicitation"), "the cause is named");
}

/// Every event name the node's code logs (the last string literal of each `tracing` event
/// macro in crates/node/src, and the names chosen at run time listed below) is explained in
/// docs/logs.md's tables.
#[test]
fn every_log_event_is_explained_in_the_logs_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let logs = std::fs::read_to_string(root.join("docs/logs.md")).unwrap();
    let mut names = std::collections::BTreeSet::new();
    let mut stack = vec![root.join("crates/node/src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                names.extend(event_names(&std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    // Chosen at run time: (level, name) pairs picked before the macro.
    names.extend(
        ["ike-failed", "ike-sa-down", "sa-soft-expired", "sa-hard-expired", "virtual-ip", "lease"]
            .map(String::from),
    );
    names.extend(["binding-created", "binding-updated", "binding-deleted"].map(String::from));
    assert!(names.len() > 60, "the scan found too few events: {names:?}");
    let missing: Vec<&String> =
        names.iter().filter(|n| !logs.contains(&format!("`{n}`"))).collect();
    assert!(missing.is_empty(), "docs/logs.md does not explain {missing:?}");
}

/// The event names of one source file: each `tracing::LEVEL!(... "name")` or `event_at!`.
fn event_names(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let starts = ["tracing::debug!(", "tracing::info!(", "tracing::warn!(", "tracing::error!("];
    let mut rest = src;
    while let Some(at) = starts.iter().filter_map(|s| rest.find(s).map(|i| i + s.len())).min() {
        let body = &rest[at..];
        // To the macro's closing parenthesis (string literals may hold parentheses).
        let (mut depth, mut in_str, mut end) = (1, false, body.len());
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if in_str => {
                    chars.next();
                }
                '"' => in_str = !in_str,
                '(' if !in_str => depth += 1,
                ')' if !in_str => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let call = body[..end].trim_end().trim_end_matches(',');
        if let Some(lit) = call.strip_suffix('"').and_then(|c| c.rsplit_once('"')).map(|x| x.1) {
            if !lit.is_empty()
                && lit.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
            {
                out.push(lit.to_string());
            }
        }
        rest = &body[end..];
    }
    out
}
