//! The `agentsim` command line: thin glue over the libraries. Only this binary
//! reads files, writes files, reads the clock (for the elapsed time it prints) and
//! talks to the terminal.

mod cli;

/// mimalloc: a sweep allocates and frees many small values per event, and the
/// system allocator spent about a third of a sweep's time there (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_sigpipe();
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`agentsim run | head`)
/// would panic. Restoring the default makes agentsim end quietly there, like every
/// other Unix tool.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; setting a
    // signal's disposition to its default has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
