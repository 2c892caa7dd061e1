//! The code's shape, checked: no import cycle between the modules of a folder
//! (a cycle means two modules share a type that has no home of its own), and
//! each library crate depends only on the crates below it.
//!
//! Modules are read from the source text: a mention of `crate::NAME` or
//! `super::NAME` (in a path or a `use` list) from one module of a folder to a
//! sibling is an edge. The cycles this code had when the test was written are
//! listed in [`KNOWN_CYCLES`], to be broken; a new one fails the test, and so
//! does a listed one that is gone (so the list only shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;

/// The crates whose modules are checked, by their source folder.
const CRATES: [&str; 11] = [
    "engine/src",
    "worlds/src",
    "agents/src",
    "tau2/src",
    "stats/src",
    "runner/src",
    "report/src",
    "mcp/src",
    "lib/src",
    "src",
    "python/src",
];

/// Cycles known when this test was written, as `folder: a b c` (modules
/// sorted). Each is to be broken by giving the shared type a home.
/// None is left.
const KNOWN_CYCLES: &[&str] = &[];

/// The crates each library crate may depend on (its `[dependencies]` among the
/// workspace's own crates): the layering, bottom up. ARCHITECTURE.md states it
/// as absences ("the engine never imports ...", "worlds never imports tau2":
/// the scripted world knows tau2-bench only as an extension installed at run
/// time).
const LAYERS: [(&str, &[&str]); 9] = [
    ("engine", &[]),
    ("worlds", &["agentsim-engine"]),
    ("agents", &["agentsim-engine"]),
    ("tau2", &["agentsim-engine", "agentsim-worlds"]),
    ("stats", &["agentsim-engine", "agentsim-worlds"]),
    ("runner", &["agentsim-engine", "agentsim-worlds", "agentsim-agents", "agentsim-tau2", "agentsim-stats"]),
    ("report", &["agentsim-stats"]),
    ("mcp", &["agentsim-engine", "agentsim-worlds", "agentsim-agents", "agentsim-runner"]),
    (
        "lib",
        &[
            "agentsim-engine",
            "agentsim-worlds",
            "agentsim-agents",
            "agentsim-tau2",
            "agentsim-stats",
            "agentsim-runner",
            "agentsim-report",
            "agentsim-mcp",
        ],
    ),
];

/// Outside crates a library crate must not depend on, with the reason: the
/// engine and the statistics run no threads (rayon is the runner's) and make no
/// network call.
const FORBIDDEN: [(&str, &[&str]); 3] =
    [("engine", &["rayon", "ureq", "csv"]), ("stats", &["rayon", "ureq"]), ("report", &["rayon", "ureq", "csv"])];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file is, as (its folder's module path, its own name); `mod.rs`
/// and a crate root are the folder's parent module, named "".
fn module_of(src: &Path, file: &Path) -> (String, String) {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let name = parts.pop().unwrap().trim_end_matches(".rs").to_string();
    let folder = parts.join("::");
    match name.as_str() {
        "mod" | "lib" | "main" => (folder, String::new()),
        _ => (folder, name),
    }
}

/// The first segment of each item of a `use` list (`fault::X, inject::{A, B},
/// time}` gives `fault`, `inject`, `time`): items at depth 0 only.
fn list_heads(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut at_item = true;
    let mut chars = list.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && (c.is_alphanumeric() || c == '_') => {
                let ident: String = list[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                for _ in 1..ident.chars().count() {
                    chars.next();
                }
                out.push(ident);
                at_item = false;
            }
            _ => {}
        }
    }
    out
}

/// Files declared with `#[path = "x.rs"] mod x;` in another file are part of
/// that file's module: (folder, child name) -> parent name.
fn path_children(src: &Path, files: &[PathBuf]) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for file in files {
        let (folder, name) = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        for rest in text.split("#[path = \"").skip(1) {
            if let Some(child) = rest.split('"').next().and_then(|f| f.strip_suffix(".rs")) {
                out.insert((folder.clone(), child.to_string()), name.clone());
            }
        }
    }
    out
}

