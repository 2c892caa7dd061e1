//! The trajectory: every event of one run with its virtual time, the outcome, the
//! metrics, and a stable digest.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::agent::{Finish, Message, Note};
use crate::call::{Reply, ToolCall};
use crate::fault::FaultTag;
use crate::time::TimeMs;
use crate::value::Value;
use crate::wire;
use crate::world::{Minefield, Verdict};
use xxhash_rust::xxh3::Xxh3;

/// How a trajectory ended, judged against the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The task's success conditions hold and no minefield fired.
    Success,
    /// The agent stopped but the world does not show the task done.
    WrongResult,
    /// A minefield fired (an action that must never happen).
    Violation,
    /// The agent gave up.
    GaveUp,
    /// The agent repeated itself until stopped.
    Looped,
    /// A turn, tool-call, token or event budget ran out.
    BudgetExhausted,
    /// Virtual time ran out (or nothing was left to happen).
    Horizon,
    /// Handed to a human: safe, but not success.
    Escalated,
    /// The agent itself failed.
    AgentError,
    /// The task's state says done, but what the agent told its user could not
    /// be read for certain (a claim the reader could not place or decide): not
    /// counted a success, and not a failure of the agent either until a person
    /// or a model judge reads it.
    Uncertain,
    /// A session whose agent never came (an MCP client that never connected,
    /// or was refused): outside the agent's rates.
    Absent,
    /// A session that would have arrived after the horizon: it never started,
    /// and is outside the agent's rates.
    NotStarted,
    /// The simulator broke one of its own invariants in this run (a bug of
    /// agentsim's or of a world's, never the agent's): the seed is reported with
    /// the command that reproduces it, and every other seed is kept.
    SimError,
}

impl Outcome {
    /// Every outcome, in reporting order.
    pub const ALL: [Outcome; 13] = [
        Outcome::Success,
        Outcome::WrongResult,
        Outcome::Violation,
        Outcome::GaveUp,
        Outcome::Looped,
        Outcome::BudgetExhausted,
        Outcome::Horizon,
        Outcome::Escalated,
        Outcome::AgentError,
        Outcome::Uncertain,
        Outcome::Absent,
        Outcome::NotStarted,
        Outcome::SimError,
    ];

