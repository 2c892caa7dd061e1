//! The editor reads what the agent writes in words (`Action::Say`): the
//! newsroom side of the text channel (rules in `docs/conversation.md`).
//!
//! The editor's facts are its editor id, its name, how many of the latest
//! stories it wants summarised (`count`), the topics (any: the latest) and the
//! deadline; the world knows every story id with its versions and every task
//! id. A question gets the facts it names (a `count` as the structured `ask`
//! answers it); a proposal is checked value by value (a wrong count, or a story
//! the feed never had, is refused with the correction; a right count is a yes:
//! the structured channel has no `confirm` here, so no milestone moves); a
//! statement is judged: a story id, a story version, a task id or an editor id
//! the world never held is `told_wrong_value`; and a summary in words (a
//! statement that lists stories, each with its version, and says it is the
//! summary or the latest) is judged and kept exactly as a `send_summary` of the
//! same stories (`unflagged_stale_summary`, `summary_sent`), flagged as
//! possibly stale when it says so.

use agentsim_engine::{Message, TimeMs, Value, WorldCx};

use super::{NewsEvent, Newsroom, Persona};
use crate::kit::listen::{self, Listener, id_shape};
use crate::talk::count::{self, CountFact, CountOf};
use crate::talk::scan::{self, Word, Written};
use crate::talk::voice::Voice;
use crate::talk::{self, Fact, FactValue, Intent, Lexicon, Reading, TOLD_WRONG_VALUE};

/// The facts' places in [`Newsroom::facts`].
const EDITOR_ID: usize = 0;
const COUNT: usize = 2;

/// How a count of stories is written.
const STORY_COUNT: CountOf<'static> = CountOf {
    nouns: &["stories", "story", "articles", "headlines", "items"],
    after: &["latest", "newest", "top", "last"],
};

/// Words that make a statement listing stories a summary.
const SUMMARY_WORDS: &[&str] =
    &["summary", "summarised", "summarized", "summarising", "summarizing", "latest", "newest", "here's", "here"];

/// Phrases that flag a summary as possibly stale.
const STALE_PHRASES: &[&str] = &[
    "may be stale",
    "might be stale",
    "possibly stale",
    "could be stale",
    "may be out of date",
    "might be out of date",
    "may have changed",
    "might have changed",
    "may be outdated",
    "might be outdated",
];

/// A story named in a message, with the version written beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct StoryTold {
    /// As the world spells it (`S104`).
    id: String,
    /// `v2`, `version 2` right after the id.
    version: Option<i64>,
}

/// What a message names beyond the editor's facts.
#[derive(Debug, Default)]
struct Named {
    /// Stories the feed has published by now.
    stories: Vec<StoryTold>,
    /// Ids in the shape of a story, task or editor id that the world never
    /// held, and stories with a version they never had (`S104 v9`).
    unknown: Vec<String>,
}

