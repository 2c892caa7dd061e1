//! How a world's user leaves when their patience runs out. The same in every
//! world, so that the experts recognise a goodbye in any of them and a
//! trajectory notes the moment the same way.

use agentsim_engine::{Message, TimeMs, Value, WorldCx};

/// The user leaves now: `left_at_ms` records when (the judge reports it, and it
/// is set only once), the trajectory notes `note` with the time, and the agent
/// is told `text` with the user's `request` marked `left: true`, the mark every
/// expert reads as a goodbye.
pub fn leave<E>(
    left_at_ms: &mut Option<TimeMs>,
    note: &'static str,
    text: &str,
    request: Value,
    cx: &mut WorldCx<'_, E>,
) {
    *left_at_ms = Some(cx.now_ms);
    let mut content = request;
    content.set("left", Value::Bool(true));
    cx.note(note, Value::Int(cx.now_ms as i64));
    cx.tell_agent(cx.now_ms, Message { text: text.to_string(), content });
}