    /// The stable snake_case name used in files.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::WrongResult => "wrong_result",
            Outcome::Violation => "violation",
            Outcome::GaveUp => "gave_up",
            Outcome::Looped => "looped",
            Outcome::BudgetExhausted => "budget_exhausted",
            Outcome::Horizon => "horizon",
            Outcome::Escalated => "escalated",
            Outcome::AgentError => "agent_error",
            Outcome::Uncertain => "uncertain",
            Outcome::Absent => "absent",
            Outcome::NotStarted => "not_started",
            Outcome::SimError => "sim_error",
        }
    }

    /// Whether this ends safely without success (counts towards recovery).
    pub fn is_safe_end(self) -> bool {
        matches!(self, Outcome::Success | Outcome::Escalated)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum EventKind {
    /// A user message reached the agent.
    User(Message),
    /// A planner decision (one model call).
    Turn {
        /// 1-based turn number.
        turn: u32,
        /// Prompt tokens of this call.
        prompt_tokens: u32,
        /// Completion tokens of this call.
        completion_tokens: u32,
        /// Virtual time the model took.
        think_ms: TimeMs,
    },
    /// A tool call left the agent.
    Call {
        /// Call number in this trajectory (1-based).
        id: u32,
        /// The call.
        call: ToolCall,
    },
    /// A tool call came back.
    Result {
        /// The call's number.
        id: u32,
        /// What came back.
        reply: Reply,
        /// How long it took.
        latency_ms: TimeMs,
        /// The injected fault, if any.
        fault: Option<FaultTag>,
    },
    /// A planner or stack-layer decision.
    Note(Note),
    /// A change in the world.
    World {
        /// What changed.
        what: &'static str,
        /// Details.
        detail: Value,
    },
    /// A minefield fired.
    Minefield(Minefield),
    /// The agent waits (`until_ms: None` waits for the user).
    Wait {
        /// Wake-up time, if any.
        until_ms: Option<TimeMs>,
    },
    /// The agent stopped.
    Finish(Finish),
    /// The run ended.
    End {
        /// Judged outcome.
        outcome: Outcome,
        /// Why the run stopped.
        reason: String,
        /// The world's verdict.
        verdict: Verdict,
    },
    /// The agent told the user something in words (`Action::Say`). Appended
    /// last, so the encodings (and digests) of the older kinds do not move.
    Said {
        /// What the agent wrote.
        text: String,
    },
    /// In a run of many sessions: the events that follow are session
    /// `session`'s (`None`: the world's own). Recorded only when the acting
    /// session changes, and never in a run of one session.
    Session {
        /// The session acting from here on.
        session: Option<crate::sessions::SessionId>,
    },
    /// A model request waited in line for the model's shared capacity
    /// (`ModelCapacity`) before it started.
    Queued {
        /// How long it waited.
        queue_ms: TimeMs,
    },
    /// In a run of many sessions: the session ended (its agent finished, or a
    /// budget of its own ran out).
    SessionEnd {
        /// Why it stopped.
        reason: String,
    },
}

/// The first variants of [`EventKind`] with their payloads borrowed. Serde numbers
/// variants by position and serialises `&T` as `T`, so each encodes to exactly the
/// bytes of the owned event (a test checks it): the recorder can hash a call, a
/// reply or a message without cloning it when events are not kept.
///
/// The variants must stay the same, in the same order, as `EventKind`'s first ones.
#[derive(Serialize)]
pub(crate) enum EventKindRef<'a> {
    /// [`EventKind::User`].
    User(&'a Message),
    /// [`EventKind::Turn`].
    Turn { turn: u32, prompt_tokens: u32, completion_tokens: u32, think_ms: TimeMs },
    /// [`EventKind::Call`].
    Call { id: u32, call: &'a ToolCall },
    /// [`EventKind::Result`].
    Result { id: u32, reply: &'a Reply, latency_ms: TimeMs, fault: Option<FaultTag> },
    /// [`EventKind::Wait`].
    Wait { until_ms: Option<TimeMs> },
}

impl EventKindRef<'_> {
    fn to_owned(&self) -> EventKind {
        match *self {
            EventKindRef::User(message) => EventKind::User(message.clone()),
            EventKindRef::Turn { turn, prompt_tokens, completion_tokens, think_ms } => {
                EventKind::Turn { turn, prompt_tokens, completion_tokens, think_ms }
            }
            EventKindRef::Call { id, call } => EventKind::Call { id, call: call.clone() },
            EventKindRef::Result { id, reply, latency_ms, fault } => {
                EventKind::Result { id, reply: reply.clone(), latency_ms, fault }
            }
            EventKindRef::Wait { until_ms } => EventKind::Wait { until_ms },
        }
    }
}

/// An event at a virtual time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// When.
    pub at_ms: TimeMs,
    /// What.
    pub kind: EventKind,
    /// A diagnostic (the wall-clock latency of a model's answer, an external
    /// agent's stderr): kept for the reader, outside the digest (an incident's
    /// timeline leaves a model's out: its replay does not repeat them).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub diagnostic: bool,
    /// In a run of many sessions, the session acting (`None`: the world's
    /// own, or a run of one session). The digest has it from the `Session`
    /// events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<crate::sessions::SessionId>,
}

/// A 128-bit digest, printed as 32 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Digest(pub [u8; 16]);

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::hex::hex(&self.0))
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Digest {
    /// Parses 32 lower- or upper-case hex digits.
    pub fn from_hex(text: &str) -> Option<Digest> {
        if text.len() != 32 || !text.is_ascii() {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Digest(out))
    }

    /// The digest of a sequence of digests (for a whole sweep, in seed order).
    pub fn combine<'a>(digests: impl IntoIterator<Item = &'a Digest>) -> Digest {
        let mut chain = DigestChain::new();
        for d in digests {
            chain.push(d);
        }
        chain.finish()
    }
}

/// An incremental digest over a sequence of digests; feeding the same digests in the
/// same order gives the same result however they were produced or batched.
#[derive(Clone)]
pub struct DigestChain(Xxh3);

impl Default for DigestChain {
    fn default() -> Self {
        Self::new()
    }
}

impl DigestChain {
    /// An empty chain.
    pub fn new() -> Self {
        Self(Xxh3::with_seed(SWEEP_DIGEST_SEED))
    }

