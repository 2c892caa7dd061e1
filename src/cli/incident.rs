//! `agentsim replay` and `agentsim shrink`: incidents as regression tests.

use std::path::Path;
use std::process::ExitCode;

use agentsim::incident::{Incident, Replay};
use agentsim::shrink::shrink_trial as shrink_seed;
use agentsim_engine::Outcome;

use super::output::{check_target, errln, outln, stdout_json, write_atomic};
use super::{Failure, Setup, load};

/// Reads and parses an incident file.
pub fn load_incident(path: &str) -> Result<Incident, Failure> {
    let text = load::read_bounded(path, "incident", Some(agentsim::incident::INCIDENT_BYTES_MAX))?;
    Incident::parse(&text, path).map_err(|e| Failure::input(e.to_string()))
}

/// What replaying one incident gave.
#[derive(serde::Serialize)]
struct Replayed {
    file: String,
    /// The stack replayed with (`--agent`), or none for the recorded one.
    agent: Option<String>,
    pass: bool,
    outcome: Outcome,
    digest: String,
    /// The outcome the replay was judged on: the recorded one, or what the
    /// incident expects of `agent`.
    expected: Outcome,
    /// The recorded digest (replays without `--agent` must match it).
    expected_digest: Option<String>,
    /// Why it failed, in words.
    detail: Option<String>,
    /// The first event that differs (replays without `--agent`).
    first_difference: Option<serde_json::Value>,
}

