//! Data-driven: every incident in `seeds/incidents/` replays exactly with its own
//! stack, and every stack in its `expect` map reaches the stated outcome.

use std::path::Path;

use agentsim::incident::{Incident, Replay};

fn incidents() -> Vec<(String, Incident)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/incidents");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let incident = Incident::parse(&text, &name).unwrap_or_else(|e| panic!("{e}"));
            (name, incident)
        })
        .collect()
}

#[test]
fn every_incident_replays_exactly() {
    let all = incidents();
    assert!(all.len() >= 3, "the regression suite is in seeds/incidents/");
    for (name, incident) in all {
        let prepared = incident.prepared();
        let replayed = incident.replay(&prepared, None);
        if let Replay::Diverged { outcome, digest, first_difference } = incident.check(&prepared, &replayed) {
            panic!(
                "{name}: recorded {} {}, replayed {outcome} {digest}; first difference: {first_difference:?}\n\
                 reproduce: agentsim replay {name}",
                incident.outcome, incident.digest
            );
        }
    }
}

#[test]
fn every_expected_stack_reaches_its_outcome() {
    for (name, incident) in incidents() {
        let prepared = incident.prepared();
        for (agent, expected) in &incident.expect {
            let stack = agentsim_agents::preset(agent).unwrap_or_else(|| {
                let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(agent);
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: stack `{agent}`: {e}"));
                agentsim::spec::parse_stack(&text, agent).unwrap_or_else(|e| panic!("{e}"))
            });
            let replayed = incident.replay(&prepared, Some(&stack));
            assert_eq!(
                replayed.outcome, *expected,
                "{name} with {agent}: {}\nreproduce: agentsim replay {name} --agent {agent}",
                replayed.verdict.detail
            );
        }
    }
}

#[test]
fn a_recorded_run_replays_and_an_edited_one_says_where_it_diverges() {
    let prepared = crate::common::default_scenario();
    let stack = crate::common::preset("naive");
    let t = agentsim::Runner::new(&prepared, &stack, true, 1.0).run(25);
    let incident = Incident::record(&prepared, None, 25, 1.0, "naive", &stack, &t);
    let text = incident.to_ron();
    let parsed = Incident::parse(&text, "memory").unwrap();
    assert_eq!(parsed, incident, "an incident survives its own text");
    let replayed = parsed.replay(&parsed.prepared(), None);
    assert_eq!(parsed.check(&parsed.prepared(), &replayed), Replay::Match);

    // The same incident with the commit-then-timeout window removed: the replay
    // must diverge, and name the first event that differs.
    let edited_text = text.replace("CommitThenTimeout", "Timeout");
    let edited = Incident::parse(&edited_text, "memory").unwrap();
    let prepared = edited.prepared();
    let replayed = edited.replay(&prepared, None);
    match edited.check(&prepared, &replayed) {
        Replay::Diverged { first_difference: Some(d), .. } => {
            assert_ne!(d.recorded, d.replayed);
            assert!(d.index > 0, "the start is the same: {d:?}");
        }
        other => panic!("expected a divergence, got {other:?}"),
    }
}

#[test]
fn shrinking_keeps_the_failure_and_the_minimal_schedule_replays_exactly() {
    let prepared = crate::common::default_scenario();
    let stack = crate::common::preset("naive");
    for seed in [25, 63] {
        let shrunk = agentsim::shrink::shrink(&prepared, &stack, seed, 1.0).unwrap();
        assert!(shrunk.faults_after <= shrunk.faults_before);
        assert_eq!(shrunk.trajectory.outcome, shrunk.outcome);
        let minimal = agentsim_worlds::Prepared::with_key(shrunk.scenario.clone(), shrunk.key);
        let again = agentsim::Runner::new(&minimal, &stack, false, 1.0).run(seed);
        assert_eq!(again.digest, shrunk.trajectory.digest, "seed {seed}: shrinking is deterministic");
        // Minimal: removing any one remaining fault loses the failure.
        let kept = agentsim::shrink::realised(&minimal, &shrunk.trajectory);
        for i in 0..kept.len() {
            let mut fewer = kept.clone();
            fewer.remove(i);
            let scenario = agentsim::shrink::with_schedule(&shrunk.scenario, &fewer, &[]);
            let t =
                agentsim::Runner::new(&agentsim_worlds::Prepared::with_key(scenario, shrunk.key), &stack, false, 1.0)
                    .run(seed);
            assert_ne!(t.outcome, shrunk.outcome, "seed {seed}: fault {i} was not needed");
        }
    }
    let oracle = crate::common::preset("oracle");
    assert_eq!(
        agentsim::shrink::shrink(&prepared, &oracle, 1, 1.0).unwrap_err(),
        agentsim::shrink::ShrinkError::NotAFailure
    );
}

