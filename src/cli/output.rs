//! The terminal's writers, and the library's output files (`agentsim::files`)
//! with their errors as [`Failure`]s: written whole or not at all, only over a
//! regular file or a new path, in a locked directory.

use std::io::Write;
use std::path::Path;

pub use agentsim::files::DirLock;

use super::Failure;

/// Refuses to write `target` unless it is a regular file or does not exist yet.
pub fn check_target(target: &Path) -> Result<(), Failure> {
    Ok(agentsim::files::check_target(target)?)
}

/// Refuses an output directory unless it is a directory or a new path.
pub fn check_output_dir(dir: &Path) -> Result<(), Failure> {
    Ok(agentsim::files::check_output_dir(dir)?)
}

/// Creates `dir` if needed (unless `create` is false) and locks it, or refuses
/// (exit 2) when another process holds it.
pub fn lock_dir(dir: &Path, create: bool) -> Result<DirLock, Failure> {
    Ok(agentsim::files::lock_dir(dir, create)?)
}

/// An I/O failure naming the path.
pub fn io_failure(path: &Path, e: &std::io::Error) -> Failure {
    agentsim::files::io_failure(path, e).into()
}

/// Writes a whole small file atomically.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), Failure> {
    Ok(agentsim::files::write_atomic(target, bytes)?)
}

/// Writes one line of terminal output to stdout; a full or closed stdout is a
/// [`Failure`] (exit 2), never a panic, and a closed pipe never a signal (SIGPIPE
/// is left ignored, so a write reports `EPIPE`).
pub fn stdout_line(args: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).map_err(|e| stdout_failure(&e))
}

/// Writes text to stdout as it is (it carries its own newlines), as [`stdout_line`].
pub fn stdout_text(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| stdout_failure(&e))
}

fn stdout_failure(e: &std::io::Error) -> Failure {
    Failure::input(format!("cannot write to stdout: {e}"))
}

/// `println!` that returns a [`Failure`] instead of panicking: `outln!(...)?`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::output::stdout_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// `eprintln!` that never panics: when stderr itself is full or closed there is
/// nowhere left to report to, so the line is dropped.
pub fn stderr_line(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that never panics (see [`stderr_line`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::output::stderr_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// Prints `value` as the one JSON document of a `--json` command (pretty, one
/// trailing newline), as [`stdout_text`].
pub fn stdout_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).expect("a command's result is plain data");
    stdout_text(&(text + "\n"))
}
