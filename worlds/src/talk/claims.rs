//! Claims: what each sentence of a message says is so, and how sure it is.
//!
//! A message is read sentence by sentence (the sentences of
//! [`super::intent`]). A sentence that says an action on the user's behalf
//! was carried out (`refunded`, `has been processed`, `went through`) makes a
//! **done** claim; one that asks makes a question or a proposal; one that says
//! it cannot make a **refused** claim; one that promises (`will be refunded`,
//! `I'll refund`) or states values makes an **informed** claim.
//!
//! Each done claim has a **polarity** and a **certainty**, scoped the way
//! NegEx and ConText scope them (Chapman et al. 2001; Harkema et al. 2009):
//! a trigger phrase opens a scope that runs forward to the end of its clause
//! (a `,`, `;`, `:` or a dash between words, or `but`, `however`, `although`,
//! ...), and pseudo-triggers (`no problem`, `not only`) open none:
//! - **negated**: a negation trigger (`no`, `not`, `hasn't`, `never`,
//!   `unable to`) before the done word in its scope, or a failure word
//!   (`failed`, `declined`, `did not go through`) anywhere in its clause;
//! - **counterfactual**: `would have`, `could have`, `I'd have`, or `if` with
//!   `had`, anywhere in the sentence;
//! - **hedged**: `I think`, `I believe`, `probably`, `it seems`, `not sure`,
//!   ... anywhere in the sentence;
//! - a future or a condition before the done word (`will be`, `I'll`, `once`,
//!   `if`) makes it a promise, not a done claim.
//!
//! Only an affirmed, unhedged done claim says that something was done. The
//! word lists are data ([`super::rules`]), listed in `docs/conversation.md`.

use super::rules::{
    CLAUSE_ENDS, COUNTERFACTUALS, DESCRIBED, DESCRIPTIONS, DETERMINERS, DONE_PHRASES, FAILURES, FUTURES, HEDGES,
    NEGATION_TRIGGERS, OTHER_SUBJECT, PSEUDO_NEGATIONS, REFUSALS, rule,
};
use super::scan::Word;

/// What a claim does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Act {
    /// Says an action on the user's behalf was carried out.
    Done,
    /// Asks the user's consent to an action.
    Proposed,
    /// Asks the user for something.
    Asked,
    /// Says the agent cannot or will not do something.
    Refused,
    /// States values or promises something, without saying it was done.
    Informed,
}

impl Act {
    /// Stable name (the corpus files use it).
    pub fn name(self) -> &'static str {
        match self {
            Act::Done => "done",
            Act::Proposed => "proposed",
            Act::Asked => "asked",
            Act::Refused => "refused",
            Act::Informed => "informed",
        }
    }
}

/// Whether a claim is affirmed, denied, or said of what did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Polarity {
    /// Said to be so.
    Affirmed,
    /// Said not to be so (`no refund has been issued`).
    Negated,
    /// Said of what would have been (`I'd have refunded it, but ...`).
    Counterfactual,
    /// Affirmed of one done action and denied of another in one sentence
    /// ("order A1002 was already refunded, so no refund has been issued"):
    /// the reader cannot tell which the message means.
    Mixed,
}

impl Polarity {
    /// Stable name (the corpus files use it).
    pub fn name(self) -> &'static str {
        match self {
            Polarity::Affirmed => "affirmed",
            Polarity::Negated => "negated",
            Polarity::Counterfactual => "counterfactual",
            Polarity::Mixed => "mixed",
        }
    }
}

/// One claim of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// What it does.
    pub act: Act,
    /// Affirmed, negated or counterfactual.
    pub polarity: Polarity,
    /// Whether the speaker marks it uncertain.
    pub hedged: bool,
    /// The byte range of its sentence in the message.
    pub span: (usize, usize),
    /// Whether its sentence is about something else than the matter at hand
    /// (`your other order`, `another`, `also`): its values are not bound to a
    /// done claim of the message.
    pub aside: bool,
}

impl Claim {
    /// An affirmed, unhedged done claim: the message says it was done.
    pub fn says_done(&self) -> bool {
        self.act == Act::Done && self.polarity == Polarity::Affirmed && !self.hedged
    }

    /// A done claim that does not say it was done: negated, counterfactual or
    /// hedged.
    pub fn doubts_done(&self) -> bool {
        self.act == Act::Done && !self.says_done()
    }
}

/// The sentences of `text`, as byte ranges with whether each is a question:
/// the cut of [`super::intent::sentences`].
pub fn sentence_spans(text: &str) -> Vec<((usize, usize), bool)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if super::intent::ends_sentence(c, bytes.get(i + 1)) {
            push_span(&mut out, text, (start, i), c == '?');
            start = i + c.len_utf8();
        }
    }
    push_span(&mut out, text, (start, text.len()), false);
    out
}

