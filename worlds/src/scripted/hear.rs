//! The user of a scripted world reads what the agent writes in words
//! (`Action::Say`), by the rules of `crate::talk` (`docs/conversation.md`).
//!
//! Its facts are the task's facts: a string with a digit and no space is an id,
//! another string a name, an integer whose fact name ends in `_cents` an
//! amount; the world's `aliases` add phrases for them. A question gets the facts
//! it names; a proposal is refused with the correction when it states wrongly
//! a fact the task's writes use (not one only a lookup uses) with a value the
//! user did not ask for in their request, else answered exactly as a structured `confirm` (yes, or the
//! persona's change of mind); a statement is added to what the user was told
//! (`told()` in predicates: `#{kind: "text", text: ...}`), so a task's
//! predicates judge what was said.

use agentsim_engine::{Message, Value, WorldCx};

use super::ScriptEvent;
use super::ScriptedWorld;
use crate::talk::voice::{Style, Voice};
use crate::talk::{self, Fact, FactValue, Intent, Lexicon};

impl ScriptedWorld<'_> {
    fn style(&self) -> Style {
        match self.model.personas[self.user.persona].name.as_str() {
            "terse" => Style::Terse,
            "verbose" | "changes_mind" => Style::Verbose,
            "vague" => Style::Vague,
            "impatient" => Style::Impatient,
            _ => Style::Clear,
        }
    }

    fn voice(&mut self) -> &mut Voice {
        let style = self.style();
        self.user.voice.get_or_insert_with(|| Voice::new(style, &self.user.user_rng))
    }

    /// The user's facts as the reader sees them.
    fn text_facts(&self) -> Vec<Fact> {
        let Value::Map(pairs) = &self.user.facts else { return Vec::new() };
        let mut out = Vec::new();
        for (name, value) in pairs {
            let value = match value {
                Value::Int(c) if name.ends_with("_cents") => FactValue::Money(*c),
                Value::Int(n) => FactValue::Id(n.to_string()),
                Value::Str(s) if !s.contains(char::is_whitespace) && s.contains(|c: char| c.is_ascii_digit()) => {
                    FactValue::Id(s.clone())
                }
                Value::Str(s) => FactValue::Name(s.clone()),
                _ => continue,
            };
            let mut fact = Fact::new(name, value);
            if let Some(stem) = name.strip_suffix("_cents") {
                fact = fact.alias(&stem.replace('_', " "));
            }
            for (of, phrases) in &self.model.aliases {
                if of == name.as_ref() {
                    for p in phrases {
                        fact = fact.alias(p);
                    }
                }
            }
            out.push(fact);
        }
        out
    }

    /// What the world knows beyond the user's facts: the values of the task's
    /// alternative (what a change of mind asks for instead).
    fn lexicon(&self) -> Lexicon {
        let mut lexicon = Lexicon::new();
        if let Some((Value::Map(pairs), _)) = &self.user.task.alternative {
            for (name, value) in pairs {
                if let Value::Str(s) = value {
                    lexicon.add(name, s);
                }
            }
        }
        lexicon
    }

    fn request_text(&self) -> String {
        super::fill_text(&self.user.task.request, &self.user.facts).unwrap_or_else(|_| self.user.task.request.clone())
    }

    /// The user reads `text` and answers.
    pub(super) fn hear_text(&mut self, text: &str, cx: &mut WorldCx<'_, ScriptEvent>) {
        if self.user.left_at_ms.is_some() {
            return;
        }
        let facts = self.text_facts();
        let reading = talk::read(text, &facts, &self.lexicon());
        let at = self.reply_at(cx.now_ms);
        let request = self.request_text();
        let reply = match reading.intent {
            Intent::Ask if reading.asked.is_empty() => {
                Message { text: self.voice().dont_know(None, &request), content: self.stated() }
            }
            Intent::Ask => {
                let shown: Vec<(String, String)> =
                    reading.asked.iter().map(|&i| (facts[i].name.replace('_', " "), facts[i].value.shown())).collect();
                let said: Vec<(&str, &str)> = shown.iter().map(|(l, v)| (l.as_str(), v.as_str())).collect();
                let content =
                    Value::Map(reading.asked.iter().filter_map(|&i| self.fact_pair(&facts[i].name)).collect());
                Message { text: self.voice().answer(&said), content }
            }
            Intent::Propose => match reading.stated.iter().find(|s| self.wrong_in_proposal(s, &facts, &request)) {
                Some(_) => {
                    let wrong: Vec<(String, String)> = (reading.stated.iter())
                        .filter(|s| self.wrong_in_proposal(s, &facts, &request))
                        .map(|s| (facts[s.fact].name.replace('_', " "), facts[s.fact].value.shown()))
                        .collect();
                    let said: Vec<(&str, &str)> = wrong.iter().map(|(l, v)| (l.as_str(), v.as_str())).collect();
                    let mut content = self.user.facts.clone();
                    content.set("confirm", Value::Bool(false));
                    Message { text: self.voice().no(&said), content }
                }
                None => {
                    // As a structured proposal whose arguments name no wrong fact.
                    let reply = self.confirm(&Value::Map(Vec::new()));
                    if reply.content.get("confirm") == Some(&Value::Bool(true)) {
                        Message { text: self.voice().yes(), content: reply.content }
                    } else {
                        reply
                    }
                }
            },
            Intent::Tell => {
                let told = Value::map([("kind", Value::str("text")), ("text", Value::str(text))]);
                self.session().told.push(told);
                let words = if reading.done { self.voice().thanks() } else { "OK.".to_string() };
                Message { text: words, content: Value::map([("acknowledged", Value::Bool(true))]) }
            }
            Intent::SmallTalk => {
                let content = self.stated();
                self.voice().small_talk_reply(&request, content)
            }
            Intent::Unclear => {
                let content = self.stated();
                self.voice().not_followed(text, &request, content, cx)
            }
        };
        cx.tell_agent(at, reply);
    }

    /// Whether a value a proposal states is wrong: it is not the fact's value,
    /// the task's writes use the fact, and the user did not ask for this value
    /// in their request. A fact only a lookup uses says who the user is, not
    /// what the write does: tau2's customer gives their zip code to be found,
    /// then confirms an address with the new zip they asked for.
    fn wrong_in_proposal(&self, stated: &talk::Stated, facts: &[Fact], request: &str) -> bool {
        !stated.right && self.checks_in_proposals(&facts[stated.fact]) && !request.contains(stated.written.as_str())
    }

    /// Whether the task's writes use `fact`.
    fn checks_in_proposals(&self, fact: &Fact) -> bool {
        let plans = self.user.task.plans.iter().flat_map(|(_, gold)| gold);
        let alternative = self.user.task.alternative.iter().flat_map(|(_, gold)| gold);
        (self.user.task.gold.iter().chain(plans).chain(alternative))
            // The world's own tools: a message's details restate its write's.
            .filter(|g| {
                let tool = self.model.tools.get(usize::from(g.tool.0));
                tool.is_some_and(|t| t.kind == agentsim_engine::ToolKind::Write)
            })
            .any(|g| g.args.uses(&fact.name))
    }

    fn fact_pair(&self, name: &str) -> Option<(agentsim_engine::value::Key, Value)> {
        let Value::Map(pairs) = &self.user.facts else { return None };
        pairs.iter().find(|(k, _)| k == name).cloned()
    }
}