    /// Appends one digest.
    pub fn push(&mut self, digest: &Digest) {
        self.0.update(&digest.0);
    }

    /// The digest of everything pushed so far.
    pub fn finish(&self) -> Digest {
        Digest(self.0.digest128().to_le_bytes())
    }
}

/// The seed of a trajectory's digest: XXH3-128 with this seed over the events'
/// encoding. Its bytes spell "agentsim" and the format's version (2): a change
/// to the encoding or the hash takes a new one.
const TRAJECTORY_DIGEST_SEED: u64 = u64::from_le_bytes(*b"agsimtr2");

/// The seed of a sweep's digest, the chain over its trajectories' digests.
const SWEEP_DIGEST_SEED: u64 = u64::from_le_bytes(*b"agsimsw2");

/// Counts over one trajectory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Planner decisions (model calls).
    pub turns: u32,
    /// Tool calls sent, retries included.
    pub tool_calls: u32,
    /// Calls whose reply was not a well-formed success.
    pub failed_calls: u32,
    /// Calls that met an injected fault.
    pub faults_seen: u32,
    /// Minefields fired.
    pub violations: u32,
    /// Prompt tokens over all turns.
    pub prompt_tokens: u64,
    /// Completion tokens over all turns.
    pub completion_tokens: u64,
    /// Model cost in millionths of a US dollar.
    pub cost_micro_usd: u64,
    /// Virtual time at the end.
    pub virtual_ms: TimeMs,
    /// Events recorded.
    pub events: u32,
    /// Calls the world itself refused with a 4xx (bad or unknown arguments, a
    /// missing record): tool-fidelity errors, as opposed to injected faults.
    pub rejected_calls: u32,
}

impl Metrics {
    /// Prompt plus completion tokens.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One fault one call suffered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RealisedFault {
    /// The tool.
    pub tool: crate::tool::ToolId,
    /// The tool's call number, from 1.
    pub call: u64,
    /// The fault, as an explicit schedule writes it.
    pub fault: crate::fault::Fault,
}

/// One run, summarised; `events` is filled only when recording was asked for.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trajectory {
    /// The seed.
    pub seed: u64,
    /// The trial of the seed (`--trials K`; 0 for the seed's own run), set by
    /// whoever ran it (`Runner::run_trial`).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub trial: u32,
    /// The judged outcome.
    pub outcome: Outcome,
    /// The world's verdict.
    pub verdict: Verdict,
    /// Why the run stopped.
    pub end_reason: String,
    /// Counts.
    pub metrics: Metrics,
    /// The distinct kinds of fault met, sorted.
    pub fault_kinds: Vec<FaultTag>,
    /// The distinct minefields that fired, in the order they first fired.
    pub minefields: Vec<&'static str>,
    /// Every fault every call suffered, in call order: the run's realised schedule,
    /// ready to be made explicit (see `ToolConfig::explicit_faults`).
    pub realised_faults: Vec<RealisedFault>,
    /// How often each kind of planner or stack-layer decision (a note's source
    /// and what) was taken, sorted by (source, what): what the stack did, counted
    /// even when events are not recorded.
    pub decisions: Vec<(&'static str, &'static str, u32)>,
    /// Digest over every event (always computed, recorded or not).
    pub digest: Digest,
    /// The events, when recorded.
    pub events: Vec<Event>,
    /// The world's hash of its final state, when it declares one
    /// ([`World::state_hash`](crate::World::state_hash)); not in the digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_hash: Option<String>,
    /// The world's checks ([`World::checks`](crate::World::checks)), in its
    /// order; not in the digest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::world::Check>,
    /// The natural log of the run's likelihood ratio, nominal over sampled, over
    /// its fault decisions (see [`crate::likelihood`]): 0 unless faults were drawn
    /// with tilted probabilities (`SimConfig::nominal_fault_scale`). Not in the
    /// digest: the events are.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_weight: f64,
    /// In an importance-sampling run, each fault rule's decisive draws and hits
    /// (tools in id order, then rules in order; see
    /// [`crate::likelihood::RuleDraws`]); empty otherwise. Not in the digest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rule_draws: Vec<crate::likelihood::RuleDraws>,
    /// In a run of many sessions, each session's outcome, in session order;
    /// empty in a run of one. The trajectory's own outcome is then the run's
    /// (see `sim::sessions_outcome`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<SessionResult>,
}

