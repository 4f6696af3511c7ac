//! Results folders as pages people read: each scenario folder gets its `report.html` (tables,
//! the seed's figures beside ours, charts) and a folder gets an `index.html` over every scenario
//! below it. `hipsec lab` writes them after its runs; `hipsec lab report DIR` re-renders them
//! from the folders' `report.json` files alone, without running anything.

use crate::error::LabError;
use crate::report::Report;
use crate::report::html::{self, INDEX_FILE, IndexEntry, PAGE_FILE, PageInput};
use crate::scenario::{Entry, REGISTRY};
use std::path::{Path, PathBuf};

/// How deep below a folder `render_dir` looks for `report.json` (e.g. DATE/SCENARIO/).
const MAX_DEPTH: usize = 3;

/// What a re-render wrote.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Every scenario folder found, in path order.
    pub scenarios: Vec<PathBuf>,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// The index over them.
    pub index: PathBuf,
}

fn seed_line(r: &Report) -> String {
    REGISTRY
        .iter()
        .map(Entry::info)
        .find(|i| i.name == r.scenario)
        .map_or_else(|| "seed study unknown".into(), |i| format!("seed {}: {}", i.seed, i.summary))
}

/// The seed's published figures beside ours, from the scenario that wrote `r`.
pub fn comparisons(r: &Report) -> Result<Vec<crate::report::compare::Comparison>, LabError> {
    match REGISTRY.iter().find_map(|e| match e {
        Entry::Runs(s) if s.name() == r.scenario => Some(*s),
        _ => None,
    }) {
        Some(s) => s.comparisons(r),
        None => Ok(Vec::new()),
    }
}

fn write(path: PathBuf, text: &str, files: &mut Vec<PathBuf>) -> Result<(), LabError> {
    std::fs::write(&path, text)
        .map_err(|e| LabError::io(format!("writing {}", path.display()), e))?;
    files.push(path);
    Ok(())
}

/// A report read from `json` with errors that name the file.
fn in_file(json: &Path, e: LabError) -> LabError {
    match e {
        LabError::Parse { field, reason } if !field.contains(&*json.to_string_lossy()) => {
            LabError::Parse { field: format!("{}: {field}", json.display()), reason }
        }
        other => other,
    }
}

/// Writes a scenario's `report.html` into `dir` (beside its report.json); `index_href` links
/// back to the index. Returns the page's input parts for the index.
fn scenario_page(
    r: &Report,
    dir: &Path,
    index_href: &str,
    files: &mut Vec<PathBuf>,
) -> Result<IndexParts, LabError> {
    let json = dir.join("report.json");
    let comparisons = comparisons(r).map_err(|e| in_file(&json, e))?;
    let input = PageInput {
        report: r,
        comparisons: &comparisons,
        seed_line: seed_line(r),
        index_href: index_href.into(),
    };
    write(dir.join(PAGE_FILE), &html::scenario_page(&input)?, files)?;
    let headline = html::headline_svgs(&comparisons)?.into_iter().next();
    Ok(IndexParts { comparisons, headline })
}

struct IndexParts {
    comparisons: Vec<crate::report::compare::Comparison>,
    headline: Option<(String, String, String)>,
}

/// Writes everything of a fresh run into `dir`: report.md, report.json, the SVG plots, the
/// scenario's `report.html` and an `index.html` over it.
pub fn write_scenario(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, LabError> {
    let mut files = r.write_all(dir)?;
    let parts = scenario_page(r, dir, INDEX_FILE, &mut files)?;
    let entry = entry(r, &parts, PAGE_FILE.into());
    write(dir.join(INDEX_FILE), &html::index_page(&[entry])?, &mut files)?;
    Ok(files)
}

fn entry(r: &Report, parts: &IndexParts, href: String) -> IndexEntry {
    let input = PageInput {
        report: r,
        comparisons: &parts.comparisons,
        seed_line: seed_line(r),
        index_href: String::new(),
    };
    IndexEntry::new(&input, href, parts.headline.clone())
}

/// Every folder at or below `dir` (at most 3 levels) holding a report.json.
pub fn find_reports(dir: &Path) -> Result<Vec<PathBuf>, LabError> {
    fn walk(d: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), LabError> {
        if d.join("report.json").is_file() {
            out.push(d.to_path_buf());
        }
        if depth == MAX_DEPTH {
            return Ok(());
        }
        let rd = std::fs::read_dir(d)
            .map_err(|e| LabError::io(format!("listing {}", d.display()), e))?;
        let mut subs: Vec<PathBuf> =
            rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        subs.sort();
        for s in subs {
            walk(&s, depth + 1, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out)?;
    Ok(out)
}

/// Re-renders every scenario below `dir` from its report.json (report.md, the SVG plots and
/// report.html; report.json itself is left alone) and writes `dir/index.html` over them.
pub fn render_dir(dir: &Path) -> Result<Rendered, LabError> {
    let scenarios = find_reports(dir)?;
    if scenarios.is_empty() {
        return Err(LabError::InvalidOption {
            field: "DIR".into(),
            reason: format!(
                "no report.json in {} or in its subfolders (up to {MAX_DEPTH} levels)",
                dir.display()
            ),
        });
    }
    let mut files = Vec::new();
    let mut entries = Vec::new();
    for s in &scenarios {
        let json = s.join("report.json");
        let r = Report::read(&json)?;
        let md = crate::report::markdown::render(&r);
        write(s.join("report.md"), &md, &mut files)?;
        for (name, svg) in crate::report::svg::plots(&r)? {
            write(s.join(name), &svg, &mut files)?;
        }
        let rel = s.strip_prefix(dir).unwrap_or(Path::new(""));
        let depth = rel.components().count();
        let index_href = format!("{}{INDEX_FILE}", "../".repeat(depth));
        let parts = scenario_page(&r, s, &index_href, &mut files)?;
        let href = rel.join(PAGE_FILE).to_string_lossy().into_owned();
        entries.push(entry(&r, &parts, href));
    }
    let index = dir.join(INDEX_FILE);
    write(index.clone(), &html::index_page(&entries)?, &mut files)?;
    Ok(Rendered { scenarios, files, index })
}
