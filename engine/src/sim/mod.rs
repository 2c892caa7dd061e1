//! The event loop of one trajectory.
//!
//! The loop pops the earliest event, advances the clock to it and hands it to
//! the world or to a session's agent. An agent is one sequential process: while
//! it thinks, waits on a tool or sleeps through a backoff it is busy, and user
//! messages that arrive meanwhile queue up until it is free, as they would in
//! a chat.
//!
//! A run holds one session, or many ([`crate::sessions`]): each a user with a
//! task and an agent of its own, all on one clock, one world state and one
//! set of tools. Sessions arrive over time and end one by one; the run ends
//! when the last has ended (or at the horizon, or when nothing is left to
//! happen). A run of one session is exactly the single-user loop: nothing
//! about sessions is recorded in it.

mod calls;
mod finish;
mod priorities;
mod session;
mod spare;

pub use finish::{is_agents, sessions_outcome};
pub use session::Agents;

use crate::agent::{Action, AgentCx, Finish, Input, Message};
use crate::call::ToolResult;
use crate::config::SimConfig;
use crate::fault::FaultTag;
use crate::queue::{EventQueue, Slab};
use crate::rng::{Stream, StreamSource};
use crate::runtime::ToolRuntime;
use crate::sessions::{CapacityLine, SessionId};
use crate::time::TimeMs;
use crate::tool::Catalog;
use crate::trajectory::{EventKind, EventKindRef, RealisedFault, Recorder, Trajectory};
use crate::value::Value;
use crate::voice::{VoiceCx, Voiced};
use crate::world::{Minefield, Scheduled, World, WorldCx};

use session::{AgentSlot, AgentState, Live, Session};

/// Consecutive identical failing calls after which a budget-exhausted run is
/// classified as `looped` (the agent was stuck, not merely slow).
const LOOP_REPEATS_MIN: u32 = 3;

/// The most corrupted values one session remembers (to tell when a write
/// carries one); later ones are not checked.
const LIES_MAX: usize = 256;

/// The most bytes of one message the agent says to the user; the rest is cut
/// (at a character boundary) before the user reads it. A chat message of 8 KiB
/// is several screens.
pub const SAID_BYTES_MAX: usize = 8 * 1024;

/// The minefield of a write that carries a value only a corrupted answer showed:
/// the agent acted on, or told the user, something the world never held.
pub const ACTED_ON_CORRUPTED_VALUE: &str = "acted_on_corrupted_value";

/// The minefield of a write that does what injected text in a tool's answer
/// asked (the tool and every argument it named): the agent obeyed the data.
pub const ACTED_ON_INJECTED_TEXT: &str = "acted_on_injected_text";

enum Ev<E> {
    /// A world process event.
    World(E),
    /// A session's user arrives (sessions after the first).
    Arrive(SessionId),
    /// A user message; queued while the agent is busy.
    User(SessionId, Message),
    /// A tool result, waiting in `Sim::results` at `slot`; always delivered
    /// (the agent is waiting for it).
    ToolDone { session: SessionId, id: u32, slot: u32, fault: Option<FaultTag> },
    /// An agent timer, valid only if its token is still current.
    Wake(SessionId, u64),
    /// The agent finished thinking: carry out its action, waiting in
    /// `Sim::actions` at this slot with the per-call timeout a timeout layer
    /// set, if any.
    Act(SessionId, u32),
    /// Deliver a user message that queued while the agent was busy.
    Flush(SessionId),
}

/// Why a session (or the run) ended.
#[derive(Clone, Debug)]
pub(crate) enum End {
    Finished(Finish),
    /// The model playing the user failed for good (see [`crate::voice`]).
    UserFailed(String),
    /// Nothing left to happen after the user's model ended the conversation.
    UserStopped,
    Budget(&'static str),
    Horizon,
    Stalled,
}

/// Runs one trajectory of `world` with `agent` over `catalog`: a run of one
/// session (the scenario's `sessions` must hold one).
pub fn run<'a, W: World>(
    world: W,
    agent: &'a mut dyn crate::agent::Agent,
    catalog: &'a Catalog,
    streams: &'a StreamSource,
    config: &'a SimConfig,
) -> Trajectory {
    assert_eq!(config.sessions.count, 1, "a run of many sessions takes an agent per session (sim::run_sessions)");
    run_sessions(world, Agents::One(agent), catalog, streams, config)
}

