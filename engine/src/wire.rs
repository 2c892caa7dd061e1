//! The digest's encoding of the events every trajectory is made of, written by
//! hand: the same bytes as postcard's encoding through serde (a test compares
//! them for every variant and value kind), without serde's call per field or
//! postcard's extend per byte.
//!
//! The digest is XXH3-128 over postcard's encoding of `(at_ms, event)` (see
//! [`crate::trajectory::Recorder`]). Postcard writes an unsigned integer as a
//! LEB128 varint, a signed one zigzagged first, a string as its length and its
//! bytes, a sequence as its length and its items, an enum variant as the
//! varint of its index and then its fields in order, an `Option` as 0, or 1
//! and the value, and an `f64` as its 8 little-endian bytes. Only the events of
//! the steady state are written here (a user message, a turn, a call, a result,
//! a note, a world's note, a wait); the rest go through serde.

use crate::agent::{Message, Note};
use crate::call::{Reply, ToolCall};
use crate::value::{Key, VISIT_DEPTH_RECURSIVE_MAX, Value};

/// The index of each [`crate::trajectory::EventKind`] variant written here (its
/// position in the enum: serde numbers variants by position).
pub(crate) const USER: u64 = 0;
pub(crate) const TURN: u64 = 1;
pub(crate) const CALL: u64 = 2;
pub(crate) const RESULT: u64 = 3;
pub(crate) const NOTE: u64 = 4;
pub(crate) const WORLD: u64 = 5;
pub(crate) const WAIT: u64 = 7;

/// Appends `n` as a LEB128 varint (postcard's encoding of every unsigned integer).
#[inline]
pub(crate) fn varint(buf: &mut Vec<u8>, n: u64) {
    if n < 0x80 {
        buf.push(n as u8);
    } else {
        varint_long(buf, n);
    }
}