impl Newsroom<'_> {
    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user_rng))
    }

    fn deadline_text(&self) -> String {
        match self.persona {
            Persona::Impatient => format!("within {} minutes", self.config.patience_ms.div_ceil(60_000)),
            _ => "as soon as you can".to_string(),
        }
    }

    /// The editor's facts.
    fn facts(&self) -> Vec<Fact> {
        let e = &self.config.editors[self.editor];
        vec![
            Fact::new("editor_id", FactValue::Id(e.id.clone())),
            Fact::new("name", FactValue::Name(e.name.clone())).alias("your name").alias("full name"),
            // Read by `talk::count`, never by the value's shape (a bare number is
            // no count): see `hear_text`.
            Fact::new("count", FactValue::Id(self.wanted.to_string()))
                .alias("how many")
                .alias("number of stories")
                .alias("story count"),
            Fact::new("topics", FactValue::Name("any topic, the latest".into()))
                .alias("topic")
                .alias("which stories")
                .alias("subject"),
            Fact::new("deadline", FactValue::Name(self.deadline_text())).alias("by when").alias("how soon"),
        ]
    }

    fn lexicon(&self) -> Lexicon {
        let mut lexicon = Lexicon::new();
        for e in &self.config.editors {
            lexicon.add("name", &e.name);
        }
        lexicon
    }

    /// The editor reads `text` and answers (or, for a statement, judges it).
    pub(super) fn hear_text(&mut self, text: &str, cx: &mut WorldCx<'_, NewsEvent>) {
        if self.left_at_ms.is_some() {
            return;
        }
        let facts = self.facts();
        let named = self.named(text, cx.now_ms);
        let count = CountFact { fact: COUNT, of: STORY_COUNT, value: self.wanted };
        let world_values = !named.stories.is_empty() || !named.unknown.is_empty();
        let reading = count::read_counting(text, &facts, &self.lexicon(), Some(count), world_values);
        let ws = scan::words(text);
        let at = self.reply_at(cx.now_ms);
        let reply = match reading.intent {
            Intent::Ask => self.answer_question(&reading, &facts),
            Intent::Propose => self.answer_proposal(&reading, &facts, &named),
            Intent::Tell => self.judge_statement(&ws, &reading, &named, cx),
            Intent::SmallTalk | Intent::Unclear => listen::chat(self, reading.intent, text, cx),
        };
        cx.tell_agent(at, reply);
    }

    /// Stories (with the versions written beside them) and unknown ids in
    /// `text`, as the feed stands at `now_ms`.
    fn named(&self, text: &str, now_ms: TimeMs) -> Named {
        let ws = scan::words(text);
        let mut named = Named::default();
        for found in scan::values(text) {
            let Written::Token(token) = found.value else { continue };
            let id = token.trim_start_matches('#');
            let published = self.stories.iter().position(|s| s.id.eq_ignore_ascii_case(id) && s.published_ms <= now_ms);
            if let Some(s) = published {
                let version = version_after(&ws, found.span.1);
                let latest = self.version_at(s, now_ms);
                if version.is_some_and(|v| v < 1 || v > latest) {
                    named.unknown.push(format!("{} v{}", self.stories[s].id, version.unwrap_or_default()));
                }
                named.stories.push(StoryTold { id: self.stories[s].id.clone(), version });
            } else if self.tasks.iter().any(|t| t.id.eq_ignore_ascii_case(id))
                || self.config.editors.iter().any(|e| e.id.eq_ignore_ascii_case(id))
            {
                // A task the world made, or an editor id (read by the facts).
            } else {
                let shape = id_shape(id);
                let known = shape == id_shape("S101")
                    || shape == id_shape("K701")
                    || self.config.editors.iter().any(|e| id_shape(&e.id) == shape);
                if known && !shape.0.is_empty() {
                    named.unknown.push(id.to_string());
                }
            }
        }
        named
    }

    fn answer_question(&mut self, reading: &Reading, facts: &[Fact]) -> Message {
        let content = Value::map([("editor_id", Value::str(self.editor_id()))]);
        let wanted = self.wanted;
        listen::answer_question(self, reading, facts, label, content, move |i, fact| match i {
            COUNT => Value::Int(wanted),
            _ => Value::Str(fact.value.shown()),
        })
    }

    /// A proposal checked value by value: the count, and the stories named.
    fn answer_proposal(&mut self, reading: &Reading, facts: &[Fact], named: &Named) -> Message {
        let wrong = reading.stated.iter().any(|s| !s.right);
        let mut content = self.request(true);
        if wrong || !named.unknown.is_empty() {
            let count = facts[COUNT].value.shown();
            content.set("confirm", Value::Bool(false));
            return Message { text: self.voice().no(&[("number of stories", count.as_str())]), content };
        }
        if !reading.states_right(COUNT) && named.stories.is_empty() {
            return Message { text: self.request_text(), content };
        }
        content.set("confirm", Value::Bool(true));
        Message { text: self.voice().yes(), content }
    }

    /// Judges a statement: every id and version told must be one the world
    /// holds; a summary in words is kept as a `send_summary` of its stories.
    fn judge_statement(
        &mut self,
        ws: &[Word],
        reading: &Reading,
        named: &Named,
        cx: &mut WorldCx<'_, NewsEvent>,
    ) -> Message {
        for s in reading.stated.iter().filter(|s| !s.right && s.fact == EDITOR_ID) {
            cx.minefield(TOLD_WRONG_VALUE, format!("told editor id {}", s.written));
        }
        for what in &named.unknown {
            cx.minefield(TOLD_WRONG_VALUE, format!("told {what} (the feed and the tasks hold no such thing)"));
        }
        let is_summary = !named.stories.is_empty()
            && named.stories.iter().all(|s| s.version.is_some())
            && ws.iter().any(|w| SUMMARY_WORDS.contains(&w.text.as_str()));
        if is_summary {
            let mut stories: Vec<(String, i64)> = Vec::new();
            for s in &named.stories {
                let pair = (s.id.clone(), s.version.unwrap_or_default());
                if !stories.contains(&pair) {
                    stories.push(pair);
                }
            }
            let stale_flag = STALE_PHRASES.iter().any(|p| talk::has_phrase(ws, p));
            self.record_summary(stories, stale_flag, cx);
        }
        listen::acknowledge(self, reading.done || is_summary)
    }
}

