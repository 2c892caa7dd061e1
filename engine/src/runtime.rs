//! The tool runtime: runs one call through latency, rate limits, session state,
//! fault rules and drift, and asks the world to serve it when it gets through.
//!
//! Each call draws from its own counter-based sub-stream (tool stream, call
//! number), always the same number of draws for the rules, so the n-th call of a
//! tool meets the same luck whatever happened before it.

use crate::call::{Reply, ToolCall, ToolError};
use crate::corrupt::{Lie, corrupt_value};
use crate::fault::{Corruption, Fault, FaultRule, FaultTag, MalformedKind};
use crate::inject::{Injected, inject};
use crate::likelihood::{LogWeight, RuleDraws, RuleProbabilities};
use crate::rng::{Stream, StreamSource};
use crate::time::TimeMs;
use crate::tool::{AUTHENTICATE, Catalog, ToolId, ToolKind, ToolSpec};
use crate::value::Value;

/// What happened to one call.
#[derive(Clone, Debug, PartialEq)]
pub struct Served {
    /// The tool's call number (1-based) this call had.
    pub call_number: u64,
    /// The faults this call suffered, written so that an explicit schedule
    /// ([`crate::ToolConfig::explicit_faults`]) replays them: a rate-limit refusal as
    /// its 429, a session expiry only at the call that expired it.
    pub realised: Vec<Fault>,
    /// What the caller receives.
    pub reply: Reply,
    /// Virtual time until the caller receives it.
    pub latency_ms: TimeMs,
    /// The injected fault, if any (ground truth, never shown to the planner).
    pub fault: Option<FaultTag>,
    /// Whether the world served the call (a write was applied).
    pub served: bool,
    /// The value a `Corrupt` fault changed in the answer (ground truth, never
    /// shown to the planner).
    pub lie: Option<Lie>,
    /// The call an `Inject` fault's text asks for (ground truth; the planner sees
    /// only the text).
    pub injected: Option<Injected>,
}

struct Bucket {
    tokens: u32,
    refilled_at_ms: TimeMs,
}

/// The buffer of a [`ToolRuntime`]'s tool states, empty, kept between runs.
#[derive(Default)]
pub(crate) struct ToolStates(Vec<ToolState>);

impl ToolStates {
    /// Whether it holds no state (it never does between runs).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

struct ToolState {
    /// Derived at the tool's first call: a trajectory that never calls a tool
    /// does not pay for its stream.
    stream: Option<Stream>,
    calls: u64,
    /// The token bucket of each of the tool's rules that is a rate limit, by
    /// rule; empty until a rate limit is first met (most tools have none).
    buckets: Vec<Option<Bucket>>,
}

/// Per-trajectory state of all tools.
pub struct ToolRuntime<'c> {
    catalog: &'c Catalog,
    streams: StreamSource,
    tools: Vec<ToolState>,
    session_expired: bool,
    fault_scale: f64,
    /// In an importance-sampling run, the scale the faults' nominal probabilities
    /// have (`fault_scale` is then the tilted one the draws use).
    nominal_fault_scale: Option<f64>,
    /// In an importance-sampling run with a tilt per rule, what each rule is
    /// drawn with (instead of its probability at `fault_scale`).
    sampled_probabilities: Option<RuleProbabilities>,
    log_weight: LogWeight,
    /// In an importance-sampling run, each rule's decisive draws and hits (tools
    /// in id order, then rules); empty otherwise, so a plain run pays nothing.
    rule_draws: Vec<RuleDraws>,
    /// Where each tool's rules start in `rule_draws`.
    rule_offsets: Vec<usize>,
    /// The time of the latest call (calls come in time order).
    last_call_at_ms: TimeMs,
    /// The interleaving explored (0: the seed's schedule): from 1 on, each
    /// call's latency is drawn anew from its distribution, on the stream
    /// `interleaving.K.latency.TOOL` (the faults keep their draws).
    interleaving: u32,
    /// The band of the distribution the calls from here on draw their
    /// latency from, in an interleaving explored by priority.
    band: Option<crate::latency::Band>,
}

