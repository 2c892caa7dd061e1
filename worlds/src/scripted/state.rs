//! A scripted world's tables: the records a scenario starts with, shared by
//! every trajectory, plus what one trajectory changed (an overlay), so a
//! trajectory costs what it writes, not the size of its tables.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::Arc;

use agentsim_engine::{Args, Key, Value};
use rhai::Dynamic;

use super::dynamic::to_dynamic;

/// A table a script or predicate named that the world does not have: what
/// every lookup of the state by a table's name may fail with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoTable {
    /// The name asked for.
    pub name: String,
    /// The world's tables, in order.
    pub known: Vec<String>,
}

impl std::fmt::Display for NoTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no table `{}` (tables: {})", self.name, self.known.join(", "))
    }
}

impl std::error::Error for NoTable {}

/// A script sees the message (its runtime errors are text).
impl From<NoTable> for String {
    fn from(e: NoTable) -> String {
        e.to_string()
    }
}

/// A script's runtime error with the message, so that a registered function
/// can `?` a table lookup.
impl From<NoTable> for Box<rhai::EvalAltResult> {
    fn from(e: NoTable) -> Self {
        e.to_string().into()
    }
}

/// One table of records, by key, in the order the scenario gave them.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The table's name.
    pub name: String,
    /// Keys in their first order.
    order: Vec<String>,
    /// Records by key.
    records: BTreeMap<String, Value>,
    /// The records as script values, made once: a tool body that reads a
    /// record the trajectory has not changed clones this instead of
    /// converting the record again (the conversion was most of what a read
    /// cost a script).
    script: ScriptForms,
}

/// The script values of a table's records, by key (derived from `records`, so
/// they take no part in comparisons).
#[derive(Clone, Default)]
struct ScriptForms(BTreeMap<String, Dynamic>);

impl PartialEq for ScriptForms {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for ScriptForms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScriptForms({} records)", self.0.len())
    }
}

impl Table {
    /// A table of `(key, record)` pairs; refuses a key given twice (its index).
    pub fn new(name: &str, rows: Vec<(String, Value)>) -> Result<Table, (usize, String)> {
        let mut table = Table {
            name: name.to_string(),
            order: Vec::with_capacity(rows.len()),
            records: BTreeMap::new(),
            script: ScriptForms::default(),
        };
        for (i, (key, record)) in rows.into_iter().enumerate() {
            let script = to_dynamic(&record);
            if table.records.insert(key.clone(), record).is_some() {
                return Err((i, key));
            }
            table.script.0.insert(key.clone(), script);
            table.order.push(key);
        }
        // A record and its script value are one entry each, under one key.
        assert_eq!(table.script.0.len(), table.records.len(), "table `{name}`: a record without its script value");
        Ok(table)
    }

    /// The keys, in the scenario's order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.order.iter()
    }

    /// The record `key`.
    pub fn record(&self, key: &str) -> Option<&Value> {
        self.records.get(key)
    }
}

/// The tables a trajectory starts from.
pub type Tables = Arc<Vec<Table>>;

/// One trajectory's tables.
#[derive(Clone, Debug)]
pub struct State {
    base: Tables,
    /// What this trajectory changed, by table index: empty until its first
    /// write, then one overlay per base table. Kept per table so that a
    /// lookup by `&str` needs no owned key (a `(table, key)` map needed one
    /// built per lookup), and the overlays walk in (table, key) order.
    overlays: Vec<Overlay>,
    /// Who wrote which record, kept only in a run of many sessions.
    writers: Option<Box<Writers>>,
}

/// What one trajectory changed in one table.
#[derive(Clone, Debug, Default)]
struct Overlay {
    /// Records changed (`Some`) or removed (`None`), by key. A record is
    /// held as a call's arguments are ([`Args`]): a record tool's write keeps
    /// the call's own arguments, shared, not a copy of them.
    changed: BTreeMap<String, Option<Args>>,
    /// Keys not in the base table, in the order they were first written.
    added: Vec<String>,
}

/// A session, as the state's writers name it.
pub type SessionId = agentsim_engine::SessionId;

