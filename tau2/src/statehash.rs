//! The state hash `Tau2` of scripted worlds (`state_hash: Tau2(tables:
//! [...])`): tau2-bench's database hash: SHA-256 of Python's
//! `json.dumps(db, sort_keys=True)` (default separators `", "` and `": "`,
//! `ensure_ascii`, floats as Python's `repr`), where `db` maps each table's
//! name to its records by key. tau2 hashes `model_dump()` of its pydantic
//! database, so a world that declares this hash must hold its records as that
//! dump would: every field present (`null` for an unset optional), floats as
//! floats (an importer normalises them; `agentsim import-tau2` does).
//!
//! Hashing 2.8 MB per trajectory would cost more than the trajectory, so the
//! base tables are rendered once per process into one text with SHA-256
//! states saved at record boundaries; a trajectory's hash resumes from the
//! last saved state before its first changed record. Hashes are also kept by
//! the trajectory's changes (most runs of a task end in the same few states).

use std::collections::BTreeMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use agentsim_engine::Value;
use agentsim_worlds::scripted::{Setting, SettingError, State, StateHashKind, StateHasher, Tables};

/// `state_hash: Tau2(tables: [...])`: tau2-bench's database hash over the
/// named tables (all when the list is empty or left out).
pub struct Tau2Hash;

/// The hash's name as written.
const TAU2: &str = "Tau2";

impl StateHashKind for Tau2Hash {
    fn name(&self) -> &'static str {
        TAU2
    }

    /// The tables named, when any: an empty list is left out, as it was when
    /// the hash was an enum variant of the scenario format (other fields are
    /// ignored, as they were then).
    fn canonical(&self, setting: &Setting) -> Result<Setting, SettingError> {
        let tables = tables_of(setting).map_err(|e| SettingError::from(e.message))?;
        let fields = if tables.is_empty() {
            vec![]
        } else {
            vec![("tables", Value::List(tables.into_iter().map(Value::Str).collect()))]
        };
        Ok(Setting::new(TAU2, fields))
    }

    fn build(&self, setting: &Setting, tables: &Tables) -> Result<Box<dyn StateHasher>, SettingError> {
        let names = tables_of(setting).map_err(|e| SettingError::from(e.message))?;
        Ok(Box::new(Tau2Hasher::new(tables, &names).map_err(|e| SettingError::from(e.message))?))
    }
}

/// The field `tables`: a list of table names (empty when left out).
fn tables_of(setting: &Setting) -> Result<Vec<String>, TablesError> {
    let wrong = || TablesError {
        table: None,
        kind: TablesErrorKind::NotAList,
        message: "`Tau2(tables: [...])`: `tables` is a list of table names".to_string(),
    };
    match setting.field("tables") {
        None => Ok(Vec::new()),
        Some(Value::List(items)) => {
            items.iter().map(|v| if let Value::Str(s) = v { Ok(s.clone()) } else { Err(wrong()) }).collect()
        }
        Some(_) => Err(wrong()),
    }
}

/// The field `tables` of `Tau2(tables: [...])` refused: the table at fault
/// (when one is), what is wrong, and the text shown to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablesError {
    /// The table named, when the fault is one name's.
    pub table: Option<String>,
    /// What is wrong.
    pub kind: TablesErrorKind,
    /// The text shown to the user.
    pub message: String,
}

/// What is wrong with the field `tables`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TablesErrorKind {
    /// It is not a list of strings.
    NotAList,
    /// It names a table the world does not have.
    Unknown,
    /// It names a table twice.
    Twice,
}

impl std::fmt::Display for TablesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TablesError {}

/// Hashes kept by changes, at most.
const CACHE_MAX: usize = 1 << 16;

/// Bytes of base text between saved SHA-256 states, at least.
const CHECKPOINT_BYTES: usize = 32 << 10;

/// One table of the database as rendered: its records sorted by key.
struct RenderedTable {
    /// The table's index among the world's tables.
    index: usize,
    /// Its field name, rendered (`"orders"`).
    name: Vec<u8>,
    /// Keys in sorted order, each with its span in `text` (`"key": {...}`).
    entries: Vec<(String, usize, usize)>,
}

/// The tau2 hasher of one world, built once per process.
pub struct Tau2Hasher {
    tables: Vec<RenderedTable>,
    /// The base rendering of every record, entries back to back.
    text: Vec<u8>,
    /// The hash state before (table, entry), every `CHECKPOINT_BYTES` or so.
    checkpoints: Vec<(usize, usize, Sha256)>,
    base_hash: String,
    cache: Mutex<BTreeMap<[u8; 32], String>>,
}