/// The body a server in trouble sends instead of the format it promised.
const GARBAGE_BODY: &str = "<html><head><title>502 Bad Gateway</title></head><body>upstream error</body></html>";

impl<'c> ToolRuntime<'c> {
    /// Fresh state for one trajectory; each tool gets the stream `tool.NAME`.
    pub fn new(catalog: &'c Catalog, streams: &StreamSource) -> Self {
        Self::with_states(catalog, streams, ToolStates::default())
    }

    /// The runtime of one run of the loop, configured as `config` says, its
    /// tools' states kept in `states` (empty; its capacity kept from an
    /// earlier run, see [`ToolRuntime::into_states`]). Configured in place:
    /// the same as [`ToolRuntime::new`] and its `with_` calls.
    pub(crate) fn for_run(
        catalog: &'c Catalog,
        streams: &StreamSource,
        config: &crate::config::SimConfig,
        states: ToolStates,
    ) -> Self {
        let mut runtime = Self::with_states(catalog, streams, states);
        runtime.set_fault_scale(config.fault_scale);
        runtime.set_nominal_fault_scale(config.nominal_fault_scale);
        runtime.set_sampled_probabilities(config.sampled_probabilities.clone());
        runtime.interleaving = config.interleaving;
        runtime
    }

    /// Gives back the buffer of the tools' states, emptied, for another run.
    pub(crate) fn into_states(self) -> ToolStates {
        let mut tools = self.tools;
        tools.clear();
        ToolStates(tools)
    }

    fn with_states(catalog: &'c Catalog, streams: &StreamSource, states: ToolStates) -> Self {
        assert!(states.is_empty(), "a runtime starts with no tool state");
        let mut tools = states.0;
        tools.extend(catalog.specs().iter().map(|_| ToolState { stream: None, calls: 0, buckets: Vec::new() }));
        Self {
            catalog,
            streams: streams.clone(),
            tools,
            session_expired: false,
            fault_scale: 1.0,
            nominal_fault_scale: None,
            sampled_probabilities: None,
            log_weight: LogWeight::ONE,
            rule_draws: Vec::new(),
            rule_offsets: Vec::new(),
            last_call_at_ms: 0,
            interleaving: 0,
            band: None,
        }
    }

    /// Explores interleaving `k` (see [`crate::SimConfig::interleaving`]):
    /// from 1 on, latencies are drawn anew within their distributions.
    pub fn with_interleaving(mut self, k: u32) -> Self {
        self.interleaving = k;
        self
    }

    /// Scales fault injection (see [`crate::SimConfig::fault_scale`]): every drawn
    /// fault's probability is multiplied by `scale`; at 0 nothing is injected at
    /// all (no rate limit, no explicit or traced fault either).
    pub fn with_fault_scale(mut self, scale: f64) -> Self {
        self.set_fault_scale(scale);
        self
    }

    fn set_fault_scale(&mut self, scale: f64) {
        self.fault_scale = scale.max(0.0);
    }

    /// Makes this an importance-sampling run: faults are still drawn at the fault
    /// scale, but their nominal probabilities are at `nominal_scale`, and every
    /// fault decision that shapes the run adds its log likelihood ratio to
    /// [`ToolRuntime::log_weight`].
    pub fn with_nominal_fault_scale(mut self, nominal_scale: Option<f64>) -> Self {
        self.set_nominal_fault_scale(nominal_scale);
        self
    }

    fn set_nominal_fault_scale(&mut self, nominal_scale: Option<f64>) {
        self.nominal_fault_scale = nominal_scale.map(|s| s.max(0.0));
        if self.nominal_fault_scale.is_some() && self.rule_offsets.is_empty() {
            let mut offset = 0;
            for spec in self.catalog.specs() {
                self.rule_offsets.push(offset);
                offset += spec.config.faults.len();
            }
            self.rule_draws = vec![RuleDraws::default(); offset];
        }
    }

