//! Helpers for the per-world tests: built-in scenarios, a scripted agent, and
//! sweeps that collect what happened.

use std::collections::BTreeSet;

use agentsim::Runner;
use agentsim_engine::{Action, Agent, AgentCx, EventKind, Input, TimeMs, ToolCall, Trajectory, Value};
use agentsim_worlds::{Prepared, Scenario};

use crate::common::preset;

/// A built-in scenario, parsed.
pub fn builtin(name: &str) -> Prepared {
    let text = agentsim::builtin::scenario(name).unwrap_or_else(|| panic!("{name} is built in"));
    Prepared::new(Scenario::parse(text, name).unwrap_or_else(|e| panic!("{name} parses: {e}")))
}

/// A scenario from text.
pub fn parse(text: &str) -> Prepared {
    Prepared::new(Scenario::parse(text, "test").unwrap_or_else(|e| panic!("test scenario parses: {e}")))
}

/// An agent driven by a closure: it sees each input and the virtual time.
pub struct Scripted<F>(pub F);

impl<F: FnMut(Input, TimeMs) -> Action + Send> Agent for Scripted<F> {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        cx.read(&input);
        if input != Input::Wake {
            cx.begin_turn();
        }
        (self.0)(input, cx.now_ms)
    }
}

/// Runs one seed with a scripted agent, faults as written, events recorded.
pub fn run_scripted<F: FnMut(Input, TimeMs) -> Action + Send + 'static>(
    prepared: &Prepared,
    seed: u64,
    fault_scale: f64,
    script: F,
) -> Trajectory {
    let config = prepared.scenario.sim_config(true, fault_scale);
    prepared.run(seed, &config, move |_, _| Box::new(Scripted(script)))
}

/// A call by tool name.
pub fn call(prepared: &Prepared, tool: &str, args: Value) -> Action {
    let id = prepared.catalog.id(tool).unwrap_or_else(|| panic!("tool {tool}"));
    Action::Call(ToolCall::new(id, args))
}

/// The body of a successful tool result.
pub fn ok_body(input: &Input) -> Option<&Value> {
    match input {
        Input::Tool(r) => match &r.reply {
            agentsim_engine::Reply::Ok(body) => Some(body),
            _ => None,
        },
        _ => None,
    }
}

/// Everything a sweep of a preset saw: outcomes, minefields, fault tags, world
/// notes (by name) and error statuses returned by the world.
#[derive(Default, Debug)]
pub struct Seen {
    pub outcomes: BTreeSet<&'static str>,
    pub minefields: BTreeSet<&'static str>,
    pub faults: BTreeSet<String>,
    pub notes: BTreeSet<String>,
    pub statuses: BTreeSet<u16>,
    pub successes: u64,
}

/// Runs `seeds` of `preset_name` with events recorded and collects what happened.
pub fn sweep_seen(prepared: &Prepared, preset_name: &str, seeds: std::ops::Range<u64>, fault_scale: f64) -> Seen {
    let stack = preset(preset_name);
    let runner = Runner::new(prepared, &stack, true, fault_scale);
    let mut seen = Seen::default();
    runner
        .sweep(seeds, |t| {
            seen.outcomes.insert(t.outcome.name());
            seen.successes += u64::from(t.verdict.success && t.outcome.name() == "success");
            seen.minefields.extend(t.minefields.iter().copied());
            seen.faults.extend(t.fault_kinds.iter().map(|f| f.name()));
            for e in &t.events {
                match &e.kind {
                    EventKind::World { what, detail } => {
                        seen.notes.insert((*what).to_string());
                        if *what == "persona" {
                            seen.notes.insert(format!("persona:{}", detail.as_str().unwrap_or_default()));
                        }
                    }
                    EventKind::Result { reply: agentsim_engine::Reply::Error { status, .. }, .. } => {
                        seen.statuses.insert(*status);
                    }
                    _ => {}
                }
            }
            Ok::<(), ()>(())
        })
        .unwrap();
    seen
}

/// Whether a sweep's CSV and summary are byte-identical on 1 and 4 threads.
pub fn assert_same_bytes_on_1_and_4_threads(scenario: &str, agent: &str, seeds: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("out-{threads}");
        let output = crate::common::agentsim(
            dir.path(),
            &["sweep", scenario, "--agent", agent, "--seeds", seeds, "--out", &out],
            &[("RAYON_NUM_THREADS", threads)],
        );
        assert!(output.status.success(), "{}", crate::common::text(&output));
        let csv = std::fs::read(dir.path().join(&out).join("trajectories.csv")).unwrap();
        let summary = std::fs::read(dir.path().join(&out).join("summary.json")).unwrap();
        files.push((csv, summary));
    }
    assert!(files[0].0 == files[1].0, "{scenario}: trajectories.csv differs between 1 and 4 threads");
    assert!(files[0].1 == files[1].1, "{scenario}: summary.json differs between 1 and 4 threads");
}
