//! The sweep over a plan's points: set up each point's filter (a filtered node pair, or an nft
//! ruleset loaded into h2 beside the unfiltered tunnel), run the tests, tear the filter down.

use super::nft;
use super::plan::{
    FILTER_HOST, Implementation, NAME, NFT_LOAD_TIMEOUT, Plan, Point, TUN_DEVICES, planned_point_s,
    rules_text,
};
use crate::error::LabError;
use crate::node::{
    EspSuite, FilterEngine, Mode, ModeGuard, ModeHook, NodeFilter, filter_unsupported,
};
use crate::report::{Case, CaseCpu, mean_rtt};
use crate::scenario::common::{Progress, RunOptions};
use crate::topology::{Family, Topology};
use crate::traffic::runner::{Target, measure};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// What one point produced besides its cases.
#[derive(Debug, Default)]
pub(super) struct PointInfo {
    pub(super) load_s: Option<f64>,
    pub(super) nft: Option<(usize, usize, nft::Exactness)>,
    pub(super) pending: Option<String>,
}

/// Runs `program args` to completion with a time limit; kills it (by its pid) on expiry.
fn run_bounded(program: &str, args: &[&str], limit: Duration) -> Result<String, LabError> {
    let cmd = format!("{program} {}", args.join(" "));
    let mut c = Command::new(program);
    c.args(args);
    let (child, pid) = crate::topology::spawn_registered(c, &cmd)?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let res = rx.recv_timeout(limit);
    if res.is_err() {
        crate::sys::kill_pid(pid);
    }
    crate::sys::registry().pids.remove(&pid);
    let out = match res {
        Ok(r) => r.map_err(|e| LabError::io(cmd.clone(), e))?,
        Err(_) => {
            return Err(LabError::Command {
                cmd,
                status: "timed out".into(),
                stderr: format!("no result after {} s", limit.as_secs()),
            });
        }
    };
    if !out.status.success() {
        return Err(LabError::Command {
            cmd,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().chars().take(2000).collect(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Loads a translation into namespace `ns` (`nft -f` of `file`, then of each element batch,
/// written beside it); returns the seconds all `nft -f` runs took.
pub fn nft_load(
    ns: &str,
    t: &nft::Translation,
    file: &Path,
    limit: Duration,
) -> Result<f64, LabError> {
    let mut files = vec![file.to_path_buf()];
    std::fs::write(file, &t.text)
        .map_err(|e| LabError::io(format!("writing {}", file.display()), e))?;
    for (i, b) in t.batches.iter().enumerate() {
        let f = file.with_extension(format!("{i}.nft"));
        std::fs::write(&f, b).map_err(|e| LabError::io(format!("writing {}", f.display()), e))?;
        files.push(f);
    }
    let t0 = Instant::now();
    for f in &files {
        let left = limit.saturating_sub(t0.elapsed()).max(Duration::from_millis(1));
        let f = f.display().to_string();
        run_bounded("ip", &["netns", "exec", ns, nft::NFT, "-f", &f], left)?;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Deletes the lab's nft table in `ns` (absent table: fine).
pub fn nft_clear(ns: &str) {
    let _ = crate::sys::run_in(ns, nft::NFT, &["delete", "table", "inet", nft::TABLE]);
}

pub(super) type Measured = (Vec<Case>, Vec<PointInfo>, Vec<String>);

#[allow(clippy::too_many_arguments)]
pub(super) fn measure_points(
    opts: &RunOptions,
    hook: &dyn ModeHook,
    plan: &Plan,
    topo: &Topology,
    bin: &crate::traffic::TrafficBin,
    ctl: SocketAddr,
    work: &Path,
    link_name: &str,
) -> Result<Measured, LabError> {
    let mode = Mode::Esp(EspSuite::Aes128Gcm);
    let planned: f64 = plan.points.iter().map(|p| planned_point_s(plan, p)).sum();
    let setup_steps = |p: &Point| usize::from(p.imp != Implementation::Off);
    let steps: usize = plan.points.iter().map(|p| plan.tests.len() + setup_steps(p)).sum();
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} points × {} tests, planned {:.0} s (≈ {:.1} min)",
            opts.profile(),
            plan.points.len(),
            plan.tests.len(),
            planned,
            planned / 60.0
        );
    }
    let mut progress = Progress::new(NAME, steps, planned, !opts.no_progress);
    let h2 = topo.ns(FILTER_HOST)?.to_string();
    let mut cases = Vec::new();
    let mut infos = Vec::new();
    let mut notes = Vec::new();
    // The unfiltered tunnel, kept up across off and nft points; a filtered node pair replaces it.
    let mut tunnel: Option<Box<dyn ModeGuard>> = None;
    let mut node_pending: Option<String> = None;
    let nft_pending: Option<String> = nft::available().err();
    for p in &plan.points {
        let mut info = PointInfo::default();
        // Takes the point's remaining steps out of the plan (`started`: its setup step ran).
        let skip = |progress: &mut Progress, started: bool| {
            let n = plan.tests.len() + setup_steps(p) - usize::from(started);
            progress.skip(planned_point_s(plan, p), n);
        };
        let filtered: Option<Box<dyn ModeGuard>>;
        if p.imp.is_node() {
            tunnel = None;
            nft_clear(&h2);
            if let Some(r) = &node_pending {
                info.pending = Some(r.clone());
                skip(&mut progress, false);
                infos.push(info);
                continue;
            }
            let file = work.join(format!("rules-{}.txt", p.rules));
            if !file.is_file() {
                std::fs::write(&file, rules_text(p.rules))
                    .map_err(|e| LabError::io(format!("writing {}", file.display()), e))?;
            }
            let engine = if p.imp == Implementation::Classifier {
                FilterEngine::Classifier
            } else {
                FilterEngine::Linear
            };
            let f = NodeFilter { rules: file, engine, hosts: vec![FILTER_HOST.into()] };
            progress.step(&format!("{}: starting nodes", p.mode()), 0.0);
            match hook.setup_filtered(mode, topo, &f) {
                Ok(g) => filtered = Some(g),
                Err(e) if filter_unsupported(&e) => {
                    let r = "node has no [filter] yet (it refuses the config table: unknown field `filter`)".to_string();
                    notes.push(
                        format!("hipsec filter rows pending: {e}")
                            .lines()
                            .take(3)
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                    node_pending = Some(r.clone());
                    info.pending = Some(r);
                    skip(&mut progress, true);
                    infos.push(info);
                    continue;
                }
                Err(LabError::ModePending { reason, .. }) => {
                    node_pending = Some(reason.clone());
                    info.pending = Some(reason);
                    skip(&mut progress, true);
                    infos.push(info);
                    continue;
                }
                Err(e) => return Err(e),
            }
        } else {
            filtered = None;
            if tunnel.is_none() {
                tunnel = Some(hook.setup(mode, topo)?);
            }
            nft_clear(&h2);
            if matches!(p.imp, Implementation::NftLinear | Implementation::NftSets) {
                if let Some(r) = &nft_pending {
                    info.pending = Some(r.clone());
                    skip(&mut progress, false);
                    infos.push(info);
                    continue;
                }
                let layout = if p.imp == Implementation::NftLinear {
                    nft::Layout::Linear
                } else {
                    nft::Layout::Sets
                };
                let set = filter::parse_rules(&rules_text(p.rules))
                    .map_err(|e| LabError::parse("generated rules", e.to_string()))?;
                let t = nft::translate(&set, &TUN_DEVICES, layout);
                let file =
                    work.join(format!("{}-{}.nft", p.imp.label().replace(' ', "-"), p.rules));
                progress.step(&format!("{}: nft -f", p.mode()), 0.0);
                match nft_load(&h2, &t, &file, NFT_LOAD_TIMEOUT) {
                    Ok(s) => info.load_s = Some(s),
                    Err(e) => {
                        nft_clear(&h2);
                        let r = format!("nft -f failed: {e}");
                        info.pending = Some(r.chars().take(300).collect());
                        skip(&mut progress, true);
                        infos.push(info);
                        continue;
                    }
                }
                info.nft = Some((t.nft_rules, t.sets, t.exact));
            }
        }
        let guard: &dyn ModeGuard = match (&filtered, &tunnel) {
            (Some(g), _) | (None, Some(g)) => g.as_ref(),
            (None, None) => unreachable_guard()?,
        };
        let watch = guard.pids();
        let target = Target { control: ctl, data: guard.target(Family::V4) };
        for req in &plan.tests {
            progress.step(
                &format!("{} {} {} B", p.mode(), req.test, req.msg_size),
                planned_point_s(plan, p) / plan.tests.len() as f64,
            );
            let measured =
                measure(topo, "h1", target, *req, &plan.params, bin, &watch, &mut |_| {});
            guard.check()?;
            // A filter so slow that a test fails (e.g. the linear evaluator at 100000 rules)
            // is a result for that row, not the end of the run.
            let (samples, summary) = match measured {
                Ok(m) => m,
                Err(e) if p.imp != Implementation::Off => {
                    let msg: String =
                        format!("{} failed: {e}", req.test).chars().take(300).collect();
                    info.pending = Some(msg);
                    continue;
                }
                Err(e) => return Err(e),
            };
            cases.push(Case {
                mode: p.mode(),
                family: Family::V4,
                link: link_name.to_string(),
                test: req.test,
                msg_size: req.msg_size,
                resp_size: req.resp_size,
                cpu: CaseCpu::from_samples(req.test, &samples),
                rtt: mean_rtt(&samples),
                summary,
                samples,
                iperf3: None,
                ratio_vs_none: None,
            });
        }
        if matches!(p.imp, Implementation::NftLinear | Implementation::NftSets) {
            nft_clear(&h2);
        }
        drop(filtered);
        infos.push(info);
    }
    drop(tunnel);
    progress.finish();
    Ok((cases, infos, notes))
}

fn unreachable_guard() -> Result<&'static dyn ModeGuard, LabError> {
    Err(LabError::parse("filter-rules plan", "a point without a tunnel"))
}
