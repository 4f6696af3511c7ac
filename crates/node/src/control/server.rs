//! The control thread: runs the keying drivers (IKEv2, HIP, Mobile IPv6) and their timers,
//! applies SA and policy requests through the control plane, runs its own timers (retiring old
//! inbound SAs, following NAT rebindings) and passes the lanes' events to the log and to
//! `hipsec monitor` clients. The clients themselves are the front thread's (`control::front`),
//! which hands over complete requests only, so no client can hold this thread.

use super::commands::Request;
use super::conn::Limits;
use super::exec::{self, error_reply};
use super::front::{self, FrontLink, Job};
use super::metrics::MetricsServer;
use super::monitor;
use super::socket::ControlServer;
use super::status;
use crate::datapath::board::Board;
use crate::datapath::filter_stage::{self, SharedFilter};
use crate::datapath::mailbox::{Event, PuntKind};
use crate::keying::hip::runtime::HipRuntime;
use crate::keying::ike::runtime::IkeRuntime;
use crate::keying::mip6::HomeAgentRuntime;
use crate::keying::mip6::mobile::MobileNodeRuntime;
use crate::keying::plane::ControlPlane;
use crate::log::{Level, event_at};
use ipsec::Time;
use serde_json::{Value, json};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use zeroize::Zeroizing;

/// How often the control thread looks at events and timers when nothing else wakes it.
const TICK_MS: i32 = 20;

/// What the control thread serves.
#[derive(Debug)]
pub struct ControlThread<'a> {
    /// The control interface to the lanes.
    pub plane: ControlPlane,
    /// The control socket, if configured.
    pub socket: Option<&'a ControlServer>,
    /// The metrics listener, if configured.
    pub metrics: Option<&'a MetricsServer>,
    /// The packet filter, if any.
    pub filter: Option<&'a SharedFilter>,
    /// Where the workers publish their snapshots.
    pub board: &'a Board,
    /// Time origin of the engines.
    pub start: Instant,
    /// The front thread's end of the channels, while it runs.
    front: Option<FrontLink>,
    /// The IKEv2 driver and its sockets, when the config has `[[connection]]`s.
    ike: Option<IkeRuntime>,
    /// The HIP driver and its socket, when the config has `[hip]`.
    hip: Option<HipRuntime>,
    /// The Mobile IPv6 home agent and its link socket, when the config has `[home-agent]`.
    home_agent: Option<HomeAgentRuntime>,
    /// The Mobile IPv6 mobile node and its link socket, when the config has `[mobile-node]`.
    mobile_node: Option<MobileNodeRuntime>,
}

