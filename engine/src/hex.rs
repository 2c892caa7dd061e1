//! Lower-case hexadecimal, written without the formatting machinery (digests and
//! keys are rendered for every trajectory).

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends two lower-case hex digits per byte of `bytes` to `out`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    // Sixteen bytes at a time through a buffer of ASCII: one `push_str` each,
    // not a `char` push (with its UTF-8 test) per digit.
    let mut buf = [0u8; 32];
    for piece in bytes.chunks(16) {
        for (pair, &byte) in buf.chunks_exact_mut(2).zip(piece) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        let digits = std::str::from_utf8(&buf[..piece.len() * 2]).expect("hex digits are ASCII");
        out.push_str(digits);
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
        // Every length around the 16-byte pieces, appended after text.
        for len in 0..=40 {
            let piece = &bytes[200 - len..200];
            let mut out = String::from("=");
            push_hex(&mut out, piece);
            let expected: String = piece.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(out, format!("={expected}"), "{len} bytes");
        }
    }
}
