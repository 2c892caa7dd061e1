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
    // SIGPIPE stays ignored (Rust's default for a binary): a closed pipe, to an
    // external agent, an MCP client or our own stdout, is a write error that the
    // code handles (agent_error, end of session, exit 2), never a signal that
    // kills the process with a sweep half done.
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(failure) => {
            cli::output::stderr_line(format_args!("error: {}", failure.message));
            ExitCode::from(failure.code)
        }
    }
}