impl Tau2Hasher {
    /// Renders `tables` (the named ones, all when empty).
    pub fn new(base: &Tables, names: &[String]) -> Result<Tau2Hasher, TablesError> {
        let mut chosen: Vec<usize> = Vec::new();
        if names.is_empty() {
            chosen.extend(0..base.len());
        } else {
            for name in names {
                let i = base.iter().position(|t| t.name == *name).ok_or_else(|| {
                    let known: Vec<&str> = base.iter().map(|t| t.name.as_str()).collect();
                    TablesError {
                        table: Some(name.clone()),
                        kind: TablesErrorKind::Unknown,
                        message: format!("no table `{name}` (tables: {})", known.join(", ")),
                    }
                })?;
                if chosen.contains(&i) {
                    return Err(TablesError {
                        table: Some(name.clone()),
                        kind: TablesErrorKind::Twice,
                        message: format!("table `{name}` is named twice"),
                    });
                }
                chosen.push(i);
            }
        }
        chosen.sort_by(|a, b| base[*a].name.cmp(&base[*b].name));
        let mut text = Vec::new();
        let mut tables = Vec::with_capacity(chosen.len());
        for index in chosen {
            let table = &base[index];
            let mut keys: Vec<&String> = table.keys().collect();
            keys.sort();
            let mut entries = Vec::with_capacity(keys.len());
            for key in keys {
                let start = text.len();
                entry(&mut text, key, table.record(key).expect("a listed key has a record"));
                entries.push((key.clone(), start, text.len()));
            }
            let mut name = Vec::new();
            string(&mut name, &table.name);
            tables.push(RenderedTable { index, name, entries });
        }
        let mut hasher = Tau2Hasher {
            tables,
            text,
            checkpoints: Vec::new(),
            base_hash: String::new(),
            cache: Mutex::new(BTreeMap::new()),
        };
        let mut checkpoints = Vec::new();
        hasher.base_hash = hasher.feed(Sha256::new(), 0, 0, &BTreeMap::new(), Some(&mut checkpoints));
        hasher.checkpoints = checkpoints;
        Ok(hasher)
    }
}

impl StateHasher for Tau2Hasher {
    fn base_hash(&self) -> &str {
        &self.base_hash
    }

    fn hash(&self, state: &State) -> String {
        // The records that differ from the base, rendered, by (table, key).
        let mut changes: BTreeMap<(usize, String), Option<Vec<u8>>> = BTreeMap::new();
        for (t, key, record) in state.changes() {
            let Some(slot) = self.tables.iter().position(|r| r.index == t) else { continue };
            let base = state.base_record(t, key);
            if base == record {
                continue;
            }
            changes.insert((slot, key.to_string()), record.map(|r| rendered_entry(key, r)));
        }
        if changes.is_empty() {
            return self.base_hash.clone();
        }
        let mut id = blake3::Hasher::new();
        for ((slot, key), bytes) in &changes {
            id.update(&(*slot as u64).to_le_bytes());
            id.update(&(key.len() as u64).to_le_bytes());
            id.update(key.as_bytes());
            match bytes {
                Some(b) => {
                    id.update(&[1]);
                    id.update(&(b.len() as u64).to_le_bytes());
                    id.update(b);
                }
                None => {
                    id.update(&[0]);
                }
            }
        }
        let id: [u8; 32] = id.finalize().into();
        if let Some(hash) = self.cache.lock().expect("the cache is never poisoned").get(&id) {
            return hash.clone();
        }
        // Resume from the last saved state before the first change.
        let (slot, key) = changes.keys().next().expect("not empty").clone();
        let entry = self.tables[slot].entries.partition_point(|(k, _, _)| *k < key);
        let checkpoint = self.checkpoints.iter().rev().find(|(t, e, _)| (*t, *e) <= (slot, entry));
        let hash = match checkpoint {
            Some((t, e, state)) => self.feed(state.clone(), *t, *e, &changes, None),
            None => self.feed(Sha256::new(), 0, 0, &changes, None),
        };
        let mut cache = self.cache.lock().expect("the cache is never poisoned");
        if cache.len() < CACHE_MAX {
            cache.insert(id, hash.clone());
        }
        hash
    }
}

impl Tau2Hasher {
    /// Feeds the database text from entry `entry` of table `slot` on (the hash
    /// state holds everything before it), with `changes` applied; saves
    /// checkpoints into `save` when given (inside a table, never before its
    /// first entry, whose state would already hold the table's name).
    fn feed(
        &self,
        mut sha: Sha256,
        slot: usize,
        entry: usize,
        changes: &BTreeMap<(usize, String), Option<Vec<u8>>>,
        mut save: Option<&mut Vec<(usize, usize, Sha256)>>,
    ) -> String {
        let mut since_checkpoint = 0usize;
        if slot == 0 && entry == 0 {
            sha.update(b"{");
        }
        for s in slot..self.tables.len() {
            let table = &self.tables[s];
            let from = if s == slot { entry } else { 0 };
            if from == 0 {
                if s > 0 {
                    sha.update(b", ");
                }
                sha.update(&table.name);
                sha.update(b": {");
            }
            self.feed_entries(&mut sha, s, from, changes, save.as_deref_mut(), &mut since_checkpoint);
            sha.update(b"}");
        }
        sha.update(b"}");
        let digest = sha.finalize();
        let mut out = String::with_capacity(64);
        agentsim_engine::hex::push_hex(&mut out, &digest);
        out
    }

