//! `[filter]` of the node config: which rule file, which evaluator. The rules are read and
//! compiled here once, so that a bad rule file stops the node before it starts; the data path's
//! filter stage (`crate::datapath::filter_stage`) loads them again for itself.

use filter::{Classifier, RuleSet};
use std::path::{Path, PathBuf};

/// Which evaluator runs the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterEngine {
    /// Tuple-space classifier with flow cache: cost flat in the rule count.
    Classifier,
    /// One rule after another, as seed 002's filter did (for comparisons only).
    Linear,
}

impl FilterEngine {
    /// Parses `classifier` / `linear`.
    pub fn from_name(s: &str) -> Option<FilterEngine> {
        match s {
            "classifier" => Some(FilterEngine::Classifier),
            "linear" => Some(FilterEngine::Linear),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            FilterEngine::Classifier => "classifier",
            FilterEngine::Linear => "linear",
        }
    }
}

/// The `[filter]` table of the node config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterConf {
    /// Rule file.
    pub rules: PathBuf,
    /// Evaluator.
    pub engine: FilterEngine,
}

/// Why rules could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// The rule file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// File.
        file: String,
        /// OS error.
        source: std::io::Error,
    },
    /// A rule does not parse (line and column inside).
    #[error("{file}: {err}")]
    Parse {
        /// File.
        file: String,
        /// Where and what.
        err: filter::ParseError,
    },
    /// The rule set is beyond the classifier's bounds (mask shapes, entries).
    #[error("{file}: {err}")]
    Compile {
        /// File.
        file: String,
        /// Which bound.
        err: filter::CompileError,
    },
}

/// Reads and parses a rule file.
pub fn read_rules(path: &Path) -> Result<RuleSet, FilterError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|source| FilterError::Read { file: file.clone(), source })?;
    filter::parse_rules(&text).map_err(|err| FilterError::Parse { file, err })
}

/// Reads and compiles the rule file of `conf`: Ok if the data path will be able to load it.
pub fn check(conf: &FilterConf) -> Result<(), FilterError> {
    let rules = read_rules(&conf.rules)?;
    if conf.engine == FilterEngine::Classifier {
        Classifier::compile(&rules)
            .map_err(|err| FilterError::Compile { file: conf.rules.display().to_string(), err })?;
    }
    Ok(())
}
