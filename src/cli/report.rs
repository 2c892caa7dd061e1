//! `agentsim report DIR... -o report.html`: sweeps as one self-contained HTML file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use agentsim::report::{ReportInput, render};

use super::output::{check_target, errln, write_atomic};
use super::{Failure, load};

/// The most sweeps in one report.
const DIRS_MAX: usize = 12;

/// Arguments of `agentsim report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Sweep output directories (with summary.json, or surface.json from
    /// `sweep --fault-scale A,B,...`), and `compare --out` directories (compare.json).
    #[arg(required = true, num_args = 1..)]
    dirs: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "out", default_value = "report.html")]
    out: PathBuf,
}

fn read_json(path: &Path) -> Result<serde_json::Value, Failure> {
    let text = load::text(&path.display().to_string(), "summary")?;
    let value = serde_json::from_str(&text)
        .map_err(|e| Failure::input(format!("{}:{}:{}: not valid JSON: {e}", path.display(), e.line(), e.column())))?;
    // A summary beside its rows must be what they give (an edited number is refused).
    if path.file_name().is_some_and(|n| n == "summary.json")
        && let Some(dir) = path.parent()
    {
        super::check::verify_against_rows(dir, path, &text, &value)?;
    }
    Ok(value)
}

/// Reads one directory: a plain sweep, or a surface whose summary is the sweep
/// at fault scale 1 (or the first scale when 1 is not among them).
fn input(dir: &Path) -> Result<ReportInput, Failure> {
    if !dir.join("surface.json").is_file() && !dir.join("summary.json").is_file() {
        return Err(Failure::input(format!(
            "`{}` holds neither summary.json, surface.json nor compare.json: pass the --out directory of a sweep or a compare",
            dir.display()
        )));
    }
    let surface_path = dir.join("surface.json");
    let (summary, surface) = if surface_path.is_file() {
        let surface = read_json(&surface_path)?;
        let points = surface["points"].as_array().filter(|p| !p.is_empty()).ok_or_else(|| {
            Failure::input(format!("{}: field `points`: expected a non-empty list", surface_path.display()))
        })?;
        let chosen = points.iter().find(|p| p["fault_scale"].as_f64() == Some(1.0)).unwrap_or(&points[0]);
        let sub =
            chosen["dir"].as_str().filter(|d| !d.contains("..") && !d.contains('/') && !d.contains('\\')).ok_or_else(
                || Failure::input(format!("{}: field `dir`: expected a sub-directory name", surface_path.display())),
            )?;
        (read_json(&dir.join(sub).join("summary.json"))?, Some(surface))
    } else if dir.join("summary.json").is_file() {
        (read_json(&dir.join("summary.json"))?, None)
    } else {
        unreachable!("checked above")
    };
    if !summary["completion"].is_object() {
        return Err(Failure::input(format!(
            "{}: field `completion`: missing; is this an agentsim summary?",
            dir.display()
        )));
    }
    let mut label = summary["agent"].as_str().unwrap_or("?").to_string();
    // An interrupted sweep is shown, but never as if it were whole.
    if let Some(done) = summary["partial"]["done_until_seed"].as_u64() {
        label = format!("{label} (partial: seeds {}..{done})", summary["seed_start"]);
    }
    Ok(ReportInput { label, summary, surface })
}

/// Writes the report.
pub fn report(args: &ReportArgs) -> Result<ExitCode, Failure> {
    check_target(&args.out)?;
    if args.dirs.len() > DIRS_MAX {
        return Err(Failure::input(format!("at most {DIRS_MAX} directories in one report, found {}", args.dirs.len())));
    }
    let mut comparisons = Vec::new();
    let mut inputs = Vec::new();
    let mut sweep_dirs = Vec::new();
    let mut seen = Vec::new();
    for dir in &args.dirs {
        // The same folder named twice (`out out/`, a link) is drawn once.
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if seen.contains(&canonical) {
            errln!("{}: given twice; drawn once", dir.display());
            continue;
        }
        seen.push(canonical);
        let compare = dir.join("compare.json");
        if compare.is_file() {
            let c = read_json(&compare)?;
            if !c["paired"].is_object() {
                return Err(Failure::input(format!(
                    "{}: field `paired`: missing; is this an agentsim compare.json?",
                    compare.display()
                )));
            }
            comparisons.push(c);
        }
        if !compare.is_file() || dir.join("summary.json").is_file() || dir.join("surface.json").is_file() {
            inputs.push(input(dir)?);
            sweep_dirs.push(dir);
        }
    }
    // Two sweeps of one agent are told apart by their folders: then every
    // sweep is named by its folder's shortest distinct suffix, so that all
    // labels read alike.
    let labels: Vec<&str> = inputs.iter().map(|x| x.label.as_str()).collect();
    if labels.iter().enumerate().any(|(i, l)| labels[..i].contains(l)) {
        let folders: Vec<&Path> = sweep_dirs.iter().map(|d| d.as_path()).collect();
        for (input, folder) in inputs.iter_mut().zip(agentsim::report::folder_suffixes(&folders)) {
            input.label = format!("{} ({folder})", input.label);
        }
    }
    let html = render(&inputs, &comparisons);
    write_atomic(&args.out, html.as_bytes())?;
    errln!(
        "wrote {} ({}, {}, {} bytes)",
        args.out.display(),
        agentsim::text::counted(inputs.len() as u64, "sweep", "sweeps"),
        agentsim::text::counted(comparisons.len() as u64, "comparison", "comparisons"),
        html.len()
    );
    Ok(ExitCode::SUCCESS)
}
