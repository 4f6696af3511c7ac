//! The run's record: every sample, per-case summaries and CPU, the iperf3 cross-check, pending
//! modes, the seed's figures and a machine description ([`model`]); written as JSON, Markdown and SVG here, as
//! HTML pages by [`html`] (through `crate::pages`, which knows each scenario's seed figures).

pub mod chart;
pub mod compare;
pub mod html;
pub mod markdown;
pub mod model;
pub mod number;
pub mod svg;

use crate::error::LabError;
pub use model::{
    Case, CaseCpu, Chart, CrossCheck, Machine, Pending, Report, SCHEMA, Section, SeedFigures,
    mean_rtt,
};
use std::path::{Path, PathBuf};

impl Report {
    /// Writes report.md, report.json and the SVG plots into `dir`; returns the files.
    /// (`crate::pages::write_scenario` adds the HTML pages.)
    pub fn write_all(&self, dir: &Path) -> Result<Vec<PathBuf>, LabError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        let mut files = Vec::new();
        let mut put = |name: &str, text: &str| -> Result<(), LabError> {
            let p = dir.join(name);
            std::fs::write(&p, text)
                .map_err(|e| LabError::io(format!("writing {}", p.display()), e))?;
            files.push(p);
            Ok(())
        };
        put("report.md", &markdown::render(self))?;
        put("report.json", &self.to_json()?)?;
        for (name, text) in &svg::plots(self)? {
            put(name, text)?;
        }
        Ok(files)
    }
}
