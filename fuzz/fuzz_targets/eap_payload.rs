//! Fuzz target: any bytes as an EAP payload body (RFC 7296 §3.16: one EAP packet, RFC 3748 §4)
//! and as EAP-MSCHAPv2 type data (draft-kamath-pppext-eap-mschapv2): nothing may panic; what
//! parses re-emits to bytes that parse to the same value (octets past the EAP Length are
//! padding, dropped); and the authenticator (`ike::eap`) takes any parsed packet as the peer's
//! answer to its Identity request without panicking.
#![no_main]

use ike::eap::{EapConfig, EapServer, EapUser};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use wire::ikev2::{Eap, EapCode, MsChapV2};

fuzz_target!(|data: &[u8]| {
    for code in [EapCode::REQUEST, EapCode::RESPONSE] {
        if let Ok(m) = MsChapV2::parse(code, data) {
            let out = m.to_bytes().expect("a parsed MS-CHAPv2 message re-emits");
            assert_eq!(MsChapV2::parse(code, &out).as_ref(), Ok(&m));
        }
    }
    let Ok(eap) = Eap::parse(data) else { return };
    let out = eap.to_bytes().expect("a parsed EAP packet re-emits");
    assert!(out.len() <= data.len());
    assert_eq!(Eap::parse(&out).as_ref(), Ok(&eap));
    let config = EapConfig { users: Arc::new(vec![EapUser::new("carol", "pw")]) };
    let (server, _) = EapServer::start(config, eap.identifier);
    let _ = server.handle(&eap, [0; 16]);
});
