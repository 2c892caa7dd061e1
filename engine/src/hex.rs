//! Lower-case hexadecimal, written without the formatting machinery (digests and
//! keys are rendered for every trajectory).

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends two lower-case hex digits per byte of `bytes` to `out`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
}

/// `bytes` as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formatter() {
        let bytes: Vec<u8> = (0..=255).collect();
        let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&bytes), expected);
        let n: u64 = 0x0123_4567_89ab_cdef;
        assert_eq!(hex(&n.to_be_bytes()), format!("{n:016x}"));
    }
}
