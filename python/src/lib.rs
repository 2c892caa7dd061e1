//! `agentsim._native`: the engine in-process for Python. It adds no simulation
//! logic of its own: a [`World`] is a prepared scenario and the layers of a
//! stack; an [`Episode`] runs one seed as a suspendable episode
//! (`agentsim::episode`: the engine's loop on a coroutine, with the protocol
//! bridge as planner) on the caller's thread, stopping at each observation until
//! Python gives the next action; an [`Evaluation`] writes finished
//! episodes in seed order through `agentsim::sweep`, the same writer as
//! `agentsim sweep`. The Python side (`python/agentsim/`) builds the Gymnasium
//! environment and `evaluate` on these three.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agentsim::bridge::Command;
use agentsim::episode::{Episode as Running, EpisodeError, Setup, Step};
use agentsim::incident::Incident;
use agentsim::rows_file::{FirstFailures, Kept};
use agentsim::summary::Partial;
use agentsim::sweep::{Done, Rows, Swept};
use agentsim::{Row, SummaryBuilder};
use agentsim_agents::external::replayed::recorded_steps_of;
use agentsim_agents::external::{ErrorKind, ExternalError, protocol};
use agentsim_agents::{LayerSpec, PlannerSpec, StackSpec};
use agentsim_engine::{Outcome, Trajectory};
use agentsim_worlds::Prepared;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value as Json;

fn value_error(field: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{field}: {message}"))
}

/// A scenario ready to run, with the layers that stand between the agent and
/// the tools.
#[pyclass(frozen, module = "agentsim._native")]
struct World {
    prepared: Arc<Prepared>,
    layers: Vec<LayerSpec>,
    fault_scale: f64,
    /// The tool list of the external protocol as JSON text, rendered once.
    tools: Arc<str>,
}

#[pymethods]
impl World {
    /// `scenario`: a built-in name or a scenario file; `layers`: `None`, a preset
    /// name or a stack file (only its layers are used); `tasks`: `None`, `all` or
    /// ids separated by commas (scripted worlds).
    #[new]
    #[pyo3(signature = (scenario, fault_scale=1.0, layers=None, tasks=None))]
    fn new(scenario: &str, fault_scale: f64, layers: Option<&str>, tasks: Option<&str>) -> PyResult<Self> {
        if !fault_scale.is_finite() || fault_scale < 0.0 {
            return Err(value_error("fault_scale", format!("expected a finite number >= 0, found {fault_scale}")));
        }
        let mut prepared = agentsim::load::scenario(scenario).map_err(|e| value_error("scenario", e))?;
        agentsim::load::select_tasks(&mut prepared, tasks).map_err(|e| value_error("tasks", e))?;
        let layers = match layers {
            None => Vec::new(),
            Some(name) if agentsim_agents::preset(name).is_some() => {
                let stack = agentsim_agents::preset(name).expect("checked");
                agentsim::load::check_tools(&stack, name, &prepared, None).map_err(|e| value_error("layers", e))?;
                stack.layers
            }
            Some(path) if std::path::Path::new(path).exists() => {
                agentsim::load::layers(path, &prepared).map_err(|e| value_error("layers", e))?
            }
            Some(other) => {
                let names: Vec<&str> = agentsim_agents::PRESETS.iter().map(|(n, _)| *n).collect();
                return Err(value_error(
                    "layers",
                    format!("`{other}` is neither a preset ({}) nor a stack file", names.join(", ")),
                ));
            }
        };
        let tools = protocol::tool_list(&prepared.catalog).to_string().into();
        Ok(Self { prepared: Arc::new(prepared), layers, fault_scale, tools })
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> String {
        self.prepared.scenario.name.clone()
    }

    /// The tool list of the external protocol, as JSON text.
    fn tools_json(&self) -> &str {
        &self.tools
    }

    /// The task seed `seed` runs (scripted worlds), else `None`.
    fn task_of(&self, seed: u64) -> Option<String> {
        self.prepared.task_of(seed)
    }

    /// Starts an episode of `seed`; `record` keeps its events (for incidents);
    /// `tools=False` leaves the tool list out of the first observation (the
    /// caller adds `tools_json()`, decoded once for all episodes).
    /// `sessions=True` accepts a scenario of many sessions: the caller serves
    /// every session's agent, each observation naming its `session` (the
    /// step-by-step environment is one agent, and refuses such a scenario).
    #[pyo3(signature = (seed, record=false, tools=true, sessions=false))]
    fn start(&self, seed: u64, record: bool, tools: bool, sessions: bool) -> PyResult<Episode> {
        if !sessions {
            self.prepared.one_session().map_err(|e| value_error("scenario", e))?;
        }
        let setup = Setup {
            prepared: Arc::clone(&self.prepared),
            seed,
            trial: 0,
            swarm: false,
            config: self.prepared.scenario.sim_config(record, self.fault_scale),
            layers: self.layers.clone(),
            tools: tools.then(|| Arc::clone(&self.tools)),
        };
        let (running, first) = Running::start(setup);
        let mut episode =
            Episode { prepared: Arc::clone(&self.prepared), seed, running, observation: None, trajectory: None };
        episode.arrive(first)?;
        Ok(episode)
    }
}

/// One seed being run: an observation waits for an action until the episode
/// ends. The simulation runs on the caller's thread, suspended between actions
/// (`agentsim::episode`), with the GIL held: it is a few microseconds a step,
/// less than releasing and taking back the GIL would risk.
#[pyclass(module = "agentsim._native")]
struct Episode {
    prepared: Arc<Prepared>,
    seed: u64,
    running: Running,
    /// The observation waiting for an action (the protocol's line).
    observation: Option<String>,
    /// Set when the episode has ended (taken by `Evaluation.add`).
    trajectory: Option<Trajectory>,
}

impl Episode {
    /// Takes in where the simulation stopped: an observation, or the end.
    fn arrive(&mut self, step: Result<Step, EpisodeError>) -> PyResult<()> {
        match step {
            Ok(Step::Observe(observation)) => {
                let line =
                    observation.line.ok_or_else(|| PyRuntimeError::new_err("an observation without its line"))?;
                self.observation = Some(line);
            }
            Ok(Step::Finished(trajectory)) => {
                self.observation = None;
                self.trajectory = Some(*trajectory);
            }
            Err(e) => {
                self.observation = None;
                return Err(PyRuntimeError::new_err(e.to_string()));
            }
        }
        Ok(())
    }

