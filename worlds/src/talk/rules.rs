//! The words the reader's rules name (`docs/conversation.md`): the phrase
//! lists, and the rule-word table that gives each word its bits once, when it
//! is scanned. Its own home, so that the scanner and the intent rules both read
//! it without importing each other.

/// Phrases that ask for consent.
pub(crate) const CONSENT: &[&str] = &[
    "shall i",
    "should i",
    "do you want me to",
    "would you like me to",
    "want me to",
    "can i go ahead",
    "may i go ahead",
    "can i proceed",
    "may i proceed",
    "shall we",
    "ok to proceed",
    "okay to proceed",
    "is it ok",
    "is it okay",
    "is that ok",
    "is that okay",
    "do you confirm",
    "can you confirm that",
    "could you confirm that",
    "please confirm that",
    "is that correct",
    "is this correct",
    "is that right",
    "is this right",
    "correct",
    "right",
    "agreed",
    "go ahead",
    "proceed",
    "confirm",
    "sound good",
    "sounds good",
    "does that work",
    "ok",
    "okay",
    "alright",
    "all right",
    "yes",
    "yeah",
    "fine with you",
    "would that work",
    "will that work",
    "does this work",
    "would this work",
    "is this what you'd like",
    "is that what you'd like",
    "is this what you want",
    "is that what you want",
    "your permission",
    "your go-ahead",
    "your go ahead",
    "shall i",
    "do you consent",
    "consent",
    "good to go",
    "do i have your",
    "your approval",
    "resolve this",
];

/// Requests for consent without a question mark ("Please confirm and I'll
/// start the refund.", "Reply YES to confirm"): with an action or a value, a
/// proposal.
pub(crate) const CONSENT_REQUESTS: &[&str] = &[
    "please confirm",
    "reply yes",
    "just reply",
    "reply with yes",
    "confirm and i'll",
    "let me know if you'd like me to",
    "let me know if you would like me to",
    "let me know if i should",
    "let me know and i'll",
    "let me know and i will",
    "say the word",
    "give me the ok",
    "give me the go-ahead",
    "your go-ahead",
    "once you confirm",
    "once you give me",
    "if you confirm",
    "if you'd like me to proceed",
    "let me know if you want me to",
    "reply with yes",
    "reply y",
    "just say yes",
    "kindly confirm",
    "confirm whether",
    "reply confirm",
    "if yes",
    "if so i'll",
    "if you agree",
];

/// Verbs that name an action on the user's behalf.
pub(crate) const ACTIONS: &[&str] = &[
    "refund",
    "refunded",
    "refunding",
    "reimburse",
    "reimbursed",
    "cancel",
    "cancelled",
    "canceled",
    "return",
    "returned",
    "exchange",
    "exchanged",
    "modify",
    "modified",
    "change",
    "changed",
    "update",
    "updated",
    "book",
    "booked",
    "reserve",
    "reserved",
    "credit",
    "credited",
    "issue",
    "issued",
    "process",
    "processed",
    "send",
    "sent",
    "summarise",
    "summarize",
    "create",
    "created",
    "escalate",
    "transfer",
    "check",
    "checking",
];

/// Words that say something was done.
pub(crate) const DONE: &[&str] = &[
    "refunded",
    "reimbursed",
    "cancelled",
    "canceled",
    "returned",
    "exchanged",
    "modified",
    "changed",
    "updated",
    "booked",
    "reserved",
    "credited",
    "issued",
    "processed",
    "done",
    "completed",
    "complete",
    "sent",
    "created",
    "confirmed",
];

/// Phrases that say something was done, beyond the done words above (claims
/// only, [`super::claims`]).
pub(crate) const DONE_PHRASES: &[&str] = &[
    "went through",
    "gone through",
    "successfully",
    "successful",
    "all set",
    "taken care of",
    "applied",
    "initiated",
    "submitted",
    "approved",
    "finalized",
    "finalised",
];

/// Words before a done word that make it describe a thing rather than say an
/// action was done (`the updated details`, `for canceled reservations`).
pub(crate) const DETERMINERS: &[&str] = &[
    "the", "a", "an", "your", "my", "our", "their", "its", "this", "that", "these", "those", "any", "each", "every",
    "for", "of", "with", "about", "airline",
];

/// Nouns that a done word written right before them describes (`canceled
/// flight`, `updated passenger details`) unless a subject or an auxiliary
/// stands before it (`I've refunded order A1002`).
pub(crate) const DESCRIBED: &[&str] = &[
    "flight",
    "flights",
    "reservation",
    "reservations",
    "details",
    "name",
    "passenger",
    "passengers",
    "booking",
    "bookings",
    "ticket",
    "tickets",
    "segment",
    "segments",
    "trip",
    "trips",
    "itinerary",
    "information",
    "info",
    "cabin",
    "version",
    "address",
    "status",
    "items",
];

