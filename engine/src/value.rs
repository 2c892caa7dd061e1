//! Structured data exchanged with tools and users.
//!
//! The built-in worlds use no floats: money is integer cents, durations integer
//! milliseconds. Scripted worlds carry their users' data as it is (a price of
//! `12.99` in a CSV file), so a value may be a [`Float`]: finite only, compared
//! and hashed by its bits, rendered in the shortest form that reads back as the
//! same number. Every value still has one canonical encoding and one rendering.

use std::borrow::Cow;
use std::fmt;
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use crate::input_error::{InputError, InputErrorKind};

/// How deep [`Value::try_each_node`] recurses before it walks on with an
/// explicit stack: deeper than any tool's answer, shallow enough for any
/// thread's stack.
pub const VISIT_DEPTH_RECURSIVE_MAX: usize = 48;

/// A JSON-like value with ordered maps (insertion order is kept and is part of the
/// value, so rendering and hashing are canonical without sorting).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Value {
    /// No value.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (money is in cents, time in milliseconds).
    Int(i64),
    /// A string.
    Str(String),
    /// A list.
    List(Vec<Value>),
    /// A map with ordered keys.
    Map(Vec<(Key, Value)>),
    /// A finite floating-point number (scripted worlds' data). Last, so that
    /// the encoding of every other variant, and so every existing digest, is
    /// what it was before floats existed.
    Float(Float),
}

/// A finite `f64`: equal and hashed by its bits (so `Value` stays `Eq` and
/// `Hash`), never NaN or infinite (JSON cannot say them).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Float(f64);

impl Float {
    /// The number, if it is finite. `-0.0` becomes `0.0`, so equal numbers have
    /// equal bits.
    pub fn new(x: f64) -> Option<Float> {
        x.is_finite().then_some(Float(if x == 0.0 { 0.0 } else { x }))
    }

