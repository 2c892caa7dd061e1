//! Wrong-but-plausible values: one value of a well-formed answer changed so that
//! the answer still matches its schema (the `Corrupt` fault). What was changed is
//! returned as a [`Lie`], ground truth the agent never sees, so the loop can tell
//! when a write carries a value only the corrupted answer showed.

use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use crate::field_path::FieldPath;
use crate::input_error::{InputError, InputErrorKind};
use crate::time::{TimeMs, check_ms};
use crate::value::Value;

/// How a corrupted value is wrong. Each keeps the value's type, so the answer
/// still matches its schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CorruptionUnchecked")]
pub enum Corruption {
    /// A string replaced by one of these that differs from the truth (a status
    /// flipped: `OneOf(["delivered"])`), chosen by the call's draw.
    OneOf(Vec<String>),
    /// A number multiplied by this factor (rounded for an integer): finite,
    /// positive and not 1.
    Factor(f64),
    /// An integer moved by this non-zero amount.
    Offset(i64),
    /// One item of a list left out, chosen by the call's draw.
    DropItem,
    /// The value as it was `lag_ms` ago, with no stale flag (reads only: a write's
    /// answer has no past).
    Old {
        /// How old, in milliseconds.
        lag_ms: TimeMs,
    },
}

/// The most values a `OneOf` corruption lists.
pub const ONE_OF_MAX: usize = 64;

#[derive(Deserialize)]
enum CorruptionUnchecked {
    OneOf(Vec<String>),
    Factor(f64),
    Offset(i64),
    DropItem,
    Old { lag_ms: TimeMs },
}

impl TryFrom<CorruptionUnchecked> for Corruption {
    type Error = InputError;
    fn try_from(c: CorruptionUnchecked) -> Result<Self, InputError> {
        Ok(match c {
            CorruptionUnchecked::OneOf(values) => {
                if values.is_empty() || values.len() > ONE_OF_MAX {
                    let kind = if values.is_empty() { InputErrorKind::OutOfRange } else { InputErrorKind::TooMany };
                    return Err(InputError::at(
                        kind,
                        "OneOf",
                        format!("expected 1..={ONE_OF_MAX} values to replace a string with, found {}", values.len()),
                    ));
                }
                Corruption::OneOf(values)
            }
            CorruptionUnchecked::Factor(f) => {
                if !f.is_finite() || f == 1.0 || !(1e-6..=1e6).contains(&f) {
                    let kind = if f.is_finite() { InputErrorKind::OutOfRange } else { InputErrorKind::NotFinite };
                    return Err(InputError::at(
                        kind,
                        "Factor",
                        format!("expected a finite factor in [1e-6, 1e6] other than 1, found {f}"),
                    ));
                }
                Corruption::Factor(f)
            }
            CorruptionUnchecked::Offset(0) => {
                return Err(InputError::at(InputErrorKind::OutOfRange, "Offset", "an offset of 0 changes nothing"));
            }
            CorruptionUnchecked::Offset(n) => Corruption::Offset(n),
            CorruptionUnchecked::DropItem => Corruption::DropItem,
            CorruptionUnchecked::Old { lag_ms } => {
                if lag_ms == 0 {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "lag_ms",
                        "an old value is at least 1 ms old, found 0",
                    ));
                }
                Corruption::Old { lag_ms: check_ms("lag_ms", lag_ms)? }
            }
        })
    }
}

/// One value a corrupted answer showed in place of the truth.
#[derive(Clone, Debug, PartialEq)]
pub struct Lie {
    /// The path the rule named.
    pub path: FieldPath,
    /// What the answer showed (`Null` for a dropped list item: the lie is its absence).
    pub told: Value,
    /// What the world holds.
    pub truth: Value,
}

impl Lie {
    /// Whether `args` (a call's arguments) carry the lie: a string, integer or
    /// float the corrupted answer showed, found anywhere in them. A dropped item
    /// has no value to carry.
    pub fn carried_by(&self, args: &Value) -> bool {
        matches!(self.told, Value::Str(_) | Value::Int(_) | Value::Float(_)) && contains(args, &self.told)
    }
}

/// Whether `needle` (a scalar) is one of `haystack`'s leaves; walked with an
/// bounded recursion ([`Value::try_each_leaf`]), so a deep value cannot overflow the call stack.
fn contains(haystack: &Value, needle: &Value) -> bool {
    haystack
        .try_each_leaf(&mut |v| if v == needle { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        .is_break()
}

/// The next choice from `draw` in `0..len` (`len` > 0); the draw moves on, so
/// successive choices of one call differ.
fn pick(draw: &mut u64, len: usize) -> usize {
    let i = (*draw % len as u64) as usize;
    *draw = draw.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407).rotate_left(29);
    i
}

/// The value at `segments` below `value`; a list on the way contributes the item
/// `pick` chooses. A loop, not a recursion: lists of lists consume no segment,
/// so the depth is the value's, which the path does not bound.
pub(crate) fn locate<'v>(mut value: &'v mut Value, mut segments: &[&str], draw: &mut u64) -> Option<&'v mut Value> {
    loop {
        if !segments.is_empty()
            && let Value::List(items) = value
        {
            if items.is_empty() {
                return None;
            }
            let i = pick(draw, items.len());
            value = &mut items[i];
            continue;
        }
        match segments.split_first() {
            None => return Some(value),
            Some((name, rest)) => {
                value = value.get_mut(name)?;
                segments = rest;
            }
        }
    }
}

