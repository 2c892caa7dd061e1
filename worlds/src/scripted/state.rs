//! A scripted world's tables: the records a scenario starts with, shared by
//! every trajectory, plus what one trajectory changed (an overlay), so a
//! trajectory costs what it writes, not the size of its tables.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentsim_engine::{Key, Value};
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
    /// Records changed (`Some`) or removed (`None`), by (table, key).
    changed: BTreeMap<(usize, String), Option<Value>>,
    /// Keys not in the base tables, in the order they were first written.
    added: Vec<(usize, String)>,
    /// The tables written to (a lookup in any other reads the base directly,
    /// without building an overlay key).
    touched: Vec<usize>,
    /// Who wrote which record, kept only in a run of many sessions.
    writers: Option<Box<Writers>>,
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
        State { base, changed: BTreeMap::new(), added: Vec::new(), touched: Vec::new(), writers: None }
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
        if !self.touched.contains(&t) {
            return self.base[t].records.get(key);
        }
        match self.changed.get(&(t, key.to_string())) {
            Some(changed) => changed.as_ref(),
            None => self.base[t].records.get(key),
        }
    }

    /// Record `key` of table `t` as a script value: the base table's copy
    /// when this trajectory has not changed it.
    fn script_record(&self, t: usize, key: &str) -> Option<Dynamic> {
        if self.touched.contains(&t)
            && let Some(changed) = self.changed.get(&(t, key.to_string()))
        {
            return changed.as_ref().map(to_dynamic);
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
        let added = self.added.iter().filter(move |(at, _)| *at == t).map(|(_, k)| k);
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
        let record = match (self.record(t, &key), record) {
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
            (_, record) => record,
        };
        if !self.touched.contains(&t) {
            self.touched.push(t);
        }
        self.wrote(t, &key);
        // A key outside the base tables is in `added` exactly when the overlay
        // has it (a removal is recorded only of a record that exists), so the
        // overlay answers instead of a scan of `added`: a write costs the same
        // however many records the trajectory added before it.
        let added = (!self.base[t].records.contains_key(&key)).then(|| (t, key.clone()));
        if self.changed.insert((t, key), Some(record)).is_none()
            && let Some(added) = added
        {
            self.added.push(added);
        }
        Ok(())
    }

    /// Removes a record; says whether there was one.
    pub fn remove(&mut self, table: &str, key: &str) -> Result<bool, NoTable> {
        let t = self.table(table)?;
        let existed = self.record(t, key).is_some();
        if existed {
            if !self.touched.contains(&t) {
                self.touched.push(t);
            }
            self.wrote(t, key);
            self.changed.insert((t, key.to_string()), None);
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
        for key in self.keys(table)? {
            let Some(record) = self.record(t, &key) else { continue };
            let matches = folded.iter().all(|(p, v)| at(record, p).is_some_and(|r| lower(&r) == *v))
                && exact.iter().all(|(p, v)| at(record, p).as_ref() == Some(v));
            if matches {
                return Ok(Some(key));
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
        self.changed.iter().map(|((t, k), v)| (*t, k.as_str(), v.as_ref()))
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
        let compared = |((t, _), _): &(&(usize, String), &Option<Value>)| tables.is_none_or(|list| list.contains(t));
        // Both overlays are sorted by (table, key): walked side by side, a
        // record changed on one side only is compared with the other's base
        // record (no key is copied to look it up).
        let mut mine = self.changed.iter().filter(compared).peekable();
        let mut theirs = other.changed.iter().filter(compared).peekable();
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
                    let same = x.as_ref() == self.base[a.0].records.get(&a.1);
                    mine.next();
                    same
                }
                (_, Some((b, y))) => {
                    let same = self.base[b.0].records.get(&b.1) == y.as_ref();
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
}