fn push_span(out: &mut Vec<((usize, usize), bool)>, text: &str, span: (usize, usize), question: bool) {
    if text[span.0..span.1].chars().any(char::is_alphanumeric) {
        out.push((span, question));
    } else if question && let Some(last) = out.last_mut() {
        last.1 = true;
    }
}

/// The claims of `text`, whose words are `ws` ([`super::scan::words`]), one
/// per sentence that makes one, in order. `proposal` says whether the message
/// as a whole asks for consent (its intent), which its questions then do.
pub fn claims(text: &str, ws: &[Word], proposal: bool) -> Vec<Claim> {
    let mut out: Vec<Claim> = Vec::new();
    // A sentence that is only a hedge ("Refund processed... I think.")
    // hedges the claims on either side of it.
    let mut hedge_next = false;
    for (span, question) in sentence_spans(text) {
        let words: Vec<&Word> = ws.iter().filter(|w| w.span.0 >= span.0 && w.span.1 <= span.1).collect();
        if words.is_empty() {
            continue;
        }
        match sentence_claim(text, &words, span, question, proposal) {
            Some(mut claim) => {
                claim.hedged |= std::mem::take(&mut hedge_next);
                out.push(claim);
            }
            None if any_phrase(&words, HEDGES) => {
                if let Some(last) = out.last_mut() {
                    last.hedged = true;
                }
                hedge_next = true;
            }
            None => {}
        }
    }
    out
}

/// The claim one sentence makes, if any.
fn sentence_claim(text: &str, ws: &[&Word], span: (usize, usize), question: bool, proposal: bool) -> Option<Claim> {
    let hedged = any_phrase(ws, HEDGES);
    let aside = ws.iter().any(|w| OTHER_SUBJECT.contains(&w.text.as_str()));
    let claim = |act, polarity| Some(Claim { act, polarity, hedged, span, aside });
    if question {
        return claim(if proposal { Act::Proposed } else { Act::Asked }, Polarity::Affirmed);
    }
    let done = done_positions(ws);
    if let Some(polarity) = done_polarity(text, ws, &done) {
        return claim(Act::Done, polarity);
    }
    if any_phrase(ws, REFUSALS) {
        return claim(Act::Refused, Polarity::Affirmed);
    }
    let informs = ws.iter().any(|w| w.rules & rule::ACTION != 0 || w.text.chars().any(|c| c.is_ascii_digit()));
    // "You would have gotten $89.00 back": values of what did not happen.
    let polarity = if any_phrase(ws, COUNTERFACTUALS) { Polarity::Counterfactual } else { Polarity::Affirmed };
    informs.then_some(Claim { act: Act::Informed, polarity, hedged, span, aside })
}

/// Where the sentence says something was done: its done words and the last
/// word of its done phrases.
fn done_positions(ws: &[&Word]) -> Vec<usize> {
    let mut at: Vec<usize> = (0..ws.len()).filter(|&i| ws[i].rules & rule::DONE != 0).collect();
    for phrase in DONE_PHRASES.iter().chain(FAILURES) {
        let len = phrase.split_whitespace().count();
        at.extend(phrase_starts(ws, phrase).map(|s| s + len - 1));
    }
    at.sort_unstable();
    at.dedup();
    at
}

/// The polarity of the sentence's done claim, or `None` when it makes none
/// (no done word, or only promised ones); `Mixed` when it affirms one and
/// denies another.
fn done_polarity(text: &str, ws: &[&Word], done: &[usize]) -> Option<Polarity> {
    let said: Vec<usize> =
        done.iter().copied().filter(|&d| !promised(text, ws, d) && !describes(text, ws, d)).collect();
    if said.is_empty() {
        return None;
    }
    if any_phrase(ws, COUNTERFACTUALS) || (has_word(ws, "if") && has_word(ws, "had")) {
        return Some(Polarity::Counterfactual);
    }
    let denied = said.iter().filter(|&&d| negated(text, ws, d)).count();
    Some(match denied {
        0 => Polarity::Affirmed,
        n if n == said.len() => Polarity::Negated,
        _ => Polarity::Mixed,
    })
}

/// Whether the done word at `d` is promised rather than said done: a future
/// or a condition stands before it in its clause.
fn promised(text: &str, ws: &[&Word], d: usize) -> bool {
    let from = clause_start(text, ws, d);
    // Up to the done word itself: `I can complete the booking`.
    FUTURES.iter().any(|phrase| phrase_starts(&ws[from..=d], phrase).next().is_some())
}