/// One session of a run of many: what its user saw.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionResult {
    /// The session's number, from 0 in order of arrival.
    pub session: crate::sessions::SessionId,
    /// When its user arrived.
    pub arrived_ms: TimeMs,
    /// When it ended (its agent finished, a budget of its own ran out, or the
    /// run ended).
    pub ended_ms: TimeMs,
    /// Its judged outcome.
    pub outcome: Outcome,
    /// The world's verdict on its task.
    pub verdict: Verdict,
    /// Why it stopped.
    pub end_reason: String,
    /// Its counts (`events` and `virtual_ms` are the run's).
    pub metrics: Metrics,
    /// Time its model requests waited in line for the shared capacity.
    pub model_queue_ms: TimeMs,
    /// The first other session whose action made a minefield of this one's
    /// (a race, [`crate::WorldCx::race`]), if any.
    pub hurt_by: Option<crate::sessions::SessionId>,
}

impl SessionResult {
    /// How long its user waited from arrival to the end.
    pub fn latency_ms(&self) -> TimeMs {
        self.ended_ms - self.arrived_ms
    }
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Trajectory {
    /// The trajectory of a run in which the simulator broke one of its own
    /// invariants (`what` says which): outcome `sim_error`, no events, and a
    /// digest of the seed and `what`, so the same broken run reports the same
    /// row on any number of threads.
    pub fn sim_error(seed: u64, what: &str) -> Self {
        let mut hasher = Xxh3::with_seed(TRAJECTORY_DIGEST_SEED);
        hasher.update(b"sim_error");
        hasher.update(&seed.to_le_bytes());
        hasher.update(what.as_bytes());
        let end_reason = format!("agentsim broke an invariant (a bug of agentsim's, not the agent's): {what}");
        Trajectory {
            seed,
            trial: 0,
            outcome: Outcome::SimError,
            verdict: Verdict {
                success: false,
                escalated: false,
                milestone: "sim_error",
                detail: end_reason.clone(),
                told_accurately: None,
                uncertain: None,
            },
            end_reason,
            metrics: Metrics::default(),
            fault_kinds: Vec::new(),
            minefields: Vec::new(),
            realised_faults: Vec::new(),
            decisions: Vec::new(),
            digest: Digest(hasher.digest128().to_le_bytes()),
            events: Vec::new(),
            state_hash: None,
            checks: Vec::new(),
            log_weight: 0.0,
            rule_draws: Vec::new(),
            sessions: Vec::new(),
        }
    }

    /// True when the trajectory met a fault and still ended safely.
    pub fn recovered(&self) -> bool {
        self.metrics.faults_seen > 0 && self.outcome.is_safe_end()
    }
}

/// Encodes events as they happen (canonical postcard encoding, concatenated) and
/// keeps them when asked to; the digest is XXH3-128 over the whole encoding.
///
/// The digest guards determinism (the same inputs give the same trajectory, on
/// any thread count, shard split or machine), not against an adversary: a fast
/// non-cryptographic hash serves, and it costs a fraction of what BLAKE3 did.
/// The encoding is hashed in large pieces rather than event by event; the digest
/// is the same as if each event had been fed separately (hashing is over the
/// concatenation).
pub struct Recorder {
    hasher: Xxh3,
    buf: Vec<u8>,
    events: Option<Vec<Event>>,
    /// Without `events`: the last diagnostics, when asked to keep them
    /// ([`Recorder::with_diagnostics`]), at most
    /// [`DIAGNOSTICS_UNRECORDED_MAX`].
    diagnostics: Option<Vec<Event>>,
    count: u32,
    /// The time of the latest event digested: events are fed in time order,
    /// the digest's canonical order.
    last_at_ms: TimeMs,
    /// In a run of many sessions, the session acting (see
    /// [`Recorder::enter`]); `None` in a run of one.
    sessions: Option<Acting>,
}

/// Which session acts, and which the digest was last told of.
#[derive(Clone, Copy)]
struct Acting {
    acting: Option<crate::sessions::SessionId>,
    marked: Option<crate::sessions::SessionId>,
}

/// The most diagnostics a run that keeps no events keeps when asked to
/// ([`Recorder::with_diagnostics`]): the last ones, each an agent's stderr
/// tail (bounded by the agent's `stderr_bytes_max`) or a model's note.
pub const DIAGNOSTICS_UNRECORDED_MAX: usize = 8;

/// The index of [`EventKind::End`] (serde numbers variants by position).
const END: u32 = 9;

/// Encoded bytes buffered before they are hashed: 16 BLAKE3 chunks.
const HASH_BATCH_BYTES: usize = 16 * 1024;

impl Recorder {
    /// A recorder that keeps events when `keep` is true.
    pub fn new(keep: bool) -> Self {
        Self::with_batch(keep, Vec::new())
    }