/// Words in a done word's clause that make it describe a state, a habit or
/// the past rather than an action just taken (`you are currently booked`,
/// `refunds are typically processed`, `it was created on 2024-05-11`,
/// `booked more than 24 hours ago`).
pub(crate) const DESCRIPTIONS: &[&str] = &[
    "currently",
    "originally",
    "upcoming",
    "typically",
    "usually",
    "generally",
    "normally",
    "always",
    "ago",
    "as a",
    "member",
];

/// NegEx-style negation triggers: a done word after one in its clause is
/// denied.
pub(crate) const NEGATION_TRIGGERS: &[&str] = &[
    "no", "not", "never", "isn't", "hasn't", "haven't", "wasn't", "weren't", "won't", "can't", "cannot", "couldn't",
    "didn't", "doesn't", "don't", "hadn't", "neither", "nor", "nothing", "without", "unable", "yet to",
];

/// Phrases that hold a negation word and deny nothing (NegEx's
/// pseudo-triggers).
pub(crate) const PSEUDO_NEGATIONS: &[&str] = &[
    "no problem",
    "no worries",
    "not a problem",
    "not only",
    "no doubt",
    "not just",
    "no need",
    "don't worry",
    "do not worry",
    "not to worry",
    "without any issue",
    "without any issues",
    "without issue",
    "without a problem",
    "without any problem",
    "without delay",
];

/// Words of failure: a done claim in a clause with one is denied ("the refund
/// failed", "could not be processed").
pub(crate) const FAILURES: &[&str] = &[
    "failed",
    "fail",
    "unsuccessful",
    "declined",
    "rejected",
    "did not go through",
    "didn't go through",
    "was denied",
    "could not be",
    "couldn't be",
    "bounced",
    "returned an error",
    "an error occurred",
    "hit an error",
    "ran into an error",
    "encountered an error",
    "got an error",
    "still pending",
    "still showing as pending",
];

/// Phrases that make a done claim counterfactual (anywhere in its sentence).
pub(crate) const COUNTERFACTUALS: &[&str] = &[
    "would have",
    "could have",
    "might have",
    "should have",
    "would've",
    "could've",
    "might've",
    "should've",
    "i'd have",
    "was going to",
    "were going to",
    "had planned to",
    "meant to",
    "intended to",
];

/// ConText-style hedges: a claim in a sentence with one is uncertain.
pub(crate) const HEDGES: &[&str] = &[
    "i think",
    "i believe",
    "i guess",
    "i suppose",
    "i assume",
    "it seems",
    "seems to",
    "seem to",
    "it appears",
    "appears to",
    "appear to",
    "apparently",
    "probably",
    "possibly",
    "perhaps",
    "maybe",
    "likely",
    "not sure",
    "not certain",
    "not entirely sure",
    "unsure",
    "uncertain",
    "might",
    "may have",
    "as far as i know",
    "as far as i can tell",
    "if i'm not mistaken",
    "presumably",
    "supposedly",
    "hopefully",
    "fairly sure",
    "pretty sure",
    "i suspect",
    "suspect",
    "i expect",
    "ought to",
    "should have",
    "not 100",
    "fairly confident",
    "pretty confident",
    "to my knowledge",
    "from what i can see",
    "as far as i can see",
    "looks like",
    "it looks as though",
    "i'd guess",
    "guess",
    "if i'm reading this correctly",
    "if i'm reading this right",
    "if i read this correctly",
    "if i'm not wrong",
    "if i'm reading",
    "reasonably sure",
    "reasonably confident",
    "from what i can tell",
    "to the best of my knowledge",
    "can't guarantee",
    "cannot guarantee",
    "to be sure",
    "double-check",
    "double check",
    "not seeing it",
];

/// Phrases before a done word, in its clause, that make it a promise or a
/// condition rather than a claim that it was done.
pub(crate) const FUTURES: &[&str] = &[
    "will",
    "i'll",
    "we'll",
    "you'll",
    "it'll",
    "shall",
    "going to",
    "about to",
    "to be",
    "once",
    "as soon as",
    "after",
    "if",
    "would be",
    "could be",
    "can be",
    "can only",
    "can always",
    "may be",
    "might be",
    "must be",
    "cannot be",
    "can complete",
    "should",
    "let me",
    "want me to",
    "like me to",
    "need to be",
];

/// Phrases that refuse or say an action cannot be done.
pub(crate) const REFUSALS: &[&str] = &[
    "unable to",
    "not able to",
    "can't",
    "cannot",
    "won't be able",
    "not possible",
    "not eligible",
    "not allowed",
    "i'm afraid",
    "unfortunately",
    "decline",
    "refuse",
];

/// Words that end a negation's scope (NegEx's termination terms), besides
/// punctuation.
pub(crate) const CLAUSE_ENDS: &[&str] =
    &["but", "however", "although", "though", "except", "whereas", "nevertheless", "still", "and", "then"];

/// Words that put a sentence's values on something other than the matter at
/// hand (`your other order`, `another item`).
pub(crate) const OTHER_SUBJECT: &[&str] = &["other", "another", "previous", "earlier", "separate", "separately"];