    /// Feeds table `s`'s entries from `from` on, with its `changes` merged in
    /// key order; saves checkpoints into `save` when given.
    fn feed_entries(
        &self,
        sha: &mut Sha256,
        s: usize,
        from: usize,
        changes: &BTreeMap<(usize, String), Option<Vec<u8>>>,
        mut save: Option<&mut Vec<(usize, usize, Sha256)>>,
        since_checkpoint: &mut usize,
    ) {
        let table = &self.tables[s];
        // Merge the base entries with this table's changes, in key order.
        let mut first = from == 0;
        let mut added = changes.range((s, String::new())..(s + 1, String::new())).peekable();
        let write = |sha: &mut Sha256, bytes: &[u8], first: &mut bool| {
            if !*first {
                sha.update(b", ");
            }
            *first = false;
            sha.update(bytes);
        };
        for e in from..table.entries.len() {
            let (key, start, end) = &table.entries[e];
            if let Some(points) = save.as_deref_mut()
                && e > 0
                && *since_checkpoint >= CHECKPOINT_BYTES
            {
                points.push((s, e, sha.clone()));
                *since_checkpoint = 0;
            }
            while let Some(((_, k), bytes)) = added.peek() {
                if k >= key {
                    break;
                }
                if let Some(b) = bytes {
                    write(sha, b, &mut first);
                }
                added.next();
            }
            match added.peek() {
                Some(((_, k), bytes)) if k == key => {
                    if let Some(b) = bytes {
                        write(sha, b, &mut first);
                    }
                    added.next();
                }
                _ => {
                    write(sha, &self.text[*start..*end], &mut first);
                    *since_checkpoint += end - start;
                }
            }
        }
        for (_, bytes) in added {
            if let Some(b) = bytes {
                write(sha, b, &mut first);
            }
        }
    }
}

fn rendered_entry(key: &str, record: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    entry(&mut out, key, record);
    out
}

fn entry(out: &mut Vec<u8>, key: &str, record: &Value) {
    string(out, key);
    out.extend_from_slice(b": ");
    python_json(out, record);
}

/// The SHA-256 of `bytes`, in lower-case hex (as Python's `hexdigest`).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` as Python's `json.dumps(value, sort_keys=True)` writes it.
pub fn python_json(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(n) => {
            // Written in place (the base tables' rendering writes one per
            // number of the database).
            use std::io::Write;
            write!(out, "{n}").expect("writing to memory cannot fail");
        }
        Value::Float(x) => out.extend_from_slice(python_float(x.get()).as_bytes()),
        Value::Str(s) => string(out, s),
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                python_json(out, item);
            }
            out.push(b']');
        }
        Value::Map(pairs) => {
            // Records read from JSON files are mostly in key order already:
            // then nothing is sorted (a stable sort would leave them so).
            if pairs.windows(2).all(|w| w[0].0.as_ref() <= w[1].0.as_ref()) {
                python_object(out, pairs.iter());
            } else {
                let mut sorted: Vec<&(agentsim_engine::Key, Value)> = pairs.iter().collect();
                sorted.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
                python_object(out, sorted.into_iter());
            }
        }
    }
}

/// The entries of a map, in the order given, as `json.dumps` writes an object.
fn python_object<'a>(out: &mut Vec<u8>, entries: impl Iterator<Item = &'a (agentsim_engine::Key, Value)>) {
    out.push(b'{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        string(out, k);
        out.extend_from_slice(b": ");
        python_json(out, v);
    }
    out.push(b'}');
}