/// Whether the done word at `d` describes a thing, a state or the past rather
/// than says an action was done: an adjective (`the updated details`,
/// `airline canceled flight`), a state or a habit (`you are currently
/// booked`, `refunds are typically processed`), a date of long ago (`it was
/// created on 2024-05-11`).
fn describes(text: &str, ws: &[&Word], d: usize) -> bool {
    let before = d.checked_sub(1).map(|i| ws[i].text.as_str());
    let after = ws.get(d + 1).map(|w| w.text.as_str());
    let subject_or_auxiliary = before.is_some_and(|w| {
        matches!(
            w,
            "i" | "we"
                | "i've"
                | "we've"
                | "i'd"
                | "has"
                | "have"
                | "had"
                | "been"
                | "was"
                | "were"
                | "is"
                | "are"
                | "be"
                | "just"
                | "already"
                | "successfully"
                | "also"
                | "now"
        )
    });
    if before.is_some_and(|w| DETERMINERS.contains(&w))
        || (!subject_or_auxiliary && after.is_some_and(|w| DESCRIBED.contains(&w)))
    {
        return true;
    }
    let (from, to) = (clause_start(text, ws, d), clause_end(text, ws, d));
    let clause = &ws[from..to];
    let dated = after == Some("on")
        && ws.get(d + 2).is_some_and(|w| {
            w.text.chars().next().is_some_and(|c| c.is_ascii_digit())
                || super::scan::iso_date(&w.text).is_some()
                || MONTH_WORDS.contains(&w.text.as_str())
        });
    dated || DESCRIPTIONS.iter().any(|p| phrase_starts(clause, p).next().is_some())
}

/// Month names, for a date written after `on`.
const MONTH_WORDS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// Whether the done word at `d` is negated: a negation trigger before it in
/// its clause (not a pseudo-trigger), or a failure word anywhere in its clause.
fn negated(text: &str, ws: &[&Word], d: usize) -> bool {
    let (from, to) = (clause_start(text, ws, d), clause_end(text, ws, d));
    let clause = &ws[from..to];
    if FAILURES.iter().any(|phrase| phrase_starts(clause, phrase).next().is_some()) {
        return true;
    }
    let before = &ws[from..d];
    (0..before.len()).any(|i| {
        NEGATION_TRIGGERS.iter().any(|t| phrase_at(before, i, t))
            && !PSEUDO_NEGATIONS.iter().any(|p| phrase_at(before, i, p) || phrase_at(clause, i, p))
            && !HEDGES.iter().any(|h| h.contains("not") && covers(before, i, h))
    })
}

/// Whether the hedge `phrase` stands in `ws` over index `i` (its `not` is a
/// hedge's, not a negation: `I'm not sure`).
fn covers(ws: &[&Word], i: usize, phrase: &str) -> bool {
    let len = phrase.split_whitespace().count();
    (i.saturating_sub(len - 1)..=i).any(|s| phrase_at(ws, s, phrase))
}

/// The first word of the clause holding word `d`.
fn clause_start(text: &str, ws: &[&Word], d: usize) -> usize {
    (1..=d).rev().find(|&i| breaks_before(text, ws, i)).unwrap_or(0)
}

/// One past the last word of the clause holding word `d`.
fn clause_end(text: &str, ws: &[&Word], d: usize) -> usize {
    (d + 1..ws.len()).find(|&i| breaks_before(text, ws, i)).unwrap_or(ws.len())
}

/// Whether a clause ends before word `i`: punctuation between it and the word
/// before, or `i` is a conjunction that ends a scope.
fn breaks_before(text: &str, ws: &[&Word], i: usize) -> bool {
    let between = &text[ws[i - 1].span.1..ws[i].span.0];
    between.contains([',', ';', ':', '—', '–']) || between.contains(" - ") || CLAUSE_ENDS.contains(&ws[i].text.as_str())
}

fn has_word(ws: &[&Word], word: &str) -> bool {
    ws.iter().any(|w| w.text == word)
}

/// Whether any phrase of `list` stands in `ws`.
fn any_phrase(ws: &[&Word], list: &[&str]) -> bool {
    list.iter().any(|p| phrase_starts(ws, p).next().is_some())
}

/// Where `phrase` (lower-case words) starts in `ws`.
fn phrase_starts<'a>(ws: &'a [&'a Word], phrase: &'a str) -> impl Iterator<Item = usize> + 'a {
    (0..ws.len()).filter(move |&at| phrase_at(ws, at, phrase))
}

/// Whether the words of `phrase` stand in `ws` from `at` on.
fn phrase_at(ws: &[&Word], at: usize, phrase: &str) -> bool {
    let mut k = at;
    for part in phrase.split_whitespace() {
        match ws.get(k) {
            Some(w) if w.text == part => k += 1,
            _ => return false,
        }
    }
    k > at
}