#[test]
fn an_imported_trace_reproduces_its_recorded_failures_in_order() {
    let prepared = crate::common::default_scenario();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces/refund_storm.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let tools: Vec<String> = prepared.catalog.specs().iter().map(|s| s.def.name.clone()).collect();
    let trace = agentsim::trace::parse(&text, "refund_storm.jsonl", &tools).unwrap();
    assert_eq!((trace.records, trace.failures), (9, 5));
    let traced = agentsim_worlds::Prepared::new(agentsim::trace::apply(&prepared.scenario, &trace));
    let stack = crate::common::preset("naive");
    let t = agentsim::Runner::new(&traced, &stack, true, 1.0).run(1);
    let lookup = traced.catalog.id("lookup_order").unwrap();
    let refund = traced.catalog.id("issue_refund").unwrap();
    let faults_of = |tool| -> Vec<_> {
        t.realised_faults.iter().filter(|f| f.tool == tool).map(|f| (f.call, f.fault.clone())).collect()
    };
    let storm: Vec<u64> = faults_of(lookup).iter().map(|(call, _)| *call).collect();
    // The storm hits the first four lookups, the fifth went through as recorded;
    // later calls fall back to the scenario's fault model.
    assert_eq!(storm[..4], [1, 2, 3, 4], "{storm:?}");
    assert!(!storm.contains(&5), "the recorded success stays a success: {storm:?}");
    assert_eq!(
        faults_of(refund).first().map(|(c, f)| (*c, f.clone())),
        Some((1, agentsim_engine::Fault::CommitThenTimeout))
    );
    // Recorded latencies are the calls' latencies.
    let first_result = t.events.iter().find_map(|e| match &e.kind {
        agentsim_engine::EventKind::Result { id: 1, latency_ms, .. } => Some(*latency_ms),
        _ => None,
    });
    assert_eq!(first_result, Some(210));
}

#[test]
fn a_bad_trace_line_is_refused_with_its_line_and_field() {
    let tools = vec!["lookup_order".to_string()];
    for (text, position, needle) in [
        ("{\"ts_ms\": 1, \"tool\": \"lookup_ordr\", \"status\": 200}", (1, 1), "field `tool`"),
        ("\n{\"ts_ms\": 1, \"tool\": \"lookup_order\", \"status\": 302}", (2, 1), "field `status`"),
        ("{\"tool\": \"lookup_order\", \"status\": 200}", (1, 1), "field `timestamp`"),
        ("{\"ts_ms\": 1, \"tool\": \"lookup_order\", \"colour\": 1}", (1, 45), "unknown field `colour`"),
        ("{\"ts_ms\": 1, \"tool\": \"lookup_order\"", (1, 35), "EOF"),
    ] {
        let err = agentsim::trace::parse(text, "t.jsonl", &tools).unwrap_err();
        assert_eq!((err.line, err.column), position, "{err}");
        assert!(err.message.contains(needle), "{err}");
    }
}

#[test]
fn an_imported_trace_shrinks_to_the_failures_that_matter() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/incidents/refund_storm_from_trace.ron");
    let incident = Incident::parse(&std::fs::read_to_string(&path).unwrap(), "storm").unwrap();
    let prepared = incident.prepared();
    let shrunk = agentsim::shrink::shrink(&prepared, &incident.stack, incident.seed, 1.0).unwrap();
    assert_eq!(shrunk.outcome, incident.outcome);
    assert!(shrunk.faults_after < shrunk.faults_before, "{} -> {}", shrunk.faults_before, shrunk.faults_after);
    let minimal = agentsim_worlds::Prepared::with_key(shrunk.scenario.clone(), shrunk.key);
    let kept = agentsim::shrink::realised(&minimal, &shrunk.trajectory);
    assert!(
        kept.iter().any(|f| f.tool == "issue_refund" && f.fault.fault == agentsim_engine::Fault::CommitThenTimeout),
        "the lost answer is what pays twice: {kept:?}"
    );
}