    /// Draws each rule with its own probability from `table` (see
    /// [`crate::SimConfig::sampled_probabilities`]) instead of at the fault scale;
    /// only meaningful with [`ToolRuntime::with_nominal_fault_scale`].
    pub fn with_sampled_probabilities(mut self, table: Option<RuleProbabilities>) -> Self {
        self.set_sampled_probabilities(table);
        self
    }

    fn set_sampled_probabilities(&mut self, table: Option<RuleProbabilities>) {
        if let Some(table) = &table {
            let shape: Vec<usize> = self.catalog.specs().iter().map(|s| s.config.faults.len()).collect();
            let given: Vec<usize> = table.rows().iter().map(Vec::len).collect();
            assert_eq!(shape, given, "a table of sampled probabilities for another catalog");
        }
        self.sampled_probabilities = table;
    }

    /// Each fault rule's decisive draws and hits so far, tools in id order then
    /// rules in order; empty unless this is an importance-sampling run.
    pub fn rule_draws(&self) -> &[RuleDraws] {
        &self.rule_draws
    }

    /// The log likelihood ratio, nominal over sampled, of the fault decisions so
    /// far (0 unless [`ToolRuntime::with_nominal_fault_scale`] was given a scale).
    pub fn log_weight(&self) -> LogWeight {
        self.log_weight
    }

    /// How many calls each tool has received, in id order.
    pub fn call_counts(&self) -> Vec<u64> {
        self.tools.iter().map(|t| t.calls).collect()
    }

    /// The band of their distributions the calls from here on draw their
    /// latencies from, in an interleaving explored by priority
    /// (`Explore::Priorities`; `None`: the whole distribution).
    pub fn set_band(&mut self, band: Option<crate::latency::Band>) {
        assert!(band.is_none() || self.interleaving > 0, "bands exist only in an explored interleaving");
        self.band = band;
    }

    /// Runs `call` at `now_ms`. `serve` is the world: it receives the call and the
    /// time its data should reflect (earlier than now for a stale read).
    pub fn call(
        &mut self,
        now_ms: TimeMs,
        call: &ToolCall,
        serve: &mut dyn FnMut(&ToolCall, TimeMs) -> Result<Value, ToolError>,
    ) -> Served {
        assert!(now_ms >= self.last_call_at_ms, "calls reach the tools in time order");
        self.last_call_at_ms = now_ms;
        let spec: &'c ToolSpec = self.catalog.spec(call.tool);
        let timeout_ms = spec.config.timeout_ms;
        let CallDraws { call_number, drawn, latency_ms, mut realised, corruption_draw } = self.draws(now_ms, call);
        if let Some(refused) = self.quota_or_session(call, now_ms, call_number, &drawn, latency_ms, &mut realised) {
            return refused;
        }
        let chosen = drawn.chosen;
        if let Some(f) = &chosen
            && !matches!(f, Fault::Latency { .. } | Fault::RateLimit { .. } | Fault::AuthExpired)
        {
            realised.push(f.clone());
        }
        let (as_of_ms, fault) = match announced(chosen.as_ref(), spec, call, now_ms, latency_ms, serve) {
            Ok(served_as) => served_as,
            Err(Refusal { reply, latency_ms, tag, served }) => {
                let mut refused = Served::refused(call_number, realised, reply, latency_ms, tag);
                refused.served = served;
                return refused;
            }
        };
        if latency_ms > timeout_ms {
            // Slow enough that the client gave up, but the server did the work.
            let served = serve(call, as_of_ms).is_ok();
            let mut late = Served::refused(call_number, realised, Reply::Timeout, timeout_ms, FaultTag::Latency);
            late.served = served;
            return late;
        }
        match serve(call, as_of_ms) {
            Ok(mut body) => {
                let malformed = match fault {
                    Some(FaultTag::Malformed(kind)) => Some((kind, corruption_draw)),
                    _ => None,
                };
                let quiet = undermine(chosen.as_ref(), spec, call, now_ms, &mut body, corruption_draw, serve);
                let fault = quiet.tag.or(fault);
                let mut served =
                    self.serve_ok(call, now_ms, latency_ms, body, malformed).with(call_number, realised, fault);
                served.lie = quiet.lie;
                served.injected = quiet.injected;
                served
            }
            Err(err) => Served {
                call_number,
                realised,
                reply: Reply::Error { status: err.status, retry_after_ms: None, message: err.message },
                latency_ms,
                fault,
                served: true,
                lie: None,
                injected: None,
            },
        }
    }