/// The module path of each file (`scripted/model.rs` is `[scripted, model]`,
/// `mcp/mod.rs` is `[mcp]`, the crate root `[]`); a file declared with
/// `#[path]` is a child module of the file that declares it.
fn module_paths(src: &Path, files: &[PathBuf]) -> Vec<Vec<String>> {
    let children = path_children(src, files);
    files
        .iter()
        .map(|file| {
            let (folder, own) = module_of(src, file);
            let mut path: Vec<String> = folder.split("::").filter(|p| !p.is_empty()).map(String::from).collect();
            if let Some(parent) = children.get(&(folder, own.clone())).filter(|p| !p.is_empty()) {
                path.push(parent.clone());
            }
            if !own.is_empty() {
                path.push(own);
            }
            path
        })
        .collect()
}

/// Every module path that follows `prefix` in `text` (`crate::a::b::X` gives
/// `[a, b, X]`, `crate::a::{b::C, d}` gives `[a, b]` and `[a, d]`), comments
/// left out.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find(prefix) {
            rest = &rest[at + prefix.len()..];
            let mut path = Vec::new();
            loop {
                let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if ident.is_empty() {
                    break;
                }
                rest = &rest[ident.len()..];
                path.push(ident);
                match rest.strip_prefix("::") {
                    Some(after) => rest = after,
                    None => break,
                }
            }
            match rest.strip_prefix('{') {
                Some(list) => out.extend(list_heads(list).into_iter().map(|head| [path.clone(), vec![head]].concat())),
                None if !path.is_empty() => out.push(path),
                None => {}
            }
        }
    }
    out
}

/// Each folder's sibling modules and the edges between them. A module of a
/// folder is a file or a whole subfolder (everything below `mcp/` is the node
/// `mcp` of its parent folder); an edge is a path from one to another, by
/// `crate::` or `super::`.
fn sibling_graphs(src: &Path) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let paths = module_paths(src, &files);
    let mut nodes: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for path in &paths {
        for k in 0..path.len() {
            nodes.entry(path[..k].to_vec()).or_default().insert(path[k].clone());
        }
    }
    let mut folders: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (file, path) in files.iter().zip(&paths) {
        let text = std::fs::read_to_string(file).unwrap();
        let mut targets = paths_after(&text, "crate::");
        let parent = &path[..path.len().saturating_sub(1)];
        targets.extend(paths_after(&text, "super::").into_iter().map(|p| [parent.to_vec(), p].concat()));
        for k in 0..path.len() {
            let (folder, name) = (&path[..k], &path[k]);
            let siblings = folders.entry(folder.join("::")).or_default();
            let edges = siblings.entry(name.clone()).or_default();
            for target in targets.iter().filter(|t| t.len() > k && t[..k] == *folder) {
                if target[k] != *name && nodes[folder].contains(&target[k]) {
                    edges.insert(target[k].clone());
                }
            }
        }
    }
    folders
}