    /// The number.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Eq for Float {}

impl std::hash::Hash for Float {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl TryFrom<f64> for Float {
    type Error = InputError;
    fn try_from(x: f64) -> Result<Float, InputError> {
        Float::new(x)
            .ok_or_else(|| InputError::bare(InputErrorKind::NotFinite, format!("expected a finite number, found {x}")))
    }
}

impl From<Float> for f64 {
    fn from(x: Float) -> f64 {
        x.0
    }
}

impl fmt::Display for Float {
    /// The shortest decimal that reads back as the same `f64`, always with a `.`
    /// or an exponent so that it is never mistaken for an integer (`54.0`,
    /// `0.1`, `1e21`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A map key: borrowed when it is a name written in the code (almost every key
/// is), so building, cloning and dropping a map allocates nothing for its keys;
/// owned when it came from outside (a scenario file, an external agent).
/// Encodes, renders and hashes exactly as the string it holds.
pub type Key = Cow<'static, str>;

impl Value {
    /// A map from `(key, value)` pairs, in the given order.
    pub fn map<K: Into<Key>>(pairs: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Map(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A string value.
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// The field `key` of a map, if this is a map and has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Mutable access to the field `key` of a map.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Map(pairs) => pairs.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets `key` in a map (replacing or appending). No effect on non-maps.
    pub fn set(&mut self, key: impl Into<Key>, value: Value) {
        if let Value::Map(pairs) = self {
            let key = key.into();
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => *v = value,
                None => pairs.push((key, value)),
            }
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The list, if this is one.
    pub fn as_list(&self) -> &[Value] {
        match self {
            Value::List(items) => items,
            _ => &[],
        }
    }

    /// Reads an integer the way a model that does not check types would: a string is
    /// read up to its first non-digit (so `"4,250"` reads as 4), anything else as 0.
    pub fn lenient_int(&self) -> i64 {
        match self {
            Value::Int(n) => *n,
            Value::Str(s) => {
                let (sign, digits) = match s.strip_prefix('-') {
                    Some(rest) => (-1, rest),
                    None => (1, s.as_str()),
                };
                let prefix: String = digits.chars().take_while(|c| c.is_ascii_digit()).take(18).collect();
                sign * prefix.parse::<i64>().unwrap_or(0)
            }
            Value::Bool(b) => i64::from(*b),
            // Saturating and towards zero, as a careless reader truncates `12.99`.
            Value::Float(x) => x.get() as i64,
            _ => 0,
        }
    }

    /// The kind of this value.
    pub fn kind(&self) -> ValueKind {
        match self {
            Value::Null => ValueKind::Null,
            Value::Bool(_) => ValueKind::Bool,
            Value::Int(_) => ValueKind::Int,
            Value::Str(_) => ValueKind::Str,
            Value::List(_) => ValueKind::List,
            Value::Map(_) => ValueKind::Map,
            Value::Float(_) => ValueKind::Float,
        }
    }

    /// Renders as compact JSON (keys in their stored order).
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    /// Appends the compact JSON rendering to `out`.
    pub fn render_into(&self, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = self.write_json(out);
    }

    /// Writes the compact JSON rendering (the bytes of [`Value::render`]) to any
    /// writer, so a hash can be taken over it without building the string.
    ///
    /// The containers still open wait on an explicit stack, not the call stack:
    /// a value nested however deeply (a world's script builds what it likes)
    /// renders without overflowing it.
    pub fn write_json<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        /// An open container: what is left of it, and whether an item was written.
        enum Open<'v> {
            List(std::slice::Iter<'v, Value>, bool),
            Map(std::slice::Iter<'v, (Key, Value)>, bool),
        }
        let mut open: Vec<Open<'_>> = Vec::new();
        let mut next = Some(self);
        loop {
            match next.take() {
                Some(Value::Null) => out.write_str("null")?,
                Some(Value::Bool(b)) => out.write_str(if *b { "true" } else { "false" })?,
                Some(Value::Int(n)) => out.write_str(itoa::Buffer::new().format(*n))?,
                Some(Value::Float(x)) => write!(out, "{x}")?,
                Some(Value::Str(s)) => render_json_string(s, out)?,
                Some(Value::List(items)) => {
                    out.write_char('[')?;
                    open.push(Open::List(items.iter(), false));
                }
                Some(Value::Map(pairs)) => {
                    out.write_char('{')?;
                    open.push(Open::Map(pairs.iter(), false));
                }
                None => {}
            }
            let Some(top) = open.last_mut() else { return Ok(()) };
            match top {
                Open::List(items, written) => match items.next() {
                    Some(item) => {
                        if std::mem::replace(written, true) {
                            out.write_char(',')?;
                        }
                        next = Some(item);
                    }
                    None => {
                        out.write_char(']')?;
                        open.pop();
                    }
                },
                Open::Map(pairs, written) => match pairs.next() {
                    Some((k, v)) => {
                        if std::mem::replace(written, true) {
                            out.write_char(',')?;
                        }
                        render_json_string(k, out)?;
                        out.write_char(':')?;
                        next = Some(v);
                    }
                    None => {
                        out.write_char('}')?;
                        open.pop();
                    }
                },
            }
        }
    }

    /// Every value in this one, itself first, depth first in stored order (the
    /// order of the rendering), walked with an explicit stack: however deep the
    /// value, the walk does not overflow the call stack.
    pub fn nodes(&self) -> Nodes<'_> {
        Nodes { next: Some(self), outermost: None, stack: Vec::new() }
    }

    /// The values in this one that hold no others (strings, numbers, booleans,
    /// nulls), in the order of [`Value::nodes`].
    pub fn leaves(&self) -> impl Iterator<Item = &Value> {
        self.nodes().filter(|v| !matches!(v, Value::List(_) | Value::Map(_)))
    }

    /// Calls `visit` on every value in this one, in the order of
    /// [`Value::nodes`], until it breaks. The hot paths' walk: recursive down
    /// to [`VISIT_DEPTH_RECURSIVE_MAX`] (no iterator state per node), then
    /// through [`Value::nodes`]' explicit stack, so however deep the value the
    /// call stack stays bounded.
    pub fn try_each_node<'v, B>(&'v self, visit: &mut impl FnMut(&'v Value) -> ControlFlow<B>) -> ControlFlow<B> {
        self.try_each_node_at(0, visit)
    }

    fn try_each_node_at<'v, B>(
        &'v self,
        depth: usize,
        visit: &mut impl FnMut(&'v Value) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        if depth == VISIT_DEPTH_RECURSIVE_MAX {
            return self.nodes().try_for_each(visit);
        }
        visit(self)?;
        // A scalar item's walk is its visit: made in the loop, without a call.
        let mut item = |v: &'v Value| match v {
            Value::List(_) | Value::Map(_) => v.try_each_node_at(depth + 1, visit),
            leaf => visit(leaf),
        };
        match self {
            Value::List(items) => items.iter().try_for_each(&mut item),
            Value::Map(pairs) => pairs.iter().try_for_each(|(_, v)| item(v)),
            _ => ControlFlow::Continue(()),
        }
    }

