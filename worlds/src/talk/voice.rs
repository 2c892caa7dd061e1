//! How a simulated user says things back: the same content in words that vary
//! with the seed and the persona's style. Phrasing is drawn from a stream of its
//! own (a sub-stream of the user's), so the words never shift the user's other
//! draws (when it replies, whether it changes its mind).

use agentsim_engine::{Message, Stream, Value, WorldCx};

/// The sub-stream of the user's stream that phrasing draws from.
pub const VOICE_SUBSTREAM: u64 = 0x0076_6f69_6365;

/// How a persona talks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Says what is asked, politely.
    Clear,
    /// As few words as will do.
    Terse,
    /// Many words around the facts.
    Verbose,
    /// Unsure, hedging.
    Vague,
    /// In a hurry, and says so.
    Impatient,
}

/// A user's voice: a style and the stream its phrasing draws from.
#[derive(Clone, Debug)]
pub struct Voice {
    style: Style,
    rng: Stream,
}

/// A labelled value a user says: (`order number`, `A1002`).
pub type Said<'a> = (&'a str, &'a str);

impl Voice {
    /// A voice of `style` drawing from a sub-stream of `user` (which it does not
    /// advance).
    pub fn new(style: Style, user: &Stream) -> Self {
        Self { style, rng: user.substream(VOICE_SUBSTREAM) }
    }