#[test]
fn a_swarm_run_records_and_replays_with_its_drawn_faults() {
    let prepared = agentsim_property::builtin("flight_booking");
    let stack = crate::common::preset("naive");
    for seed in 0..5 {
        let t = agentsim::Runner::new(&prepared, &stack, true, 1.0).with_swarm(true).run(seed);
        let mut incident = Incident::record(&prepared, None, seed, 1.0, "naive", &stack, &t);
        incident.swarm = true;
        let parsed = Incident::parse(&incident.to_ron(), "memory").unwrap();
        let replayed = parsed.replay(&parsed.prepared(), None);
        assert_eq!(parsed.check(&parsed.prepared(), &replayed), Replay::Match, "seed {seed}");
    }
}

/// Records `naive` on each of `seeds` once per suffix, as `DIR/sessions/s{seed}{suffix}.ron`.
fn record_sessions(dir: &std::path::Path, seeds: std::ops::Range<u64>, suffixes: &[&str]) {
    std::fs::create_dir(dir.join("sessions")).unwrap();
    for seed in seeds {
        for suffix in suffixes {
            let record = format!("sessions/s{seed}{suffix}.ron");
            let args = ["run", "--agent", "naive", "--seed", &seed.to_string(), "--record", &record];
            let output = crate::common::agentsim(dir, &args, &[]);
            assert!(output.status.success(), "{}", crate::common::text(&output));
        }
    }
}

#[test]
fn recorded_runs_summarize_into_exactly_the_files_of_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    record_sessions(dir.path(), 0..8, &[""]);
    let summarized = crate::common::agentsim(dir.path(), &["summarize", "sessions", "--out", "sum"], &[]);
    assert!(summarized.status.success(), "{}", crate::common::text(&summarized));
    let swept = crate::common::agentsim(
        dir.path(),
        &["sweep", "--agent", "naive", "--seeds", "0..8", "--out", "swp", "--failures", "0", "--quiet"],
        &[("RAYON_NUM_THREADS", "4")],
    );
    assert!(swept.status.success(), "{}", crate::common::text(&swept));
    for file in ["trajectories.csv", "summary.json"] {
        assert!(
            std::fs::read(dir.path().join("sum").join(file)).unwrap()
                == std::fs::read(dir.path().join("swp").join(file)).unwrap(),
            "{file} differs between summarize and sweep"
        );
    }
    // A session that does not replay is refused, naming the file.
    let path = dir.path().join("sessions/s3.ron");
    let text = std::fs::read_to_string(&path).unwrap();
    let digest = text.lines().find(|l| l.trim_start().starts_with("digest:")).unwrap().to_string();
    std::fs::write(&path, text.replace(&digest, "    digest: \"00000000000000000000000000000000\",")).unwrap();
    let refused = crate::common::agentsim(dir.path(), &["summarize", "sessions", "--out", "bad"], &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", crate::common::text(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("s3.ron: does not replay"));
}

