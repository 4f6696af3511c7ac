//! The `[filter]` table a scenario puts into some nodes' configs (scenario `filter-rules`), and
//! how to tell that a node predates it.

use crate::error::LabError;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Which evaluator a node's `[filter]` table selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FilterEngine {
    /// `filter::Classifier` (tuple-space search, flat in the rule count).
    Classifier,
    /// `filter::LinearFilter` (the reference, rule by rule).
    Linear,
}

impl FilterEngine {
    /// The config value (`engine = "..."`).
    pub fn as_str(self) -> &'static str {
        match self {
            FilterEngine::Classifier => "classifier",
            FilterEngine::Linear => "linear",
        }
    }
}

/// A `[filter]` table for the nodes of some hosts:
/// `[filter]` / `rules = "/path/rules.txt"` / `engine = "classifier" | "linear"`; the node applies
/// it to packets entering from and leaving to its TUN device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFilter {
    /// The rule file (filter's rule language).
    pub rules: PathBuf,
    pub engine: FilterEngine,
    /// Roles whose nodes get the table (e.g. `["h2"]`); the other nodes run without a filter.
    pub hosts: Vec<String>,
}

impl NodeFilter {
    /// The TOML table appended to a node config.
    pub fn table(&self) -> String {
        format!(
            "\n[filter]\nrules = {}\nengine = \"{}\"\n",
            toml_string(&self.rules.display().to_string()),
            self.engine.as_str()
        )
    }
}

/// A TOML basic string (quotes and backslashes escaped).
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// True if `e` says a node refused its config because it does not know the `[filter]` table
/// (e.g. `unknown field `filter``): the node predates the filter integration.
pub fn filter_unsupported(e: &LabError) -> bool {
    match e {
        LabError::Node { detail, .. } => {
            let d = detail.to_ascii_lowercase();
            d.contains("filter") && (d.contains("unknown field") || d.contains("unknown key"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_filter_table_is_the_agreed_syntax() {
        let f = NodeFilter {
            rules: PathBuf::from("/tmp/hlab-filter-1/rules-100.txt"),
            engine: FilterEngine::Linear,
            hosts: vec!["h2".into()],
        };
        assert_eq!(
            f.table(),
            "\n[filter]\nrules = \"/tmp/hlab-filter-1/rules-100.txt\"\nengine = \"linear\"\n"
        );
        let t: toml::Table = toml::from_str(&f.table()).unwrap();
        assert_eq!(t["filter"]["engine"].as_str(), Some("linear"));
        let c = NodeFilter { engine: FilterEngine::Classifier, rules: PathBuf::from("a\"b"), ..f };
        let t: toml::Table = toml::from_str(&c.table()).unwrap();
        assert_eq!(t["filter"]["rules"].as_str(), Some("a\"b"));
        assert_eq!(t["filter"]["engine"].as_str(), Some("classifier"));
    }

    #[test]
    fn unknown_field_filter_is_recognised() {
        let e = LabError::Node {
            mode: "ESP AES-128-GCM".into(),
            node: "h2 IPv4".into(),
            detail: "exited (exit status: 1); stderr:\nhipsec: config line 30: unknown field `filter`, expected one of `interface`, `network`".into(),
        };
        assert!(filter_unsupported(&e));
        let other =
            LabError::Node { mode: "m".into(), node: "n".into(), detail: "tunnel not up".into() };
        assert!(!filter_unsupported(&other));
    }
}