    /// A recorder whose batch of encoded events is `batch` (empty; its
    /// capacity kept from an earlier recorder, see [`Recorder::finish_with_batch`]).
    pub(crate) fn with_batch(keep: bool, mut batch: Vec<u8>) -> Self {
        assert!(batch.is_empty(), "a recorder starts with an empty batch");
        batch.reserve(HASH_BATCH_BYTES + 1024);
        Self {
            hasher: Xxh3::with_seed(TRAJECTORY_DIGEST_SEED),
            buf: batch,
            events: keep.then(Vec::new),
            diagnostics: None,
            count: 0,
            last_at_ms: 0,
            sessions: None,
        }
    }

    /// Keeps the last [`DIAGNOSTICS_UNRECORDED_MAX`] diagnostics when events
    /// are not kept (they are among the events when they are).
    pub fn with_diagnostics(mut self) -> Self {
        if self.events.is_none() {
            self.diagnostics = Some(Vec::new());
        }
        self
    }

    /// Marks the run as one of many sessions: [`Recorder::enter`] then
    /// records which session acts.
    pub fn with_sessions(mut self) -> Self {
        self.sessions = Some(Acting { acting: None, marked: None });
        self
    }

    /// The events from here on are `session`'s (`None`: the world's own). In a
    /// run of many sessions, the next event recorded after a change is
    /// preceded by an `EventKind::Session` event; in a run of one this does
    /// nothing.
    pub fn enter(&mut self, session: Option<crate::sessions::SessionId>) {
        if let Some(sessions) = &mut self.sessions {
            sessions.acting = session;
        }
    }

    /// Records the change of session before an event, when there is one.
    fn mark(&mut self, at_ms: TimeMs) {
        if let Some(sessions) = &mut self.sessions
            && sessions.acting != sessions.marked
        {
            sessions.marked = sessions.acting;
            let kind = EventKind::Session { session: sessions.acting };
            self.record(at_ms, kind);
        }
    }

    /// The session acting, in a run of many sessions.
    fn acting(&self) -> Option<crate::sessions::SessionId> {
        self.sessions.as_ref().and_then(|s| s.acting)
    }

    /// Keeps one event when events are kept, without hashing or counting it: a
    /// diagnostic (see `AgentCx::diagnose`), outside the digest by design.
    pub fn keep_unhashed(&mut self, at_ms: TimeMs, kind: EventKind) {
        let session = self.acting();
        if let Some(events) = &mut self.events {
            events.push(Event { at_ms, kind, diagnostic: true, session });
        } else if let Some(kept) = &mut self.diagnostics {
            // The last ones: an agent's failure ends its session, so its
            // stderr comes late.
            if kept.len() == DIAGNOSTICS_UNRECORDED_MAX {
                kept.remove(0);
            }
            kept.push(Event { at_ms, kind, diagnostic: true, session });
        }
    }

    /// Records one event.
    pub fn record(&mut self, at_ms: TimeMs, kind: EventKind) {
        self.mark(at_ms);
        self.check_order(at_ms);
        self.encode_event(at_ms, &kind);
        if self.buf.len() >= HASH_BATCH_BYTES {
            self.hasher.update(&self.buf);
            self.buf.clear();
        }
        self.count += 1;
        let session = self.acting();
        if let Some(events) = &mut self.events {
            events.push(Event { at_ms, kind, diagnostic: false, session });
        }
    }

    /// Records one event given by reference: the same bytes and digest as
    /// [`Recorder::record`] of its owned form, which is built only when events are
    /// kept.
    pub(crate) fn record_ref(&mut self, at_ms: TimeMs, kind: EventKindRef<'_>) {
        self.record_by(at_ms, |r| r.encode_ref(at_ms, &kind), || kind.to_owned());
    }