/// Words of greetings, thanks and goodbyes.
pub(crate) const SMALL_TALK: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank",
    "you",
    "welcome",
    "good",
    "morning",
    "afternoon",
    "evening",
    "day",
    "great",
    "bye",
    "goodbye",
    "cheers",
    "ok",
    "okay",
    "sure",
    "how",
    "are",
    "is",
    "there",
    "anything",
    "else",
    "i",
    "can",
    "help",
    "with",
    "today",
    "nice",
    "have",
    "a",
    "the",
    "let",
    "me",
    "know",
    "if",
    "need",
    "it",
    "was",
    "pleasure",
    "happy",
    "to",
    "for",
    "us",
    "your",
    "patience",
    "you're",
    "waiting",
    "contacting",
    "reaching",
    "out",
    "so",
    "much",
    "very",
    "again",
    "and",
];

/// Questions that ask the user to state a fact ("could you confirm your full
/// name?"), however they are worded: a request, not a proposal.
pub(crate) const STATE_YOUR: &[&str] =
    &["confirm your", "verify your", "provide your", "tell me your", "give me your", "share your"];

/// Small-talk questions that ask for no fact.
pub(crate) const SMALL_TALK_QUESTIONS: &[&str] =
    &["anything else", "how are you", "help you with", "can i help", "something else", "any other"];

/// Requests for information without a question mark.
pub(crate) const REQUESTS: &[&str] = &[
    "please provide",
    "please tell me",
    "please share",
    "please give me",
    "please send me",
    "please let me know",
    "let me know",
    "tell me",
    "i need your",
    "i'll need your",
    "i will need your",
    "provide your",
    "share your",
];

/// A word's bits in the rule-word table ([`Word::rules`]): which of the
/// reader's lists hold it as a one-word phrase, and which lists have a phrase
/// that starts with it. Each word of a message is looked up once, when it is
/// scanned; the rules then test bits instead of comparing strings.
pub(crate) mod rule {
    /// A one-word phrase of [`ACTIONS`].
    pub const ACTION: u16 = 1;
    /// A one-word phrase of [`DONE`].
    pub const DONE: u16 = 1 << 1;
    /// A one-word phrase of [`SMALL_TALK`].
    pub const SMALL_TALK: u16 = 1 << 2;
    /// The first word of a phrase of [`CONSENT`].
    pub const CONSENT_FIRST: u16 = 1 << 3;
    /// The first word of a phrase of [`STATE_YOUR`].
    pub const STATE_YOUR_FIRST: u16 = 1 << 4;
    /// The first word of a phrase of [`SMALL_TALK_QUESTIONS`].
    pub const SMALL_TALK_QUESTION_FIRST: u16 = 1 << 5;
    /// The first word of a phrase of [`REQUESTS`].
    pub const REQUEST_FIRST: u16 = 1 << 6;
    /// A word that says "not" before a done word (`not`, `hasn't`, ...).
    pub const NEGATION: u16 = 1 << 7;
    /// The first word of a phrase of [`CONSENT_REQUESTS`].
    pub const CONSENT_REQUEST_FIRST: u16 = 1 << 8;
}

/// Words that turn a done word that follows them into its opposite.
const NEGATIONS: &[&str] = &["not", "no", "never", "isn't", "hasn't", "haven't", "wasn't", "won't", "can't", "cannot"];

/// FNV-1a: the rule-word table hashes short words, for which SipHash's setup
/// costs more than the look-up (the table is fixed, so no key is chosen by an
/// adversary).
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type RuleTable = std::collections::HashMap<&'static str, u16, std::hash::BuildHasherDefault<Fnv>>;

/// Every word the rules name, with its [`rule`] bits.
static RULE_WORDS: std::sync::LazyLock<RuleTable> = std::sync::LazyLock::new(|| {
    let mut table = RuleTable::default();
    let one_word =
        [(ACTIONS, rule::ACTION), (DONE, rule::DONE), (SMALL_TALK, rule::SMALL_TALK), (NEGATIONS, rule::NEGATION)];
    for (list, bit) in one_word {
        for phrase in list {
            let mut parts = phrase.split_whitespace();
            if let (Some(word), None) = (parts.next(), parts.next()) {
                *table.entry(word).or_default() |= bit;
            }
        }
    }
    let firsts = [
        (CONSENT, rule::CONSENT_FIRST),
        (STATE_YOUR, rule::STATE_YOUR_FIRST),
        (SMALL_TALK_QUESTIONS, rule::SMALL_TALK_QUESTION_FIRST),
        (REQUESTS, rule::REQUEST_FIRST),
        (CONSENT_REQUESTS, rule::CONSENT_REQUEST_FIRST),
    ];
    for (list, bit) in firsts {
        for first in list.iter().filter_map(|p| p.split_whitespace().next()) {
            *table.entry(first).or_default() |= bit;
        }
    }
    table
});

/// The [`rule`] bits of a lower-case word (0 for a word no rule names).
pub(crate) fn rules_of(word: &str) -> u16 {
    RULE_WORDS.get(word).copied().unwrap_or(0)
}
