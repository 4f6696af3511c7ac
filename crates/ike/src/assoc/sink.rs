//! Where an association's output goes: the endpoint's queues of datagrams and events, its
//! jitter source and counters, lent to one association for one step.

use super::endpoint::Stats;
use super::schedule::Jitter;
use super::{AssocId, Event, Transmit};
use std::collections::VecDeque;

/// Where an association's output goes (the endpoint's queues).
pub(crate) struct Sink<'a> {
    pub(crate) transmits: &'a mut VecDeque<Transmit>,
    pub(crate) events: &'a mut VecDeque<Event>,
    pub(crate) rng: &'a mut Jitter,
    pub(crate) stats: &'a mut Stats,
    /// Queue [`Event::DecryptionKeys`] for every IKE SA's keys.
    pub(crate) export_keys: bool,
}

impl Sink<'_> {
    pub(crate) fn keys(&mut self, assoc: AssocId, line: Option<String>) {
        if let (true, Some(line)) = (self.export_keys, line) {
            self.events.push_back(Event::DecryptionKeys { assoc, line });
        }
    }
}