/// Which sessions wrote each record, in order, and which records the running call
/// reached, in a run of many sessions: what the judge blames a session's
/// failure on and what makes a minefield a race between sessions.
#[derive(Clone, Debug, Default)]
struct Writers {
    /// The session whose call runs now; `None` while a process runs.
    acting: Option<SessionId>,
    /// The writers of every record written in the run, in order (`None`: a
    /// process).
    history: BTreeMap<(usize, String), Vec<Option<SessionId>>>,
    /// The records the running call looked up by key or wrote, each with its
    /// last writer before the call reached it.
    reached: Vec<Reach>,
}

/// A record a call looked up by key or wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The table's index.
    pub table: usize,
    /// The record's key.
    pub key: String,
    /// Whether the call wrote it (else it only read it).
    pub wrote: bool,
    /// The session that last wrote it before (`None`: none did, or a process).
    pub writer_before: Option<SessionId>,
    /// For a write, the record it replaced (`None`: there was none, or a read).
    pub replaced: Option<Value>,
}

impl State {
    /// The state at time 0.
    pub fn new(base: Tables) -> State {
        State { base, overlays: Vec::new(), writers: None }
    }

    /// Keeps who writes what from now on (a run of many sessions).
    pub fn track_writers(&mut self) {
        self.writers.get_or_insert_with(Box::default);
    }

    /// Whether who writes what is kept (a run of many sessions).
    pub fn tracks_writers(&self) -> bool {
        self.writers.is_some()
    }

    /// The session whose call runs from now on (`None`: a process).
    pub fn act_for(&mut self, session: Option<SessionId>) {
        if let Some(w) = &mut self.writers {
            w.acting = session;
            w.reached.clear();
        }
    }

    /// The session acting now, when writers are kept and a session acts.
    pub fn acting(&self) -> Option<SessionId> {
        self.writers.as_ref().and_then(|w| w.acting)
    }

    /// The records the calls since [`State::act_for`] looked up by key or
    /// wrote, taken (empty unless writers are kept).
    pub fn take_reached(&mut self) -> Vec<Reach> {
        self.writers.as_mut().map(|w| std::mem::take(&mut w.reached)).unwrap_or_default()
    }

    /// The first other session than the acting one that last wrote a record
    /// the running call reached before it did (`None`: none, or no session
    /// acts).
    pub fn other_writer_reached(&self) -> Option<SessionId> {
        let writers = self.writers.as_ref()?;
        let acting = writers.acting?;
        writers.reached.iter().find_map(|r| r.writer_before.filter(|w| *w != acting))
    }

    /// Whether another session or a process wrote record `key` of table `t`
    /// after `session` first wrote it (their writes interleave).
    pub fn written_after_by_other(&self, t: usize, key: &str, session: SessionId) -> bool {
        let Some(history) = self.writers.as_ref().and_then(|w| w.history.get(&(t, key.to_string()))) else {
            return false;
        };
        let first = history.iter().position(|w| *w == Some(session));
        first.is_some_and(|i| history[i..].iter().any(|w| *w != Some(session)))
    }

    /// The session that last wrote record `key` of table `t` (`None`: none
    /// did in this run, a process did, or writers are not kept).
    pub fn writer_at(&self, t: usize, key: &str) -> Option<SessionId> {
        let writers = self.writers.as_ref()?;
        writers.history.get(&(t, key.to_string())).and_then(|w| w.last().copied().flatten())
    }

    /// The session that last wrote record `key` of `table` before the
    /// running call reached it (after the call, a record it wrote names the
    /// session before it): what a predicate's `written_by_other` asks.
    pub fn writer_before(&self, table: &str, key: &str) -> Result<Option<SessionId>, NoTable> {
        let t = self.table(table)?;
        let Some(writers) = &self.writers else { return Ok(None) };
        let reached = writers.reached.iter().find(|r| r.table == t && r.key == key);
        Ok(reached.map_or_else(|| self.writer_at(t, key), |r| r.writer_before))
    }

    /// Notes that the running call looked up record `key` of `table` (what
    /// a script's `get` and `has` and a record body's read do), when writers
    /// are kept.
    pub fn note_read(&mut self, table: &str, key: &str) {
        if self.writers.is_some()
            && let Ok(t) = self.table(table)
        {
            self.reach(t, key, false, None);
        }
    }

