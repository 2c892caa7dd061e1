//! Gives every write an idempotency key derived from what it asks for.
//!
//! A write whose answer was lost (a timeout after the service applied it) looks
//! exactly like a write that never arrived, so both a stack's retry and a planner's
//! "it probably didn't go through" send it again, and without a key the service
//! applies it twice. The key here is a stable hash of the tool and its arguments,
//! so every copy of the same request carries the same key and the service applies
//! it once; a different request gets a different key.

use agentsim_engine::{Action, Agent, AgentCx, Input, ToolCall, Value};

use crate::catalog;

/// Distinct keys remembered for noting each key once; beyond it the oldest is
/// forgotten (its next use is noted again, harmless).
const KEYS_NOTED_MAX: usize = 256;

/// The key for a write: `"idem-"` and 16 hex digits of FNV-1a 64 over the tool name,
/// a zero byte, and the compact JSON of the arguments.
///
/// FNV-1a rather than `std`'s hasher: its value is fixed by this code, not by the
/// platform or the Rust version, so keys (and the trajectories that show them) are
/// the same everywhere.
pub fn idempotency_key(tool_name: &str, args: &Value) -> String {
    key_text(hashed(Fnv1a(FNV_OFFSET), tool_name, args))
}

/// FNV-1a 64's offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The key of a write for one agent's own keys ([`Idempotency::per_agent`]):
/// [`idempotency_key`]'s hash with the agent's `salt` fed first, so that two
/// agents asking for the same write get different keys.
pub fn agent_idempotency_key(salt: u64, tool_name: &str, args: &Value) -> String {
    key_text(hashed(salted(salt), tool_name, args))
}

/// The hash state of an agent's own keys: the salt fed first.
fn salted(salt: u64) -> Fnv1a {
    let mut fnv = Fnv1a(FNV_OFFSET);
    fnv.bytes(&salt.to_le_bytes());
    fnv
}

/// The hash a key shows: `fnv` fed the tool name, a zero byte and the
/// compact JSON of the arguments.
fn hashed(mut fnv: Fnv1a, tool_name: &str, args: &Value) -> u64 {
    fnv.bytes(tool_name.as_bytes());
    // The zero byte keeps ("ab", "c...") and ("a", "bc...") apart.
    fnv.bytes(&[0]);
    // Hashed as it is rendered: the same bytes as `args.render()`, without the
    // string (the key is computed on every write).
    fnv.json(args, 0);
    fnv.0
}

/// The key for the hash `hash`: `"idem-"` and its 16 hex digits (one key for
/// one hash, so a layer may remember hashes instead of keys).
fn key_text(hash: u64) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = *b"idem-0000000000000000";
    for (i, digit) in text[5..].iter_mut().enumerate() {
        // Most significant nibble first, as the big-endian bytes in hex.
        *digit = DIGITS[((hash >> (60 - 4 * i)) & 0xf) as usize];
    }
    // All ASCII: the conversion cannot fail, and the fallback is never taken.
    String::from_utf8(text.to_vec()).unwrap_or_default()
}

/// Containers deeper than this are hashed through `Value::write_json`, whose
/// explicit stack cannot overflow the call stack ([`Fnv1a::json`] recurses).
const JSON_DEPTH_MAX: u32 = 32;

/// FNV-1a 64, fed as a `fmt::Write` so a value's JSON can stream into it.
struct Fnv1a(u64);

impl Fnv1a {
    fn bytes(&mut self, bytes: &[u8]) {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }

    /// Feeds the bytes of `value.render()`, written here without the
    /// formatter for what needs no escaping (almost every write's arguments);
    /// an escaped string, a float or a deep container goes through
    /// `Value::write_json` itself. FNV-1a is a stream hash: the same bytes in
    /// any pieces give the same hash. `proptest`ed against the rendering.
    fn json(&mut self, value: &Value, depth: u32) {
        match value {
            Value::Null => self.bytes(b"null"),
            Value::Bool(true) => self.bytes(b"true"),
            Value::Bool(false) => self.bytes(b"false"),
            Value::Int(n) => self.bytes(itoa::Buffer::new().format(*n).as_bytes()),
            Value::Str(s) if self.plain_string(s) => {}
            Value::List(items) if depth < JSON_DEPTH_MAX => {
                self.bytes(b"[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.bytes(b",");
                    }
                    self.json(item, depth + 1);
                }
                self.bytes(b"]");
            }
            Value::Map(pairs) if depth < JSON_DEPTH_MAX => {
                self.bytes(b"{");
                for (i, (key, item)) in pairs.iter().enumerate() {
                    if i > 0 {
                        self.bytes(b",");
                    }
                    if !self.plain_string(key) {
                        let _ = Value::Str(key.to_string()).write_json(self);
                    }
                    self.bytes(b":");
                    self.json(item, depth + 1);
                }
                self.bytes(b"}");
            }
            Value::Str(_) | Value::Float(_) | Value::List(_) | Value::Map(_) => {
                let _ = value.write_json(self);
            }
        }
    }

    /// Feeds `s` as a JSON string and returns true when none of its bytes
    /// needs an escape (`"`, `\\`, control characters); otherwise feeds
    /// nothing and returns false.
    fn plain_string(&mut self, s: &str) -> bool {
        if needs_escape(s.as_bytes()) {
            return false;
        }
        self.bytes(b"\"");
        self.bytes(s.as_bytes());
        self.bytes(b"\"");
        true
    }
}

