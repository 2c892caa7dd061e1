//! The `agentsim` command line: thin glue over the libraries. Only this binary
//! talks to the terminal and reads the clock for what it prints (the elapsed
//! time, the progress bar); the libraries read and write only the files it
//! names.

mod cli;

// The global allocator, mimalloc, is declared in agentsim-alloc (optimised
// even when this crate is not).
use agentsim_alloc as _;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

fn main() -> ExitCode {
    // SIGPIPE stays ignored (Rust's default for a binary): a closed pipe, to an
    // external agent, an MCP client or our own stdout, is a write error that the
    // code handles (agent_error, end of session, exit 2), never a signal that
    // kills the process with a sweep half done.
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        // Help and version go to stdout, which may be full or closed: reported
        // as any other write error (clap would ignore it and exit 0).
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return match cli::output::stdout_text(&e.render().to_string()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(failure) => {
                    cli::output::stderr_line(format_args!("error: {}", failure.message));
                    ExitCode::from(failure.code)
                }
            };
        }
        Err(e) => e.exit(),
    };
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(failure) => {
            cli::output::stderr_line(format_args!("error: {}", failure.message));
            ExitCode::from(failure.code)
        }
    }
}