    /// Records an [`EventKind::End`] from borrowed parts: the bytes of
    /// [`Recorder::record`] (serde writes a variant as its index and then its
    /// fields, as a tuple of them), with the reason and the verdict copied
    /// only when events are kept.
    pub(crate) fn record_end(&mut self, at_ms: TimeMs, outcome: Outcome, reason: &str, verdict: &Verdict) {
        let encode = |r: &mut Recorder| r.encode(&(at_ms, END, outcome, reason, verdict));
        self.record_by(at_ms, encode, || EventKind::End {
            outcome,
            reason: reason.to_string(),
            verdict: verdict.clone(),
        });
    }

    /// Records one event that `encode` appends to the batch and `owned`
    /// builds, only when events are kept.
    #[inline(always)]
    fn record_by(&mut self, at_ms: TimeMs, encode: impl FnOnce(&mut Self), owned: impl FnOnce() -> EventKind) {
        self.mark(at_ms);
        self.check_order(at_ms);
        encode(self);
        if self.buf.len() >= HASH_BATCH_BYTES {
            self.hasher.update(&self.buf);
            self.buf.clear();
        }
        self.count += 1;
        let session = self.acting();
        if let Some(events) = &mut self.events {
            events.push(Event { at_ms, kind: owned(), diagnostic: false, session });
        }
    }

    /// Events reach the digest in time order (the clock never goes back), and
    /// their count stays below `u32::MAX`.
    fn check_order(&mut self, at_ms: TimeMs) {
        assert!(at_ms >= self.last_at_ms, "events are digested in time order");
        assert!(self.count < u32::MAX, "fewer than 2^32 events in a trajectory");
        self.last_at_ms = at_ms;
    }

    /// Appends the encoding of `(at_ms, kind)` to the batch: the events of the
    /// steady state written by hand ([`crate::wire`]), the rest by serde; the
    /// bytes are postcard's either way.
    fn encode_event(&mut self, at_ms: TimeMs, kind: &EventKind) {
        let buf = &mut self.buf;
        match kind {
            EventKind::User(message) => self.encode_ref(at_ms, &EventKindRef::User(message)),
            &EventKind::Turn { turn, prompt_tokens, completion_tokens, think_ms } => {
                self.encode_ref(at_ms, &EventKindRef::Turn { turn, prompt_tokens, completion_tokens, think_ms })
            }
            EventKind::Call { id, call } => self.encode_ref(at_ms, &EventKindRef::Call { id: *id, call }),
            EventKind::Result { id, reply, latency_ms, fault } => {
                self.encode_ref(at_ms, &EventKindRef::Result { id: *id, reply, latency_ms: *latency_ms, fault: *fault })
            }
            EventKind::Note(note) => {
                wire::varint(buf, at_ms);
                wire::varint(buf, wire::NOTE);
                wire::note(buf, note);
            }
            EventKind::World { what, detail } => {
                wire::varint(buf, at_ms);
                wire::varint(buf, wire::WORLD);
                wire::str(buf, what);
                wire::value(buf, detail);
            }
            &EventKind::Wait { until_ms } => self.encode_ref(at_ms, &EventKindRef::Wait { until_ms }),
            _ => self.encode(&(at_ms, kind)),
        }
    }

    /// Appends the encoding of `(at_ms, kind)` to the batch, by hand but for a
    /// fault (rare, and of many shapes).
    fn encode_ref(&mut self, at_ms: TimeMs, kind: &EventKindRef<'_>) {
        let buf = &mut self.buf;
        wire::varint(buf, at_ms);
        match *kind {
            EventKindRef::User(message) => {
                wire::varint(buf, wire::USER);
                wire::message(buf, message);
            }
            EventKindRef::Turn { turn, prompt_tokens, completion_tokens, think_ms } => {
                wire::varint(buf, wire::TURN);
                for n in [u64::from(turn), u64::from(prompt_tokens), u64::from(completion_tokens), think_ms] {
                    wire::varint(buf, n);
                }
            }
            EventKindRef::Call { id, call } => {
                wire::varint(buf, wire::CALL);
                wire::varint(buf, u64::from(id));
                wire::call(buf, call);
            }
            EventKindRef::Result { id, reply, latency_ms, fault } => {
                wire::varint(buf, wire::RESULT);
                wire::varint(buf, u64::from(id));
                wire::reply(buf, reply);
                wire::varint(buf, latency_ms);
                match fault {
                    None => buf.push(0),
                    Some(tag) => {
                        buf.push(1);
                        self.encode(&tag);
                    }
                }
            }
            EventKindRef::Wait { until_ms } => {
                wire::varint(buf, wire::WAIT);
                wire::option_u64(buf, until_ms);
            }
        }
    }