    /// The call's number and every draw it makes, in a fixed order: latency, one
    /// per rule, the corruption.
    fn draws(&mut self, now_ms: TimeMs, call: &ToolCall) -> CallDraws {
        let spec: &'c ToolSpec = self.catalog.spec(call.tool);
        let state = &mut self.tools[usize::from(call.tool.0)];
        state.calls += 1;
        let call_number = state.calls;
        let streams = &self.streams;
        let stream = state.stream.get_or_insert_with(|| streams.tool_stream(&spec.def.name));
        let mut rng = stream.substream(call_number);
        let mut drawn_latency_ms = spec.config.latency.sample(&mut rng);
        if self.interleaving > 0 {
            // Drawn after the seed's own draw, which the faults' draws follow.
            let name = format!("interleaving.{}.latency.{}", self.interleaving, spec.def.name);
            let mut rng = self.streams.stream(&name).substream(call_number);
            drawn_latency_ms = match self.band {
                Some(band) => spec.config.latency.sample_in_band(&mut rng, band),
                None => spec.config.latency.sample(&mut rng),
            };
        }
        let drawn = self.draw(now_ms, call.tool, call_number, spec, &mut rng);
        let latency_ms = drawn.traced_latency_ms.unwrap_or(drawn_latency_ms).saturating_add(drawn.extra_latency_ms);
        // What this call suffered, written as faults an explicit schedule can replay.
        let mut realised = Vec::new();
        if drawn.extra_latency_ms > 0 {
            realised.push(Fault::Latency { extra_ms: drawn.extra_latency_ms });
        }
        let corruption_draw = rng.next_u64();
        assert!(latency_ms >= drawn.extra_latency_ms, "a fault's latency adds to the call's");
        CallDraws { call_number, drawn, latency_ms, realised, corruption_draw }
    }

    /// The answers that come before the world's: a rate limit's 429, the
    /// session token of `authenticate`, an expired session's 401.
    fn quota_or_session(
        &mut self,
        call: &ToolCall,
        now_ms: TimeMs,
        call_number: u64,
        drawn: &Drawn,
        latency_ms: TimeMs,
        realised: &mut Vec<Fault>,
    ) -> Option<Served> {
        let spec = self.catalog.spec(call.tool);
        let timeout_ms = spec.config.timeout_ms;
        if let Some(retry_after_ms) = drawn.rate_limited {
            realised.push(Fault::Error { status: 429, retry_after_ms: Some(retry_after_ms) });
            let reply = Reply::Error {
                status: 429,
                retry_after_ms: Some(retry_after_ms),
                message: "rate limit exceeded".into(),
            };
            return Some(Served::refused(
                call_number,
                std::mem::take(realised),
                reply,
                latency_ms.min(timeout_ms),
                FaultTag::RateLimited,
            ));
        }
        if spec.def.name == AUTHENTICATE && drawn.chosen.is_none() {
            self.session_expired = false;
            let token = format!("tok-{call_number}");
            let body = Value::map([("token", Value::Str(token))]);
            return Some(self.serve_ok(call, now_ms, latency_ms, body, None).with(
                call_number,
                std::mem::take(realised),
                None,
            ));
        }
        if self.session_expired || matches!(drawn.chosen, Some(Fault::AuthExpired)) {
            if !self.session_expired {
                // Only the expiry itself: later 401s follow from the session state.
                realised.push(Fault::AuthExpired);
            }
            self.session_expired = true;
            let reply = Reply::Error { status: 401, retry_after_ms: None, message: "session expired".into() };
            return Some(Served::refused(
                call_number,
                std::mem::take(realised),
                reply,
                latency_ms.min(timeout_ms),
                FaultTag::AuthExpired,
            ));
        }
        None
    }