/// Runs one trajectory of `world` with the sessions `config.sessions` asks
/// for, each with its agent from `agents`.
pub fn run_sessions<'a, W: World>(
    world: W,
    agents: Agents<'a>,
    catalog: &'a Catalog,
    streams: &'a StreamSource,
    config: &'a SimConfig,
) -> Trajectory {
    let seed = streams.seed();
    // A broken invariant costs this run, not the process: the panic becomes
    // a `sim_error` trajectory (with what broke), and a sweep keeps every
    // other seed. Nothing of the run is reused after it: its buffers are not
    // handed on (`spare`), and the world and agents end with it.
    let run = std::panic::AssertUnwindSafe(move || run_unguarded(world, agents, catalog, streams, config));
    std::panic::catch_unwind(run).unwrap_or_else(|payload| Trajectory::sim_error(seed, &panic_text(&*payload)))
}

/// What a panic said: its message, when it carries one.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_string(),
        (None, Some(text)) => text.clone(),
        (None, None) => "a panic without a message".to_string(),
    }
}

/// [`run_sessions`] without the guard that turns a panic into a `sim_error`.
fn run_unguarded<'a, W: World>(
    mut world: W,
    agents: Agents<'a>,
    catalog: &'a Catalog,
    streams: &'a StreamSource,
    config: &'a SimConfig,
) -> Trajectory {
    let count = config.sessions.count;
    assert!(count >= 1, "a run holds at least one session");
    assert!(
        count <= world.sessions_max(),
        "the world holds at most {} sessions; its model checks the scenario first",
        world.sessions_max()
    );
    let single = config.sessions.is_single();
    let spare = spare::take();
    let mut recorder = Recorder::with_batch(config.record, spare.digest_batch);
    if config.keep_diagnostics {
        recorder = recorder.with_diagnostics();
    }
    if !single {
        recorder = recorder.with_sessions();
    }
    let mut sim = Sim {
        queue: EventQueue::with_heap(spare.heap),
        results: spare.results,
        actions: spare.actions,
        now_ms: 0,
        catalog,
        config,
        streams,
        agents: Some(agents),
        tools: ToolRuntime::for_run(catalog, streams, config, spare.tool_states),
        recorder,
        single,
        acting: None,
        sessions: Vec::new(),
        open: 0,
        arrivals_rng: (!single).then(|| streams.stream("sessions")),
        next_arrival_ms: None,
        capacity: config.sessions.model_capacity.as_ref().map(CapacityLine::new),
        ranks: (config.interleaving > 0).then(|| streams.stream(&format!("interleaving.{}", config.interleaving))),
        priorities: (config.interleaving > 0 && config.sessions.explore == crate::sessions::Explore::Priorities).then(
            || {
                let mut rng = streams.stream(&format!("interleaving.{}.priorities", config.interleaving));
                priorities::Priorities::draw(count, &mut rng)
            },
        ),
        events_max: config.budgets.events_max.saturating_mul(count),
        next_token: 0,
        next_call_id: 0,
        fault_kinds: Vec::new(),
        minefield_names: Vec::new(),
        world_violations: 0,
        realised_faults: Vec::new(),
        decisions: Vec::new(),
        scheduled: Vec::new(),
        minefields: Vec::new(),
        world_notes: Vec::new(),
        user_failures: Vec::new(),
    };
    sim.run(&mut world);
    sim.finish(&world, streams.seed())
}

