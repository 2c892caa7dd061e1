//! What a message does, by rules a person can check (`docs/conversation.md`):
//!
//! 1. A message is cut into sentences at `?`, `!`, a new line, and a `.` that
//!    ends a word (not the `.` inside `154.49`).
//! 2. If a sentence is a question (ends with `?`), the last question decides:
//!    - a *proposal* when it asks for consent (`shall I`, `should I`, `do you
//!      want me to`, `can I go ahead`, `is that correct`, `confirm`, ...) and
//!      the message names an action or states a value;
//!    - otherwise a *question* for the facts whose aliases it names (possibly
//!      none: a question about something the user does not hold);
//!    - but small talk (`anything else?`, `how are you?`) after sentences
//!      that state something leaves the message a *statement*.
//! 3. With no question: `please provide / tell me / let me know ...` naming a
//!    fact is a *question*; `please confirm` with values a *proposal*; a
//!    message that names an action or states a value is a *statement*;
//!    greetings and thanks alone are *small talk*; anything else is not
//!    followed (*unclear*).

use std::borrow::Cow;

use super::rules::{CONSENT, CONSENT_REQUESTS, REQUESTS, SMALL_TALK_QUESTIONS, STATE_YOUR, rule};
use super::scan::Word;
use super::{Fact, has_phrase};

/// What a message does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Asks the user for facts.
    Ask,
    /// Asks the user to agree to an action, stating its values.
    Propose,
    /// Tells the user something (a closing tells what was done).
    Tell,
    /// Greets, thanks, or asks nothing in particular.
    SmallTalk,
    /// Nothing the user can follow.
    Unclear,
}

impl Intent {
    /// Stable name (the corpus file uses it).
    pub fn name(self) -> &'static str {
        match self {
            Intent::Ask => "ask",
            Intent::Propose => "propose",
            Intent::Tell => "tell",
            Intent::SmallTalk => "small_talk",
            Intent::Unclear => "unclear",
        }
    }
}

/// A sentence: its words and whether it ends with `?`.
#[derive(Clone, Debug)]
pub struct Sentence<'a> {
    /// The words, lower case: scanned from the sentence ([`sentences`], spans
    /// into the sentence), or the message's own words ([`sentences_of`], spans
    /// into the message).
    pub words: Cow<'a, [Word]>,
    /// Whether it ends with a question mark.
    pub question: bool,
}

/// Whether `c`, followed by the byte `next`, ends a sentence: `?`, `!`, a new
/// line, or a `.` that ends a word (not the one in `154.49`).
pub(crate) fn ends_sentence(c: char, next: Option<&u8>) -> bool {
    match c {
        '?' | '!' | '\n' => true,
        '.' => next.is_none_or(|b| b.is_ascii_whitespace()),
        _ => false,
    }
}

/// Cuts `text` into sentences (rule 1).
pub fn sentences(text: &str) -> Vec<Sentence<'static>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if ends_sentence(c, bytes.get(i + 1)) {
            push_sentence(&mut out, &text[start..i], c == '?');
            start = i + c.len_utf8();
        }
    }
    push_sentence(&mut out, &text[start..], false);
    out
}

/// [`sentences`] of `text` already cut into its [`super::scan::words`] `ws`:
/// each sentence borrows its words from `ws` (their spans are into `text`)
/// instead of scanning its text again.
/// They are the words a scan of the sentence finds whenever the text holds no
/// `@` (an email is read from a whole chunk between spaces, and a chunk may
/// hold a sentence's end), no `_` (a message that is nothing but a code name is
/// read as one word, and so would a sentence be) and is not cut for its length:
/// otherwise the sentences are scanned as [`sentences`] does.
pub fn sentences_of<'a>(text: &str, ws: &'a [Word]) -> Vec<Sentence<'a>> {
    if text.len() > super::scan::SCAN_BYTES_MAX || text.contains(['@', '_']) {
        return sentences(text);
    }
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut next = 0;
    // A sentence's end mark is never part of a word, so each word lies inside
    // one sentence, and the words of a sentence are the next ones in `ws`.
    let mut take = |end: usize, question: bool, out: &mut Vec<Sentence<'a>>| {
        let from = next;
        while next < ws.len() && ws[next].span.1 <= end {
            next += 1;
        }
        push_words(out, Cow::Borrowed(&ws[from..next]), question);
    };
    for (i, c) in text.char_indices() {
        if ends_sentence(c, bytes.get(i + 1)) {
            take(i, c == '?', &mut out);
        }
    }
    take(text.len(), false, &mut out);
    out
}