/// Whether a byte of `bytes` needs an escape in JSON (`"`, `\\`, below 0x20),
/// tested eight bytes at a time: `any_zero(w)` is non-zero exactly when a byte
/// of `w` is zero, and `any_below_space(w)` exactly when a byte is below 0x20
/// (the any-tests of "Bit Twiddling Hacks" are exact; only which byte they
/// point at may be off, and that is not asked). Proptested against the plain
/// per-byte test.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let any_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS;
    let any_below_space = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let quote = any_zero(w ^ (ONES * u64::from(b'"')));
        let backslash = any_zero(w ^ (ONES * u64::from(b'\\')));
        if (any_below_space(w) | quote | backslash) != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20)
}

impl std::fmt::Write for Fnv1a {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

/// A stack layer that adds an idempotency key to every write that lacks one.
pub struct Idempotency {
    inner: Box<dyn Agent>,
    /// The hashes of the keys noted (a key is its hash in hex, so comparing
    /// hashes compares keys without keeping their text).
    noted: Vec<u64>,
    /// For keys of this agent's own: its salt (see [`Idempotency::per_agent`]).
    salt: Option<u64>,
}

impl Idempotency {
    /// Wraps `inner`. The layer draws no randomness: the same write gets the
    /// same key from every agent, so a service that honours keys applies it
    /// once however many agents (sessions) send it.
    pub fn new(inner: Box<dyn Agent>) -> Self {
        Self { inner, noted: Vec::new(), salt: None }
    }

    /// Wraps `inner` with keys of this agent's own, as a client that makes up
    /// a key per request (a UUID) and keeps it across its retries: the retries
    /// of one write share a key, but the same write sent by another agent (a
    /// second session of the same customer) carries another, so the service
    /// applies it again. `salt` is drawn from the layer's stream.
    pub fn per_agent(inner: Box<dyn Agent>, salt: u64) -> Self {
        Self { inner, noted: Vec::new(), salt: Some(salt) }
    }

    fn key(&mut self, call: &mut ToolCall, cx: &mut AgentCx<'_>) {
        if call.idempotency_key.is_some() || !catalog::is_write(cx.catalog, call.tool) {
            return;
        }
        // A write tool is in the catalog (checked above), so its name is at hand.
        let name = catalog::def(cx.catalog, call.tool).map_or("", |d| d.name.as_str());
        let fnv = match self.salt {
            None => Fnv1a(FNV_OFFSET),
            Some(salt) => salted(salt),
        };
        let hash = hashed(fnv, name, &call.args);
        let key = key_text(hash);
        if !self.noted.contains(&hash) {
            cx.note("idempotency", "key", Value::map([("key", Value::str(key.clone()))]));
            if self.noted.len() >= KEYS_NOTED_MAX {
                self.noted.remove(0);
            }
            self.noted.push(hash);
        }
        call.idempotency_key = Some(key);
    }
}

impl Agent for Idempotency {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let mut action = self.inner.step(input, cx);
        if let Action::Call(call) = &mut action {
            self.key(call, cx);
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, refund, step};

    fn keyed(call: ToolCall) -> (Option<String>, usize) {
        let catalog = testkit::catalog();
        let (inner, _) = Script::always(Action::Call(call));
        let mut layer = Idempotency::new(inner);
        let s = step(&mut layer, &catalog, 0, testkit::user("hi"));
        let Action::Call(call) = s.action else { panic!("expected a call") };
        (call.idempotency_key, s.notes.len())
    }