    /// Notes that the running call reached record `key` of table `t`
    /// (writing over `replaced`, for a write).
    fn reach(&mut self, t: usize, key: &str, wrote: bool, replaced: Option<Value>) {
        if let Some(w) = &mut self.writers {
            let writer_before = w.history.get(&(t, key.to_string())).and_then(|w| w.last().copied().flatten());
            w.reached.push(Reach { table: t, key: key.to_string(), wrote, writer_before, replaced });
        }
    }

    /// Notes a write of record `key` of table `t` by the acting session
    /// (before the record changes).
    fn wrote(&mut self, t: usize, key: &str) {
        if self.writers.is_none() {
            return;
        }
        self.reach(t, key, true, self.record(t, key).cloned());
        if let Some(w) = &mut self.writers {
            w.history.entry((t, key.to_string())).or_default().push(w.acting);
        }
    }

    fn table(&self, name: &str) -> Result<usize, NoTable> {
        self.base.iter().position(|t| t.name == name).ok_or_else(|| NoTable {
            name: name.to_string(),
            known: self.base.iter().map(|t| t.name.clone()).collect(),
        })
    }

    fn record(&self, t: usize, key: &str) -> Option<&Value> {
        match self.overlays.get(t).and_then(|o| o.changed.get(key)) {
            Some(changed) => changed.as_deref(),
            None => self.base[t].records.get(key),
        }
    }

    /// The overlay of table `t`, the overlays made on the first write.
    fn overlay_mut(&mut self, t: usize) -> &mut Overlay {
        if self.overlays.is_empty() {
            self.overlays = vec![Overlay::default(); self.base.len()];
        }
        &mut self.overlays[t]
    }

    /// Record `key` of table `t` as a script value: the base table's copy
    /// when this trajectory has not changed it.
    fn script_record(&self, t: usize, key: &str) -> Option<Dynamic> {
        if let Some(changed) = self.overlays.get(t).and_then(|o| o.changed.get(key)) {
            return changed.as_deref().map(to_dynamic);
        }
        self.base[t].script.0.get(key).cloned()
    }

    /// The record `key` of `table`, as a script value.
    pub fn get_script(&self, table: &str, key: &str) -> Result<Option<Dynamic>, NoTable> {
        let t = self.table(table)?;
        Ok(self.script_record(t, key))
    }

    /// The records of a table as script values, in the order of [`State::keys`].
    pub fn rows_script(&self, table: &str) -> Result<Vec<Dynamic>, NoTable> {
        let t = self.table(table)?;
        Ok(self.keys(table)?.iter().filter_map(|k| self.script_record(t, k)).collect())
    }

    /// The records whose `field` equals `value`, as script values, in the
    /// order of [`State::keys`].
    pub fn find_script(&self, table: &str, field: &str, value: &Value) -> Result<Vec<Dynamic>, NoTable> {
        let t = self.table(table)?;
        Ok(self
            .all_keys(t)
            .filter(|k| self.record(t, k).is_some_and(|r| r.get(field) == Some(value)))
            .filter_map(|k| self.script_record(t, k))
            .collect())
    }

    /// Every key table `t` has had: the scenario's order, then the keys added,
    /// in the order they were first written (removed ones included).
    fn all_keys(&self, t: usize) -> impl Iterator<Item = &String> {
        let added = self.overlays.get(t).map_or(&[][..], |o| &o.added[..]);
        self.base[t].order.iter().chain(added)
    }

    /// The record `key` of `table`.
    pub fn get(&self, table: &str, key: &str) -> Result<Option<Value>, NoTable> {
        Ok(self.get_ref(table, key)?.cloned())
    }

    /// The record `key` of `table`, borrowed.
    pub fn get_ref(&self, table: &str, key: &str) -> Result<Option<&Value>, NoTable> {
        let t = self.table(table)?;
        Ok(self.record(t, key))
    }

    /// Writes a record. A record that replaces another keeps the field order of
    /// the one it replaces (scripts order map keys alphabetically), new fields
    /// after.
    pub fn put(&mut self, table: &str, key: String, record: Value) -> Result<(), NoTable> {
        let t = self.table(table)?;
        self.put_at(t, key, record);
        Ok(())
    }