    fn send(&mut self, command: Command) -> PyResult<()> {
        if self.running.ended() {
            return Err(value_error("action", "the episode has ended (call reset to start another)"));
        }
        self.observation = None;
        let step = self.running.step(command);
        self.arrive(step)
    }
}

#[pymethods]
impl Episode {
    /// The seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }

    /// The observation waiting for an action (JSON text), `None` once ended.
    fn observation(&self) -> Option<String> {
        self.observation.clone()
    }

    /// Whether the episode has ended.
    #[getter]
    fn done(&self) -> bool {
        self.running.ended()
    }

    /// Checks an action (JSON text of an object in the protocol's shape, without
    /// `protocol`) against the tools; raises ValueError naming the field.
    fn check(&self, action: &str) -> PyResult<()> {
        parse(action, &self.prepared).map(|_| ())
    }

    /// Carries out an action (JSON text) and waits for the next observation;
    /// raises ValueError (naming the field) for an action of the wrong shape,
    /// which leaves the episode where it was.
    fn act(&mut self, action: &str) -> PyResult<()> {
        if self.done() {
            return Err(value_error("action", "the episode has ended (call reset to start another)"));
        }
        let (action, decision) = parse(action, &self.prepared)?;
        self.send(Command::Act(action, decision))
    }

    /// Ends the episode as `agent_error` with `reason` (the agent raised, or gave
    /// something that is not an action), as an external agent's failure;
    /// `detail` (a traceback) is kept as its stderr diagnostic, out of the digest.
    #[pyo3(signature = (reason, detail=String::new()))]
    fn fail(&mut self, reason: &str, detail: String) -> PyResult<()> {
        if self.done() {
            return Ok(());
        }
        self.send(Command::Fail { error: ExternalError::new(ErrorKind::Raised, reason), stderr: detail })
    }

    /// The ended episode's result as JSON text: its CSV row's fields plus the
    /// verdict's detail and why it ended; `None` while running.
    fn result_json(&self) -> PyResult<Option<String>> {
        let Some(t) = &self.trajectory else { return Ok(None) };
        let mut row = Row::of(t);
        row.task = self.prepared.task_of(t.seed);
        let mut json = serde_json::to_value(&row).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json["verdict"] = Json::String(t.verdict.detail.clone());
        json["end_reason"] = Json::String(t.end_reason.to_string());
        Ok(Some(json.to_string()))
    }