    /// Calls `visit` on every leaf of this one (see [`Value::leaves`]), in
    /// order, until it breaks; the walk of [`Value::try_each_node`].
    pub fn try_each_leaf<'v, B>(&'v self, visit: &mut impl FnMut(&'v Value) -> ControlFlow<B>) -> ControlFlow<B> {
        self.try_each_node(&mut |v| match v {
            Value::List(_) | Value::Map(_) => ControlFlow::Continue(()),
            leaf => visit(leaf),
        })
    }

    /// A rough token count for this value as a model would see it (4 bytes a token,
    /// the common rule of thumb), used by the cost model.
    pub fn token_estimate(&self) -> u32 {
        let bytes = self.rendered_len();
        (bytes.div_ceil(4)).min(u32::MAX as usize) as u32
    }

    /// The estimate's byte count: each value's own share ([`Value::own_len`]),
    /// summed over [`Value::nodes`]. By recursion down to
    /// [`VISIT_DEPTH_RECURSIVE_MAX`] levels, a container's scalar items summed
    /// in its loop (no call per leaf), then through [`Value::nodes`]' explicit
    /// stack, so however deep the value the call stack stays bounded.
    fn rendered_len(&self) -> usize {
        match self {
            Value::List(_) | Value::Map(_) => self.container_len_at(0),
            scalar => scalar.own_len(),
        }
    }

    fn container_len_at(&self, depth: usize) -> usize {
        if depth == VISIT_DEPTH_RECURSIVE_MAX {
            return self.nodes().map(Value::own_len).sum();
        }
        let item_len = |v: &Value| match v {
            Value::List(_) | Value::Map(_) => v.container_len_at(depth + 1),
            scalar => scalar.own_len(),
        };
        match self {
            Value::List(items) => 2 + items.len() + items.iter().map(item_len).sum::<usize>(),
            Value::Map(pairs) => 2 + pairs.iter().map(|(k, v)| k.len() + 4 + item_len(v)).sum::<usize>(),
            scalar => scalar.own_len(),
        }
    }

