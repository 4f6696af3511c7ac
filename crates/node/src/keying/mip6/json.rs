//! How the home agent's bindings and refusals read in `status` and in monitor events: the
//! words both share, apart from the runtime (`mod.rs`) and its status (`status.rs`).

use ipsec::Time;
use mip6::{Binding, Refusal};
use serde_json::{Value, json};

/// A refusal's name in `status` and events.
pub fn refusal_name(r: Refusal) -> &'static str {
    match r {
        Refusal::Malformed => "malformed",
        Refusal::BadChecksum => "bad_checksum",
        Refusal::BadPayloadProto => "bad_payload_proto",
        Refusal::Unprotected => "unprotected",
        Refusal::WrongSa => "wrong_sa",
        Refusal::BadCareOf => "bad_care_of",
        Refusal::OutOfWindow => "out_of_window",
        Refusal::NotHomeRegistration => "not_home_registration",
        Refusal::RegistrationTypeChange => "registration_type_change",
        Refusal::NothingToDeregister => "nothing_to_deregister",
        Refusal::DuplicateAddress => "duplicate_address",
        Refusal::NotHomeSubnet => "not_home_subnet",
        Refusal::NotHomeAgentForThisMobileNode => "not_home_agent_for_this_mobile_node",
        Refusal::InsufficientResources => "insufficient_resources",
        Refusal::UnsupportedMessage => "unsupported_message",
        Refusal::NotForHomeAgent => "not_for_home_agent",
    }
}

/// One binding as JSON.
pub fn binding_json(b: &Binding, now: Time) -> Value {
    json!({
        "home_address": b.home_address.to_string(),
        "care_of_address": b.care_of_address.to_string(),
        "sequence": b.sequence,
        "spi": b.spi.to_string(),
        "expires_in_s": b.expires.0.saturating_sub(now.0) / 1_000_000,
    })
}
