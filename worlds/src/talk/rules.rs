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
