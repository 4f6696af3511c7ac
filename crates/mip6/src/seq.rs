//! Binding Update sequence numbers (RFC 6275 §9.5.1): a free-running 16-bit counter compared
//! modulo 2^16. A received number is "less than or equal to" the last accepted one when it lies
//! in that number or the 32768 values before it; only the 32767 values after it are newer.

/// True if `received` is newer than `last` under §9.5.1: `received - last` (mod 2^16) is in
/// 1..=32767.
pub fn is_newer(received: u16, last: u16) -> bool {
    let d = received.wrapping_sub(last);
    (1..=0x7fff).contains(&d)
}

#[cfg(test)]
mod tests {
    use super::is_newer;

    #[test]
    fn window_and_wrap() {
        assert!(is_newer(1, 0));
        assert!(!is_newer(0, 0));
        assert!(!is_newer(0, 1));
        assert!(is_newer(0x7fff, 0));
        // Exactly 32768 ahead is in the "preceding 32768 values" of `last`: not newer.
        assert!(!is_newer(0x8000, 0));
        // Across the wrap: 65535 → 0 → 5 are each newer.
        assert!(is_newer(0, 0xffff));
        assert!(is_newer(5, 0xfffe));
        assert!(!is_newer(0xfffe, 5));
        assert!(!is_newer(0x8005, 5));
        assert!(is_newer(0x8004, 5));
    }

    #[test]
    fn antisymmetric_except_half_way() {
        for d in 0u16..=u16::MAX {
            let (a, b) = (1000u16, 1000u16.wrapping_add(d));
            if d != 0 && d != 0x8000 {
                assert_ne!(is_newer(b, a), is_newer(a, b), "d = {d}");
            } else {
                assert!(!is_newer(b, a) && !is_newer(a, b));
            }
        }
    }
}