    /// The ended episode as an incident (RON text) that `agentsim replay` replays
    /// without Python: its decisions, the layers, the seed and the scenario;
    /// `None` while running. Needs `record` (the events hold the decisions).
    fn incident(&self, world: &World, agent: &str) -> PyResult<Option<String>> {
        let Some(t) = &self.trajectory else { return Ok(None) };
        if t.events.is_empty() {
            return Err(value_error("record", "the episode ran without record=True: no decisions to replay"));
        }
        let stack = StackSpec {
            planner: PlannerSpec::Replayed(recorded_steps_of(t, &world.prepared.scenario.sessions)),
            layers: world.layers.clone(),
        };
        let incident = Incident::record(&world.prepared, None, t.seed, world.fault_scale, agent, &stack, t);
        incident.to_ron_bounded().map(Some).map_err(|e| value_error("incident", e))
    }

    /// The ended episode's timeline (events are kept only with `record`).
    fn timeline(&self) -> PyResult<Option<String>> {
        Ok(self.trajectory.as_ref().map(|t| agentsim::timeline::render(t, &self.prepared.catalog)))
    }
}

/// An action from Python (JSON text) as the engine's action and the decision to
/// record, exactly as the external protocol parses an agent's line.
fn parse(action: &str, prepared: &Prepared) -> PyResult<(agentsim_engine::Action, agentsim_engine::Value)> {
    let mut json: Json = serde_json::from_str(action).map_err(|e| value_error("action", format!("not JSON: {e}")))?;
    let Json::Object(map) = &mut json else {
        return Err(value_error("action", "expected a dict"));
    };
    map.insert("protocol".into(), Json::String(protocol::PROTOCOL.into()));
    protocol::parse_action(json.to_string().as_bytes(), &prepared.catalog).map_err(|e| value_error("action", e))
}

/// A finished episode reduced to its row (and, when it fails, its incident).
struct Finished {
    swept: Swept,
    row: String,
    incident: Option<(Outcome, Incident)>,
}

/// Where the rows go: an output folder (the files of `agentsim sweep`) or
/// nowhere but the returned summary.
enum Sink {
    Folder {
        rows: Box<Rows>,
        out: PathBuf,
        manifest: Box<agentsim::shard::ShardManifest>,
        _lock: agentsim::files::DirLock,
    },
    Memory {
        builder: Box<SummaryBuilder>,
        failing: FirstFailures,
    },
}

/// Episodes of many seeds, added as they finish in any order and written in
/// seed order.
#[pyclass(module = "agentsim._native")]
struct Evaluation {
    world: Py<World>,
    agent: String,
    seeds: std::ops::Range<u64>,
    failures: usize,
    /// The next seed to write.
    next_seed: u64,
    /// Finished out of order, waiting for the seeds before them.
    pending: BTreeMap<u64, Finished>,
    rows: Vec<String>,
    incidents: Vec<(Kept, Incident)>,
    sink: Option<Sink>,
}

#[pymethods]
impl Evaluation {
    /// `agent` is the label written in summary.json, run.json and incidents.
    /// With `out`, the folder gets trajectories.csv, summary.json, run.json and
    /// failures/; `resume` continues the rows an interrupted evaluation left there.
    #[new]
    #[pyo3(signature = (world, agent, seed_start, seed_end, failures=3, out=None, resume=false))]
    fn new(
        world: Py<World>,
        agent: String,
        seed_start: u64,
        seed_end: u64,
        failures: usize,
        out: Option<PathBuf>,
        resume: bool,
    ) -> PyResult<Self> {
        if seed_end <= seed_start {
            return Err(value_error("seeds", format!("the range {seed_start}..{seed_end} is empty")));
        }
        let seeds = seed_start..seed_end;
        let w = world.get();
        let prepared: &Prepared = &w.prepared;
        let stack = StackSpec { planner: PlannerSpec::Oracle, layers: w.layers.clone() };
        let mut next_seed = seeds.start;
        let sink = match out {
            None if resume => return Err(value_error("resume", "needs `out`, the folder to continue")),
            None => Sink::Memory {
                builder: Box::new(SummaryBuilder::with_trials(1)),
                failing: FirstFailures::new(failures, Vec::new()),
            },
            Some(out) => {
                let lock = agentsim::files::lock_dir(&out, !resume).map_err(|e| value_error("out", e))?;
                let stop = std::sync::atomic::AtomicBool::new(false);
                let sweep = agentsim::sweep::Sweep {
                    prepared,
                    stack: &stack,
                    agent: &agent,
                    seeds: seeds.clone(),
                    trials: 1,
                    failures,
                    swarm: false,
                    importance: None,
                    importance_plan: None,
                    chunk_seeds: 1,
                    in_flight: None,
                    stop: &stop,
                    incident_bytes_max: agentsim::incident::INCIDENT_BYTES_MAX,
                };
                let manifest = sweep.manifest(w.fault_scale, 0, 1);
                let mut builder = SummaryBuilder::with_trials(1);
                let done = if resume {
                    sweep.check_manifest(&out, &manifest).map_err(|e| value_error("resume", e))?;
                    sweep.read_done(&out, &seeds, &mut builder).map_err(|e| value_error("resume", e))?
                } else {
                    Done::none(seeds.start)
                };
                next_seed = done.next_seed;
                let columns = agentsim::sweep::Columns::of(prepared);
                let header = agentsim::sweep::csv_header_of(columns, 1).map_err(|e| value_error("out", e))?;
                let rows = Rows::create(&out, &header, done, builder, failures).map_err(|e| value_error("out", e))?;
                Sink::Folder { rows: Box::new(rows), out, manifest: Box::new(manifest), _lock: lock }
            }
        };
        Ok(Self {
            world,
            agent,
            seeds,
            failures,
            next_seed,
            pending: BTreeMap::new(),
            rows: Vec::new(),
            incidents: Vec::new(),
            sink: Some(sink),
        })
    }

