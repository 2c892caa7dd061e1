//! The `agentsim` command line: thin glue over the libraries. Only this binary
//! reads files, writes files, reads the clock (for the elapsed time it prints) and
//! talks to the terminal.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