/// The cycles of every checked crate, as `crate/folder: a b c`.
fn cycles() -> Vec<String> {
    let mut out = Vec::new();
    for krate in CRATES {
        let src = root().join(krate);
        for (folder, modules) in sibling_graphs(&src) {
            let mut graph = DiGraph::<&str, ()>::new();
            let nodes: BTreeMap<&str, _> = modules.keys().map(|m| (m.as_str(), graph.add_node(m.as_str()))).collect();
            for (from, tos) in &modules {
                for to in tos {
                    if let Some(&target) = nodes.get(to.as_str()) {
                        graph.add_edge(nodes[from.as_str()], target, ());
                    }
                }
            }
            for component in tarjan_scc(&graph).into_iter().filter(|c| c.len() > 1) {
                let mut names: Vec<&str> = component.iter().map(|&n| graph[n]).collect();
                names.sort_unstable();
                let place = if folder.is_empty() {
                    krate.to_string()
                } else {
                    format!("{krate}/{}", folder.replace("::", "/"))
                };
                out.push(format!("{place}: {}", names.join(" ")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_new_import_cycle_between_modules() {
    let found = cycles();
    let new: Vec<&String> = found.iter().filter(|c| !KNOWN_CYCLES.contains(&c.as_str())).collect();
    let gone: Vec<&&str> = KNOWN_CYCLES.iter().filter(|k| !found.iter().any(|c| c == *k)).collect();
    assert!(new.is_empty(), "import cycles between modules (give the shared type a home of its own): {new:#?}");
    assert!(gone.is_empty(), "cycles broken: remove them from KNOWN_CYCLES: {gone:#?}");
}

#[test]
fn the_detector_reads_paths_through_use_lists() {
    let heads = |text: &str, prefix: &str| -> Vec<String> {
        paths_after(text, prefix).into_iter().map(|p| p.join("::")).collect()
    };
    assert_eq!(heads("use crate::{fault::X, inject::{A, B}, time};", "crate::"), ["fault", "inject", "time"]);
    assert_eq!(heads("// use crate::gone;\nlet x = super::model::Task;", "super::"), ["model::Task"]);
    assert_eq!(
        heads("use crate::scripted::{model, template::T};", "crate::"),
        ["scripted::model", "scripted::template"]
    );
}

#[test]
fn the_detector_finds_a_cycle_through_a_folder_module() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("mcp")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod episode;\nmod mcp;\n").unwrap();
    std::fs::write(src.join("episode.rs"), "use crate::mcp::bridge::Bridge;\n").unwrap();
    std::fs::write(src.join("mcp/mod.rs"), "mod bridge;\n").unwrap();
    std::fs::write(src.join("mcp/bridge.rs"), "use crate::episode::Step;\n").unwrap();
    let graphs = sibling_graphs(src);
    assert_eq!(graphs[""]["episode"], BTreeSet::from(["mcp".to_string()]));
    assert_eq!(graphs[""]["mcp"], BTreeSet::from(["episode".to_string()]));
}

/// The names of a manifest's `[dependencies]` (not dev- or build-dependencies).
fn dependencies(krate: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
    let deps = manifest.split("\n[dependencies]").nth(1).unwrap_or_default();
    let deps = deps.split("\n[").next().unwrap_or_default();
    deps.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.split(['=', '.']).next().unwrap_or_default().trim().to_string())
        .filter(|name| !name.is_empty())
        .collect()
}

#[test]
fn each_library_crate_depends_only_on_the_crates_below_it() {
    for (krate, allowed) in LAYERS {
        for name in dependencies(krate).iter().filter(|n| n.starts_with("agentsim")) {
            assert!(allowed.contains(&name.as_str()), "{krate} depends on {name}: only {allowed:?} are below it");
        }
    }
    for (krate, forbidden) in FORBIDDEN {
        let deps = dependencies(krate);
        for name in forbidden {
            assert!(!deps.iter().any(|d| d == name), "{krate} must not depend on {name}");
        }
    }
}

#[test]
fn every_library_crate_of_the_workspace_has_its_layer() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members = manifest.split("members = [").nth(1).unwrap().split(']').next().unwrap();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        // Not libraries other crates build on: a global allocator, the property
        // kit, an example, the Python module and the peer comparison's bench
        // sit outside the layering.
        if ["alloc", "property", "examples/rust_world", "python", "benches/peer/rust"].contains(&member) {
            continue;
        }
        assert!(LAYERS.iter().any(|(k, _)| *k == member), "crate {member} has no layer in LAYERS");
        assert!(CRATES.contains(&format!("{member}/src").as_str()), "crate {member} is not in CRATES");
    }
}