    /// The first seed still to run (after a resume, the first without a row).
    #[getter]
    fn next_seed(&self) -> u64 {
        self.next_seed
    }

    /// Adds an ended episode (in any order); the rows are written in seed order.
    fn add(&mut self, mut episode: PyRefMut<'_, Episode>) -> PyResult<()> {
        let trajectory =
            episode.trajectory.take().ok_or_else(|| value_error("episode", "has not ended (or was added already)"))?;
        let seed = trajectory.seed;
        if seed < self.next_seed || seed >= self.seeds.end || self.pending.contains_key(&seed) {
            return Err(value_error("episode", format!("seed {seed} is not one this evaluation still expects")));
        }
        let w = self.world.get();
        let prepared: &Prepared = &w.prepared;
        let task = prepared.task_of(seed);
        let swept = Swept::of(&trajectory, 0, 1, None, task.clone()).map_err(|e| value_error("episode", e))?;
        let mut row = Row::of(&trajectory);
        row.task = task;
        let row = serde_json::to_string(&row).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        // A failing episode's incident, kept in case it is among the first of its
        // mode (decided in seed order); its decisions replay without Python.
        let incident = (trajectory.outcome != Outcome::Success && self.failures > 0).then(|| {
            let steps = recorded_steps_of(&trajectory, &prepared.scenario.sessions);
            let stack = StackSpec { planner: PlannerSpec::Replayed(steps), layers: w.layers.clone() };
            let incident = Incident::record(prepared, None, seed, w.fault_scale, &self.agent, &stack, &trajectory);
            (trajectory.outcome, incident)
        });
        self.pending.insert(seed, Finished { swept, row, incident });
        self.drain()
    }

