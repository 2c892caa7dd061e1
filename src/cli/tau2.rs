//! `agentsim import-tau2 DIR --out OUT`: a tau2-bench domain folder as a
//! scripted world's folder. The conversion is library code
//! (`agentsim::tau2`); this reads the three files and writes the folder whole
//! or not at all: into a temporary folder beside OUT, renamed into place.

use std::io::Write;
use std::path::Path;

use super::output::{check_output_dir, io_failure, outln};
use super::{Failure, load};

/// Arguments of `import-tau2`.
#[derive(clap::Args, Debug)]
pub struct ImportTau2Args {
    /// The tau2-bench domain folder (data/tau2/domains/retail or airline): db.json, tasks.json, policy.md.
    #[arg(value_name = "DIR")]
    dir: String,
    /// The folder to write the world into (a new path, or an empty folder).
    #[arg(short = 'o', long, value_name = "OUT")]
    out: String,
    /// Give each item of a multi-item `modify_pending_order_items` its own new
    /// variant's price and options, where tau2's code (the default) gives every
    /// item the last new variant's (docs/tau2.md). Retail only.
    #[arg(long)]
    corrected: bool,
}

pub fn import_tau2(args: &ImportTau2Args) -> Result<std::process::ExitCode, Failure> {
    let dir = Path::new(&args.dir);
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "`{}` is not a folder (a tau2-bench domain folder holds db.json, tasks.json and policy.md)",
            args.dir
        )));
    }
    check_empty_output(Path::new(&args.out))?;
    let read = |name: &str| load::read_text(&dir.join(name).display().to_string(), name);
    let (db, tasks, policy) = (read("db.json")?, read("tasks.json")?, read("policy.md")?);
    let world =
        agentsim::tau2::import_with(&db, &tasks, &policy, agentsim::tau2::Options { corrected: args.corrected })
            .map_err(|e| {
                Failure::input(format!("{}:{}:{}: {}", dir.join(&e.file).display(), e.line, e.column, e.message))
            })?;
    let out = Path::new(&args.out);
    write_checked(&world, out)?;
    outln!(
        "{}: {} tasks; run `agentsim sweep {} --agent oracle --fault-scale 0`",
        out.display(),
        world.tasks,
        out.join(&world.scenario_file).display()
    )?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// The rule of every output directory (`agentsim::files::check_output_dir`),
/// and one more: the folder must be empty, since the world replaces it whole.
fn check_empty_output(out: &Path) -> Result<(), Failure> {
    check_output_dir(out)?;
    if out.is_dir() && std::fs::read_dir(out).map_err(|e| io_failure(out, &e))?.next().is_some() {
        return Err(Failure::input(format!(
            "cannot write `{}`: the folder is not empty; give a new path or an empty folder",
            out.display()
        )));
    }
    Ok(())
}

/// Writes the world into a temporary folder beside `out`, loads its scenario
/// there with the loader `sweep` uses (an import the reader would refuse is
/// refused here, and nothing is left), and renames the folder into place.
fn write_checked(world: &agentsim::tau2::ImportedWorld, out: &Path) -> Result<(), Failure> {
    let name = out.file_name().ok_or_else(|| {
        Failure::input(format!(
            "cannot write `{}`: not a folder name; give a new path or an empty folder",
            out.display()
        ))
    })?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io_failure(out, &e))?;
    // A new folder of an unpredictable name (as every temporary file's,
    // `agentsim_agents::temp_file`): nothing planted there is written into or
    // removed.
    let temp = agentsim::agents::temp_file::name_beside(&parent.join(name), "import");
    std::fs::create_dir(&temp).map_err(|e| io_failure(out, &e))?;
    let written = (|| -> Result<(), Failure> {
        for (file, text) in &world.files {
            let path = temp.join(file);
            let mut f = std::fs::File::create_new(&path).map_err(|e| io_failure(&out.join(file), &e))?;
            f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| io_failure(&out.join(file), &e))?;
        }
        let scenario = temp.join(&world.scenario_file).display().to_string();
        if let Err(e) = load::scenario(&scenario) {
            // Named where it would have been: the temporary folder is gone.
            let message = e.message.replace(&temp.display().to_string(), &out.display().to_string());
            return Err(Failure::input(format!("the imported world would not load, so it is not written: {message}")));
        }
        // Renaming over an empty folder replaces it; over anything else fails.
        std::fs::rename(&temp, out).map_err(|e| io_failure(out, &e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    written
}
