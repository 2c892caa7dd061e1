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

/// How a world's impatient user leaves: the trajectory's note and the
/// words of its goodbye.
#[derive(Clone, Copy, Debug)]
pub struct Goodbye {
    /// The note recording when (`customer_left`).
    pub note: &'static str,
    /// What the user says as it leaves.
    pub text: &'static str,
}

impl Goodbye {
    /// When the user's patience runs out: it [`leave`]s, with `request`,
    /// unless it already got what it came for (`served`) or has left already.
    pub fn patience_out<E>(
        &self,
        served: bool,
        left_at_ms: &mut Option<TimeMs>,
        request: Value,
        cx: &mut WorldCx<'_, E>,
    ) {
        if !served && left_at_ms.is_none() {
            leave(left_at_ms, self.note, self.text, request, cx);
        }
    }
}