/// Replays each file; with `agent`, judges that stack on the outcome the incident
/// expects of it (success unless its `expect` says otherwise). `json` prints one
/// JSON document instead of text.
pub fn replay(files: &[String], agent: Option<&str>, json: bool) -> Result<ExitCode, Failure> {
    let incidents: Vec<(String, Incident)> =
        files.iter().map(|f| load_incident(f).map(|i| (f.clone(), i))).collect::<Result<_, _>>()?;
    let mut results = Vec::new();
    for (file, incident) in &incidents {
        results.push(replay_one(file, incident, agent)?);
    }
    let failed = results.iter().filter(|r| !r.pass).count();
    if json {
        stdout_json(&serde_json::json!({ "results": results, "passed": results.len() - failed, "failed": failed }))?;
    } else {
        for r in &results {
            print_replayed(r)?;
        }
        outln!("{} passed, {failed} failed", results.len() - failed)?;
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn replay_one(file: &str, incident: &Incident, agent: Option<&str>) -> Result<Replayed, Failure> {
    let prepared = incident.prepared();
    let Some(spec) = agent else {
        let replayed = incident.replay(&prepared, None);
        let mut result = Replayed {
            file: file.to_string(),
            agent: None,
            pass: true,
            outcome: replayed.outcome,
            digest: replayed.digest.to_string(),
            expected: incident.outcome,
            expected_digest: Some(incident.digest.to_string()),
            detail: None,
            first_difference: None,
        };
        if let Replay::Diverged { outcome, digest, first_difference } = incident.check(&prepared, &replayed) {
            result.pass = false;
            result.detail = Some(if outcome == incident.outcome && digest == incident.digest {
                format!(
                    "replayed {outcome} (digest {digest}) as recorded, but its timeline differs from the one the file holds (edited?)"
                )
            } else if incident.version < agentsim::incident::INCIDENT_VERSION
                && outcome == incident.outcome
                && first_difference.is_none()
            {
                // Recorded before digests became XXH3: the same events, another hash.
                format!(
                    "replayed {outcome} with the same timeline as recorded; only the digest differs, because it was recorded with digest format {} (BLAKE3, before 2026-12-03): record it again to pin its digest {digest}",
                    incident.version
                )
            } else {
                format!(
                    "recorded {} (digest {}), replayed {outcome} (digest {digest})",
                    incident.outcome, incident.digest
                )
            });
            result.first_difference = first_difference
                .map(|d| serde_json::json!({ "event": d.index + 1, "recorded": d.recorded, "replayed": d.replayed }));
        }
        return Ok(result);
    };
    let stack = load::agent(spec, &prepared, load::TURN_LIMIT_MS_DEFAULT, None)?;
    let replayed = incident.replay(&prepared, Some(&stack));
    let expected = incident.expect.get(spec).copied().unwrap_or(Outcome::Success);
    let pass = replayed.outcome == expected;
    Ok(Replayed {
        file: file.to_string(),
        agent: Some(spec.to_string()),
        pass,
        outcome: replayed.outcome,
        digest: replayed.digest.to_string(),
        expected,
        expected_digest: None,
        detail: (!pass).then(|| replayed.verdict.detail.clone()),
        first_difference: None,
    })
}

fn print_replayed(r: &Replayed) -> Result<(), Failure> {
    let file = &r.file;
    match (&r.agent, r.pass) {
        (None, true) => outln!("PASS {file}: {} (digest {})", r.outcome, r.digest),
        (None, false) => {
            outln!("FAIL {file}: {}", r.detail.as_deref().unwrap_or_default())?;
            if let Some(d) = &r.first_difference {
                let text = |key: &str| agentsim::timeline::printable(d[key].as_str().unwrap_or_default()).into_owned();
                outln!("  first difference, event {}:", d["event"])?;
                outln!("    recorded: {}", text("recorded"))?;
                outln!("    replayed: {}", text("replayed"))?;
            }
            outln!("  reproduce: agentsim replay {file}")
        }
        (Some(spec), true) => outln!("PASS {file} with {spec}: {} (expected {})", r.outcome, r.expected),
        (Some(spec), false) => {
            outln!(
                "FAIL {file} with {spec}: {} (expected {}): {}",
                r.outcome,
                r.expected,
                r.detail.as_deref().unwrap_or_default()
            )?;
            outln!("  reproduce: agentsim replay {file} --agent {spec}")
        }
    }
}

/// Shrinks a failing seed and writes the minimal incident.
pub fn shrink(
    setup: &Setup,
    seed: Option<(u64, u32)>,
    from_incident: Option<&str>,
    out: &Path,
    expect: &[(String, Outcome)],
) -> Result<ExitCode, Failure> {
    check_target(out)?;
    let (prepared, stack, (seed, trial), fault_scale, agent) = match from_incident {
        Some(file) => {
            let incident = load_incident(file)?;
            let stack = incident.offline_stack(&incident.stack);
            let at = (incident.seed, incident.trial);
            (incident.prepared(), stack, at, incident.fault_scale, incident.agent.clone())
        }
        None => {
            let mut prepared = load::scenario(&setup.scenario)?;
            let stack = load::setup_agent(setup, &mut prepared)?;
            let seed = seed.ok_or_else(|| Failure::input("shrink: give --seed N or --incident FILE"))?;
            (prepared, stack, seed, setup.fault_scale.single("shrink")?, setup.agent.clone())
        }
    };
    let at = agentsim::incident::seed_and_trial(seed, trial);
    let shrunk = shrink_seed(&prepared, &stack, (seed, trial), fault_scale)
        .map_err(|e| Failure::input(format!("{at} with {agent}: {e}")))?;
    let minimal = agentsim_worlds::Prepared::with_key(shrunk.scenario.clone(), shrunk.key);
    let mut incident =
        Incident::record(&minimal, Some(shrunk.key), seed, fault_scale, &agent, &stack, &shrunk.trajectory);
    incident.title = format!("shrunk: {}", incident.title);
    for (agent, outcome) in expect {
        load::agent(agent, &prepared, load::TURN_LIMIT_MS_DEFAULT, None)?;
        incident.expect.insert(agent.clone(), *outcome);
    }
    write_atomic(
        out,
        incident.to_ron_bounded().map_err(|e| Failure::input(format!("{}: {e}", out.display())))?.as_bytes(),
    )?;
    outln!("shrunk {at} with {agent} ({} kept), in {} runs:", shrunk.outcome, shrunk.runs)?;
    if shrunk.sessions_before > 1 {
        let kept: Vec<String> = shrunk.sessions_kept.iter().map(u32::to_string).collect();
        outln!("  sessions: {} -> {} (kept {})", shrunk.sessions_before, shrunk.sessions_after, kept.join(", "))?;
    }
    outln!("  faults: {} -> {}", shrunk.faults_before, shrunk.faults_after)?;
    outln!("  drift:  {} -> {}", shrunk.drift_before, shrunk.drift_after)?;
    outln!("  events: {} -> {}", shrunk.events_before, shrunk.events_after)?;
    if shrunk.unfaithful > 0 {
        outln!(
            "  refused {} cuts that failed the same way: the replayed agent would have read other tool results \
             or user messages than it recorded, which its recorded decisions cannot react to",
            shrunk.unfaithful
        )?;
    }
    for f in agentsim::shrink::realised(&minimal, &shrunk.trajectory) {
        outln!("  kept: {} call {}: {:?}", f.tool, f.fault.call, f.fault.fault)?;
    }
    errln!("wrote {}; replay it with: agentsim replay {}", out.display(), out.display());
    Ok(ExitCode::SUCCESS)
}

/// Imports a production trace as an incident replayed with `agent`.
pub fn import_trace(
    trace_path: &str,
    scenario: &str,
    agent: &str,
    seed: u64,
    out: &Path,
    expect: &[(String, Outcome)],
) -> Result<ExitCode, Failure> {
    check_target(out)?;
    let prepared = load::scenario(scenario)?;
    let text = load::read_bounded(trace_path, "trace", Some(load::TRACE_BYTES_MAX))?;
    let tools: Vec<String> = prepared.catalog.specs().iter().map(|s| s.def.name.clone()).collect();
    let trace = agentsim::trace::parse(&text, trace_path, &tools).map_err(|e| Failure::input(e.to_string()))?;
    let traced = agentsim_worlds::Prepared::new(agentsim::trace::apply(&prepared.scenario, &trace));
    let stack = load::agent(agent, &traced, load::TURN_LIMIT_MS_DEFAULT, None)?;
    let t = agentsim::Runner::new(&traced, &stack, true, 1.0).run(seed);
    let mut incident = Incident::record(&traced, None, seed, 1.0, agent, &stack, &t);
    incident.title = format!("imported from {trace_path}: {}", incident.title);
    for (other, outcome) in expect {
        load::agent(other, &traced, load::TURN_LIMIT_MS_DEFAULT, None)?;
        incident.expect.insert(other.clone(), *outcome);
    }
    write_atomic(
        out,
        incident.to_ron_bounded().map_err(|e| Failure::input(format!("{}: {e}", out.display())))?.as_bytes(),
    )?;
    outln!(
        "imported {} calls ({} failed) on {} tools over {:.1} s of recorded time",
        trace.records,
        trace.failures,
        trace.calls.len(),
        trace.span_ms as f64 / 1000.0
    )?;
    outln!("replayed with {agent}: {} ({})", t.outcome, t.verdict.detail)?;
    errln!("wrote {}; replay it with: agentsim replay {}", out.display(), out.display());
    Ok(ExitCode::SUCCESS)
}