/// [`varint`] of `n >= 0x80`, byte by byte.
fn varint_long(buf: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

/// Appends a one-byte tag and a varint, as postcard writes a variant's index
/// (or a value's kind) and its first number: together when the number is short.
#[inline]
fn tag_and_varint(buf: &mut Vec<u8>, tag: u8, n: u64) {
    if n < 0x80 {
        buf.extend_from_slice(&[tag, n as u8]);
    } else {
        buf.push(tag);
        varint_long(buf, n);
    }
}

/// The zigzag form of a signed integer (small magnitudes stay short as a varint).
#[inline(always)]
fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Appends a string: its length in bytes, then the bytes.
#[inline]
pub(crate) fn str(buf: &mut Vec<u8>, s: &str) {
    varint(buf, s.len() as u64);
    buf.extend_from_slice(s.as_bytes());
}

/// Appends an optional unsigned integer.
pub(crate) fn option_u64(buf: &mut Vec<u8>, n: Option<u64>) {
    match n {
        None => buf.push(0),
        Some(n) => {
            buf.push(1);
            varint(buf, n);
        }
    }
}

/// A list or map being written: the items (or fields) not yet written.
enum Open<'v> {
    List(std::slice::Iter<'v, Value>),
    Map(std::slice::Iter<'v, (Key, Value)>),
}

/// Appends a [`Value`] (its derived `Serialize`: variants by position, a map as
/// a sequence of (key, value) pairs), by recursion down to
/// [`VISIT_DEPTH_RECURSIVE_MAX`] levels and with an explicit stack below
/// ([`value_walked`]), so that no depth overflows the call stack.
pub(crate) fn value(buf: &mut Vec<u8>, value: &Value) {
    if !scalar(buf, value) {
        value_at(buf, value, 0);
    }
}

fn value_at(buf: &mut Vec<u8>, value: &Value, depth: usize) {
    if depth == VISIT_DEPTH_RECURSIVE_MAX {
        return value_walked(buf, value);
    }
    match value {
        Value::List(items) => {
            tag_and_varint(buf, 4, items.len() as u64);
            for item in items {
                if !scalar(buf, item) {
                    value_at(buf, item, depth + 1);
                }
            }
        }
        Value::Map(pairs) => {
            tag_and_varint(buf, 5, pairs.len() as u64);
            for (key, item) in pairs {
                str(buf, key);
                if !scalar(buf, item) {
                    value_at(buf, item, depth + 1);
                }
            }
        }
        scalar_value => {
            scalar(buf, scalar_value);
        }
    }
}

/// Appends `value` if it holds no other value (true); a list or a map is
/// left to the caller (false). Written in place in a container's loop, so
/// that a leaf costs no call.
#[inline(always)]
fn scalar(buf: &mut Vec<u8>, value: &Value) -> bool {
    match value {
        Value::Null => buf.push(0),
        Value::Bool(b) => buf.extend_from_slice(&[1, u8::from(*b)]),
        Value::Int(n) => tag_and_varint(buf, 2, zigzag(*n)),
        Value::Str(s) => {
            tag_and_varint(buf, 3, s.len() as u64);
            buf.extend_from_slice(s.as_bytes());
        }
        Value::Float(x) => {
            buf.push(6);
            buf.extend_from_slice(&x.get().to_bits().to_le_bytes());
        }
        Value::List(_) | Value::Map(_) => return false,
    }
    true
}

/// [`value`] walked with an explicit stack, for what lies deeper than its
/// recursion goes; the outermost container is held inline, so a flat value
/// allocates nothing.
fn value_walked(buf: &mut Vec<u8>, value: &Value) {
    let mut outermost: Option<Open<'_>> = None;
    let mut inner: Vec<Open<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(v) = next.take() {
            let open = match v {
                Value::List(items) => {
                    tag_and_varint(buf, 4, items.len() as u64);
                    Some(Open::List(items.iter()))
                }
                Value::Map(pairs) => {
                    tag_and_varint(buf, 5, pairs.len() as u64);
                    Some(Open::Map(pairs.iter()))
                }
                leaf => {
                    scalar(buf, leaf);
                    None
                }
            };
            match open {
                Some(open) if outermost.is_none() => outermost = Some(open),
                Some(open) => inner.push(open),
                None => {}
            }
        }
        let top = match inner.last_mut() {
            Some(top) => top,
            None => match outermost.as_mut() {
                Some(top) => top,
                None => return,
            },
        };
        let item = match top {
            Open::List(items) => items.next(),
            Open::Map(pairs) => pairs.next().map(|(k, v)| {
                str(buf, k);
                v
            }),
        };
        match item {
            Some(item) => next = Some(item),
            None if inner.pop().is_none() => outermost = None,
            None => {}
        }
    }
}

/// Appends a message: its text, then its content.
pub(crate) fn message(buf: &mut Vec<u8>, message: &Message) {
    str(buf, &message.text);
    value(buf, &message.content);
}

/// Appends a call: the tool's id, the arguments, the idempotency key.
pub(crate) fn call(buf: &mut Vec<u8>, call: &ToolCall) {
    varint(buf, u64::from(call.tool.0));
    value(buf, &call.args);
    match &call.idempotency_key {
        None => buf.push(0),
        Some(key) => {
            buf.push(1);
            str(buf, key);
        }
    }
}

/// Appends a reply.
pub(crate) fn reply(buf: &mut Vec<u8>, reply: &Reply) {
    match reply {
        Reply::Ok(body) => {
            buf.push(0);
            value(buf, body);
        }
        Reply::Error { status, retry_after_ms, message } => {
            buf.push(1);
            varint(buf, u64::from(*status));
            option_u64(buf, *retry_after_ms);
            str(buf, message);
        }
        Reply::Timeout => buf.push(2),
        Reply::Garbled(text) => {
            buf.push(3);
            str(buf, text);
        }
    }
}

/// Appends a note: its source, what, and details.
pub(crate) fn note(buf: &mut Vec<u8>, note: &Note) {
    str(buf, note.source);
    str(buf, note.what);
    value(buf, &note.detail);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A string of `len` bytes (multi-byte characters where they fit).
    fn text(rng: &mut ChaCha8Rng, len: usize) -> String {
        let mut s = String::new();
        while s.len() < len {
            if len - s.len() >= 2 && rng.random_bool(0.2) {
                s.push('é')
            } else {
                s.push((b'a' + rng.random_range(0..26u8)) as char)
            }
        }
        s
    }

    /// An integer near a varint's length boundary, or anywhere.
    fn int(rng: &mut ChaCha8Rng) -> i64 {
        match rng.random_range(0..4) {
            0 => rng.random_range(-70..70),
            1 => {
                let bits = rng.random_range(1..63);
                let edge = 1i64 << bits;
                edge + rng.random_range(-2..2)
            }
            2 => -(1i64 << rng.random_range(1..63)) + rng.random_range(-2..2),
            _ => rng.random(),
        }
    }

    /// A random value up to `depth` levels, its strings and keys of every
    /// length up to 40 bytes (varint lengths of one byte), keys up to 24.
    fn random_value(rng: &mut ChaCha8Rng, depth: u32) -> Value {
        let kinds = if depth == 0 { 5 } else { 7 };
        match rng.random_range(0..kinds) {
            0 => Value::Null,
            1 => Value::Bool(rng.random()),
            2 => Value::Int(int(rng)),
            3 => {
                let len = rng.random_range(0..40);
                Value::Str(text(rng, len))
            }
            4 => Value::Float(crate::value::Float::new(rng.random_range(-1e6..1e6)).expect("finite")),
            5 => Value::List((0..rng.random_range(0..5)).map(|_| random_value(rng, depth - 1)).collect()),
            _ => Value::Map(
                (0..rng.random_range(0..5))
                    .map(|_| {
                        let len = rng.random_range(0..24);
                        (text(rng, len).into(), random_value(rng, depth - 1))
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn values_encode_as_postcard_does() {
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        for case in 0..4_000 {
            let v = random_value(&mut rng, 3);
            let mut ours = Vec::new();
            value(&mut ours, &v);
            assert_eq!(ours, postcard::to_allocvec(&v).unwrap(), "case {case}: {v:?}");
        }
    }

    #[test]
    fn strings_and_varints_encode_as_postcard_does() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for len in 0..48 {
            let s = text(&mut rng, len);
            let mut ours = Vec::new();
            str(&mut ours, &s);
            assert_eq!(ours, postcard::to_allocvec(&s).unwrap(), "{s:?}");
        }
        let mut ns: Vec<u64> =
            (0..64).flat_map(|bits| [(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 1]).collect();
        ns.extend([0, u64::MAX]);
        for n in ns {
            let mut ours = vec![9];
            varint(&mut ours, n);
            let mut theirs = vec![9];
            theirs.extend(postcard::to_allocvec(&n).unwrap());
            assert_eq!(ours, theirs, "{n}");
            let mut tagged = vec![9];
            tag_and_varint(&mut tagged, 4, n);
            theirs.insert(1, 4);
            assert_eq!(tagged, theirs, "{n} after a tag");
        }
    }
}