/// A string as `json.dumps` writes it with `ensure_ascii`: `"` and `\` escaped,
/// the usual short escapes, and everything outside space to `~` as `\uXXXX`
/// (UTF-16, lower-case hex). Runs of characters written as they are are
/// copied whole.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    // `bytes[start..i]` are characters from space to `~` other than `"` and `\`.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        let c = s[i..].chars().next().expect("a character starts here");
        escaped(out, c);
        i += c.len_utf8();
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A character `json.dumps` escapes (any but space to `~`, and `"` and `\`).
fn escaped(out: &mut Vec<u8>, c: char) {
    match c {
        '"' => out.extend_from_slice(b"\\\""),
        '\\' => out.extend_from_slice(b"\\\\"),
        '\n' => out.extend_from_slice(b"\\n"),
        '\r' => out.extend_from_slice(b"\\r"),
        '\t' => out.extend_from_slice(b"\\t"),
        '\u{8}' => out.extend_from_slice(b"\\b"),
        '\u{c}' => out.extend_from_slice(b"\\f"),
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.extend_from_slice(b"\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[usize::from((*unit >> shift) & 0xf)]);
                }
            }
        }
    }
}

/// [`string`] as it was first written, a character at a time: the reference
/// the tests hold it to.
#[cfg(test)]
fn string_by_chars(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
            }
        }
    }
    out.push(b'"');
}

/// A float as Python's `repr` writes it: the shortest digits that read back
/// exactly, in positional notation for exponents from -4 to 15 (with at least
/// one decimal, `100.0`), else as `1.5e-07` / `1e+16`.
pub fn python_float(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as Python's repr does.
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` has an integer exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.abs()));
    }
    out
}

/// Python's `round(x, ndigits)` on a float: the double nearest the exact
/// decimal rounding of `x` (ties to even on the exact binary value).
pub fn python_round(x: f64, ndigits: i64) -> f64 {
    if !x.is_finite() || ndigits > 300 {
        return x;
    }
    if ndigits < 0 {
        let p = 10f64.powi((-ndigits).min(308) as i32);
        let y = (x / p).round_ties_even() * p;
        return if y.is_finite() { y } else { x };
    }
    // Rust's fixed-precision formatting rounds the exact value half to even.
    format!("{x:.prec$}", prec = ndigits as usize).parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases = [
            (100.0, "100.0"),
            (50.88, "50.88"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e16, "1e+16"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (123456789012345.6, "123456789012345.6"),
            (-2.5, "-2.5"),
            (1e22, "1e+22"),
        ];
        for (x, text) in cases {
            assert_eq!(python_float(x), text, "{x:?}");
        }
    }

    #[test]
    fn rounding_is_pythons() {
        assert_eq!(python_round(0.125, 2), 0.12);
        assert_eq!(python_round(0.375, 2), 0.38);
        assert_eq!(python_round(2.675, 2), 2.67);
        assert_eq!(python_round(1.005, 2), 1.0);
        assert_eq!(python_round(-12.345, 2), -12.35);
    }

    #[test]
    fn strings_render_as_a_character_at_a_time() {
        let pieces = [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "\n\r\t\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "é",
            "日本",
            "\u{1F600}",
            " ~",
            "}{",
            "\u{80}\u{ffff}\u{10ffff}",
            "Ω≈ç√",
            "\\u0041",
        ];
        let mut count = 0;
        for a in pieces {
            for b in pieces {
                for c in ["", "x", "\"", "é"] {
                    let text = format!("{a}{c}{b}");
                    let (mut fast, mut slow) = (Vec::new(), Vec::new());
                    string(&mut fast, &text);
                    string_by_chars(&mut slow, &text);
                    assert_eq!(fast, slow, "{text:?}");
                    count += 1;
                }
            }
        }
        assert_eq!(count, pieces.len() * pieces.len() * 4);
    }

    #[test]
    fn maps_render_sorted_whatever_their_order() {
        let sorted = Value::map([("a", Value::Int(-1)), ("b", Value::Int(i64::MAX)), ("c", Value::Int(i64::MIN))]);
        let shuffled = Value::map([("c", Value::Int(i64::MIN)), ("a", Value::Int(-1)), ("b", Value::Int(i64::MAX))]);
        let twice = Value::map([("b", Value::Int(1)), ("a", Value::Int(2)), ("b", Value::Int(3))]);
        let render = |v: &Value| {
            let mut out = Vec::new();
            python_json(&mut out, v);
            String::from_utf8(out).expect("ascii")
        };
        let expected = r#"{"a": -1, "b": 9223372036854775807, "c": -9223372036854775808}"#;
        assert_eq!(render(&sorted), expected);
        assert_eq!(render(&shuffled), expected);
        // A stable sort: equal keys keep their order.
        assert_eq!(render(&twice), r#"{"a": 2, "b": 1, "b": 3}"#);
        assert_eq!(render(&Value::map([("b", Value::Int(1)), ("b", Value::Int(0))])), r#"{"b": 1, "b": 0}"#);
    }

    #[test]
    fn strings_escape_as_ensure_ascii() {
        let mut out = Vec::new();
        python_json(
            &mut out,
            &Value::map([("b", Value::str("é\"\u{1F600}\n\u{7f}")), ("a", Value::List(vec![Value::Null]))]),
        );
        assert_eq!(String::from_utf8(out).expect("ascii"), r#"{"a": [null], "b": "\u00e9\"\ud83d\ude00\n\u007f"}"#);
    }
}