fn push_sentence(out: &mut Vec<Sentence<'static>>, text: &str, question: bool) {
    push_words(out, Cow::Owned(super::scan::words(text)), question);
}

fn push_words<'a>(out: &mut Vec<Sentence<'a>>, words: Cow<'a, [Word]>, question: bool) {
    if !words.is_empty() {
        out.push(Sentence { words, question });
    } else if question && let Some(last) = out.last_mut() {
        // "A1002??": the second mark belongs to the sentence before.
        last.question = true;
    }
}

/// A list of phrases split into words once and sorted by their first word, so
/// that finding any of them in a message tries only the words that start one
/// (their `first` bit) instead of every phrase at every word (the reader's
/// rules run on every message of every trajectory that talks).
struct PhraseSet {
    phrases: Vec<Vec<&'static str>>,
    /// The [`rule`] bit of the words that start a phrase of the set.
    first: u16,
}

impl PhraseSet {
    fn new(list: &'static [&'static str], first: u16) -> Self {
        let mut phrases: Vec<Vec<&'static str>> = list.iter().map(|p| p.split_whitespace().collect()).collect();
        phrases.retain(|p| !p.is_empty());
        phrases.sort();
        Self { phrases, first }
    }

    /// Whether any phrase of the set stands in `ws`.
    fn any_in(&self, ws: &[Word]) -> bool {
        (0..ws.len()).any(|at| {
            if ws[at].rules & self.first == 0 {
                return false;
            }
            let first = ws[at].text.as_str();
            let from = self.phrases.partition_point(|p| p[0] < first);
            self.phrases[from..]
                .iter()
                .take_while(|p| p[0] == first)
                .any(|p| p.len() <= ws.len() - at && p.iter().zip(&ws[at..]).all(|(part, w)| w.text == *part))
        })
    }
}

macro_rules! phrase_set {
    ($name:ident, $list:ident, $first:expr) => {
        static $name: std::sync::LazyLock<PhraseSet> = std::sync::LazyLock::new(|| PhraseSet::new($list, $first));
    };
}
phrase_set!(CONSENT_SET, CONSENT, rule::CONSENT_FIRST);
phrase_set!(SMALL_TALK_QUESTION_SET, SMALL_TALK_QUESTIONS, rule::SMALL_TALK_QUESTION_FIRST);
phrase_set!(REQUEST_SET, REQUESTS, rule::REQUEST_FIRST);
phrase_set!(CONSENT_REQUEST_SET, CONSENT_REQUESTS, rule::CONSENT_REQUEST_FIRST);
phrase_set!(STATE_YOUR_SET, STATE_YOUR, rule::STATE_YOUR_FIRST);

/// Whether the words name an action.
pub fn names_action(ws: &[Word]) -> bool {
    ws.iter().any(|w| w.rules & rule::ACTION != 0)
}

/// Whether the words say something was done. "Not" or "no" before it says the
/// opposite, and a question asks rather than says.
pub fn says_done(ws: &[Word]) -> bool {
    ws.iter().enumerate().any(|(i, w)| {
        w.rules & rule::DONE != 0 && !ws[i.saturating_sub(3)..i].iter().any(|p| p.rules & rule::NEGATION != 0)
    })
}

fn names_fact(ws: &[Word], facts: &[Fact]) -> bool {
    facts.iter().any(|f| f.aliases.iter().any(|a| has_phrase(ws, a)))
}

