//! A task's change to a record, rebased onto the record as a session found
//! it: how a session of a run of many is judged on a record other sessions
//! also changed (docs/sessions.md, "Scripted and tau2 worlds").
//!
//! The gold actions change a record from its initial value (`base`) to the
//! gold value (`ours`), as if the session were alone. Another session may have
//! changed the record before (`theirs`). The value the session should leave
//! is the three-way merge: a field the gold leaves alone keeps `theirs`; a
//! number the gold moves moves by the same amount from `theirs` (two refunds
//! to one gift card both count); any other field the gold changes takes the
//! gold's value (an order's status, its items).

use agentsim_engine::Value;
use agentsim_engine::value::Key;

/// The value a session should leave in a record: `base` changed to `ours`
/// by its task, applied to `theirs` (each `None`: no record).
pub fn rebase(base: Option<&Value>, ours: Option<&Value>, theirs: Option<&Value>) -> Option<Value> {
    // Scripts order a map's keys alphabetically: a record written back
    // unchanged may differ from the initial one in its order only.
    if same(ours, base) {
        return theirs.cloned();
    }
    match (base, ours, theirs) {
        (Some(Value::Map(b)), Some(Value::Map(o)), Some(Value::Map(t))) => Some(rebase_map(b, o, t)),
        (Some(b), Some(o), Some(t)) => Some(rebase_number(b, o, t).unwrap_or_else(|| o.clone())),
        _ => ours.cloned(),
    }
}

/// Field by field: the gold's fields in its order, then those only `theirs`
/// has.
fn rebase_map(base: &[(Key, Value)], ours: &[(Key, Value)], theirs: &[(Key, Value)]) -> Value {
    let find = |pairs: &'_ [(Key, Value)], k: &Key| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v).cloned();
    let keys = ours.iter().map(|(k, _)| k).chain(theirs.iter().map(|(k, _)| k).filter(|k| find(ours, k).is_none()));
    let mut out = Vec::new();
    for k in keys {
        let (b, o, t) = (find(base, k), find(ours, k), find(theirs, k));
        if let Some(v) = rebase(b.as_ref(), o.as_ref(), t.as_ref()) {
            out.push((k.clone(), v));
        }
    }
    Value::Map(out)
}

/// `theirs + (ours - base)` when all three are numbers.
fn rebase_number(base: &Value, ours: &Value, theirs: &Value) -> Option<Value> {
    match (base, ours, theirs) {
        (Value::Int(b), Value::Int(o), Value::Int(t)) => Some(Value::Int(t.checked_add(o.checked_sub(*b)?)?)),
        _ => {
            let x = number(theirs)? + (number(ours)? - number(base)?);
            agentsim_engine::value::Float::new(x).map(Value::Float)
        }
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) => Some(x.get()),
        _ => None,
    }
}

/// Two records are the same: maps whatever their keys' order, numbers within
/// a millionth (a rebased amount may differ from the one a tool computed in
/// the last bit).
pub fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => same_value(a, b),
        _ => false,
    }
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| y.iter().find(|(n, _)| n == k).is_some_and(|(_, w)| same_value(v, w)))
        }
        (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w)),
        (Value::Float(_), _) | (_, Value::Float(_)) => match (number(a), number(b)) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-6,
            _ => false,
        },
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(balance: f64, status: &str, note: &str) -> Value {
        Value::map([
            ("balance", Value::Float(agentsim_engine::value::Float::new(balance).unwrap())),
            ("status", Value::str(status)),
            ("note", Value::str(note)),
        ])
    }

    #[test]
    fn a_change_alone_is_the_gold() {
        let (base, gold) = (rec(10.0, "pending", ""), rec(15.5, "cancelled", ""));
        assert_eq!(rebase(Some(&base), Some(&gold), Some(&base)), Some(gold));
    }

    #[test]
    fn amounts_add_up_and_other_fields_keep_what_another_session_wrote() {
        let base = rec(10.0, "pending", "");
        let gold = rec(15.5, "cancelled", "");
        let theirs = rec(12.25, "pending", "called twice");
        let expected = rebase(Some(&base), Some(&gold), Some(&theirs)).unwrap();
        assert!(same(Some(&expected), Some(&rec(17.75, "cancelled", "called twice"))), "{}", expected.render());
    }

    #[test]
    fn a_record_the_gold_leaves_alone_is_whatever_it_is() {
        let base = rec(1.0, "a", "");
        assert_eq!(rebase(Some(&base), Some(&base), None), None);
        assert_eq!(rebase(None, None, Some(&base)), Some(base));
    }

    #[test]
    fn a_field_written_back_in_another_order_is_left_alone() {
        let base = Value::map([("items", Value::List(vec![Value::map([("a", Value::Int(1)), ("b", Value::Int(2))])]))]);
        let gold = Value::map([("items", Value::List(vec![Value::map([("b", Value::Int(2)), ("a", Value::Int(1))])]))]);
        let theirs = Value::map([("items", Value::List(Vec::new()))]);
        assert_eq!(rebase(Some(&base), Some(&gold), Some(&theirs)), Some(theirs.clone()));
    }

    #[test]
    fn integers_stay_integers_and_records_compare_in_any_order() {
        let (b, o, t) = (Value::Int(100), Value::Int(70), Value::Int(90));
        assert_eq!(rebase(Some(&b), Some(&o), Some(&t)), Some(Value::Int(60)));
        let x = Value::map([("a", Value::Int(1)), ("b", Value::Int(2))]);
        let y = Value::map([("b", Value::Int(2)), ("a", Value::Int(1))]);
        assert!(same(Some(&x), Some(&y)));
        assert!(!same(Some(&x), None));
    }
}