struct Sim<'a, E> {
    queue: EventQueue<Ev<E>>,
    /// Tool results on their way ([`Ev::ToolDone`]): an event carries the
    /// slot, so that it stays small as it moves through the queue.
    results: Slab<ToolResult>,
    /// Actions decided, waiting for the think time to pass ([`Ev::Act`]).
    actions: Slab<(Action, Option<TimeMs>)>,
    now_ms: TimeMs,
    catalog: &'a Catalog,
    config: &'a SimConfig,
    streams: &'a StreamSource,
    /// Where new sessions' agents come from (taken for the one of a run of one).
    agents: Option<Agents<'a>>,
    tools: ToolRuntime<'a>,
    recorder: Recorder,
    /// A run of one session with nothing shared: nothing about sessions is
    /// recorded.
    single: bool,
    /// The session acting now (`None`: the world's own).
    acting: Option<SessionId>,
    sessions: Vec<Session<'a>>,
    /// Sessions arrived and not ended.
    open: u32,
    /// Draws the arrival times (a run of many sessions).
    arrivals_rng: Option<Stream>,
    /// When the next session to arrive is scheduled to, while one is: a run
    /// that ends first counts it (and those after it) as not started.
    next_arrival_ms: Option<TimeMs>,
    /// The model's shared capacity, when the scenario gives one.
    capacity: Option<CapacityLine>,
    /// Draws the rank of each event among those at the same time, when the
    /// run explores an interleaving (`SimConfig::interleaving`).
    ranks: Option<Stream>,
    /// The trial's priority order, when it explores by priority
    /// (`Explore::Priorities`): ranks come from it instead.
    priorities: Option<priorities::Priorities>,
    /// Events the whole run may record: `events_max` per session.
    events_max: u32,
    next_token: u64,
    next_call_id: u32,
    fault_kinds: Vec<FaultTag>,
    minefield_names: Vec<&'static str>,
    /// Minefields that fired outside any session (a world's own process).
    world_violations: u32,
    realised_faults: Vec<RealisedFault>,
    decisions: Vec<(&'static str, &'static str, u32)>,
    scheduled: Vec<(TimeMs, Scheduled<E>)>,
    minefields: Vec<Minefield>,
    world_notes: Vec<(&'static str, Value)>,
    /// Sessions whose user's model failed for good since the loop last looked.
    user_failures: Vec<SessionId>,
}

impl<'a, E> Sim<'a, E> {
    fn run<W: World<Event = E>>(&mut self, world: &mut W) {
        self.arrive(0, world);
        {
            world.start(&mut self.world_cx(None));
        }
        if self.config.user_voice.0.is_some() {
            self.live(0).expect("session 0 has arrived").voice = self.new_voice(0, world);
        }
        self.flush_world();
        self.schedule_arrival(1);
        while self.step(world) {}
    }

    /// Handles the next event; false once the run is over.
    fn step<W: World<Event = E>>(&mut self, world: &mut W) -> bool {
        for session in std::mem::take(&mut self.user_failures) {
            let reason = self.live(session).and_then(|l| l.user_failed.take());
            if let Some(reason) = reason {
                self.end_session(session, End::UserFailed(reason), world);
            }
        }
        if self.is_over() {
            return false;
        }
        let Some((at_ms, _seq, ev)) = self.queue.pop() else {
            self.end_open(world, |live| if live.user_stopped { End::UserStopped } else { End::Stalled });
            return false;
        };
        if at_ms > self.config.horizon_ms {
            // The run ends with this event unhandled: what it carried (a tool
            // result or an agent's action in flight) is dropped with it.
            self.release(ev);
            self.now_ms = self.config.horizon_ms;
            self.end_open(world, |_| End::Horizon);
            return false;
        }
        assert!(at_ms >= self.now_ms, "time never runs backwards");
        self.now_ms = at_ms;
        if self.recorder.count() >= self.events_max {
            self.release(ev);
            self.end_open(world, |_| End::Budget("events"));
            return false;
        }
        self.dispatch(ev, world);
        !self.is_over()
    }

    /// Every session has arrived and ended.
    fn is_over(&self) -> bool {
        self.open == 0 && self.sessions.len() == self.config.sessions.count as usize
    }

