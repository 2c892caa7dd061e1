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
pub(crate) fn varint(buf: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

/// Appends a signed integer, zigzagged (small magnitudes stay short).
fn signed(buf: &mut Vec<u8>, n: i64) {
    varint(buf, ((n << 1) ^ (n >> 63)) as u64);
}

/// Appends a string: its length in bytes, then the bytes.
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
    value_at(buf, value, 0);
}

fn value_at(buf: &mut Vec<u8>, value: &Value, depth: usize) {
    if depth == VISIT_DEPTH_RECURSIVE_MAX {
        return value_walked(buf, value);
    }
    match value {
        Value::Null => buf.push(0),
        Value::Bool(b) => buf.extend_from_slice(&[1, u8::from(*b)]),
        Value::Int(n) => {
            buf.push(2);
            signed(buf, *n);
        }
        Value::Str(s) => {
            buf.push(3);
            str(buf, s);
        }
        Value::List(items) => {
            buf.push(4);
            varint(buf, items.len() as u64);
            for item in items {
                value_at(buf, item, depth + 1);
            }
        }
        Value::Map(pairs) => {
            buf.push(5);
            varint(buf, pairs.len() as u64);
            for (key, item) in pairs {
                str(buf, key);
                value_at(buf, item, depth + 1);
            }
        }
        Value::Float(x) => {
            buf.push(6);
            buf.extend_from_slice(&x.get().to_bits().to_le_bytes());
        }
    }
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
                Value::Null => {
                    buf.push(0);
                    None
                }
                Value::Bool(b) => {
                    buf.extend_from_slice(&[1, u8::from(*b)]);
                    None
                }
                Value::Int(n) => {
                    buf.push(2);
                    signed(buf, *n);
                    None
                }
                Value::Str(s) => {
                    buf.push(3);
                    str(buf, s);
                    None
                }
                Value::List(items) => {
                    buf.push(4);
                    varint(buf, items.len() as u64);
                    Some(Open::List(items.iter()))
                }
                Value::Map(pairs) => {
                    buf.push(5);
                    varint(buf, pairs.len() as u64);
                    Some(Open::Map(pairs.iter()))
                }
                Value::Float(x) => {
                    buf.push(6);
                    buf.extend_from_slice(&x.get().to_bits().to_le_bytes());
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