/// Why a message that speaks of a done action does not say it was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doubt {
    /// It says it was not done.
    Negated,
    /// It says what would have been done.
    Counterfactual,
    /// It says it was done, but is not sure.
    Hedged,
    /// It says it was done and not done (in one sentence, or in sentences
    /// that disagree): the reader cannot decide.
    Mixed,
}

/// What a message tells as done: whether it says so, and the values its done
/// claims are about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Told {
    /// Whether an affirmed, unhedged done claim is made.
    pub said_done: bool,
    /// When no done claim is said, why a done claim the message makes does
    /// not count.
    pub doubt: Option<Doubt>,
    /// The stated values bound to the done claims: indices into the
    /// reading's `stated`.
    pub stated: Vec<usize>,
    /// The distinct amounts of money bound to the done claims, in cents, in
    /// the order written.
    pub amounts: Vec<i64>,
}

/// What `text` (words `ws`, read as `reading`) tells as done. The values bound
/// to its done claims are those of the sentences that say it was done and of
/// the sentences around them that make no claim of their own or only state
/// values (`Amount: $89.00. Order: A1002.`), except a sentence about
/// something else (`your other order`); a question, a refusal or a denied
/// done claim binds nothing.
pub fn told(text: &str, ws: &[Word], reading: &super::Reading) -> Told {
    let said_done = reading.claims.iter().any(Claim::says_done);
    let doubt = reading.claims.iter().find(|c| c.doubts_done()).map(|c| match c.polarity {
        Polarity::Negated => Doubt::Negated,
        Polarity::Counterfactual => Doubt::Counterfactual,
        Polarity::Mixed => Doubt::Mixed,
        Polarity::Affirmed => Doubt::Hedged,
    });
    if !said_done || doubt.is_some() {
        // A message that says it was done and, elsewhere, doubts it
        // ("Hopefully it went through! I submitted $89.00.") says neither.
        let doubt = if said_done { Some(Doubt::Mixed) } else { doubt };
        return Told { said_done: false, doubt, ..Told::default() };
    }
    let sentences = sentence_spans(text);
    let bound: Vec<(usize, usize)> = sentences
        .iter()
        .filter(|(span, _)| match reading.claims.iter().find(|c| c.span == *span) {
            Some(c) => c.says_done() || (c.act == Act::Informed && !c.aside && c.polarity == Polarity::Affirmed),
            None => true,
        })
        .map(|(span, _)| *span)
        .collect();
    let inside = |at: (usize, usize)| bound.iter().any(|b| at.0 >= b.0 && at.1 <= b.1);
    let stated = (0..reading.stated.len()).filter(|&i| reading.stated[i].span.is_some_and(inside)).collect();
    let mut amounts = Vec::new();
    for found in super::scan::values_of(text, ws) {
        if let super::Written::Money(cents) = found.value
            && inside(found.span)
            && !amounts.contains(&cents)
        {
            amounts.push(cents);
        }
    }
    Told { said_done, doubt: None, stated, amounts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talk::scan::words;

    fn first(text: &str) -> (Act, Polarity, bool) {
        let c = &claims(text, &words(text), false)[0];
        (c.act, c.polarity, c.hedged)
    }

    #[test]
    fn done_negated_counterfactual_hedged() {
        use Polarity::*;
        assert_eq!(first("I've refunded $89.00 for the keyboard on order A1002."), (Act::Done, Affirmed, false));
        assert_eq!(first("No refund of $89.00 has been issued for the keyboard."), (Act::Done, Negated, false));
        assert_eq!(first("The refund has not been issued yet."), (Act::Done, Negated, false));
        assert_eq!(
            first("I'd have refunded $89.00 on order A1002, but the system was down."),
            (Act::Done, Counterfactual, false)
        );
        assert_eq!(first("I'm not sure, but I think I've refunded $89.00."), (Act::Done, Affirmed, true));
        assert_eq!(first("The refund of $89.00 went through successfully."), (Act::Done, Affirmed, false));
        assert_eq!(first("No problem, I've refunded $89.00."), (Act::Done, Affirmed, false));
        assert_eq!(first("The refund of $89.00 could not be processed."), (Act::Done, Negated, false));
        assert_eq!(first("I tried to refund it, but the refund failed."), (Act::Done, Negated, false));
    }

    #[test]
    fn promises_and_refusals_are_not_done() {
        assert_eq!(first("Your refund of $89.00 will be processed in 5 days.").0, Act::Informed);
        assert_eq!(first("Once it is processed you'll get $89.00 back.").0, Act::Informed);
        assert_eq!(first("I'm unable to refund that order.").0, Act::Refused);
        let rest_assured = "Rest assured, I'll make sure the $24.50 for your mug set (order A1003) gets refunded once the warehouse confirms receipt. 😊";
        assert_eq!(first(rest_assured).0, Act::Informed);
    }
}
