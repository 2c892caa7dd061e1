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
    let mut text = [0u8; 21];
    text[..5].copy_from_slice(b"idem-");
    // Most significant nibble first, as the big-endian bytes in hex.
    text[5..13].copy_from_slice(&hex_digits((hash >> 32) as u32).to_be_bytes());
    text[13..].copy_from_slice(&hex_digits(hash as u32).to_be_bytes());
    debug_assert!(text.is_ascii());
    // SAFETY: every byte is ASCII, so the bytes are UTF-8: "idem-" and the
    // digits of `hex_digits`, each `'0' + v` or `'a' + v - 10` for a nibble
    // `v` (proptested: `key_text_is_the_hash_in_hex`). Validating 21 bytes
    // cost more than making the digits.
    unsafe { String::from_utf8_unchecked(text.to_vec()) }
}

/// The eight lower-case hex digits of `n`, most significant in the word's
/// most significant byte, computed a word at a time: the nibbles spread one
/// to a byte, then each turned to its digit at once (`'0' + n`, plus
/// `'a' - '0' - 10` where `n > 9`, which is where `n + 6` carries into bit 4).
fn hex_digits(n: u32) -> u64 {
    // n's four bytes, one to each 16-bit lane (the most significant highest).
    let mut x = u64::from(n);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    // In each lane the byte's high nibble to the lane's high byte, its low
    // nibble to the low byte.
    x = ((x << 4) & 0x0f00_0f00_0f00_0f00) | (x & 0x000f_000f_000f_000f);
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    x + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10)
}

/// Containers deeper than this are hashed through `Value::write_json`, whose
/// explicit stack cannot overflow the call stack ([`Fnv1a::json`] recurses).
const JSON_DEPTH_MAX: u32 = 32;

/// FNV-1a 64, fed as a `fmt::Write` so a value's JSON can stream into it.
struct Fnv1a(u64);

impl Fnv1a {
    /// Feeds one byte.
    #[inline(always)]
    fn byte(&mut self, byte: u8) {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        self.0 ^= u64::from(byte);
        self.0 = self.0.wrapping_mul(PRIME);
    }

    /// Feeds the eight bytes of `word`, least significant first (the order
    /// they had in memory): one load for eight bytes.
    #[inline(always)]
    fn word(&mut self, word: u64) {
        for i in 0..8 {
            self.byte((word >> (8 * i)) as u8);
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.word(u64::from_le_bytes(word.try_into().expect("chunks of 8")));
        }
        for &byte in words.remainder() {
            self.byte(byte);
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
    /// nothing and returns false. One pass: each word is tested, then fed;
    /// at an escape the state goes back to what it was.
    fn plain_string(&mut self, s: &str) -> bool {
        let before = self.0;
        self.byte(b'"');
        let mut words = s.as_bytes().chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
            if word_needs_escape(word) {
                self.0 = before;
                return false;
            }
            self.word(word);
        }
        for &byte in words.remainder() {
            if byte == b'"' || byte == b'\\' || byte < 0x20 {
                self.0 = before;
                return false;
            }
            self.byte(byte);
        }
        self.byte(b'"');
        true
    }
}

/// A byte of ones in each of a word's eight.
const ONES: u64 = 0x0101_0101_0101_0101;

/// Whether a byte of the eight of `w` needs an escape in JSON
/// (`"`, `\\`, below 0x20): `any_zero(w)` is non-zero exactly when a byte of
/// `w` is zero, and `any_below_space(w)` exactly when a byte is below 0x20
/// (the any-tests of "Bit Twiddling Hacks" are exact; only which byte they
/// point at may be off, and that is not asked). Proptested against the
/// per-byte test.
#[inline(always)]
fn word_needs_escape(w: u64) -> bool {
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let any_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS;
    let any_below_space = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let quote = any_zero(w ^ (ONES * u64::from(b'"')));
    let backslash = any_zero(w ^ (ONES * u64::from(b'\\')));
    (any_below_space(w) | quote | backslash) != 0
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
        let mut fnv = FNV_OFFSET;
        let bytes = [tool_name.as_bytes(), &[0], args.render().as_bytes()].concat();
        for byte in bytes {
            fnv ^= u64::from(byte);
            fnv = fnv.wrapping_mul(0x0000_0100_0000_01b3);
        }
        fnv
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
    fn ints_hash_as_rendered() {
        let powers = (0..19).map(|e| 10i64.pow(e));
        let edges = powers.flat_map(|p| [p - 1, p, p + 1, -p + 1, -p, -p - 1]);
        for n in edges.chain([0, i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1]) {
            let args = Value::map([("n", Value::Int(n))]);
            assert_eq!(hashed(Fnv1a(FNV_OFFSET), "t", &args), hashed_by_rendering("t", &args), "{n}");
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
        fn escapes_are_found_as_byte_by_byte(bytes in proptest::prelude::any::<[u8; 8]>()) {
            let plain = bytes.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20);
            proptest::prop_assert_eq!(word_needs_escape(u64::from_le_bytes(bytes)), plain);
        }

        /// Fed in pieces of any length, the bytes hash as fed one at a time.
        #[test]
        fn pieces_hash_as_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40), cut in 0usize..40) {
            let cut = cut.min(bytes.len());
            let mut pieces = Fnv1a(FNV_OFFSET);
            pieces.bytes(&bytes[..cut]);
            pieces.bytes(&bytes[cut..]);
            let mut one = FNV_OFFSET;
            for &byte in &bytes {
                one ^= u64::from(byte);
                one = one.wrapping_mul(0x0000_0100_0000_01b3);
            }
            proptest::prop_assert_eq!(pieces.0, one);
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
