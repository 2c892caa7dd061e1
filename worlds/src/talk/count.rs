//! Counts in text: how many of something a message says (`3 stories`, `the
//! latest three`, `a table for 4`, `party of six`). A bare number is never a
//! count by itself: it is one only right before a noun that it counts (one
//! adjective may stand between, `3 latest stories`) or right after a phrase that
//! introduces a count (`table for`, `party of`, `latest`). So `version 2`,
//! `8pm` or `flight 117` are never read as a count (precision first, as
//! everywhere in the reader).

use super::scan::{self, Word, Written};
use super::{Fact, Intent, Lexicon, Reading, Stated, intent};

/// The largest count read; a larger number before a noun is not a count of
/// people or stories anyone means (and keeps the arithmetic small).
pub const COUNT_MAX: i64 = 999;

/// Number words read as counts.
const NUMBER_WORDS: [&str; 12] =
    ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

/// Words that may stand between a count and its noun (`3 latest stories`).
const BETWEEN: &[&str] = &["latest", "newest", "most", "recent", "new", "top", "last", "more", "other"];

/// What to read counts of: the nouns a count stands before, and the phrases a
/// count follows.
#[derive(Clone, Copy, Debug)]
pub struct CountOf<'a> {
    /// Lower-case nouns (`stories`, `people`).
    pub nouns: &'a [&'a str],
    /// Lower-case phrases after which a number is a count (`table for`).
    pub after: &'a [&'a str],
}

/// A count written in a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counted {
    /// How many.
    pub count: i64,
    /// The number as written (`3`, `three`).
    pub written: String,
    /// Its byte range in the text.
    pub span: (usize, usize),
}

/// The number a word writes: digits (at most three) or a number word.
fn number(word: &str) -> Option<i64> {
    if !word.is_empty() && word.len() <= 3 && word.bytes().all(|b| b.is_ascii_digit()) {
        return word.parse().ok().filter(|n| (1..=COUNT_MAX).contains(n));
    }
    NUMBER_WORDS.iter().position(|w| *w == word).map(|i| i as i64 + 1)
}

/// Whether the phrase (lower-case words) ends right before word `i`.
fn ends_before(ws: &[Word], i: usize, phrase: &str) -> bool {
    let parts: Vec<&str> = phrase.split_whitespace().collect();
    !parts.is_empty() && parts.len() <= i && parts.iter().zip(&ws[i - parts.len()..i]).all(|(p, w)| w.text == *p)
}

/// The counts of `of` written in `ws`, in order.
pub fn counts(ws: &[Word], of: CountOf<'_>) -> Vec<Counted> {
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let Some(n) = number(&w.text) else { continue };
        let noun_at = |j: usize| ws.get(j).is_some_and(|x| of.nouns.contains(&x.text.as_str()));
        let before_noun =
            noun_at(i + 1) || (ws.get(i + 1).is_some_and(|x| BETWEEN.contains(&x.text.as_str())) && noun_at(i + 2));
        let after_phrase = of.after.iter().any(|p| ends_before(ws, i, p));
        if before_noun || after_phrase {
            out.push(Counted { count: n, written: w.text.clone(), span: w.span });
        }
    }
    out
}

/// A fact that is a count: its place among the facts, how it is written, and
/// its value.
#[derive(Clone, Copy, Debug)]
pub struct CountFact<'a> {
    /// The fact's index.
    pub fact: usize,
    /// How a count of it is written.
    pub of: CountOf<'a>,
    /// How many the user means.
    pub value: i64,
}

/// Reads `text` as [`super::read`] does, with two things only a world knows:
/// `count`, a fact read by [`counts`] (never by a value's shape: a bare `5` is
/// no party size), and `world_values`, whether the text names a value of the
/// world beyond the user's facts (a flight, a story, an id of the world's
/// shape), which makes a message that states it a statement, as a value of a
/// fact does.
pub fn read_counting(
    text: &str,
    facts: &[Fact],
    lexicon: &Lexicon,
    count: Option<CountFact<'_>>,
    world_values: bool,
) -> Reading {
    let mut reading = super::read(text, facts, lexicon);
    let ws = scan::words(text);
    if let Some(c) = count {
        reading.stated.retain(|s| s.fact != c.fact);
        for n in counts(&ws, c.of) {
            let (right, span) = (n.count == c.value, Some(n.span));
            reading.stated.push(Stated { fact: c.fact, right, written: n.written, value: None, span });
        }
    }
    let found = scan::values(text);
    let has_values =
        world_values || !reading.stated.is_empty() || found.iter().any(|f| !matches!(f.value, Written::Token(_)));
    let sentences = intent::sentences(text);
    let intent = intent::classify(text, &ws, &sentences, facts, has_values);
    if intent != reading.intent {
        reading.intent = intent;
        reading.asked = match intent {
            Intent::Ask => intent::asked(text, &sentences, facts, lexicon),
            _ => Vec::new(),
        };
        let stated = &reading.stated;
        reading.asked.retain(|&i| !stated.iter().any(|s| s.fact == i));
        reading.claims = super::claims::claims(text, &ws, intent == Intent::Propose);
        reading.done = reading.claims.iter().any(super::claims::Claim::says_done);
    }
    reading
}

#[cfg(test)]
mod tests {
    use super::super::scan::words;
    use super::*;

    const STORIES: CountOf<'static> = CountOf { nouns: &["stories", "story"], after: &["latest", "top"] };

    fn read(text: &str) -> Vec<i64> {
        counts(&words(text), STORIES).into_iter().map(|c| c.count).collect()
    }

    #[test]
    fn a_count_stands_before_its_noun_or_after_its_phrase() {
        assert_eq!(read("Shall I summarise the latest 3 stories?"), vec![3]);
        assert_eq!(read("the three latest stories"), vec![3]);
        assert_eq!(read("the top four"), vec![4]);
    }

    #[test]
    fn a_bare_number_is_no_count() {
        assert_eq!(read("S104 version 2 and S105 v1, 8pm, flight 117"), Vec::<i64>::new());
        assert_eq!(read("1000 stories"), Vec::<i64>::new());
    }
}
