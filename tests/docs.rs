//! The documented examples parse: the RON blocks of seeds/README.md.

use std::path::Path;

fn ron_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```ron") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_scenario_and_stack_examples_in_seeds_readme_parse() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/README.md")).unwrap();
    let blocks = ron_blocks(&readme);
    assert_eq!(blocks.len(), 5, "two scenario examples, a stack example, the layer defaults and a tilts file");
    let scenario = agentsim_worlds::Scenario::parse(&blocks[0], "seeds/README.md").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.name, "support_desk");
    let other = agentsim_worlds::Scenario::parse(&blocks[1], "seeds/README.md").unwrap_or_else(|e| panic!("{e}"));
    assert!(!other.swarm.is_empty(), "the second example shows a swarm section");
    let stack = agentsim::spec::parse_stack(&blocks[2], "seeds/README.md").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stack, agentsim_agents::preset("resilient").unwrap(), "the documented defaults are the preset's");
}

#[test]
fn the_tilts_file_example_in_seeds_readme_parses_against_the_default_scenario() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/README.md")).unwrap();
    let blocks = ron_blocks(&readme);
    let prepared = crate::common::default_scenario();
    let plan = agentsim::tilts::parse_tilts(&blocks[4], "seeds/README.md", &prepared.catalog, 1.0)
        .unwrap_or_else(|e| panic!("{e}"));
    let refund = plan.tilts.iter().find(|t| t.tool == "issue_refund" && t.rule == 1).unwrap();
    assert_eq!((refund.nominal, refund.sampled), (0.35, 0.5));
    let lookup = plan.tilts.iter().find(|t| t.tool == "lookup_order" && t.rule == 0).unwrap();
    assert_eq!((lookup.nominal, lookup.sampled), (0.2, 0.4));
}

#[test]
fn the_layer_defaults_in_seeds_readme_are_the_defaults() {
    use agentsim_agents::LayerSpec;
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/README.md")).unwrap();
    let blocks = ron_blocks(&readme);
    let stack = agentsim::spec::parse_stack(&blocks[3], "seeds/README.md").unwrap_or_else(|e| panic!("{e}"));
    let defaults = [
        LayerSpec::Retry(Default::default()),
        LayerSpec::Timeout(Default::default()),
        LayerSpec::CircuitBreaker(Default::default()),
        LayerSpec::Cache(Default::default()),
        LayerSpec::Fallback(Default::default()),
        LayerSpec::Contract,
        LayerSpec::LoopDetector(Default::default()),
        LayerSpec::Guardrail(Default::default()),
        LayerSpec::Approval(Default::default()),
        LayerSpec::Idempotency,
        LayerSpec::ContextBudget(Default::default()),
        LayerSpec::CrossCheck(Default::default()),
        LayerSpec::VerifyWrite(Default::default()),
    ];
    assert_eq!(stack.layers, defaults);
}

/// The inline forms (`Name(field: value)`) listed under `heading` in seeds/README.md,
/// up to the next heading: the code of a list item's head (before its `: `
/// explanation) or of a table row's first cell.
fn listed_forms(readme: &str, heading: &str) -> Vec<String> {
    let section = readme.split(heading).nth(1).unwrap_or_else(|| panic!("seeds/README.md has {heading}"));
    let section = section.split("\n#").next().unwrap();
    let mut forms = Vec::new();
    for line in section.lines() {
        let head = if let Some(item) = line.strip_prefix("- ") {
            item.split("`: ").next().unwrap()
        } else if let Some(row) = line.strip_prefix("| ") {
            row.split(" | ").next().unwrap()
        } else {
            continue;
        };
        let codes = head.split('`').skip(1).step_by(2);
        forms.extend(codes.filter(|c| c.starts_with(|c: char| c.is_ascii_uppercase())).map(str::to_string));
    }
    forms
}

/// Every latency, fault and schedule form seeds/README.md lists parses as
/// written (the list once showed `AfterCalls(n)`, which no parser accepts).
#[test]
fn the_latency_fault_and_schedule_forms_in_seeds_readme_parse_as_written() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/README.md")).unwrap();
    let options = agentsim_worlds::scenario::ron_options();
    let mut parsed = 0;
    for form in listed_forms(&readme, "### Latency") {
        options.from_str::<agentsim_engine::latency::Latency>(&form).unwrap_or_else(|e| panic!("`{form}`: {e}"));
        parsed += 1;
    }
    let (faults, corruptions) = readme.split_once("**Corruptions**").expect("seeds/README.md lists corruptions");
    for form in listed_forms(faults, "### Faults") {
        options.from_str::<agentsim_engine::fault::Fault>(&form).unwrap_or_else(|e| panic!("`{form}`: {e}"));
        parsed += 1;
    }
    for form in listed_forms(corruptions, "| corruption |") {
        options.from_str::<agentsim_engine::fault::Corruption>(&form).unwrap_or_else(|e| panic!("`{form}`: {e}"));
        parsed += 1;
    }
    for form in listed_forms(&readme, "### Schedules") {
        options.from_str::<agentsim_engine::fault::Schedule>(&form).unwrap_or_else(|e| panic!("`{form}`: {e}"));
        parsed += 1;
    }
    assert!(parsed >= 27, "found only {parsed} forms: the lists moved?");
}

/// `deploy/build-pgo.sh` trains the optimised build on a list of sweeps; they
/// run here with the test's own binary (a few seeds each), so a renamed
/// preset, world or file breaks this test rather than a user's build.
#[test]
fn the_pgo_build_s_training_sweeps_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_agentsim")).parent().expect("the binary is in a folder");
    let out = std::process::Command::new("bash")
        .arg(root.join("deploy/build-pgo.sh"))
        .args(["--train-only", bin_dir.to_str().expect("a UTF-8 path"), "--seeds", "3"])
        .current_dir(root)
        .output()
        .expect("bash runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the training sweeps failed: {said}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("the training sweeps ran"), "{said}");
}