    /// What the rules, then the explicit schedule, then the trace decide for
    /// one call. One draw per rule, always, so later rules see the same luck
    /// whichever fired; an explicit schedule or a trace ignores the rules but
    /// still draws, so the rest of the call (the corruption draw) is the same as
    /// in the run it was taken from.
    fn draw(&mut self, now_ms: TimeMs, tool: ToolId, call_number: u64, spec: &'c ToolSpec, rng: &mut Stream) -> Drawn {
        let traced = usize::try_from(call_number - 1).ok().and_then(|i| spec.config.trace.get(i));
        let explicit = spec.config.explicit_faults.as_deref();
        let rules_decide = explicit.is_none() && traced.is_none();
        // Scale 0 injects nothing: the drawn faults never fire (probability 0) and the
        // stateful and replayed ones (rate limits, explicit schedules, traced faults)
        // are off too. Any positive scale leaves those as written: a quota is a
        // contract, not a chance, and a replay is exact.
        let injecting = self.fault_scale > 0.0;
        let mut drawn = Drawn::default();
        let tool_index = usize::from(tool.0);
        for (i, rule) in spec.config.faults.iter().enumerate() {
            let p_sampled = match &self.sampled_probabilities {
                Some(table) => table.get(tool_index, i),
                None => rule.probability.get() * self.fault_scale,
            };
            let hit = rng.chance(p_sampled);
            if !rules_decide || !rule.when.is_active(now_ms, call_number) {
                continue;
            }
            if let Some(nominal_scale) = self.nominal_fault_scale
                && draw_decides(rule, drawn.chosen.is_some())
            {
                self.log_weight.bernoulli(rule.probability.get() * nominal_scale, p_sampled, hit);
                let counts = &mut self.rule_draws[self.rule_offsets[tool_index] + i];
                counts.draws = counts.draws.saturating_add(1);
                counts.hits = counts.hits.saturating_add(u32::from(hit));
            }
            match &rule.fault {
                Fault::RateLimit { .. } if !injecting => {}
                Fault::RateLimit { capacity, refill_ms } => {
                    let buckets = &mut self.tools[tool_index].buckets;
                    if buckets.is_empty() {
                        buckets.resize_with(spec.config.faults.len(), || None);
                    }
                    let bucket = &mut buckets[i];
                    take_token(bucket, *capacity, *refill_ms, now_ms, &mut drawn.rate_limited);
                }
                Fault::Latency { extra_ms } if hit => drawn.add_latency(*extra_ms),
                fault if hit && drawn.chosen.is_none() => drawn.chosen = Some(fault.clone()),
                _ => {}
            }
        }
        for entry in explicit.unwrap_or_default().iter().filter(|e| injecting && e.call == call_number) {
            match &entry.fault {
                Fault::Latency { extra_ms } => drawn.add_latency(*extra_ms),
                // A rate limit is a state, not a per-call fault: as an explicit entry
                // it is its 429 (which is how a realised schedule writes it).
                Fault::RateLimit { .. } => {}
                fault if drawn.chosen.is_none() => drawn.chosen = Some(fault.clone()),
                _ => {}
            }
        }
        if let Some(traced) = traced {
            drawn.traced_latency_ms = traced.latency_ms;
            match traced.fault.as_ref().filter(|_| injecting) {
                Some(Fault::Latency { extra_ms }) => drawn.add_latency(*extra_ms),
                Some(Fault::RateLimit { .. }) | None => {}
                Some(fault) => drawn.chosen = Some(fault.clone()),
            }
        }
        drawn
    }

