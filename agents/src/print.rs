//! The loop detector's fingerprints, walked here with every write inlined.
//!
//! [`Print`] feeds a value to the engine's `Fingerprinter` as `Value`'s
//! derived `Hash` does, but from a walk of its own: a scalar item is fed inside
//! the container's loop (no call through `Hash` per leaf), and the
//! fingerprinter's writes inline into it. A fingerprint computed here is the
//! number `agentsim_engine::fingerprint::fingerprint` gives for the same data
//! (proptested below), so the loop detector decides exactly as it did, even on
//! a collision.

use std::hash::{Hash, Hasher};

use agentsim_engine::Value;
use agentsim_engine::fingerprint::Fingerprinter;

/// Containers nested deeper than this are fed through `Value`'s own `Hash`
/// (the same writes, as the engine's fingerprint recurses).
const WALK_DEPTH_MAX: u32 = 32;

/// The engine's fingerprinter, fed by a walk of the value.
pub(crate) struct Print {
    inner: Fingerprinter,
}

impl Print {
    pub(crate) fn new() -> Self {
        Self { inner: Fingerprinter::default() }
    }

    /// A word, as an integer's `Hash` (or an enum's discriminant) feeds it.
    #[inline(always)]
    fn mix(&mut self, word: u64) {
        self.inner.write_u64(word);
    }

    /// A string as `str`'s `Hash` feeds it: its bytes, then `0xff`.
    #[inline(always)]
    fn str(&mut self, s: &str) {
        self.inner.write(s.as_bytes());
        self.inner.write_u8(0xff);
    }

    /// The fingerprint of what was fed.
    fn finish(&self) -> u64 {
        self.inner.finish()
    }

    /// `value` as `Value`'s derived `Hash` feeds it: the variant's
    /// discriminant (`isize`), then its fields; a list or map its length,
    /// then its items.
    pub(crate) fn value(&mut self, value: &Value, depth: u32) {
        if !self.scalar(value) {
            self.container(value, depth);
        }
    }

    /// Feeds `value` and returns true if it holds no other value (a call
    /// saved for most of a map's items); feeds nothing otherwise.
    #[inline(always)]
    fn scalar(&mut self, value: &Value) -> bool {
        match value {
            Value::Null => self.mix(0),
            Value::Bool(b) => {
                self.mix(1);
                self.mix(u64::from(*b));
            }
            Value::Int(n) => {
                self.mix(2);
                self.mix(*n as u64);
            }
            Value::Str(s) => {
                self.mix(3);
                self.str(s);
            }
            Value::List(_) | Value::Map(_) | Value::Float(_) => return false,
        }
        true
    }

    /// Feeds a list, a map or a float.
    fn container(&mut self, value: &Value, depth: u32) {
        match value {
            _ if depth >= WALK_DEPTH_MAX => value.hash(&mut self.inner),
            Value::List(items) => {
                self.mix(4);
                self.mix(items.len() as u64);
                for item in items {
                    if !self.scalar(item) {
                        self.container(item, depth + 1);
                    }
                }
            }
            Value::Map(pairs) => {
                self.mix(5);
                self.mix(pairs.len() as u64);
                for (key, item) in pairs {
                    self.str(key);
                    if !self.scalar(item) {
                        self.container(item, depth + 1);
                    }
                }
            }
            _ => value.hash(&mut self.inner),
        }
    }

    /// The fingerprint of `tag`.
    pub(crate) fn tag(tag: u8) -> u64 {
        let mut print = Print::new();
        print.mix(u64::from(tag));
        print.finish()
    }

    /// The fingerprint of `(tag, value)`.
    pub(crate) fn tagged(tag: u8, value: &Value) -> u64 {
        let mut print = Print::new();
        print.mix(u64::from(tag));
        print.value(value, 0);
        print.finish()
    }

    /// The fingerprint of `(tag, text)`.
    pub(crate) fn tagged_str(tag: u8, text: &str) -> u64 {
        let mut print = Print::new();
        print.mix(u64::from(tag));
        print.str(text);
        print.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_engine::fingerprint::fingerprint;
    use proptest::prelude::*;

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            ".{0,20}".prop_map(Value::Str),
            any::<f64>().prop_filter_map("finite", |x| agentsim_engine::value::Float::new(x).map(Value::Float)),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::List),
                proptest::collection::vec((".{0,17}", inner), 0..6).prop_map(Value::map),
            ]
        })
    }

    /// A value nested `depth` levels, alternating lists and maps.
    fn nested(depth: u32) -> Value {
        (0..depth).fold(Value::str("leaf"), |inner, i| {
            if i % 2 == 0 {
                Value::List(vec![Value::Int(i64::from(i)), inner])
            } else {
                Value::map([("k", inner), ("other", Value::Null)])
            }
        })
    }

    proptest! {
        #[test]
        fn prints_are_the_engine_s_fingerprints(tag in any::<u8>(), value in any_value(), text in ".{0,40}") {
            prop_assert_eq!(Print::tagged(tag, &value), fingerprint(&(tag, &value)));
            prop_assert_eq!(Print::tagged_str(tag, &text), fingerprint(&(tag, &text)));
            prop_assert_eq!(Print::tag(tag), fingerprint(&tag));
        }

    }

    #[test]
    fn deep_values_print_as_the_engine_s() {
        for depth in [0, 1, 31, 32, 33, 64, 100] {
            let value = nested(depth);
            assert_eq!(Print::tagged(0, &value), fingerprint(&(0u8, &value)), "depth {depth}");
        }
    }
}
