//! `agentsim import-tau2 DIR --out OUT`: a tau2-bench domain folder as a
//! scripted world's folder. The conversion is library code
//! (`agentsim::tau2`); this reads the three files and writes the folder whole
//! or not at all: into a temporary folder beside OUT, renamed into place.

use std::io::Write;
use std::path::Path;

use super::output::{io_failure, outln};
use super::{Failure, load};

/// Arguments of `import-tau2`.
#[derive(clap::Args, Debug)]
pub struct ImportTau2Args {
    /// The tau2-bench domain folder (data/tau2/domains/retail): db.json, tasks.json, policy.md.
    #[arg(value_name = "DIR")]
    dir: String,
    /// The folder to write the world into (a new path, or an empty folder).
    #[arg(short = 'o', long, value_name = "OUT")]
    out: String,
}

pub fn import_tau2(args: &ImportTau2Args) -> Result<std::process::ExitCode, Failure> {
    let dir = Path::new(&args.dir);
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "`{}` is not a folder (a tau2-bench domain folder holds db.json, tasks.json and policy.md)",
            args.dir
        )));
    }
    let read = |name: &str| load::read_text(&dir.join(name).display().to_string(), name);
    let (db, tasks, policy) = (read("db.json")?, read("tasks.json")?, read("policy.md")?);
    let world = agentsim::tau2::import(&db, &tasks, &policy).map_err(|e| {
        Failure::input(format!("{}:{}:{}: {}", dir.join(&e.file).display(), e.line, e.column, e.message))
    })?;
    let out = Path::new(&args.out);
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_failure(out, &e)),
        Ok(m) if m.is_dir() => {
            let empty = std::fs::read_dir(out).map_err(|e| io_failure(out, &e))?.next().is_none();
            if !empty {
                return Err(Failure::input(format!(
                    "--out `{}`: the folder is not empty; give a new path or an empty folder",
                    args.out
                )));
            }
        }
        Ok(_) => {
            return Err(Failure::input(format!("--out `{}`: it exists and is not a folder", args.out)));
        }
    }
    let name = out.file_name().ok_or_else(|| Failure::input(format!("--out `{}`: not a folder name", args.out)))?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temp = parent.join(format!(".{}.import-{}", name.to_string_lossy(), std::process::id()));
    let written = (|| -> Result<(), Failure> {
        std::fs::create_dir(&temp).map_err(|e| io_failure(&temp, &e))?;
        for (file, text) in &world.files {
            let path = temp.join(file);
            let mut f = std::fs::File::create(&path).map_err(|e| io_failure(&path, &e))?;
            f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| io_failure(&path, &e))?;
        }
        // Renaming over an empty folder replaces it; over anything else fails.
        std::fs::rename(&temp, out).map_err(|e| io_failure(out, &e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    written?;
    outln!(
        "{}: {} tasks; run `agentsim sweep {} --agent oracle --fault-scale 0`",
        out.display(),
        world.tasks,
        out.join(agentsim::tau2::SCENARIO_FILE).display()
    )?;
    Ok(std::process::ExitCode::SUCCESS)
}
