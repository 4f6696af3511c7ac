//! Fuzz target: any bytes as a CERT and as a CERTREQ payload body (RFC 7296 §3.6, §3.7) read by
//! encoding: nothing may panic; a CERTREQ that yields hashes re-emits to the same body; an
//! X.509 CERT's DER view is the whole body. The same bytes as a peer's certificate, a trust
//! anchor and a CRL for `ike::cert::TrustStore` (webpki's X.509 and CRL parsers): refused
//! without a panic, and never accepted against an empty trust store; and as an end entity,
//! AUTH AlgorithmIdentifier and signature for the certificate AUTH check.
#![no_main]

use ike::cert::TrustStore;
use libfuzzer_sys::fuzz_target;
use wire::ikev2::{CA_HASH_LEN, Cert, Payload, PayloadType, parse_chain};

fuzz_target!(|data: &[u8]| {
    let id = wire::ikev2::Id::fqdn("gw.example");
    if let Ok(empty) = TrustStore::new(&[], &[]) {
        assert!(empty.verify(&[data], 1_700_000_000, &id).is_err());
    }
    let _ = ike::cert::verify_signature(data, data, b"signed octets", data);
    if let Ok(store) = TrustStore::new(&[data.to_vec()], &[data.to_vec()]) {
        let _ = store.verify(&[data, data], 1_700_000_000, &id);
    }
    for t in [PayloadType::CERT, PayloadType::CERTREQ] {
        // A chain of one payload with this body: generic header, then the fuzzer's bytes.
        let Ok(len) = u16::try_from(4 + data.len()) else { return };
        let mut p = vec![0, 0];
        p.extend_from_slice(&len.to_be_bytes());
        p.extend_from_slice(data);
        let Ok(chain) = parse_chain(t, &p) else { continue };
        for payload in &chain {
            let c = match payload {
                Payload::Cert(c) | Payload::CertReq(c) => c,
                _ => continue,
            };
            if let Ok(Some(der)) = c.x509_der() {
                assert_eq!(der.len(), c.data.len());
            }
            if let Ok(Some(hashes)) = c.ca_hashes() {
                assert_eq!(hashes.len() * CA_HASH_LEN, c.data.len());
                assert_eq!(&Cert::x509_request(&hashes), c);
            }
        }
    }
});
