//! Copies of a call a layer keeps.
//!
//! A layer that remembers the last call it forwarded (the retry layer, the
//! noisy planner) copies one call per decision. The arguments are shared
//! (`Args`: a copy costs a count), and the idempotency key is written into
//! the string the kept call already holds, so a decision allocates nothing
//! here. The result is equal to a clone: only where the bytes live differs.

use agentsim_engine::ToolCall;

/// Makes `dst` equal to `src`, reusing `dst`'s key buffer where it can.
pub(crate) fn copy_call(dst: &mut ToolCall, src: &ToolCall) {
    dst.tool = src.tool;
    dst.args.clone_from(&src.args);
    match (&mut dst.idempotency_key, &src.idempotency_key) {
        (Some(d), Some(s)) => d.clone_from(s),
        (d, s) => *d = s.clone(),
    }
}

/// Sets `slot` to a copy of `src`, reusing the call it holds, if any.
pub(crate) fn keep_call(slot: &mut Option<ToolCall>, src: &ToolCall) {
    match slot {
        Some(kept) => copy_call(kept, src),
        None => *slot = Some(src.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_engine::{ToolId, Value};
    use proptest::prelude::*;

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            "[a-z]{0,6}".prop_map(Value::Str),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::List),
                proptest::collection::vec(("[a-c]{1,2}", inner), 0..5).prop_map(Value::map),
            ]
        })
    }

    fn any_call() -> impl Strategy<Value = ToolCall> {
        (0u16..4, any_value(), proptest::option::of("[a-z]{0,5}")).prop_map(|(tool, args, key)| ToolCall {
            tool: ToolId(tool),
            args: args.into(),
            idempotency_key: key,
        })
    }

    proptest! {
        /// Whatever the copy held before, it ends equal to the source.
        #[test]
        fn a_copy_equals_a_clone(before in any_call(), src in any_call()) {
            let mut dst = before;
            copy_call(&mut dst, &src);
            prop_assert_eq!(&dst, &src);
            let mut slot = None;
            keep_call(&mut slot, &src);
            prop_assert_eq!(slot.as_ref(), Some(&src));
        }
    }
}
