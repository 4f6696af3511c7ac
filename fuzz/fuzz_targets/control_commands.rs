//! Fuzz target for the control plane's inputs: the control socket's request parser
//! (`node::control::commands::parse`: JSON, then SA and policy fields through the config
//! readers) and the lane tables' state machine (`node::datapath::tables`: SAs and policies
//! added, replaced and removed in any order while packets are sealed).
//! Neither may panic; a refused request says what is wrong; a packet is never protected by an
//! SA that is not installed, nor passed when its policy's SA is missing.
#![no_main]

use ipsec::spd::{Prefix, Selector};
use ipsec::{DropReason, Engine, PacketBuf, Processed, SaParams, SecurityAssociation, Time};
use libfuzzer_sys::fuzz_target;
use node::datapath::mailbox::{OutKey, PolicyAction, PolicySpec, Update};
use node::datapath::tables::OutTables;
use std::net::{IpAddr, Ipv4Addr};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    if which % 2 == 0 {
        if let Err(e) = node::control::commands::parse(rest) {
            assert!(!e.message.is_empty());
        }
    } else {
        tables(rest);
    }
});

fn sa(spi: u32) -> Box<SecurityAssociation> {
    let p = SaParams {
        spi: ipsec::Spi(spi),
        protocol: ipsec::Protocol::Esp("aes128gcm".parse().unwrap_or_else(|_| unreachable!())),
        mode: ipsec::Mode::Tunnel,
        src: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
        enc_key: zeroize::Zeroizing::new(vec![7; 20]),
        auth_key: zeroize::Zeroizing::new(vec![]),
        esn: false,
        replay_window: 64,
        soft: Default::default(),
        hard: Default::default(),
    };
    Box::new(SecurityAssociation::new(&p, crypto::default_provider(), Time(0)).unwrap_or_else(|e| panic!("{e}")))
}

fn key(spi: u32) -> OutKey {
    OutKey { spi, proto: 50, dst: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)) }
}

fn udp_to(last: u8) -> PacketBuf {
    let mut p = vec![0x45, 0, 0, 36, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, last];
    p.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let mut b = PacketBuf::with_max_packet();
    let _ = b.load(&p, ipsec::buf::DEFAULT_HEADROOM);
    b
}

fn tables(ops: &[u8]) {
    let mut e = Engine::new(crypto::default_provider());
    let mut t = OutTables::default();
    let mut peer = None;
    let mut installed = std::collections::BTreeSet::new();
    for c in ops.chunks_exact(3) {
        let (op, a, b) = (c[0] % 6, u32::from(c[1] % 6), c[2]);
        let spi = 0x1000 + a;
        let u = match op {
            0 => {
                installed.insert(spi);
                Update::AddOutbound { key: key(spi), sa: sa(spi), endpoint: None, raw_ip: false }
            }
            1 => {
                installed.remove(&spi);
                Update::DelOutbound { key: key(spi) }
            }
            2 | 3 => {
                let dst: Prefix = format!("10.0.0.{}/32", b % 4).parse().unwrap_or(Prefix::any(false));
                let selector = Selector { src: Prefix::any(false), dst, proto: None, src_ports: None, dst_ports: None };
                let keys = (0..=(b >> 6) as u32).map(|i| key(0x1000 + (a + i) % 6)).collect();
                let action = if op == 2 { PolicyAction::Protect(keys) } else { PolicyAction::Discard };
                let spec = PolicySpec { selector, action, in_sas: vec![], priority: u32::from(b % 3) };
                Update::SetPolicy { id: u64::from(a % 4), spec }
            }
            4 => Update::DelPolicy { id: u64::from(a % 4) },
            _ => {
                let mut p = udp_to(b % 4);
                match e.outbound(&mut p, Time(u64::from(b) * 1000)) {
                    Ok(Processed::Protected { sa }) => {
                        let s = e.outbound_sa(sa).unwrap_or_else(|| panic!("sealed by a removed SA"));
                        assert!(installed.contains(&s.spi().0));
                    }
                    Ok(other) => panic!("{other:?}"),
                    // NoRoom: a bundle of several tunnel-mode SAs outgrows the headroom.
                    Err(DropReason::NoSa | DropReason::NoPolicy | DropReason::PolicyDiscard | DropReason::NoRoom) => {}
                    Err(d) => panic!("{d}"),
                }
                continue;
            }
        };
        let _ = t.apply(&mut e, u, &mut peer);
    }
}