    fn dispatch<W: World<Event = E>>(&mut self, ev: Ev<E>, world: &mut W) {
        let session = match &ev {
            Ev::World(_) => None,
            Ev::Arrive(s) | Ev::User(s, _) | Ev::Wake(s, _) | Ev::Act(s, _) | Ev::Flush(s) => Some(*s),
            Ev::ToolDone { session, .. } => Some(*session),
        };
        if let Some(s) = session
            && !matches!(ev, Ev::Arrive(_))
            && self.live(s).is_none()
        {
            // The session ended: what was still on its way is dropped.
            self.release(ev);
            return;
        }
        self.enter(session);
        match ev {
            Ev::World(event) => {
                world.on_event(event, &mut self.world_cx(None));
                self.flush_world();
            }
            Ev::Arrive(s) => {
                self.arrive(s, world);
                self.schedule_arrival(s + 1);
            }
            Ev::User(s, message) => {
                let live = self.live(s).expect("checked above");
                if matches!(live.state, AgentState::Idle(_)) {
                    self.deliver(s, Input::User(message), world);
                } else {
                    live.inbox.push_back(message);
                }
            }
            Ev::Flush(s) => {
                let live = self.live(s).expect("checked above");
                match live.inbox.pop_front() {
                    Some(message) if matches!(live.state, AgentState::Idle(_)) => {
                        self.deliver(s, Input::User(message), world)
                    }
                    Some(message) => live.inbox.push_front(message),
                    None => {}
                }
            }
            Ev::ToolDone { session: s, id, slot, fault } => {
                let result = self.results.take(slot);
                self.recorder.record_ref(
                    self.now_ms,
                    EventKindRef::Result { id, reply: &result.reply, latency_ms: result.latency_ms, fault },
                );
                self.deliver(s, Input::Tool(result), world);
            }
            Ev::Wake(s, token) => match self.live(s).expect("checked above").state {
                AgentState::Sleeping(t) | AgentState::Idle(Some(t)) if t == token => {
                    self.deliver(s, Input::Wake, world)
                }
                _ => {} // a timer that was superseded
            },
            Ev::Act(s, slot) => {
                let (action, timeout_ms) = self.actions.take(slot);
                self.act(s, action, timeout_ms, world)
            }
        }
    }

    /// Drops an event that will not be handled, with what waits for it in a
    /// slab (a tool result, an action): a value waits in its slab only while
    /// its event is queued.
    fn release(&mut self, ev: Ev<E>) {
        match ev {
            Ev::ToolDone { slot, .. } => drop(self.results.take(slot)),
            Ev::Act(_, slot) => drop(self.actions.take(slot)),
            _ => {}
        }
    }