    /// The style.
    pub fn style(&self) -> Style {
        self.style
    }

    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        assert!(!options.is_empty(), "a phrase list is never empty");
        options[self.rng.below(options.len() as u64) as usize]
    }

    fn listed(items: &[Said<'_>]) -> String {
        let parts: Vec<String> = items.iter().map(|(label, value)| format!("the {label} is {value}")).collect();
        join(&parts)
    }

    /// Gives facts that were asked for.
    pub fn answer(&mut self, items: &[Said<'_>]) -> String {
        let listed = Self::listed(items);
        let values: Vec<String> = items.iter().map(|(_, v)| v.to_string()).collect();
        let bare = join(&values);
        match self.style {
            Style::Terse => format!("{bare}."),
            Style::Clear => {
                let lead = self.pick(&["Sure, ", "Of course: ", "", "Yes, "]);
                capitalised(&format!("{lead}{listed}."))
            }
            Style::Verbose => {
                let lead =
                    self.pick(&["Thanks for asking! Let me check... ", "Of course, happy to help. ", "Right, so "]);
                format!("{lead}{}. I hope that helps.", capitalised(&listed))
            }
            Style::Vague => {
                let lead = self.pick(&["I think ", "Hmm, I believe ", "If I remember right, "]);
                format!("{lead}{listed}.")
            }
            Style::Impatient => {
                let tail = self.pick(&[" Can we move on?", " Please hurry.", " Is this going to take long?"]);
                format!("{}.{tail}", capitalised(&listed))
            }
        }
    }

    /// Says the user does not know what was asked (`label`), or, for a question
    /// about nothing it holds, that it cannot help with that; then restates the
    /// request.
    pub fn dont_know(&mut self, label: Option<&str>, request: &str) -> String {
        let first = match (label, self.style) {
            (Some(l), Style::Terse) => format!("Don't know my {l}."),
            (Some(l), Style::Impatient) => format!("I don't have my {l} at hand."),
            (Some(l), _) => format!("Sorry, I don't know my {l}."),
            (None, Style::Terse) => "No idea.".to_string(),
            (None, Style::Impatient) => "That's beside the point.".to_string(),
            (None, _) => self.pick(&["I'm not sure what that has to do with it.", "I couldn't say."]).to_string(),
        };
        format!("{first} {request}")
    }

    /// Agrees to a proposal.
    pub fn yes(&mut self) -> String {
        match self.style {
            Style::Terse => self.pick(&["Yes.", "Yes, go ahead.", "OK."]).to_string(),
            Style::Clear => {
                self.pick(&["Yes, that's right, go ahead.", "Yes, please do.", "That's correct, go ahead."]).to_string()
            }
            Style::Verbose => self
                .pick(&[
                    "Yes, that's exactly right, please go ahead. Thank you so much!",
                    "Yes! That's the one. Please go ahead.",
                ])
                .to_string(),
            Style::Vague => self.pick(&["Yes, I think that's it. Go ahead.", "That sounds right, yes."]).to_string(),
            Style::Impatient => self.pick(&["Yes. Just do it.", "Yes, go ahead, quickly please."]).to_string(),
        }
    }

    /// Refuses a proposal and corrects it.
    pub fn no(&mut self, corrections: &[Said<'_>]) -> String {
        let listed = Self::listed(corrections);
        match self.style {
            Style::Terse => format!("No. {}.", capitalised(&listed)),
            Style::Impatient => format!("No, that's wrong: {listed}. Please pay attention."),
            Style::Vague => format!("Hmm, no, I don't think so: {listed}."),
            Style::Clear | Style::Verbose => {
                let lead = self.pick(&["No, that's not it: ", "No, that's not right: ", "Not quite: "]);
                format!("{lead}{listed}.")
            }
        }
    }

    /// Says the user did not understand.
    pub fn not_follow(&mut self, request: &str) -> String {
        let first = match self.style {
            Style::Terse => "Sorry?",
            Style::Impatient => "I don't follow. Can you just help me?",
            Style::Vague => "I'm sorry, I'm not sure I follow.",
            Style::Clear | Style::Verbose => self.pick(&["Sorry, I don't follow.", "I'm not sure I understand."]),
        };
        format!("{first} {request}")
    }

    /// Thanks the agent at the end.
    pub fn thanks(&mut self) -> String {
        match self.style {
            Style::Terse => "Thanks.".to_string(),
            Style::Impatient => "Finally. Thanks.".to_string(),
            _ => self
                .pick(&["Great, thank you!", "Thanks, that's all I needed.", "Perfect, thanks for your help."])
                .to_string(),
        }
    }

    /// Asks where things stand after a done claim that was denied, would have
    /// been, or hedged; then restates the request.
    pub fn doubted(&mut self, doubt: super::claims::Doubt, request: &str) -> String {
        use super::claims::Doubt;
        let first = match (doubt, self.style) {
            (Doubt::Mixed, _) => "Sorry, I'm confused: is it done or not?",
            (Doubt::Hedged, Style::Terse) => "Are you sure? Please check.",
            (Doubt::Hedged, Style::Impatient) => "You think? Please check and tell me for sure.",
            (Doubt::Hedged, _) => self.pick(&[
                "Are you sure? Please check that it actually went through.",
                "Can you check and confirm it for certain?",
            ]),
            (_, Style::Terse) => "So it's not done?",
            (_, Style::Impatient) => "So it still isn't done? That's not good enough.",
            (_, _) => self.pick(&["So it hasn't gone through?", "I see, so it isn't done yet."]),
        };
        format!("{first} {request}")
    }

    /// Says the user cannot tell what a statement means for its request;
    /// then restates it.
    pub fn unsure(&mut self, request: &str) -> String {
        let first = match self.style {
            Style::Terse => "Done or not?",
            Style::Impatient => "Is it done or not?",
            _ => self.pick(&["Sorry, I'm not sure I follow: has it been done?", "I don't quite follow: is it done?"]),
        };
        format!("{first} {request}")
    }

    /// Asks how much, after a closing that names no amount; then restates
    /// the request.
    pub fn how_much(&mut self, request: &str) -> String {
        let first = match self.style {
            Style::Terse => "How much?",
            Style::Impatient => "How much, exactly?",
            _ => self.pick(&["Thanks. How much was refunded, exactly?", "OK, and for what amount?"]),
        };
        format!("{first} {request}")
    }

    /// Answers small talk, then says what the user wants.
    pub fn small_talk(&mut self, request: &str) -> String {
        let first = match self.style {
            Style::Terse | Style::Impatient => "",
            _ => self.pick(&["Hi. ", "Hello! ", "Thanks. "]),
        };
        format!("{first}{request}")
    }
}

impl Voice {
    /// The user's answer to small talk: it answers, then restates `request`;
    /// `content` is the request, structured.
    pub fn small_talk_reply(&mut self, request: &str, content: Value) -> Message {
        Message { text: self.small_talk(request), content }
    }

    /// The user's answer to what it cannot follow: the world note
    /// `misunderstood` with the text, then the persona's "I don't follow" and
    /// `request` restated; `content` is the request, marked `misunderstood`.
    pub fn not_followed<E>(
        &mut self,
        text: &str,
        request: &str,
        mut content: Value,
        cx: &mut WorldCx<'_, E>,
    ) -> Message {
        cx.note("misunderstood", Value::str(text));
        content.set("misunderstood", Value::Bool(true));
        Message { text: self.not_follow(request), content }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_engine::StreamSource;

    #[test]
    fn phrasing_varies_with_the_seed_but_not_the_content() {
        let texts: Vec<String> = (0..8)
            .map(|seed| {
                let user = StreamSource::new([1; 32], seed).stream("user.0");
                Voice::new(Style::Clear, &user).answer(&[("order number", "A1002")])
            })
            .collect();
        assert!(texts.iter().all(|t| t.contains("order number is A1002")), "{texts:?}");
        assert!(texts.iter().any(|t| t != &texts[0]), "the seed varies the words: {texts:?}");
    }

    #[test]
    fn the_voice_does_not_advance_the_user_stream() {
        let mut user = StreamSource::new([1; 32], 3).stream("user.0");
        let mut copy = user.clone();
        let mut voice = Voice::new(Style::Verbose, &user);
        let _ = voice.yes();
        assert_eq!(user.next_u64(), copy.next_u64());
    }
}
