//! Tests of the control socket's language: good requests read as meant, and each bad one is
//! refused with the field to blame.

use super::*;
use crate::config::policy::RuntimeAction;

const KEY: &str = "0x0102030405060708090a0b0c0d0e0f1011121314";

fn sa(dir: &str, spi: &str) -> String {
    format!(
        r#"{{"direction":"{dir}","src":"192.0.2.1","dst":"192.0.2.2","proto":"esp","spi":"{spi}","mode":"tunnel","aead":"aes128gcm","key":"{KEY}","peer":"192.0.2.2:4501"}}"#
    )
}

fn field_of(line: &str) -> String {
    match parse(line.as_bytes()) {
        Ok(r) => panic!("accepted: {line}\n{r:?}"),
        Err(e) => e.field,
    }
}

#[test]
fn words_and_lists() {
    assert!(matches!(parse(b"status"), Ok(Request::Status)));
    assert!(matches!(parse(b" monitor\n"), Ok(Request::Monitor)));
    assert!(matches!(parse(br#"{"op":"sa-list"}"#), Ok(Request::SaList)));
    assert!(matches!(parse(br#"{"op":"policy-list"}"#), Ok(Request::PolicyList)));
}

#[test]
fn sa_add_reads_every_field() {
    let line =
        format!(r#"{{"op":"sa-add","sas":[{},{}]}}"#, sa("in", "0x2001"), sa("out", "0x1001"));
    let Ok(Request::SaAdd { sas, replace: false, succeeds: None }) = parse(line.as_bytes()) else {
        panic!("{line}")
    };
    assert_eq!(sas.len(), 2);
    assert_eq!(sas[0].direction, Direction::In);
    assert_eq!(sas[0].params.spi.0, 0x2001);
    assert_eq!(sas[1].peer, Some("192.0.2.2:4501".parse().unwrap_or_else(|_| unreachable!())));
    assert_eq!(sas[1].params.enc_key.len(), 20);
}

#[test]
fn bad_fields_are_named() {
    assert_eq!(field_of(r#"{"op":"sa-add"}"#), "sas");
    assert_eq!(field_of(r#"{"op":"sa-add","sas":[]}"#), "sas");
    assert_eq!(field_of(r#"{"op":"frobnicate"}"#), "op");
    assert_eq!(field_of(r#"{"nop":1}"#), "op");
    assert_eq!(field_of(r#"{"op":"sa-list","extra":1}"#), "extra");
    let short = sa("in", "0x2001").replace(KEY, "0x0102");
    assert_eq!(field_of(&format!(r#"{{"op":"sa-add","sas":[{short}]}}"#)), "sas[0].key");
    let reserved = sa("out", "0x10");
    assert_eq!(field_of(&format!(r#"{{"op":"sa-add","sas":[{reserved}]}}"#)), "sas[0].spi");
    let nodir = sa("in", "0x2001").replace(r#""direction":"in","#, "");
    assert_eq!(field_of(&format!(r#"{{"op":"sa-add","sas":[{nodir}]}}"#)), "sas[0].direction");
    let badpeer = sa("in", "0x2001").replace("192.0.2.2:4501", "nowhere");
    assert_eq!(field_of(&format!(r#"{{"op":"sa-add","sas":[{badpeer}]}}"#)), "sas[0].peer");
    assert_eq!(field_of(r#"{"op":"sa-del","sas":[{"spi":"0x2001"}]}"#), "sas[0].direction");
    assert_eq!(field_of(r#"{"op":"policy-del","ids":[0]}"#), "ids[0]");
    assert_eq!(field_of(r#"{"op":"sa-retire","spi":"0x2001","grace-ms":-1}"#), "grace-ms");
    assert_eq!(
        field_of(
            r#"{"op":"policy-add","policies":[{"src":"10.0.0.0/24","dst":"10.1.0.0/24","action":"protect"}]}"#
        ),
        "policies[0].sas"
    );
    assert_eq!(
        field_of(
            r#"{"op":"policy-add","policies":[{"src":"10.0.0.0/33","dst":"10.1.0.0/24","action":"bypass"}]}"#
        ),
        "policies[0].src"
    );
    assert!(parse(b"\xff\xfe").is_err());
    assert!(parse(b"").is_err());
}

#[test]
fn policies_and_refs() {
    let line = r#"{"op":"policy-add","policies":[{"id":7,"priority":10,"src":"10.0.0.0/24","dst":"10.1.0.0/24","proto":"tcp","dst-ports":"80-90","action":"protect","sas":["0x1001",{"spi":4098,"dst":"192.0.2.9","proto":"ah"}],"in-sas":["0x2001"]}]}"#;
    let Ok(Request::PolicyAdd { policies, replace: false }) = parse(line.as_bytes()) else {
        panic!("{line}")
    };
    let p = &policies[0];
    assert_eq!((p.id, p.priority), (Some(7), Some(10)));
    assert_eq!(p.selector.dst_ports, Some((80, 90)));
    let RuntimeAction::Protect(refs) = &p.action else { panic!("{:?}", p.action) };
    assert_eq!((refs[0].spi, refs[0].proto, refs[0].dst), (0x1001, 50, None));
    assert_eq!((refs[1].spi, refs[1].proto), (4098, 51));
    assert_eq!(refs[1].dst.map(|d| d.to_string()).as_deref(), Some("192.0.2.9"));
    assert_eq!(p.in_sas[0].spi, 0x2001);
    // policy-update must name the policy it replaces.
    let upd = line.replace("policy-add", "policy-update").replace(r#""id":7,"#, "");
    assert_eq!(field_of(&upd), "policies[0].id");
}

#[test]
fn rekey_takes_one_new_sa_each_way() {
    let line = format!(
        r#"{{"op":"sa-rekey","old-in":"0x2001","old-out":{{"spi":"0x1001","dst":"192.0.2.2"}},"sas":[{},{}],"grace-ms":250}}"#,
        sa("out", "0x1002"),
        sa("in", "0x2002")
    );
    let Ok(Request::SaRekey { old_in, old_out, new_in, new_out, grace_ms }) =
        parse(line.as_bytes())
    else {
        panic!("{line}")
    };
    assert_eq!((old_in.spi, old_out.spi, grace_ms), (0x2001, 0x1001, 250));
    assert_eq!((new_in.params.spi.0, new_out.params.spi.0), (0x2002, 0x1002));
    let two_in = format!(
        r#"{{"op":"sa-rekey","old-in":"0x2001","old-out":"0x1001","sas":[{},{}]}}"#,
        sa("in", "0x1002"),
        sa("in", "0x2002")
    );
    assert_eq!(field_of(&two_in), "sas");
}

proptest::proptest! {
    /// Whatever arrives on the socket, parsing returns (no panic).
    #[test]
    fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        let _ = parse(&bytes);
    }
}

#[test]
fn hip_close_names_a_bad_hit() {
    let e = parse(br#"{"op":"hip-close","hit":"2001:db8::1"}"#).unwrap_err();
    assert_eq!(e.field, "hit");
    let e = parse(br#"{"op":"hip-close"}"#).unwrap_err();
    assert_eq!(e.field, "hit");
    let ok = parse(br#"{"op":"hip-close","hit":"2001:22::1"}"#).unwrap();
    assert!(matches!(ok, Request::HipClose { .. }));
    let e = parse(br#"{"op":"hip-rekey","hit":"nope"}"#).unwrap_err();
    assert_eq!(e.field, "hit");
    let ok = parse(br#"{"op":"hip-rekey","hit":"2001:22::1"}"#).unwrap();
    assert!(matches!(ok, Request::HipRekey { .. }));
}