    /// Writes everything (marked partial when seeds are missing: an interrupted
    /// evaluation, which `resume` continues) and returns `(summary, rows)` as JSON
    /// text.
    fn finish(&mut self) -> PyResult<(String, String)> {
        let sink = self.sink.take().ok_or_else(|| value_error("evaluation", "already finished"))?;
        let w = self.world.get();
        let partial = (self.next_seed < self.seeds.end).then_some(Partial { done_until_seed: self.next_seed });
        let summary = match sink {
            Sink::Folder { rows, out, manifest, _lock } => {
                let incidents = std::mem::take(&mut self.incidents);
                (*rows)
                    .finish(&out, &manifest, &self.agent, self.seeds.clone(), w.fault_scale, partial, |failing| {
                        // Incidents of an earlier, interrupted run are on disk already;
                        // one of this run too large to write is listed as skipped.
                        let written = agentsim::sweep::write_incidents(&out, incidents)?;
                        let skipped: Vec<&str> = written.skipped.iter().map(|s| s.file.as_str()).collect();
                        let names = failing
                            .iter()
                            .map(|r| r.kept.incident_name())
                            .filter(|name| !skipped.contains(&name.as_str()))
                            .collect();
                        Ok(agentsim::sweep::Failures { written: names, skipped: written.skipped })
                    })
                    .map_err(|e| value_error("out", e))?
            }
            Sink::Memory { builder, failing } => {
                let mut summary =
                    builder.finish(&w.prepared.scenario.name, &self.agent, self.seeds.clone(), w.fault_scale);
                summary.partial = partial;
                summary.failures = failing.kept.iter().map(Kept::incident_name).collect();
                summary
            }
        };
        let summary = serde_json::to_string(&summary).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let rows = format!("[{}]", self.rows.join(","));
        Ok((summary, rows))
    }
}

impl Evaluation {
    /// Writes the pending episodes that are next in seed order.
    fn drain(&mut self) -> PyResult<()> {
        while let Some(finished) = self.pending.remove(&self.next_seed) {
            let Finished { swept, row, incident } = finished;
            let kept = match self.sink.as_mut() {
                Some(Sink::Folder { rows, .. }) => rows.add(&swept).map_err(|e| value_error("out", e))?,
                Some(Sink::Memory { builder, failing }) => {
                    builder.add_record(&swept.record);
                    failing.note(swept.trial, swept.record.outcome, swept.record.seed)
                }
                None => return Err(value_error("evaluation", "already finished")),
            };
            if let (true, Some((outcome, incident))) = (kept, incident) {
                self.incidents.push((Kept { outcome, seed: self.next_seed, trial: 0 }, incident));
            }
            self.rows.push(row);
            self.next_seed += 1;
        }
        Ok(())
    }
}

/// A sweep whose agent runs in Rust (`agent`: `llm:MODEL`, a preset or a
/// stack file), as `agentsim sweep` runs it, with the GIL released: a model as
/// the agent or the user (`user`: `rules` or `llm:MODEL`), asked at
/// `llm_base_url` (else `OPENAI_BASE_URL`) with the key in `llm_api_key_env`,
/// recorded in `cassette` (mode `cassette_mode`), `in_flight` episodes at
/// once (default 64 for a model asked live). With `out`, the folder
/// `agentsim sweep --out` writes; returns `(summary, rows)` as JSON text (the
/// rows: `None` with `out`, whose trajectories.csv holds them).
#[pyfunction]
#[pyo3(signature = (scenario, agent, seed_start, seed_end, fault_scale=1.0, layers=None, tasks=None, trials=1,
    failures=3, out=None, user=None, llm_base_url=None, llm_api_key_env=None, cassette=None, cassette_mode=None,
    in_flight=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    scenario: &str,
    agent: &str,
    seed_start: u64,
    seed_end: u64,
    fault_scale: f64,
    layers: Option<&str>,
    tasks: Option<&str>,
    trials: u32,
    failures: usize,
    out: Option<PathBuf>,
    user: Option<&str>,
    llm_base_url: Option<String>,
    llm_api_key_env: Option<String>,
    cassette: Option<PathBuf>,
    cassette_mode: Option<String>,
    in_flight: Option<usize>,
) -> PyResult<(String, Option<String>)> {
    let options =
        agentsim::llm::LlmOptions { base_url: llm_base_url, api_key_env: llm_api_key_env, cassette, cassette_mode };
    let (prepared, stack) = model_setup(scenario, agent, layers, tasks, user, &options)?;
    if in_flight == Some(0) {
        return Err(value_error("concurrency", "expected an integer >= 1, found 0"));
    }
    let in_flight = in_flight.or_else(|| agentsim::llm::in_flight_default(&stack, &prepared, &options));
    let builder = agentsim::sweep_builder::sweep(&prepared)
        .stack(agent, stack)
        .seeds(seed_start..seed_end)
        .trials(trials)
        .fault_scale(fault_scale)
        .failures(failures)
        .in_flight(in_flight);
    let failed = |e: serde_json::Error| PyRuntimeError::new_err(e.to_string());
    match out {
        Some(out) => {
            let summary = py.detach(|| builder.write_to(&out)).map_err(|e| value_error("out", e))?;
            Ok((serde_json::to_string(&summary).map_err(failed)?, None))
        }
        None => {
            let swept = py.detach(|| builder.run()).map_err(|e| value_error("agent", e))?;
            let summary = serde_json::to_string(&swept.summary).map_err(failed)?;
            Ok((summary, Some(serde_json::to_string(&swept.rows).map_err(failed)?)))
        }
    }
}

