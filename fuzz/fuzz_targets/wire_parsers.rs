//! Fuzz target: the ESP and AH header views, the ESP trailer, and the IP layout / AH mutable-field
//! walker must never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = wire::EspPacket::new_checked(data) {
        let r = wire::EspRepr::parse(&p);
        let mut out = [0u8; 8];
        let _ = r.emit(&mut out);
        assert_eq!(&out[..], &data[..8]);
        let _ = p.payload().len();
    }
    let _ = wire::EspTrailer::parse(data);
    if let Ok(p) = wire::AhPacket::new_checked(data) {
        let r = wire::AhRepr::parse(&p);
        let _ = (p.icv(), p.payload(), r.buffer_len());
    }
    if let Ok(l) = wire::IpLayout::parse(data) {
        assert!(l.header_len <= l.total_len && l.total_len <= data.len());
        let _ = l.addrs(data);
        let mut scratch = [0u8; wire::ip::AH_MAX_HEADER];
        let _ = wire::ip::ah_zero_mutable(data, &l, &mut scratch);
    }
});