    /// The world's context now, handling `session`'s call or words (`None`:
    /// the world's own start or event).
    fn world_cx(&mut self, session: Option<SessionId>) -> WorldCx<'_, E> {
        WorldCx::new(self.now_ms, session, &mut self.scheduled, &mut self.minefields, &mut self.world_notes)
            .with_judge(self.config.judge.0.as_deref())
    }

    /// Schedules `ev` at `at_ms`: among events at the same time in the order
    /// of scheduling, or of a drawn rank when the run explores an interleaving.
    fn push(&mut self, at_ms: TimeMs, ev: Ev<E>) {
        let rank = match (&self.priorities, &mut self.ranks) {
            (Some(priorities), _) => priorities.rank(self.acting),
            (None, Some(rng)) => rng.next_u64() as u32,
            (None, None) => 0,
        };
        self.queue.push_ranked(at_ms, rank, ev);
    }

    /// The events from here on are `session`'s (`None`: the world's own).
    fn enter(&mut self, session: Option<SessionId>) {
        self.acting = session;
        self.recorder.enter(session);
    }

    /// The live state of `session`, or `None` once it ended.
    /// Whether session `writer` applied a write from `from_ms` to `to_ms`.
    fn wrote_during(&self, writer: SessionId, from_ms: TimeMs, to_ms: TimeMs) -> bool {
        self.sessions.get(writer as usize).is_some_and(|w| w.wrote_during(from_ms, to_ms))
    }

    fn live(&mut self, session: SessionId) -> Option<&mut Live<'a>> {
        self.sessions.get_mut(session as usize).and_then(|s| s.live.as_deref_mut())
    }

    /// Session `session` arrives now: its agent is made, and for sessions after
    /// the first the world makes its user.
    fn arrive<W: World<Event = E>>(&mut self, session: SessionId, world: &mut W) {
        assert_eq!(session as usize, self.sessions.len(), "sessions arrive in order");
        let agent = match self.agents.take() {
            Some(Agents::One(agent)) => {
                assert_eq!(session, 0, "a run of one agent holds one session");
                AgentSlot::Borrowed(agent)
            }
            Some(Agents::Each(make)) => {
                let agent = make(session);
                self.agents = Some(Agents::Each(make));
                AgentSlot::Owned(agent)
            }
            None => panic!("a run of one agent holds one session, not session {session}"),
        };
        let model_rng = match self.config.interleaving {
            0 => self.streams.with_session(session).agent_stream("model"),
            k => self.streams.session_stream(&format!("interleaving.{k}.model"), session),
        };
        let live = Live::new(agent, model_rng, crate::recipient::Named::for_catalog(self.catalog));
        self.sessions.push(Session::arrive(self.now_ms, live));
        self.open += 1;
        self.enter(Some(session));
        if session == 0 {
            return; // the world opens session 0 when it starts
        }
        {
            world.start_session(session, &mut self.world_cx(Some(session)));
        }
        if self.config.user_voice.0.is_some() {
            self.live(session).expect("it just arrived").voice = self.new_voice(session, world);
        }
        self.flush_world();
    }

    fn new_voice<W: World<Event = E>>(
        &self,
        session: SessionId,
        world: &W,
    ) -> Option<Box<dyn crate::voice::UserVoice>> {
        let factory = self.config.user_voice.0.as_ref()?;
        Some(factory.voice(world.session_instructions(session)))
    }

    /// Schedules the arrival of session `session`, if the run holds it.
    fn schedule_arrival(&mut self, session: SessionId) {
        self.next_arrival_ms = None;
        if session >= self.config.sessions.count {
            return;
        }
        let prev_ms = self.sessions.last().map_or(0, |s| s.arrived_ms);
        let rng = self.arrivals_rng.as_mut().expect("a run of many sessions draws its arrivals");
        let at_ms = self.config.sessions.arrival.next_ms(session, prev_ms, rng).max(self.now_ms);
        self.next_arrival_ms = Some(at_ms);
        self.push(at_ms, Ev::Arrive(session));
    }

    /// Ends `session` now; in a run of many, the end is recorded and the
    /// world told.
    fn end_session<W: World<Event = E>>(&mut self, session: SessionId, end: End, world: &mut W) {
        if !self.single {
            self.enter(Some(session));
            let reason = finish::reason(&end);
            self.recorder.record(self.now_ms, EventKind::SessionEnd { reason });
        }
        self.sessions[session as usize].end(self.now_ms, end);
        self.open -= 1;
        if !self.single {
            world.session_ended(session);
        }
    }

    /// Ends every open session, each for the end `why` gives it.
    fn end_open<W: World<Event = E>>(&mut self, world: &mut W, why: impl Fn(&Live<'_>) -> End) {
        for s in 0..self.sessions.len() {
            if let Some(live) = &self.sessions[s].live {
                let end = why(live);
                self.end_session(s as SessionId, end, world);
            }
        }
    }

    /// Hands one input to `session`'s agent, accounts for the model's turns and
    /// carries out (or schedules, after think time) the action.
    fn deliver<W: World<Event = E>>(&mut self, session: SessionId, input: Input, world: &mut W) {
        let now_ms = self.now_ms;
        let live = self.sessions[session as usize].live.as_mut().expect("input reaches a live session");
        if let Input::User(message) = &input {
            live.named.hear(message);
            self.recorder.record_ref(now_ms, EventKindRef::User(message));
        }
        assert!(live.refused_by.is_none(), "no input reaches the agent once a budget refused the session");
        live.state = AgentState::Busy;
        let mut cx = AgentCx::new(now_ms, self.catalog);
        let action = live.agent.agent().step(input, &mut cx);
        let live = self.live(session).expect("still live");
        live.context_tokens += u64::from(cx.read_tokens());
        live.context_tokens = live.context_tokens.saturating_sub(u64::from(cx.evicted_tokens()));
        let call_timeout_ms = cx.call_timeout_ms();
        if cx.has_notes() {
            let (notes, diagnostics) = (cx.take_notes(), cx.take_diagnostics());
            self.record_notes(notes, diagnostics);
        }
        let mut think_ms: TimeMs = 0;
        for _ in 0..cx.turns() {
            think_ms = think_ms.saturating_add(self.charge_turn(session, think_ms, cx.think_ms(), cx.usage()));
        }
        if let Some(budget) = self.exhausted(session) {
            self.refuse(session, budget, world);
            return;
        }
        if think_ms == 0 {
            self.act(session, action, call_timeout_ms, world);
        } else {
            let slot = self.actions.insert((action, call_timeout_ms));
            self.push(now_ms.saturating_add(think_ms), Ev::Act(session, slot));
        }
    }

    /// Charges one model call of `session`, asked `after_ms` into its step;
    /// `reported_ms` replaces the think-time draw (which is still made, to keep
    /// the model's stream aligned) when the agent reported it; `usage`, when
    /// the agent reported it, replaces the token estimate. Returns the time
    /// the call took, its wait for the model's shared capacity included.
    fn charge_turn(
        &mut self,
        session: SessionId,
        after_ms: TimeMs,
        reported_ms: Option<TimeMs>,
        usage: Option<crate::agent::Usage>,
    ) -> TimeMs {
        let now_ms = self.now_ms;
        let model = &self.config.model;
        let band = self.priorities.as_ref().map(|p| p.band(session));
        let live = self.sessions[session as usize].live.as_mut().expect("a live session is charged");
        assert!(live.refused_by.is_none(), "no model call is charged once a budget refused the session");
        live.metrics.turns = live.metrics.turns.saturating_add(1);
        let estimate = (u64::from(model.system_prompt_tokens) + live.context_tokens).min(u32::MAX as u64) as u32;
        let prompt_tokens = usage.map_or(estimate, |u| u.prompt_tokens);
        let completion_tokens = usage.map_or(model.completion_tokens, |u| u.completion_tokens);
        live.metrics.prompt_tokens += u64::from(prompt_tokens);
        live.metrics.completion_tokens += u64::from(completion_tokens);
        live.cost_usd += (f64::from(prompt_tokens) * model.usd_per_mtok_prompt
            + f64::from(completion_tokens) * model.usd_per_mtok_completion)
            / 1e6;
        assert!(live.cost_usd >= 0.0, "the cost is never negative");
        // What the model wrote is read back as context on the next turn.
        live.context_tokens += u64::from(completion_tokens);
        let drawn_ms = match band {
            Some(band) => model.think.sample_in_band(&mut live.model_rng, band),
            None => model.think.sample(&mut live.model_rng),
        };
        let think_ms = reported_ms.unwrap_or(drawn_ms);
        let turn = live.metrics.turns;
        let asked_ms = now_ms.saturating_add(after_ms);
        let queue_ms = match &mut self.capacity {
            Some(line) => line.admit(asked_ms, u64::from(prompt_tokens) + u64::from(completion_tokens)) - asked_ms,
            None => 0,
        };
        if queue_ms > 0 {
            live.model_queue_ms = live.model_queue_ms.saturating_add(queue_ms);
            self.recorder.record(now_ms, EventKind::Queued { queue_ms });
        }
        self.recorder.record_ref(now_ms, EventKindRef::Turn { turn, prompt_tokens, completion_tokens, think_ms });
        queue_ms.saturating_add(think_ms)
    }

    /// The budget of its own `session` has exhausted, if any.
    fn exhausted(&mut self, session: SessionId) -> Option<&'static str> {
        let b = &self.config.budgets;
        let metrics = &self.sessions[session as usize].live.as_ref().expect("a live session").metrics;
        if metrics.turns > b.turns_max {
            Some("turns")
        } else if metrics.tokens() > b.tokens_max {
            Some("tokens")
        } else {
            None
        }
    }

    /// Ends `session` on `budget`; nothing is charged after.
    fn refuse<W: World<Event = E>>(&mut self, session: SessionId, budget: &'static str, world: &mut W) {
        let live = self.live(session).expect("a live session is refused");
        assert!(live.refused_by.is_none(), "a session is refused by one budget, once");
        live.refused_by = Some(budget);
        self.end_session(session, End::Budget(budget), world);
    }

    fn act<W: World<Event = E>>(
        &mut self,
        session: SessionId,
        action: Action,
        call_timeout_ms: Option<TimeMs>,
        world: &mut W,
    ) {
        let now_ms = self.now_ms;
        match action {
            Action::Call(call) => {
                let tool_calls_max = self.config.budgets.tool_calls_max;
                let live = self.live(session).expect("a live session acts");
                if live.metrics.tool_calls >= tool_calls_max {
                    return self.refuse(session, "tool_calls", world);
                }
                live.state = AgentState::Busy;
                self.issue(session, call, call_timeout_ms, world);
            }
            Action::Sleep { until_ms } => {
                let token = self.new_token();
                let until_ms = until_ms.max(now_ms);
                self.live(session).expect("a live session acts").state = AgentState::Sleeping(token);
                self.recorder.record_ref(now_ms, EventKindRef::Wait { until_ms: Some(until_ms) });
                self.push(until_ms, Ev::Wake(session, token));
            }
            Action::Idle { wake_at_ms } => self.idle(session, wake_at_ms),
            Action::Say { text } => {
                self.say(session, text, world);
                if self.live(session).is_some() {
                    self.idle(session, None);
                }
            }
            Action::Finish(finish) => {
                self.recorder.record(now_ms, EventKind::Finish(finish.clone()));
                self.end_session(session, End::Finished(finish), world);
            }
        }
    }

    /// `session`'s agent waits for the next input, or until `wake_at_ms`.
    fn idle(&mut self, session: SessionId, wake_at_ms: Option<TimeMs>) {
        let now_ms = self.now_ms;
        // A user message that queued while the agent was busy arrived before
        // now: it goes first, ahead of a timer that is due now.
        if !self.live(session).expect("a live session idles").inbox.is_empty() {
            self.push(now_ms, Ev::Flush(session));
        }
        let token = wake_at_ms.map(|at| {
            let token = self.new_token();
            self.push(at.max(now_ms), Ev::Wake(session, token));
            token
        });
        self.live(session).expect("a live session idles").state = AgentState::Idle(token);
        self.recorder.record_ref(now_ms, EventKindRef::Wait { until_ms: wake_at_ms });
    }

    /// The agent's words reach its session's user, who reads them now (and
    /// answers, or judges them, through the world).
    fn say<W: World<Event = E>>(&mut self, session: SessionId, mut text: String, world: &mut W) {
        if text.len() > SAID_BYTES_MAX {
            let mut end = SAID_BYTES_MAX;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        assert!(text.len() <= SAID_BYTES_MAX, "what the agent says is bounded");
        {
            world.hear(&text, &mut self.world_cx(Some(session)));
        }
        let live = self.live(session).expect("a live session says");
        if live.voice.is_some() {
            live.answering = Some(text.clone());
        }
        self.recorder.record(self.now_ms, EventKind::Said { text });
        self.flush_world();
        if let Some(live) = self.live(session) {
            live.answering = None;
        }
    }

    fn new_token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// Moves what the world scheduled or reported into the queue and the
    /// trajectory.
    fn flush_world(&mut self) {
        // Most calls leave nothing behind: no buffer is touched then.
        if self.world_notes.is_empty() && self.minefields.is_empty() && self.scheduled.is_empty() {
            return;
        }
        for (what, detail) in self.world_notes.drain(..) {
            self.recorder.record(self.now_ms, EventKind::World { what, detail });
        }
        let acting = self.acting();
        for minefield in std::mem::take(&mut self.minefields) {
            self.count_minefield(acting, &minefield);
            if !self.minefield_names.contains(&minefield.name) {
                self.minefield_names.push(minefield.name);
            }
            self.recorder.record(self.now_ms, EventKind::Minefield(minefield));
        }
        let mut scheduled = std::mem::take(&mut self.scheduled);
        for (at_ms, item) in scheduled.drain(..) {
            match item {
                Scheduled::World(event) => {
                    self.push(at_ms, Ev::World(event));
                }
                Scheduled::ToAgent(session, message) => {
                    assert!(
                        (session as usize) < self.sessions.len(),
                        "a world tells only a session that has arrived (session {session})"
                    );
                    if let Some(message) = self.voiced(session, message) {
                        self.push(at_ms, Ev::User(session, message));
                    }
                }
            }
        }
        // The buffer's capacity is kept for the next flush.
        self.scheduled = scheduled;
    }

    /// The session a minefield without a session of its own fired in: the
    /// one acting, or session 0 in a run of one.
    fn acting(&self) -> Option<SessionId> {
        if self.single { Some(0) } else { self.acting }
    }

    /// Counts a minefield against the session it fired in (a world's own
    /// process: against the run).
    fn count_minefield(&mut self, acting: Option<SessionId>, minefield: &Minefield) {
        let Some(s) = minefield.session.or(acting) else {
            self.world_violations += 1;
            return;
        };
        // A race is blamed on the other session only through a write it made
        // while this one was alive: a write before this session arrived was
        // there for it to read.
        let (arrived_ms, now_ms) = (self.sessions[s as usize].arrived_ms, self.now_ms);
        let against = minefield.against.filter(|&w| self.wrote_during(w, arrived_ms, now_ms));
        let session = &mut self.sessions[s as usize];
        session.violations += 1;
        if session.hurt_by.is_none() {
            session.hurt_by = against;
        }
    }

    /// The message `session`'s user sends, in the voice's words when a model
    /// speaks for it (see [`crate::voice`]); `None` when nothing is said (the
    /// session ended, the voice ended the conversation, or failed).
    fn voiced(&mut self, session: SessionId, mut message: Message) -> Option<Message> {
        let live = self.live(session)?;
        let Some(voice) = live.voice.as_mut() else { return Some(message) };
        if live.user_stopped || live.user_failed.is_some() {
            return None;
        }
        let said = live.answering.take();
        let mut cx = VoiceCx::default();
        let voiced = voice.speak(said.as_deref(), &message, &mut cx);
        let (notes, diagnostics) = cx.take();
        self.record_notes(notes, diagnostics);
        let live = self.live(session).expect("still live");
        let text = match voiced {
            Voiced::Say(text) => text,
            Voiced::Stop(text) => {
                live.user_stopped = true;
                self.recorder.record(self.now_ms, EventKind::World { what: "user_stopped", detail: Value::Null });
                if text.trim().is_empty() {
                    return None;
                }
                text
            }
            Voiced::Failed(reason) => {
                live.user_failed = Some(reason);
                self.user_failures.push(session);
                return None;
            }
        };
        if text != message.text {
            // A model's words carry no structured content of the world's.
            message.content = Value::Null;
            message.text = text;
        }
        Some(message)
    }

    /// Records notes (counted in the `decisions` column) and diagnostics
    /// (outside the digest).
    fn record_notes(&mut self, notes: Vec<crate::agent::Note>, diagnostics: Vec<crate::agent::Note>) {
        for note in notes {
            let key = (note.source, note.what);
            match self.decisions.binary_search_by(|(s, w, _)| (*s, *w).cmp(&key)) {
                Ok(i) => self.decisions[i].2 = self.decisions[i].2.saturating_add(1),
                Err(i) => self.decisions.insert(i, (key.0, key.1, 1)),
            }
            self.recorder.record(self.now_ms, EventKind::Note(note));
        }
        for note in diagnostics {
            self.recorder.keep_unhashed(self.now_ms, EventKind::Note(note));
        }
    }
}
