//! Tests of the connection table on a made-up clock: request assembly and its size limit, the
//! idle and whole-request deadlines against a trickling client, the stalled-reader deadline,
//! and the per-listener limit with its eviction of slow clients.

use super::*;

const L: Limits = Limits {
    max_conns: 3,
    request_deadline: Duration::from_secs(2),
    idle: Duration::from_secs(1),
    evict_after: Duration::from_millis(250),
    write_stall: Duration::from_secs(2),
    max_request: 16,
    max_head: 64,
    max_monitor_backlog: 1024,
};

fn ms(t0: Instant, n: u64) -> Instant {
    t0 + Duration::from_millis(n)
}

fn done(s: &[u8]) -> Line {
    Line::Done(Zeroizing::new(s.to_vec()))
}

#[test]
fn request_lines() {
    assert_eq!(control_line(b"", false, 16), Line::More);
    assert_eq!(control_line(b"stat", false, 16), Line::More);
    assert_eq!(control_line(b"status\n", false, 16), done(b"status"));
    assert_eq!(control_line(b"status \r\n", false, 16), done(b"status"));
    // A last line without newline counts once the client has shut its side.
    assert_eq!(control_line(b"status", true, 16), done(b"status"));
    // One request per connection: what follows the newline is not looked at.
    assert_eq!(control_line(b"status\nsa-list\n", false, 16), done(b"status"));
    // The limit: a line of exactly `max` bytes passes, one byte more does not, newline or not.
    assert_eq!(control_line(&[b'x'; 16], false, 16), Line::More);
    assert_eq!(control_line(&[b'x'; 17], false, 16), Line::TooLong);
    let mut long = vec![b'x'; 17];
    long.push(b'\n');
    assert_eq!(control_line(&long, false, 16), Line::TooLong);
    let mut exact = vec![b'x'; 16];
    exact.push(b'\n');
    assert_eq!(control_line(&exact, false, 16), done(&[b'x'; 16]));
}

#[test]
fn buffers_keep_their_bytes_across_growth() {
    let t0 = Instant::now();
    let mut c = Conn::new(Kind::Control, t0);
    let mut want = Vec::new();
    for i in 0..3000u32 {
        let b = i.to_be_bytes();
        c.received(&b, t0);
        want.extend_from_slice(&b);
    }
    assert_eq!(&c.rbuf[..], &want[..]);
    c.queue(b"hello ", t0);
    c.queue(b"world", t0);
    assert_eq!(c.pending(), b"hello world");
    c.wrote(6, t0);
    assert_eq!(c.pending(), b"world");
    c.wrote(5, t0);
    assert!(c.pending().is_empty() && c.stalled_since.is_none());
}

/// One byte every 900 ms keeps the idle timeout from firing, but not the whole-request one.
#[test]
fn a_trickle_meets_the_request_deadline() {
    let t0 = Instant::now();
    let mut c = Conn::new(Kind::Control, t0);
    for n in 1..=2 {
        let t = ms(t0, 900 * n);
        assert_eq!(c.expired(t, &L), None, "at {n}");
        c.received(b"s", t);
    }
    assert_eq!(c.expired(ms(t0, 1999), &L), None);
    assert_eq!(c.next_deadline(&L), Some(ms(t0, 2000)));
    assert_eq!(c.expired(ms(t0, 2000), &L), Some(Close::Deadline));
}

#[test]
fn silence_meets_the_idle_timeout() {
    let t0 = Instant::now();
    let mut c = Conn::new(Kind::Metrics, t0);
    assert_eq!(c.next_deadline(&L), Some(ms(t0, 1000)));
    assert_eq!(c.expired(ms(t0, 999), &L), None);
    assert_eq!(c.expired(ms(t0, 1000), &L), Some(Close::Idle));
    c.received(b"G", ms(t0, 500));
    assert_eq!(c.expired(ms(t0, 1400), &L), None);
    assert_eq!(c.expired(ms(t0, 1500), &L), Some(Close::Idle));
}

/// Time the control thread takes is not the client's: a waiting request never expires.
#[test]
fn waiting_for_the_control_thread_has_no_deadline() {
    let t0 = Instant::now();
    let mut c = Conn::new(Kind::Control, t0);
    c.phase = Phase::Waiting;
    assert_eq!(c.next_deadline(&L), None);
    assert_eq!(c.expired(ms(t0, 60_000), &L), None);
}