    fn serve_ok(
        &self,
        call: &ToolCall,
        now_ms: TimeMs,
        latency_ms: TimeMs,
        mut body: Value,
        malformed: Option<(MalformedKind, u64)>,
    ) -> Served {
        for drift in self.catalog.spec(call.tool).config.drift.iter().filter(|d| d.at_ms <= now_ms) {
            drift.change.apply(&mut body);
        }
        let reply = match malformed {
            None => Reply::Ok(body.into()),
            Some((kind, draw)) => corrupt(body, kind, draw),
        };
        Served {
            call_number: 0,
            realised: Vec::new(),
            reply,
            latency_ms,
            fault: None,
            served: true,
            lie: None,
            injected: None,
        }
    }
}

impl Served {
    fn with(mut self, call_number: u64, realised: Vec<Fault>, fault: Option<FaultTag>) -> Self {
        self.call_number = call_number;
        self.realised = realised;
        self.fault = fault;
        self
    }

    /// A call refused by a fault before (or instead of) being served.
    fn refused(call_number: u64, realised: Vec<Fault>, reply: Reply, latency_ms: TimeMs, tag: FaultTag) -> Self {
        Served { call_number, realised, reply, latency_ms, fault: Some(tag), served: false, lie: None, injected: None }
    }
}

/// One call's number and draws ([`ToolRuntime::draws`]).
struct CallDraws {
    call_number: u64,
    drawn: Drawn,
    /// The latency the call will have, faults included.
    latency_ms: TimeMs,
    /// The faults it suffered so far.
    realised: Vec<Fault>,
    /// The draw every corruption's choices come from.
    corruption_draw: u64,
}

/// What the rules, the explicit schedule and the trace decided for one call.
#[derive(Default)]
struct Drawn {
    /// The fault that shapes the answer (the first that hit).
    chosen: Option<Fault>,
    /// Latency added by `Latency` faults.
    extra_latency_ms: TimeMs,
    /// A rate limit refused the call: when to retry.
    rate_limited: Option<TimeMs>,
    /// A traced call's recorded latency, instead of the drawn one.
    traced_latency_ms: Option<TimeMs>,
}

impl Drawn {
    fn add_latency(&mut self, extra_ms: TimeMs) {
        self.extra_latency_ms = self.extra_latency_ms.saturating_add(extra_ms);
    }
}

/// A token bucket's answer to one call: refills what the time since its last
/// refill earned, then takes a token, or records (once) when the next one comes.
fn take_token(
    bucket: &mut Option<Bucket>,
    capacity: u32,
    refill_ms: TimeMs,
    now_ms: TimeMs,
    limited: &mut Option<TimeMs>,
) {
    let bucket = bucket.get_or_insert(Bucket { tokens: capacity, refilled_at_ms: now_ms });
    let earned = now_ms.saturating_sub(bucket.refilled_at_ms) / refill_ms;
    if earned > 0 {
        bucket.tokens = (bucket.tokens as u64 + earned).min(capacity as u64) as u32;
        bucket.refilled_at_ms = bucket.refilled_at_ms.saturating_add(earned.saturating_mul(refill_ms));
    }
    assert!(bucket.tokens <= capacity, "a bucket never holds more than its capacity");
    if bucket.tokens == 0 {
        limited.get_or_insert(bucket.refilled_at_ms.saturating_add(refill_ms).saturating_sub(now_ms));
    } else if limited.is_none() {
        bucket.tokens -= 1;
    }
}

/// A fault that announces itself: the reply instead of an answer, the latency
/// the caller waits, its tag, and whether the world served the call anyway.
struct Refusal {
    reply: Reply,
    latency_ms: TimeMs,
    tag: FaultTag,
    served: bool,
}

