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
const CRATES: [&str; 7] = ["engine/src", "worlds/src", "agents/src", "tau2/src", "lib/src", "src", "python/src"];

/// Cycles known when this test was written, as `folder: a b c` (modules
/// sorted). Each is to be broken by giving the shared type a home.
/// None is left.
const KNOWN_CYCLES: &[&str] = &[];

/// The crates each library crate may depend on (its `[dependencies]` among the
/// workspace's own crates): the layering, bottom up.
/// tau2-bench's crate sits on the worlds: the scripted world knows it only
/// as an extension installed at run time, so worlds never imports tau2.
const LAYERS: [(&str, &[&str]); 5] = [
    ("engine", &[]),
    ("worlds", &["agentsim-engine"]),
    ("agents", &["agentsim-engine"]),
    ("tau2", &["agentsim-engine", "agentsim-worlds"]),
    ("lib", &["agentsim-engine", "agentsim-worlds", "agentsim-agents", "agentsim-tau2"]),
];

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

/// The first identifiers after each `prefix` in `text` (`crate::{a::b, c}`
/// gives `a` and `c`), comments left out.
fn names_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find(prefix) {
            rest = &rest[at + prefix.len()..];
            if let Some(list) = rest.strip_prefix('{') {
                out.extend(list_heads(list));
            } else {
                let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !ident.is_empty() {
                    out.push(ident);
                }
            }
        }
    }
    out
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

/// Each folder's sibling modules and the edges between them.
fn sibling_graphs(src: &Path) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut folders: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let children = path_children(src, &files);
    let modules: BTreeSet<(String, String)> =
        files.iter().map(|f| module_of(src, f)).filter(|m| !children.contains_key(m)).collect();
    for file in &files {
        let (folder, own) = module_of(src, file);
        let parent = children.get(&(folder.clone(), own.clone()));
        let name = parent.cloned().unwrap_or(own);
        if name.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let siblings = folders.entry(folder.clone()).or_default();
        let edges = siblings.entry(name.clone()).or_default();
        // `super::x` from a file of a folder names a sibling (from a `#[path]`
        // child, its parent's items); `crate::x` does at the crate's top level,
        // and `crate::folder::x` inside a folder.
        let mut targets = if parent.is_some() { Vec::new() } else { names_after(&text, "super::") };
        if folder.is_empty() {
            targets.extend(names_after(&text, "crate::"));
        } else {
            targets.extend(names_after(&text, &format!("crate::{folder}::")));
        }
        for target in targets {
            if target != name && modules.contains(&(folder.clone(), target.clone())) {
                edges.insert(target);
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
fn the_detector_finds_a_cycle_through_a_use_list() {
    assert_eq!(names_after("use crate::{fault::X, inject::{A, B}, time};", "crate::"), ["fault", "inject", "time"]);
    assert_eq!(names_after("// use crate::gone;\nlet x = super::model::Task;", "super::"), ["model"]);
    assert_eq!(names_after("use crate::{fault::X, time};", "crate::").len(), 2);
}

#[test]
fn each_library_crate_depends_only_on_the_crates_below_it() {
    for (krate, allowed) in LAYERS {
        let manifest = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
        let deps = manifest.split("[dependencies]").nth(1).unwrap_or_default();
        let deps = deps.split("\n[").next().unwrap_or_default();
        for line in deps.lines() {
            let name = line.split(['=', '.']).next().unwrap_or_default().trim();
            if name.starts_with("agentsim") {
                assert!(allowed.contains(&name), "{krate} depends on {name}: only {allowed:?} are below it");
            }
        }
    }
}