impl<'a> ControlThread<'a> {
    /// A control thread over these parts.
    pub fn new(
        plane: ControlPlane,
        socket: Option<&'a ControlServer>,
        metrics: Option<&'a MetricsServer>,
        filter: Option<&'a SharedFilter>,
        board: &'a Board,
        start: Instant,
    ) -> ControlThread<'a> {
        ControlThread {
            plane,
            socket,
            metrics,
            filter,
            board,
            start,
            front: None,
            ike: None,
            hip: None,
            home_agent: None,
            mobile_node: None,
        }
    }

    /// Adds the IKEv2 driver: its port-500 socket joins the poll set, the lanes' punted IKE
    /// goes to it, and its timers run on every tick.
    pub fn with_ike(mut self, ike: IkeRuntime) -> Self {
        self.ike = Some(ike);
        self
    }

    /// Adds the HIP driver: its protocol-139 socket joins the poll set, acquires of its traps
    /// go to it, and its timers run on every tick.
    pub fn with_hip(mut self, hip: HipRuntime) -> Self {
        self.hip = Some(hip);
        self
    }

    /// Adds the Mobile IPv6 home agent: its link socket joins the poll set, its binding
    /// expiry runs on every tick, and its binding events go to `hipsec monitor`.
    pub fn with_home_agent(mut self, ha: HomeAgentRuntime) -> Self {
        self.home_agent = Some(ha);
        self
    }

    /// Adds the Mobile IPv6 mobile node: its link socket joins the poll set, its movement
    /// detection and Binding Update timers run on every tick.
    pub fn with_mobile_node(mut self, mn: MobileNodeRuntime) -> Self {
        self.mobile_node = Some(mn);
        self
    }

    /// Serves until `stop` is set; the control socket and metrics clients on a front thread
    /// of their own (`hipsec-front`).
    pub fn run(&mut self, stop: &AtomicBool) {
        if self.socket.is_none() && self.metrics.is_none() {
            return self.serve(stop);
        }
        let (mut front, link) = match front::new(self.socket, self.metrics, Limits::DEFAULT) {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = e.to_string(), "front-thread-failed");
                return self.serve(stop);
            }
        };
        self.front = Some(link);
        std::thread::scope(|s| {
            let started = std::thread::Builder::new()
                .name("hipsec-front".into())
                .spawn_scoped(s, move || front.run(stop));
            if let Err(e) = started {
                tracing::warn!(error = e.to_string(), "front-thread-failed");
                self.front = None;
            }
            self.serve(stop);
        });
        self.front = None;
    }

    /// The control thread's loop.
    fn serve(&mut self, stop: &AtomicBool) {
        // The front thread's wake-up (if any), then IKE's port 500, HIP, Mobile IPv6, lanes.
        let fds: Vec<RawFd> = self
            .front
            .iter()
            .map(|f| f.fd())
            .chain(self.ike.iter().map(|i| i.fd()))
            .chain(self.hip.iter().map(|h| h.fd()))
            .chain(self.home_agent.iter().map(|h| h.fd()))
            .chain(self.mobile_node.iter().map(|m| m.fd()))
            .chain(self.mobile_node.iter().filter_map(|m| m.watch_fd()))
            .chain(self.plane.wake_fd())
            .collect();
        let ike_at = self.front.iter().count();
        let hip_at = ike_at + self.ike.iter().count();
        let ha_at = hip_at + self.hip.iter().count();
        let mn_at = ha_at + self.home_agent.iter().count();
        let mn_watch_at = mn_at + self.mobile_node.iter().count();
        let mn_watch = self.mobile_node.as_ref().is_some_and(|m| m.watch_fd().is_some());
        let mut ready = vec![false; fds.len()];
        while !stop.load(Ordering::Relaxed) {
            if fds.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(TICK_MS as u64));
            } else if crate::sys::poll_readable(&fds, &mut ready, TICK_MS).is_err() {
                continue;
            }
            self.events();
            if let Some(ike) = &mut self.ike {
                if ready.get(ike_at) == Some(&true) {
                    ike.read_socket(&mut self.plane);
                }
                ike.tick(&mut self.plane);
            }
            self.hand_over_signalling();
            if let Some(hip) = &mut self.hip {
                if ready.get(hip_at) == Some(&true) {
                    hip.read_socket(&mut self.plane);
                }
                hip.tick(&mut self.plane);
            }
            let monitors = self.monitors();
            if let Some(ha) = &mut self.home_agent {
                ha.want_events = monitors > 0;
                if ready.get(ha_at) == Some(&true) {
                    ha.read_socket(&mut self.plane);
                }
                ha.tick(&mut self.plane);
                for v in ha.take_events() {
                    to_monitors(&self.front, &monitor::stamped(v));
                }
            }
            if let Some(mn) = &mut self.mobile_node {
                mn.want_events = monitors > 0;
                if ready.get(mn_at) == Some(&true) {
                    mn.read_socket();
                }
                if mn_watch && ready.get(mn_watch_at) == Some(&true) {
                    mn.addresses_changed();
                }
                mn.tick(&mut self.plane);
                for v in mn.take_events() {
                    to_monitors(&self.front, &monitor::stamped(v));
                }
            }
            // Looked at every turn, not only when woken: a job costs nothing to find.
            if self.serve_front() {
                // `hipsec rekey` and `terminate` act on signalling children too.
                self.hand_over_signalling();
            }
        }
    }

    /// Gives the IKE driver's `mip6 = "signalling"` pairs to the home agent or mobile node
    /// (RFC 4877 §4.4); the config admits such children only beside one of them.
    fn hand_over_signalling(&mut self) {
        let Some(ike) = &mut self.ike else { return };
        for e in ike.take_signalling() {
            if let Some(ha) = &mut self.home_agent {
                ha.signalling(e);
            } else if let Some(mn) = &mut self.mobile_node {
                mn.signalling(e);
            } else {
                tracing::warn!(connection = %e.connection(), "mip6-ike-no-role");
            }
        }
    }

    fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// The engine runs a BEET SA (HIP's, RFC 7402) as transport mode and the workers know
    /// only the config's BEET SAs; the control plane's records know every one, those a HIP
    /// association installs at run time too, so `status` names their mode from the records.
    fn name_beet_sas(&self, v: &mut Value) {
        let inbound = self.plane.inbound().values().map(|r| ("in", r));
        let outbound = self.plane.outbound().values().map(|r| ("out", r));
        let beet: Vec<(&str, String)> = inbound
            .chain(outbound)
            .filter(|(_, r)| r.mode == "beet")
            .map(|(dir, r)| (dir, r.spi.to_string()))
            .collect();
        for sa in v["sas"].as_array_mut().into_iter().flatten() {
            if beet.iter().any(|(dir, spi)| sa["direction"] == *dir && sa["spi"] == *spi) {
                sa["mode"] = json!("beet");
            }
        }
    }

    fn status_value(&self) -> Value {
        // Idle workers look at the board between polls (100 ms): wake them, so a status (or a
        // metrics scrape) holds this thread — which also reads IKE — for well under a
        // millisecond, not up to 100 ms (an IKE_SA_INIT flood test showed the stall).
        let snaps = self.board.collect_waking(|| self.plane.wake_workers());
        let mut v = status::status_value(&snaps, self.now());
        self.name_beet_sas(&mut v);
        let s = self.plane.stats;
        v["control"] = json!({
            "installed": s.installed, "removed": s.removed, "rekeys": s.rekeys,
            "rebinds": s.rebinds, "monitors": self.monitors(),
        });
        if let Some(f) = &self.front {
            v["control"]["clients"] = f.counters.json();
        }
        if let Some(ike) = &self.ike {
            v["ike"] = ike.status();
        }
        if let Some(hip) = &self.hip {
            v["hip"] = hip.status();
        }
        if let Some(ha) = &self.home_agent {
            v["home_agent"] = ha.status();
        }
        if let Some(mn) = &self.mobile_node {
            v["mobile_node"] = mn.status();
        }
        v
    }

    /// Logs the lanes' events and streams them to the monitors.
    fn events(&mut self) {
        for e in self.plane.poll() {
            if let (Event::Punted { kind: PuntKind::Ike, from, bytes, .. }, Some(ike)) =
                (&e, &mut self.ike)
            {
                ike.punted(&mut self.plane, *from, bytes);
                continue;
            }
            if let (Event::Acquire { policy, .. }, Some(ike)) = (&e, &mut self.ike) {
                ike.acquire(&mut self.plane, *policy);
            }
            if let (Event::Acquire { policy, .. }, Some(hip)) = (&e, &mut self.hip) {
                hip.acquire(&mut self.plane, *policy);
            }
            log(&e);
            if self.monitors() > 0 {
                if let Some(v) = monitor::event_json(&e) {
                    self.to_monitors(&v);
                }
            }
        }
    }

    /// Monitor clients now.
    fn monitors(&self) -> usize {
        self.front.as_ref().map_or(0, |f| f.counters.monitors())
    }

    fn to_monitors(&self, v: &Value) {
        to_monitors(&self.front, v);
    }

    /// Carries out the requests the front thread has handed over; true if there were any.
    fn serve_front(&mut self) -> bool {
        let Some(jobs) = self.front.as_ref().map(FrontLink::take_jobs) else { return false };
        let any = !jobs.is_empty();
        for job in jobs {
            match job {
                Job::Scrape { id } => {
                    // The same snapshot as `status`, so metrics and status never disagree.
                    let body = super::metrics::render(&self.status_value());
                    self.reply(id, body.into_bytes());
                }
                Job::Command { id, request, bulk } => {
                    let answer = self.execute(request);
                    if bulk {
                        crate::sys::trim_heap();
                    }
                    self.reply(id, answer.to_string().into_bytes());
                }
            }
        }
        any
    }

    fn reply(&self, id: u64, body: Vec<u8>) {
        if let Some(f) = &self.front {
            f.reply(id, Zeroizing::new(body));
        }
    }

    /// One request's answer.
    fn execute(&mut self, req: Request) -> Value {
        match req {
            // The front thread keeps monitor clients itself.
            Request::Monitor => error_reply("", "monitor is served by the front thread"),
            Request::Status => {
                let mut v = self.status_value();
                if let Some(f) = self.filter {
                    v["filter"] = filter_stage::lock(f).status();
                }
                v
            }
            // Rules are re-read without a restart; a bad file keeps the old ones.
            Request::ReloadFilter => match self.filter {
                Some(f) => match filter_stage::lock(f).reload() {
                    Ok(()) => json!({ "reloaded": true }),
                    Err(e) => json!({ "reloaded": false, "error": e.to_string() }),
                },
                None => json!({ "error": "this node has no [filter]" }),
            },
            Request::Initiate { connection } => self.ike_op(|ike, plane| {
                ike.initiate(plane, &connection)
                    .map(|()| json!({ "ok": true, "initiated": connection }))
            }),
            Request::Terminate { connection, child } => self.ike_op(|ike, plane| {
                ike.terminate(plane, &connection, child.as_deref()).map(|n| {
                    json!({ "ok": true, "terminated": connection, "child": child, "ike_sas": n })
                })
            }),
            Request::Rekey { connection, child, ike: whole } => self.ike_op(|ike, plane| {
                ike.rekey(plane, &connection, child.as_deref(), whole).map(|n| {
                    json!({ "ok": true, "rekeying": connection, "child": child, "ike": whole, "ike_sas": n })
                })
            }),
            Request::IkeKeys => self.ike_op(|ike, _| {
                ike.wireshark_keys()
                    .map(|k| json!({ "ok": true, "ikev2_decryption_table": k.ike, "esp_sa": k.esp }))
                    .ok_or_else(|| {
                        "this node was not started with --debug-export-ike-keys".to_string()
                    })
            }),
            Request::HipClose { hit } => match &mut self.hip {
                None => json!({ "error": "this node has no [hip]" }),
                Some(hip) => match hip.close(&mut self.plane, hit) {
                    Ok(()) => json!({ "ok": true, "closing": hit.to_string() }),
                    Err(e) => json!({ "error": e }),
                },
            },
            Request::HipRekey { hit } => match &mut self.hip {
                None => json!({ "error": "this node has no [hip]" }),
                Some(hip) => match hip.rekey(&mut self.plane, hit) {
                    Ok(()) => json!({ "ok": true, "rekeying": hit.to_string() }),
                    Err(e) => json!({ "error": e }),
                },
            },
            Request::HipKeys => match &self.hip {
                None => json!({ "error": "this node has no [hip]" }),
                Some(hip) => match hip.wireshark_keys() {
                    Some(lines) => json!({ "ok": true, "esp_sa": lines }),
                    None => json!({
                        "error": "this node was not started with --debug-export-hip-keys"
                    }),
                },
            },
            other => {
                let what = op_name(&other);
                let v = exec::execute(&mut self.plane, other);
                let ok = v["ok"] == true;
                let error = v["error"].as_str().unwrap_or("");
                event_at!(
                    if ok { Level::Info } else { Level::Warn },
                    op = what,
                    ok,
                    error,
                    "control-request"
                );
                v
            }
        }
    }
}