    /// [`State::put`] into the table of index `t` (a record body's table,
    /// resolved when the world loads).
    pub fn put_at(&mut self, t: usize, key: String, record: Value) {
        self.put_shared(t, key, Args::from(record));
    }

    /// [`State::put_at`] of a record shared with whoever else holds it (a
    /// call's arguments): kept as it is when its fields are already in the
    /// order of the record it replaces, else copied in that order.
    pub fn put_shared(&mut self, t: usize, key: String, record: Args) {
        self.wrote(t, &key);
        self.overlay_mut(t);
        let base = self.base[t].records.get(&key);
        let overlay = &mut self.overlays[t];
        // One search of the overlay finds the record replaced and where the
        // new one goes. A key outside the base table is in `added` exactly
        // when the overlay has it (a removal is recorded only of a record
        // that exists), so a write costs the same however many records the
        // trajectory added before it.
        match overlay.changed.entry(key) {
            Entry::Occupied(mut changed) => {
                let record = ordered_shared(changed.get().as_deref(), record);
                changed.insert(Some(record));
            }
            Entry::Vacant(slot) => {
                if base.is_none() {
                    overlay.added.push(slot.key().clone());
                }
                slot.insert(Some(ordered_shared(base, record)));
            }
        }
    }

    /// Removes a record; says whether there was one.
    pub fn remove(&mut self, table: &str, key: &str) -> Result<bool, NoTable> {
        let t = self.table(table)?;
        let existed = self.record(t, key).is_some();
        if existed {
            self.wrote(t, key);
            self.overlay_mut(t).changed.insert(key.to_string(), None);
        }
        Ok(existed)
    }

    /// The keys of a table: the scenario's order, then records added, in order.
    pub fn keys(&self, table: &str) -> Result<Vec<String>, NoTable> {
        let t = self.table(table)?;
        Ok(self.all_keys(t).filter(|k| self.record(t, k).is_some()).cloned().collect())
    }

    /// The records of a table, in the order of [`State::keys`].
    pub fn rows(&self, table: &str) -> Result<Vec<&Value>, NoTable> {
        let t = self.table(table)?;
        Ok(self.keys(table)?.iter().filter_map(|k| self.record(t, k)).collect())
    }

    /// The first key (in [`State::keys`] order) whose record's fields at the
    /// dotted paths of `folded` equal the values given, compared as Python's
    /// `str.lower()` compares, and those of `exact` equal them exactly.
    pub fn first_key(
        &self,
        table: &str,
        folded: &[(String, Value)],
        exact: &[(String, Value)],
    ) -> Result<Option<String>, NoTable> {
        let t = self.table(table)?;
        // The values given lower-cased once; the records' fields are read in
        // place and compared without a copy (tau2's lookups by name and zip
        // walk every user: a copy of each key, field and lower-cased string
        // cost a retail import a tenth of its loading).
        let folded: Vec<(&str, Folded<'_>)> = folded.iter().map(|(p, v)| (p.as_str(), Folded::of(v))).collect();
        for key in self.all_keys(t) {
            let Some(record) = self.record(t, key) else { continue };
            let matches = folded.iter().all(|(p, v)| field_at(record, p).is_some_and(|r| v.matches(r)))
                && exact.iter().all(|(p, v)| field_at(record, p) == Some(v));
            if matches {
                return Ok(Some(key.clone()));
            }
        }
        Ok(None)
    }

    /// The records whose `field` equals `value`, in the order of
    /// [`State::keys`].
    pub fn find<'s>(
        &'s self,
        table: &str,
        field: &'s str,
        value: &'s Value,
    ) -> Result<impl Iterator<Item = &'s Value> + 's, NoTable> {
        let t = self.table(table)?;
        Ok(self.all_keys(t).filter_map(move |k| self.record(t, k)).filter(move |r| r.get(field) == Some(value)))
    }

    /// What this trajectory wrote: (table index, key, the record now, or
    /// `None` when removed), in (table, key) order. A record written back
    /// unchanged is listed too.
    pub fn changes(&self) -> impl Iterator<Item = (usize, &str, Option<&Value>)> {
        (self.overlays.iter().enumerate())
            .flat_map(|(t, o)| o.changed.iter().map(move |(k, v)| (t, k.as_str(), v.as_deref())))
    }

