//! SPIs as the command line takes them.

/// An SPI given on the command line: hex (0x...) or decimal.
pub(crate) fn parse_spi(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a 32-bit SPI (hex 0x... or decimal)"))
}