    /// Appends the postcard encoding of `event` to the batch.
    fn encode<T: Serialize + ?Sized>(&mut self, event: &T) {
        let buf = std::mem::take(&mut self.buf);
        // Encoding plain data into memory cannot fail.
        self.buf = postcard::to_extend(event, buf).expect("postcard encodes events into memory");
    }

    /// Events recorded so far.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The digest and the kept events.
    pub fn finish(self) -> (Digest, Vec<Event>) {
        let (digest, events, _) = self.finish_with_batch();
        (digest, events)
    }

    /// [`Recorder::finish`], and the batch's buffer, emptied, for another recorder.
    pub(crate) fn finish_with_batch(mut self) -> (Digest, Vec<Event>, Vec<u8>) {
        self.hasher.update(&self.buf);
        self.buf.clear();
        let events = self.events.or(self.diagnostics).unwrap_or_default();
        (Digest(self.hasher.digest128().to_le_bytes()), events, self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "events are digested in time order")]
    fn an_event_back_in_time_is_refused() {
        let mut r = Recorder::new(false);
        r.record(2, EventKind::World { what: "x", detail: Value::Null });
        r.record(1, EventKind::World { what: "y", detail: Value::Null });
    }

    #[test]
    fn digest_depends_on_content_and_order() {
        let digest = |events: &[(TimeMs, &'static str)]| {
            let mut r = Recorder::new(false);
            for (t, what) in events {
                r.record(*t, EventKind::World { what, detail: Value::Null });
            }
            r.finish().0
        };
        let a = digest(&[(1, "x"), (2, "y")]);
        assert_eq!(a, digest(&[(1, "x"), (2, "y")]));
        assert_ne!(a, digest(&[(1, "y"), (2, "x")]));
        assert_ne!(digest(&[(1, "x"), (1, "y")]), digest(&[(1, "y"), (1, "x")]));
        assert_ne!(a, digest(&[(1, "x"), (3, "y")]));
        assert_eq!(a.to_string().len(), 32);
    }

    /// Every value kind, at depth, with the integers at varint boundaries.
    fn every_value() -> Value {
        let f = |x| Value::Float(crate::value::Float::new(x).expect("finite"));
        let ints = [0, 1, -1, 63, -64, 64, 127, 128, 16_383, 16_384, i64::MAX, i64::MIN];
        // Deeper than the encoder's recursion goes: both halves of it are checked.
        let mut deep = Value::map([("leaf", Value::Null)]);
        for i in 0..(2 * crate::value::VISIT_DEPTH_RECURSIVE_MAX as i64 + 5) {
            deep = if i % 2 == 0 { Value::List(vec![deep, Value::Int(i)]) } else { Value::map([("k", deep)]) };
        }
        Value::map([
            ("null", Value::Null),
            ("bools", Value::List(vec![Value::Bool(true), Value::Bool(false)])),
            ("ints", Value::List(ints.into_iter().map(Value::Int).collect())),
            ("floats", Value::List(vec![f(0.0), f(-12.99), f(1e300)])),
            ("text", Value::str("é \"quoted\" \u{1f600}")),
            ("long", Value::str("x".repeat(300))),
            ("empty", Value::List(Vec::new())),
            ("empty_map", Value::Map(Vec::new())),
            ("deep", deep),
        ])
    }

    #[test]
    fn events_written_by_hand_encode_as_postcard_does() {
        let call = ToolCall { tool: crate::tool::ToolId(300), args: every_value().into(), idempotency_key: None };
        let keyed = ToolCall { idempotency_key: Some("idem-1".into()), ..call.clone() };
        let mut kinds = vec![
            EventKind::User(Message { text: "hi é".into(), content: every_value() }),
            EventKind::User(Message { text: String::new(), content: Value::Null }),
            EventKind::Turn { turn: 1, prompt_tokens: 130_000, completion_tokens: 60, think_ms: u64::MAX },
            EventKind::Call { id: 1, call: call.clone() },
            EventKind::Call { id: u32::MAX, call: keyed },
            EventKind::Note(Note { source: "retry", what: "backoff", detail: every_value() }),
            EventKind::World { what: "refund", detail: Value::str("o-1") },
            EventKind::Wait { until_ms: None },
            EventKind::Wait { until_ms: Some(1 << 40) },
            EventKind::Said { text: "served by serde".into() },
        ];
        let replies = [
            Reply::Ok(every_value().into()),
            Reply::Error { status: 503, retry_after_ms: None, message: "down".into() },
            Reply::Error { status: 429, retry_after_ms: Some(1_500), message: String::new() },
            Reply::Timeout,
            Reply::Garbled("{\"a\":".into()),
        ];
        let faults = [None, Some(FaultTag::RateLimited), Some(FaultTag::Error(503))];
        for (i, reply) in replies.into_iter().enumerate() {
            kinds.push(EventKind::Result { id: 7, reply, latency_ms: 200, fault: faults[i % faults.len()] });
        }
        for at_ms in [0, 127, 128, 1 << 35] {
            for kind in &kinds {
                let mut r = Recorder::new(false);
                r.encode_event(at_ms, kind);
                assert_eq!(r.buf, postcard::to_allocvec(&(at_ms, kind)).unwrap(), "{kind:?}");
            }
        }
    }

    #[test]
    fn waits_and_ends_recorded_by_reference_encode_like_owned_ones() {
        let verdict = Verdict {
            success: false,
            escalated: true,
            milestone: "refund",
            detail: "escalated é".into(),
            told_accurately: Some(false),
            uncertain: None,
        };
        for at_ms in [0, 127, 128, 1 << 35] {
            let mut owned = Vec::new();
            let mut parts = Recorder::new(true);
            for until_ms in [None, Some(0), Some(200), Some(u64::MAX)] {
                owned.push((at_ms, EventKind::Wait { until_ms }));
                parts.record_ref(at_ms, EventKindRef::Wait { until_ms });
            }
            for (outcome, reason) in [(Outcome::Escalated, "agent finished"), (Outcome::Horizon, "")] {
                owned.push((at_ms, EventKind::End { outcome, reason: reason.into(), verdict: verdict.clone() }));
                parts.record_end(at_ms, outcome, reason, &verdict);
            }
            let mut whole = Recorder::new(true);
            for (at_ms, kind) in &owned {
                whole.record(*at_ms, kind.clone());
            }
            let expected: Vec<u8> = owned.iter().flat_map(|e| postcard::to_allocvec(e).unwrap()).collect();
            assert_eq!(parts.buf, expected);
            assert_eq!(parts.finish(), whole.finish());
        }
    }

    #[test]
    fn borrowed_events_encode_like_owned_ones() {
        let call = ToolCall {
            tool: crate::tool::ToolId(3),
            args: Value::map([("order_id", Value::str("A1")), ("n", Value::Int(-7))]).into(),
            idempotency_key: Some("idem-1".into()),
        };
        let message = Message { text: "hi".into(), content: Value::map([("x", Value::Bool(true))]) };
        let replies = [
            Reply::Ok(Value::List(vec![Value::Null, Value::str("é")]).into()),
            Reply::Error { status: 429, retry_after_ms: Some(1_500), message: "slow down".into() },
            Reply::Timeout,
            Reply::Garbled("{\"a\":".into()),
        ];
        let mut cases = vec![
            EventKindRef::User(&message),
            EventKindRef::Turn { turn: 2, prompt_tokens: 1_300, completion_tokens: 60, think_ms: 700 },
            EventKindRef::Call { id: 9, call: &call },
        ];
        for (i, reply) in replies.iter().enumerate() {
            let fault = [None, Some(FaultTag::RateLimited)][i % 2];
            cases.push(EventKindRef::Result { id: 9, reply, latency_ms: 120, fault });
        }
        for case in cases {
            let owned = postcard::to_allocvec(&(5u64, &case.to_owned())).unwrap();
            assert_eq!(postcard::to_allocvec(&(5u64, &case)).unwrap(), owned);
        }
    }
}