#[test]
fn a_reader_that_stalls_is_dropped() {
    let t0 = Instant::now();
    let mut c = Conn::new(Kind::Control, t0);
    c.phase = Phase::Writing;
    assert_eq!(c.expired(ms(t0, 10_000), &L), None, "nothing pending, nothing to stall");
    c.queue(&[0; 100], t0);
    assert_eq!(c.expired(ms(t0, 1999), &L), None);
    // Progress restarts the clock.
    c.wrote(10, ms(t0, 1500));
    assert_eq!(c.expired(ms(t0, 3000), &L), None);
    assert_eq!(c.expired(ms(t0, 3500), &L), Some(Close::SlowReader));
    c.phase = Phase::Monitor;
    assert_eq!(c.expired(ms(t0, 3500), &L), Some(Close::SlowReader));
    c.wrote(90, ms(t0, 3500));
    assert_eq!(c.expired(ms(t0, 60_000), &L), None, "all written");
}

/// A refused request still arriving is drained, but not for ever, and not counted again.
#[test]
fn draining_ends() {
    let t0 = Instant::now();
    let mut c = Conn::new(Kind::Control, t0);
    c.drain(ms(t0, 100));
    assert_eq!(c.expired(ms(t0, 1000), &L), None);
    assert_eq!(c.expired(ms(t0, 1100), &L), Some(Close::Drained), "an idle timeout of silence");
    c.received(b"x", ms(t0, 1000));
    c.received(b"x", ms(t0, 1900));
    assert_eq!(c.expired(ms(t0, 2099), &L), None);
    assert_eq!(c.expired(ms(t0, 2100), &L), Some(Close::Drained), "the deadline in all");
    let counters = ListenerCounters::default();
    counters.closed(Close::Drained);
    assert_eq!(counters.json()["idle_closed"], 0);
}

#[test]
fn the_table_limit_refuses_or_evicts() {
    let t0 = Instant::now();
    let mut conns: Vec<Conn> = Vec::new();
    let admit_at = |conns: &[Conn], kind, t| admit(conns.iter().enumerate(), kind, t, &L);
    for n in 0..3 {
        assert_eq!(admit_at(&conns, Kind::Control, ms(t0, n * 10)), Admit::Accept);
        conns.push(Conn::new(Kind::Control, ms(t0, n * 10)));
    }
    // Full, and everyone is young: refused.
    assert_eq!(admit_at(&conns, Kind::Control, ms(t0, 100)), Admit::Refuse);
    // The other listener has its own limit.
    assert_eq!(admit_at(&conns, Kind::Metrics, ms(t0, 100)), Admit::Accept);
    // Once the slow ones are old enough, the oldest still sending makes room.
    assert_eq!(admit_at(&conns, Kind::Control, ms(t0, 270)), Admit::Evict(0));
    // Not one waiting for the control thread, nor a monitor: they are not slow clients.
    conns[0].phase = Phase::Waiting;
    conns[1].phase = Phase::Monitor;
    assert_eq!(admit_at(&conns, Kind::Control, ms(t0, 270)), Admit::Evict(2));
    conns[2].phase = Phase::Writing;
    assert_eq!(admit_at(&conns, Kind::Control, ms(t0, 10_000)), Admit::Refuse);
}

#[test]
fn counters_show_in_status() {
    let c = FrontCounters::default();
    c.control.closed(Close::Deadline);
    c.control.closed(Close::Deadline);
    c.metrics.closed(Close::Evicted);
    c.metrics.closed(Close::SlowReader);
    c.metrics.closed(Close::Idle);
    c.of(Kind::Metrics).refused.fetch_add(3, Ordering::Relaxed);
    let j = c.json();
    assert_eq!(j["control_socket"]["deadline_expired"], 2);
    assert_eq!(j["metrics"]["evicted"], 1);
    assert_eq!(j["metrics"]["slow_readers"], 1);
    assert_eq!(j["metrics"]["idle_closed"], 1);
    assert_eq!(j["metrics"]["refused"], 3);
    assert_eq!(j["control_socket"]["refused"], 0);
}

proptest::proptest! {
    /// The front thread acts on the first verdict about a request: more bytes never change
    /// it (the same property the `front_requests` fuzz target checks), for control lines and
    /// HTTP heads, on arbitrary bytes and on mutated real requests.
    #[test]
    fn a_verdict_on_a_prefix_stands(
        junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        cut in 0usize..200,
        pick in 0usize..4,
    ) {
        let real: [&[u8]; 4] = [
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            b"HEAD /metrics HTTP/1.0\n\n",
            b"status\n",
            b"sa-list\r\n",
        ];
        let mut data = real[pick].to_vec();
        data.extend_from_slice(&junk);
        for bytes in [&junk[..], &data[..]] {
            let prefix = &bytes[..cut.min(bytes.len())];
            match control_line(prefix, false, 64) {
                Line::More => {}
                first => proptest::prop_assert_eq!(control_line(bytes, false, 64), first),
            }
            proptest::prop_assert_ne!(control_line(bytes, true, 64), Line::More);
            use crate::control::metrics::{Head, parse_head};
            if let Head::Done(r) = parse_head(prefix) {
                proptest::prop_assert_eq!(parse_head(bytes), Head::Done(r));
            }
        }
    }
}