    #[test]
    fn identical_requests_share_a_key_different_ones_do_not() {
        let (a, notes) = keyed(refund("o-1", 100));
        let (b, _) = keyed(refund("o-1", 100));
        let (c, _) = keyed(refund("o-1", 101));
        let (d, _) = keyed(refund("o-2", 100));
        assert_eq!(notes, 1);
        let a = a.expect("a write gets a key");
        assert!(a.starts_with("idem-") && a.len() == 21 && a[5..].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_eq!(Some(&a), b.as_ref());
        assert_ne!(Some(&a), c.as_ref());
        assert_ne!(Some(&a), d.as_ref());
        assert_ne!(c, d);
    }

    #[test]
    fn reads_and_keyed_writes_are_left_alone() {
        assert_eq!(keyed(lookup("o-1")), (None, 0));
        let own = ToolCall { idempotency_key: Some("mine".into()), ..refund("o-1", 100) };
        assert_eq!(keyed(own), (Some("mine".into()), 0));
    }

    #[test]
    fn each_key_is_noted_once() {
        let catalog = testkit::catalog();
        let (inner, _) = Script::always(Action::Call(refund("o-1", 100)));
        let mut layer = Idempotency::new(inner);
        assert_eq!(step(&mut layer, &catalog, 0, testkit::user("a")).notes.len(), 1);
        assert_eq!(step(&mut layer, &catalog, 0, testkit::user("b")).notes.len(), 0);
    }

    #[test]
    fn keys_per_agent_differ_between_agents_and_not_between_retries() {
        let catalog = testkit::catalog();
        let key_of = |salt: u64| {
            let (inner, _) = Script::always(Action::Call(refund("o-1", 100)));
            let mut layer = Idempotency::per_agent(inner, salt);
            let mut keys = Vec::new();
            for text in ["a", "b"] {
                let Action::Call(call) = step(&mut layer, &catalog, 0, testkit::user(text)).action else {
                    panic!("expected a call")
                };
                keys.push(call.idempotency_key.expect("a write gets a key"));
            }
            keys
        };
        let (one, other) = (key_of(1), key_of(2));
        assert_eq!(one[0], one[1], "the same write of one agent keeps its key");
        assert_ne!(one[0], other[0], "two agents' keys for the same write differ");
        assert_ne!(one[0], keyed(refund("o-1", 100)).0.unwrap(), "and differ from the shared key");
    }

    #[test]
    fn key_is_stable() {
        // Pinned (computed independently): a change here changes every trajectory
        // digest that shows a key, and every stored incident that contains one.
        let (key, _) = keyed(refund("o-1", 100));
        assert_eq!(key.as_deref(), Some("idem-153073c8f69d052e"));
    }

    /// The key's hash the slow way: FNV-1a over the bytes of the rendering.
    fn hashed_by_rendering(tool_name: &str, args: &Value) -> u64 {
        let mut fnv = Fnv1a(FNV_OFFSET);
        fnv.bytes(tool_name.as_bytes());
        fnv.bytes(&[0]);
        fnv.bytes(args.render().as_bytes());
        fnv.0
    }

    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        // Strings with and without the characters that need an escape.
        let text = prop_oneof![Just(String::new()), "[a-z0-9 -]{1,20}", "[a-z\"\\\\\n\t\u{1}\u{7f}é]{0,20}"];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            (-1e6f64..1e6).prop_filter_map("finite", |x| agentsim_engine::value::Float::new(x).map(Value::Float)),
            text.clone().prop_map(Value::Str),
        ];
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::List),
                proptest::collection::vec((text.clone(), inner), 0..6).prop_map(Value::map),
            ]
        })
    }

    proptest::proptest! {
        /// The hand-written walk hashes exactly the bytes of the rendering.
        #[test]
        fn the_walk_hashes_the_rendering(args in any_value(), name in "[a-z_]{1,10}") {
            proptest::prop_assert_eq!(hashed(Fnv1a(FNV_OFFSET), &name, &args), hashed_by_rendering(&name, &args));
        }
    }

    #[test]
    fn deep_values_hash_as_rendered() {
        let mut deep = Value::str("leaf \"quoted\"");
        for depth in 0..200 {
            deep = if depth % 2 == 0 {
                Value::List(vec![Value::Int(depth), deep])
            } else {
                Value::map([("k", deep), ("x\ny", Value::Bool(true))])
            };
        }
        assert_eq!(hashed(Fnv1a(FNV_OFFSET), "t", &deep), hashed_by_rendering("t", &deep));
    }

    proptest::proptest! {
        /// The word-at-a-time test says what the byte-at-a-time test says.
        #[test]
        fn escapes_are_found_as_byte_by_byte(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            let plain = bytes.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20);
            proptest::prop_assert_eq!(needs_escape(&bytes), plain);
        }

        /// The key text is the hash's big-endian bytes in hex.
        #[test]
        fn key_text_is_the_hash_in_hex(hash in proptest::prelude::any::<u64>()) {
            let mut expected = String::from("idem-");
            agentsim_engine::hex::push_hex(&mut expected, &hash.to_be_bytes());
            proptest::prop_assert_eq!(key_text(hash), expected);
        }
    }
}