    /// One value's own share of [`Value::rendered_len`]: brackets and one
    /// more per item for a list; brackets and four more than its key per field
    /// for a map; its rendering's length for a scalar, but 2 more than its
    /// bytes for a string (its escapes are not counted).
    #[inline(always)]
    fn own_len(&self) -> usize {
        match self {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Int(n) => 1 + (n.unsigned_abs().checked_ilog10().unwrap_or(0) as usize),
            Value::Float(x) => x.to_string().len(),
            Value::Str(s) => s.len() + 2,
            Value::List(items) => 2 + items.len(),
            Value::Map(pairs) => 2 + pairs.iter().map(|(k, _)| k.len() + 4).sum::<usize>(),
        }
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

/// The walk of [`Value::nodes`]: the values still to visit wait on an explicit
/// stack (the next sibling below the children of the current one).
pub struct Nodes<'v> {
    /// Visited next, before the stack (a scalar's walk allocates nothing).
    next: Option<&'v Value>,
    /// The outermost container being walked, with what is left of it: held
    /// here, so that walking a flat list or map allocates nothing.
    outermost: Option<Open<'v>>,
    /// The containers inside it being walked, innermost last: the stack grows
    /// with the depth of the value, not with its size. Empty while
    /// `outermost` is `None`.
    stack: Vec<Open<'v>>,
}

/// A list or map being walked: the items (or fields' values) not yet visited.
enum Open<'v> {
    List(std::slice::Iter<'v, Value>),
    Map(std::slice::Iter<'v, (Key, Value)>),
}

impl<'v> Iterator for Nodes<'v> {
    type Item = &'v Value;

    fn next(&mut self) -> Option<&'v Value> {
        let value = match self.next.take() {
            Some(value) => value,
            None => loop {
                let top = match self.stack.last_mut() {
                    Some(top) => top,
                    None => self.outermost.as_mut()?,
                };
                let item = match top {
                    Open::List(items) => items.next(),
                    Open::Map(pairs) => pairs.next().map(|(_, v)| v),
                };
                match item {
                    Some(item) => break item,
                    None if self.stack.pop().is_none() => self.outermost = None,
                    None => {}
                }
            },
        };
        let open = match value {
            Value::List(items) if !items.is_empty() => Open::List(items.iter()),
            Value::Map(pairs) if !pairs.is_empty() => Open::Map(pairs.iter()),
            _ => return Some(value),
        };
        if self.outermost.is_none() {
            assert!(self.stack.is_empty(), "the walk holds no inner container outside an outer one");
            self.outermost = Some(open);
        } else {
            self.stack.push(open);
        }
        Some(value)
    }
}

/// The kind of a [`Value`], as named in tool schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueKind {
    /// `null`
    Null,
    /// A boolean.
    Bool,
    /// An integer.
    Int,
    /// A string.
    Str,
    /// A list.
    List,
    /// A map.
    Map,
    /// A floating-point number (JSON Schema's `number`; an integer is accepted
    /// where one is expected).
    Float,
}

fn render_json_string<W: fmt::Write>(s: &str, out: &mut W) -> fmt::Result {
    out.write_char('"')?;
    // Every character that needs an escape is ASCII, so the string is scanned as
    // bytes and the runs between escapes are written in one piece (a byte index
    // of an ASCII byte is always a character boundary).
    let mut start = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            0..0x20 => "",
            _ => continue,
        };
        out.write_str(&s[start..i])?;
        if escape.is_empty() {
            write!(out, "\\u{byte:04x}")?;
        } else {
            out.write_str(escape)?;
        }
        start = i + 1;
    }
    out.write_str(&s[start..])?;
    out.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn renders_compact_json_in_order() {
        let v = Value::map([("b", Value::Int(2)), ("a", Value::List(vec![Value::str("x\"y"), Value::Null]))]);
        assert_eq!(v.render(), r#"{"b":2,"a":["x\"y",null]}"#);
    }

    #[test]
    fn escapes_in_strings() {
        let v = Value::map([("k\"ey", Value::str("a\"b\\c\nd\u{1}e\u{1f}é\t"))]);
        assert_eq!(v.render(), "{\"k\\\"ey\":\"a\\\"b\\\\c\\nd\\u0001e\\u001fé\\u0009\"}");
        assert_eq!(Value::Int(-42).render(), "-42");
    }

    #[test]
    fn lenient_int_reads_like_a_careless_reader() {
        assert_eq!(Value::str("4,250").lenient_int(), 4);
        assert_eq!(Value::str("-12abc").lenient_int(), -12);
        assert_eq!(Value::Null.lenient_int(), 0);
        assert_eq!(Value::Int(7).lenient_int(), 7);
    }

    #[test]
    fn floats_render_shortest_and_never_as_integers() {
        let f = |x| Value::Float(Float::new(x).expect("finite"));
        assert_eq!(f(54.0).render(), "54.0");
        assert_eq!(f(0.1).render(), "0.1");
        assert_eq!(f(-12.99).render(), "-12.99");
        assert_eq!(f(-0.0), f(0.0));
        assert!(Float::new(f64::NAN).is_none() && Float::new(f64::INFINITY).is_none());
        assert_eq!(f(12.99).lenient_int(), 12);
    }

    #[test]
    fn deep_values_render_and_walk_without_recursion() {
        const DEPTH: usize = 100_000;
        let mut deep = Value::Int(1);
        for _ in 0..DEPTH {
            deep = Value::List(vec![deep]);
        }
        let text = deep.render();
        let (nodes, tokens) = (deep.nodes().count(), deep.token_estimate());
        let leaves: Vec<Value> = deep.leaves().cloned().collect();
        let mut visited = 0;
        let ControlFlow::<Infallible>::Continue(()) = deep.try_each_node(&mut |_| {
            visited += 1;
            ControlFlow::Continue(())
        });
        // The derived drop recurses: take the value apart before any assertion
        // can fail (a panic would drop it whole).
        let mut v = deep;
        while let Value::List(mut items) = v {
            v = items.pop().unwrap_or_default();
        }
        assert_eq!(text, format!("{}1{}", "[".repeat(DEPTH), "]".repeat(DEPTH)));
        assert_eq!((nodes, tokens), (DEPTH + 1, (3 * DEPTH + 1).div_ceil(4) as u32));
        assert_eq!(leaves, vec![Value::Int(1)]);
        assert_eq!(visited, DEPTH + 1);
    }

    /// A value of `depth` levels whose every level holds a scalar, a map and
    /// a list (the list goes on down).
    fn branching(depth: usize) -> Value {
        let mut v = Value::str("bottom");
        for level in 0..depth as i64 {
            v = Value::List(vec![
                Value::Int(level),
                Value::map([("k", Value::Bool(level % 2 == 0)), ("m", Value::List(Vec::new()))]),
                v,
            ]);
        }
        v
    }

    #[test]
    fn the_recursive_visit_sees_the_nodes_in_the_walk_s_order_at_every_depth() {
        let depths = [0, 1, 2, VISIT_DEPTH_RECURSIVE_MAX - 1, VISIT_DEPTH_RECURSIVE_MAX, VISIT_DEPTH_RECURSIVE_MAX + 1];
        for depth in depths.into_iter().chain([3 * VISIT_DEPTH_RECURSIVE_MAX]) {
            let v = branching(depth);
            let walked: Vec<*const Value> = v.nodes().map(|n| n as *const Value).collect();
            let mut visited = Vec::new();
            let ControlFlow::<Infallible>::Continue(()) = v.try_each_node(&mut |n| {
                visited.push(n as *const Value);
                ControlFlow::Continue(())
            });
            assert_eq!(visited, walked, "depth {depth}");
            let leaves: Vec<&Value> = v.leaves().collect();
            let mut visited_leaves = Vec::new();
            let ControlFlow::<Infallible>::Continue(()) = v.try_each_leaf(&mut |n| {
                visited_leaves.push(n);
                ControlFlow::Continue(())
            });
            assert_eq!(visited_leaves, leaves, "depth {depth}");
            // A break stops the walk at once, wherever it is.
            for stop in [0, walked.len() / 2, walked.len() - 1] {
                let mut seen = 0;
                let flow = v.try_each_node(&mut |_| {
                    seen += 1;
                    if seen > stop { ControlFlow::Break(seen) } else { ControlFlow::Continue(()) }
                });
                assert_eq!(flow, ControlFlow::Break(stop + 1), "depth {depth}, stop {stop}");
            }
        }
    }

    #[test]
    fn nodes_walk_in_rendering_order_and_lengths_match() {
        let v = Value::map([
            ("b", Value::List(vec![Value::Int(-12), Value::str("x\"y"), Value::Null])),
            ("a", Value::map([("c", Value::Bool(true))])),
            ("e", Value::List(Vec::new())),
        ]);
        let leaves: Vec<String> = v.leaves().map(Value::render).collect();
        assert_eq!(leaves, ["-12", "\"x\\\"y\"", "null", "true"]);
        assert_eq!(v.nodes().count(), 8);
        // The recursive definition the walk replaces.
        fn by_recursion(v: &Value) -> usize {
            match v {
                Value::List(items) => 2 + items.iter().map(|v| by_recursion(v) + 1).sum::<usize>(),
                Value::Map(pairs) => 2 + pairs.iter().map(|(k, v)| k.len() + 4 + by_recursion(v)).sum::<usize>(),
                other => other.rendered_len(),
            }
        }
        assert_eq!(v.rendered_len(), by_recursion(&v));
        assert_eq!(v.rendered_len(), 47);
    }

    #[test]
    fn the_rendered_length_is_the_sum_over_the_walk_at_every_depth() {
        let by_walk = |v: &Value| v.nodes().map(Value::own_len).sum::<usize>();
        let f = |x| Value::Float(Float::new(x).expect("finite"));
        let flat = Value::map([
            ("ints", Value::List([0, 9, 10, -99, 100, i64::MIN, i64::MAX].map(Value::Int).to_vec())),
            ("text", Value::str("é \"q\"")),
            ("floats", Value::List(vec![f(0.5), f(-1e300)])),
            ("none", Value::Null),
            ("yes", Value::Bool(true)),
            ("empty", Value::Map(Vec::new())),
        ]);
        let depths = [0, 1, VISIT_DEPTH_RECURSIVE_MAX - 1, VISIT_DEPTH_RECURSIVE_MAX, VISIT_DEPTH_RECURSIVE_MAX + 1];
        for depth in depths.into_iter().chain([3 * VISIT_DEPTH_RECURSIVE_MAX]) {
            let mut v = branching(depth);
            v = Value::List(vec![v, flat.clone()]);
            assert_eq!(v.rendered_len(), by_walk(&v), "depth {depth}");
        }
        for scalar in [Value::Null, Value::Int(-5), f(2.25), Value::str("x")] {
            assert_eq!(scalar.rendered_len(), by_walk(&scalar));
        }
    }

    #[test]
    fn set_replaces_or_appends() {
        let mut v = Value::map([("a", Value::Int(1))]);
        v.set("a", Value::Int(2));
        v.set("b", Value::Int(3));
        assert_eq!(v.render(), r#"{"a":2,"b":3}"#);
    }
}