#[test]
fn summarize_counts_several_sessions_of_a_seed_as_trials_and_refuses_uneven_ones() {
    let dir = tempfile::tempdir().unwrap();
    record_sessions(dir.path(), 0..4, &["a", "b"]);
    // `naive` is deterministic, so its two recordings of a seed are the same
    // bytes: one session copied, as far as summarize can tell (refused, below).
    // Two recordings of a real agent differ; here their titles say which is which.
    for seed in 0..4 {
        let path = dir.path().join(format!("sessions/s{seed}b.ron"));
        let text = std::fs::read_to_string(&path).unwrap();
        let title = text.lines().find(|l| l.starts_with("    title:")).unwrap().to_string();
        std::fs::write(&path, text.replace(&title, "    title: \"the second trial\",")).unwrap();
    }
    // Two sessions of every seed: two trials each, and the summary says so.
    let summarized = crate::common::agentsim(dir.path(), &["summarize", "sessions", "--out", "sum"], &[]);
    let log = crate::common::text(&summarized);
    assert!(summarized.status.success(), "{log}");
    assert!(log.contains("8 recorded sessions of 4 seeds, 2 of each seed: counted as 2 trials per seed"), "{log}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("sum/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trials"], 2);
    assert_eq!(summary["trajectories"], 8);
    assert_eq!(summary["pass_k"]["trials"], 2);
    let csv = std::fs::read_to_string(dir.path().join("sum/trajectories.csv")).unwrap();
    assert!(csv.starts_with("seed,trial,"), "{csv}");
    let trials: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(1).unwrap()).collect();
    assert_eq!(trials, ["0", "1", "0", "1", "0", "1", "0", "1"]);
    // One seed with fewer sessions than the others: refused, naming both.
    std::fs::remove_file(dir.path().join("sessions/s2b.ron")).unwrap();
    let refused = crate::common::agentsim(dir.path(), &["summarize", "sessions", "--out", "bad"], &[]);
    let log = crate::common::text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{log}");
    assert!(log.contains("seed 0 has 2 recorded sessions") && log.contains("but seed 2 has 1"), "{log}");
    assert!(log.contains("s0a.ron") && log.contains("s2a.ron"), "{log}");
    assert!(!dir.path().join("bad/summary.json").exists(), "nothing is written when refused");
}

/// A folder holding one session twice (a copy, or a link to another file of the
/// folder) is refused, naming both, and a link out of the folder is refused
/// unread: the rules of the files a scenario names.
#[test]
fn summarize_refuses_a_session_counted_twice_and_links_out_of_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    record_sessions(dir.path(), 0..2, &[""]);
    let sessions = dir.path().join("sessions");
    let summarize = || crate::common::agentsim(dir.path(), &["summarize", "sessions", "--out", "sum"], &[]);
    let refused = |needle: &str| {
        let output = summarize();
        let log = crate::common::text(&output);
        assert_eq!(output.status.code(), Some(2), "{log}");
        assert!(log.contains(needle), "expected `{needle}` in {log}");
        assert!(!dir.path().join("sum").exists(), "nothing is written when refused");
    };
    std::fs::copy(sessions.join("s1.ron"), sessions.join("s1-copy.ron")).unwrap();
    refused("s1.ron: the same recorded session as sessions/s1-copy.ron");
    std::fs::remove_file(sessions.join("s1-copy.ron")).unwrap();
    std::os::unix::fs::symlink("s0.ron", sessions.join("s2.ron")).unwrap();
    refused("sessions/s2.ron: it is sessions/s0.ron (a link to it)");
    std::fs::remove_file(sessions.join("s2.ron")).unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "topsecret: words\n").unwrap();
    std::os::unix::fs::symlink(&secret, sessions.join("s9.ron")).unwrap();
    refused("it resolves outside the folder `sessions`");
    assert!(!crate::common::text(&summarize()).contains("topsecret"), "the file out of the folder is never read");
    std::fs::remove_file(sessions.join("s9.ron")).unwrap();
    assert!(summarize().status.success());
}

/// An incident recorded before digests became XXH3 (version 1, a BLAKE3 digest)
/// is still read and replays its events and outcome; the replay fails on the
/// digest alone and says so, with the digest to pin.
#[test]
fn an_incident_of_digest_format_1_says_only_its_digest_differs() {
    let path = format!("{}/tests/legacy_recordings/digest_format_1.ron", env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let output = crate::common::agentsim(dir.path(), &["replay", "--json", &path], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", crate::common::text(&output));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let result = &doc["results"][0];
    assert_eq!(result["outcome"], "violation");
    let detail = result["detail"].as_str().unwrap();
    assert!(detail.contains("same timeline") && detail.contains("digest format 1"), "{detail}");
    // The digest it names is the one the same incident pins in format 2.
    let current = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/incidents/double_refund_after_lost_answer.ron"),
    )
    .unwrap();
    let digest = result["digest"].as_str().unwrap();
    assert!(detail.ends_with(digest) && current.contains(&format!("digest: \"{digest}\"")), "{detail}");
}