/// The scenario (with its user set up) and the stack of a Rust-run agent.
fn model_setup(
    scenario: &str,
    agent: &str,
    layers: Option<&str>,
    tasks: Option<&str>,
    user: Option<&str>,
    options: &agentsim::llm::LlmOptions,
) -> PyResult<(Prepared, StackSpec)> {
    let mut prepared = agentsim::load::scenario(scenario).map_err(|e| value_error("scenario", e))?;
    agentsim::load::select_tasks(&mut prepared, tasks).map_err(|e| value_error("tasks", e))?;
    if let Some(user) = user {
        prepared.scenario.user = agentsim::llm::parse_user(user).map_err(|e| value_error("user", e))?;
    }
    if !prepared.scenario.user.is_rules() {
        let endpoint = agentsim::llm::endpoint(options).map_err(|e| value_error("llm", e))?;
        agentsim::llm::configure_user(&mut prepared, &endpoint);
    }
    let mut stack = match agent.strip_prefix("llm:") {
        Some(model) if model.trim().is_empty() => {
            return Err(value_error("agent", "llm:MODEL: the model name is empty"));
        }
        Some(model) => {
            StackSpec { planner: PlannerSpec::Llm(agentsim_agents::LlmConfig::new(model.trim())), layers: Vec::new() }
        }
        None => match agentsim_agents::preset(agent) {
            Some(stack) => stack,
            None => {
                let text = agentsim::files::read_text(agent, "stack file").map_err(|e| value_error("agent", e))?;
                agentsim::spec::parse_stack(&text, agent).map_err(|e| value_error("agent", e))?
            }
        },
    };
    if let Some(layers) = layers {
        stack.layers = match agentsim_agents::preset(layers) {
            Some(preset) => preset.layers,
            None => agentsim::load::layers(layers, &prepared).map_err(|e| value_error("layers", e))?,
        };
    }
    agentsim::load::check_tools(&stack, agent, &prepared, None).map_err(|e| value_error("layers", e))?;
    agentsim::llm::configure(&mut stack, options, &prepared, scenario).map_err(|e| value_error("llm", e))?;
    Ok((prepared, stack))
}

/// The built-in scenarios' names.
#[pyfunction]
fn builtin_scenarios() -> Vec<&'static str> {
    agentsim::builtin::SCENARIOS.iter().map(|(n, _)| *n).collect()
}

/// The stack presets' names.
#[pyfunction]
fn presets() -> Vec<&'static str> {
    agentsim_agents::PRESETS.iter().map(|(n, _)| *n).collect()
}

/// A failed call's protocol `error` object (JSON text) as `agentsim mcp`
/// words it for a model: the `error` object of its answer, as JSON text
/// (`status`, `message`, `retryable`, `retry_after_ms`, `explanation`, and
/// `body` for an unparseable answer). One wording, written in Rust.
#[pyfunction]
fn explain_error(error: &str) -> PyResult<String> {
    let error: Json = serde_json::from_str(error).map_err(|e| value_error("error", e))?;
    let reply = agentsim::mcp::errors::reply_of_protocol_error(&error)
        .ok_or_else(|| value_error("error", "not a protocol error object (docs/protocol.md)"))?;
    let body = agentsim::mcp::errors::error_body(&reply).ok_or_else(|| value_error("error", "not a failure"))?;
    Ok(body["error"].to_string())
}

/// Writes `text` to `path` whole or not at all (a temporary name in the same
/// folder, renamed into place), with the rules of every agentsim output: only a
/// regular file or a new path is replaced. Raises OSError naming the path.
#[pyfunction]
fn write_atomic(path: std::path::PathBuf, text: &str) -> PyResult<()> {
    agentsim::files::write_atomic(&path, text.as_bytes())
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<World>()?;
    m.add_class::<Episode>()?;
    m.add_class::<Evaluation>()?;
    m.add_function(wrap_pyfunction!(builtin_scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(explain_error, m)?)?;
    m.add_function(wrap_pyfunction!(write_atomic, m)?)?;
    m.add("PROTOCOL", protocol::PROTOCOL)?;
    Ok(())
}