    /// Record `key` of table `t` as this state holds it.
    pub fn record_at(&self, t: usize, key: &str) -> Option<&Value> {
        self.record(t, key)
    }

    /// Record `key` of table `t` as the base tables hold it.
    pub fn base_record(&self, t: usize, key: &str) -> Option<&Value> {
        self.base[t].records.get(key)
    }

    /// The tables this state started from.
    pub fn base(&self) -> &Tables {
        &self.base
    }

    /// Whether two states of the same base tables hold the same records in the
    /// tables named by `tables` (all when `None`).
    pub fn same_records(&self, other: &State, tables: Option<&[usize]>) -> bool {
        assert_eq!(self.base.len(), other.base.len(), "states of the same base tables");
        let none = BTreeMap::new();
        (0..self.base.len()).filter(|t| tables.is_none_or(|list| list.contains(t))).all(|t| {
            let mine = self.overlays.get(t).map_or(&none, |o| &o.changed);
            let theirs = other.overlays.get(t).map_or(&none, |o| &o.changed);
            same_overlay(&self.base[t].records, mine, theirs)
        })
    }
}

/// The field of `record` at the dotted `path`.
fn field_at<'r>(record: &'r Value, path: &str) -> Option<&'r Value> {
    let mut v = record;
    for part in path.split('.') {
        v = v.get(part)?;
    }
    Some(v)
}

/// A value a record's field is compared with as Python's `str.lower()`
/// compares: a string lower-cased (Rust's `to_lowercase`), anything else as is.
enum Folded<'v> {
    Str(String),
    Other(&'v Value),
}

