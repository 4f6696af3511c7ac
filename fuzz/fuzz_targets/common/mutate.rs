//! The mutator the exchange targets put between two endpoints: the input byte `how` picks
//! whether the genuine message is replaced by the input, has the input XORed in (from the
//! offset the input's first byte names), or is truncated to four times that byte.

/// The message the receiver gets instead of `genuine`.
pub fn mutate(how: u8, genuine: &[u8], data: &[u8]) -> Vec<u8> {
    match how % 3 {
        0 => data.to_vec(),
        1 => {
            let mut m = genuine.to_vec();
            let at = data.first().map_or(0, |&b| b as usize);
            for (i, x) in data.iter().skip(1).enumerate() {
                if let Some(b) = m.get_mut((at + i) % genuine.len().max(1)) {
                    *b ^= x;
                }
            }
            m
        }
        _ => genuine[..genuine.len().min(data.first().map_or(0, |&b| b as usize) * 4)].to_vec(),
    }
}
