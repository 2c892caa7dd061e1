//! A map of named fields built at its size: what `Value::map` builds from the
//! same pairs, without its iterator (every answer, call and message of a
//! world is one of these).

use agentsim_engine::{Key, Value};

/// The map of `pairs`, in order: equal to `Value::map(pairs)`.
#[inline]
pub fn fields<const N: usize>(pairs: [(&'static str, Value); N]) -> Value {
    let mut map = Vec::with_capacity(N);
    for (key, value) in pairs {
        map.push((Key::Borrowed(key), value));
    }
    Value::Map(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_the_map_of_the_pairs() {
        let pairs = || {
            [
                ("order_id", Value::str("o-1")),
                ("amount_cents", Value::Int(-5)),
                ("items", Value::List(vec![Value::Null, Value::Bool(true)])),
                ("order_id", Value::map([("nested", Value::str("x"))])),
            ]
        };
        assert_eq!(fields(pairs()), Value::map(pairs()));
        assert_eq!(fields([]), Value::map::<&str>([]));
        assert_eq!(fields([("one", Value::Int(1))]), Value::map([("one", Value::Int(1))]));
    }
}