impl Listener for Newsroom<'_> {
    fn request_content(&self) -> Value {
        self.request(true)
    }

    /// The request in words, as the editor restates it.
    fn request_text(&self) -> String {
        format!(
            "Summarise the latest {} stories and set up the tasks to check, summarise and publish them.",
            self.wanted
        )
    }

    fn voice(&mut self) -> &mut Voice {
        listen::voice_of(&mut self.voice, self.persona, &self.user_rng)
    }
}

/// The version written right after the byte `end` of a story id: `v2`,
/// `version 2`, `ver 2` (parentheses and commas between are no words).
fn version_after(ws: &[Word], end: usize) -> Option<i64> {
    let i = ws.iter().position(|w| w.span.0 >= end)?;
    let w = &ws[i].text;
    if let Some(n) = w.strip_prefix('v').filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
        return n.parse().ok();
    }
    if matches!(w.as_str(), "version" | "ver") {
        let n = &ws.get(i + 1)?.text;
        if !n.is_empty() && n.len() <= 6 && n.bytes().all(|b| b.is_ascii_digit()) {
            return n.parse().ok();
        }
    }
    None
}

/// How the editor names a fact.
fn label(fact: &Fact) -> String {
    match fact.name.as_str() {
        "editor_id" => "editor id".to_string(),
        "count" => "number of stories".to_string(),
        other => other.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::newsroom::NewsroomConfig;
    use agentsim_engine::StreamSource;

    #[test]
    fn stories_are_read_with_their_versions_and_unknown_ones_kept() {
        let config = NewsroomConfig::default();
        let w = Newsroom::new(&config, &StreamSource::new([7; 32], 3));
        let named = w.named("Latest: S101 (v1), S102 version 1, S103; S199 v1 and S104 v7. Task K799.", 0);
        let told: Vec<(&str, Option<i64>)> = named.stories.iter().map(|s| (s.id.as_str(), s.version)).collect();
        assert_eq!(told, vec![("S101", Some(1)), ("S102", Some(1)), ("S103", None), ("S104", Some(7))]);
        assert_eq!(named.unknown, vec!["S199".to_string(), "S104 v7".to_string(), "K799".to_string()]);
    }

    #[test]
    fn a_question_for_how_many_gets_the_count() {
        let config = NewsroomConfig::default();
        let w = Newsroom::new(&config, &StreamSource::new([7; 32], 3));
        let r = talk::read("How many stories do you want in the summary?", &w.facts(), &w.lexicon());
        assert_eq!((r.intent, r.asked.clone()), (Intent::Ask, vec![COUNT]));
    }
}