impl<'v> Folded<'v> {
    fn of(value: &'v Value) -> Folded<'v> {
        match value {
            Value::Str(s) => Folded::Str(s.to_lowercase()),
            other => Folded::Other(other),
        }
    }

    /// Whether `field`, lower-cased when a string, equals this value: an
    /// ASCII string is lower-cased byte by byte as it is compared (what
    /// `to_lowercase` gives it), any other string by `to_lowercase` itself.
    fn matches(&self, field: &Value) -> bool {
        match (self, field) {
            (Folded::Str(want), Value::Str(s)) if s.is_ascii() => {
                s.len() == want.len() && s.bytes().zip(want.bytes()).all(|(a, b)| a.to_ascii_lowercase() == b)
            }
            (Folded::Str(want), Value::Str(s)) => s.to_lowercase() == *want,
            (Folded::Str(_), _) | (Folded::Other(_), Value::Str(_)) => false,
            (Folded::Other(want), other) => *want == other,
        }
    }
}

/// [`ordered_like`] of a shared record: the record itself when the order
/// would not change (no copy), else the reordered copy.
fn ordered_shared(old: Option<&Value>, new: Args) -> Args {
    match (old, &*new) {
        (Some(Value::Map(fields)), Value::Map(pairs)) if !keeps_order(fields, pairs) => {
            Args::from(ordered_like(old, new.into_value()))
        }
        _ => new,
    }
}

/// Whether [`ordered_like`] leaves `new` as it is after `old`: it takes, for
/// each key of `old` in turn, the first entry of `new` not yet taken with that
/// key, then appends the rest in order; `new` is unchanged exactly when those
/// taken are its first entries, in order. (`false` may also be said of a
/// reordering that gives equal entries: the record is then copied, as before.)
fn keeps_order(old: &[(Key, Value)], new: &[(Key, Value)]) -> bool {
    // Every entry taken so far was `new[next - 1]`, so those left are `new[next..]`.
    let mut next = 0;
    for (k, _) in old {
        match new[next..].iter().position(|(n, _)| n == k) {
            Some(0) => next += 1,
            Some(_) => return false,
            None => {}
        }
    }
    true
}

/// `new` in the field order of `old` (scripts order map keys alphabetically),
/// new fields after, when both are maps; else `new`.
fn ordered_like(old: Option<&Value>, new: Value) -> Value {
    match (old, new) {
        (Some(Value::Map(old)), Value::Map(mut new)) => {
            let mut ordered: Vec<(Key, Value)> = Vec::with_capacity(new.len());
            for (k, _) in old {
                if let Some(i) = new.iter().position(|(n, _)| n == k) {
                    ordered.push(new.remove(i));
                }
            }
            ordered.extend(new);
            Value::Map(ordered)
        }
        (_, new) => new,
    }
}

/// Whether two overlays of the table `base` hold the same records. Both are
/// sorted by key: walked side by side, a record changed on one side only is
/// compared with the base record (no key is copied to look it up).
fn same_overlay(
    base: &BTreeMap<String, Value>,
    mine: &BTreeMap<String, Option<Args>>,
    theirs: &BTreeMap<String, Option<Args>>,
) -> bool {
    if mine.len() == theirs.len() {
        // Most often both changed the same records (a run against its gold
        // state): compared pairwise, until the keys part.
        let mut aligned = true;
        for ((a, x), (b, y)) in mine.iter().zip(theirs) {
            if a != b {
                aligned = false;
                break;
            }
            if x != y {
                return false;
            }
        }
        if aligned {
            return true;
        }
    }
    let mut mine = mine.iter().peekable();
    let mut theirs = theirs.iter().peekable();
    loop {
        let same = match (mine.peek(), theirs.peek()) {
            (None, None) => return true,
            (Some((a, x)), Some((b, y))) if a == b => {
                let same = x == y;
                mine.next();
                theirs.next();
                same
            }
            (Some((a, x)), next) if next.is_none_or(|(b, _)| a < b) => {
                let same = x.as_deref() == base.get(a.as_str());
                mine.next();
                same
            }
            (_, Some((b, y))) => {
                let same = base.get(b.as_str()) == y.as_deref();
                theirs.next();
                same
            }
            (Some(_), None) => unreachable!("a record of mine alone is taken by the arm above"),
        };
        if !same {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        let rows = vec![
            ("a".to_string(), Value::map([("id", Value::str("a")), ("n", Value::Int(1))])),
            ("b".to_string(), Value::map([("id", Value::str("b")), ("n", Value::Int(2))])),
        ];
        State::new(Arc::new(vec![Table::new("t", rows).expect("unique")]))
    }

    /// `first_key` as it was written first: every key, field and string
    /// copied, the strings lower-cased by `to_lowercase`.
    fn first_key_copying(
        s: &State,
        table: &str,
        folded: &[(String, Value)],
        exact: &[(String, Value)],
    ) -> Option<String> {
        let t = s.table(table).expect("table");
        let at = |record: &Value, path: &str| -> Option<Value> {
            let mut v = record;
            for part in path.split('.') {
                v = v.get(part)?;
            }
            Some(v.clone())
        };
        let lower = |v: &Value| match v {
            Value::Str(s) => Value::Str(s.to_lowercase()),
            other => other.clone(),
        };
        let folded: Vec<(&str, Value)> = folded.iter().map(|(p, v)| (p.as_str(), lower(v))).collect();
        for key in s.keys(table).expect("table") {
            let Some(record) = s.record(t, &key) else { continue };
            let matches = folded.iter().all(|(p, v)| at(record, p).is_some_and(|r| lower(&r) == *v))
                && exact.iter().all(|(p, v)| at(record, p).as_ref() == Some(v));
            if matches {
                return Some(key);
            }
        }
        None
    }

    #[test]
    fn a_shared_record_is_kept_exactly_when_reordering_would_leave_it() {
        // Every map of up to four entries over three keys (duplicates too),
        // each entry's value its position: against every other.
        let mut maps: Vec<Vec<&str>> = vec![vec![]];
        for len in 1..=4 {
            let shorter: Vec<Vec<&str>> = maps.iter().filter(|m| m.len() == len - 1).cloned().collect();
            for m in shorter {
                for k in ["a", "b", "c"] {
                    let mut longer = m.clone();
                    longer.push(k);
                    maps.push(longer);
                }
            }
        }
        let value = |keys: &[&str], offset: i64| {
            Value::map(keys.iter().enumerate().map(|(i, k)| (k.to_string(), Value::Int(offset + i as i64))))
        };
        let mut kept = 0;
        for old in &maps {
            for new in &maps {
                let (old, new) = (value(old, 100), value(new, 0));
                let expected = ordered_like(Some(&old), new.clone());
                let Value::Map(fields) = &old else { unreachable!() };
                let Value::Map(pairs) = &new else { unreachable!() };
                if keeps_order(fields, pairs) {
                    assert_eq!(expected, new, "{old:?} {new:?}: said to keep the order");
                    kept += 1;
                }
                assert_eq!(*ordered_shared(Some(&old), Args::from(new.clone())), expected, "{old:?} {new:?}");
            }
        }
        assert!(kept > 1_000, "most pairs keep their order ({kept})");
        assert_eq!(*ordered_shared(None, Args::from(value(&["b", "a"], 0))), value(&["b", "a"], 0));
        assert_eq!(*ordered_shared(Some(&Value::Int(1)), Args::from(Value::Int(2))), Value::Int(2));
    }

    #[test]
    fn first_key_finds_what_copying_every_field_finds() {
        let names = ["Ann", "ann", "ANN", "Åsa", "åsa", "ΟΔΟΣ", "οδος", "οδοσ", "İ", "i̇", "x", "", "Straße", "STRASSE"];
        let values: Vec<Value> = names
            .iter()
            .map(|n| Value::str(*n))
            .chain([Value::Int(1), Value::Null, Value::Bool(true), Value::List(vec![Value::str("ann")])])
            .collect();
        let record = |i: usize| {
            let v = |k: usize| values[(i * 7 + k * 3) % values.len()].clone();
            Value::map([
                ("name", Value::map([("first", v(0)), ("last", v(1))])),
                ("zip", v(2)),
                ("n", Value::Int((i % 3) as i64)),
            ])
        };
        let rows = (0..40).map(|i| (format!("k{i:02}"), record(i))).collect();
        let mut s = State::new(Arc::new(vec![Table::new("t", rows).expect("unique")]));
        s.put("t", "k03".into(), record(50)).expect("table");
        s.put("t", "new".into(), record(51)).expect("table");
        assert!(s.remove("t", "k05").expect("table"));
        let mut asked = 0;
        for (i, a) in values.iter().enumerate() {
            for b in values.iter().skip(i % 5).step_by(3) {
                for (folded, exact) in [
                    (vec![("name.first".to_string(), a.clone())], vec![]),
                    (vec![("name.first".to_string(), a.clone()), ("name.last".to_string(), b.clone())], vec![]),
                    (vec![("zip".to_string(), a.clone())], vec![("n".to_string(), Value::Int(1))]),
                    (vec![], vec![("name.last".to_string(), b.clone())]),
                    (vec![("name.nope".to_string(), a.clone())], vec![]),
                ] {
                    assert_eq!(
                        s.first_key("t", &folded, &exact).expect("table"),
                        first_key_copying(&s, "t", &folded, &exact),
                        "{folded:?} {exact:?}"
                    );
                    asked += 1;
                }
            }
        }
        assert!(asked > 300);
        let found = s.first_key("t", &[("name.first".into(), Value::str("ANN"))], &[]).expect("table");
        assert!(found.is_some(), "a case-folded match exists");
    }

    #[test]
    fn writes_overlay_the_base_and_keep_field_order() {
        let mut s = state();
        s.put("t", "a".into(), Value::map([("n", Value::Int(5)), ("id", Value::str("a")), ("z", Value::Null)]))
            .expect("table");
        s.put("t", "c".into(), Value::map([("id", Value::str("c"))])).expect("table");
        assert!(s.remove("t", "b").expect("table"));
        assert_eq!(s.keys("t").expect("table"), vec!["a", "c"]);
        assert_eq!(s.get("t", "a").expect("table").expect("a").render(), r#"{"id":"a","n":5,"z":null}"#);
        assert!(!s.same_records(&state(), None));
        assert!(state().same_records(&state(), None));
        let e = s.get("nope", "a").unwrap_err();
        assert_eq!(e, NoTable { name: "nope".into(), known: vec!["t".into()] });
        assert_eq!(e.to_string(), "no table `nope` (tables: t)");
    }

    /// The tables as a plain map of every record, built from what the
    /// state's public reads say: what an overlay should add up to.
    fn materialised(s: &State) -> BTreeMap<(usize, String), Value> {
        let mut out = BTreeMap::new();
        for (t, table) in s.base().iter().enumerate() {
            for key in s.keys(&table.name).expect("table") {
                let record = s.get(&table.name, &key).expect("table").expect("a listed key has a record");
                out.insert((t, key), record);
            }
        }
        out
    }

    /// Random writes and removals over three tables, checked against a
    /// plain map of (table, key) pairs, the representation the overlay
    /// had before it was kept per table: the records, the keys' order, the
    /// list of changes and `same_records` agree.
    #[test]
    fn overlays_agree_with_a_plain_map_of_changes() {
        let rows = |name: &str| {
            let rows = (0..4)
                .map(|i| (format!("k{i}"), Value::map([("id", Value::str(format!("k{i}"))), ("n", Value::Int(i))])));
            Table::new(name, rows.collect()).expect("unique")
        };
        let base: Tables = Arc::new(vec![rows("a"), rows("b"), rows("c")]);
        let names = ["a", "b", "c"];
        let mut rng = agentsim_engine::StreamSource::new([7; 32], 0).stream("state");
        let mut outcomes = [0; 2];
        for round in 0..200 {
            let mut states = [State::new(Arc::clone(&base)), State::new(Arc::clone(&base))];
            let mut plain: [BTreeMap<(usize, String), Option<Value>>; 2] = [BTreeMap::new(), BTreeMap::new()];
            let mut added: [Vec<(usize, String)>; 2] = [Vec::new(), Vec::new()];
            for _ in 0..rng.below(12) {
                let side = rng.below(2) as usize;
                let t = rng.below(3) as usize;
                let key = format!("k{}", rng.below(7));
                let in_base = base[t].record(&key).is_some();
                if rng.chance(0.25) {
                    let existed = states[side].remove(names[t], &key).expect("table");
                    let had = plain[side].get(&(t, key.clone())).map_or(in_base, Option::is_some);
                    assert_eq!(existed, had, "round {round}: remove {t}/{key}");
                    if had {
                        plain[side].insert((t, key), None);
                    }
                } else {
                    let record = Value::map([("n", Value::Int(rng.below(3) as i64))]);
                    states[side].put(names[t], key.clone(), record.clone()).expect("table");
                    if plain[side].insert((t, key.clone()), Some(record)).is_none() && !in_base {
                        added[side].push((t, key));
                    }
                }
            }
            for side in 0..2 {
                let changes: Vec<(usize, String)> =
                    states[side].changes().map(|(t, k, _)| (t, k.to_string())).collect();
                let expected: Vec<(usize, String)> = plain[side].keys().cloned().collect();
                assert_eq!(changes, expected, "round {round}: the changes in (table, key) order");
                for (t, name) in names.iter().enumerate() {
                    let mut keys: Vec<String> = base[t].keys().cloned().collect();
                    keys.extend(added[side].iter().filter(|(at, _)| *at == t).map(|(_, k)| k.clone()));
                    keys.retain(|k| {
                        plain[side].get(&(t, k.clone())).map_or(base[t].record(k).is_some(), Option::is_some)
                    });
                    assert_eq!(states[side].keys(name).expect("table"), keys, "round {round}: keys of {name}");
                }
            }
            let (mine, theirs) = (materialised(&states[0]), materialised(&states[1]));
            for tables in [None, Some(&[0][..]), Some(&[1, 2][..]), Some(&[][..])] {
                let kept = |m: &BTreeMap<(usize, String), Value>| -> Vec<((usize, String), Value)> {
                    m.iter()
                        .filter(|((t, _), _)| tables.is_none_or(|l| l.contains(t)))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                };
                let expected = kept(&mine) == kept(&theirs);
                outcomes[usize::from(expected)] += 1;
                assert_eq!(
                    states[0].same_records(&states[1], tables),
                    expected,
                    "round {round}: same_records {tables:?}"
                );
                assert_eq!(states[1].same_records(&states[0], tables), expected, "round {round}: same_records swapped");
            }
        }
        assert!(outcomes.iter().all(|n| *n > 50), "both answers are exercised: {outcomes:?}");
    }
}