/// What an announced fault does to a call: `Err` refuses it (after serving
/// part or all of a write, for a commit fault); `Ok` gives the time its data
/// should reflect and the tag of a fault that still lets it be served (stale,
/// malformed).
fn announced(
    chosen: Option<&Fault>,
    spec: &ToolSpec,
    call: &ToolCall,
    now_ms: TimeMs,
    latency_ms: TimeMs,
    serve: &mut dyn FnMut(&ToolCall, TimeMs) -> Result<Value, ToolError>,
) -> Result<(TimeMs, Option<FaultTag>), Refusal> {
    let timeout_ms = spec.config.timeout_ms;
    let write = spec.def.kind == ToolKind::Write;
    let refuse =
        |reply: Reply, latency_ms: TimeMs, tag: FaultTag, served: bool| Err(Refusal { reply, latency_ms, tag, served });
    match chosen {
        Some(Fault::Error { status, retry_after_ms }) => {
            let reply = Reply::Error {
                status: *status,
                retry_after_ms: *retry_after_ms,
                message: status_message(*status).into(),
            };
            refuse(reply, latency_ms.min(timeout_ms), FaultTag::Error(*status), false)
        }
        Some(Fault::Timeout) => refuse(Reply::Timeout, timeout_ms, FaultTag::Timeout, false),
        Some(Fault::CommitThenTimeout) if write => {
            // The server applies the write; the answer never reaches the caller.
            let served = serve(call, now_ms).is_ok();
            refuse(Reply::Timeout, timeout_ms, FaultTag::CommitThenTimeout, served)
        }
        Some(Fault::PartialCommit { arg, percent }) if write => {
            // The server applies part of the write, then fails.
            let mut partial = call.clone();
            if let Some(n) = partial.args.get(arg).and_then(Value::as_int) {
                // n * percent / 100 without overflow, rounded toward zero.
                let part = n / 100 * i64::from(*percent) + n % 100 * i64::from(*percent) / 100;
                partial.args.set(arg.clone(), Value::Int(part));
            }
            let served = serve(&partial, now_ms).is_ok();
            let reply = Reply::Error { status: 500, retry_after_ms: None, message: status_message(500).into() };
            refuse(reply, latency_ms.min(timeout_ms), FaultTag::PartialCommit, served)
        }
        Some(Fault::CommitThenTimeout) => refuse(Reply::Timeout, timeout_ms, FaultTag::Timeout, false),
        Some(Fault::Stale { lag_ms }) => Ok((now_ms.saturating_sub(*lag_ms), Some(FaultTag::Stale))),
        Some(Fault::Malformed(kind)) => Ok((now_ms, Some(FaultTag::Malformed(*kind)))),
        // On a read, a partial commit or a duplicated effect has nothing to apply.
        Some(
            Fault::Latency { .. }
            | Fault::RateLimit { .. }
            | Fault::AuthExpired
            | Fault::Corrupt { .. }
            | Fault::PartialCommit { .. }
            | Fault::DuplicateEffect
            | Fault::Inject { .. },
        )
        | None => Ok((now_ms, None)),
    }
}

/// What a fault that does not announce itself did to a served call.
#[derive(Default)]
struct Undermined {
    /// The tag, when the fault changed anything.
    tag: Option<FaultTag>,
    /// The value a `Corrupt` fault changed.
    lie: Option<Lie>,
    /// The call an `Inject` fault's text asks for.
    injected: Option<Injected>,
}

