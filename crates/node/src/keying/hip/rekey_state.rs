//! The state of a rekey in progress on one association (RFC 7402 §6.8–§6.10). It stands apart
//! from the steps that move it (`rekey.rs`, which drive `HipDriver`), so that an association
//! (`mod.rs`) holds it without depending on those steps.

use hip::esp::EspKeys;

/// A rekey in progress, on one side.
pub(super) struct Rekey {
    pub(super) step: Step,
    /// Our last UPDATE of it, resent until answered.
    pub(super) bytes: Vec<u8>,
    /// When to resend (`None`: set on the next tick), and how often it went.
    pub(super) resend_at_us: Option<u64>,
    pub(super) tries: u32,
}

/// Where a rekey stands.
pub(super) enum Step {
    /// We offered (update ID `seq`) to receive on `spi_in`.
    Offered { seq: u32, spi_in: u32 },
    /// We answered (update ID `seq`): our new inbound SA is in; `keys` wait for the ACK.
    Answered { seq: u32, keys: Box<EspKeys>, index: usize },
}

impl Rekey {
    /// The word `status` shows for it.
    pub(super) fn pending(&self) -> &'static str {
        match self.step {
            Step::Offered { .. } => "offered",
            Step::Answered { .. } => "answered",
        }
    }
}
