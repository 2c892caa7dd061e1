//! What every world's user does the same way when it reads the agent's words
//! (`Action::Say`, the rules in `docs/conversation.md`): a question answered
//! with the facts it names, a wrong proposal refused with the corrections,
//! small talk and what it cannot follow answered with the request, a
//! statement acknowledged. What a world's user knows and judges stays in its
//! `hear.rs`.

use agentsim_engine::{Message, Stream, Value, WorldCx};

use crate::kit::persona::Persona;
use crate::talk::voice::Voice;
use crate::talk::{Fact, Intent, Reading};

/// A world's user, as the kit's replies need it.
pub trait Listener {
    /// The request in words, as the user restates it.
    fn request_text(&self) -> String;
    /// The request as structured content, as the user's messages carry it.
    fn request_content(&self) -> Value;
    /// How the user words its answers (made on first use).
    fn voice(&mut self) -> &mut Voice;
}

/// How a world's user names a fact in its replies.
pub type Label = fn(&Fact) -> String;

/// The reply to small talk: a word back, and the request again.
pub fn small_talk<L: Listener>(user: &mut L) -> Message {
    let (request, content) = (user.request_text(), user.request_content());
    user.voice().small_talk_reply(&request, content)
}

/// The reply to a message the user cannot follow (noted as such).
pub fn not_followed<L: Listener, E>(user: &mut L, text: &str, cx: &mut WorldCx<'_, E>) -> Message {
    let (request, content) = (user.request_text(), user.request_content());
    user.voice().not_followed(text, &request, content, cx)
}

/// The reply to a message that neither asks, proposes nor tells: small
/// talk gets a word back, anything else is one the user cannot follow.
pub fn chat<L: Listener, E>(user: &mut L, intent: Intent, text: &str, cx: &mut WorldCx<'_, E>) -> Message {
    match intent {
        Intent::SmallTalk => small_talk(user),
        _ => not_followed(user, text, cx),
    }
}

/// The answer to a question: the facts it asks for, said with `label` and
/// set in `content` (which names the user) as `value` gives them; a question
/// for nothing the user knows gets a "don't know" and the request.
pub fn answer_question<L: Listener>(
    user: &mut L,
    reading: &Reading,
    facts: &[Fact],
    label: Label,
    mut content: Value,
    value: impl Fn(usize, &Fact) -> Value,
) -> Message {
    assert!(reading.asked.iter().all(|&i| i < facts.len()), "a question asks for facts the user has");
    if reading.asked.is_empty() {
        let request = user.request_text();
        return Message { text: user.voice().dont_know(None, &request), content: user.request_content() };
    }
    let shown: Vec<(String, String)> =
        reading.asked.iter().map(|&i| (label(&facts[i]), facts[i].value.shown())).collect();
    for &i in &reading.asked {
        content.set(facts[i].name.clone(), value(i, &facts[i]));
    }
    Message { text: user.voice().answer(&said(&shown)), content }
}

/// The labelled values of the facts `always` then `wrong` (no repeats): what
/// the user corrects a proposal with.
pub fn corrections(facts: &[Fact], always: &[usize], wrong: &[usize], label: Label) -> Vec<(String, String)> {
    let mut shown: Vec<(String, String)> = Vec::new();
    for &i in always.iter().chain(wrong) {
        let pair = (label(&facts[i]), facts[i].value.shown());
        if !shown.contains(&pair) {
            shown.push(pair);
        }
    }
    shown
}

/// Labelled values as the voice takes them.
pub fn said(shown: &[(String, String)]) -> Vec<(&str, &str)> {
    shown.iter().map(|(l, v)| (l.as_str(), v.as_str())).collect()
}

/// The "no" to a proposal, with the corrections [`corrections`] lists.
pub fn refuse<L: Listener>(user: &mut L, facts: &[Fact], always: &[usize], wrong: &[usize], label: Label) -> String {
    let shown = corrections(facts, always, wrong, label);
    user.voice().no(&said(&shown))
}

/// The acknowledgement of a statement: thanks for a closing, else "OK.".
pub fn acknowledge<L: Listener>(user: &mut L, closing: bool) -> Message {
    let text = if closing { user.voice().thanks() } else { "OK.".to_string() };
    Message { text, content: Value::map([("acknowledged", Value::Bool(true))]) }
}

/// The reply to a done claim the message does not make for certain
/// (negated, would-have-been, hedged): the user asks where things stand and
/// restates its request, without thanks.
pub fn doubted<L: Listener>(user: &mut L, doubt: crate::talk::claims::Doubt, request: &str) -> Message {
    let text = user.voice().doubted(doubt, request);
    Message { text, content: Value::map([("acknowledged", Value::Bool(false))]) }
}

/// The reply to a statement the user cannot read for certain (a value and an
/// action, but not whether it was done): it says so and restates its request.
pub fn unsure<L: Listener>(user: &mut L, request: &str) -> Message {
    let text = user.voice().unsure(request);
    Message { text, content: Value::map([("acknowledged", Value::Bool(false))]) }
}

/// The reply to a closing that tells no amount: the user asks how much.
pub fn how_much<L: Listener>(user: &mut L, request: &str) -> Message {
    let text = user.voice().how_much(request);
    Message { text, content: Value::map([("acknowledged", Value::Bool(false))]) }
}

/// An id's shape: the letters before its digits (upper case) and how many
/// digits it has. An id the world never held but of the shape of one it
/// holds is a value told wrong.
pub fn id_shape(id: &str) -> (String, usize) {
    let prefix: String = id.chars().take_while(|c| !c.is_ascii_digit()).collect::<String>().to_uppercase();
    (prefix, id.chars().filter(char::is_ascii_digit).count())
}

/// The user's voice, made on first use in `slot` in the style of its
/// persona, drawing from the user's stream `user`.
pub fn voice_of<'v>(slot: &'v mut Option<Voice>, persona: Persona, user: &Stream) -> &'v mut Voice {
    let style = persona.style();
    slot.get_or_insert_with(|| Voice::new(style, user))
}