/// Corrupts `body` at `path` as `corruption` says, with the call's `draw` for
/// every choice; `old` is the answer as it was (for [`Corruption::Old`]). Returns
/// the lie, or `None` when nothing changed (no such value, no other value to
/// show, a value of another type).
pub fn corrupt_value(
    body: &mut Value,
    path: &FieldPath,
    corruption: &Corruption,
    draw: u64,
    old: Option<&Value>,
) -> Option<Lie> {
    let segments: Vec<&str> = path.segments().collect();
    let mut choice = draw;
    let target = locate(body, &segments, &mut choice)?;
    let truth = target.clone();
    let told = match (corruption, &*target) {
        (Corruption::OneOf(values), Value::Str(now)) => {
            let others: Vec<&String> = values.iter().filter(|v| *v != now).collect();
            if others.is_empty() {
                return None;
            }
            Value::Str(others[pick(&mut choice, others.len())].clone())
        }
        (Corruption::Factor(f), Value::Int(n)) => {
            Value::Int((*n as f64 * f).round().clamp(i64::MIN as f64, i64::MAX as f64) as i64)
        }
        (Corruption::Factor(f), Value::Float(x)) => Value::Float(crate::value::Float::new(x.get() * f)?),
        (Corruption::Offset(by), Value::Int(n)) => Value::Int(n.saturating_add(*by)),
        (Corruption::DropItem, Value::List(items)) if !items.is_empty() => {
            let Value::List(items) = target else { unreachable!("matched a list") };
            let i = pick(&mut choice, items.len());
            let dropped = items.remove(i);
            return Some(Lie { path: path.clone(), told: Value::Null, truth: dropped });
        }
        (Corruption::Old { .. }, now) => {
            let mut old = old?.clone();
            let mut again = draw;
            let then = locate(&mut old, &segments, &mut again)?;
            if then.kind() != now.kind() {
                return None;
            }
            then.clone()
        }
        _ => return None,
    };
    if told == truth {
        return None;
    }
    *target = told.clone();
    Some(Lie { path: path.clone(), told, truth })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order() -> Value {
        Value::map([
            ("status", Value::str("processing")),
            ("total_cents", Value::Int(4_250)),
            (
                "items",
                Value::List(vec![
                    Value::map([("price_cents", Value::Int(1_000))]),
                    Value::map([("price_cents", Value::Int(3_250))]),
                ]),
            ),
        ])
    }

    fn path(p: &str) -> FieldPath {
        FieldPath::try_from(p.to_string()).unwrap()
    }

    #[test]
    fn each_corruption_keeps_the_type_and_reports_the_truth() {
        let mut body = order();
        let lie = corrupt_value(
            &mut body,
            &path("status"),
            &Corruption::OneOf(vec!["processing".into(), "delivered".into()]),
            7,
            None,
        )
        .unwrap();
        assert_eq!((lie.told, lie.truth), (Value::str("delivered"), Value::str("processing")));
        assert_eq!(body.get("status"), Some(&Value::str("delivered")));

        let mut body = order();
        let lie = corrupt_value(&mut body, &path("total_cents"), &Corruption::Factor(10.0), 0, None).unwrap();
        assert_eq!(lie.told, Value::Int(42_500));

        let mut body = order();
        let lie = corrupt_value(&mut body, &path("items.price_cents"), &Corruption::Offset(-500), 1, None).unwrap();
        assert_eq!((lie.told, lie.truth), (Value::Int(2_750), Value::Int(3_250)), "draw 1 picks the second item");

        let mut body = order();
        let lie = corrupt_value(&mut body, &path("items"), &Corruption::DropItem, 0, None).unwrap();
        assert_eq!(body.get("items").unwrap().as_list().len(), 1);
        assert_eq!(lie.told, Value::Null);
        assert!(!lie.carried_by(&Value::map([("x", Value::Null)])), "an absence is carried by nothing");

        let mut old = order();
        old.set("status", Value::str("pending"));
        let mut body = order();
        let lie = corrupt_value(&mut body, &path("status"), &Corruption::Old { lag_ms: 1 }, 0, Some(&old)).unwrap();
        assert_eq!(lie.told, Value::str("pending"));
        assert!(lie.carried_by(&Value::map([("note", Value::List(vec![Value::str("pending")]))])));
    }

    #[test]
    fn nothing_changes_when_there_is_nothing_to_change() {
        let cases = [
            ("status", Corruption::OneOf(vec!["processing".into()])),
            ("no_such_field", Corruption::Offset(1)),
            ("status", Corruption::Offset(1)),
            ("status", Corruption::Old { lag_ms: 5 }),
        ];
        for (p, corruption) in cases {
            let mut body = order();
            assert_eq!(corrupt_value(&mut body, &path(p), &corruption, 3, Some(&order())), None, "{p}");
            assert_eq!(body, order());
        }
    }
}