/// Applies the quiet faults to a call the world served: `Corrupt` and `Inject`
/// change the answer `body` (with the call's `draw`), `DuplicateEffect` serves a
/// write again, as a redelivered message would (without the caller's
/// idempotency key).
fn undermine(
    chosen: Option<&Fault>,
    spec: &ToolSpec,
    call: &ToolCall,
    now_ms: TimeMs,
    body: &mut Value,
    draw: u64,
    serve: &mut dyn FnMut(&ToolCall, TimeMs) -> Result<Value, ToolError>,
) -> Undermined {
    match chosen {
        Some(Fault::Corrupt { path, corruption }) => {
            // The past answer, for an old value: served again, as a stale read
            // would be (reads only: serving a write again would apply it again).
            let old = match corruption {
                Corruption::Old { lag_ms } if spec.def.kind == ToolKind::Read => {
                    serve(call, now_ms.saturating_sub(*lag_ms)).ok()
                }
                _ => None,
            };
            let lie = corrupt_value(body, path, corruption, draw, old.as_ref());
            Undermined { tag: lie.as_ref().map(|_| FaultTag::Corrupted), lie, injected: None }
        }
        Some(Fault::Inject { path, style, tool, args }) => {
            let asked = Injected { tool: tool.clone(), args: args.clone() };
            let injected = inject(body, path, *style, &asked, draw).map(|()| asked);
            Undermined { tag: injected.as_ref().map(|_| FaultTag::Injected), lie: None, injected }
        }
        Some(Fault::DuplicateEffect) if spec.def.kind == ToolKind::Write => {
            let again = ToolCall { idempotency_key: None, ..call.clone() };
            let _ = serve(&again, now_ms);
            Undermined { tag: Some(FaultTag::DuplicateEffect), ..Undermined::default() }
        }
        _ => Undermined::default(),
    }
}

/// Whether an active rule's draw shapes the call: a rate limit is a state, not
/// a draw, and once a fault is chosen for the call only extra latency still adds.
fn draw_decides(rule: &FaultRule, fault_chosen: bool) -> bool {
    match rule.fault {
        Fault::RateLimit { .. } => false,
        Fault::Latency { .. } => true,
        _ => !fault_chosen,
    }
}

/// Breaks a body the way `kind` says, choosing the field with `draw`.
fn corrupt(mut body: Value, kind: MalformedKind, draw: u64) -> Reply {
    match kind {
        MalformedKind::MissingField => {
            if let Value::Map(pairs) = &mut body
                && !pairs.is_empty()
            {
                pairs.remove((draw % pairs.len() as u64) as usize);
            }
            Reply::Ok(body.into())
        }
        MalformedKind::WrongType => {
            if let Value::Map(pairs) = &mut body {
                // Prefer a number: it arrives as a display string ("4,250"), the most
                // common wrong-type bug and the one a careless reader misreads.
                let ints: Vec<usize> =
                    pairs.iter().enumerate().filter(|(_, (_, v))| matches!(v, Value::Int(_))).map(|(i, _)| i).collect();
                if !ints.is_empty() {
                    let i = ints[(draw % ints.len() as u64) as usize];
                    let n = pairs[i].1.as_int().unwrap_or_default();
                    pairs[i].1 = Value::Str(with_thousands_separators(n));
                } else if !pairs.is_empty() {
                    let i = (draw % pairs.len() as u64) as usize;
                    pairs[i].1 = Value::Int(0);
                }
            }
            Reply::Ok(body.into())
        }
        MalformedKind::Truncated => {
            let text = body.render();
            let cut = 1 + (draw % (text.len().max(2) as u64 - 1)) as usize;
            let cut = (0..=cut.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            Reply::Garbled(text[..cut].to_string())
        }
        MalformedKind::Garbage => Reply::Garbled(GARBAGE_BODY.into()),
    }
}

fn with_thousands_separators(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn status_message(status: u16) -> &'static str {
    match status {
        400 => "bad request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not found",
        408 => "request timeout",
        409 => "conflict",
        429 => "too many requests",
        500 => "internal server error",
        502 => "bad gateway",
        503 => "service unavailable",
        504 => "gateway timeout",
        _ => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators() {
        assert_eq!(with_thousands_separators(4250), "4,250");
        assert_eq!(with_thousands_separators(-1234567), "-1,234,567");
        assert_eq!(with_thousands_separators(12), "12");
    }

    #[test]
    fn truncation_stays_on_char_boundaries() {
        let body = Value::map([("name", Value::str("ééééé"))]);
        for draw in 0..40 {
            let Reply::Garbled(text) = corrupt(body.clone(), MalformedKind::Truncated, draw) else { panic!() };
            assert!(text.len() < body.render().len());
        }
    }
}