/// What `text` does (rules 2 and 3).
pub fn classify(text: &str, ws: &[Word], sentences: &[Sentence<'_>], facts: &[Fact], has_values: bool) -> Intent {
    if ws.is_empty() || text.trim().is_empty() {
        return Intent::Unclear;
    }
    let acts = names_action(ws) || says_done(ws);
    if let Some(q) = sentences.iter().rev().find(|s| s.question) {
        let statements: Vec<&Sentence<'_>> = sentences.iter().filter(|s| !s.question).collect();
        if STATE_YOUR_SET.any_in(&q.words) && names_fact(&q.words, facts) {
            return Intent::Ask;
        }
        // A question for consent, or a question (often the values read back:
        // "you want the keyboard refunded, $89.00?") with a request for
        // consent beside it ("Let me know and I'll get started.").
        if (CONSENT_SET.any_in(&q.words) || CONSENT_REQUEST_SET.any_in(ws)) && (acts || has_values) {
            return Intent::Propose;
        }
        if SMALL_TALK_QUESTION_SET.any_in(&q.words) && !names_fact(&q.words, facts) {
            let told = statements.iter().any(|s| names_action(&s.words) || super::scan::has_values(&s.words));
            return if told { Intent::Tell } else { Intent::SmallTalk };
        }
        return Intent::Ask;
    }
    // A request for consent first: "let me know if I should go ahead" asks
    // for a yes, not for the order it names.
    if CONSENT_REQUEST_SET.any_in(ws) && (acts || has_values) {
        return Intent::Propose;
    }
    // A request asks for what its own sentence names ("Let me know if you
    // need anything else!" after a closing asks for no order).
    if sentences.iter().any(|s| REQUEST_SET.any_in(&s.words) && names_fact(&s.words, facts)) {
        return Intent::Ask;
    }
    if acts || has_values {
        return Intent::Tell;
    }
    if ws.iter().all(|w| w.rules & rule::SMALL_TALK != 0) {
        return Intent::SmallTalk;
    }
    Intent::Unclear
}

/// The facts the question asks for: those whose aliases the last question (or,
/// without a question, the whole message) names, in the facts' order. A question
/// that names none but points back (`it`, `that`) asks for what the sentence
/// before it names. An alias after `that`, `this`, `same` or another's
/// possessive (`mother's`, `his`) names something else, and an alias inside a
/// name the world knows (`whole order`) is that name.
pub fn asked(text: &str, sentences: &[Sentence<'_>], facts: &[Fact], lexicon: &super::Lexicon) -> Vec<usize> {
    let all;
    let last = sentences.iter().rposition(|s| s.question);
    let ws: &[Word] = match last {
        Some(q) => &sentences[q].words,
        None => {
            all = super::scan::words(text);
            &all
        }
    };
    let mut found = named(ws, facts, lexicon);
    if found.is_empty()
        && let Some(q) = last.filter(|&q| q > 0)
        && ws.iter().any(|w| matches!(w.text.as_str(), "it" | "that" | "this" | "again"))
    {
        found = named(&sentences[q - 1].words, facts, lexicon);
    }
    found
}

/// Words ending in `'s` that are a word and `is`, not a possessive: "What's
/// the order number?" asks for the user's order.
const CONTRACTIONS: &[&str] =
    &["what's", "that's", "it's", "here's", "there's", "where's", "who's", "how's", "let's", "he's", "she's", "when's"];

/// The facts whose aliases `ws` names as the user's.
fn named(ws: &[Word], facts: &[Fact], lexicon: &super::Lexicon) -> Vec<usize> {
    let covered = lexicon.covered(ws);
    (0..facts.len())
        .filter(|&i| {
            facts[i].aliases.iter().any(|alias| {
                super::phrase_positions(ws, alias).any(|at| {
                    let before = |k: usize| at.checked_sub(k).map(|j| ws[j].text.as_str());
                    let elsewhere = |w: Option<&str>| {
                        w.is_some_and(|w| {
                            matches!(w, "that" | "this" | "same" | "his" | "her" | "their" | "its" | "maiden")
                                || (w.ends_with("'s") && !CONTRACTIONS.contains(&w))
                        })
                    };
                    !covered[at] && !elsewhere(before(1)) && !elsewhere(before(2))
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_end_at_marks_not_inside_amounts() {
        let s = sentences("I refunded $154.49. Anything else?");
        assert_eq!(s.len(), 2);
        assert!(!s[0].question && s[1].question);
        assert_eq!(s[0].words.last().map(|w| w.text.as_str()), Some("$154.49"));
    }

    #[test]
    fn not_done_is_not_done() {
        assert!(says_done(&super::super::scan::words("Your refund has been issued")));
        assert!(!says_done(&super::super::scan::words("The refund has not been issued yet")));
    }
}