/// Requests at least this long (bytes) are bulk: once served, the freed heap is handed back
/// (`sys::trim_heap`), which takes a few milliseconds, worth it only after hundreds of kilobytes.
pub(crate) const TRIM_AFTER: usize = 256 << 10;

impl ControlThread<'_> {
    /// Runs an IKE request against the driver, or says there is none.
    fn ike_op(
        &mut self,
        f: impl FnOnce(
            &mut IkeRuntime,
            &mut crate::keying::plane::ControlPlane,
        ) -> Result<Value, String>,
    ) -> Value {
        match &mut self.ike {
            None => error_reply("", "this node has no [[connection]]"),
            Some(ike) => f(ike, &mut self.plane).unwrap_or_else(|e| error_reply("connection", &e)),
        }
    }
}

/// Streams an event to the monitor clients (through the front thread).
fn to_monitors(front: &Option<FrontLink>, v: &Value) {
    if let Some(f) = front {
        f.event(&v.to_string());
    }
}

fn op_name(r: &Request) -> &'static str {
    match r {
        Request::Status => "status",
        Request::ReloadFilter => "reload-filter",
        Request::Monitor => "monitor",
        Request::SaAdd { replace: false, .. } => "sa-add",
        Request::SaAdd { replace: true, .. } => "sa-update",
        Request::SaDel { .. } => "sa-del",
        Request::SaList => "sa-list",
        Request::SaSwitch { .. } => "sa-switch",
        Request::SaRetire { .. } => "sa-retire",
        Request::SaRekey { .. } => "sa-rekey",
        Request::PolicyAdd { replace: false, .. } => "policy-add",
        Request::PolicyAdd { replace: true, .. } => "policy-update",
        Request::PolicyDel { .. } => "policy-del",
        Request::PolicyList => "policy-list",
        Request::Initiate { .. } => "initiate",
        Request::Terminate { .. } => "terminate",
        Request::Rekey { .. } => "rekey",
        Request::IkeKeys => "ike-keys",
        Request::HipKeys => "hip-keys",
        Request::HipClose { .. } => "hip-close",
        Request::HipRekey { .. } => "hip-rekey",
    }
}

/// Logs an event (RFC 4301 §4.4.2.1: soft is the time to rekey, hard stops the SA).
fn log(e: &Event) {
    match e {
        Event::Lifetime { lane, direction, spi, hard, limit } => {
            let (level, what) = if *hard {
                (Level::Warn, "sa-hard-expired")
            } else {
                (Level::Info, "sa-soft-expired")
            };
            event_at!(level, lane, direction = ?direction, spi = %spi, limit = ?limit, "{what}")
        }
        Event::Acquire { lane, policy, src, dst, proto } => {
            tracing::info!(lane = lane, policy = %policy, src = %src, dst = %dst, proto = proto, "acquire")
        }
        Event::Rebound { lane, spi, from, to } => {
            tracing::info!(lane = lane, spi = %spi, from = %from, to = %to, "nat-rebind")
        }
        Event::Punted { .. } | Event::Applied { .. } => {}
    }
}
